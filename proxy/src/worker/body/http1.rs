//! The body of a request read off an HTTP/1 client connection: frames decoded from
//! the bytes after the head as the proxy polls for them (exactly a
//! `Content-Length`, or chunked with trailers), with `100 Continue` sent before the
//! first read when the client asked for it. The connection that reads them is a
//! [`BodySource`] (the downstream HTTP/1 server implements it), so this layer does
//! not depend on the server.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use culvert_wire::WireError;

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("reading the request body: {0}")]
    Io(std::io::Error),
    #[error("bad request body: {0}")]
    Wire(WireError),
    #[error("the request body broke off earlier")]
    Broken,
}

/// A client connection that reads request bodies off itself, one exchange (request)
/// after another.
pub(crate) trait BodySource {
    /// The next frame of the body of `exchange`; an error once the connection has
    /// moved past it (never a clean end: a cut body must not pass for a whole one).
    fn poll_body(
        &mut self,
        cx: &mut Context<'_>,
        exchange: u64,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>>;

    /// Bytes of the body of `exchange` still to come, when known.
    fn body_remaining(&self, exchange: u64) -> Option<u64>;
}

/// A request body streamed from its connection.
pub(crate) struct Http1Body {
    conn: Rc<RefCell<dyn BodySource>>,
    /// The request this body belongs to; once the connection has moved on, the body
    /// reads as ended.
    exchange: u64,
}

impl Http1Body {
    pub(crate) fn new(conn: Rc<RefCell<dyn BodySource>>, exchange: u64) -> Self {
        Self { conn, exchange }
    }
}

impl Http1Body {
    /// Bytes still to come, when known.
    fn remaining(&self) -> Option<u64> {
        self.conn
            .try_borrow()
            .ok()
            .and_then(|conn| conn.body_remaining(self.exchange))
    }
}

impl Body for Http1Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        // The connection is borrowed only inside its own polls, none of which polls
        // a body; were it ever busy here, the body fails rather than the worker.
        match self.conn.try_borrow_mut() {
            Ok(mut conn) => conn.poll_body(cx, self.exchange),
            Err(_) => Poll::Ready(Some(Err(BodyError::Broken))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.remaining() == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining() {
            Some(remaining) => SizeHint::with_exact(remaining),
            None => SizeHint::default(),
        }
    }
}
