//! A fake backend that answers every request with a JSON echo of what it received.
//!
//! Owns the listening socket, one task per connection and the in-memory request log.
//! It mirrors upstream Gateway API `echo-basic` (see the "Echo backend contract" in
//! `bench/conformance/vectors/README.md`) so conformance vectors can be checked
//! against it, and it records every request so a test can also look directly.
//!
//! Start at [`EchoBackend::start`]; request behaviour lives in `handler`, gRPC calls
//! in `grpc`, WebSocket framing in `ws`, HTTP/2 prior-knowledge detection in `rewind`.
//!
//! It must never panic on peer input: malformed requests get a 4xx or a closed
//! connection. Everything a peer can make it hold is bounded (body size, header count
//! via hyper's defaults, header read time, log length, retry table size).

mod duration;
mod grpc;
mod handler;
mod reply;
mod rewind;
mod ws;

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Version};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::Error;
use rewind::Rewind;

/// How long a client may take to send a request head (or, for
/// [`EchoProtocol::Auto`], its first bytes) before the connection is closed.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Which HTTP versions a backend accepts on its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EchoProtocol {
    /// HTTP/1.1 (and 1.0) only, with WebSocket upgrades; like upstream's port 8080.
    Http1,
    /// HTTP/2 over cleartext with prior knowledge only; like upstream's h2c port.
    H2c,
    /// Either: a connection that opens with the HTTP/2 preface is served as h2c, any
    /// other as HTTP/1.
    #[default]
    Auto,
}

/// How to start an [`EchoBackend`].
///
/// Build it with [`EchoConfig::new`] or a struct literal ending in
/// `..EchoConfig::default()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoConfig {
    /// Reported as `service` in every echo, and as `pod` unless the `pod` field is set.
    pub name: String,
    /// Reported as `pod` in every echo when set: the pod a harness says this
    /// backend stands for, when it is not named after the Service.
    pub pod: Option<String>,
    /// Reported as `namespace` in every echo (empty by default, as upstream does when
    /// unset).
    pub namespace: String,
    /// Which HTTP versions to accept.
    pub protocol: EchoProtocol,
    /// Where to listen; `127.0.0.1:0` (any free loopback port) by default.
    pub bind: SocketAddr,
    /// How many requests [`EchoBackend::requests`] keeps; older ones are dropped so a
    /// long load run stays bounded. [`EchoBackend::count`] still counts every request.
    pub log_capacity: usize,
    /// Terminate TLS on every connection (ALPN `h2` or `http/1.1` picks the
    /// protocol); clear text when `None`.
    pub tls: Option<EchoTls>,
}

/// The TLS an [`EchoBackend`] terminates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EchoTls {
    /// PEM certificate chain, leaf first.
    pub certificate_pem: String,
    /// PEM private key.
    pub private_key_pem: String,
    /// PEM CA certificates that sign the client certificates it takes: a client
    /// may show none, but one it shows must chain to these. No client certificate
    /// is asked for when `None`.
    pub client_ca_pem: Option<String>,
}

/// What the TLS handshake of a request's connection showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSeen {
    /// The SNI the client sent.
    pub server_name: Option<String>,
    /// The client's certificate (DER), when it showed one.
    pub client_certificate: Option<Vec<u8>>,
}

impl EchoConfig {
    /// The name reported as `pod`.
    pub(crate) fn pod(&self) -> &str {
        self.pod.as_deref().unwrap_or(&self.name)
    }

    /// A config with the given name and every other field at its default.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets [`EchoConfig::protocol`].
    #[must_use]
    pub fn with_protocol(mut self, protocol: EchoProtocol) -> Self {
        self.protocol = protocol;
        self
    }
}

impl Default for EchoConfig {
    fn default() -> Self {
        Self {
            name: "echo".to_owned(),
            pod: None,
            namespace: String::new(),
            protocol: EchoProtocol::default(),
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            log_capacity: 10_000,
            tls: None,
        }
    }
}

