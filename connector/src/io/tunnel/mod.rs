//! The tunnel: HA connections, reconnects, drain and readiness (PROTOCOL.md §6).
//! The top of `io`: [`Tunnel`] is the handle, `supervisor.rs` runs each connection
//! index over the drivers (`connection.rs`, `http2/`), which sit on the shared
//! state (`shared/`, `config.rs`, `status.rs`, `transport.rs`); nothing below
//! imports this module.
//!
//! [`Tunnel::new`] validates a [`TunnelConfig`] and builds the shared, `Send + Sync`
//! part (TLS config, address pool, status channel, drain signal). Each worker thread
//! then calls [`Tunnel::spawn_local`] for the connection indices it owns; every index
//! runs on that thread (connIndex 0 first, the others once anything registered,
//! `ha_stagger` apart), reconnecting with jittered exponential backoff. `EDUPCONN`
//! and idle timeouts move an index to another edge address; a permanent
//! registration error before anything registered stops the whole tunnel (except a
//! cause containing `Unauthorized`, which is retried). [`Tunnel::status`] is the
//! readiness source; [`Tunnel::drain`] starts the graceful shutdown.
//!
//! Each attempt uses one [`Transport`](super::Transport): QUIC (`connection.rs`) or HTTP/2
//! (`http2/`). With [`Transport::Auto`](super::Transport::Auto) an index starts on QUIC and falls back to
//! HTTP/2 for good once QUIC failed `backoff.max_exponent` times in a row without
//! registering (cloudflared's `--retries`), or at once when QUIC looks broken (an
//! idle timeout, or "operation not permitted" from the socket), as cloudflared does.
//! Those rules, and which edge address each attempt dials, are the protocol core's
//! sans-IO state machine ([`crate::proto::reconnect`]); `run_index` dials and waits
//! as it says.
//!
//! Edge addresses come from [`TunnelConfig::edges`](super::TunnelConfig::edges) (dealt alternately into two
//! regions, HA connections capped at their number) or, when it is empty, from
//! [`crate::discovery`]: the first connection to need an address resolves them, and
//! a connection that must move to another address resolves again once the answer's
//! TTL ran out. Connections prefer the regions in turn (connIndex `i` region
//! `i mod regions`); one address is never held by two connections, and a
//! discovered tunnel's connection that finds no free address waits and retries
//! rather than share one.

mod supervisor;

use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::config::{MAX_GRACE_PERIOD, TunnelConfig};
use super::handler::TunnelHandler;
use super::shared::Shared;
use super::status::{ConnectionState, TunnelStatus};
use crate::Error;
use crate::proto::Uuid;

/// A Cloudflare Tunnel: cheap to clone, `Send + Sync`; connections run on the
/// threads that call [`Tunnel::spawn_local`].
#[derive(Debug, Clone)]
pub struct Tunnel {
    shared: Arc<Shared>,
}

impl Tunnel {
    /// Validates `config` and prepares the TLS configuration. Binds nothing and
    /// resolves nothing: without static edges, the first connection discovers them.
    pub fn new(config: TunnelConfig) -> Result<Self, Error> {
        Ok(Self {
            shared: Arc::new(Shared::new(config)?),
        })
    }

    /// The connector UUID sent on every connection.
    pub fn client_id(&self) -> Uuid {
        self.shared.client_id
    }

    /// The connIndex values this tunnel runs (`0..ha_connections`, capped at the
    /// number of static edge addresses). Split them over worker threads as you like.
    pub fn connection_indices(&self) -> Range<u8> {
        0..self.shared.config.ha_connections
    }

    /// Runs the given connection indices on the current thread, one local task each,
    /// serving their streams with `handler`. Must be called on a
    /// `tokio::runtime::LocalRuntime` or inside a `tokio::task::LocalSet` (it uses
    /// `spawn_local`). Indices outside
    /// [`Tunnel::connection_indices`], or already running, are ignored.
    pub fn spawn_local(
        &self,
        indices: impl IntoIterator<Item = u8>,
        handler: Rc<dyn TunnelHandler>,
    ) -> Vec<JoinHandle<()>> {
        let mut handles = Vec::new();
        for index in indices {
            let mut claimed = false;
            self.shared.status.send_if_modified(|s| {
                match s.connections.get_mut(usize::from(index)) {
                    Some(c) if c.state == ConnectionState::Idle => {
                        c.state = ConnectionState::Waiting;
                        claimed = true;
                        true
                    }
                    _ => false,
                }
            });
            if claimed {
                let shared = Arc::clone(&self.shared);
                let handler = Rc::clone(&handler);
                handles.push(tokio::task::spawn_local(supervisor::run_index(
                    shared, index, handler,
                )));
            }
        }
        handles
    }

    /// Runs every connection index on the current thread (see [`Tunnel::spawn_local`]).
    pub fn spawn_all_local(&self, handler: Rc<dyn TunnelHandler>) -> Vec<JoinHandle<()>> {
        self.spawn_local(self.connection_indices(), handler)
    }

    /// The status channel; [`TunnelStatus::registered`] is the readiness signal.
    pub fn status(&self) -> watch::Receiver<TunnelStatus> {
        self.shared.status.subscribe()
    }

    /// How many connections are registered right now.
    pub fn registered(&self) -> usize {
        self.shared.status.borrow().registered()
    }

    /// Starts a graceful drain with the configured grace period.
    pub fn drain(&self) {
        self.drain_with_grace(self.shared.config.grace_period);
    }

    /// Starts a graceful drain: `unregisterConnection` on every registered
    /// connection, in-flight streams served until done or until `grace` ends, then
    /// close with code 0. No connection reconnects afterwards. A second call can only
    /// shorten the deadline.
    pub fn drain_with_grace(&self, grace: Duration) {
        let deadline = Instant::now() + grace.min(MAX_GRACE_PERIOD);
        self.shared.drain.send_if_modified(|d| match d {
            Some(current) if *current <= deadline => false,
            _ => {
                *d = Some(deadline);
                true
            }
        });
        self.shared.status.send_modify(|s| s.draining = true);
    }

    /// Stops at once: a drain with no grace period.
    pub fn shutdown(&self) {
        self.drain_with_grace(Duration::ZERO);
    }

    /// Resolves when every spawned connection has stopped. `Err` if a permanent
    /// registration error stopped the tunnel, or, unasked to drain, its
    /// connections ended on permanent refusals (a tunnel deleted at the edge).
    pub async fn closed(&self) -> Result<(), Error> {
        let mut status = self.status();
        let status = status
            .wait_for(TunnelStatus::is_closed)
            .await
            .map(|s| s.clone());
        match status {
            Ok(TunnelStatus {
                failure: Some(failure),
                ..
            })
            | Ok(TunnelStatus {
                refusal: Some(failure),
                draining: false,
                ..
            }) => Err(Error::Registration {
                conn_index: failure.conn_index,
                error: failure.error,
            }),
            _ => Ok(()),
        }
    }

    /// Resolves when the tunnel stopped for good because of a permanent error, or
    /// when `registered` connections are up; the error names the refusal.
    pub async fn wait_registered(&self, registered: usize) -> Result<(), Error> {
        let mut status = self.status();
        let status = status
            .wait_for(|s| s.registered() >= registered || s.failure.is_some())
            .await
            .map(|s| s.failure.clone());
        match status {
            Ok(Some(failure)) => Err(Error::Registration {
                conn_index: failure.conn_index,
                error: failure.error,
            }),
            _ => Ok(()),
        }
    }
}
