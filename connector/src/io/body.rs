//! Byte carriers over one tunnel stream, QUIC or HTTP/2: [`TunnelBody`] (a request
//! or response body read from a stream) and [`TunnelStream`] (both directions of a
//! websocket or TCP stream, after its response head), plus [`TunnelUpgrade`], the
//! request extension that yields a `TunnelStream`.
//!
//! They own the bytes that were read past a QUIC stream head (the head decoder
//! consumes exactly one message; whatever the read brought in after it belongs to
//! the body) and hand them out before anything else. Over HTTP/2 they release flow
//! control credit as bytes are handed out, so a slow reader slows the edge down,
//! and a body with a `Content-Length` hands out its last bytes only together with
//! the stream's end (see [`TunnelBody`]). They never parse the bytes they carry.

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
pub struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    /// Counts one more stream until the guard drops.
    pub fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(Arc::clone(self))
    }

    /// How many streams are being served.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Resolves once no stream is being served.
    pub async fn wait_idle(&self) {
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
pub struct InFlightGuard(Arc<InFlight>);

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
///
/// Over HTTP/2, the chunk that completes the `Content-Length` is handed out only
/// once END_STREAM (or the trailers) has been read too, and then the body reports
/// its end. Readers such as hyper stop at the `Content-Length` and drop the body;
/// dropping an HTTP/2 stream that is still open resets it (CANCEL), and a peer's
/// END_STREAM sent in a DATA frame of its own (cloudflared, and our connector when
/// a body learns its end late, do that) then crosses the reset and lands on a
/// stream h2 has forgotten. h2 answers each such frame with a reset of its own and
/// closes the connection with `too_many_internal_resets` after 1,024 of them.
pub struct TunnelBody {
    inner: Inner,
    /// Held while the body is alive (the simulator counts in-flight streams so).
    _guard: Option<InFlightGuard>,
}

enum Inner {
    Empty,
    Stream {
        leftover: Option<Bytes>,
        recv: Source,
        buf: BytesMut,
        remaining: Option<u64>,
        /// HTTP/2: the chunk that completed `remaining`, kept until END_STREAM.
        held: Option<Bytes>,
    },
    /// HTTP/2 trailers that arrived while a chunk was held: handed out next.
    Trailers(http::HeaderMap),
    Done,
}

/// What one read of a stream brought.
enum Read {
    Data(Bytes),
    Trailers(http::HeaderMap),
    End,
}

/// Where a body's bytes come from.
enum Source {
    Quic(quinn::RecvStream),
    H2(h2::RecvStream),
}

/// Maps an HTTP/2 stream error to `io::Error` (a reset is `ConnectionReset`).
pub(crate) fn h2_io_error(error: h2::Error) -> io::Error {
    if error.is_io() {
        return error
            .into_io()
            .unwrap_or_else(|| io::Error::other("http/2 i/o error"));
    }
    let kind = if error.is_reset() || error.is_go_away() {
        io::ErrorKind::ConnectionReset
    } else {
        io::ErrorKind::Other
    };
    io::Error::new(kind, error)
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
    #[doc(hidden)]
    pub fn from_stream(
        leftover: Bytes,
        recv: quinn::RecvStream,
        content_length: Option<u64>,
    ) -> Self {
        Self {
            inner: Inner::Stream {
                leftover: (!leftover.is_empty()).then_some(leftover),
                recv: Source::Quic(recv),
                buf: BytesMut::new(),
                remaining: content_length,
                held: None,
            },
            _guard: None,
        }
    }

    /// The body of an HTTP/2 stream (the library checks `content-length` itself;
    /// it is kept for the size hint). Trailers are passed on as a trailers frame.
    #[doc(hidden)]
    pub fn from_h2(recv: h2::RecvStream, content_length: Option<u64>) -> Self {
        if recv.is_end_stream() {
            return Self::empty();
        }
        Self {
            inner: Inner::Stream {
                leftover: None,
                recv: Source::H2(recv),
                buf: BytesMut::new(),
                remaining: content_length,
                held: None,
            },
            _guard: None,
        }
    }

    /// Keeps `guard` alive as long as the body.
    #[doc(hidden)]
    pub fn with_guard(mut self, guard: InFlightGuard) -> Self {
        self._guard = Some(guard);
        self
    }
}

impl fmt::Debug for TunnelBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.inner {
            Inner::Empty => "empty",
            Inner::Stream { .. } => "streaming",
            Inner::Trailers(_) => "trailers",
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
        if matches!(this.inner, Inner::Trailers(_)) {
            if let Inner::Trailers(trailers) = std::mem::replace(&mut this.inner, Inner::Done) {
                return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
            }
        }
        let Inner::Stream {
            leftover,
            recv,
            buf,
            remaining,
            held,
        } = &mut this.inner
        else {
            return Poll::Ready(None);
        };
        loop {
            let read = if let Some(chunk) = leftover.take() {
                Read::Data(chunk)
            } else {
                let polled = match recv {
                    Source::Quic(recv) => {
                        ready!(poll_quic(recv, buf, cx)).map(|chunk| match chunk {
                            Some(chunk) => Read::Data(chunk),
                            None => Read::End,
                        })
                    }
                    Source::H2(recv) => match ready!(poll_h2(recv, cx)) {
                        Ok(read) => Ok(read),
                        // All the content arrived; a peer may end such a stream
                        // with RST_STREAM(NO_ERROR) instead of END_STREAM.
                        Err(e) if held.is_some() && e.reason() == Some(h2::Reason::NO_ERROR) => {
                            Ok(Read::End)
                        }
                        Err(e) => Err(h2_io_error(e)),
                    },
                };
                match polled {
                    Ok(read) => read,
                    Err(e) => {
                        this.inner = Inner::Done;
                        return Poll::Ready(Some(Err(e)));
                    }
                }
            };
            let chunk = match read {
                Read::Data(chunk) => chunk,
                Read::End | Read::Trailers(_) if remaining.is_some_and(|r| r > 0) => {
                    this.inner = Inner::Done;
                    return Poll::Ready(Some(Err(length_error(
                        "stream ended before content-length",
                    ))));
                }
                Read::End => {
                    let last = held.take();
                    this.inner = Inner::Done;
                    return Poll::Ready(last.map(|chunk| Ok(Frame::data(chunk))));
                }
                Read::Trailers(trailers) => {
                    let Some(last) = held.take() else {
                        this.inner = Inner::Done;
                        return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                    };
                    this.inner = Inner::Trailers(trailers);
                    return Poll::Ready(Some(Ok(Frame::data(last))));
                }
            };
            if let Some(left) = remaining {
                let len = chunk.len() as u64;
                if len > *left {
                    this.inner = Inner::Done;
                    return Poll::Ready(Some(Err(length_error("body longer than content-length"))));
                }
                *left -= len;
            }
            if chunk.is_empty() {
                continue;
            }
            if let Source::H2(recv) = recv {
                if *remaining == Some(0) && !recv.is_end_stream() {
                    // The content is complete but the stream is not: read on to
                    // END_STREAM before handing the last bytes out.
                    *held = Some(chunk);
                    continue;
                }
            }
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Empty | Inner::Done => true,
            Inner::Trailers(_) => false,
            // Over HTTP/2 only once END_STREAM was read too (see the type's docs).
            Inner::Stream {
                leftover,
                remaining,
                recv,
                held,
                ..
            } => {
                leftover.is_none()
                    && held.is_none()
                    && *remaining == Some(0)
                    && match recv {
                        Source::Quic(_) => true,
                        Source::H2(recv) => recv.is_end_stream(),
                    }
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Empty | Inner::Done | Inner::Trailers(_) => SizeHint::with_exact(0),
            Inner::Stream {
                remaining: Some(r),
                held,
                ..
            } => SizeHint::with_exact(*r + held.as_ref().map_or(0, |h| h.len() as u64)),
            Inner::Stream { .. } => SizeHint::default(),
        }
    }
}

/// Reads the next item of an HTTP/2 stream, handing the credit for data back (the
/// bytes now belong to the reader).
fn poll_h2(recv: &mut h2::RecvStream, cx: &mut Context<'_>) -> Poll<Result<Read, h2::Error>> {
    match ready!(recv.poll_data(cx)) {
        Some(Ok(data)) => {
            let _ = recv.flow_control().release_capacity(data.len());
            Poll::Ready(Ok(Read::Data(data)))
        }
        Some(Err(e)) => Poll::Ready(Err(e)),
        None => Poll::Ready(
            ready!(recv.poll_trailers(cx)).map(|trailers| match trailers {
                Some(trailers) => Read::Trailers(trailers),
                None => Read::End,
            }),
        ),
    }
}

/// Reads one chunk from a QUIC stream; `None` at FIN.
fn poll_quic(
    recv: &mut quinn::RecvStream,
    buf: &mut BytesMut,
    cx: &mut Context<'_>,
) -> Poll<io::Result<Option<Bytes>>> {
    buf.clear();
    buf.resize(READ_CHUNK, 0);
    let mut read_buf = ReadBuf::new(&mut buf[..]);
    ready!(Pin::new(recv).poll_read(cx, &mut read_buf))?;
    let n = read_buf.filled().len();
    if n == 0 {
        return Poll::Ready(Ok(None));
    }
    buf.truncate(n);
    Poll::Ready(Ok(Some(buf.split().freeze())))
}

/// Both directions of a websocket or TCP tunnel stream, after the response head.
///
/// Reads return what the edge sends (frames for a websocket, raw bytes for TCP);
/// writes go to the edge. `poll_shutdown` ends the write side (QUIC FIN, HTTP/2
/// END_STREAM). cloudflared tears such a stream down as soon as either direction
/// ends, and so should a handler.
pub struct TunnelStream {
    halves: Halves,
    _guard: Option<InFlightGuard>,
}

enum Halves {
    Quic {
        leftover: Bytes,
        recv: quinn::RecvStream,
        send: quinn::SendStream,
    },
    H2 {
        pending: Bytes,
        recv: h2::RecvStream,
        send: h2::SendStream<Bytes>,
        ended: bool,
    },
}

impl TunnelStream {
    /// Both directions of a QUIC stream, `leftover` first (read past its head).
    #[doc(hidden)]
    pub fn new(
        leftover: Bytes,
        recv: quinn::RecvStream,
        send: quinn::SendStream,
        guard: Option<InFlightGuard>,
    ) -> Self {
        Self {
            halves: Halves::Quic {
                leftover,
                recv,
                send,
            },
            _guard: guard,
        }
    }

    /// Both directions of an HTTP/2 stream whose heads were exchanged.
    #[doc(hidden)]
    pub fn from_h2(
        recv: h2::RecvStream,
        send: h2::SendStream<Bytes>,
        guard: Option<InFlightGuard>,
    ) -> Self {
        Self {
            halves: Halves::H2 {
                pending: Bytes::new(),
                recv,
                send,
                ended: false,
            },
            _guard: guard,
        }
    }

    /// Aborts both directions (QUIC: RESET_STREAM and STOP_SENDING, code 0;
    /// HTTP/2: RST_STREAM CANCEL).
    pub fn abort(mut self) {
        match &mut self.halves {
            Halves::Quic { recv, send, .. } => {
                let _ = send.reset(quinn::VarInt::from_u32(0));
                let _ = recv.stop(quinn::VarInt::from_u32(0));
            }
            Halves::H2 { send, .. } => send.send_reset(h2::Reason::CANCEL),
        }
    }
}

impl fmt::Debug for TunnelStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.halves {
            Halves::Quic { send, .. } => f
                .debug_struct("TunnelStream")
                .field("quic_stream", &send.id())
                .finish(),
            Halves::H2 { send, .. } => f
                .debug_struct("TunnelStream")
                .field("h2_stream", &send.stream_id().as_u32())
                .finish(),
        }
    }
}