/// One request as the backend saw it, recorded when its head (and body) arrived,
/// before any delay or retry failure.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SeenRequest {
    /// Which connection carried it; numbered from 0 per backend, so a test can tell
    /// reused connections from new ones.
    pub connection: u64,
    /// The request method.
    pub method: Method,
    /// Path and query exactly as received (the whole target for absolute-form
    /// HTTP/1.1 requests), like Go's `RequestURI`.
    pub path: String,
    /// The `:authority` or `Host` the request named, empty if neither.
    pub host: String,
    /// Every header as `(lowercase name, value)`, `Host` included. Values of one name
    /// keep their arrival order and names appear in order of first arrival; hyper
    /// does not expose how different names were interleaved. Non-UTF-8 bytes are
    /// replaced with U+FFFD.
    pub headers: Vec<(String, String)>,
    /// The HTTP version.
    pub proto: Version,
    /// The request body (empty for WebSocket upgrades).
    pub body: Bytes,
    /// When the request was recorded.
    pub received_at: Instant,
    /// The TLS handshake of its connection; `None` in clear text.
    pub tls: Option<TlsSeen>,
}

impl SeenRequest {
    /// The values of header `name` (matched case-insensitively), in arrival order.
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// A running echo backend; it stops when dropped or on [`EchoBackend::shutdown`].
#[derive(Debug)]
pub struct EchoBackend {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Dropping the sender tells the accept loop and every connection to stop.
    stop: Option<watch::Sender<()>>,
    accept: Option<JoinHandle<()>>,
}

impl EchoBackend {
    /// Binds `config.bind` and starts serving on the current tokio runtime.
    pub async fn start(config: EchoConfig) -> Result<Self, Error> {
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| Error::Bind {
                addr: config.bind,
                source,
            })?;
        let addr = listener.local_addr().map_err(Error::LocalAddr)?;
        let tls = match &config.tls {
            Some(tls) => Some(crate::tls::echo_server_config(tls)?),
            None => None,
        };
        let shared = Arc::new(Shared::new(config, tls));
        let (stop, stopped) = watch::channel(());
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stopped));
        Ok(Self {
            addr,
            shared,
            stop: Some(stop),
            accept: Some(accept),
        })
    }

    /// The address the backend listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The name reported as `service`.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// The recorded requests, oldest first (at most `log_capacity` of them).
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.shared.log().iter().cloned().collect()
    }

    /// The newest `recent` recorded requests, oldest first (fewer if the log holds
    /// fewer): cheap when a harness knows how many arrived since it last looked.
    pub fn recent_requests(&self, recent: usize) -> Vec<SeenRequest> {
        let log = self.shared.log();
        let skip = log.len().saturating_sub(recent);
        log.iter().skip(skip).cloned().collect()
    }

    /// How many requests arrived in total, including any dropped from the log.
    pub fn count(&self) -> u64 {
        self.shared.count.load(Ordering::Relaxed)
    }

    /// Stops accepting and closes every connection; returns once the listening socket
    /// is closed.
    pub async fn shutdown(mut self) {
        self.stop.take();
        if let Some(accept) = self.accept.take() {
            // The loop only ends by seeing the stop signal; a join error would mean it
            // panicked or the runtime is going away, and either way it is no longer
            // accepting.
            let _ = accept.await;
        }
    }
}

impl Drop for EchoBackend {
    fn drop(&mut self) {
        // Dropping `stop` wakes the accept loop and every connection task.
        self.stop.take();
    }
}

/// State shared by the accept loop, every connection and the handle.
#[derive(Debug)]
struct Shared {
    config: EchoConfig,
    /// The TLS terminated on every connection, when the config asks for it.
    tls: Option<Arc<rustls::ServerConfig>>,
    count: AtomicU64,
    next_connection: AtomicU64,
    log: Mutex<VecDeque<SeenRequest>>,
    /// Attempts seen per `/retry/` uuid.
    retries: Mutex<HashMap<String, u64>>,
}

impl Shared {
    fn new(config: EchoConfig, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        Self {
            config,
            tls,
            count: AtomicU64::new(0),
            next_connection: AtomicU64::new(0),
            log: Mutex::new(VecDeque::new()),
            retries: Mutex::new(HashMap::new()),
        }
    }

    /// The log; a panic elsewhere while holding it cannot leave it inconsistent (every
    /// update is a single push or pop), so a poisoned lock is still usable.
    fn log(&self) -> std::sync::MutexGuard<'_, VecDeque<SeenRequest>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, seen: SeenRequest) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let capacity = self.config.log_capacity;
        if capacity == 0 {
            return;
        }
        let mut log = self.log();
        while log.len() >= capacity {
            log.pop_front();
        }
        log.push_back(seen);
    }
}

