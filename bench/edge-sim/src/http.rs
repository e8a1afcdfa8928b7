//! The simulator's plain HTTP listeners. The eyeball side (the front door): requests
//! are routed by `route.rs` to a tunnel and forwarded over new streams to its
//! registered connections (round robin over QUIC and HTTP/2 connections alike),
//! with the headers the edge adds (`Cf-Connecting-IP`, `X-Forwarded-For`, `Cf-Ray`,
//! `Cf-Visitor`, `X-Forwarded-Proto`), bodies streamed both ways, websockets bridged
//! after a `101`; plus `GET /_sim/status`. Accepted sockets get `TCP_NODELAY`. The
//! API listener runs the same loop with `api::handle`. HTTP/2 forwarding lives in
//! `edge_h2.rs`, what both transports' forwarding shares in `forward.rs`.
//!
//! Each forwarded request follows PROTOCOL.md §4: the edge writes preamble and
//! `ConnectRequest` in one write, then the raw request body up to FIN, and reads the
//! connector's preamble and `ConnectResponse` (exactly one message) before the
//! response body. A `ConnectResponse.error`, or a stream that fails before its
//! head, becomes a 502 here, as it would at Cloudflare.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, UPGRADE};
use http::header::{HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use quinn::VarInt;
use tokio::net::TcpListener;
use tokio::sync::watch;

use culvert_connector::io::{BoxError, TunnelBody, TunnelStream, read_head};
use culvert_tunnel_proto::preamble::{decode_response_head, encode_request_head};
use culvert_tunnel_proto::{ConnectRequest, ConnectionType, metadata};

use crate::body::{SimBody, text};
use crate::forward::{RESPONSE_HEAD_TIMEOUT, bridge, destination};
use crate::registry::SimConn;
use crate::route::{self, Route};
use crate::shared::SimShared;
use crate::{api, edge_h2};

const CF_CONNECTING_IP: &str = "cf-connecting-ip";
const X_FORWARDED_FOR: &str = "x-forwarded-for";
const CF_RAY: &str = "cf-ray";
const CF_VISITOR: &str = "cf-visitor";
const X_FORWARDED_PROTO: &str = "x-forwarded-proto";

/// The path of the status endpoint.
pub const STATUS_PATH: &str = "/_sim/status";

/// Which plain HTTP listener a loop serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    /// The eyeball side: forwards through tunnels, plus the status endpoint.
    FrontDoor,
    /// The simulated v4 API.
    Api,
}

