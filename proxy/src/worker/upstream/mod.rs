//! Upstream connections of one worker: an HTTP/1.1 keep-alive pool per endpoint
//! (exchanges driven inline by the request's task, see [`http1`]), one multiplexed
//! h2c connection per endpoint (hyper), and fresh HTTP/1.1 connections for upgrades
//! (WebSocket, hyper), which are never pooled.
//!
//! Single-threaded: the pools sit in `RefCell`s and a borrow is never held across an
//! `.await`. Errors say whether the endpoint could not be reached (`Connect`) or
//! failed while talking (`Protocol`), so the caller can answer 502 and count why.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future;
use http::uri::PathAndQuery;
use http::{HeaderMap, Method, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1 as hyper_http1, http2};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

use crate::fast_map::FastMap;
use crate::worker::body::{CountedBody, body_enum};
use crate::worker::runtime::LocalExec;
use culvert_wire::{CarriesRawFields, FieldLines, FieldsAs};

mod http1;

use http1::{Connection, ExchangeError, Home};

body_enum! {
    /// A request body on its way to a backend.
    pub(crate) enum RequestBody {
        /// The client's, read as it is sent (one attempt only).
        Streamed(CountedBody),
        /// Held whole in memory, so it can be sent again (retries, mirrors).
        Buffered(Full<Bytes>),
    }
}

impl RequestBody {
    /// No body.
    pub(crate) fn empty() -> Self {
        Self::Buffered(Full::default())
    }
}

body_enum! {
    /// A response body from a backend.
    #[allow(
        clippy::large_enum_variant,
        reason = "HTTP/1.1 is the common case; boxing it would cost an allocation per response"
    )]
    pub(crate) enum UpstreamBody {
        /// Read inline off a pooled HTTP/1.1 connection, its fields possibly kept raw.
        Http1(http1::ResponseBody),
        /// hyper's (h2c, upgrades), its fields in the header map.
        Hyper(Incoming),
    }
}

impl CarriesRawFields for UpstreamBody {
    fn raw_fields(&self) -> Option<&culvert_wire::RawFields> {
        match self {
            Self::Http1(body) => body.raw_fields(),
            Self::Hyper(_) => None,
        }
    }

    fn take_raw_fields(&mut self) -> Option<culvert_wire::RawFields> {
        match self {
            Self::Http1(body) => body.take_raw_fields(),
            Self::Hyper(_) => None,
        }
    }
}

/// The interim `1xx` heads (`103 Early Hints`) an HTTP/1.1 backend sent before its
/// response, encoded, in the response's extensions. An HTTP/1.1 client gets them
/// ahead of the response head (written with it, not as each arrived); HTTP/1.0,
/// HTTP/2 and tunnel clients do not (hyper's server side has no way to send one).
#[derive(Debug, Clone)]
pub(crate) struct InterimHeads(pub(crate) Bytes);

/// A request head for an HTTP/1.1 backend, in the parts it is written from: no
/// `Uri` or `http::Request` is built for it.
pub(crate) struct Http1Head {
    pub(crate) method: Method,
    /// The origin-form target (see [`is_origin_form`]).
    pub(crate) target: PathAndQuery,
    pub(crate) headers: HeaderMap,
    /// Fields written after `headers`, in place of theirs of the same names.
    pub(crate) added: FieldLines,
}

/// One attempt's request, in the form its backend's protocol takes.
pub(crate) enum UpstreamRequest {
    /// To a pooled HTTP/1.1 connection.
    Http1(Http1Head, RequestBody),
    /// To an h2c connection (hyper), the target in absolute form.
    H2c(Request<RequestBody>),
}

/// Whether `target` can go on an HTTP/1.1 request line as an origin-form target:
/// whether it starts with `/`. The rest is the type's own guarantee: a
/// `PathAndQuery` holds no space, control character or fragment and is shorter than
/// 64 KiB, so its bytes are not scanned again here.
pub(crate) fn is_origin_form(target: &PathAndQuery) -> bool {
    target.as_str().starts_with('/')
}