impl AsyncRead for TunnelStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.halves {
            Halves::Quic { leftover, recv, .. } => {
                if !leftover.is_empty() {
                    let n = leftover.len().min(buf.remaining());
                    let head = leftover.split_to(n);
                    buf.put_slice(&head);
                    return Poll::Ready(Ok(()));
                }
                Pin::new(recv).poll_read(cx, buf)
            }
            Halves::H2 { pending, recv, .. } => {
                if pending.is_empty() {
                    match ready!(recv.poll_data(cx)) {
                        Some(Ok(data)) => {
                            let _ = recv.flow_control().release_capacity(data.len());
                            *pending = data;
                        }
                        Some(Err(e)) => return Poll::Ready(Err(h2_io_error(e))),
                        None => return Poll::Ready(Ok(())),
                    }
                }
                let n = pending.len().min(buf.remaining());
                let head = pending.split_to(n);
                buf.put_slice(&head);
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl AsyncWrite for TunnelStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.halves {
            Halves::Quic { send, .. } => AsyncWrite::poll_write(Pin::new(send), cx, buf),
            Halves::H2 { send, .. } => poll_h2_write(send, cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.halves {
            Halves::Quic { send, .. } => AsyncWrite::poll_flush(Pin::new(send), cx),
            // Frames go out as soon as the connection task writes them.
            Halves::H2 { .. } => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.halves {
            Halves::Quic { send, .. } => AsyncWrite::poll_shutdown(Pin::new(send), cx),
            Halves::H2 { send, ended, .. } => {
                if !*ended {
                    *ended = true;
                    send.send_data(Bytes::new(), true).map_err(h2_io_error)?;
                }
                Poll::Ready(Ok(()))
            }
        }
    }
}

/// Writes as much of `buf` as the HTTP/2 flow-control window allows.
pub(crate) fn poll_h2_write(
    send: &mut h2::SendStream<Bytes>,
    cx: &mut Context<'_>,
    buf: &[u8],
) -> Poll<io::Result<usize>> {
    if buf.is_empty() {
        return Poll::Ready(Ok(0));
    }
    send.reserve_capacity(buf.len());
    loop {
        let available = send.capacity();
        let polled = if available > 0 {
            Some(Ok(available))
        } else {
            ready!(send.poll_capacity(cx))
        };
        match polled {
            Some(Ok(0)) => continue,
            Some(Ok(n)) => {
                let n = n.min(buf.len());
                let chunk = Bytes::copy_from_slice(buf.get(..n).unwrap_or(buf));
                send.send_data(chunk, false).map_err(h2_io_error)?;
                return Poll::Ready(Ok(n));
            }
            Some(Err(e)) => return Poll::Ready(Err(h2_io_error(e))),
            None => {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "http/2 stream closed",
                )));
            }
        }
    }
}

