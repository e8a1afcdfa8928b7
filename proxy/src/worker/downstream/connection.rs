//! One accepted connection: a TLS handshake when its address terminates TLS (the
//! certificate chosen by SNI, ALPN `h2` or `http/1.1`), then HTTP/1.1 or HTTP/2
//! (by ALPN, else by the HTTP/2 preface, see [`super::sniff`], so h2c with prior
//! knowledge works on clear-text listeners), with upgrades, served until the client
//! closes or the worker drains.
//!
//! On an address with TLS passthrough listeners the ClientHello is read first
//! ([`super::client_hello`]) and the name in it decides (`pipeline::plan_tls`):
//! terminated here as above, spliced to a TLSRoute's backend, or reset.
//!
//! A clear-text HTTP/1.1 request may also switch the connection to h2c by
//! `Upgrade: h2c` (see [`super::h2c`]). On drain, each connection is shut down
//! gracefully: HTTP/1.1 closes after the response in flight, HTTP/2 sends GOAWAY and
//! finishes its open streams.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use std::pin::{Pin, pin};

use bytes::BytesMut;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tracing::{Instrument as _, Span};

use super::client_hello::{NoHello, read_client_hello};
use super::h2c;
use super::http1;
use super::idle::StreamActivity;
use super::sniff::{self, HttpVersion};
use crate::metrics::{OpenConnection, Refusal};
use crate::pipeline::{ClientCertificate, ConnectionInfo, TlsPlan, Transport, plan_tls};
use crate::snapshot::Accept;
use crate::tls::Termination;
use crate::worker::exchange::{RouteStream, Worker};
use crate::worker::io::{Io, OverTcp, Prefixed};
use crate::worker::runtime::LocalExec;
use crate::worker::runtime::drain::DrainWatch;
use crate::worker::trace;

/// How long a client may take to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent streams one HTTP/2 client may open.
const MAX_CONCURRENT_STREAMS: u32 = 256;

/// Starts serving one accepted connection on this worker's thread, in its `conn`
/// span (see [`trace::connection`]); `open` counts it in the listener's metrics
/// until it closes. What the connection's task keeps for its whole life is worked
/// out here, so the task (what an idle client costs) holds only handles to it.
pub(crate) fn spawn(
    worker: Rc<Worker>,
    stream: TcpStream,
    peer: SocketAddr,
    bound: SocketAddr,
    open: OpenConnection,
) {
    // A socket bound to one address and port was accepted on exactly that: no need
    // to ask the kernel (a syscall per connection).
    let local = if bound.ip().is_unspecified() || bound.port() == 0 {
        match stream.local_addr() {
            Ok(local) => local,
            Err(_) => return,
        }
    } else {
        bound
    };
    // TCP_NODELAY comes from the listening socket (see `listen::bind`).
    let accept = match worker.cell().load().as_ref() {
        Some(snapshot) => snapshot.accept(bound),
        None => Accept::Http,
    };
    let info = Rc::new(ConnectionInfo::new(peer, local, bound));
    let span = trace::connection(worker.index(), peer, local);
    let serving = serve(worker, stream, info, accept, open, span.clone());
    tokio::task::spawn_local(serving.instrument(span));
}

/// Serves one connection to the end; `span` is the one it runs in, for the facts
/// learned on the way.
async fn serve(
    worker: Rc<Worker>,
    stream: TcpStream,
    info: Rc<ConnectionInfo>,
    accept: Accept,
    open: OpenConnection,
    span: Span,
) {
    let _open = (worker.open_connection(), open);
    match accept {
        Accept::Http => serve_http(worker, stream, info, None, &span).await,
        // Boxed: a TLS session is several kilobytes, and keeping it out of line keeps
        // every clear-text connection's task small.
        Accept::Terminate(config) => {
            Box::pin(serve_tls(worker, stream, info, config, &span)).await;
        }
        Accept::ByServerName => Box::pin(serve_by_server_name(worker, stream, info, &span)).await,
    }
}

