//! The simulator's eyeball side: a plain HTTP/1.1 listener whose requests are
//! forwarded over new streams to registered connections (round robin over QUIC
//! and HTTP/2 connections alike), bodies streamed both ways, websockets bridged
//! after a `101`; plus `GET /_sim/status`. HTTP/2 forwarding lives in `edge_h2.rs`.
//!
//! Each forwarded request follows PROTOCOL.md §4: the edge writes preamble and
//! `ConnectRequest` in one write, then the raw request body up to FIN, and reads the
//! connector's preamble and `ConnectResponse` (exactly one message) before the
//! response body. A `ConnectResponse.error`, or a stream that fails before its
//! head, becomes a 502 here, as it would at Cloudflare.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, UPGRADE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use quinn::VarInt;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::SimShared;
use super::registry::SimConn;
use crate::io::stream::read_head;
use crate::io::{BoxError, InFlightGuard, TunnelBody, TunnelStream};
use crate::proto::preamble::{decode_response_head, encode_request_head};
use crate::proto::{ConnectRequest, ConnectionType, metadata};

/// How long a connector may take to answer with a response head (Cloudflare: 100 s).
pub(crate) const RESPONSE_HEAD_TIMEOUT: Duration = Duration::from_secs(100);

pub(crate) type SimBody = BoxBody<Bytes, BoxError>;

/// The path of the status endpoint.
pub const STATUS_PATH: &str = "/_sim/status";

pub(crate) fn text(status: StatusCode, body: String) -> Response<SimBody> {
    let mut response = Response::new(Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Accepts HTTP connections until shutdown.
pub(crate) async fn accept_loop(
    shared: Arc<SimShared>,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = Arc::clone(&shared);
                tasks.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let shared = Arc::clone(&shared);
                        async move { Ok::<_, Infallible>(handle(shared, req).await) }
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

async fn handle(shared: Arc<SimShared>, req: Request<Incoming>) -> Response<SimBody> {
    if req.uri().path() == STATUS_PATH && req.method() == Method::GET {
        let status = shared.status();
        let body = serde_json::to_string_pretty(&status).unwrap_or_default();
        let mut response = text(StatusCode::OK, body);
        response.headers_mut().insert(
            CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        return response;
    }
    forward(&shared, req).await
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

async fn forward(shared: &SimShared, mut req: Request<Incoming>) -> Response<SimBody> {
    let websocket = is_websocket(&req);
    let on_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let Some((conn_id, conn, guard)) = shared.registry().pick() else {
        return text(
            StatusCode::BAD_GATEWAY,
            "no registered tunnel connection\n".to_owned(),
        );
    };
    let conn = match conn {
        SimConn::Quic(conn) => conn,
        SimConn::Http2 { send, .. } => {
            let (parts, body) = req.into_parts();
            return super::edge_h2::forward(conn_id, send, parts, body, on_upgrade, guard).await;
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

/// Copies websocket frames both ways until either side ends.
pub(crate) async fn bridge(
    on_upgrade: hyper::upgrade::OnUpgrade,
    stream: TunnelStream,
    guard: InFlightGuard,
) {
    let _guard = guard;
    let Ok(upgraded) = on_upgrade.await else {
        stream.abort();
        return;
    };
    let mut client = TokioIo::new(upgraded);
    let mut stream = stream;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut stream).await;
}

/// The URL an eyeball request is forwarded to the connector as: its `Host` (or
/// `localhost`) and its path and query, over `http` (the edge terminated TLS).
pub(super) fn destination(parts: &http::request::Parts) -> String {
    let host = parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    format!("http://{host}{path}")
}
