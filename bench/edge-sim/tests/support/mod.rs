//! Helpers for the simulator binary's tests: an origin that answers every request
//! with `200 hello`, and (shared with the connector's tests) a `LocalSet` runner and
//! an HTTP/1.1 client.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]
#![allow(dead_code, unreachable_pub, reason = "each test file uses a subset")]

use std::rc::Rc;

use bytes::Bytes;
#[path = "../../../../connector/tests/support/client.rs"]
mod client;
#[allow(unused_imports, reason = "each test file uses a subset")]
pub use client::{Got, TEST_TIMEOUT, get, local, request};

use culvert_connector::io::{ServeFuture, TunnelBody, TunnelHandler, box_body};
use http::{Request, Response, StatusCode};
use http_body_util::Full;

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
