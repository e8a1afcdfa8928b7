//! The state one client connection shares between its serving loop, which reads
//! request heads and writes responses, and the request body being forwarded, which
//! reads the bytes after the head. Single-threaded: held in an `Rc<RefCell<_>>` and
//! borrowed only inside a `poll` function, never across an `.await`.
//!
//! An idle connection keeps no read buffer: a request head is read into a buffer on
//! the stack and only its bytes are kept.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker, ready};

use bytes::{Bytes, BytesMut};
use hyper::body::Frame;
use tokio::io::{AsyncReadExt, AsyncWrite};

use crate::worker::body::http1::{BodyError, BodySource};
use crate::worker::io::Io;

use crate::worker::io::stack_read::poll_read_on_stack;
use crate::worker::runtime::tick::{TickListing, Ticks};
use culvert_wire::{
    BodyDecoder, BodyFraming, Chunk, HeadLimits, RequestHead, WireError, parse_request_head,
};

/// Bytes reserved when a request head needs another read.
const HEAD_READ: usize = 4 * 1024;
/// Bytes reserved for one read of a request body.
const BODY_READ: usize = 16 * 1024;
/// The interim answer to `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// One client connection: its IO, the bytes read and not yet used, and the body of
/// the request being served.
pub(crate) struct Conn {
    io: Box<dyn Io>,
    read: BytesMut,
    /// How large a request head may be.
    head_limits: HeadLimits,
    /// The body of the current request.
    body: BodyDecoder,
    /// Bytes of `100 Continue` still to be written before the body is first read.
    continue_due: usize,
    /// Counts requests, so a body kept past its exchange reads nothing.
    exchange: u64,
    /// The connection's task in the worker's tick list (its requests in flight
    /// count ticks).
    tick_listing: TickListing,
}

impl Conn {
    /// A connection whose first bytes, `read`, were taken off `io` already, and
    /// whose request heads may be as large as `head_limits`.
    pub(crate) fn new(io: Box<dyn Io>, read: BytesMut, head_limits: HeadLimits) -> Self {
        Self {
            io,
            read,
            head_limits,
            body: BodyDecoder::request(BodyFraming::Empty),
            continue_due: 0,
            exchange: 0,
            tick_listing: TickListing::default(),
        }
    }

    /// The next request head, if the bytes read so far hold one.
    pub(super) fn parse_head(&mut self) -> Result<Option<RequestHead>, WireError> {
        if self.read.is_empty() {
            return Ok(None);
        }
        parse_request_head(&mut self.read, self.head_limits)
    }

    /// Whether bytes the client sent wait unparsed (part of a request head).
    pub(super) fn has_unparsed_bytes(&self) -> bool {
        !self.read.is_empty()
    }

    /// Reads more of a request head; `Ok(0)` when the client closed.
    pub(super) fn poll_read_head(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if !self.read.is_empty() {
            return self.poll_fill(cx, HEAD_READ);
        }
        // Nothing pending: read on the stack so an idle connection holds no buffer.
        poll_read_on_stack(&mut self.io, cx, |bytes| self.read = BytesMut::from(bytes))
    }

    /// Whether the client may have sent bytes not read yet: a body not read to its
    /// end, or bytes past the last head.
    pub(super) fn may_have_unread(&self) -> bool {
        !self.body.is_done() || !self.read.is_empty()
    }

    /// Reads and drops what the client sends (a closing connection); `Ok(0)` once
    /// the client has closed.
    pub(super) fn poll_discard(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        self.read = BytesMut::new();
        poll_read_on_stack(&mut self.io, cx, |_| {})
    }

    /// Lets go of the read buffer when nothing is left in it.
    pub(super) fn release_buffer(&mut self) {
        if self.read.is_empty() && self.read.capacity() > 0 {
            self.read = BytesMut::new();
        }
    }

    /// Starts the body of a new request; returns the exchange it belongs to.
    pub(super) fn start_body(&mut self, framing: BodyFraming, expect_continue: bool) -> u64 {
        self.exchange += 1;
        self.body = BodyDecoder::request(framing);
        self.continue_due = if expect_continue && !self.body.is_done() {
            CONTINUE.len()
        } else {
            0
        };
        self.exchange
    }

    /// Consumes what is left of the current body when all of it has arrived already
    /// (a small body the proxy answered without reading); `true` when the body is
    /// over, so the next request can be read.
    pub(super) fn finish_buffered_body(&mut self) -> bool {
        loop {
            match self.body.decode(&mut self.read) {
                Ok(Chunk::Data(_)) => {}
                Ok(Chunk::Trailers(_) | Chunk::End) => return true,
                Ok(Chunk::Incomplete) | Err(_) => return false,
            }
        }
    }

