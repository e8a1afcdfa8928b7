//! One request through a worker: route it on the snapshot it loaded, answer locally
//! (404, redirect, 500/503 for unusable backends) or forward it over HTTP/1.1 to one
//! endpoint of the chosen backend, streaming both bodies.
//!
//! Failures are classified: client (400 bad path, 404 no route), internal (500 no
//! backend with weight or invalid reference), upstream (502 unreachable, 503 no
//! endpoints, 504 timeout). Nothing is recorded globally yet; metrics come later.
//!
//! Rule timeouts bound the time until the upstream's response head arrives (the
//! shorter of `request` and `backendRequest`); body streaming is not timed yet, and
//! retries, mirrors and CORS are not applied yet.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use culvert_router::RequestView;
use culvert_router::outcome::{
    RedirectRequest, apply_header_modifier, redirect_location, rewrite_path,
};
use culvert_router::path::normalize_path;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri, Version};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::SnapshotCell;

/// Body of every answer: the upstream's, streamed, or a small local one.
pub(crate) type ProxyBody = Either<Incoming, Full<Bytes>>;

/// Idle connections kept per endpoint and worker.
const MAX_IDLE_PER_ENDPOINT: usize = 32;
/// Longest wait for a TCP connection to an endpoint when no rule timeout is shorter.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Headers that describe one hop, never forwarded in either direction.
const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// The state of one worker, shared by its tasks (never by other threads).
pub(crate) struct Worker {
    cell: Arc<SnapshotCell>,
    /// Idle upstream connections by endpoint. Single-threaded, so a `RefCell` is
    /// enough; a borrow is never held across an `.await`.
    pool: RefCell<HashMap<SocketAddr, Vec<SendRequest<Incoming>>>>,
    rng: Cell<u64>,
}

/// Why forwarding failed.
enum ForwardError {
    /// Connecting or talking to the endpoint failed: 502.
    Upstream,
}

