//! The simulator's HTTP/2 side (PROTOCOL.md §7): TLS listeners whose connectors are
//! HTTP/2 *servers*, with the simulator as the HTTP/2 client.
//!
//! Per connection: TLS with the `h2.cftunnel.com` leaf (TLS 1.2 or 1.3, no ALPN
//! needed), the HTTP/2 client handshake, then a `control-stream` request whose
//! request body carries edge→connector RPC bytes and whose response body carries
//! the connector's. From there the control stream is the same [`run_control`] as
//! over QUIC (same registration checks, same unregister rule). Requests are
//! forwarded to these connections by `http.rs` ([`forward`]): eyeball headers as
//! ordinary HTTP/2 headers (hop-by-hop ones dropped), websockets marked with
//! `Cf-Cloudflared-Proxy-Connection-Upgrade: websocket`, and response heads read
//! from `Cf-Cloudflared-Response-Headers`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    CONNECTION, CONTENT_LENGTH, HOST, HeaderName, HeaderValue, TE, TRANSFER_ENCODING, UPGRADE,
};
use http::{Method, Request, Response, StatusCode};
use http_body::Body as _;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use culvert_connector::io::{BoxError, InFlightGuard, TunnelBody, TunnelStream, h2_send_all};
use culvert_tunnel_proto::http2::{CONTROL_STREAM, ResponseHead, UPGRADE_HEADER, WEBSOCKET};

use crate::body::{SimBody, text};
use crate::edge::{CONTROL_STREAM_TIMEOUT, ControlStream, run_control};
use crate::forward::{RESPONSE_HEAD_TIMEOUT, bridge, destination};
use crate::registry::SimConn;
use crate::shared::SimShared;

/// How long a TLS handshake may take.
const TLS_TIMEOUT: Duration = Duration::from_secs(10);
/// Flow-control windows the simulator grants connectors.
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;

/// Accepts TCP connections on one HTTP/2 listener until shutdown.
pub(crate) async fn accept_loop(
    shared: Arc<SimShared>,
    listener: TcpListener,
    acceptor: TlsAcceptor,
    addr: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    let mut stop = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, peer)) = accepted else { continue };
                let _ = tcp.set_nodelay(true);
                tasks.spawn(serve_connection(
                    Arc::clone(&shared),
                    acceptor.clone(),
                    tcp,
                    peer,
                    addr,
                    shutdown.clone(),
                ));
            }
            _ = stop.wait_for(|stop| *stop) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
}

/// The HTTP/2 control stream: our request body out, the connector's response in.
struct H2Control {
    send: h2::SendStream<Bytes>,
    recv: h2::RecvStream,
}

impl ControlStream for H2Control {
    async fn read_chunk(&mut self) -> Result<Option<Bytes>, String> {
        match self.recv.data().await {
            Some(Ok(bytes)) => {
                let _ = self.recv.flow_control().release_capacity(bytes.len());
                Ok(Some(bytes))
            }
            Some(Err(e)) => Err(e.to_string()),
            None => Ok(None),
        }
    }

    async fn write_all(&mut self, bytes: &[u8]) -> Result<(), String> {
        h2_send_all(&mut self.send, Bytes::copy_from_slice(bytes), false)
            .await
            .map_err(|e| e.to_string())
    }
}

async fn serve_connection(
    shared: Arc<SimShared>,
    acceptor: TlsAcceptor,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    listener: SocketAddr,
    mut shutdown: watch::Receiver<bool>,
) {
    let tls = match tokio::time::timeout(TLS_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            shared.event(format!(
                "tls handshake from {peer} on {listener} failed: {e}"
            ));
            return;
        }
        Err(_) => {
            shared.event(format!("tls handshake from {peer} on {listener} timed out"));
            return;
        }
    };
    let handshake = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(tls);
    let (send_request, connection) = match tokio::time::timeout(TLS_TIMEOUT, handshake).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => {
            shared.event(format!(
                "http/2 handshake with {peer} on {listener} failed: {e}"
            ));
            return;
        }
        Err(_) => {
            shared.event(format!(
                "http/2 handshake with {peer} on {listener} timed out"
            ));
            return;
        }
    };
    let (closed_tx, closed_rx) = watch::channel(false);
    let driver = tokio::spawn(async move {
        let result = connection.await;
        let _ = closed_tx.send(true);
        result.map_err(|e| e.to_string())
    });
    let conn = SimConn::Http2 {
        send: send_request.clone(),
        peer,
        closed: closed_rx.clone(),
    };
    let (id, in_flight) = shared.registry().add(listener, conn);
    shared.event(format!("connection {id}: http/2 from {peer} on {listener}"));
    let reason = match open_control(send_request).await {
        Ok(stream) => {
            let mut closed = closed_rx;
            let closed = async move {
                let _ = closed.wait_for(|c| *c).await;
                "connection closed".to_owned()
            };
            run_control(&shared, id, stream, closed, &in_flight, &mut shutdown).await
        }
        Err(reason) => reason,
    };
    // Closing the TCP connection ends every stream still on it.
    driver.abort();
    let removed = shared.registry().remove(id);
    if let Some(info) = removed {
        shared.event(format!(
            "connection {id}: closed (connIndex {:?}): {reason}",
            info.conn_index
        ));
    }
}

