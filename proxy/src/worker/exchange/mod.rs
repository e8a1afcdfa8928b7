//! One request through a worker: the pipeline plans it on the snapshot it loaded
//! ([`crate::pipeline::plan`]), and this carries the plan out: a local answer (404,
//! 421, redirect, CORS preflight, 500/503 for unusable backends), or the request
//! forwarded to one endpoint of a chosen backend, with retries and mirrors,
//! streaming both bodies. WebSocket upgrades are tunnelled once the backend answers
//! 101.
//!
//! Failures are classified: client (400 bad request, 404 no route, 421 misdirected),
//! internal (500 no backend with weight or invalid reference), upstream (502
//! unreachable or broken, 503 no endpoints, 504 timeout). A gRPC call answered
//! here gets its failure as a `grpc-status`, as Envoy answers.
//!
//! Timeouts: `backendRequest` bounds each attempt until the response head arrives;
//! `request` bounds all attempts together, backoffs included. A request body is
//! buffered (up to [`MAX_REPLAY_BODY`], and only when its size is known to fit) when
//! the rule retries or mirrors, because a streamed body can be sent only once; a
//! larger body is streamed and then neither retried nor mirrored.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use culvert_connector::io::{TunnelBody, TunnelUpgrade};
use culvert_router::config::AppProtocol;
use culvert_router::outcome::{apply_header_modifier, grpc_status, is_grpc_content_type};
use culvert_router::rule::{Backend, Filters, Mirror};
use futures_util::{FutureExt as _, future};
use http::header::{self, HeaderValue};
use http::{Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use hyper_util::rt::TokioIo;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tracing::Instrument as _;

mod outgoing;
pub(crate) mod record;
mod splice;
mod tls_route;

use crate::access_log::AccessLog;
use crate::metrics::{Refusal, WorkerStats};
use crate::pipeline::fields::{Forwarding, strip_hop_by_hop};
use crate::pipeline::{
    self, AttemptEnd, Attempts, BackendFailure, ConnectionInfo, Forward, LocalAnswer, Plan,
    Planned, Transport, UpstreamHead, attempt_limit, grpc_local_answer, pick_endpoint,
};
use crate::worker::body::{BodyFailure, ClientBody, CountedBody, body_enum};
use crate::worker::io::Upgraded;
use crate::worker::runtime::drain::Drain;
use crate::worker::runtime::tick::Ticks;
use crate::worker::trace;
use crate::worker::upstream::{
    Dial, Protocol, RequestBody, UpstreamBody, UpstreamError, Upstreams,
};
use crate::{BoxError, ClientLimits};
use crate::{Snapshot, SnapshotCell};
use culvert_wire::{CarriesRawFields, FieldsAs, headers_mut};
use outgoing::{build_request, upgrade_request};
use record::{Record, RecordedBody, Sink};
use splice::{SpliceEnd, splice};
pub(crate) use tls_route::RouteStream;

body_enum! {
    /// Body of every answer.
    #[allow(
        clippy::large_enum_variant,
        reason = "the backend's body is the common case; boxing it would cost an allocation per response"
    )]
    pub(crate) enum ProxyBody {
        /// The backend's, streamed.
        Upstream(UpstreamBody),
        /// A small one made here.
        Local(Full<Bytes>),
    }
}

impl CarriesRawFields for ProxyBody {
    fn raw_fields(&self) -> Option<&culvert_wire::RawFields> {
        match self {
            Self::Upstream(body) => body.raw_fields(),
            Self::Local(_) => None,
        }
    }

    fn take_raw_fields(&mut self) -> Option<culvert_wire::RawFields> {
        match self {
            Self::Upstream(body) => body.take_raw_fields(),
            Self::Local(_) => None,
        }
    }
}

/// Largest request body kept in memory so it can be retried or mirrored.
pub(crate) const MAX_REPLAY_BODY: u64 = 64 * 1024;