/// Idle HTTP/1.1 connections kept per endpoint and worker.
const MAX_IDLE_PER_ENDPOINT: usize = 1024;
/// How long an idle HTTP/1.1 connection is kept (nginx's upstream `keepalive_timeout`
/// default).
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a worker drops idle connections that closed or timed out.
pub(crate) const IDLE_SWEEP: Duration = Duration::from_secs(5);
/// Longest wait for a TCP connection to an endpoint.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The wire protocol to an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1, pooled.
    Http1,
    /// HTTP/2 over clear text with prior knowledge, multiplexed.
    H2c,
}

/// Why an upstream exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpstreamError {
    /// The TCP connection or the protocol handshake failed.
    Connect,
    /// The connection failed after the request was handed to it.
    Protocol,
}

/// The upstream connections of one worker.
pub(crate) struct Upstreams {
    http1: RefCell<FastMap<SocketAddr, Vec<Connection>>>,
    h2c: RefCell<FastMap<SocketAddr, http2::SendRequest<RequestBody>>>,
    /// The pool's clock: read when the worker ticks, not per request (idle times
    /// are judged against [`IDLE_TIMEOUT`], a minute; a second either way is fine).
    now: Cell<Instant>,
}

impl Default for Upstreams {
    fn default() -> Self {
        Self {
            http1: RefCell::default(),
            h2c: RefCell::default(),
            now: Cell::new(Instant::now()),
        }
    }
}

impl Upstreams {
    /// Reads the clock the pool judges idle times by (the worker calls this every
    /// tick).
    pub(crate) fn tick(&self) {
        self.now.set(Instant::now());
    }

