//! One edge-opened stream on the connector: preamble and `ConnectRequest` in, a call
//! of the handler, `ConnectResponse` and body out (PROTOCOL.md §4).
//!
//! Start at [`serve_stream`]. The head is decoded with the sans-IO decoders, which
//! consume exactly one message; bytes read past it go to the body. A failure before
//! the response head is answered with `ConnectResponse.error`; after it, the stream
//! is reset with code 0. RPC streams (configuration pushes, UDP sessions) are not
//! supported yet and are refused with a reset, which cloudflared also does for
//! signatures it does not know.

use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt as _;
use quinn::{RecvStream, SendStream, VarInt};

use super::body::{InFlightGuard, TunnelBody, TunnelStream, TunnelUpgrade};
use super::handler::{BoxBody, StreamInfo, TunnelHandler};
use crate::proto::Error;
use crate::proto::preamble::{decode_request_head, encode_response_head};
use crate::proto::{ConnectRequest, ConnectResponse, ConnectionType, Decoded, metadata};

/// The largest stream head accepted (preamble plus one message).
pub(crate) const MAX_HEAD: usize = 1024 * 1024;
/// How long the edge may take to deliver a whole request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a head could not be read.
#[derive(Debug)]
pub enum HeadError {
    /// The stream ended (FIN or reset) before the head was complete.
    Ended(String),
    /// The bytes are not a valid head.
    Invalid(Error),
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ended(reason) => write!(f, "stream ended inside its head: {reason}"),
            Self::Invalid(e) => write!(f, "invalid stream head: {e}"),
        }
    }
}

/// Reads from `recv` until `decode` finds one whole head; returns it and the bytes
/// read past it, which belong to the body.
pub async fn read_head<T>(
    recv: &mut RecvStream,
    decode: impl Fn(&[u8]) -> Result<Decoded<T>, Error>,
) -> Result<(T, Bytes), HeadError> {
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    let mut chunk = [0u8; 4096];
    loop {
        if !buf.is_empty() {
            match decode(&buf).map_err(HeadError::Invalid)? {
                Decoded::Complete { value, consumed } => {
                    let rest = buf.get(consumed..).unwrap_or(&[]);
                    return Ok((value, Bytes::copy_from_slice(rest)));
                }
                Decoded::Incomplete { needed } if needed > MAX_HEAD => {
                    return Err(HeadError::Invalid(Error::CapnpLimit(format!(
                        "stream head of {needed} bytes exceeds {MAX_HEAD}"
                    ))));
                }
                Decoded::Incomplete { .. } => {}
            }
        }
        match recv.read(&mut chunk).await {
            Ok(Some(n)) => buf.extend_from_slice(chunk.get(..n).unwrap_or(&[])),
            Ok(None) => return Err(HeadError::Ended("fin".to_owned())),
            Err(e) => return Err(HeadError::Ended(e.to_string())),
        }
    }
}

fn reset(send: &mut SendStream, recv: &mut RecvStream) {
    let _ = send.reset(VarInt::from_u32(0));
    let _ = recv.stop(VarInt::from_u32(0));
}

/// Writes a failure `ConnectResponse` and finishes the stream.
async fn refuse(mut send: SendStream, message: &str) {
    tracing::debug!(error = message, "refusing tunnel stream");
    let head = encode_response_head(&ConnectResponse::failure(message));
    if send.write_all(&head).await.is_ok() {
        let _ = send.finish();
    }
}

/// Serves one edge-opened bidirectional stream to completion.
pub(crate) async fn serve_stream(
    mut send: SendStream,
    mut recv: RecvStream,
    handler: Rc<dyn TunnelHandler>,
    conn_index: u8,
    guard: InFlightGuard,
) {
    let head = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut recv, decode_request_head)).await;
    let (request, leftover) = match head {
        Ok(Ok(head)) => head,
        Ok(Err(e)) => {
            // Unknown signatures, RPC streams and garbage: reset, as cloudflared does.
            tracing::debug!(error = %e, "dropping tunnel stream");
            reset(&mut send, &mut recv);
            return;
        }
        Err(_) => {
            tracing::debug!("tunnel stream head timed out");
            reset(&mut send, &mut recv);
            return;
        }
    };
    match request.kind {
        ConnectionType::Http => {
            serve_http(send, recv, leftover, request, handler, conn_index).await;
        }
        ConnectionType::Websocket | ConnectionType::Tcp => {
            serve_upgrade(send, recv, leftover, request, handler, conn_index, guard).await;
            return;
        }
        ConnectionType::Unknown(kind) => {
            refuse(send, &format!("unsupported connection type {kind}")).await;
        }
    }
    drop(guard);
}

fn stream_info(request: &ConnectRequest, conn_index: u8) -> StreamInfo {
    StreamInfo {
        kind: request.kind,
        conn_index,
        dest: request.dest.clone(),
        metadata: request.metadata.clone(),
    }
}

