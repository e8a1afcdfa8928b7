//! What the QUIC driver (`connection.rs`) and the HTTP/2 driver (`http2/`) share
//! about one connection attempt: how it ended ([`Outcome`], which the supervisor
//! hands to the reconnect state machine), the `registerConnection` arguments, and
//! the control stream's write side, from flushing the control client's bytes to
//! the teardown that closes the RPC connection the way cloudflared does
//! ([`close_control`]). The drivers keep their sockets and streams; this sits
//! below them and imports neither.

use std::fmt::Display;
use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;

use super::body::h2_send_all;
use super::shared::Shared;
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

/// Runs `dial` (socket, handshakes) unless a drain was asked for before or comes
/// while it runs; a dial failure is [`Outcome::Dial`].
pub(crate) async fn dial<T>(
    drain: &mut watch::Receiver<Option<Instant>>,
    dial: impl Future<Output = Result<T, String>>,
) -> Result<T, Outcome> {
    if drain.borrow_and_update().is_some() {
        return Err(Outcome::Drained);
    }
    tokio::select! {
        result = dial => result.map_err(Outcome::Dial),
        _ = drain.changed() => Err(Outcome::Drained),
    }
}

/// An established connection ended for `reason`, to be retried at the same address.
pub(crate) fn lost(registered: bool, reason: String) -> Outcome {
    Outcome::Lost {
        registered,
        rotate: false,
        reason,
    }
}

/// The write half of a control stream: a QUIC send stream, or the HTTP/2 response
/// body of the edge's `control-stream` request.
pub(crate) trait ControlSend {
    /// Why a write failed.
    type Error: Display;

    /// Writes all of `bytes`.
    async fn write(&mut self, bytes: Vec<u8>) -> Result<(), Self::Error>;

    /// Ends the stream (FIN), without waiting.
    fn finish(&mut self);
}

impl ControlSend for quinn::SendStream {
    type Error = quinn::WriteError;

    async fn write(&mut self, bytes: Vec<u8>) -> Result<(), Self::Error> {
        self.write_all(&bytes).await
    }

    fn finish(&mut self) {
        let _ = quinn::SendStream::finish(self);
    }
}

impl ControlSend for h2::SendStream<Bytes> {
    type Error = std::io::Error;

    async fn write(&mut self, bytes: Vec<u8>) -> Result<(), Self::Error> {
        h2_send_all(self, Bytes::from(bytes), false).await
    }

    fn finish(&mut self) {
        let _ = self.send_data(Bytes::new(), true);
    }
}

/// Writes what the control client has to send; `Some` ends the serving loop (the
/// stream broke). `out` is the reusable transmit buffer.
pub(crate) async fn flush_control(
    client: &mut ControlClient,
    send: &mut impl ControlSend,
    out: &mut Vec<u8>,
    registered: bool,
) -> Option<Outcome> {
    client.poll_transmit(out);
    if out.is_empty() {
        return None;
    }
    let bytes = std::mem::take(out);
    let written = send.write(bytes).await;
    written
        .err()
        .map(|e| lost(registered, format!("writing the control stream: {e}")))
}

/// The end of a serving loop: closes the RPC connection the way cloudflared does
/// (`Abort` on the control stream, given [`CLOSE_LINGER`] to leave), then ends the
/// stream. Without a control stream (the edge never opened one) there is nothing
/// to write.
pub(crate) async fn close_control(
    client: &mut ControlClient,
    send: Option<&mut impl ControlSend>,
    mut out: Vec<u8>,
) {
    client.close();
    client.poll_transmit(&mut out);
    let Some(send) = send else { return };
    if !out.is_empty() {
        let _ = tokio::time::timeout(CLOSE_LINGER, send.write(out)).await;
    }
    send.finish();
}
