//! Metrics: what the data plane counts and how it is exposed to Prometheus.
//!
//! This module owns the counters themselves, not the plumbing around them:
//!
//! - [`WorkerStats`] (`worker.rs`): one per worker thread, recorded into on the
//!   request path with plain `Cell`s behind `Rc`s. It is deliberately `!Send` and
//!   `!Sync`: recording takes no lock and writes no shared cache line. Start reading
//!   here. [`WorkerStats::route`] hands out a [`RouteStats`] handle per request,
//!   [`WorkerStats::request_started`] an [`InFlight`] guard, and
//!   [`WorkerStats::listener`] a [`ListenerStats`] handle whose
//!   [`ListenerStats::connection_opened`] gives an [`OpenConnection`] guard.
//! - [`StatsSnapshot`] (`snapshot.rs`): a `Send + Clone` copy of one worker's stats,
//!   taken with [`WorkerStats::snapshot`] on the worker thread when the config API thread
//!   asks for it, and added up with [`StatsSnapshot::merge`].
//! - [`ConfigApiStats`] (`control.rs`): the config API thread's few numbers (config
//!   version, swaps, rejections, workers).
//! - [`encode()`] (`encode.rs`): the Prometheus text exposition (format 0.0.4, no
//!   `# EOF`) of a [`ConfigApiStats`] and a merged [`StatsSnapshot`], written with the
//!   `prometheus-client` crate; serve it with [`CONTENT_TYPE`].
//!
//! It must never: take a lock or touch an atomic on the request path, hold a
//! `RefCell` borrow beyond one method call, allocate on the request path for a route
//! or listener it has already seen, or take a label value from the peer (route labels
//! are route names the caller passes in, never a raw `Host`).
//!
//! Label cardinality is bounded per worker: at most [`MAX_ROUTE_KEYS`] distinct route
//! names and [`MAX_LISTENER_KEYS`] distinct listener labels. Later ones are counted
//! under the label [`OVERFLOW`]. Entries are never removed, so a route deleted from
//! the config keeps its (frozen) series until the process restarts, and a long-lived
//! process with much route churn eventually counts new routes under [`OVERFLOW`];
//! that is the price of counters that never go backwards.
//!
//! The message passing between the workers and the config API thread is not here: a
//! worker answers a scrape request on its own thread (`worker/mod.rs`), and the
//! config API thread merges and encodes (`config_api/mod.rs`).

mod config_api;
mod encode;
mod snapshot;
mod worker;

use http::StatusCode;

pub(crate) use config_api::ConfigApiStats;
pub(crate) use encode::{CONTENT_TYPE, encode};
pub(crate) use snapshot::StatsSnapshot;

pub(crate) use worker::{InFlight, OpenConnection, RouteStats, WorkerStats};

/// Most distinct route names one worker keeps series for; later names are counted
/// under [`OVERFLOW`]. [`NO_ROUTE`] and [`OVERFLOW`] themselves do not count.
pub(crate) const MAX_ROUTE_KEYS: usize = 10_000;
/// Most distinct listener labels one worker keeps series for; later ones are counted
/// under [`OVERFLOW`].
pub(crate) const MAX_LISTENER_KEYS: usize = 1_024;
/// The route label of requests no route matched (404, 400, no snapshot yet).
pub(crate) const NO_ROUTE: &str = "none";
/// The route or listener label that absorbs everything past the cardinality cap.
pub(crate) const OVERFLOW: &str = "overflow";

/// Upper bounds of the `culvert_request_duration_seconds` buckets, in nanoseconds
/// (integers, so an observation is placed without float rounding): 0.5 ms to 30 s,
/// roughly 1-2.5-5 per decade. Slower requests land in the implicit `+Inf` bucket.
pub(crate) const DURATION_BOUNDS_NANOS: [u64; 15] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
];

/// Buckets kept per histogram: one per bound plus the `+Inf` overflow bucket.
const DURATION_BUCKETS: usize = DURATION_BOUNDS_NANOS.len() + 1;