/// The announced `Content-Length`, if any and valid.
fn content_length(request: &ConnectRequest) -> Option<u64> {
    request
        .metadata
        .iter()
        .find_map(|m| match metadata::header_name_of(&m.key) {
            Some(Ok(name)) if name.eq_ignore_ascii_case("content-length") => {
                m.val.trim().parse().ok()
            }
            _ => None,
        })
}

async fn serve_http(
    mut send: SendStream,
    mut recv: RecvStream,
    leftover: Bytes,
    request: ConnectRequest,
    handler: Rc<dyn TunnelHandler>,
    conn_index: u8,
) {
    let parts = match metadata::request_parts(&request) {
        Ok(parts) => parts,
        Err(e) => return refuse(send, &e.to_string()).await,
    };
    let body = if metadata::request_body_expected(&request) {
        TunnelBody::from_stream(leftover, recv, content_length(&request))
    } else {
        // cloudflared ignores a body that was not announced; dropping the receive
        // side sends STOP_SENDING(0).
        let _ = recv.stop(VarInt::from_u32(0));
        TunnelBody::empty()
    };
    let mut req = http::Request::from_parts(parts, body);
    req.extensions_mut()
        .insert(stream_info(&request, conn_index));
    let response = match handler.serve(req).await {
        Ok(response) => response,
        Err(e) => return refuse(send, &e.to_string()).await,
    };
    let (parts, body) = response.into_parts();
    let head = encode_response_head(&metadata::http_response(parts.status, &parts.headers));
    if send.write_all(&head).await.is_err() {
        return;
    }
    write_body(send, body).await;
}

/// Streams `body` after the head; FIN at the end, reset on an error.
async fn write_body(mut send: SendStream, mut body: BoxBody) {
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                // Trailers are not supported over QUIC; cloudflared drops them too.
                if let Ok(data) = frame.into_data() {
                    if data.is_empty() {
                        continue;
                    }
                    if send.write_chunk(data).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "response body failed after its head; resetting");
                let _ = send.reset(VarInt::from_u32(0));
                return;
            }
        }
    }
    let _ = send.finish();
}

#[allow(clippy::too_many_arguments)]
async fn serve_upgrade(
    send: SendStream,
    recv: RecvStream,
    leftover: Bytes,
    request: ConnectRequest,
    handler: Rc<dyn TunnelHandler>,
    conn_index: u8,
    guard: InFlightGuard,
) {
    let tcp = request.kind == ConnectionType::Tcp;
    let parts = if tcp {
        tcp_parts(&request)
    } else {
        metadata::request_parts(&request)
    };
    let parts = match parts {
        Ok(parts) => parts,
        Err(e) => return refuse(send, &e.to_string()).await,
    };
    let (upgrade_tx, upgrade) = TunnelUpgrade::pair();
    let mut req = http::Request::from_parts(parts, TunnelBody::empty());
    req.extensions_mut()
        .insert(stream_info(&request, conn_index));
    req.extensions_mut().insert(upgrade);
    let response = match handler.serve(req).await {
        Ok(response) => response,
        Err(e) => return refuse(send, &e.to_string()).await,
    };
    let (parts, body) = response.into_parts();
    let upgraded = if tcp {
        parts.status.is_success()
    } else {
        parts.status == StatusCode::SWITCHING_PROTOCOLS
    };
    if tcp && !upgraded {
        return refuse(
            send,
            &format!("origin refused the tcp connection: {}", parts.status),
        )
        .await;
    }
    let head = if tcp {
        ConnectResponse::default()
    } else {
        metadata::http_response(parts.status, &parts.headers)
    };
    let mut send = send;
    if send.write_all(&encode_response_head(&head)).await.is_err() {
        return;
    }
    if upgraded {
        // The handler owns the stream from here; the guard travels with it so a
        // drain waits for the session to end.
        let stream = TunnelStream::new(leftover, recv, send, Some(guard));
        if let Err(stream) = upgrade_tx.send(stream) {
            stream.abort();
        }
    } else {
        // A websocket request answered with a plain response: serve it as such.
        drop(recv);
        write_body(send, body).await;
    }
}

/// A `CONNECT` request for a TCP stream; `dest` must be `IP:port`.
fn tcp_parts(request: &ConnectRequest) -> Result<http::request::Parts, Error> {
    let addr: std::net::SocketAddr = request.dest.parse().map_err(|_| {
        Error::Metadata(format!("tcp destination {:?} is not ip:port", request.dest))
    })?;
    let uri: Uri = addr
        .to_string()
        .parse()
        .map_err(|_| Error::Metadata(format!("invalid tcp destination {addr}")))?;
    let (parts, ()) = http::Request::builder()
        .method(Method::CONNECT)
        .uri(uri)
        .body(())
        .map_err(|e| Error::Metadata(format!("invalid tcp request: {e}")))?
        .into_parts();
    Ok(parts)
}
