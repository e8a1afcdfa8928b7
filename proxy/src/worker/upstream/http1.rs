//! HTTP/1.1 exchanges with a backend, driven by the request's own task: the head
//! (and a small body) leaves in one write, the response head is parsed from the
//! connection's read buffer, and the response body is read by [`ResponseBody`] as
//! the client side polls it. No connection task, no channel between the two: the
//! request path costs two reads and writes on the wire and little else.
//!
//! A connection goes back to its worker's pool the moment its response body has
//! been read to the end (before the last frame is handed on), so keep-alive reuse
//! never waits for the client. A streamed request body is written while the
//! response head is awaited, so a backend that answers early (a `413`) is heard.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker, ready};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{
    Http1Head, InterimHeads, PoolKey, RequestBody, UpstreamError, UpstreamStream, Upstreams,
};
use crate::BoxError;
use crate::worker::body::CountedBody;
use crate::worker::io::stack_read::poll_read_on_stack;
use culvert_wire::{
    BodyDecoder, BodyFraming, CarriesRawFields, Chunk, FieldsAs, RawFields, ResponseHead,
    encode_chunk_start, encode_last_chunk, encode_request_head, parse_response_head,
};

/// Bytes reserved for the first read of an exchange: a response head and a small
/// body fit, and a small buffer stays in cache.
const FIRST_READ: usize = 4 * 1024;
/// The most reserved for one read, reached by doubling while reads fill the buffer.
const MAX_READ: usize = 64 * 1024;
/// A buffered request body up to this size goes out in the same write as the head.
const COALESCE_BODY: usize = 16 * 1024;
/// Room first reserved for a request head.
const HEAD_WRITE: usize = 512;
/// The largest head buffer a connection keeps for its next request.
const KEEP_HEAD_WRITE: usize = 4 * 1024;

/// An HTTP/1.1 connection to a backend, idle or in use.
pub(crate) struct Connection {
    stream: UpstreamStream,
    read_buf: BytesMut,
    /// Where request heads are encoded, kept from one exchange to the next.
    write_buf: Vec<u8>,
    /// Bytes to reserve for the next read.
    next_read: usize,
    /// When the connection last went idle.
    idle_since: Instant,
}

/// The pool a connection returns to once its exchange is over.
pub(crate) struct Home {
    pub(crate) upstreams: Rc<Upstreams>,
    pub(crate) key: PoolKey,
}

/// Why an exchange produced no response.
pub(crate) enum ExchangeError {
    /// A reused connection turned out closed before the backend could have acted on
    /// the request; here is the body back, to send on a new connection.
    Stale(RequestBody),
    /// The exchange failed; the request is spent.
    Failed(UpstreamError),
}

impl Connection {
    #[allow(
        clippy::disallowed_methods,
        reason = "the worker is the IO layer and owns the clock"
    )]
    pub(crate) fn new(stream: UpstreamStream) -> Self {
        Self {
            stream,
            read_buf: BytesMut::new(),
            write_buf: Vec::new(),
            next_read: FIRST_READ,
            idle_since: Instant::now(),
        }
    }

    /// The buffer to encode a request head into: the one the last exchange used.
    fn take_write_buf(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.write_buf);
        out.reserve(HEAD_WRITE);
        out
    }

    /// Keeps `out` (written out) for the next request, unless it grew large.
    fn keep_write_buf(&mut self, mut out: Vec<u8>) {
        if out.capacity() <= KEEP_HEAD_WRITE {
            out.clear();
            self.write_buf = out;
        }
    }

    /// Whether an idle connection can still carry a request: nothing arrived on it
    /// since its last exchange (no close, no stray bytes). Costs no syscall unless
    /// the socket was marked readable.
    pub(crate) fn still_open(&self) -> bool {
        self.stream.still_open()
    }

    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.read_buf.capacity() - self.read_buf.len() < self.next_read / 4 {
            self.read_buf.reserve(self.next_read);
        }
        let spare = self.read_buf.capacity() - self.read_buf.len();
        let read = ready!(pin!(self.stream.read_buf(&mut self.read_buf)).poll(cx));
        if matches!(read, Ok(n) if n == spare) {
            self.next_read = (self.next_read * 2).min(MAX_READ);
        }
        Poll::Ready(read)
    }

    /// Lets go of the read buffer between exchanges (an idle connection keeps no
    /// buffer, and the next exchange starts on a small, recently freed one); `now`
    /// is when it went idle.
    pub(crate) fn idle(&mut self, now: Instant) {
        self.read_buf = BytesMut::new();
        self.next_read = FIRST_READ;
        self.idle_since = now;
    }

    /// How long the connection has been idle at `now` (meaningful while it is in
    /// the pool).
    pub(crate) fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.idle_since)
    }
}