    fn poll_continue(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.continue_due > 0 {
            let from = CONTINUE.len() - self.continue_due;
            let written = ready!(Pin::new(&mut self.io).poll_write(cx, &CONTINUE[from..]))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.continue_due -= written;
        }
        Pin::new(&mut self.io).poll_flush(cx)
    }

    /// Reads into the buffer, reserving `reserve` bytes when it is nearly full.
    fn poll_fill(&mut self, cx: &mut Context<'_>, reserve: usize) -> Poll<io::Result<usize>> {
        if self.read.capacity() - self.read.len() < 1024 {
            self.read.reserve(reserve);
        }
        let read = pin!(self.io.read_buf(&mut self.read));
        Future::poll(read, cx)
    }

    /// Writes `buf[*written..]`, advancing `written`; when `last`, as the last
    /// bytes before the connection is shut down (see [`Io::poll_write_last`]).
    pub(super) fn poll_write_all(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
        written: &mut usize,
        last: bool,
    ) -> Poll<io::Result<()>> {
        while *written < buf.len() {
            let io = Pin::new(&mut *self.io);
            let left = &buf[*written..];
            let n = ready!(if last {
                io.poll_write_last(cx, left)
            } else {
                io.poll_write(cx, left)
            })?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }

    pub(super) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    pub(super) fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    /// Takes the connection's IO and the bytes read past the last head (for an
    /// upgrade, or to close it); what is left reads as closed, and a body of an
    /// earlier request fails.
    pub(super) fn take_io(&mut self) -> (Box<dyn Io>, BytesMut) {
        self.end_exchange();
        let io = std::mem::replace(&mut self.io, Box::new(tokio::io::empty()));
        (io, std::mem::take(&mut self.read))
    }

    /// Ends the current exchange: its body, wherever it is held, fails from now on.
    pub(super) fn end_exchange(&mut self) {
        self.body = BodyDecoder::abandoned();
        self.exchange += 1;
        self.continue_due = 0;
    }

    /// The final response is being written: a `100 Continue` may no longer be sent.
    pub(super) fn answered(&mut self) {
        self.continue_due = 0;
    }

    /// Has the connection's task woken at the next tick.
    pub(super) fn wake_next_tick(&mut self, ticks: &Ticks, waker: &Waker) {
        ticks.wake_next(waker, &mut self.tick_listing);
    }

    /// Ready when the client has closed or broken the connection. Pending while a
    /// request body is being read (its reader sees the close) or once more than a
    /// head's worth of bytes waits unread.
    pub(super) fn poll_client_gone(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while self.body.is_done() && self.read.len() <= self.head_limits.max_bytes() {
            let read = &mut self.read;
            match ready!(poll_read_on_stack(&mut self.io, cx, |bytes| {
                read.extend_from_slice(bytes);
            })) {
                Ok(0) | Err(_) => return Poll::Ready(()),
                Ok(_) => {}
            }
        }
        Poll::Pending
    }
}

impl BodySource for Conn {
    fn body_remaining(&self, exchange: u64) -> Option<u64> {
        if exchange == self.exchange {
            self.body.remaining()
        } else {
            None
        }
    }

    fn poll_body(
        &mut self,
        cx: &mut Context<'_>,
        exchange: u64,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if exchange != self.exchange || self.body.is_failed() {
            // Never a clean end: the reader would take a cut body for a whole one.
            return Poll::Ready(Some(Err(BodyError::Broken)));
        }
        if self.continue_due > 0 {
            ready!(self.poll_continue(cx)).map_err(BodyError::Io)?;
        }
        loop {
            match self.body.decode(&mut self.read) {
                Ok(Chunk::Data(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Ok(Chunk::Trailers(trailers)) => {
                    return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                }
                Ok(Chunk::End) => return Poll::Ready(None),
                Ok(Chunk::Incomplete) => {}
                Err(error) => return Poll::Ready(Some(Err(BodyError::Wire(error)))),
            }
            let error = match ready!(self.poll_fill(cx, BODY_READ)) {
                Ok(0) => match self.body.end_of_input() {
                    Ok(()) => continue,
                    Err(error) => BodyError::Wire(error),
                },
                Ok(_) => continue,
                Err(error) => BodyError::Io(error),
            };
            self.body = BodyDecoder::abandoned();
            return Poll::Ready(Some(Err(error)));
        }
    }
}
