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

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use quinn::{ConnectionError, Endpoint, VarInt};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::body::InFlight;
use super::control_loop::ControlLoop;
use super::handler::TunnelHandler;
use super::stream::serve_stream;
use super::tls::QUIC_SERVER_NAME;
use super::tunnel::Shared;
use crate::proto::reconnect::Ended;
use crate::proto::{
    ClientInfo, ConnectionOptions, ControlClient, RegisterConnection, RegistrationError,
};

/// How long the close of a connection may take to reach the edge.
pub(crate) const CLOSE_LINGER: Duration = Duration::from_secs(1);

/// How a connection attempt ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Drained (or shut down) on request; do not reconnect.
    Drained,
    /// The edge could not be reached or the handshake failed.
    Dial(String),
    /// The edge refused the registration.
    Registration(RegistrationError),
    /// An established connection ended.
    Lost {
        /// Whether it had registered (the backoff starts over).
        registered: bool,
        /// Whether to move to another address (idle timeout).
        rotate: bool,
        /// What happened.
        reason: String,
    },
}

fn lost(registered: bool, error: &ConnectionError) -> Outcome {
    Outcome::Lost {
        registered,
        rotate: matches!(error, ConnectionError::TimedOut),
        reason: error.to_string(),
    }
}

impl Outcome {
    /// The attempt's ending as the reconnect state machine takes it, and what to
    /// log and report for it. A socket the system refuses ("operation not
    /// permitted") says UDP is blocked here (cloudflared falls back on it).
    pub(crate) fn ended(self) -> (Ended, String) {
        let refused = |reason: &str| reason.contains("operation not permitted");
        match self {
            Self::Drained => (Ended::Drained, String::new()),
            Self::Dial(reason) => (
                Ended::DialFailed {
                    socket_refused: refused(&reason),
                },
                reason,
            ),
            Self::Registration(error) => {
                let text = error.to_string();
                (Ended::Refused(error), text)
            }
            Self::Lost {
                registered,
                rotate,
                reason,
            } => (
                Ended::Lost {
                    registered,
                    timed_out: rotate,
                    socket_refused: refused(&reason),
                },
                reason,
            ),
        }
    }
}

/// The `registerConnection` arguments of connection `index`.
pub(crate) fn register_request(
    shared: &Shared,
    index: u8,
    local_ip: IpAddr,
    attempts: u32,
) -> RegisterConnection {
    let config = &shared.config;
    RegisterConnection {
        auth: config.token.auth(),
        tunnel_id: config.token.tunnel_id.as_bytes().to_vec(),
        conn_index: index,
        options: ConnectionOptions {
            client: ClientInfo {
                client_id: shared.client_id.as_bytes().to_vec(),
                features: config.features.clone(),
                version: config.version.clone(),
                arch: config.arch.clone(),
            },
            origin_local_ip: ip16(local_ip),
            replace_existing: false,
            compression_quality: 0,
            num_previous_attempts: u8::try_from(attempts).unwrap_or(u8::MAX),
        },
    }
}

/// Go's 16-byte `net.IP` form of an address.
pub(crate) fn ip16(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
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
    if drain.borrow_and_update().is_some() {
        return Outcome::Drained;
    }
    let bind: SocketAddr = if addr.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let endpoint = match Endpoint::client(bind) {
        Ok(endpoint) => endpoint,
        Err(e) => return Outcome::Dial(format!("binding a udp socket: {e}")),
    };
    let connecting = match endpoint.connect_with(shared.quic.clone(), addr, QUIC_SERVER_NAME) {
        Ok(connecting) => connecting,
        Err(e) => return Outcome::Dial(e.to_string()),
    };
    let connection = tokio::select! {
        result = tokio::time::timeout(shared.config.quic_handshake_timeout, connecting) => match result {
            Ok(Ok(connection)) => connection,
            Ok(Err(e)) => return Outcome::Dial(e.to_string()),
            Err(_) => return Outcome::Dial("quic handshake timed out".to_owned()),
        },
        _ = drain.changed() => return Outcome::Drained,
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
        client.poll_transmit(&mut out);
        if !out.is_empty() {
            if let Err(e) = ctrl_send.write_all(&out).await {
                break 'serve Outcome::Lost {
                    registered: control.registered,
                    rotate: false,
                    reason: format!("writing the control stream: {e}"),
                };
            }
            out.clear();
        }
        let rpc_deadline = client.poll_timeout().map(Instant::from_std);
        tokio::select! {
            read = ctrl_recv.read(&mut buf), if !control.ctrl_done => match read {
                Ok(Some(n)) => {
                    let bytes = buf.get(..n).unwrap_or(&[]);
                    if let Err(e) = client.handle_input(bytes, now_std()) {
                        break 'serve Outcome::Lost {
                            registered: control.registered,
                            rotate: false,
                            reason: format!("control stream: {e}"),
                        };
                    }
                }
                Ok(None) | Err(_) if control.draining => control.ctrl_done = true,
                Ok(None) => break 'serve Outcome::Lost {
                    registered: control.registered,
                    rotate: false,
                    reason: "the edge closed the control stream".to_owned(),
                },
                Err(e) => break 'serve Outcome::Lost {
                    registered: control.registered,
                    rotate: false,
                    reason: format!("reading the control stream: {e}"),
                },
            },
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
    // Close the RPC connection the way cloudflared does, then the stream.
    client.close();
    client.poll_transmit(&mut out);
    if !out.is_empty() {
        let _ = tokio::time::timeout(CLOSE_LINGER, ctrl_send.write_all(&out)).await;
    }
    let _ = ctrl_send.finish();
    outcome
}