/// The state of one worker, shared by its tasks (never by other threads).
pub(crate) struct Worker {
    cell: Arc<SnapshotCell>,
    /// Metrics and the access log, where finished requests go.
    sink: Rc<Sink>,
    upstreams: Rc<Upstreams>,
    rng: Cell<u64>,
    /// Set once the worker drains; its connections watch it.
    drain: Drain,
    forwarding: Forwarding,
    limits: ClientLimits,
    /// Client connections open on this worker; drain waits for 0.
    connections: Cell<usize>,
    all_closed: Notify,
    /// Advanced every [`TICK`] by the worker's main loop: a request in flight counts
    /// ticks instead of arming a timer of its own (arming a timer due before the
    /// runtime's next wake-up costs the runtime an eventfd write).
    ticks: Ticks,
}

/// Counts one client connection for as long as it lives.
pub(crate) struct ConnectionGuard(Rc<Worker>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let open = self.0.connections.get().saturating_sub(1);
        self.0.connections.set(open);
        if open == 0 {
            self.0.all_closed.notify_waiters();
        }
    }
}

/// A request routed and rewritten, ready to be forwarded.
struct Prepared {
    /// The snapshot the request was routed on, which holds the plan's rule.
    snapshot: Arc<Snapshot>,
    forward: Forward,
    /// The client's body, counted as it is read (or a buffered copy of it).
    body: RequestBody,
}

/// How an attempt ended without a response.
enum Failure {
    Upstream(UpstreamError),
    Timeout,
}

