//! The body of a request read off a client connection: frames decoded from the
//! bytes after the head as the proxy polls for them (exactly a `Content-Length`, or
//! chunked with trailers), with `100 Continue` sent before the first read when the
//! client asked for it.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::conn::{BodyError, Conn};

/// A request body streamed from its connection.
pub(crate) struct Http1Body {
    conn: Rc<RefCell<Conn>>,
    /// The request this body belongs to; once the connection has moved on, the body
    /// reads as ended.
    exchange: u64,
}

impl Http1Body {
    pub(super) fn new(conn: Rc<RefCell<Conn>>, exchange: u64) -> Self {
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
