//! The part of a tunnel shared by every thread: [`Shared`] holds the validated
//! configuration, the TLS configurations, the status and drain channels, the edge
//! address pools and the discovery state. The drivers read it and report through
//! it; the supervisor takes and gives back addresses through it. It starts
//! nothing: no task, socket or timer.

mod discovery;
mod pool;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::time::Instant;

use self::discovery::Discovery;
use self::pool::AddrPool;
use super::config::TunnelConfig;
use super::random::{random_bytes, random_uuid};
use super::status::{ConnectionState, ConnectionStatus, TunnelFailure, TunnelStatus};
use super::tls;
use super::transport::Transport;
use crate::Error;
use crate::proto::{ConnectionDetails, RegistrationError, Uuid};

/// The part of a tunnel shared by every thread.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: TunnelConfig,
    pub(crate) quic: quinn::ClientConfig,
    pub(crate) h2_tls: Arc<rustls::ClientConfig>,
    pub(crate) client_id: Uuid,
    /// The tunnel's status; every write goes through the methods below.
    pub(crate) status: watch::Sender<TunnelStatus>,
    /// The drain deadline, once a drain was asked for.
    pub(crate) drain: watch::Sender<Option<Instant>>,
    addrs: Mutex<AddrPool>,
    /// HTTP/2 addresses when they differ from the QUIC ones.
    h2_addrs: Option<Mutex<AddrPool>>,
    /// Set when the edge is discovered rather than given.
    discovery: Option<Discovery>,
    /// The tunnel's jitter seed; each connection derives its own.
    pub(crate) seed: u64,
}

impl Shared {
    /// Validates `config` and prepares the TLS configurations, the status of every
    /// connection and the address pools. Binds nothing and resolves nothing.
    pub(crate) fn new(mut config: TunnelConfig) -> Result<Self, Error> {
        let discovery = if config.edges.is_empty() && config.h2_edges.is_none() {
            let region = config
                .discovery
                .region(config.token.endpoint.as_deref())?
                .map(str::to_owned);
            Some(Discovery::new(config.discovery.clone(), region))
        } else {
            None
        };
        config.validate(discovery.is_some())?;
        let quic = tls::client_config(&config.roots, config.max_concurrent_streams)?;
        let h2_tls = tls::h2_client_config(&config.roots)?;
        let client_id = match config.client_id {
            Some(id) => id,
            None => random_uuid()?,
        };
        let seed = match config.seed {
            Some(seed) => seed,
            None => u64::from_le_bytes(random_bytes::<8>()?),
        };
        let connections = (0..config.ha_connections)
            .map(|conn_index| ConnectionStatus {
                conn_index,
                state: ConnectionState::Idle,
                edge: None,
                transport: None,
                attempts: 0,
                last_error: None,
            })
            .collect();
        let (status, _) = watch::channel(TunnelStatus {
            connections,
            ever_registered: false,
            draining: false,
            failure: None,
            refusal: None,
        });
        let (drain, _) = watch::channel(None);
        let pool = |addrs: &[SocketAddr]| Mutex::new(AddrPool::from_static(addrs));
        let addrs = pool(&config.edges);
        let h2_addrs = config.h2_edges.as_deref().map(pool);
        Ok(Self {
            config,
            quic,
            h2_tls,
            client_id,
            status,
            drain,
            addrs,
            h2_addrs,
            discovery,
            seed,
        })
    }

    pub(crate) fn set_state(&self, index: u8, state: ConnectionState) {
        self.update(index, |c| c.state = state);
    }

    pub(crate) fn mark_registered(&self, index: u8, details: &ConnectionDetails) {
        let connection_id = details.connection_id().unwrap_or_default();
        self.status.send_modify(|s| {
            s.ever_registered = true;
            if let Some(c) = s.connections.get_mut(usize::from(index)) {
                c.state = ConnectionState::Registered {
                    connection_id,
                    location: details.location_name.clone(),
                };
                c.attempts = 0;
                c.last_error = None;
            }
        });
    }

    /// Connection `index` gave up on a permanent refusal: the tunnel's failure if
    /// nothing had registered yet, its last refusal in any case.
    pub(crate) fn refused(&self, index: u8, error: RegistrationError) {
        self.status.send_modify(|s| {
            let failure = TunnelFailure {
                conn_index: index,
                error: error.clone(),
            };
            if !s.ever_registered && s.failure.is_none() {
                s.failure = Some(failure.clone());
            }
            s.refusal = Some(failure);
            if let Some(c) = s.connections.get_mut(usize::from(index)) {
                c.last_error = Some(error.to_string());
            }
        });
    }

    /// Changes connection `index`'s status.
    pub(crate) fn update(&self, index: u8, f: impl FnOnce(&mut ConnectionStatus)) {
        self.status.send_modify(|s| {
            if let Some(c) = s.connections.get_mut(usize::from(index)) {
                f(c);
            }
        });
    }

    fn pool(&self, transport: Transport) -> &Mutex<AddrPool> {
        match (transport, &self.h2_addrs) {
            (Transport::Http2, Some(pool)) => pool,
            _ => &self.addrs,
        }
    }

    /// An address for `index` (see [`AddrPool::take`]), discovering the edge first
    /// when its addresses are missing or stale.
    pub(crate) async fn acquire(
        &self,
        index: u8,
        avoid: Option<SocketAddr>,
        transport: Transport,
    ) -> Result<SocketAddr, Error> {
        if let Some(discovery) = &self.discovery {
            // Discovered addresses serve both transports.
            discovery.refresh(&self.addrs).await?;
        }
        let share = self.discovery.is_none();
        pool::with(self.pool(transport), |pool| {
            let live = pool.live();
            pool.take(index, avoid, share).ok_or_else(|| {
                Error::Discovery(format!(
                    "no free edge address for connection {index} ({live} addresses known)"
                ))
            })
        })
    }

    /// Gives back every address `index` holds, in both pools.
    pub(crate) fn release_addr(&self, index: u8) {
        for pool in std::iter::once(&self.addrs).chain(self.h2_addrs.as_ref()) {
            pool::with(pool, |pool| pool.release(index));
        }
    }
}
