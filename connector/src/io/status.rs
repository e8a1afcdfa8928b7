//! What a tunnel reports: [`TunnelStatus`] (published on a watch channel, the
//! readiness source), one [`ConnectionStatus`] per connIndex with its
//! [`ConnectionState`], and the [`TunnelFailure`] that stopped it. Plain values;
//! the supervisor and the drivers write them through `Shared`.

use std::net::SocketAddr;
use std::time::Duration;

use super::transport::Transport;
use crate::proto::{RegistrationError, Uuid};

/// What one HA connection is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionState {
    /// Not run on any thread.
    Idle,
    /// Spawned, waiting for connIndex 0 to register (or for its stagger delay).
    Waiting,
    /// Dialling or registering.
    Connecting,
    /// Registered: the edge may send requests.
    Registered {
        /// The connection UUID the edge assigned.
        connection_id: Uuid,
        /// The edge's location name.
        location: String,
    },
    /// Unregistered (or unregistering); serving in-flight streams.
    Draining,
    /// Waiting before the next attempt.
    Backoff {
        /// How long.
        delay: Duration,
    },
    /// Finished: drained, shut down or stopped by a permanent error.
    Stopped,
}

/// One HA connection's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionStatus {
    /// Its connIndex.
    pub conn_index: u8,
    /// What it is doing.
    pub state: ConnectionState,
    /// The edge address it uses (or last used).
    pub edge: Option<SocketAddr>,
    /// The transport of its current (or last) attempt: `Quic` or `Http2`.
    pub transport: Option<Transport>,
    /// Failed attempts since the last registration.
    pub attempts: u32,
    /// The last failure, for logs and status pages.
    pub last_error: Option<String>,
}

/// A permanent registration failure that stopped the tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelFailure {
    /// The connection that got it.
    pub conn_index: u8,
    /// The edge's answer.
    pub error: RegistrationError,
}

/// The tunnel's status, published on a watch channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelStatus {
    /// One entry per connIndex.
    pub connections: Vec<ConnectionStatus>,
    /// Whether any connection ever registered.
    pub ever_registered: bool,
    /// Whether a drain (or shutdown) was requested.
    pub draining: bool,
    /// Set when a permanent error stopped the tunnel.
    pub failure: Option<TunnelFailure>,
    /// The last permanent refusal a connection gave up on, also after the tunnel
    /// had registered (a tunnel deleted at the edge): one such refusal does not
    /// stop the other connections, but a tunnel whose connections all ended this
    /// way did not close cleanly.
    pub refusal: Option<TunnelFailure>,
}

impl TunnelStatus {
    /// How many connections are registered and not draining (for `/readyz`).
    pub fn registered(&self) -> usize {
        self.connections
            .iter()
            .filter(|c| matches!(c.state, ConnectionState::Registered { .. }))
            .count()
    }

    /// Whether every spawned connection has stopped.
    pub fn is_closed(&self) -> bool {
        self.connections
            .iter()
            .all(|c| matches!(c.state, ConnectionState::Idle | ConnectionState::Stopped))
    }
}
