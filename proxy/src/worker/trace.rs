//! The worker's tracing spans, all at `debug`: `conn` for one client connection
//! (instrumented onto its task, and onto each of its HTTP/2 streams' tasks),
//! `tunnel_stream` for one stream of a tunnel connection, and `req` for one request
//! inside either. Per-request data is `debug` by the level policy
//! (ARCHITECTURE.md, *Invariants*), so the default filter (`info`) disables them
//! all and a connection or a request pays a level check for its span.
//!
//! What is learned after a span opens starts as an `Empty` field and is recorded
//! through this module, only on an enabled span: `Span::record` looks the field
//! up by name even on a disabled one. Field names live here and nowhere else.

use std::fmt::Debug;
use std::net::SocketAddr;

use http::Method;
use tracing::Span;
use tracing::field::Empty;

/// The span of one client connection accepted by `worker`. `tls`, `sni` and
/// `protocol` are recorded as the connection shows them.
pub(crate) fn connection(worker: usize, peer: SocketAddr, local: SocketAddr) -> Span {
    tracing::debug_span!(
        "conn",
        worker,
        %peer,
        %local,
        tls = Empty,
        sni = Empty,
        protocol = Empty
    )
}

/// The span of one tunnel stream (`conn_index` the tunnel connection that carried
/// it, `kind` HTTP, websocket or TCP) served by `worker`.
pub(crate) fn tunnel_stream(worker: usize, conn_index: Option<u8>, kind: impl Debug) -> Span {
    tracing::debug_span!("tunnel_stream", worker, conn_index, ?kind)
}

/// The span of one request; its `route` is recorded once it is routed.
pub(crate) fn request(method: &Method) -> Span {
    tracing::debug_span!("req", %method, route = Empty)
}

/// How TLS is handled on a connection: `"terminated"` here, or `"passthrough"`.
pub(crate) fn record_tls(span: &Span, tls: &'static str, sni: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    span.record("tls", tls);
    if let Some(sni) = sni {
        span.record("sni", sni);
    }
}

/// What a connection speaks: `"http/1.1"`, `"h2"`, `"h2c"` (switched by an
/// upgrade) or `"tls-route"` (a TLSRoute's stream, spliced).
pub(crate) fn record_protocol(span: &Span, protocol: &'static str) {
    if !span.is_disabled() {
        span.record("protocol", protocol);
    }
}

/// The route a request matched, if it matched one.
pub(crate) fn record_route(span: &Span, route: Option<&str>) {
    if let Some(route) = route.filter(|_| !span.is_disabled()) {
        span.record("route", route);
    }
}