/// What one connection's handler needs to know about it.
#[derive(Debug)]
struct Connection {
    id: u64,
    /// A second handle on the socket, so a `/retry/` failure can set `SO_LINGER` to 0
    /// and make the close an RST rather than a FIN. `None` if duplicating failed.
    socket: Option<socket2::Socket>,
    /// Closes WebSocket tasks, which outlive the HTTP connection, on shutdown.
    stopped: watch::Receiver<()>,
    /// What its TLS handshake showed; `None` in clear text.
    tls: Option<TlsSeen>,
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stopped: watch::Receiver<()>) {
    loop {
        tokio::select! {
            // Only a dropped sender ends this; nothing is ever sent.
            _ = stopped.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
                    let conn = Connection {
                        id,
                        socket: socket2::SockRef::from(&stream).try_clone().ok(),
                        stopped: stopped.clone(),
                        tls: None,
                    };
                    tokio::spawn(serve_connection(stream, Arc::clone(&shared), conn));
                }
                // Per-connection failures (e.g. the peer reset before accept, or the
                // fd limit) must not stop the backend; back off briefly so a
                // persistent error does not spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
}

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>, mut conn: Connection) {
    // Best effort: latency matters for load runs, correctness does not depend on it.
    let _ = stream.set_nodelay(true);
    let mut stopped = conn.stopped.clone();
    if let Some(tls) = &shared.tls {
        let acceptor = TlsAcceptor::from(Arc::clone(tls));
        let handshake = tokio::time::timeout(HEADER_READ_TIMEOUT, acceptor.accept(stream));
        let tls = tokio::select! {
            _ = stopped.changed() => return,
            accepted = handshake => match accepted {
                Ok(Ok(tls)) => tls,
                // A failed or silent handshake holds nothing once dropped.
                Ok(Err(_)) | Err(_) => return,
            },
        };
        let session = tls.get_ref().1;
        let h2 = session.alpn_protocol() == Some(b"h2");
        conn.tls = Some(TlsSeen {
            server_name: session.server_name().map(str::to_owned),
            client_certificate: session
                .peer_certificates()
                .and_then(|chain| chain.first())
                .map(|leaf| leaf.to_vec()),
        });
        let conn = Arc::new(conn);
        tokio::select! {
            _ = stopped.changed() => {}
            () = serve_http(tls, h2, &shared, &conn) => {}
        }
        return;
    }
    let protocol = shared.config.protocol;
    let conn = Arc::new(conn);
    let serve = async {
        let (io, h2) = match protocol {
            EchoProtocol::Http1 => (Rewind::new(stream, Bytes::new()), false),
            EchoProtocol::H2c => (Rewind::new(stream, Bytes::new()), true),
            EchoProtocol::Auto => {
                let detect = rewind::detect_h2_preface(&mut stream);
                match tokio::time::timeout(HEADER_READ_TIMEOUT, detect).await {
                    Ok(Ok((prefix, h2))) => (Rewind::new(stream, prefix), h2),
                    // A silent or failed peer holds nothing once it is dropped.
                    Ok(Err(_)) | Err(_) => return,
                }
            }
        };
        serve_http(io, h2, &shared, &conn).await;
    };
    tokio::select! {
        _ = stopped.changed() => {}
        () = serve => {}
    }
}

/// Serves HTTP/2 (`h2`) or HTTP/1.1 on `io` until the connection ends.
async fn serve_http<T>(io: T, h2: bool, shared: &Arc<Shared>, conn: &Arc<Connection>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = {
        let shared = Arc::clone(shared);
        let conn = Arc::clone(conn);
        service_fn(move |req| handler::handle(req, Arc::clone(&shared), Arc::clone(&conn)))
    };
    let io = TokioIo::new(io);
    // Connection errors (resets, parse errors already answered with 400, our own
    // `/retry/` resets) end only this connection.
    if h2 {
        let _ = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .serve_connection(io, svc)
            .await;
    } else {
        let _ = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(io, svc)
            .with_upgrades()
            .await;
    }
}

#[cfg(test)]
mod tests;
