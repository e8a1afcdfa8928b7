//! One edge request on an HTTP/2 connection: a call of the handler, the response
//! head with serialized headers, the body (PROTOCOL.md §7).
//!
//! Start at [`serve`]. Requests become the same `http::Request<TunnelBody>` as
//! over QUIC: a plain request keeps its method, URI and headers (the
//! `:authority` becomes `Host`); a websocket gets `Connection: Upgrade`,
//! `Upgrade: websocket` and `Sec-WebSocket-Version: 13` toward the origin, as
//! cloudflared adds them, and a [`TunnelUpgrade`]; a TCP stream becomes a
//! `CONNECT` to its `:authority` (`IP:port`). The handler's error before a head,
//! or a refused TCP connect, is answered with `502` and `{"src":"cloudflared"}`;
//! a body error after the head resets the stream (`INTERNAL_ERROR`). Trailers are
//! passed on as HTTP/2 trailers.

use std::rc::Rc;

use bytes::Bytes;
use h2::server::SendResponse;
use http::header::{CONNECTION, CONTENT_LENGTH, HOST, HeaderValue, SEC_WEBSOCKET_VERSION, UPGRADE};
use http::{Method, Request, StatusCode, Uri};
use http_body::Body as _;
use http_body_util::BodyExt as _;

use crate::io::body::{InFlightGuard, TunnelBody, TunnelStream, TunnelUpgrade, h2_send_all};
use crate::io::handler::{BoxBody, StreamInfo, TunnelHandler};
use crate::proto::http2::{StreamType, TCP_SRC_HEADER, UPGRADE_HEADER, error_head, response_head};
use crate::proto::{ConnectionType, metadata};

/// Answers with the connector's own error (`502`, `{"src":"cloudflared"}`).
fn refuse(mut respond: SendResponse<Bytes>, reason: &str) {
    tracing::debug!(error = reason, "refusing http/2 tunnel stream");
    let _ = respond.send_response(error_head(), true);
}

