//! One HTTP/2 connection to the edge, from dial to close (PROTOCOL.md §7, §3, §6.1).
//!
//! Start at [`run`]: dial TCP, TLS with SNI `h2.cftunnel.com` and no ALPN, then
//! serve HTTP/2 — the roles flip, the connector is the HTTP/2 *server* and the edge
//! sends every request. The edge's `control-stream` request carries the control
//! RPC (request body edge→connector, response body connector→edge); registration
//! goes through [`ControlClient`] exactly as over QUIC. Every other request is
//! served on the current thread by `stream.rs`. The drain is the same as QUIC's:
//! `unregisterConnection`, in-flight streams served until done or the grace period
//! ends, `Abort` on the control stream, then GOAWAY and close.
//!
//! The `h2` connection object must be polled for any byte to move, so it runs in a
//! task of its own ([`drive`]) that hands accepted streams to the serving loop over
//! a channel; the loop can then await writes without starving the connection. This
//! module only moves bytes and timers; it never retries: [`Outcome`] tells the
//! supervisor what happened.

mod stream;

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use http::{Request, StatusCode};
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, sleep_until};

use super::attempt::{
    self, CLOSE_LINGER, Outcome, close_control, flush_control, lost, register_request,
};
use super::body::InFlight;
use super::control_loop::ControlLoop;
use super::handler::TunnelHandler;
use super::shared::Shared;
use super::tls::H2_SERVER_NAME;
use crate::proto::ControlClient;
use crate::proto::http2::{StreamType, error_head};

/// cloudflared's TCP dial timeout for HTTP/2 edges.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the edge may take to open the control stream after the handshake.
const CONTROL_STREAM_TIMEOUT: Duration = Duration::from_secs(10);
/// Flow-control windows we grant the edge (h2's defaults of 64 KiB would cap a
/// stream at one window per round trip).
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;
/// TCP keep-alive, so a dead edge is noticed (HTTP/2 has no idle timeout here).
const KEEPALIVE_TIME: Duration = Duration::from_secs(15);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);

/// A request the connection task accepted.
type Accepted = (Request<h2::RecvStream>, SendResponse<Bytes>);

/// Runs one HTTP/2 connection attempt for `index` against `addr`.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    index: u8,
    addr: SocketAddr,
    attempts: u32,
    handler: &Rc<dyn TunnelHandler>,
    drain: &mut watch::Receiver<Option<Instant>>,
) -> Outcome {
    let setup = async {
        let tcp = tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| format!("tcp dial to {addr} timed out"))?
            .map_err(|e| format!("tcp dial to {addr}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(KEEPALIVE_TIME)
            .with_interval(KEEPALIVE_INTERVAL);
        let _ = socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive);
        let local = tcp
            .local_addr()
            .map_err(|e| format!("local address: {e}"))?;
        let name = ServerName::try_from(H2_SERVER_NAME).map_err(|e| e.to_string())?;
        let connector = tokio_rustls::TlsConnector::from(Arc::clone(&shared.h2_tls));
        let tls = tokio::time::timeout(DIAL_TIMEOUT, connector.connect(name, tcp))
            .await
            .map_err(|_| "tls handshake timed out".to_owned())?
            .map_err(|e| format!("tls handshake: {e}"))?;
        // The edge's control stream is one of the connection's streams too: the
        // limit is on request streams, as over QUIC (where the control stream is
        // ours and draws on other credit).
        let streams = shared.config.max_concurrent_streams.saturating_add(1);
        let connection = h2::server::Builder::new()
            .max_concurrent_streams(streams)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake::<_, Bytes>(tls);
        let connection = tokio::time::timeout(DIAL_TIMEOUT, connection)
            .await
            .map_err(|_| "http/2 handshake timed out".to_owned())?
            .map_err(|e| format!("http/2 handshake: {e}"))?;
        Ok::<_, String>((connection, local))
    };
    let (connection, local) = match attempt::dial(drain, setup).await {
        Ok(dialled) => dialled,
        Err(outcome) => return outcome,
    };
    tracing::debug!(conn_index = index, %addr, "http/2 connected");
    let (accepted_tx, accepted_rx) = mpsc::unbounded_channel();
    let (goaway_tx, goaway_rx) = oneshot::channel();
    let driver = tokio::task::spawn_local(drive(connection, accepted_tx, goaway_rx));
    let abort = driver.abort_handle();
    let outcome = serve(
        shared,
        index,
        addr,
        local,
        attempts,
        handler,
        drain,
        accepted_rx,
    )
    .await;
    // GOAWAY, then let the connection finish what is in flight, bounded.
    let _ = goaway_tx.send(());
    if tokio::time::timeout(CLOSE_LINGER, driver).await.is_err() {
        abort.abort();
    }
    outcome
}

