//! The contract between the driver and whoever serves tunnel requests.
//!
//! Every edge-opened data stream becomes one call of [`TunnelHandler::serve`] with an
//! `http::Request<TunnelBody>`; the handler's `http::Response<BoxBody>` goes back on
//! the same stream. Nothing here is `Send`: handlers and their futures run on the
//! thread that drives the connection (a `LocalRuntime`, or a `LocalSet`),
//! so a thread-per-core proxy can keep `Rc` state in them.
//!
//! What each connection type looks like to the handler:
//!
//! | type | request | response |
//! |---|---|---|
//! | HTTP | method, absolute URI from `dest`, headers from metadata, body up to FIN (empty unless `Content-Length` or chunked `Transfer-Encoding` was announced, as in cloudflared) | status, headers (`Transfer-Encoding` dropped), body streamed |
//! | websocket | the upgrade request, empty body, a [`TunnelUpgrade`] extension | `101` plus headers, then the [`TunnelStream`] carries frames |
//! | TCP | `CONNECT` to `dest` (`IP:port`) as the URI authority, a [`TunnelUpgrade`] extension | any `2xx` acknowledges (the origin dial succeeded), then the stream carries raw bytes |
//!
//! Every request carries a [`StreamInfo`] extension. An `Err` from the handler, or a
//! refused TCP connect, becomes `ConnectResponse.error` (the edge shows its own 502);
//! a body error after the head resets the stream.
//!
//! Over HTTP/2 the handler sees the same shapes: the request head comes from the
//! HTTP/2 request (`:authority` as `Host`, the URI absolute), a websocket request
//! gets `Connection: Upgrade`, `Upgrade: websocket` and `Sec-WebSocket-Version: 13`
//! as cloudflared adds them, and the body is the HTTP/2 request body (no
//! `Content-Length` needed). Handler errors become a `502` marked
//! `{"src":"cloudflared"}`, response headers travel serialized, trailers are sent.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt as _;

use super::body::TunnelBody;
use crate::proto::{ConnectionType, Metadata};

/// The error type of handler failures and response bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response body: any `Body<Data = Bytes>`, boxed, not required to be `Send`
/// (`http_body_util`'s boxes all require `Send`). Make one with [`box_body`].
pub type BoxBody = Pin<Box<dyn Body<Data = Bytes, Error = BoxError>>>;

/// Boxes any body whose error converts into [`BoxError`].
pub fn box_body<B>(body: B) -> BoxBody
where
    B: Body<Data = Bytes> + 'static,
    B::Error: Into<BoxError>,
{
    Box::pin(body.map_err(Into::into))
}

/// What [`TunnelHandler::serve`] returns.
pub type ServeFuture = Pin<Box<dyn Future<Output = Result<http::Response<BoxBody>, BoxError>>>>;

/// Serves the requests that arrive on tunnel streams.
///
/// Implemented for any `Fn(http::Request<TunnelBody>) -> ServeFuture`, so a closure
/// works. Called on the connection's thread; the future is polled there too.
pub trait TunnelHandler {
    /// Serves one request. `Err` before the response head becomes a
    /// `ConnectResponse` error; see the module doc for websocket and TCP.
    fn serve(&self, request: http::Request<TunnelBody>) -> ServeFuture;
}

impl<F> TunnelHandler for F
where
    F: Fn(http::Request<TunnelBody>) -> ServeFuture,
{
    fn serve(&self, request: http::Request<TunnelBody>) -> ServeFuture {
        self(request)
    }
}

/// Request extension describing the tunnel stream a request came from.
#[derive(Debug, Clone)]
pub struct StreamInfo {
    /// HTTP, websocket or TCP.
    pub kind: ConnectionType,
    /// The HA connection (connIndex) that carried the stream.
    pub conn_index: u8,
    /// `ConnectRequest.dest` as sent: an absolute URL, or `IP:port` for TCP (over
    /// HTTP/2, the request URI or `:authority`).
    pub dest: String,
    /// The raw request metadata (headers already applied to the request). HTTP/2
    /// carries none; there it is the metadata QUIC would have carried for the head.
    pub metadata: Vec<Metadata>,
}