/// Why an edge request's head cannot be given to the handler.
#[derive(Debug, thiserror::Error)]
pub(super) enum BadHead {
    /// A TCP stream with neither an authority nor a `Host`.
    #[error("tcp stream without a destination")]
    NoDestination,
    /// A TCP destination that is not `ip:port`.
    #[error("tcp destination {0:?} is not ip:port")]
    TcpDestination(String, #[source] std::net::AddrParseError),
    /// A TCP destination that makes no URI.
    #[error("invalid tcp destination {0}")]
    TcpUri(std::net::SocketAddr, #[source] http::uri::InvalidUri),
    /// The `CONNECT` head of a TCP stream could not be built.
    #[error("invalid tcp request: {0}")]
    TcpRequest(#[source] http::Error),
    /// The URI with the scheme and authority filled in is not valid.
    #[error("invalid request uri: {0}")]
    Uri(#[source] http::uri::InvalidUriParts),
    /// The authority does not make a `Host` header.
    #[error("invalid authority {0}")]
    Authority(String, #[source] http::header::InvalidHeaderValue),
}

/// The request head the handler sees, or why it cannot be built.
pub(super) fn request_parts(
    head: &http::request::Parts,
    kind: StreamType,
) -> Result<http::request::Parts, BadHead> {
    if kind == StreamType::Tcp {
        let authority = head
            .uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| {
                head.headers
                    .get(HOST)
                    .and_then(|h| h.to_str().ok())
                    .map(str::to_owned)
            })
            .ok_or(BadHead::NoDestination)?;
        let addr: std::net::SocketAddr = match authority.parse() {
            Ok(addr) => addr,
            Err(e) => return Err(BadHead::TcpDestination(authority, e)),
        };
        let uri: Uri = addr
            .to_string()
            .parse()
            .map_err(|e| BadHead::TcpUri(addr, e))?;
        let (mut parts, ()) = Request::builder()
            .method(Method::CONNECT)
            .uri(uri)
            .body(())
            .map_err(BadHead::TcpRequest)?
            .into_parts();
        parts.headers = head.headers.clone();
        parts.headers.remove(TCP_SRC_HEADER);
        return Ok(parts);
    }
    let mut parts = Request::new(()).into_parts().0;
    parts.method = head.method.clone();
    parts.headers = head.headers.clone();
    parts.headers.remove(UPGRADE_HEADER);
    // cloudflared fills a missing scheme and host the same way (h2mux's values).
    let mut uri = head.uri.clone().into_parts();
    if uri.scheme.is_none() {
        uri.scheme = Some(http::uri::Scheme::HTTP);
    }
    if uri.authority.is_none() {
        uri.authority = Some(http::uri::Authority::from_static("localhost:8080"));
    }
    if uri.path_and_query.is_none() {
        uri.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
    }
    parts.uri = Uri::from_parts(uri).map_err(BadHead::Uri)?;
    if !parts.headers.contains_key(HOST) {
        if let Some(authority) = head.uri.authority() {
            let value = HeaderValue::from_str(authority.as_str())
                .map_err(|e| BadHead::Authority(authority.to_string(), e))?;
            parts.headers.insert(HOST, value);
        }
    }
    if kind == StreamType::Websocket {
        let headers = &mut parts.headers;
        headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        headers
            .entry(SEC_WEBSOCKET_VERSION)
            .or_insert(HeaderValue::from_static("13"));
    }
    Ok(parts)
}

fn connection_type(kind: StreamType) -> ConnectionType {
    match kind {
        StreamType::Websocket => ConnectionType::Websocket,
        StreamType::Tcp => ConnectionType::Tcp,
        _ => ConnectionType::Http,
    }
}

/// Serves one edge request to completion.
pub(super) async fn serve(
    request: Request<h2::RecvStream>,
    respond: SendResponse<Bytes>,
    kind: StreamType,
    handler: Rc<dyn TunnelHandler>,
    conn_index: u8,
    guard: InFlightGuard,
) {
    let (head, recv) = request.into_parts();
    let parts = match request_parts(&head, kind) {
        Ok(parts) => parts,
        Err(reason) => return refuse(respond, &reason.to_string()),
    };
    // An absolute URL, or `IP:port` for TCP, as `ConnectRequest.dest` would be.
    let dest = parts.uri.to_string();
    let info = StreamInfo {
        kind: connection_type(kind),
        conn_index,
        dest,
        // HTTP/2 carries no metadata; this is what QUIC would have carried.
        metadata: metadata::request_metadata(&parts),
    };
    if kind == StreamType::Http {
        let length = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let mut req = Request::from_parts(parts, TunnelBody::from_h2(recv, length));
        req.extensions_mut().insert(info);
        let response = match handler.serve(req).await {
            Ok(response) => response,
            Err(e) => return refuse(respond, &e.to_string()),
        };
        write_response(respond, response).await;
        drop(guard);
        return;
    }
    let (upgrade_tx, upgrade) = TunnelUpgrade::pair();
    let mut req = Request::from_parts(parts, TunnelBody::empty());
    req.extensions_mut().insert(info);
    req.extensions_mut().insert(upgrade);
    let response = match handler.serve(req).await {
        Ok(response) => response,
        Err(e) => return refuse(respond, &e.to_string()),
    };
    let upgraded = match kind {
        StreamType::Tcp => response.status().is_success(),
        _ => response.status() == StatusCode::SWITCHING_PROTOCOLS,
    };
    if kind == StreamType::Tcp && !upgraded {
        return refuse(
            respond,
            &format!("origin refused the tcp connection: {}", response.status()),
        );
    }
    if !upgraded {
        // A websocket request answered with a plain response: serve it as such.
        drop(recv);
        write_response(respond, response).await;
        drop(guard);
        return;
    }
    let mut respond = respond;
    // The TCP ack is cloudflared's 101 without headers, sent as 200.
    let head = match kind {
        StreamType::Tcp => response_head(StatusCode::OK, &http::HeaderMap::new()),
        _ => response_head(response.status(), response.headers()),
    };
    let send = match respond.send_response(head, false) {
        Ok(send) => send,
        Err(e) => {
            tracing::debug!(error = %e, "http/2 stream gone before its head");
            return;
        }
    };
    // The handler owns the stream from here; the guard travels with it so a drain
    // waits for the session to end.
    let stream = TunnelStream::from_h2(recv, send, Some(guard));
    if let Err(stream) = upgrade_tx.send(stream) {
        stream.abort();
    }
}

/// Sends a response head and streams its body: trailers as HTTP/2 trailers,
/// END_STREAM at the end (with the last DATA frame when the body reports its end
/// there, as a body with a Content-Length does), RST_STREAM(INTERNAL_ERROR) on a
/// body error.
async fn write_response(mut respond: SendResponse<Bytes>, response: http::Response<BoxBody>) {
    let (parts, mut body) = response.into_parts();
    let head = response_head(parts.status, &parts.headers);
    let empty = body.is_end_stream();
    let mut send = match respond.send_response(head, empty) {
        Ok(send) => send,
        Err(e) => {
            tracing::debug!(error = %e, "http/2 stream gone before its head");
            return;
        }
    };
    if empty {
        return;
    }
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => {
                    // END_STREAM goes on the last DATA frame when the body knows
                    // it is the last, rather than in an empty frame of its own.
                    let end = body.is_end_stream();
                    if data.is_empty() && !end {
                        continue;
                    }
                    if h2_send_all(&mut send, data, end).await.is_err() || end {
                        return;
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        let _ = send.send_trailers(trailers);
                        return;
                    }
                }
            },
            Err(e) => {
                tracing::debug!(error = %e, "response body failed after its head; resetting");
                send.send_reset(h2::Reason::INTERNAL_ERROR);
                return;
            }
        }
    }
    let _ = send.send_data(Bytes::new(), true);
}