/// The request body as it goes out.
enum Outgoing {
    /// Known in full (possibly empty); kept so a stale connection can hand it back.
    Buffered(Bytes),
    /// Read from the client while it is sent.
    Streamed(CountedBody),
}

/// Sends one request on `conn` and returns the response with its body still on the
/// connection. `reused` says whether `conn` came from the pool (only then can it be
/// found stale); `fields` where the response keeps its fields. The head is encoded before the exchange starts; only what the
/// exchange needs is held across its waits (not an `async fn`, see
/// [`super::Upstreams::send`]).
pub(crate) fn exchange(
    mut conn: Connection,
    head: &Http1Head,
    body: RequestBody,
    home: Home,
    reused: bool,
    fields: FieldsAs,
) -> impl Future<Output = Result<Response<ResponseBody>, ExchangeError>> + '_ {
    let (outgoing, framing) = outgoing(body, head);
    let mut out = conn.take_write_buf();
    encode_request_head(
        &mut out,
        &head.method,
        head.target.as_str(),
        &head.headers,
        &head.added,
        framing,
    );
    async move {
        let head = match outgoing {
            Outgoing::Buffered(bytes) => {
                let coalesced = bytes.len() <= COALESCE_BODY;
                if coalesced {
                    out.extend_from_slice(&bytes);
                }
                // A first write into an idle connection the backend closed fails
                // before anything reached it; a later one may follow a head it acted
                // on, so only an idempotent request is sent again then.
                let first = conn.stream.write_all(&out).await;
                let rest = if first.is_ok() && !coalesced {
                    conn.stream.write_all(&bytes).await
                } else {
                    Ok(())
                };
                conn.keep_write_buf(out);
                let idempotent = is_idempotent(&head.method);
                if first.is_err() || rest.is_err() {
                    let resend = reused && (first.is_err() || idempotent);
                    return Err(if resend {
                        ExchangeError::Stale(RequestBody::Buffered(bytes.into()))
                    } else {
                        ExchangeError::Failed(UpstreamError::Protocol)
                    });
                }
                let stale = |conn: &Connection| reused && conn.read_buf.is_empty() && idempotent;
                let read = read_head(&mut conn.stream, &mut conn.read_buf, &head.method, fields);
                match read.await {
                    Ok(head) => head,
                    Err(_) if stale(&conn) => {
                        return Err(ExchangeError::Stale(RequestBody::Buffered(bytes.into())));
                    }
                    Err(error) => return Err(ExchangeError::Failed(error)),
                }
            }
            Outgoing::Streamed(body) => {
                let written = conn.stream.write_all(&out).await;
                conn.keep_write_buf(out);
                if written.is_err() {
                    return Err(if reused {
                        ExchangeError::Stale(RequestBody::Streamed(body))
                    } else {
                        ExchangeError::Failed(UpstreamError::Protocol)
                    });
                }
                // Boxed: uploads are the rare case, and this keeps the common future
                // small.
                Box::pin(streamed_exchange(
                    &mut conn,
                    body,
                    framing,
                    &head.method,
                    fields,
                ))
                .await
                .map_err(ExchangeError::Failed)?
            }
        };
        Ok(ResponseBody::start(conn, head, home))
    }
}