/// Sends all of `data` on an HTTP/2 stream, waiting for flow-control credit; with
/// `end_stream`, the last DATA frame carries END_STREAM (an empty one if `data` is).
pub async fn h2_send_all(
    send: &mut h2::SendStream<Bytes>,
    mut data: Bytes,
    end_stream: bool,
) -> io::Result<()> {
    if data.is_empty() {
        if end_stream {
            send.send_data(Bytes::new(), true).map_err(h2_io_error)?;
        }
        return Ok(());
    }
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        let granted = match send.capacity() {
            0 => std::future::poll_fn(|cx| send.poll_capacity(cx)).await,
            available => Some(Ok(available)),
        };
        match granted {
            Some(Ok(0)) => {}
            Some(Ok(n)) => {
                let chunk = data.split_to(n.min(data.len()));
                send.send_data(chunk, end_stream && data.is_empty())
                    .map_err(h2_io_error)?;
            }
            Some(Err(e)) => return Err(h2_io_error(e)),
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "http/2 stream closed",
                ));
            }
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use std::future::poll_fn;
    use std::pin::Pin;
    use std::time::Duration;

    use bytes::Bytes;
    use http_body::Body;
    use http_body_util::BodyExt as _;

    use super::TunnelBody;

    /// An HTTP/2 client and server over an in-memory pipe, one request sent: the
    /// server's stream to answer on, and the client's response future.
    async fn exchange() -> (
        h2::server::SendResponse<Bytes>,
        h2::client::ResponseFuture,
        tokio::task::JoinHandle<()>,
    ) {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(async move {
            let mut conn = h2::server::handshake(a).await.unwrap();
            let (_request, respond) = conn.accept().await.unwrap().unwrap();
            (conn, respond)
        });
        let (mut client, conn) = h2::client::handshake(b).await.unwrap();
        let client_conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        let request = http::Request::get("http://test/").body(()).unwrap();
        let (response, _) = client.send_request(request, true).unwrap();
        let (mut conn, respond) = server.await.unwrap();
        let server_conn =
            tokio::spawn(async move { while let Some(Ok(_)) = conn.accept().await {} });
        let both = tokio::spawn(async move {
            let _ = tokio::join!(client_conn, server_conn);
        });
        (respond, response, both)
    }

    fn head(length: usize) -> http::Response<()> {
        http::Response::builder()
            .header("content-length", length)
            .body(())
            .unwrap()
    }

    /// Whether the body yields a frame within a short wait.
    async fn frame_within(body: &mut TunnelBody, wait: Duration) -> bool {
        tokio::time::timeout(wait, poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)))
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn the_last_content_length_bytes_wait_for_end_stream() {
        let (mut respond, response, conns) = exchange().await;
        let mut send = respond.send_response(head(5), false).unwrap();
        send.send_data(Bytes::from_static(b"hel"), false).unwrap();
        send.send_data(Bytes::from_static(b"lo"), false).unwrap();
        let response = response.await.unwrap();
        let mut body = TunnelBody::from_h2(response.into_body(), Some(5));
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first, "hel");
        // "lo" completes the content-length, but END_STREAM has not come yet.
        assert!(!frame_within(&mut body, Duration::from_millis(100)).await);
        assert!(!body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(2));
        send.send_data(Bytes::new(), true).unwrap();
        let last = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(last, "lo");
        // A reader stopping here (hyper does, at content-length) drops a stream
        // that is over, so nothing is reset.
        assert!(body.is_end_stream());
        assert!(body.frame().await.is_none());
        conns.abort();
    }

    #[tokio::test]
    async fn end_stream_with_the_last_bytes_ends_the_body_at_once() {
        let (mut respond, response, conns) = exchange().await;
        let mut send = respond.send_response(head(5), false).unwrap();
        send.send_data(Bytes::from_static(b"hello"), true).unwrap();
        let response = response.await.unwrap();
        let mut body = TunnelBody::from_h2(response.into_body(), Some(5));
        let data = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(data, "hello");
        assert!(body.is_end_stream());
        conns.abort();
    }

    #[tokio::test]
    async fn trailers_after_the_last_bytes_follow_them() {
        let (mut respond, response, conns) = exchange().await;
        let mut send = respond.send_response(head(5), false).unwrap();
        send.send_data(Bytes::from_static(b"hello"), false).unwrap();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-checksum", "1".parse().unwrap());
        send.send_trailers(trailers).unwrap();
        let response = response.await.unwrap();
        let mut body = TunnelBody::from_h2(response.into_body(), Some(5));
        let data = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(data, "hello");
        assert!(!body.is_end_stream());
        let trailers = body
            .frame()
            .await
            .unwrap()
            .unwrap()
            .into_trailers()
            .unwrap();
        assert_eq!(trailers["x-checksum"], "1");
        assert!(body.is_end_stream());
        assert!(body.frame().await.is_none());
        conns.abort();
    }

    #[tokio::test]
    async fn a_body_running_past_content_length_is_an_error() {
        let (mut respond, response, conns) = exchange().await;
        let mut send = respond.send_response(head(5), false).unwrap();
        send.send_data(Bytes::from_static(b"hello"), false).unwrap();
        send.send_data(Bytes::from_static(b"!"), true).unwrap();
        let response = response.await.unwrap();
        // h2 itself checks content-length (a PROTOCOL_ERROR reset); either way
        // the body fails and the held bytes are not handed out as complete.
        let mut body = TunnelBody::from_h2(response.into_body(), Some(5));
        assert!(body.frame().await.unwrap().is_err());
        conns.abort();
    }
}