impl Worker {
    #[allow(
        clippy::disallowed_methods,
        reason = "the worker is the IO layer and owns the clock"
    )]
    pub(crate) fn new(
        index: usize,
        cell: Arc<SnapshotCell>,
        (forwarding, limits): (Forwarding, ClientLimits),
        log: Arc<AccessLog>,
        seed: Option<u64>,
    ) -> Self {
        let now = seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos() as u64)
        });
        Self {
            cell,
            sink: Rc::new(Sink {
                worker: index,
                stats: Rc::new(WorkerStats::new()),
                log,
            }),
            upstreams: Rc::new(Upstreams::default()),
            rng: Cell::new(now ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            drain: Drain::default(),
            forwarding,
            limits,
            connections: Cell::new(0),
            all_closed: Notify::new(),
            ticks: Ticks::default(),
        }
    }

    /// One period of [`TICK`] has passed (called by the worker's main loop).
    pub(crate) fn tick(&self) {
        self.upstreams.tick();
        self.ticks.advance();
    }

    /// The worker's number, as its thread and spans name it.
    pub(crate) fn index(&self) -> usize {
        self.sink.worker
    }

    /// The worker's coarse clock.
    pub(crate) fn ticks(&self) -> &Ticks {
        &self.ticks
    }

    /// What a client may cost on this worker.
    pub(crate) fn limits(&self) -> &ClientLimits {
        &self.limits
    }

    /// Counts a new client connection until the guard drops.
    /// Client connections open on this worker.
    pub(crate) fn open_connections(&self) -> usize {
        self.connections.get()
    }

    pub(crate) fn open_connection(self: &Rc<Self>) -> ConnectionGuard {
        self.connections.set(self.connections.get() + 1);
        ConnectionGuard(Rc::clone(self))
    }

    /// Waits until no client connection is open on this worker.
    pub(crate) async fn all_connections_closed(&self) {
        loop {
            let notified = self.all_closed.notified();
            if self.connections.get() == 0 {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn cell(&self) -> &SnapshotCell {
        &self.cell
    }

    /// The worker's drain signal.
    pub(crate) fn drain(&self) -> &Drain {
        &self.drain
    }

    pub(crate) fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// This worker's metrics.
    pub(crate) fn stats(&self) -> &WorkerStats {
        &self.sink.stats
    }

    /// The next number of a splitmix64 sequence: cheap, uniform, not cryptographic.
    pub(crate) fn next_random(&self) -> u64 {
        let state = self.rng.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.rng.set(state);
        splitmix64(state)
    }

    /// Answers one request from an HTTP/2 stream (HTTP/2 has no `Upgrade`). Like
    /// [`Self::handle_request`], routed by the call itself, so the stream's future
    /// holds no second copy of the request.
    pub(crate) fn handle_http2<'a>(
        self: &'a Rc<Self>,
        request: Request<Incoming>,
        info: &'a ConnectionInfo,
    ) -> impl Future<Output = Response<RecordedBody>> + 'a {
        self.handle_request(request.map(ClientBody::Http2), None, info)
            .map(|mut response| {
                headers_mut(&mut response);
                response
            })
    }

    /// Answers one request from a tunnel stream. It is routed as if it had arrived
    /// on the snapshot's tunnel entry (see `Snapshot::tunnel_entry`), over HTTPS
    /// (the edge terminated the client's TLS); the client address is the edge's
    /// `Cf-Connecting-Ip` when present.
    pub(crate) async fn handle_tunnel(
        self: &Rc<Self>,
        mut request: Request<TunnelBody>,
    ) -> Response<RecordedBody> {
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        let entry = self
            .cell
            .load()
            .as_ref()
            .and_then(|snapshot| snapshot.tunnel_entry())
            .unwrap_or(unspecified);
        let peer = request
            .headers()
            .get("cf-connecting-ip")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse().ok())
            .map_or(unspecified, |ip| SocketAddr::new(ip, 0));
        let upgrade = request
            .extensions_mut()
            .remove::<TunnelUpgrade>()
            .map(ClientUpgrade::Tunnel);
        if upgrade.is_some() {
            // A websocket stream: make it an HTTP/1.1 upgrade whatever the edge's
            // metadata carried, so it is forwarded as one.
            *request.version_mut() = Version::HTTP_11;
            let headers = request.headers_mut();
            if !headers.contains_key(header::UPGRADE) {
                headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
            }
            headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        }
        let info = ConnectionInfo {
            tunnel: true,
            ..ConnectionInfo::new(peer, entry, entry)
        };
        let mut response = self
            .handle_request(request.map(ClientBody::Tunnel), upgrade, &info)
            .await;
        headers_mut(&mut response);
        response
    }

    /// Answers one request, recording it for metrics and the access log when its
    /// response body ends.
    ///
    /// The request is routed and rewritten on the current snapshot by the call
    /// itself (a local answer is ready at once), so the future holds only what
    /// forwarding it needs, once: every byte of it is copied with the request.
    /// Both run in the request's `req` span (see [`trace::request`]), a child of
    /// the span current at the call (its connection's or tunnel stream's).
    pub(super) fn handle_request<'a>(
        self: &'a Rc<Self>,
        request: Request<ClientBody>,
        client_upgrade: Option<ClientUpgrade>,
        info: &'a ConnectionInfo,
    ) -> impl Future<Output = Response<RecordedBody>> + 'a {
        let span = trace::request(request.method());
        let planning = span.enter();
        let client = self.forwarding.client(request.headers(), info.peer);
        let mut record = Record::start(
            &self.sink.stats,
            request.method().clone(),
            request.uri().path_and_query().cloned(),
            request.version(),
            client,
        );
        record.tunnel = info.tunnel;
        if let Transport::Tls { client, .. } = &info.transport {
            record.client_certificate.clone_from(&client.identity);
        }
        record.grpc = request
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|value| is_grpc_content_type(value.as_bytes()));
        // One load per request; the `Arc` (not a guard) lives across the awaits.
        let prepared = match self.cell.load_full() {
            Some(snapshot) => {
                let upgradable = client_upgrade.is_some();
                self.prepare(snapshot, request, upgradable, info, &mut record)
            }
            None => Err(local_answer(StatusCode::SERVICE_UNAVAILABLE)),
        };
        trace::record_route(&span, record.route.as_deref());
        let answer = match prepared {
            Ok(mut prepared) => future::Either::Left(async move {
                let response = self
                    .forward(&mut prepared, client_upgrade, &mut record)
                    .await;
                self.recorded(response, record)
            }),
            Err(answer) => future::Either::Right(future::ready(self.recorded(answer, record))),
        };
        drop(planning);
        answer.instrument(span)
    }

    /// `response` with a body that finishes `record` when it ends. A local error
    /// answer to a gRPC call goes out as a gRPC status (see [`grpc_local_answer`]);
    /// metrics and the access log keep the HTTP status it stands for, so a failing
    /// gRPC call still counts as a 4xx or 5xx.
    fn recorded(
        &self,
        response: Response<ProxyBody>,
        mut record: Record,
    ) -> Response<RecordedBody> {
        let (mut parts, body) = response.into_parts();
        let status = parts.status;
        if record.grpc {
            // Only local answers have a `Full` body; a backend's own error passes as
            // it is.
            if status.as_u16() >= 400 && matches!(body, ProxyBody::Local(_)) {
                grpc_local_answer(&mut parts, record.failure);
            }
            // A Trailers-Only answer has its status in the head; else the trailers
            // bring it (see `RecordedBody`).
            record.grpc_status = grpc_status(&parts.headers);
        }
        let body = RecordedBody::new(
            body,
            record,
            status,
            Rc::clone(&self.sink),
            self.next_random(),
        );
        Response::from_parts(parts, body)
    }

    /// Plans `request` on `snapshot` (see [`pipeline::plan`]): ready to forward, or
    /// answered here (`Err`). Not async, so nothing it handles takes room in the
    /// request's future.
    #[allow(
        clippy::result_large_err,
        reason = "the error is the local answer, built once per request; boxing it would add an allocation to every 404"
    )]
    fn prepare(
        &self,
        snapshot: Arc<Snapshot>,
        request: Request<ClientBody>,
        upgradable: bool,
        info: &ConnectionInfo,
        record: &mut Record,
    ) -> Result<Prepared, Response<ProxyBody>> {
        if let Some(answer) = acme_http01(&snapshot, &request, info) {
            return Err(answer);
        }
        let (parts, body) = request.into_parts();
        let Planned { routed, plan } =
            pipeline::plan(parts, &snapshot.table, info, self.forwarding, upgradable);
        record.host = routed.host;
        record.route = routed.route.and_then(|route| snapshot.route_label(route));
        let forward = match plan {
            Plan::Forward(forward) => forward,
            Plan::Answer(answer) => {
                if matches!(answer, LocalAnswer::BadHost) {
                    self.stats().refused(Refusal::Malformed);
                }
                let mut response = local_answer(answer.status());
                *response.headers_mut() = answer.into_headers();
                return Err(response);
            }
        };
        let body = RequestBody::Streamed(CountedBody::new(
            body,
            Rc::clone(&record.request_body),
            self.limits.body_read_timeout,
        ));
        Ok(Prepared {
            snapshot,
            forward,
            body,
        })
    }

    /// Forwards a prepared request and applies the rule's response filters. Takes
    /// the request by reference: its future then holds no second copy of it.
    async fn forward(
        self: &Rc<Self>,
        prepared: &mut Prepared,
        client_upgrade: Option<ClientUpgrade>,
        record: &mut Record,
    ) -> Response<ProxyBody> {
        let Prepared {
            snapshot,
            forward:
                Forward {
                    rule,
                    head,
                    upgrade,
                    cors_headers,
                    grpc,
                },
            body,
        } = prepared;
        let Some(rule) = snapshot.table.rule(*rule) else {
            return local_answer(StatusCode::INTERNAL_SERVER_ERROR);
        };
        let filters = rule.filters();
        let mut response = match (upgrade.take(), client_upgrade) {
            (Some(protocol), Some(client_upgrade)) => {
                let backend = rule.backends().pick(self.next_random());
                let head = head.for_attempt(true);
                // Boxed, like every path off the common one, to keep this future
                // (moved whole into each request's task) small.
                Box::pin(self.forward_upgrade(backend, head, protocol, client_upgrade, record))
                    .await
            }
            _ => {
                let replay = rule.retry().is_some() || !filters.mirrors.is_empty();
                if replay && Box::pin(buffer_body(body)).await.is_err() {
                    return local_answer(StatusCode::BAD_REQUEST);
                }
                if let RequestBody::Buffered(copy) = &body {
                    self.send_mirrors(filters, head, copy, *grpc);
                }
                self.forward_with_retries(rule, head, body, *grpc, record)
                    .await
            }
        };
        // Raw fields (see `RawFields`) left the hop's fields behind already.
        if response.status() != StatusCode::SWITCHING_PROTOCOLS
            && response.body().raw_fields().is_none()
        {
            strip_hop_by_hop(response.headers_mut());
        }
        if let Some(modifier) = &filters.response_headers {
            apply_header_modifier(modifier, headers_mut(&mut response));
        }
        if let Some(cors_headers) = cors_headers.take() {
            headers_mut(&mut response).extend(cors_headers);
        }
        response
    }

    /// Sends the request to a picked backend, retrying per the rule's policy. The
    /// head and body are borrowed from the request's future, not moved into this
    /// one (every byte of the request's future is copied with it).
    async fn forward_with_retries(
        self: &Rc<Self>,
        rule: &culvert_router::rule::Rule,
        head: &mut UpstreamHead,
        body: &mut RequestBody,
        grpc: bool,
        record: &mut Record,
    ) -> Response<ProxyBody> {
        let fields = head.response_fields;
        let timeouts = rule.timeouts();
        let deadline = timeouts.request.map(|limit| Instant::now() + limit);
        let time_left =
            || deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        // A streamed body can be sent once only.
        let attempts = Attempts::new(rule.retry(), matches!(body, RequestBody::Buffered(_)));
        let total = attempts.total();
        for attempt in 1..=total {
            let last = attempt == total;
            let Some(backend) = rule.backends().pick(self.next_random()) else {
                return failed(record, BackendFailure::InvalidBackend);
            };
            let endpoint = match pick_endpoint(backend, self.next_random()) {
                Ok(endpoint) => endpoint,
                Err(failure) => return failed(record, failure),
            };
            record.upstream = Some(endpoint);
            record.attempts = attempt;
            // Earlier attempts send copies (retries need a buffered body); the
            // last takes the body itself.
            let attempt_body = match body {
                RequestBody::Buffered(copy) if !last => RequestBody::Buffered(copy.clone()),
                _ => std::mem::replace(body, RequestBody::empty()),
            };
            let protocol = protocol_of(backend, grpc);
            let attempt_head = head.for_attempt(last);
            let Some(request) = build_request(attempt_head, backend, attempt_body, protocol) else {
                return local_answer(StatusCode::INTERNAL_SERVER_ERROR);
            };
            // The send future is made in each branch: one made before the match
            // would be stored twice (as itself, and inside the timeout).
            let outcome = match attempt_limit(timeouts.backend_request, time_left()) {
                Some(limit) => {
                    let dial = Dial {
                        endpoint,
                        tls: backend.tls.as_ref(),
                    };
                    let sent = self.upstreams.send(dial, request, fields);
                    match tokio::time::timeout(limit, sent).await {
                        Ok(result) => result.map_err(Failure::Upstream),
                        Err(_) => Err(Failure::Timeout),
                    }
                }
                None => {
                    let dial = Dial {
                        endpoint,
                        tls: backend.tls.as_ref(),
                    };
                    self.upstreams
                        .send(dial, request, fields)
                        .await
                        .map_err(Failure::Upstream)
                }
            };
            // An exchange that failed because the client's own body did (a
            // malformed chunk, a body cut short) is the client's error: 400, never
            // retried, and not counted against the backend.
            if let (Err(_), Some(failure)) = (&outcome, record.request_body.failed()) {
                let (refusal, status) = match failure {
                    BodyFailure::Broken => (Refusal::Body, StatusCode::BAD_REQUEST),
                    BodyFailure::Timeout => (Refusal::BodyTimeout, StatusCode::REQUEST_TIMEOUT),
                };
                self.stats().refused(refusal);
                return local_answer(status);
            }
            let end = match &outcome {
                Ok(response) => AttemptEnd::Answered(response.status()),
                Err(Failure::Upstream(_)) => AttemptEnd::Failed,
                Err(Failure::Timeout) => AttemptEnd::TimedOut,
            };
            if let Some(backoff) = attempts.retry_after(attempt, end, time_left()) {
                tokio::time::sleep(backoff).await;
                continue;
            }
            return match outcome {
                Ok(response) => backend_response(response, backend),
                Err(Failure::Timeout) => failed(record, BackendFailure::Timeout),
                Err(Failure::Upstream(UpstreamError::Connect)) => {
                    failed(record, BackendFailure::Connect)
                }
                Err(Failure::Upstream(UpstreamError::Protocol)) => {
                    failed(record, BackendFailure::Protocol)
                }
            };
        }
        failed(record, BackendFailure::Protocol)
    }

    /// Sends an upgrade request on a fresh connection and, when the backend answers
    /// 101, splices the two upgraded connections together.
    async fn forward_upgrade(
        self: &Rc<Self>,
        backend: Option<&Backend>,
        mut head: UpstreamHead,
        protocol: HeaderValue,
        client_upgrade: ClientUpgrade,
        record: &mut Record,
    ) -> Response<ProxyBody> {
        let Some(backend) = backend else {
            return failed(record, BackendFailure::InvalidBackend);
        };
        let endpoint = match pick_endpoint(backend, self.next_random()) {
            Ok(endpoint) => endpoint,
            Err(failure) => return failed(record, failure),
        };
        record.upstream = Some(endpoint);
        record.attempts = 1;
        head.headers.insert(header::UPGRADE, protocol);
        head.headers
            .insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        let Some(request) = upgrade_request(head, backend, RequestBody::empty()) else {
            return local_answer(StatusCode::INTERNAL_SERVER_ERROR);
        };
        let dial = Dial {
            endpoint,
            tls: backend.tls.as_ref(),
        };
        let mut response = match self.upstreams.send_upgrade(dial, request).await {
            Ok(response) => response,
            Err(UpstreamError::Connect) => return failed(record, BackendFailure::Connect),
            Err(UpstreamError::Protocol) => return failed(record, BackendFailure::Protocol),
        };
        if response.status() == StatusCode::SWITCHING_PROTOCOLS {
            let server_upgrade = hyper::upgrade::on(&mut response);
            let worker = Rc::clone(self);
            tokio::task::spawn_local(async move {
                let idle = worker.limits.upgraded_idle_timeout;
                if client_upgrade.splice(server_upgrade, idle).await == SpliceEnd::Idle {
                    worker.stats().refused(Refusal::UpgradedIdle);
                }
            });
        }
        backend_response(response.map(UpstreamBody::Hyper), backend)
    }

    /// Fires each sampled mirror with a copy of the request; their answers are
    /// dropped, and nothing they do reaches the real request.
    fn send_mirrors(
        self: &Rc<Self>,
        filters: &Filters,
        head: &UpstreamHead,
        body: &Full<Bytes>,
        grpc: bool,
    ) {
        for mirror in &filters.mirrors {
            if !mirror.sample(self.next_random()) {
                continue;
            }
            self.send_mirror(mirror, head, body.clone(), grpc);
        }
    }

    fn send_mirror(
        self: &Rc<Self>,
        mirror: &Mirror,
        head: &UpstreamHead,
        body: Full<Bytes>,
        grpc: bool,
    ) {
        let backend = &mirror.backend;
        let Ok(endpoint) = pick_endpoint(backend, self.next_random()) else {
            return;
        };
        let protocol = protocol_of(backend, grpc);
        let Some(request) =
            build_request(head.clone(), backend, RequestBody::Buffered(body), protocol)
        else {
            return;
        };
        let upstreams = Rc::clone(&self.upstreams);
        let tls = backend.tls.clone();
        tokio::task::spawn_local(async move {
            // The answer is only read to its end (so the connection can be reused).
            let dial = Dial {
                endpoint,
                tls: tls.as_ref(),
            };
            let sent = upstreams.send(dial, request, FieldsAs::Raw);
            if let Ok(response) = sent.await {
                let _ = response.into_body().collect().await;
            }
        });
    }
}