/// The body to send and its framing on the wire. A body that has already ended is
/// sent buffered (empty bodies included); `Content-Length: 0` is written when the
/// method expects a body or the client sent one.
fn outgoing(body: RequestBody, head: &Http1Head) -> (Outgoing, BodyFraming) {
    let bytes = match body {
        RequestBody::Buffered(full) => full_bytes(full),
        RequestBody::Streamed(streamed) if streamed.is_end_stream() => Bytes::new(),
        RequestBody::Streamed(streamed) => {
            let framing = match streamed.size_hint().exact() {
                Some(length) => BodyFraming::Length(length),
                None => BodyFraming::Chunked,
            };
            return (Outgoing::Streamed(streamed), framing);
        }
    };
    let announce = !bytes.is_empty()
        || head.headers.contains_key(http::header::CONTENT_LENGTH)
        || matches!(head.method, Method::POST | Method::PUT | Method::PATCH);
    let framing = if announce {
        BodyFraming::Length(bytes.len() as u64)
    } else {
        BodyFraming::Empty
    };
    (Outgoing::Buffered(bytes), framing)
}

/// The bytes of a body held in full (they are ready at once: no waiting).
fn full_bytes(mut full: Full<Bytes>) -> Bytes {
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(&mut full).poll_frame(&mut cx) {
        Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
        Poll::Ready(Some(Err(never))) => match never {},
        Poll::Ready(None) | Poll::Pending => Bytes::new(),
    }
}

/// Writes a streamed body while waiting for the response head, so an early answer
/// is taken as soon as it comes (the connection is then not reused).
///
/// Known limit: after an early head the rest of the upload is not sent, so a backend
/// that answers first and then keeps reading the body (full-duplex HTTP/1.1) is not
/// served; hyper's client kept writing. nginx, with its default request buffering,
/// does not offer that either.
async fn streamed_exchange(
    conn: &mut Connection,
    body: CountedBody,
    framing: BodyFraming,
    method: &Method,
    fields: FieldsAs,
) -> Result<ResponseHead, UpstreamError> {
    let Connection {
        stream, read_buf, ..
    } = conn;
    match stream {
        UpstreamStream::Tcp(tcp) => {
            let (reader, writer) = tcp.split();
            send_while_reading(reader, writer, read_buf, body, framing, method, fields).await
        }
        UpstreamStream::Tls(tls) => {
            let (reader, writer) = tokio::io::split(&mut **tls);
            send_while_reading(reader, writer, read_buf, body, framing, method, fields).await
        }
    }
}

/// Sends the body on `writer` while the response head is read from `reader`.
async fn send_while_reading<R, W>(
    mut reader: R,
    mut writer: W,
    read_buf: &mut BytesMut,
    body: CountedBody,
    framing: BodyFraming,
    method: &Method,
    fields: FieldsAs,
) -> Result<ResponseHead, UpstreamError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut send = pin!(send_body(&mut writer, body, framing));
    let mut read = pin!(read_head(&mut reader, read_buf, method, fields));
    tokio::select! {
        sent = &mut send => match sent {
            Ok(()) => read.await,
            // The backend stopped reading: it may still have answered.
            Err(SendError::Backend) => read.await.map(|mut head| {
                head.keep_alive = false;
                head
            }),
            Err(SendError::Client) => Err(UpstreamError::Protocol),
        },
        head = &mut read => head.map(|mut head| {
            head.keep_alive = false;
            head
        }),
    }
}

enum SendError {
    /// The client's body broke or did not match its declared length.
    Client,
    /// Writing to the backend failed.
    Backend,
}

async fn send_body<W: AsyncWrite + Unpin>(
    writer: &mut W,
    mut body: CountedBody,
    framing: BodyFraming,
) -> Result<(), SendError> {
    let chunked = framing == BodyFraming::Chunked;
    let declared = match framing {
        BodyFraming::Length(length) => Some(length),
        _ => None,
    };
    let mut sent = 0u64;
    let mut trailers: Option<HeaderMap> = None;
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| SendError::Client)?;
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(frame) => {
                if let Ok(map) = frame.into_trailers() {
                    trailers.get_or_insert_with(HeaderMap::new).extend(map);
                }
                continue;
            }
        };
        if data.is_empty() {
            continue;
        }
        sent += data.len() as u64;
        if declared.is_some_and(|declared| sent > declared) {
            return Err(SendError::Client);
        }
        if chunked {
            out.clear();
            encode_chunk_start(&mut out, data.len());
            out.extend_from_slice(&data);
            out.extend_from_slice(b"\r\n");
            writer.write_all(&out).await
        } else {
            writer.write_all(&data).await
        }
        .map_err(|_| SendError::Backend)?;
    }
    if declared.is_some_and(|declared| sent != declared) {
        return Err(SendError::Client);
    }
    if chunked {
        out.clear();
        encode_last_chunk(&mut out, trailers.as_ref());
        writer
            .write_all(&out)
            .await
            .map_err(|_| SendError::Backend)?;
    }
    Ok(())
}