/// Reads the ClientHello of a connection to an address with `TLS` listeners and
/// serves the connection as the name in it says: HTTPS, or a TLSRoute's stream
/// (passed through, or terminated here first), or a reset.
async fn serve_by_server_name(
    worker: Rc<Worker>,
    mut stream: TcpStream,
    info: Rc<ConnectionInfo>,
    span: &Span,
) {
    let read = {
        let mut drain = worker.drain().watch();
        tokio::select! {
            read = tokio::time::timeout(HANDSHAKE_TIMEOUT, read_client_hello(&mut stream)) => read,
            () = drain.drained() => return,
        }
    };
    let (hello, prefix) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(NoHello::Closed)) => return,
        Ok(Err(NoHello::Refused(_))) => return reset(&worker, &stream, Refusal::TlsMalformed),
        Err(_) => return reset(&worker, &stream, Refusal::TlsHelloTimeout),
    };
    let Some(snapshot) = worker.cell().load_full() else {
        return reset(&worker, &stream, Refusal::TlsUnrouted);
    };
    let server_name = hello.server_name.as_deref();
    let random = worker.next_random();
    let plan = plan_tls(&snapshot.table, &info, server_name, random);
    let forward = match plan {
        TlsPlan::Http => {
            let Some(config) = snapshot.tls.server_config(info.bound).cloned() else {
                return reset(&worker, &stream, Refusal::TlsUnrouted);
            };
            drop(snapshot);
            return serve_tls(worker, Prefixed::new(prefix, stream), info, config, span).await;
        }
        TlsPlan::Refuse(_) => return reset(&worker, &stream, Refusal::TlsUnrouted),
        TlsPlan::Forward(forward) => forward,
    };
    let route = snapshot.route_label(forward.route);
    trace::record_protocol(span, "tls-route");
    if !forward.terminate {
        trace::record_tls(span, "passthrough", server_name);
        drop(snapshot);
        let stream = RouteStream {
            client: stream,
            first: &prefix,
            server_name,
            route,
        };
        return worker.forward_tls_stream(stream, &info, forward).await;
    }
    let Some(termination) = snapshot.tls.stream_config(info.bound).cloned() else {
        return reset(&worker, &stream, Refusal::TlsUnrouted);
    };
    drop(snapshot);
    trace::record_tls(span, "terminated", server_name);
    let accept = TlsAcceptor::from(termination.config).accept(Prefixed::new(prefix, stream));
    let Ok(Ok(client)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await else {
        return;
    };
    let stream = RouteStream {
        client,
        first: &[],
        server_name,
        route,
    };
    worker.forward_tls_stream(stream, &info, forward).await;
}

/// Counts `why` and has the connection reset when it is dropped.
fn reset(worker: &Worker, stream: &TcpStream, why: Refusal) {
    worker.stats().refused(why);
    let _ = socket2::SockRef::from(stream).set_linger(Some(Duration::ZERO));
}

async fn serve_tls<I>(
    worker: Rc<Worker>,
    stream: I,
    mut info: Rc<ConnectionInfo>,
    termination: Termination,
    span: &Span,
) where
    I: OverTcp + Send + 'static,
{
    let accept = TlsAcceptor::from(termination.config).accept(stream);
    let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await else {
        return;
    };
    let session = stream.get_ref().1;
    trace::record_tls(span, "terminated", session.server_name());
    if session.alpn_protocol() == Some(culvert_acme::ACME_TLS_ALPN) {
        // A TLS-ALPN-01 validation: the handshake was the whole answer (RFC 8737 §3).
        let mut stream = stream;
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
        return;
    }
    let client = match &termination.client_auth {
        Some(client_auth) => ClientCertificate {
            identity: session
                .peer_certificates()
                .and_then(|chain| client_auth.identify(chain)),
            forward: client_auth.forward_identity,
        },
        None => ClientCertificate::default(),
    };
    // The only holder yet: this sets the field in place.
    Rc::make_mut(&mut info).transport = Transport::Tls {
        sni: session.server_name().map(Arc::from),
        client,
    };
    let version = match session.alpn_protocol() {
        Some(b"h2") => Some(HttpVersion::Http2),
        Some(b"http/1.1") => Some(HttpVersion::Http1),
        _ => None,
    };
    serve_http(worker, stream, info, version, span).await;
}

/// Serves HTTP on `io` in `version`, or in the version its first bytes show.
async fn serve_http<I>(
    worker: Rc<Worker>,
    mut io: I,
    info: Rc<ConnectionInfo>,
    version: Option<HttpVersion>,
    span: &Span,
) where
    I: Io + Send + 'static,
{
    let mut drain = worker.drain().watch();
    if drain.started() {
        return;
    }
    let (version, prefix) = match version {
        Some(version) => (version, BytesMut::new()),
        None => {
            let detected = tokio::select! {
                detected = tokio::time::timeout(worker.limits().header_read_timeout, sniff::detect(&mut io)) => detected,
                () = drain.drained() => return,
            };
            match detected {
                Ok(Ok(Some(found))) => found,
                _ => return,
            }
        }
    };
    match version {
        HttpVersion::Http1 => {
            trace::record_protocol(span, "http/1.1");
            let switched = http1::serve(&worker, Box::new(io), prefix, &info, &mut drain).await;
            if let Some(switched) = switched {
                Box::pin(serve_switched_to_h2c(
                    Rc::clone(&worker),
                    switched,
                    info,
                    drain,
                    span,
                ))
                .await;
            }
        }
        // Boxed: an HTTP/2 connection's state is kilobytes, and keeping it out of
        // line keeps every HTTP/1 connection's task (what an idle client costs) small.
        HttpVersion::Http2 => {
            trace::record_protocol(span, "h2");
            Box::pin(serve_http2(
                Rc::clone(&worker),
                Prefixed::new(prefix, io),
                info,
                drain,
                span,
            ))
            .await;
        }
    }
}

