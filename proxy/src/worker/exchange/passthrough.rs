//! A TLS passthrough connection carried out: connect to the endpoint the plan chose
//! (`pipeline::plan_tls`), send it the ClientHello bytes already read, then splice
//! both ways until both sides close, one fails, or the pair stays idle for
//! `ClientLimits::upgraded_idle_timeout`. A backend that cannot be reached gets the
//! client reset. Each connection is counted on its route
//! (`culvert_tls_passthrough_connections_total`, its bytes in the route's byte
//! counters) and may be logged as one access-log line.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::Worker;
use super::splice::{SpliceEnd, splice};
use crate::access_log::rfc3339;
use crate::metrics::PassthroughEnd;
use crate::pipeline::{BackendFailure, ConnectionInfo, Splice};
use crate::worker::upstream::connect_tcp;

/// What one passthrough connection did, for its metrics and log line.
struct Passed<'a> {
    route: Option<&'a str>,
    server_name: Option<&'a str>,
    upstream: Option<SocketAddr>,
    failure: Option<BackendFailure>,
    end: PassthroughEnd,
    from_client: u64,
    from_server: u64,
}

impl Worker {
    /// Carries out `plan` for `client`, whose first bytes (`hello`, the ClientHello
    /// and anything after it) were already read.
    pub(crate) async fn pass_through(
        self: &Rc<Self>,
        mut client: TcpStream,
        hello: BytesMut,
        connection: &ConnectionInfo,
        server_name: Option<&str>,
        route: Option<Arc<str>>,
        plan: Splice,
    ) {
        let started = Instant::now();
        let mut passed = Passed {
            route: route.as_deref(),
            server_name,
            upstream: plan.endpoint.ok(),
            failure: None,
            end: PassthroughEnd::BackendFailed,
            from_client: hello.len() as u64,
            from_server: 0,
        };
        match self.open_backend(plan.endpoint, &hello).await {
            Ok(mut server) => {
                let spliced = splice(&mut client, &mut server, self.limits.upgraded_idle_timeout);
                let spliced = spliced.await;
                passed.end = match spliced.end {
                    SpliceEnd::Closed => PassthroughEnd::Closed,
                    SpliceEnd::Idle => PassthroughEnd::Idle,
                };
                passed.from_client += spliced.from_client;
                passed.from_server = spliced.from_server;
            }
            Err(failure) => {
                passed.failure = Some(failure);
                // A reset tells the client at once that nothing is behind the name.
                let _ = socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO));
            }
        }
        self.record_passthrough(&passed, connection, started);
    }

    /// A connection to `endpoint` that has been sent `hello`.
    async fn open_backend(
        &self,
        endpoint: Result<SocketAddr, BackendFailure>,
        hello: &[u8],
    ) -> Result<TcpStream, BackendFailure> {
        let mut server = connect_tcp(endpoint?)
            .await
            .map_err(|_| BackendFailure::Connect)?;
        server
            .write_all(hello)
            .await
            .map_err(|_| BackendFailure::Connect)?;
        Ok(server)
    }

    fn record_passthrough(
        &self,
        passed: &Passed<'_>,
        connection: &ConnectionInfo,
        started: Instant,
    ) {
        let stats = self.stats().route(passed.route);
        stats.record_passthrough(passed.end);
        if let Some(failure) = passed.failure {
            stats.record_backend_failure(failure);
        }
        stats.add_request_bytes(passed.from_client);
        stats.add_response_bytes(passed.from_server);
        let failed = passed.failure.is_some();
        if !self.sink.log.wants(failed, self.next_random()) {
            return;
        }
        let elapsed = started.elapsed();
        let started_at = SystemTime::now()
            .checked_sub(elapsed)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let line = serde_json::json!({
            "time": rfc3339(started_at),
            "worker": self.sink.worker,
            "client": connection.peer.ip().to_string(),
            "entry": "listener",
            "protocol": "tls-passthrough",
            "serverName": passed.server_name,
            "route": passed.route,
            "upstream": passed.upstream.map(|addr| addr.to_string()),
            "failure": passed.failure.map(BackendFailure::as_str),
            "end": passed.end.as_str(),
            "durationMs": elapsed.as_secs_f64() * 1000.0,
            "bytesIn": passed.from_client,
            "bytesOut": passed.from_server,
        });
        self.sink.log.write(line.to_string());
    }
}
