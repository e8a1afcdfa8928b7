//! Upstream connections of one worker: an HTTP/1.1 keep-alive pool per endpoint, one
//! multiplexed h2c connection per endpoint, and fresh HTTP/1.1 connections for
//! upgrades (WebSocket), which are never pooled.
//!
//! Single-threaded: the pools sit in `RefCell`s and a borrow is never held across an
//! `.await`. Errors say whether the endpoint could not be reached (`Connect`) or
//! failed while talking (`Protocol`), so the caller can answer 502 and count why.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

use super::body::CountedBody;
use super::connection::LocalExec;

/// A request body sent upstream: the client's, streamed, or a buffered copy (kept
/// for retries and mirrors).
pub(crate) type RequestBody = Either<CountedBody, Full<Bytes>>;

/// Idle HTTP/1.1 connections kept per endpoint and worker.
const MAX_IDLE_PER_ENDPOINT: usize = 1024;
/// Longest wait for a TCP connection to an endpoint.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The wire protocol to an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1, pooled.
    Http1,
    /// HTTP/2 over clear text with prior knowledge, multiplexed.
    H2c,
}

/// Why an upstream exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpstreamError {
    /// The TCP connection or the protocol handshake failed.
    Connect,
    /// The connection failed after the request was handed to it.
    Protocol,
}

/// The upstream connections of one worker.
#[derive(Default)]
pub(crate) struct Upstreams {
    http1: RefCell<HashMap<SocketAddr, Vec<http1::SendRequest<RequestBody>>>>,
    h2c: RefCell<HashMap<SocketAddr, http2::SendRequest<RequestBody>>>,
}

impl Upstreams {
    /// Sends `request` to `endpoint` and returns the response head (the body
    /// streams on).
    pub(crate) async fn send(
        self: &Rc<Self>,
        endpoint: SocketAddr,
        protocol: Protocol,
        request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        match protocol {
            Protocol::Http1 => self.send_http1(endpoint, request).await,
            Protocol::H2c => self.send_h2c(endpoint, request).await,
        }
    }

    /// Sends an upgrade request on a new HTTP/1.1 connection that allows upgrades;
    /// the connection is never pooled.
    pub(crate) async fn send_upgrade(
        endpoint: SocketAddr,
        request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let mut sender = connect_http1(endpoint, true).await?;
        sender
            .send_request(request)
            .await
            .map_err(|_| UpstreamError::Protocol)
    }

    /// A pooled connection that turns out closed before the request was written is
    /// replaced once; after that the request is spent.
    async fn send_http1(
        self: &Rc<Self>,
        endpoint: SocketAddr,
        mut request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        if let Some(mut sender) = self.take_idle(endpoint) {
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.recycle(endpoint, sender);
                    return Ok(response);
                }
                Err(mut err) => match err.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(UpstreamError::Protocol),
                },
            }
        }
        let mut sender = connect_http1(endpoint, false).await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|_| UpstreamError::Protocol)?;
        self.recycle(endpoint, sender);
        Ok(response)
    }

    async fn send_h2c(
        self: &Rc<Self>,
        endpoint: SocketAddr,
        request: Request<RequestBody>,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let cached = self.h2c.borrow().get(&endpoint).cloned();
        let mut sender = match cached {
            Some(sender) if !sender.is_closed() => sender,
            _ => {
                let stream = connect_tcp(endpoint).await?;
                let (sender, connection) = http2::Builder::new(LocalExec)
                    .timer(TokioTimer::new())
                    .handshake(TokioIo::new(stream))
                    .await
                    .map_err(|_| UpstreamError::Connect)?;
                tokio::task::spawn_local(async move {
                    let _ = connection.await;
                });
                self.h2c.borrow_mut().insert(endpoint, sender.clone());
                sender
            }
        };
        sender.ready().await.map_err(|_| UpstreamError::Connect)?;
        sender
            .send_request(request)
            .await
            .map_err(|_| UpstreamError::Protocol)
    }

    fn take_idle(&self, endpoint: SocketAddr) -> Option<http1::SendRequest<RequestBody>> {
        let mut pool = self.http1.borrow_mut();
        let idle = pool.get_mut(&endpoint)?;
        while let Some(sender) = idle.pop() {
            if sender.is_ready() && !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    /// Returns `sender` to the pool once its response has been read to the end.
    fn recycle(self: &Rc<Self>, endpoint: SocketAddr, mut sender: http1::SendRequest<RequestBody>) {
        let pools = Rc::clone(self);
        tokio::task::spawn_local(async move {
            if sender.ready().await.is_ok() {
                let mut pool = pools.http1.borrow_mut();
                let idle = pool.entry(endpoint).or_default();
                if idle.len() < MAX_IDLE_PER_ENDPOINT {
                    idle.push(sender);
                }
            }
        });
    }

    /// Drops every idle connection (on drain).
    pub(crate) fn close_idle(&self) {
        self.http1.borrow_mut().clear();
        self.h2c.borrow_mut().clear();
    }
}

/// A new HTTP/1.1 connection to `endpoint`, driven by its own task (which ends
/// when the connection closes; errors surface on the request side).
async fn connect_http1(
    endpoint: SocketAddr,
    upgrades: bool,
) -> Result<http1::SendRequest<RequestBody>, UpstreamError> {
    let stream = connect_tcp(endpoint).await?;
    let (sender, connection) = http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|_| UpstreamError::Connect)?;
    tokio::task::spawn_local(async move {
        let _ = if upgrades {
            connection.with_upgrades().await
        } else {
            connection.await
        };
    });
    Ok(sender)
}

async fn connect_tcp(endpoint: SocketAddr) -> Result<TcpStream, UpstreamError> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(endpoint))
        .await
        .map_err(|_| UpstreamError::Connect)?
        .map_err(|_| UpstreamError::Connect)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}
