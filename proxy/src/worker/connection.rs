//! One accepted connection: a TLS handshake when its address terminates TLS (the
//! certificate chosen by SNI, ALPN `h2` or `http/1.1`), then HTTP/1.1 or HTTP/2
//! (by ALPN or the HTTP/2 preface, so h2c with prior knowledge works on clear-text
//! listeners), with upgrades, served until the client closes or the worker drains.
//!
//! h2c by `Upgrade: h2c` is not offered: RFC 9113 deprecates it, and RFC 9110 lets a
//! server ignore an `Upgrade` it does not take, so such a request is answered over
//! HTTP/1.1. On drain, each connection is shut down gracefully: HTTP/1.1 closes after
//! the response in flight, HTTP/2 sends GOAWAY and finishes its open streams.

use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::Worker;
use crate::metrics::OpenConnection;

/// How long a client may take to send a request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent streams one HTTP/2 client may open.
const MAX_CONCURRENT_STREAMS: u32 = 256;

/// Runs a `!Send` future on the worker's own thread: hyper's HTTP/2 side spawns
/// per-stream tasks through this, so they never leave the core.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: Future + 'static,
{
    fn execute(&self, future: F) {
        tokio::task::spawn_local(future);
    }
}

/// What a request handler knows about its connection.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionInfo {
    /// The client (or the proxy in front of us).
    pub(crate) peer: SocketAddr,
    /// The local address the connection arrived on.
    pub(crate) local: SocketAddr,
    /// The address the listening socket is bound to (may be unspecified).
    pub(crate) bound: SocketAddr,
    /// `Some` when TLS was terminated: the SNI name the client sent, if any.
    pub(crate) tls: Option<Option<Arc<str>>>,
    /// The request came over a tunnel stream (the edge terminated the client's TLS).
    pub(crate) tunnel: bool,
}

impl ConnectionInfo {
    /// `https` when TLS was terminated (here or at the tunnel edge), else `http`.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.tls.is_some() || self.tunnel {
            "https"
        } else {
            "http"
        }
    }
}

/// Serves one accepted connection to the end; `open` counts it in the listener's
/// metrics until it closes.
pub(super) async fn serve(
    worker: Rc<Worker>,
    stream: TcpStream,
    peer: SocketAddr,
    bound: SocketAddr,
    open: OpenConnection,
) {
    let _open = (worker.open_connection(), open);
    let Ok(local) = stream.local_addr() else {
        return;
    };
    let _ = stream.set_nodelay(true);
    let server_config = worker
        .cell()
        .load()
        .as_ref()
        .and_then(|snapshot| snapshot.tls.server_config(bound).cloned());
    let info = ConnectionInfo {
        peer,
        local,
        bound,
        tls: None,
        tunnel: false,
    };
    match server_config {
        None => serve_http(worker, stream, info).await,
        // Boxed: a TLS session is several kilobytes, and keeping it out of line keeps
        // every clear-text connection's task small.
        Some(config) => Box::pin(serve_tls(worker, stream, info, config)).await,
    }
}

async fn serve_tls(
    worker: Rc<Worker>,
    stream: TcpStream,
    mut info: ConnectionInfo,
    config: Arc<rustls::ServerConfig>,
) {
    let accept = TlsAcceptor::from(config).accept(stream);
    let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await else {
        return;
    };
    info.tls = Some(stream.get_ref().1.server_name().map(Arc::from));
    serve_http(worker, stream, info).await;
}

async fn serve_http<I>(worker: Rc<Worker>, io: I, info: ConnectionInfo)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut draining = worker.draining();
    if *draining.borrow_and_update() {
        return;
    }
    let info = Rc::new(info);
    // The request future is boxed: hyper moves it (into its HTTP/1 dispatcher, into
    // a task per HTTP/2 stream), and moving a pointer is cheaper than moving the
    // whole future.
    let service = service_fn(move |request| {
        let worker = Rc::clone(&worker);
        let info = Rc::clone(&info);
        Box::pin(
            async move { Ok::<_, std::convert::Infallible>(worker.handle(request, &info).await) },
        )
    });
    let mut builder = auto::Builder::new(LocalExec);
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS);
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = draining.wait_for(|draining| *draining) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}
