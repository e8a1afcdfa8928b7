//! What a client may cost the proxy before it is refused or cut off. Every limit
//! has a default an operator can change; the defaults follow nginx's.

use std::time::Duration;

/// Limits on client connections, the same for every listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// How long a client may take to send a request head, idle keep-alive time
    /// before it included (nginx's `client_header_timeout`). A client that sent
    /// part of a head by then is answered `408`; an idle one is closed.
    pub header_read_timeout: Duration,
    /// Client connections one worker holds open at most (nginx's
    /// `worker_connections`); one accepted past it is closed at once and counted
    /// (`culvert_refused_total{reason="connection_limit"}`), so the load goes to
    /// the other workers or replicas instead of queueing here.
    pub max_connections_per_worker: usize,
}

impl ClientLimits {
    /// The default [`ClientLimits::header_read_timeout`]: 30 s.
    pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default [`ClientLimits::max_connections_per_worker`]: 16,384.
    pub const MAX_CONNECTIONS_PER_WORKER: usize = 16_384;
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Self::HEADER_READ_TIMEOUT,
            max_connections_per_worker: Self::MAX_CONNECTIONS_PER_WORKER,
        }
    }
}
