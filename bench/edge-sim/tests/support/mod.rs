//! Helpers for the simulator binary's tests: a `LocalSet` runner, an origin that
//! answers every request with `200 hello`, and an HTTP/1.1 client.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]
#![allow(dead_code, unreachable_pub, reason = "each test file uses a subset")]

use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use culvert_connector::io::{ServeFuture, TunnelBody, TunnelHandler, box_body};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt as _, Full};

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

/// The test origin: `200 hello` for every request.
pub fn hello_handler() -> Rc<dyn TunnelHandler> {
    Rc::new(|_request: Request<TunnelBody>| -> ServeFuture {
        Box::pin(async {
            let body = Bytes::from_static(b"hello");
            Ok(Response::builder()
                .status(StatusCode::OK)
                .header("content-length", body.len())
                .body(box_body(Full::new(body)))
                .unwrap())
        })
    })
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
