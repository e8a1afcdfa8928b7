//! What one request did, gathered while it is handled and finished when its response
//! body ends (or the client goes away): the request's metrics and its access-log
//! line. [`RecordedBody`] wraps the response body to count the bytes sent, to read
//! a gRPC call's status from its trailers, and to finish the record on drop, so a
//! streamed response is timed to its last byte.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use culvert_router::outcome::grpc_status;
use http::uri::PathAndQuery;
use http::{Method, StatusCode, Version};
use hyper::body::{Body, Frame, SizeHint};

use super::ProxyBody;
use crate::BoxError;
use crate::access_log::{AccessLog, started_rfc3339};
use crate::metrics::{InFlight, RouteStats, WorkerStats};
use crate::pipeline::BackendFailure;
use crate::pipeline::fields::RoutingHost;
use crate::tls::ClientIdentity;
use crate::worker::body::BodyProgress;
use culvert_wire::{CarriesRawFields, RawFields};

/// One request being served.
pub(crate) struct Record {
    /// When the request began (the wall-clock time is worked out from it only for
    /// a log line: one clock read per request, not two).
    started: Instant,
    _in_flight: InFlight,
    pub(crate) method: Method,
    pub(crate) host: RoutingHost,
    /// The request target as the client sent it (sharing the request's bytes).
    pub(crate) target: Option<PathAndQuery>,
    pub(crate) version: Version,
    pub(crate) client: IpAddr,
    /// The certificate the client showed, if its listener asked for one.
    pub(crate) client_certificate: Option<ClientIdentity>,
    /// The request came over a tunnel stream, not a listener.
    pub(crate) tunnel: bool,
    /// `namespace/name` of the route that matched.
    pub(crate) route: Option<Arc<str>>,
    /// The endpoint the last attempt went to.
    pub(crate) upstream: Option<SocketAddr>,
    pub(crate) failure: Option<BackendFailure>,
    pub(crate) attempts: u32,
    /// How far the request body from the client got.
    pub(crate) request_body: Rc<BodyProgress>,
    /// The request is a gRPC call.
    pub(crate) grpc: bool,
    /// A gRPC call's `grpc-status`, from the response head or its trailers.
    pub(crate) grpc_status: Option<u32>,
    status: StatusCode,
}

impl Record {
    #[allow(
        clippy::disallowed_methods,
        reason = "the worker is the IO layer and owns the clock"
    )]
    pub(crate) fn start(
        stats: &WorkerStats,
        method: Method,
        target: Option<PathAndQuery>,
        version: Version,
        client: IpAddr,
    ) -> Self {
        Self {
            started: Instant::now(),
            _in_flight: stats.request_started(),
            method,
            host: RoutingHost::default(),
            target,
            version,
            client,
            client_certificate: None,
            tunnel: false,
            route: None,
            upstream: None,
            failure: None,
            attempts: 0,
            request_body: Rc::default(),
            grpc: false,
            grpc_status: None,
            status: StatusCode::OK,
        }
    }

    /// Whether the request failed: a backend failure, a 5xx, or a gRPC status
    /// other than `OK`.
    pub(in crate::worker) fn failed(&self) -> bool {
        self.failure.is_some()
            || self.status.is_server_error()
            || self.grpc_status.is_some_and(|code| code != 0)
    }

    /// The JSON access-log line for this request.
    pub(in crate::worker) fn line(
        &self,
        worker: usize,
        response_bytes: u64,
        complete: bool,
    ) -> String {
        let elapsed = self.started.elapsed();
        serde_json::json!({
            "time": started_rfc3339(elapsed),
            "worker": worker,
            "client": self.client.to_string(),
            "clientCertificate": self.client_certificate.as_ref().map(|identity| {
                serde_json::json!({"sha256": &*identity.hash, "verified": identity.verified})
            }),
            "entry": if self.tunnel { "tunnel" } else { "listener" },
            "method": self.method.as_str(),
            "host": &*self.host,
            "target": self.target.as_ref().map_or("/", PathAndQuery::as_str),
            "protocol": format!("{:?}", self.version),
            "status": self.status.as_u16(),
            "grpcStatus": self.grpc_status,
            "route": self.route.as_deref(),
            "upstream": self.upstream.map(|addr| addr.to_string()),
            "failure": self.failure.map(BackendFailure::as_str),
            "attempts": self.attempts,
            "durationMs": elapsed.as_secs_f64() * 1000.0,
            "bytesIn": self.request_body.read(),
            "bytesOut": response_bytes,
            "complete": complete,
        })
        .to_string()
    }
}

/// Where a finished record goes.
pub(crate) struct Sink {
    pub(crate) worker: usize,
    pub(crate) stats: Rc<WorkerStats>,
    pub(crate) log: Arc<AccessLog>,
}

/// A response body that counts what it sends and finishes its record when dropped.
pub(crate) struct RecordedBody {
    inner: ProxyBody,
    sent: u64,
    ended: bool,
    /// Boxed: a response is moved through several layers on its way out, and the
    /// record would more than double what each move copies.
    finish: Option<Box<Finish>>,
}

/// What finishing a record takes.
struct Finish {
    record: Record,
    sink: Rc<Sink>,
    /// Decides sampling for the access log.
    random: u64,
}

impl RecordedBody {
    /// Wraps `inner`; `random` decides sampling for the access log.
    pub(crate) fn new(
        inner: ProxyBody,
        mut record: Record,
        status: StatusCode,
        sink: Rc<Sink>,
        random: u64,
    ) -> Self {
        record.status = status;
        Self {
            inner,
            sent: 0,
            ended: false,
            finish: Some(Box::new(Finish {
                record,
                sink,
                random,
            })),
        }
    }
}

impl CarriesRawFields for RecordedBody {
    fn raw_fields(&self) -> Option<&RawFields> {
        self.inner.raw_fields()
    }

    fn take_raw_fields(&mut self) -> Option<RawFields> {
        self.inner.take_raw_fields()
    }
}

impl Body for RecordedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.sent += data.len() as u64;
                } else if let (Some(trailers), Some(finish)) =
                    (frame.trailers_ref(), self.finish.as_mut())
                {
                    if finish.record.grpc {
                        finish.record.grpc_status = grpc_status(trailers);
                    }
                }
            }
            Poll::Ready(None) => self.ended = true,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RecordedBody {
    fn drop(&mut self) {
        let Some(finish) = self.finish.take() else {
            return;
        };
        let Finish {
            record,
            sink,
            random,
        } = *finish;
        let complete = self.ended || self.inner.is_end_stream();
        let stats: RouteStats = sink.stats.route(record.route.as_deref());
        stats.record_response(record.status, record.started.elapsed());
        if let Some(failure) = record.failure {
            stats.record_backend_failure(failure);
        }
        stats.add_request_bytes(record.request_body.read());
        stats.add_response_bytes(self.sent);
        if sink.log.wants(record.failed(), random) {
            sink.log
                .write(record.line(sink.worker, self.sent, complete));
        }
    }
}