    /// Sends `request` to `endpoint` and returns the response head (the body
    /// streams on); `fields` says where an HTTP/1.1 response keeps its fields.
    ///
    /// Not an `async fn` (nor is what it calls on the HTTP/1.1 path): the request
    /// is then held once, where an `async fn` keeps each argument twice
    /// (rust-lang/rust#62958) and every level passes it on.
    pub(crate) fn send(
        self: &Rc<Self>,
        endpoint: SocketAddr,
        request: UpstreamRequest,
        fields: FieldsAs,
    ) -> impl Future<Output = Result<Response<UpstreamBody>, UpstreamError>> + '_ {
        match request {
            UpstreamRequest::Http1(head, body) => {
                future::Either::Left(self.send_http1(endpoint, head, body, fields))
            }
            // Boxed to keep the common HTTP/1.1 future small.
            UpstreamRequest::H2c(request) => future::Either::Right(Box::pin(async move {
                Ok(self
                    .send_h2c(endpoint, request)
                    .await?
                    .map(UpstreamBody::Hyper))
            })),
        }
    }

    /// Sends an upgrade request on a new HTTP/1.1 connection that allows upgrades;
    /// the connection is never pooled.
    pub(crate) async fn send_upgrade(
        endpoint: SocketAddr,
        request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let mut sender = connect_upgradable(endpoint).await?;
        sender
            .send_request(request)
            .await
            .map_err(|_| UpstreamError::Protocol)
    }

    /// A pooled connection found closed before the backend could act on the request
    /// is given up for a new one; after that the request is spent.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would keep `head` and `body` twice"
    )]
    fn send_http1(
        self: &Rc<Self>,
        endpoint: SocketAddr,
        head: Http1Head,
        mut body: RequestBody,
        fields: FieldsAs,
    ) -> impl Future<Output = Result<Response<UpstreamBody>, UpstreamError>> + '_ {
        async move {
            if let Some(conn) = self.take_idle(endpoint) {
                let home = self.home(endpoint);
                match http1::exchange(conn, &head, body, home, true, fields).await {
                    Ok(response) => return Ok(response.map(UpstreamBody::Http1)),
                    Err(ExchangeError::Stale(unsent)) => body = unsent,
                    Err(ExchangeError::Failed(error)) => return Err(error),
                }
            }
            let conn = Connection::new(connect_tcp(endpoint).await?);
            match http1::exchange(conn, &head, body, self.home(endpoint), false, fields).await {
                Ok(response) => Ok(response.map(UpstreamBody::Http1)),
                Err(ExchangeError::Stale(_)) => Err(UpstreamError::Protocol),
                Err(ExchangeError::Failed(error)) => Err(error),
            }
        }
    }

    fn home(self: &Rc<Self>, endpoint: SocketAddr) -> Home {
        Home {
            upstreams: Rc::clone(self),
            endpoint,
        }
    }

    async fn send_h2c(
        self: &Rc<Self>,
        endpoint: SocketAddr,
        request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let cached = self.h2c.borrow().get(&endpoint).cloned();
        let mut sender = match cached {
            Some(sender) if !sender.is_closed() => sender,
            _ => {
                let stream = connect_tcp(endpoint).await?;
                let (sender, connection) = http2::Builder::new(LocalExec)
                    .timer(TokioTimer::new())
                    .handshake(TokioIo::new(stream))
                    .await
                    .map_err(|_| UpstreamError::Connect)?;
                tokio::task::spawn_local(async move {
                    let _ = connection.await;
                });
                self.h2c.borrow_mut().insert(endpoint, sender.clone());
                sender
            }
        };
        sender.ready().await.map_err(|_| UpstreamError::Connect)?;
        sender
            .send_request(request)
            .await
            .map_err(|_| UpstreamError::Protocol)
    }

    fn take_idle(&self, endpoint: SocketAddr) -> Option<Connection> {
        let mut pool = self.http1.borrow_mut();
        let idle = pool.get_mut(&endpoint)?;
        let now = self.now.get();
        while let Some(conn) = idle.pop() {
            if conn.idle_for(now) < IDLE_TIMEOUT && conn.still_open() {
                return Some(conn);
            }
        }
        None
    }

    /// Takes back a connection whose exchange ended cleanly.
    fn give_back(&self, endpoint: SocketAddr, mut conn: Connection) {
        conn.idle(self.now.get());
        let mut pool = self.http1.borrow_mut();
        let idle = pool.entry(endpoint).or_default();
        if idle.len() < MAX_IDLE_PER_ENDPOINT {
            idle.push(conn);
        }
    }

    /// Drops idle connections the backend closed (they would sit in CLOSE_WAIT) or
    /// that waited longer than [`IDLE_TIMEOUT`], and the pools left empty (endpoints
    /// gone from the config).
    pub(crate) fn sweep_idle(&self) {
        let now = self.now.get();
        self.http1.borrow_mut().retain(|_, idle| {
            idle.retain(|conn| conn.idle_for(now) < IDLE_TIMEOUT && conn.still_open());
            !idle.is_empty()
        });
    }

    /// Drops every idle connection (on drain).
    pub(crate) fn close_idle(&self) {
        self.http1.borrow_mut().clear();
        self.h2c.borrow_mut().clear();
    }
}

/// A new HTTP/1.1 connection to `endpoint` that allows an upgrade, driven by its
/// own task (which ends when the connection closes; errors surface on the request
/// side).
async fn connect_upgradable(
    endpoint: SocketAddr,
) -> Result<hyper_http1::SendRequest<RequestBody>, UpstreamError> {
    let stream = connect_tcp(endpoint).await?;
    let (sender, connection) = hyper_http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|_| UpstreamError::Connect)?;
    tokio::task::spawn_local(async move {
        let _ = connection.with_upgrades().await;
    });
    Ok(sender)
}

/// A TCP connection to `endpoint` (within the connect timeout), `TCP_NODELAY` set.
pub(crate) async fn connect_tcp(endpoint: SocketAddr) -> Result<TcpStream, UpstreamError> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(endpoint))
        .await
        .map_err(|_| UpstreamError::Connect)?
        .map_err(|_| UpstreamError::Connect)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

#[cfg(test)]
mod tests;