/// Accepts HTTP connections until shutdown.
pub(crate) async fn accept_loop(
    shared: Arc<SimShared>,
    listener: TcpListener,
    which: Listener,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                // As Cloudflare's edge: a response head and body written apart must
                // not wait for the client's delayed ACK.
                let _ = stream.set_nodelay(true);
                let shared = Arc::clone(&shared);
                tasks.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let shared = Arc::clone(&shared);
                        async move {
                            let response = match which {
                                Listener::FrontDoor => handle(shared, req, peer).await,
                                Listener::Api => api::handle(shared, req).await,
                            };
                            Ok::<_, Infallible>(response)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
            _ = shutdown.wait_for(|stop| *stop) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

async fn handle(
    shared: Arc<SimShared>,
    req: Request<Incoming>,
    peer: SocketAddr,
) -> Response<SimBody> {
    if req.uri().path() == STATUS_PATH && req.method() == Method::GET {
        let status = shared.status();
        let body = serde_json::to_string_pretty(&status).unwrap_or_default();
        let mut response = text(StatusCode::OK, body);
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return response;
    }
    forward(&shared, req, peer).await
}

/// Adds what Cloudflare's edge adds to a forwarded request: the client address
/// (`Cf-Connecting-IP`, appended to `X-Forwarded-For`), a ray ID, the scheme.
fn add_edge_headers(headers: &mut http::HeaderMap, peer: SocketAddr) {
    let ip = peer.ip().to_string();
    let mut chain: Vec<&str> = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    chain.push(&ip);
    let forwarded = chain.join(", ");
    let ray: String = culvert_connector::io::random_bytes::<8>()
        .unwrap_or_default()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let pairs = [
        (CF_CONNECTING_IP, ip),
        (X_FORWARDED_FOR, forwarded),
        (CF_RAY, format!("{ray}-SIM")),
        (CF_VISITOR, r#"{"scheme":"http"}"#.to_owned()),
        (X_FORWARDED_PROTO, "http".to_owned()),
    ];
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}

fn is_websocket(req: &Request<Incoming>) -> bool {
    let has = |name, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    has(UPGRADE, "websocket") && has(CONNECTION, "upgrade")
}

async fn forward(
    shared: &SimShared,
    mut req: Request<Incoming>,
    peer: SocketAddr,
) -> Response<SimBody> {
    let host = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().host().map(str::to_owned));
    let (tunnel, via_dns) = match route::route(shared, host.as_deref()) {
        Route::Tunnel { id, via_dns } => (id, via_dns),
        Route::Answer(status, body) => return text(status, body),
    };
    add_edge_headers(req.headers_mut(), peer);
    let websocket = is_websocket(&req);
    let picked = shared.registry().pick(tunnel);
    let Some((conn_id, conn, guard)) = picked else {
        if via_dns {
            return text(
                route::tunnel_error_status(),
                route::TUNNEL_ERROR_BODY.to_owned(),
            );
        }
        return text(
            StatusCode::BAD_GATEWAY,
            "no registered tunnel connection\n".to_owned(),
        );
    };
    let on_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let conn = match conn {
        SimConn::Quic(conn) => conn,
        SimConn::Http2 { send, .. } => {
            let (parts, body) = req.into_parts();
            return edge_h2::forward(conn_id, send, parts, body, on_upgrade, guard).await;
        }
    };
    let (mut send, mut recv) = match conn.open_bi().await {
        Ok(streams) => streams,
        Err(e) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("connection {conn_id}: cannot open a stream: {e}\n"),
            );
        }
    };
    let (parts, body) = req.into_parts();
    let request = ConnectRequest {
        dest: destination(&parts),
        kind: if websocket {
            ConnectionType::Websocket
        } else {
            ConnectionType::Http
        },
        metadata: metadata::request_metadata(&parts),
    };
    if let Err(e) = send.write_all(&encode_request_head(&request)).await {
        return text(
            StatusCode::BAD_GATEWAY,
            format!("connection {conn_id}: writing the request head: {e}\n"),
        );
    }
    let mut send = if websocket {
        Some(send)
    } else {
        tokio::spawn(pump_request_body(body, send));
        None
    };
    let head = tokio::time::timeout(
        RESPONSE_HEAD_TIMEOUT,
        read_head(&mut recv, decode_response_head),
    )
    .await;
    let (response, leftover) = match head {
        Ok(Ok(head)) => head,
        Ok(Err(e)) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("connection {conn_id}: {e}\n"),
            );
        }
        Err(_) => {
            let _ = recv.stop(VarInt::from_u32(0));
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "connection {conn_id}: no response head within {RESPONSE_HEAD_TIMEOUT:?}\n"
                ),
            );
        }
    };
    if !response.is_success() {
        return text(
            StatusCode::BAD_GATEWAY,
            format!("connector error: {}\n", response.error),
        );
    }
    let head = match metadata::response_parts(&response) {
        Ok(head) => head,
        Err(e) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("invalid response head: {e}\n"),
            );
        }
    };
    if let (Some(on_upgrade), Some(send), StatusCode::SWITCHING_PROTOCOLS) =
        (on_upgrade, send.take(), head.status)
    {
        tokio::spawn(bridge(
            on_upgrade,
            TunnelStream::new(leftover, recv, send, None),
            guard,
        ));
        return Response::from_parts(
            head,
            http_body_util::Empty::new().map_err(|e| match e {}).boxed(),
        );
    }
    if let Some(mut send) = send {
        // A websocket request answered without an upgrade: no request body follows.
        let _ = send.finish();
    }
    let bodyless = parts.method == Method::HEAD
        || head.status == StatusCode::NO_CONTENT
        || head.status == StatusCode::NOT_MODIFIED;
    let length = if bodyless {
        None
    } else {
        head.headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    };
    let body = TunnelBody::from_stream(leftover, recv, length).with_guard(guard);
    Response::from_parts(head, body.map_err(BoxError::from).boxed())
}

/// Streams the eyeball's request body onto the tunnel stream, then FIN.
async fn pump_request_body(mut body: Incoming, mut send: quinn::SendStream) {
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    if send.write_chunk(data).await.is_err() {
                        // STOP_SENDING from the connector: it no longer wants the body.
                        return;
                    }
                }
            }
            Err(_) => {
                let _ = send.reset(VarInt::from_u32(0));
                return;
            }
        }
    }
    let _ = send.finish();
}
