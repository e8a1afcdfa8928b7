//! Byte carriers over one QUIC stream: [`TunnelBody`] (a request or response body
//! read from a stream) and [`TunnelStream`] (both directions of a websocket or TCP
//! stream, after its response head), plus [`TunnelUpgrade`], the request extension
//! that yields a `TunnelStream`.
//!
//! They own the bytes that were read past a stream head (the head decoder consumes
//! exactly one message; whatever the read brought in after it belongs to the body)
//! and hand them out before anything else. They never parse the bytes they carry.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, oneshot};

/// How much one body frame may hold.
const READ_CHUNK: usize = 32 * 1024;

/// Counts the streams a connection is serving, so a drain can wait for zero.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    /// Counts one more stream until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(Arc::clone(self))
    }

    /// How many streams are being served.
    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Resolves once no stream is being served.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// Keeps one stream counted in an [`InFlight`].
#[derive(Debug)]
pub(crate) struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The body of a request that arrived on a tunnel stream (or, in the simulator,
/// of a response read from one): raw bytes up to the peer's FIN.
///
/// When the head announced a `Content-Length`, the size hint is exact and a stream
/// that ends early or runs long is an error. Errors are `io::Error`s; a stream
/// reset by the peer is one.
pub struct TunnelBody {
    inner: Inner,
    /// Held while the body is alive (the simulator counts in-flight streams so).
    _guard: Option<InFlightGuard>,
}

enum Inner {
    Empty,
    Stream {
        leftover: Option<Bytes>,
        recv: quinn::RecvStream,
        buf: BytesMut,
        remaining: Option<u64>,
    },
    Done,
}

impl TunnelBody {
    /// A body with no bytes.
    pub fn empty() -> Self {
        Self {
            inner: Inner::Empty,
            _guard: None,
        }
    }

    /// A body of `leftover` followed by the rest of `recv`.
    pub(crate) fn from_stream(
        leftover: Bytes,
        recv: quinn::RecvStream,
        content_length: Option<u64>,
    ) -> Self {
        Self {
            inner: Inner::Stream {
                leftover: (!leftover.is_empty()).then_some(leftover),
                recv,
                buf: BytesMut::new(),
                remaining: content_length,
            },
            _guard: None,
        }
    }

    /// Keeps `guard` alive as long as the body.
    pub(crate) fn with_guard(mut self, guard: InFlightGuard) -> Self {
        self._guard = Some(guard);
        self
    }
}

impl fmt::Debug for TunnelBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.inner {
            Inner::Empty => "empty",
            Inner::Stream { .. } => "streaming",
            Inner::Done => "done",
        };
        f.debug_struct("TunnelBody").field("state", &state).finish()
    }
}

fn length_error(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

impl Body for TunnelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        let Inner::Stream {
            leftover,
            recv,
            buf,
            remaining,
        } = &mut this.inner
        else {
            return Poll::Ready(None);
        };
        let chunk = if let Some(chunk) = leftover.take() {
            chunk
        } else {
            buf.clear();
            buf.resize(READ_CHUNK, 0);
            let mut read_buf = ReadBuf::new(&mut buf[..]);
            let polled = Pin::new(&mut *recv).poll_read(cx, &mut read_buf);
            let n = match ready!(polled) {
                Ok(()) => read_buf.filled().len(),
                Err(e) => {
                    this.inner = Inner::Done;
                    return Poll::Ready(Some(Err(e)));
                }
            };
            if n == 0 {
                let early = remaining.is_some_and(|r| r > 0);
                this.inner = Inner::Done;
                return Poll::Ready(
                    early.then(|| Err(length_error("stream ended before content-length"))),
                );
            }
            buf.truncate(n);
            buf.split().freeze()
        };
        if let Some(left) = remaining {
            let len = chunk.len() as u64;
            if len > *left {
                this.inner = Inner::Done;
                return Poll::Ready(Some(Err(length_error("body longer than content-length"))));
            }
            *left -= len;
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Empty | Inner::Done => true,
            Inner::Stream {
                leftover,
                remaining,
                ..
            } => leftover.is_none() && *remaining == Some(0),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Empty | Inner::Done => SizeHint::with_exact(0),
            Inner::Stream {
                remaining: Some(r), ..
            } => SizeHint::with_exact(*r),
            Inner::Stream { .. } => SizeHint::default(),
        }
    }
}

/// Both directions of a websocket or TCP tunnel stream, after the response head.
///
/// Reads return what the edge sends (frames for a websocket, raw bytes for TCP);
/// writes go to the edge. `poll_shutdown` sends FIN. cloudflared tears such a
/// stream down as soon as either direction ends, and so should a handler.
pub struct TunnelStream {
    leftover: Bytes,
    recv: quinn::RecvStream,
    send: quinn::SendStream,
    _guard: Option<InFlightGuard>,
}

impl TunnelStream {
    pub(crate) fn new(
        leftover: Bytes,
        recv: quinn::RecvStream,
        send: quinn::SendStream,
        guard: Option<InFlightGuard>,
    ) -> Self {
        Self {
            leftover,
            recv,
            send,
            _guard: guard,
        }
    }

    /// Aborts both directions (RESET_STREAM and STOP_SENDING, code 0).
    pub fn abort(mut self) {
        let _ = self.send.reset(quinn::VarInt::from_u32(0));
        let _ = self.recv.stop(quinn::VarInt::from_u32(0));
    }
}

impl fmt::Debug for TunnelStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TunnelStream")
            .field("stream", &self.send.id())
            .finish()
    }
}

impl AsyncRead for TunnelStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.leftover.is_empty() {
            let n = self.leftover.len().min(buf.remaining());
            let head = self.leftover.split_to(n);
            buf.put_slice(&head);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.recv).poll_read(cx, buf)
    }
}

impl AsyncWrite for TunnelStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        AsyncWrite::poll_write(Pin::new(&mut self.send), cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        AsyncWrite::poll_flush(Pin::new(&mut self.send), cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        AsyncWrite::poll_shutdown(Pin::new(&mut self.send), cx)
    }
}

/// Request extension on websocket and TCP requests: resolves to the
/// [`TunnelStream`] once the handler's response head has been written (`101` for a
/// websocket, any `2xx` for TCP). Take it with
/// `request.extensions_mut().remove::<TunnelUpgrade>()` before returning the
/// response, and await [`TunnelUpgrade::stream`] in a task of its own.
#[derive(Clone)]
pub struct TunnelUpgrade {
    // `http::Extensions` needs `Clone + Send + Sync`; the receiver is taken once.
    rx: Arc<Mutex<Option<oneshot::Receiver<TunnelStream>>>>,
}

/// The sending half of a [`TunnelUpgrade`].
pub(crate) type UpgradeSender = oneshot::Sender<TunnelStream>;

impl TunnelUpgrade {
    pub(crate) fn pair() -> (UpgradeSender, Self) {
        let (tx, rx) = oneshot::channel();
        (
            tx,
            Self {
                rx: Arc::new(Mutex::new(Some(rx))),
            },
        )
    }

    /// The stream, once the response head is out. Fails if the response was not an
    /// upgrade (wrong status, or the handler failed), the stream went away, or
    /// another clone already took it.
    pub async fn stream(self) -> io::Result<TunnelStream> {
        let rx = self.rx.lock().ok().and_then(|mut slot| slot.take());
        let Some(rx) = rx else {
            return Err(io::Error::other("tunnel upgrade already taken"));
        };
        rx.await
            .map_err(|_| io::Error::other("tunnel stream was not upgraded"))
    }
}

impl fmt::Debug for TunnelUpgrade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TunnelUpgrade")
    }
}