impl Worker {
    pub(crate) fn new(index: usize, cell: Arc<SnapshotCell>) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos() as u64);
        Self {
            cell,
            pool: RefCell::new(HashMap::new()),
            rng: Cell::new(now ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        }
    }

    pub(crate) fn cell(&self) -> &SnapshotCell {
        &self.cell
    }

    /// The next number of a splitmix64 sequence: cheap, uniform, not cryptographic.
    pub(crate) fn next_random(&self) -> u64 {
        let state = self.rng.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.rng.set(state);
        splitmix64(state)
    }

    /// Answers one request.
    pub(crate) async fn handle(
        self: &Rc<Self>,
        request: Request<Incoming>,
        peer: SocketAddr,
        local: SocketAddr,
    ) -> Response<ProxyBody> {
        // One load per request; the `Arc` (not a guard) lives across the awaits below.
        let Some(snapshot) = self.cell.load_full() else {
            return local_answer(StatusCode::SERVICE_UNAVAILABLE);
        };
        let (parts, body) = request.into_parts();
        let Some(host) = request_host(&parts.headers, &parts.uri, parts.version) else {
            return local_answer(StatusCode::BAD_REQUEST);
        };
        let query = parts.uri.query();
        let Ok(path) = normalize_path(parts.uri.path()) else {
            return local_answer(StatusCode::BAD_REQUEST);
        };
        let target = match query {
            Some(query) => format!("{path}?{query}"),
            None => path.to_string(),
        };
        let local_ip = (!local.ip().is_unspecified()).then_some(local.ip());
        let view = RequestView {
            port: local.port(),
            local_ip,
            host: &host,
            path: &target,
            method: parts.method.as_str(),
            headers: &parts.headers,
        };
        let Ok(found) = snapshot.table.route(&view) else {
            return local_answer(StatusCode::NOT_FOUND);
        };
        let rule = found.rule;
        let filters = rule.filters();
        let prefix_len = found.matched_prefix_len.unwrap_or(0);
        if let Some(redirect) = &filters.redirect {
            let location = redirect_location(
                redirect,
                &RedirectRequest {
                    scheme: "http",
                    host: &host,
                    listener_port: local.port(),
                    path: &path,
                    query,
                    matched_prefix_len: prefix_len,
                },
            );
            let status = StatusCode::from_u16(redirect.status).unwrap_or(StatusCode::FOUND);
            let mut answer = local_answer(status);
            if let Ok(location) = HeaderValue::try_from(location) {
                answer.headers_mut().insert(header::LOCATION, location);
            }
            return answer;
        }
        let Some(backend) = rule.backends().pick(self.next_random()) else {
            return local_answer(StatusCode::INTERNAL_SERVER_ERROR);
        };
        if let Some(status) = backend.failure_status() {
            return local_answer(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            );
        }
        let count = backend.endpoints.len() as u64;
        let pick = if count == 0 {
            None
        } else {
            usize::try_from(self.next_random() % count)
                .ok()
                .and_then(|i| backend.endpoints.get(i))
        };
        let Some(&endpoint) = pick else {
            return local_answer(StatusCode::SERVICE_UNAVAILABLE);
        };

        let mut headers = parts.headers;
        strip_hop_by_hop(&mut headers);
        // The backend sees exactly the host the request was routed on (one value,
        // the absolute-form authority when there was one), before any filter edits.
        headers.remove(header::HOST);
        if !host.is_empty() {
            if let Ok(value) = HeaderValue::from_str(&host) {
                headers.insert(header::HOST, value);
            }
        }
        if let Some(modifier) = &filters.request_headers {
            apply_header_modifier(modifier, &mut headers);
        }
        if let Some(modifier) = &backend.request_headers {
            apply_header_modifier(modifier, &mut headers);
        }
        let mut upstream_target = target;
        if let Some(rewrite) = &filters.rewrite {
            if let Some(hostname) = &rewrite.hostname {
                if let Ok(value) = HeaderValue::from_str(hostname) {
                    headers.insert(header::HOST, value);
                }
            }
            if let Some(modifier) = &rewrite.path {
                let rewritten = rewrite_path(modifier, &path, prefix_len);
                upstream_target = match query {
                    Some(query) => format!("{rewritten}?{query}"),
                    None => rewritten,
                };
            }
        }
        add_forwarded_for(&mut headers, peer);
        headers.insert(
            HeaderName::from_static("x-forwarded-proto"),
            HeaderValue::from_static("http"),
        );
        let Ok(uri) = upstream_target.parse::<Uri>() else {
            return local_answer(StatusCode::INTERNAL_SERVER_ERROR);
        };
        let mut upstream = Request::new(body);
        *upstream.method_mut() = parts.method;
        *upstream.uri_mut() = uri;
        *upstream.version_mut() = Version::HTTP_11;
        *upstream.headers_mut() = headers;

        let timeouts = rule.timeouts();
        let limit = match (timeouts.request, timeouts.backend_request) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let forwarded = match limit {
            Some(limit) => {
                match tokio::time::timeout(limit, self.forward(endpoint, upstream)).await {
                    Ok(result) => result,
                    Err(_) => return local_answer(StatusCode::GATEWAY_TIMEOUT),
                }
            }
            None => self.forward(endpoint, upstream).await,
        };
        let response = match forwarded {
            Ok(response) => response,
            Err(ForwardError::Upstream) => return local_answer(StatusCode::BAD_GATEWAY),
        };
        let (mut parts, body) = response.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        if let Some(modifier) = &filters.response_headers {
            apply_header_modifier(modifier, &mut parts.headers);
        }
        if let Some(modifier) = &backend.response_headers {
            apply_header_modifier(modifier, &mut parts.headers);
        }
        Response::from_parts(parts, Either::Left(body))
    }

    /// Sends `request` to `endpoint` on an idle pooled connection, or a new one. A
    /// pooled connection that turns out closed before the request was written is
    /// replaced once; after that the request body is spent and the answer is 502.
    async fn forward(
        self: &Rc<Self>,
        endpoint: SocketAddr,
        mut request: Request<Incoming>,
    ) -> Result<Response<Incoming>, ForwardError> {
        if let Some(mut sender) = self.take_idle(endpoint) {
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.recycle(endpoint, sender);
                    return Ok(response);
                }
                Err(mut err) => match err.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(ForwardError::Upstream),
                },
            }
        }
        let mut sender = connect(endpoint).await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|_| ForwardError::Upstream)?;
        self.recycle(endpoint, sender);
        Ok(response)
    }

    fn take_idle(&self, endpoint: SocketAddr) -> Option<SendRequest<Incoming>> {
        let mut pool = self.pool.borrow_mut();
        let idle = pool.get_mut(&endpoint)?;
        while let Some(sender) = idle.pop() {
            if sender.is_ready() && !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    /// Returns `sender` to the pool once its response has been read to the end.
    fn recycle(self: &Rc<Self>, endpoint: SocketAddr, mut sender: SendRequest<Incoming>) {
        let worker = Rc::clone(self);
        tokio::task::spawn_local(async move {
            if sender.ready().await.is_ok() {
                let mut pool = worker.pool.borrow_mut();
                let idle = pool.entry(endpoint).or_default();
                if idle.len() < MAX_IDLE_PER_ENDPOINT {
                    idle.push(sender);
                }
            }
        });
    }
}

async fn connect(endpoint: SocketAddr) -> Result<SendRequest<Incoming>, ForwardError> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(endpoint))
        .await
        .map_err(|_| ForwardError::Upstream)?
        .map_err(|_| ForwardError::Upstream)?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) = http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|_| ForwardError::Upstream)?;
    tokio::task::spawn_local(async move {
        // Ends when the connection closes; errors surface on the request side.
        let _ = connection.await;
    });
    Ok(sender)
}

pub(crate) fn splitmix64(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The host to route on, or `None` for a request that must be refused (400): the
/// authority of an absolute-form target wins over `Host` (RFC 9112 §3.2.2); otherwise
/// exactly one `Host` of visible ASCII is required, except on HTTP/1.0, where it may
/// be absent (empty host).
pub(super) fn request_host(headers: &HeaderMap, uri: &Uri, version: Version) -> Option<String> {
    let mut values = headers.get_all(header::HOST).iter();
    let first = values.next();
    if values.next().is_some() {
        return None;
    }
    if let Some(authority) = uri.authority() {
        return Some(authority.as_str().to_owned());
    }
    match first {
        Some(value) => {
            let bytes = value.as_bytes();
            let visible = !bytes.is_empty() && bytes.iter().all(|b| b.is_ascii_graphic());
            visible.then(|| String::from_utf8_lossy(bytes).into_owned())
        }
        None if version == Version::HTTP_10 => Some(String::new()),
        None => None,
    }
}

/// Removes the hop-by-hop headers and every header the `Connection` header names.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
}

/// Appends the client IP to `X-Forwarded-For`, joining earlier values into one.
pub(crate) fn add_forwarded_for(headers: &mut HeaderMap, peer: SocketAddr) {
    let name = HeaderName::from_static("x-forwarded-for");
    let mut values: Vec<String> = headers
        .get_all(&name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .map(str::to_owned)
        .collect();
    values.push(peer.ip().to_string());
    if let Ok(value) = HeaderValue::from_str(&values.join(", ")) {
        headers.insert(name, value);
    }
}

fn local_answer(status: StatusCode) -> Response<ProxyBody> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::new())));
    *response.status_mut() = status;
    response
}
