//! Helpers shared by the integration tests: a raw HTTP/1.1 client and free ports.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail the test on any error"
)]
#![allow(dead_code, unreachable_pub, reason = "each test binary uses a subset")]

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One answer, body read to the end.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "body is not JSON ({err}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Sends one request on a new connection.
pub async fn send(addr: SocketAddr, request: Request<Full<Bytes>>) -> Reply {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

/// A GET of `path` with `Host: host`.
pub async fn get(addr: SocketAddr, host: &str, path: &str) -> Reply {
    let request = Request::get(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    send(addr, request).await
}

/// `PUT /config` with a JSON body and an optional bearer token.
pub async fn put_config(addr: SocketAddr, body: &serde_json::Value, token: Option<&str>) -> Reply {
    let mut request = Request::put("/config")
        .header("host", "control")
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    send(
        addr,
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap(),
    )
    .await
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
