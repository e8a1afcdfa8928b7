//! What both the connector's and the edge simulator's integration tests need: a
//! bounded `LocalSet` runner and an HTTP/1.1 client that reports what it got. The
//! simulator's tests include this file by path (`bench/edge-sim/tests/support`).
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]
#![allow(dead_code, unreachable_pub, reason = "each test file uses a subset")]

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body::Body;
use http_body_util::BodyExt as _;

/// Every test's upper bound.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `f` on a `LocalSet`, bounded by [`TEST_TIMEOUT`].
pub async fn local<F: Future>(f: F) -> F::Output {
    let set = tokio::task::LocalSet::new();
    set.run_until(async {
        tokio::time::timeout(TEST_TIMEOUT, f)
            .await
            .expect("test timed out")
    })
    .await
}

/// A response as the client saw it.
#[derive(Debug)]
pub struct Got {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Result<Bytes, String>,
}

/// One HTTP/1.1 request on a fresh connection to `addr`.
pub async fn request<B>(addr: SocketAddr, request: Request<B>) -> Got
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| e.to_string());
    Got {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// `GET path` with a host header.
pub async fn get(addr: SocketAddr, path: &str) -> Got {
    request(
        addr,
        Request::get(path)
            .header("host", "app.test")
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap(),
    )
    .await
}
