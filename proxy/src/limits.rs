//! What a client may cost the proxy before it is refused or cut off. Every limit
//! has a default an operator can change; the defaults follow nginx's.

use std::time::Duration;

use culvert_wire::HeadLimits;

/// Limits on client connections, the same for every listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// How long a client may take to send a request head (nginx's
    /// `client_header_timeout`), counted from the connection's start for its
    /// first request and from the first byte of each later one. A client that
    /// sent part of a head by then is answered `408`; one that sent nothing is
    /// closed.
    pub header_read_timeout: Duration,
    /// How long a connection may stay idle between requests, waiting for the first
    /// byte of the next one, before it is closed (nginx's `keepalive_timeout`).
    pub keepalive_timeout: Duration,
    /// How large a request head may be, in bytes and in fields (nginx's
    /// `large_client_header_buffers`, HAProxy's `tune.http.maxhdr`): over either
    /// the client gets `431` (`414` for a request line alone that long) and the
    /// connection closes. On HTTP/2 the byte limit is the header list size
    /// announced to the client.
    pub request_head: HeadLimits,
    /// Client connections one worker holds open at most (nginx's
    /// `worker_connections`); one accepted past it is closed at once and counted
    /// (`culvert_refused_total{reason="connection_limit"}`), so the load goes to
    /// the other workers or replicas instead of queueing here.
    pub max_connections_per_worker: usize,
    /// Longest wait between two reads of a request body (nginx's
    /// `client_body_timeout`): a body that stalls longer fails, the exchange is
    /// abandoned upstream and the client gets 408.
    pub body_read_timeout: Duration,
    /// How long an upgraded connection (WebSocket) or a TLS passthrough connection
    /// may carry no byte either way before both sides are closed (HAProxy's
    /// `timeout tunnel`).
    pub upgraded_idle_timeout: Duration,
}

impl ClientLimits {
    /// The default [`ClientLimits::header_read_timeout`]: 30 s.
    pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default [`ClientLimits::keepalive_timeout`]: 75 s.
    pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(75);
    /// The default [`ClientLimits::max_connections_per_worker`]: 16,384.
    pub const MAX_CONNECTIONS_PER_WORKER: usize = 16_384;
    /// The default [`ClientLimits::body_read_timeout`]: 60 s.
    pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
    /// The default [`ClientLimits::upgraded_idle_timeout`]: one hour.
    pub const UPGRADED_IDLE_TIMEOUT: Duration = Duration::from_secs(3600);
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Self::HEADER_READ_TIMEOUT,
            keepalive_timeout: Self::KEEPALIVE_TIMEOUT,
            request_head: HeadLimits::DEFAULT,
            max_connections_per_worker: Self::MAX_CONNECTIONS_PER_WORKER,
            body_read_timeout: Self::BODY_READ_TIMEOUT,
            upgraded_idle_timeout: Self::UPGRADED_IDLE_TIMEOUT,
        }
    }
}