/// How the client side of an upgraded exchange is reached once the 101 is sent.
pub(crate) enum ClientUpgrade {
    /// An HTTP/1 listener connection, handed over once the `101` is written.
    Http1(oneshot::Receiver<Upgraded>),
    /// A tunnel stream, handed over by the connector.
    Tunnel(TunnelUpgrade),
}

impl ClientUpgrade {
    /// Copies bytes both ways between the client and the upgraded backend connection
    /// until either side closes or both stay idle for `idle`.
    async fn splice(self, server: hyper::upgrade::OnUpgrade, idle: Duration) -> SpliceEnd {
        let Ok(server) = server.await else {
            return SpliceEnd::Closed;
        };
        let mut server = TokioIo::new(server);
        match self {
            Self::Http1(client) => match client.await {
                Ok(mut client) => splice(&mut client, &mut server, idle).await.end,
                Err(_) => SpliceEnd::Closed,
            },
            Self::Tunnel(client) => match client.stream().await {
                Ok(mut client) => splice(&mut client, &mut server, idle).await.end,
                Err(_) => SpliceEnd::Closed,
            },
        }
    }
}

/// Buffers a streamed `body` in place when its size is known to fit
/// [`MAX_REPLAY_BODY`]; any other body stays as it is. `Err` when the client's body
/// breaks.
async fn buffer_body(body: &mut RequestBody) -> Result<(), BoxError> {
    let RequestBody::Streamed(streamed) = body else {
        return Ok(());
    };
    let fits = streamed
        .size_hint()
        .upper()
        .is_some_and(|upper| upper <= MAX_REPLAY_BODY);
    if !fits {
        return Ok(());
    }
    let bytes = streamed.collect().await?.to_bytes();
    *body = RequestBody::Buffered(Full::new(bytes));
    Ok(())
}