/// Reads until a whole response head is in `read_buf` and takes it off.
async fn read_head<R: AsyncRead + Unpin>(
    reader: &mut R,
    read_buf: &mut BytesMut,
    method: &Method,
    fields: FieldsAs,
) -> Result<ResponseHead, UpstreamError> {
    loop {
        // Nothing to parse before the first read (the buffer starts empty).
        if !read_buf.is_empty() {
            let parsed = parse_response_head(read_buf, method, fields);
            if let Some(head) = parsed.map_err(|_| UpstreamError::Protocol)? {
                return Ok(head);
            }
        }
        let read = if read_buf.is_empty() {
            poll_fn(|cx| poll_read_on_stack(reader, cx, |bytes| *read_buf = BytesMut::from(bytes)))
                .await
        } else {
            read_buf.reserve(FIRST_READ);
            reader.read_buf(read_buf).await
        };
        match read {
            Ok(0) | Err(_) => return Err(UpstreamError::Protocol),
            Ok(_) => {}
        }
    }
}

/// RFC 9110 §9.2.2: a request that can be sent twice with the effect of once.
fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// A response body read off its connection as it is polled; the connection goes
/// back to the pool when the body ends cleanly and the response allowed it.
pub(crate) struct ResponseBody {
    conn: Option<Connection>,
    decoder: BodyDecoder,
    keep_alive: bool,
    home: Option<Home>,
    /// The response's fields, when they are kept raw.
    raw: Option<RawFields>,
}

impl ResponseBody {
    fn start(conn: Connection, mut head: ResponseHead, home: Home) -> Response<Self> {
        let mut body = Self {
            conn: Some(conn),
            decoder: BodyDecoder::response(head.framing),
            keep_alive: head.keep_alive,
            home: Some(home),
            raw: head.raw,
        };
        if body.decoder.is_done() {
            body.release();
        }
        let interim = std::mem::take(&mut head.interim);
        let mut response = head.response.map(|()| body);
        if !interim.is_empty() {
            response
                .extensions_mut()
                .insert(InterimHeads(Bytes::from(interim)));
        }
        response
    }

    /// The body is over: the connection goes home if it is clean, else closes.
    fn release(&mut self) {
        let (Some(conn), Some(home)) = (self.conn.take(), self.home.take()) else {
            return;
        };
        if self.keep_alive && conn.read_buf.is_empty() {
            home.upstreams.give_back(home.key, conn);
        }
    }

    fn fail(&mut self, error: impl Into<BoxError>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.conn = None;
        self.decoder = BodyDecoder::abandoned();
        Poll::Ready(Some(Err(error.into())))
    }
}

impl CarriesRawFields for ResponseBody {
    fn raw_fields(&self) -> Option<&RawFields> {
        self.raw.as_ref()
    }

    fn take_raw_fields(&mut self) -> Option<RawFields> {
        self.raw.take()
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            match this.decoder.decode(&mut conn.read_buf) {
                Ok(Chunk::Data(data)) => {
                    if this.decoder.is_done() {
                        this.release();
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(Chunk::Trailers(trailers)) => {
                    this.release();
                    return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                }
                Ok(Chunk::End) => {
                    this.release();
                    return Poll::Ready(None);
                }
                Ok(Chunk::Incomplete) => {}
                Err(error) => return this.fail(error),
            }
            match ready!(conn.poll_fill(cx)) {
                Ok(0) => match this.decoder.end_of_input() {
                    // Read until close: the connection is spent.
                    Ok(()) => this.conn = None,
                    Err(_) => {
                        return this
                            .fail("the backend closed the connection before the body ended");
                    }
                },
                Ok(_) => {}
                Err(error) => return this.fail(error),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.decoder.is_done()
    }

    fn size_hint(&self) -> SizeHint {
        self.decoder
            .remaining()
            .map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}