/// Serves a connection an upgrade switched to h2c, once the client's preface has
/// come (within the header read timeout), as HTTP/2 with the upgrade request on
/// stream 1.
async fn serve_switched_to_h2c(
    worker: Rc<Worker>,
    switched: http1::SwitchedToH2c,
    info: Rc<ConnectionInfo>,
    mut drain: DrainWatch<'_>,
    span: &Span,
) {
    trace::record_protocol(span, "h2c");
    let http1::SwitchedToH2c {
        mut io,
        read,
        stream_one,
    } = switched;
    let opened = h2c::after_client_preface(&mut *io, read, &stream_one);
    let opened = tokio::select! {
        opened = tokio::time::timeout(worker.limits().header_read_timeout, opened) => opened,
        () = drain.drained() => return,
    };
    let Ok(Some(read)) = opened else {
        return;
    };
    serve_http2(worker, Prefixed::new(read, io), info, drain, span).await;
}

/// Serves HTTP/2 on `io` until the client closes, the worker drains or no stream
/// has been open for the keep-alive timeout. Each stream's task (hyper spawns it)
/// runs in the connection's `span`, so its request's span is the connection's child.
async fn serve_http2<I>(
    worker: Rc<Worker>,
    io: I,
    info: Rc<ConnectionInfo>,
    mut drain: DrainWatch<'_>,
    span: &Span,
) where
    I: AsyncRead + AsyncWrite + Unpin + 'static,
{
    // HTTP/2 moves each request future into a task of its own: boxed, a pointer is
    // moved instead of the whole future.
    let stats_worker = Rc::clone(&worker);
    let limits = *worker.limits();
    let activity = StreamActivity::new();
    let streams = Rc::clone(&activity);
    let span = span.clone();
    let service = service_fn(move |request| {
        let worker = Rc::clone(&worker);
        let info = Rc::clone(&info);
        let open = streams.open();
        Box::pin(
            async move {
                let response = worker.handle_http2(request, &info).await;
                drop(open);
                Ok::<_, Infallible>(response)
            }
            .instrument(span.clone()),
        )
    });
    let max_header_list_size = u32::try_from(limits.request_head.max_bytes()).unwrap_or(u32::MAX);
    let connection = http2::Builder::new(LocalExec)
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_header_list_size(max_header_list_size)
        .serve_connection(TokioIo::new(io), service);
    let idle = activity.idle_for(limits.keepalive_timeout);
    let ended = until_closed(pin!(connection), &mut drain, idle, |connection| {
        connection.graceful_shutdown();
    })
    .await;
    if let Err(error) = ended {
        if let Some(refusal) = http2_refusal(&error) {
            stats_worker.stats().refused(refusal);
        }
    }
}

/// How an HTTP/2 connection that ended in `error` is counted: `None` unless this
/// side ended it for something the client did (a client going away, or closing
/// with an error of its own, is no refusal).
fn http2_refusal(error: &hyper::Error) -> Option<Refusal> {
    let h2 = std::error::Error::source(error)?.downcast_ref::<h2::Error>()?;
    if h2.is_remote() || h2.is_io() {
        return None;
    }
    match h2.reason()? {
        h2::Reason::ENHANCE_YOUR_CALM => Some(Refusal::Http2Abuse),
        h2::Reason::NO_ERROR | h2::Reason::CANCEL => None,
        _ => Some(Refusal::Http2Protocol),
    }
}

/// Drives `connection` until it ends, and returns how it ended; when the worker
/// starts draining or `idle` ends, asks it to shut down gracefully and lets it
/// finish what is in flight.
async fn until_closed<C: Future>(
    mut connection: Pin<&mut C>,
    drain: &mut DrainWatch<'_>,
    idle: impl Future<Output = ()>,
    shutdown: impl FnOnce(Pin<&mut C>),
) -> C::Output {
    tokio::select! {
        ended = connection.as_mut() => return ended,
        () = drain.drained() => {}
        () = idle => {}
    }
    shutdown(connection.as_mut());
    connection.await
}