/// HTTP/2 for `kubernetes.io/h2c` backends and every gRPC route; else HTTP/1.1.
fn protocol_of(backend: &Backend, grpc: bool) -> Protocol {
    if grpc || backend.app_protocol == AppProtocol::H2c {
        Protocol::H2c
    } else {
        Protocol::Http1
    }
}

/// The local answer for `failure`, noted in the request's record.
fn failed(record: &mut Record, failure: BackendFailure) -> Response<ProxyBody> {
    record.failure = Some(failure);
    local_answer(failure.status())
}

/// The backend's response with the backend's own response header filter applied.
fn backend_response(
    mut response: Response<UpstreamBody>,
    backend: &Backend,
) -> Response<ProxyBody> {
    if let Some(modifier) = &backend.response_headers {
        apply_header_modifier(modifier, headers_mut(&mut response));
    }
    response.map(ProxyBody::Upstream)
}

pub(crate) fn splitmix64(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The answer to an ACME HTTP-01 validation request, before any routing (no route is
/// needed and none can shadow it): a `GET` or `HEAD` on a clear-text listener for
/// `/.well-known/acme-challenge/<token>` with a token being validated gets `200
/// text/plain` with the key authorization. Anything else is routed as usual.
fn acme_http01<B>(
    snapshot: &Snapshot,
    request: &Request<B>,
    info: &ConnectionInfo,
) -> Option<Response<ProxyBody>> {
    let plain = matches!(info.transport, Transport::Plain) && !info.tunnel;
    let method = request.method();
    if !plain || !(method == http::Method::GET || method == http::Method::HEAD) {
        return None;
    }
    let body = snapshot.acme_http01_answer(request.uri().path())?;
    let mut response = Response::new(ProxyBody::Local(Full::new(Bytes::from(body))));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Some(response)
}

pub(crate) fn local_answer(status: StatusCode) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::Local(Full::default()));
    *response.status_mut() = status;
    response
}
