//! Upstream connections of one worker: an HTTP/1.1 keep-alive pool per endpoint
//! (exchanges driven inline by the request's task, see [`http1`]), one multiplexed
//! HTTP/2 connection per endpoint (hyper), and fresh HTTP/1.1 connections for
//! upgrades (WebSocket, hyper), which are never pooled. A backend with TLS settings
//! (BackendTLSPolicy) gets the same over TLS (`stream`), ALPN `http/1.1` or `h2`,
//! its connections pooled apart from clear-text ones to the same endpoint.
//!
//! Single-threaded: the pools sit in `RefCell`s and a borrow is never held across an
//! `.await`. Errors say whether the endpoint could not be reached (`Connect`) or
//! failed while talking (`Protocol`), so the caller can answer 502 and count why.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use culvert_router::config::BackendTlsConfig;
use futures_util::future;
use http::uri::PathAndQuery;
use http::{HeaderMap, Method, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1 as hyper_http1, http2};
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::fast_map::FastMap;
use crate::worker::body::{CountedBody, body_enum};
use crate::worker::runtime::LocalExec;
use culvert_wire::{CarriesRawFields, FieldLines, FieldsAs};

mod http1;
mod stream;

use http1::{Connection, ExchangeError, Home};
pub(crate) use stream::UpstreamStream;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Protocol {
    /// HTTP/1.1, pooled.
    Http1,
    /// HTTP/2 (with prior knowledge in clear text, by ALPN over TLS), multiplexed.
    H2c,
}

impl Protocol {
    /// What it is called in ALPN, over TLS.
    fn alpn(self) -> &'static [u8] {
        match self {
            Self::Http1 => b"http/1.1",
            Self::H2c => b"h2",
        }
    }
}

/// Where an attempt goes: an endpoint, and the TLS its backend speaks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dial<'a> {
    pub(crate) endpoint: SocketAddr,
    /// The backend's TLS settings (shared by the snapshot); clear text when `None`.
    pub(crate) tls: Option<&'a Arc<BackendTlsConfig>>,
}

impl Dial<'_> {
    /// The pool its connections share: the endpoint, and which TLS settings (by
    /// identity: a config swap that changes them starts new connections).
    fn key(&self) -> PoolKey {
        (
            self.endpoint,
            self.tls.map_or(0, |tls| Arc::as_ptr(tls) as usize),
        )
    }
}

/// An endpoint and the address of its backend's TLS settings (0: clear text).
pub(crate) type PoolKey = (SocketAddr, usize);

/// A built TLS client config, with the settings it was built from (held, so their
/// address is not reused while the entry lives).
type TlsClient = (Arc<BackendTlsConfig>, Arc<rustls::ClientConfig>);

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
    http1: RefCell<FastMap<PoolKey, Vec<Connection>>>,
    h2c: RefCell<FastMap<PoolKey, http2::SendRequest<RequestBody>>>,
    /// TLS client configs by settings address and protocol, built on first use.
    tls: RefCell<FastMap<(usize, Protocol), TlsClient>>,
    /// The pool's clock: read when the worker ticks, not per request (idle times
    /// are judged against [`IDLE_TIMEOUT`], a minute; a second either way is fine).
    now: Cell<Instant>,
}

impl Default for Upstreams {
    #[allow(
        clippy::disallowed_methods,
        reason = "the worker is the IO layer and owns the clock"
    )]
    fn default() -> Self {
        Self {
            http1: RefCell::default(),
            h2c: RefCell::default(),
            tls: RefCell::default(),
            now: Cell::new(Instant::now()),
        }
    }
}

