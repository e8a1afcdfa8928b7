//! One QUIC connection to the edge, from dial to close (PROTOCOL.md §2.3, §3, §6.1).
//!
//! Start at [`run`]: dial with a fresh UDP socket, open the control stream (the first
//! client bidirectional stream, no preamble), register through
//! [`ControlClient`](crate::proto::ControlClient), then accept edge-opened streams and
//! serve each on the current thread until the connection is lost or drained. The
//! drain is `unregisterConnection`, then serving in-flight streams until they are done
//! or the grace period ends, then `Abort` on the control stream and a close with
//! application code 0. This module only moves bytes and timers; every protocol
//! decision is the control client's. It never retries: [`Outcome`] tells the
//! supervisor what happened.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use quinn::{ConnectionError, Endpoint, VarInt};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::attempt::{self, CLOSE_LINGER, Outcome, close_control, flush_control, register_request};
use super::body::InFlight;
use super::control_loop::ControlLoop;
use super::handler::TunnelHandler;
use super::shared::Shared;
use super::stream::serve_stream;
use super::tls::QUIC_SERVER_NAME;
use crate::proto::ControlClient;

fn lost(registered: bool, error: &ConnectionError) -> Outcome {
    Outcome::Lost {
        registered,
        rotate: matches!(error, ConnectionError::TimedOut),
        reason: error.to_string(),
    }
}

fn now_std() -> std::time::Instant {
    Instant::now().into_std()
}

/// Runs one connection attempt for `index` against `addr`.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    index: u8,
    addr: SocketAddr,
    attempts: u32,
    handler: &Rc<dyn TunnelHandler>,
    drain: &mut watch::Receiver<Option<Instant>>,
) -> Outcome {
    let setup = async {
        let bind: SocketAddr = if addr.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let endpoint = Endpoint::client(bind).map_err(|e| format!("binding a udp socket: {e}"))?;
        let connecting = endpoint
            .connect_with(shared.quic.clone(), addr, QUIC_SERVER_NAME)
            .map_err(|e| e.to_string())?;
        let connection = tokio::time::timeout(shared.config.quic_handshake_timeout, connecting)
            .await
            .map_err(|_| "quic handshake timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok((endpoint, connection))
    };
    let (endpoint, connection) = match attempt::dial(drain, setup).await {
        Ok(dialled) => dialled,
        Err(outcome) => return outcome,
    };
    tracing::debug!(conn_index = index, %addr, "quic connected");
    let outcome = drive(shared, index, addr, attempts, handler, drain, &connection).await;
    connection.close(VarInt::from_u32(0), b"");
    let _ = tokio::time::timeout(CLOSE_LINGER, endpoint.wait_idle()).await;
    outcome
}

/// Registration and the serving loop on an established connection.
async fn drive(
    shared: &Arc<Shared>,
    index: u8,
    addr: SocketAddr,
    attempts: u32,
    handler: &Rc<dyn TunnelHandler>,
    drain: &mut watch::Receiver<Option<Instant>>,
    connection: &quinn::Connection,
) -> Outcome {
    let (mut ctrl_send, mut ctrl_recv) = match connection.open_bi().await {
        Ok(streams) => streams,
        Err(e) => return lost(false, &e),
    };
    let config = &shared.config;
    let mut client = ControlClient::new(config.rpc_timeout);
    // HEAD fills originLocalIp from the edge address over QUIC (PROTOCOL.md §3.3).
    let request = register_request(shared, index, addr.ip(), attempts);
    if let Err(e) = client.register(&request, now_std()) {
        return Outcome::Dial(e.to_string());
    }
    let in_flight = Arc::new(InFlight::default());
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    let mut control = ControlLoop::new(shared, index, addr, "quic");
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let outcome = 'serve: loop {
        if let Some(outcome) =
            flush_control(&mut client, &mut ctrl_send, &mut out, control.registered).await
        {
            break 'serve outcome;
        }
        let rpc_deadline = client.poll_timeout().map(Instant::from_std);
        tokio::select! {
            read = ctrl_recv.read(&mut buf), if !control.ctrl_done => {
                let read = match read {
                    Ok(Some(n)) => Some(Ok(buf.get(..n).unwrap_or(&[]))),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                };
                if let Some(outcome) = control.on_control_read(&mut client, read) {
                    break 'serve outcome;
                }
            }
            _ = sleep_until(rpc_deadline.unwrap_or(far)), if rpc_deadline.is_some() => {
                client.handle_timeout(now_std());
            }
            accepted = connection.accept_bi() => match accepted {
                Ok((send, recv)) => {
                    let guard = in_flight.enter();
                    tokio::task::spawn_local(serve_stream(send, recv, Rc::clone(handler), index, guard));
                }
                Err(e) if control.draining => {
                    tracing::debug!(conn_index = index, error = %e, "edge closed the drained connection");
                    break 'serve Outcome::Drained;
                }
                Err(e) => break 'serve lost(control.registered, &e),
            },
            datagram = connection.read_datagram() => match datagram {
                // Datagrams (UDP sessions) are not supported yet: ignored.
                Ok(_) => {}
                Err(e) if control.draining => {
                    tracing::debug!(conn_index = index, error = %e, "edge closed the drained connection");
                    break 'serve Outcome::Drained;
                }
                Err(e) => break 'serve lost(control.registered, &e),
            },
            event = control.next_drain_event(drain, &in_flight) => {
                if let Some(outcome) = control.on_drain_event(&mut client, event, in_flight.count()) {
                    break 'serve outcome;
                }
            }
        }
        if let Some(outcome) = control.on_events(&mut client, in_flight.count()) {
            break 'serve outcome;
        }
    };
    close_control(&mut client, Some(&mut ctrl_send), out).await;
    outcome
}