/// Why a client (a connection, a request head or body) was refused or cut off by
/// a limit or a protocol rule; the `reason` label of `culvert_refused_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Refusal {
    /// A request head that does not parse, or with ambiguous framing or host: 400.
    Malformed,
    /// A transfer coding or HTTP version not implemented: 501, 505.
    Unsupported,
    /// A request line or head over the size or field-count limit: 414, 431.
    TooLarge,
    /// Part of a head, and no more of it by the header read timeout: 408.
    HeaderTimeout,
    /// A request body that was malformed or cut short while it was forwarded: 400.
    Body,
    /// A request body that stalled past the body read timeout: 408.
    BodyTimeout,
    /// An upgraded connection (WebSocket) closed after the idle timeout.
    UpgradedIdle,
    /// A connection closed on accept: the worker holds its connection limit.
    ConnectionLimit,
    /// An HTTP/2 connection ended for abuse (`ENHANCE_YOUR_CALM`: rapid reset,
    /// CONTINUATION or small-frame floods).
    Http2Abuse,
    /// An HTTP/2 connection ended for another protocol error of the client's.
    Http2Protocol,
    /// A connection to a TLS passthrough address that did not open with a TLS
    /// ClientHello (or with one malformed or over 64 KiB): reset.
    TlsMalformed,
    /// A ClientHello not complete within the handshake timeout (10 s): reset.
    TlsHelloTimeout,
    /// A ClientHello naming nothing a listener and route on its address serve:
    /// reset.
    TlsUnrouted,
}

impl Refusal {
    /// Every reason, in label order.
    pub(crate) const ALL: [Self; 13] = [
        Self::Malformed,
        Self::Unsupported,
        Self::TooLarge,
        Self::HeaderTimeout,
        Self::Body,
        Self::BodyTimeout,
        Self::UpgradedIdle,
        Self::ConnectionLimit,
        Self::Http2Abuse,
        Self::Http2Protocol,
        Self::TlsMalformed,
        Self::TlsHelloTimeout,
        Self::TlsUnrouted,
    ];

    /// The `reason` label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::Unsupported => "unsupported",
            Self::TooLarge => "too_large",
            Self::HeaderTimeout => "header_timeout",
            Self::Body => "body",
            Self::BodyTimeout => "body_timeout",
            Self::UpgradedIdle => "upgraded_idle",
            Self::ConnectionLimit => "connection_limit",
            Self::Http2Abuse => "http2_abuse",
            Self::Http2Protocol => "http2_protocol",
            Self::TlsMalformed => "tls_malformed",
            Self::TlsHelloTimeout => "tls_hello_timeout",
            Self::TlsUnrouted => "tls_unrouted",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// How a TLSRoute connection (passed through, or terminated here) ended: the `end`
/// label of `culvert_tls_route_connections_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum TlsRouteEnd {
    /// Both sides closed, or one failed, after the connection reached its backend.
    Closed,
    /// Nothing moved either way for the idle timeout.
    Idle,
    /// No backend endpoint could be reached (the reason is counted in
    /// `culvert_backend_errors_total`).
    BackendFailed,
}

impl TlsRouteEnd {
    /// Every end, in label order.
    pub(crate) const ALL: [Self; 3] = [Self::Closed, Self::Idle, Self::BackendFailed];

    /// The `end` label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Idle => "idle",
            Self::BackendFailed => "backend_failed",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Closed => 0,
            Self::Idle => 1,
            Self::BackendFailed => 2,
        }
    }
}

/// The `status_class` label values, indexed by [`status_class_index`].
const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The index into [`STATUS_CLASSES`] of `status`. `StatusCode` allows 100..=999;
/// the non-standard 6xx-9xx are counted as `5xx` so the label set stays fixed.
fn status_class_index(status: StatusCode) -> usize {
    usize::from(status.as_u16() / 100).clamp(1, 5) - 1
}

#[cfg(test)]
mod tests;