impl Upstreams {
    /// Reads the clock the pool judges idle times by (the worker calls this every
    /// tick).
    #[allow(
        clippy::disallowed_methods,
        reason = "the worker is the IO layer and owns the clock"
    )]
    pub(crate) fn tick(&self) {
        self.now.set(Instant::now());
    }

    /// Sends `request` to `endpoint` and returns the response head (the body
    /// streams on); `fields` says where an HTTP/1.1 response keeps its fields.
    ///
    /// Not an `async fn` (nor is what it calls on the HTTP/1.1 path): the request
    /// is then held once, where an `async fn` keeps each argument twice
    /// (rust-lang/rust#62958) and every level passes it on.
    pub(crate) fn send<'a>(
        self: &'a Rc<Self>,
        dial: Dial<'a>,
        request: UpstreamRequest,
        fields: FieldsAs,
    ) -> impl Future<Output = Result<Response<UpstreamBody>, UpstreamError>> + 'a {
        match request {
            UpstreamRequest::Http1(head, body) => {
                future::Either::Left(self.send_http1(dial, head, body, fields))
            }
            // Boxed to keep the common HTTP/1.1 future small.
            UpstreamRequest::H2c(request) => future::Either::Right(Box::pin(async move {
                Ok(self.send_h2(dial, request).await?.map(UpstreamBody::Hyper))
            })),
        }
    }

    /// Sends an upgrade request on a new HTTP/1.1 connection that allows upgrades;
    /// the connection is never pooled.
    pub(crate) async fn send_upgrade(
        &self,
        dial: Dial<'_>,
        request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let stream = self.open(dial, Protocol::Http1).await?;
        let (mut sender, connection) = hyper_http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|_| UpstreamError::Connect)?;
        tokio::task::spawn_local(async move {
            let _ = connection.with_upgrades().await;
        });
        sender
            .send_request(request)
            .await
            .map_err(|_| UpstreamError::Protocol)
    }

    /// A new connection for `dial`: TCP, then TLS (ALPN `protocol`) when the
    /// backend speaks it, each within the connect timeout.
    async fn open(
        &self,
        dial: Dial<'_>,
        protocol: Protocol,
    ) -> Result<UpstreamStream, UpstreamError> {
        let tcp = connect_tcp(dial.endpoint).await?;
        match dial.tls {
            None => Ok(UpstreamStream::Tcp(tcp)),
            // Boxed: a TLS handshake's state is kilobytes, and it would otherwise
            // sit in every request's future.
            Some(tls) => Box::pin(self.handshake(tcp, tls, protocol)).await,
        }
    }

    /// TLS on `tcp` as `tls` says, offering `protocol`, within the connect timeout.
    async fn handshake(
        &self,
        tcp: TcpStream,
        tls: &Arc<BackendTlsConfig>,
        protocol: Protocol,
    ) -> Result<UpstreamStream, UpstreamError> {
        let client = self.tls_client(tls, protocol)?;
        let name =
            ServerName::try_from(tls.hostname.clone()).map_err(|_| UpstreamError::Connect)?;
        let handshake = TlsConnector::from(client).connect(name, tcp);
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
            .await
            .map_err(|_| UpstreamError::Connect)?
            .map_err(|_| UpstreamError::Connect)?;
        Ok(UpstreamStream::Tls(Box::new(stream)))
    }

    /// The client config of `tls` for `protocol`, built once per worker and config.
    /// Settings the snapshot accepted always build (it checked them); `Connect` if
    /// they do not.
    fn tls_client(
        &self,
        tls: &Arc<BackendTlsConfig>,
        protocol: Protocol,
    ) -> Result<Arc<rustls::ClientConfig>, UpstreamError> {
        let key = (Arc::as_ptr(tls) as usize, protocol);
        if let Some((_, client)) = self.tls.borrow().get(&key) {
            return Ok(Arc::clone(client));
        }
        let client = crate::tls::upstream::client_config(tls, &[protocol.alpn()])
            .map_err(|_| UpstreamError::Connect)?;
        self.tls
            .borrow_mut()
            .insert(key, (Arc::clone(tls), Arc::clone(&client)));
        Ok(client)
    }

    /// A pooled connection found closed before the backend could act on the request
    /// is given up for a new one; after that the request is spent.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would keep `head` and `body` twice"
    )]
    fn send_http1<'a>(
        self: &'a Rc<Self>,
        dial: Dial<'a>,
        head: Http1Head,
        mut body: RequestBody,
        fields: FieldsAs,
    ) -> impl Future<Output = Result<Response<UpstreamBody>, UpstreamError>> + 'a {
        async move {
            let key = dial.key();
            if let Some(conn) = self.take_idle(key) {
                let home = self.home(key);
                match http1::exchange(conn, &head, body, home, true, fields).await {
                    Ok(response) => return Ok(response.map(UpstreamBody::Http1)),
                    Err(ExchangeError::Stale(unsent)) => body = unsent,
                    Err(ExchangeError::Failed(error)) => return Err(error),
                }
            }
            let conn = Connection::new(self.open(dial, Protocol::Http1).await?);
            match http1::exchange(conn, &head, body, self.home(key), false, fields).await {
                Ok(response) => Ok(response.map(UpstreamBody::Http1)),
                Err(ExchangeError::Stale(_)) => Err(UpstreamError::Protocol),
                Err(ExchangeError::Failed(error)) => Err(error),
            }
        }
    }

    fn home(self: &Rc<Self>, key: PoolKey) -> Home {
        Home {
            upstreams: Rc::clone(self),
            key,
        }
    }

    async fn send_h2(
        self: &Rc<Self>,
        dial: Dial<'_>,
        request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let key = dial.key();
        let cached = self.h2c.borrow().get(&key).cloned();
        let mut sender = match cached {
            Some(sender) if !sender.is_closed() => sender,
            _ => {
                let stream = self.open(dial, Protocol::H2c).await?;
                let (sender, connection) = http2::Builder::new(LocalExec)
                    .timer(TokioTimer::new())
                    .handshake(TokioIo::new(stream))
                    .await
                    .map_err(|_| UpstreamError::Connect)?;
                tokio::task::spawn_local(async move {
                    let _ = connection.await;
                });
                self.h2c.borrow_mut().insert(key, sender.clone());
                sender
            }
        };
        sender.ready().await.map_err(|_| UpstreamError::Connect)?;
        sender
            .send_request(request)
            .await
            .map_err(|_| UpstreamError::Protocol)
    }

    fn take_idle(&self, key: PoolKey) -> Option<Connection> {
        let mut pool = self.http1.borrow_mut();
        let idle = pool.get_mut(&key)?;
        let now = self.now.get();
        while let Some(conn) = idle.pop() {
            if conn.idle_for(now) < IDLE_TIMEOUT && conn.still_open() {
                return Some(conn);
            }
        }
        None
    }

    /// Takes back a connection whose exchange ended cleanly.
    fn give_back(&self, key: PoolKey, mut conn: Connection) {
        conn.idle(self.now.get());
        let mut pool = self.http1.borrow_mut();
        let idle = pool.entry(key).or_default();
        if idle.len() < MAX_IDLE_PER_ENDPOINT {
            idle.push(conn);
        }
    }

    /// Drops idle connections the backend closed (they would sit in CLOSE_WAIT) or
    /// that waited longer than [`IDLE_TIMEOUT`], the pools left empty (endpoints
    /// gone from the config), and the TLS client configs of settings no snapshot
    /// holds any more.
    pub(crate) fn sweep_idle(&self) {
        let now = self.now.get();
        self.http1.borrow_mut().retain(|_, idle| {
            idle.retain(|conn| conn.idle_for(now) < IDLE_TIMEOUT && conn.still_open());
            !idle.is_empty()
        });
        self.tls
            .borrow_mut()
            .retain(|_, (settings, _)| Arc::strong_count(settings) > 1);
    }

    /// Drops every idle connection (on drain).
    pub(crate) fn close_idle(&self) {
        self.http1.borrow_mut().clear();
        self.h2c.borrow_mut().clear();
    }
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
