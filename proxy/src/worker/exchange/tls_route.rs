//! A TLSRoute connection carried out (`pipeline::plan_tls` chose the route and the
//! endpoint): connect to the endpoint, send it the bytes already read (the
//! ClientHello, when the TLS passes through), then splice both ways until both sides
//! close, one fails, or the pair stays idle for `ClientLimits::upgraded_idle_timeout`.
//! The client's side is the raw TCP stream (passthrough) or the TLS session
//! terminated here (mode `Terminate`). A backend that cannot be reached gets the
//! client reset. Each connection is counted on its route
//! (`culvert_tls_route_connections_total`, its bytes in the route's byte counters)
//! and may be logged as one access-log line.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::Worker;
use super::splice::{SpliceEnd, splice};
use crate::access_log::started_rfc3339;
use crate::metrics::TlsRouteEnd;
use crate::pipeline::{BackendFailure, ConnectionInfo, TlsForward};
use crate::worker::io::OverTcp;
use crate::worker::upstream::connect_tcp;

/// A TLSRoute connection about to be forwarded.
pub(crate) struct RouteStream<'a, C> {
    /// The client's side: its TCP stream, or the TLS session terminated here.
    pub(crate) client: C,
    /// Bytes already read that the backend gets first (the ClientHello of a
    /// passthrough; nothing when TLS was terminated here).
    pub(crate) first: &'a [u8],
    /// The name the client asked for.
    pub(crate) server_name: Option<&'a str>,
    /// `namespace/name` of the route.
    pub(crate) route: Option<Arc<str>>,
}

/// What one TLSRoute connection did, for its metrics and log line.
struct Forwarded<'a> {
    route: Option<&'a str>,
    server_name: Option<&'a str>,
    terminated: bool,
    upstream: Option<SocketAddr>,
    failure: Option<BackendFailure>,
    end: TlsRouteEnd,
    from_client: u64,
    from_server: u64,
}

impl Worker {
    /// Forwards `stream` as `plan` says.
    #[allow(
        clippy::disallowed_methods,
        reason = "the worker is the IO layer and owns the clock"
    )]
    pub(crate) async fn forward_tls_stream<C: OverTcp>(
        self: &Rc<Self>,
        stream: RouteStream<'_, C>,
        connection: &ConnectionInfo,
        plan: TlsForward,
    ) {
        let RouteStream {
            mut client,
            first,
            server_name,
            route,
        } = stream;
        let started = Instant::now();
        let mut forwarded = Forwarded {
            route: route.as_deref(),
            server_name,
            terminated: plan.terminate,
            upstream: plan.endpoint.ok(),
            failure: None,
            end: TlsRouteEnd::BackendFailed,
            from_client: first.len() as u64,
            from_server: 0,
        };
        match open_backend(plan.endpoint, first).await {
            Ok(mut server) => {
                let idle = self.limits.upgraded_idle_timeout;
                let spliced = splice(&mut client, &mut server, idle).await;
                forwarded.end = match spliced.end {
                    SpliceEnd::Closed => TlsRouteEnd::Closed,
                    SpliceEnd::Idle => TlsRouteEnd::Idle,
                };
                forwarded.from_client += spliced.from_client;
                forwarded.from_server = spliced.from_server;
            }
            Err(failure) => {
                forwarded.failure = Some(failure);
                // A reset tells the client at once that nothing is behind the name.
                let _ = socket2::SockRef::from(client.tcp()).set_linger(Some(Duration::ZERO));
            }
        }
        self.record_tls_route(&forwarded, connection, started);
    }

    fn record_tls_route(
        &self,
        forwarded: &Forwarded<'_>,
        connection: &ConnectionInfo,
        started: Instant,
    ) {
        let stats = self.stats().route(forwarded.route);
        stats.record_tls_route(forwarded.end);
        if let Some(failure) = forwarded.failure {
            stats.record_backend_failure(failure);
        }
        stats.add_request_bytes(forwarded.from_client);
        stats.add_response_bytes(forwarded.from_server);
        let failed = forwarded.failure.is_some();
        if !self.sink.log.wants(failed, self.next_random()) {
            return;
        }
        let elapsed = started.elapsed();
        let line = serde_json::json!({
            "time": started_rfc3339(elapsed),
            "worker": self.sink.worker,
            "client": connection.peer.ip().to_string(),
            "entry": "listener",
            "protocol": if forwarded.terminated { "tls-terminate" } else { "tls-passthrough" },
            "serverName": forwarded.server_name,
            "route": forwarded.route,
            "upstream": forwarded.upstream.map(|addr| addr.to_string()),
            "failure": forwarded.failure.map(BackendFailure::as_str),
            "end": forwarded.end.as_str(),
            "durationMs": elapsed.as_secs_f64() * 1000.0,
            "bytesIn": forwarded.from_client,
            "bytesOut": forwarded.from_server,
        });
        self.sink.log.write(line.to_string());
    }
}

/// A connection to `endpoint` that has been sent `first`.
async fn open_backend(
    endpoint: Result<SocketAddr, BackendFailure>,
    first: &[u8],
) -> Result<TcpStream, BackendFailure> {
    let mut server = connect_tcp(endpoint?)
        .await
        .map_err(|_| BackendFailure::Connect)?;
    if !first.is_empty() {
        server
            .write_all(first)
            .await
            .map_err(|_| BackendFailure::Connect)?;
    }
    Ok(server)
}