/// Polls the HTTP/2 connection: accepts requests and hands them to the serving
/// loop; sends GOAWAY when asked. Returns once the connection is closed.
async fn drive<T>(
    mut connection: h2::server::Connection<T, Bytes>,
    accepted: mpsc::UnboundedSender<Result<Accepted, h2::Error>>,
    mut goaway: oneshot::Receiver<()>,
) where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut closing = false;
    loop {
        tokio::select! {
            next = connection.accept() => match next {
                Some(Ok(request)) => {
                    if accepted.send(Ok(request)).is_err() && !closing {
                        closing = true;
                        connection.graceful_shutdown();
                    }
                }
                Some(Err(e)) => {
                    let _ = accepted.send(Err(e));
                    break;
                }
                None => break,
            },
            _ = &mut goaway, if !closing => {
                closing = true;
                connection.graceful_shutdown();
            }
        }
    }
}

/// The control stream's halves, once the edge opened it.
struct Control {
    recv: h2::RecvStream,
    send: h2::SendStream<Bytes>,
}

/// Registration and the serving loop on an established connection.
#[allow(clippy::too_many_arguments)]
async fn serve(
    shared: &Arc<Shared>,
    index: u8,
    addr: SocketAddr,
    local: SocketAddr,
    attempts: u32,
    handler: &Rc<dyn TunnelHandler>,
    drain: &mut watch::Receiver<Option<Instant>>,
    mut accepted: mpsc::UnboundedReceiver<Result<Accepted, h2::Error>>,
) -> Outcome {
    let config = &shared.config;
    let mut client = ControlClient::new(config.rpc_timeout);
    // Over HTTP/2 originLocalIp is the TCP socket's local address (PROTOCOL.md §3.3).
    let registration = register_request(shared, index, local.ip(), attempts);
    let in_flight = Arc::new(InFlight::default());
    let mut control: Option<Control> = None;
    let mut out = Vec::new();
    let mut state = ControlLoop::new(shared, index, addr, "http2");
    let control_deadline = Instant::now() + CONTROL_STREAM_TIMEOUT;
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let outcome = 'serve: loop {
        if let Some(ctrl) = control.as_mut() {
            if let Some(outcome) =
                flush_control(&mut client, &mut ctrl.send, &mut out, state.registered).await
            {
                break 'serve outcome;
            }
        }
        let rpc_deadline = client.poll_timeout().map(Instant::from_std);
        let reading = control.is_some() && !state.ctrl_done;
        tokio::select! {
            data = std::future::poll_fn(|cx| match control.as_mut() {
                Some(ctrl) => ctrl.recv.poll_data(cx),
                None => std::task::Poll::Pending,
            }), if reading => {
                if let (Some(Ok(bytes)), Some(ctrl)) = (&data, control.as_mut()) {
                    let _ = ctrl.recv.flow_control().release_capacity(bytes.len());
                }
                let read = data.as_ref().map(|data| data.as_deref());
                if let Some(outcome) = state.on_control_read(&mut client, read) {
                    break 'serve outcome;
                }
            }
            () = sleep_until(control_deadline), if control.is_none() => {
                break 'serve Outcome::Dial(format!(
                    "the edge opened no control stream within {CONTROL_STREAM_TIMEOUT:?}"
                ));
            }
            _ = sleep_until(rpc_deadline.unwrap_or(far)), if rpc_deadline.is_some() => {
                client.handle_timeout(Instant::now().into_std());
            }
            next = accepted.recv() => match next {
                Some(Ok((request, mut respond))) => match StreamType::of(request.headers()) {
                    StreamType::Control if control.is_none() => {
                        let head = http::Response::builder().status(StatusCode::OK).body(());
                        let send = match head.map(|h| respond.send_response(h, false)) {
                            Ok(Ok(send)) => send,
                            Ok(Err(e)) => break 'serve lost(false, format!("answering the control stream: {e}")),
                            Err(e) => break 'serve lost(false, format!("control stream head: {e}")),
                        };
                        control = Some(Control { recv: request.into_body(), send });
                        if let Err(e) = client.register(&registration, Instant::now().into_std()) {
                            break 'serve Outcome::Dial(e.to_string());
                        }
                    }
                    StreamType::Control | StreamType::Configuration => {
                        // A second control stream, or a configuration push (remote
                        // configuration is not supported yet): refused as
                        // cloudflared's own error.
                        let _ = respond.send_response(error_head(), true);
                    }
                    kind => {
                        let guard = in_flight.enter();
                        tokio::task::spawn_local(stream::serve(
                            request,
                            respond,
                            kind,
                            Rc::clone(handler),
                            index,
                            guard,
                        ));
                    }
                },
                Some(Err(reason)) if state.draining => {
                    tracing::debug!(conn_index = index, %reason, "edge closed the drained connection");
                    break 'serve Outcome::Drained;
                }
                Some(Err(reason)) => break 'serve lost(state.registered, reason.to_string()),
                None if state.draining => break 'serve Outcome::Drained,
                None => break 'serve lost(state.registered, "the edge closed the connection".to_owned()),
            },
            event = state.next_drain_event(drain, &in_flight) => {
                if let Some(outcome) = state.on_drain_event(&mut client, event, in_flight.count()) {
                    break 'serve outcome;
                }
            }
        }
        if let Some(outcome) = state.on_events(&mut client, in_flight.count()) {
            break 'serve outcome;
        }
    };
    close_control(
        &mut client,
        control.as_mut().map(|ctrl| &mut ctrl.send),
        out,
    )
    .await;
    outcome
}

#[cfg(test)]
mod tests;