/// Opens the control stream and waits for the connector's response head.
async fn open_control(send_request: h2::client::SendRequest<Bytes>) -> Result<H2Control, String> {
    let request = Request::builder()
        .method(Method::POST)
        .uri("https://h2.cftunnel.com/")
        .header(UPGRADE_HEADER, CONTROL_STREAM)
        .body(())
        .map_err(|e| format!("control stream request: {e}"))?;
    let opened = async {
        let mut sender = send_request.ready().await.map_err(|e| e.to_string())?;
        let (response, send) = sender
            .send_request(request, false)
            .map_err(|e| e.to_string())?;
        let response = response.await.map_err(|e| e.to_string())?;
        Ok::<_, String>((response, send))
    };
    let (response, send) = tokio::time::timeout(CONTROL_STREAM_TIMEOUT, opened)
        .await
        .map_err(|_| "no control stream response within 10 s".to_owned())?
        .map_err(|e| format!("no control stream: {e}"))?;
    if response.status() != StatusCode::OK {
        return Err(format!(
            "the connector answered the control stream with {}",
            response.status()
        ));
    }
    Ok(H2Control {
        send,
        recv: response.into_body(),
    })
}

/// Headers that must not travel as HTTP/2 headers (connection-specific).
fn hop_by_hop(name: &HeaderName) -> bool {
    name == CONNECTION
        || name == UPGRADE
        || name == TRANSFER_ENCODING
        || name == TE
        || name == HOST
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

/// Forwards one eyeball request over an HTTP/2 connection.
pub(crate) async fn forward(
    conn_id: u64,
    send_request: h2::client::SendRequest<Bytes>,
    parts: http::request::Parts,
    body: Incoming,
    on_upgrade: Option<hyper::upgrade::OnUpgrade>,
    guard: InFlightGuard,
) -> Response<SimBody> {
    let websocket = on_upgrade.is_some();
    let bad_gateway = |what: String| {
        text(
            StatusCode::BAD_GATEWAY,
            format!("connection {conn_id}: {what}\n"),
        )
    };
    let destination = destination(&parts);
    let mut request = Request::new(());
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = match destination.parse() {
        Ok(uri) => uri,
        Err(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("invalid destination {destination:?}\n"),
            );
        }
    };
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            request.headers_mut().append(name.clone(), value.clone());
        }
    }
    if websocket {
        request.headers_mut().insert(
            HeaderName::from_static(UPGRADE_HEADER),
            HeaderValue::from_static(WEBSOCKET),
        );
    }
    let end = !websocket && body.is_end_stream();
    let mut sender = match send_request.ready().await {
        Ok(sender) => sender,
        Err(e) => return bad_gateway(format!("cannot open a stream: {e}")),
    };
    let (response, send) = match sender.send_request(request, end) {
        Ok(pair) => pair,
        Err(e) => return bad_gateway(format!("cannot open a stream: {e}")),
    };
    let mut send = if websocket {
        Some(send)
    } else {
        if !end {
            tokio::spawn(pump_request_body(body, send));
        }
        None
    };
    let response = match tokio::time::timeout(RESPONSE_HEAD_TIMEOUT, response).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return bad_gateway(format!("stream failed before its head: {e}")),
        Err(_) => {
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "connection {conn_id}: no response head within {RESPONSE_HEAD_TIMEOUT:?}\n"
                ),
            );
        }
    };
    let (head, recv) = response.into_parts();
    let decoded = match ResponseHead::decode(head.status, &head.headers) {
        Ok(decoded) => decoded,
        Err(e) => return bad_gateway(format!("invalid response head: {e}")),
    };
    if decoded.from_connector {
        return text(
            StatusCode::BAD_GATEWAY,
            format!(
                "connector error: status {} from the connector itself\n",
                decoded.status
            ),
        );
    }
    if let (Some(on_upgrade), Some(send), StatusCode::OK) =
        (on_upgrade, send.take(), decoded.status)
    {
        tokio::spawn(bridge(
            on_upgrade,
            TunnelStream::from_h2(recv, send, None),
            guard,
        ));
        let mut response =
            Response::new(http_body_util::Empty::new().map_err(|e| match e {}).boxed());
        *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        *response.headers_mut() = decoded.headers;
        return response;
    }
    if let Some(mut send) = send {
        // A websocket request answered without an upgrade: no request body follows.
        let _ = send.send_data(Bytes::new(), true);
    }
    let bodyless = parts.method == Method::HEAD
        || decoded.status == StatusCode::NO_CONTENT
        || decoded.status == StatusCode::NOT_MODIFIED;
    let length = if bodyless {
        None
    } else {
        decoded
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    };
    let body = TunnelBody::from_h2(recv, length).with_guard(guard);
    let mut response = Response::new(body.map_err(BoxError::from).boxed());
    *response.status_mut() = decoded.status;
    *response.headers_mut() = decoded.headers;
    response
}

/// Streams the eyeball's request body onto the HTTP/2 stream, then END_STREAM
/// (on the last DATA frame when the body knows it is the last).
async fn pump_request_body(mut body: Incoming, mut send: h2::SendStream<Bytes>) {
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => {
                    let end = body.is_end_stream();
                    if h2_send_all(&mut send, data, end).await.is_err() {
                        // The connector reset the stream: it no longer wants the body.
                        return;
                    }
                    if end {
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
            Err(_) => {
                send.send_reset(h2::Reason::CANCEL);
                return;
            }
        }
    }
    let _ = send.send_data(Bytes::new(), true);
}
