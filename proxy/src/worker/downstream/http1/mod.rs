//! HTTP/1.1 (and 1.0) served on a client connection by our own codec
//! (the `culvert-wire` crate): request heads parsed in place, bodies streamed to the
//! proxy as it polls them, responses written with the framing their body allows,
//! keep-alive and pipelined requests (answered in order), `Expect: 100-continue`,
//! and upgrades (the connection handed over once the `101` is written).
//!
//! The connection closes after a response when the client asked for it, when an
//! HTTP/1.0 client did not ask to keep it, when a request body was left unread (its
//! rest is not waited for), when a body was cut short, or when the worker drains.
//! A clear-text request that asks for h2c by upgrade switches the connection to
//! HTTP/2 (see [`super::h2c`]).
//! Malformed heads are answered 400, heads over the size limits 431, and the
//! connection closes. Between requests a connection may idle for the keep-alive
//! timeout; from the first byte of a request (or the connection's start) the
//! client gets the header read timeout to send the whole head, and is answered 408
//! if it sent part of one by then (`ClientLimits`). Both are measured from the
//! worker tick in which the wait began: the timer is reset at most once per tick
//! unless what is awaited changes, so it is not rearmed for every request of a
//! busy connection.

use std::cell::RefCell;
use std::future::poll_fn;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use futures_util::FutureExt as _;
use futures_util::future::{Either, ready};
use http::{Method, Response, StatusCode, Version};
use pin_project_lite::pin_project;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep, sleep};

use super::h2c;
use crate::limits::ClientLimits;
use crate::metrics::Refusal;
use crate::pipeline::fields::upgrade_protocol;
use crate::pipeline::{ConnectionInfo, Transport};
use crate::worker::body::ClientBody;
use crate::worker::body::http1::{BodySource, Http1Body};
use crate::worker::exchange::record::RecordedBody;
use crate::worker::exchange::{ClientUpgrade, Worker};
use crate::worker::io::{Io, Prefixed, Upgraded};
use crate::worker::runtime::date::with_http_date;
use crate::worker::runtime::drain::{Drain, DrainWatch};
use culvert_wire::{
    BodyFraming, RequestHead, ResponseBodyFraming, WireError, encode_response_head, error_response,
};

mod conn;
mod respond;
#[cfg(test)]
mod sizes;

use conn::Conn;
use respond::{Asked, write_last, write_out, write_response};

/// The answer to a client too slow to send its request head.
const REQUEST_TIMEOUT: &[u8] =
    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// Worker ticks a request is in flight before the connection is watched for the
/// client going away (1 to 2 s).
const WATCH_AFTER_TICKS: u32 = 2;
/// Longest a closing connection keeps reading what the client still sends.
const LINGER: Duration = Duration::from_secs(5);
/// Most bytes a closing connection reads and drops.
const LINGER_BYTES: usize = 1024 * 1024;

/// A connection switched to h2c by an upgrade request: the `101` is written.
pub(crate) struct SwitchedToH2c {
    pub(crate) io: Box<dyn Io>,
    /// What the client sent past the upgrade request.
    pub(crate) read: BytesMut,
    /// The upgrade request as the HTTP/2 frame of stream 1 (see [`super::h2c`]).
    pub(crate) stream_one: Vec<u8>,
}

/// Serves requests on `io` (whose first bytes, `read`, were taken off it already)
/// until the client closes, a response ends the connection, or the worker drains;
/// or until a clear-text request switches the connection to h2c, which is then
/// returned to be served as HTTP/2.
pub(super) async fn serve(
    worker: &Rc<Worker>,
    io: Box<dyn Io>,
    read: BytesMut,
    info: &ConnectionInfo,
    drain: &mut DrainWatch<'_>,
) -> Option<SwitchedToH2c> {
    let limits = worker.limits();
    let conn = Rc::new(RefCell::new(Conn::new(io, read, limits.request_head)));
    let mut deadline = pin!(sleep(limits.header_read_timeout));
    // What the deadline was last set for, and in which tick.
    let mut deadline_wait = HeadWait::Head;
    let mut deadline_tick = worker.ticks().now();
    // Whether a request was answered on this connection (later ones may idle first).
    let mut answered = false;
    // Ends with the head refused, if it was, for a connection that closes.
    let refused = 'serve: loop {
        let head = 'head: loop {
            // A statement, so the parse result (hundreds of bytes) is not kept in
            // this future while the connection waits idle below.
            match conn.borrow_mut().parse_head() {
                Ok(Some(head)) => break 'head head,
                Err(error) => break 'serve Some(error),
                Ok(None) => {}
            }
            let wait = if answered && !conn.borrow().has_unparsed_bytes() {
                HeadWait::Idle
            } else {
                HeadWait::Head
            };
            let tick = worker.ticks().now();
            if tick != deadline_tick || wait != deadline_wait {
                deadline_tick = tick;
                deadline_wait = wait;
                deadline
                    .as_mut()
                    .reset(Instant::now() + wait.timeout(limits));
            }
            tokio::select! {
                biased;
                head = read_head(&conn, wait) => match head {
                    ReadHead::Head(head) => break 'head head,
                    ReadHead::Refused(error) => break 'serve Some(error),
                    // The next request began: its head gets the header read timeout.
                    ReadHead::Started => {}
                    ReadHead::Closed => return None,
                },
                () = drain.drained() => return None,
                () = deadline.as_mut() => {
                    // Part of a head came and the rest did not: say so. A connection
                    // idle between requests just closes.
                    if conn.borrow().has_unparsed_bytes() {
                        worker.stats().refused(Refusal::HeaderTimeout);
                        let _ = write_last(&conn, &mut REQUEST_TIMEOUT.to_vec()).await;
                    }
                    return None;
                }
            }
        };
        // An upgrade names `Upgrade` in `Connection`: nothing is looked up unless
        // `Connection` named a field.
        let clear_text = info.transport == Transport::Plain && !info.tunnel;
        if clear_text && head.names_fields && h2c::wants_h2c(&head.request, head.body) {
            if let Some(stream_one) = h2c::stream_one(&head.request) {
                return switch_to_h2c(&conn, stream_one).await;
            }
        }
        // Boxed: the request's future (several kilobytes) exists only while a request
        // is in flight, so an idle kept-alive connection holds just this loop.
        let exchange = Box::pin(serve_one(worker, &conn, head, info));
        match exchange.await {
            Next::Request => {
                answered = true;
                conn.borrow_mut().release_buffer();
            }
            Next::Close => break 'serve None,
            Next::Upgrade(handover) => {
                hand_over(&conn, handover);
                return None;
            }
        }
    };
    // Out of the loop, so what a request left behind is not kept while closing.
    if let Some(error) = refused {
        worker.stats().refused(refusal(error));
        let _ = write_last(&conn, &mut error_response(error).to_vec()).await;
    }
    close(&conn, deadline).await;
    None
}

/// How a refused request head is counted.
fn refusal(error: WireError) -> Refusal {
    match error {
        WireError::TooLarge | WireError::TargetTooLong => Refusal::TooLarge,
        WireError::UnsupportedCoding | WireError::UnsupportedVersion => Refusal::Unsupported,
        _ => Refusal::Malformed,
    }
}

/// Writes the `101` that switches to h2c and hands the connection over.
async fn switch_to_h2c(conn: &RefCell<Conn>, stream_one: Vec<u8>) -> Option<SwitchedToH2c> {
    write_out(conn, &mut h2c::SWITCHING.to_vec()).await.ok()?;
    poll_fn(|cx| conn.borrow_mut().poll_flush(cx)).await.ok()?;
    let (io, read) = conn.borrow_mut().take_io();
    Some(SwitchedToH2c {
        io,
        read,
        stream_one,
    })
}

/// What a connection waits for between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadWait {
    /// The rest of a request head (or the first request's): the header read
    /// timeout.
    Head,
    /// The first byte of the next request: the keep-alive timeout.
    Idle,
}

impl HeadWait {
    fn timeout(self, limits: &ClientLimits) -> Duration {
        match self {
            Self::Head => limits.header_read_timeout,
            Self::Idle => limits.keepalive_timeout,
        }
    }
}

/// What reading a request head came to.
#[allow(
    clippy::large_enum_variant,
    reason = "returned once per head and taken apart at once; boxing would allocate per request"
)]
enum ReadHead {
    Head(RequestHead),
    Refused(WireError),
    /// An idle connection received the first bytes of a head, not all of it.
    Started,
    /// The client closed (or broke) the connection first.
    Closed,
}

/// Reads until a whole request head is in, or, when the connection was idle
/// (`wait` is [`HeadWait::Idle`]), until any part of one is.
async fn read_head(conn: &RefCell<Conn>, wait: HeadWait) -> ReadHead {
    loop {
        match poll_fn(|cx| conn.borrow_mut().poll_read_head(cx)).await {
            Ok(0) | Err(_) => return ReadHead::Closed,
            Ok(_) => {}
        }
        match conn.borrow_mut().parse_head() {
            Ok(Some(head)) => return ReadHead::Head(head),
            Err(error) => return ReadHead::Refused(error),
            Ok(None) if wait == HeadWait::Idle => return ReadHead::Started,
            Ok(None) => {}
        }
    }
}

/// What the connection does after an exchange.
enum Next {
    Request,
    Close,
    /// The `101` is written: the connection goes to the backend splice.
    Upgrade(oneshot::Sender<Upgraded>),
}

/// Answers one request.
///
/// Built from combinators, with the request handed to the worker by the call
/// itself: an `async fn` would hold the request head twice and the worker's future
/// twice (as a capture and as what it awaits), and this whole future is copied into
/// its box for every request.
fn serve_one<'a>(
    worker: &'a Rc<Worker>,
    conn: &'a Rc<RefCell<Conn>>,
    head: RequestHead,
    info: &'a ConnectionInfo,
) -> impl Future<Output = Next> + 'a {
    let RequestHead {
        request,
        body,
        keep_alive,
        expect_continue,
        trailers,
        names_fields,
    } = head;
    let asked = Asked {
        head: request.method() == Method::HEAD,
        http11: request.version() == Version::HTTP_11,
        keep_alive,
        trailers,
    };
    // An upgrade needs `Connection: upgrade`: no lookup unless `Connection` named a
    // field. A request with a body is forwarded as an ordinary one, its `Upgrade`
    // ignored (as RFC 9110 allows): the switch would have to wait for the body.
    let upgrade = (names_fields && body == BodyFraming::Empty)
        .then(|| upgrade_protocol(request.headers(), request.version()))
        .flatten();
    let exchange = conn.borrow_mut().start_body(body, expect_continue);
    let (handover, upgrade) = match upgrade {
        Some(_) => {
            let (handover, upgraded) = oneshot::channel();
            (Some(handover), Some(ClientUpgrade::Http1(upgraded)))
        }
        None => (None, None),
    };
    let body = Http1Body::new(Rc::clone(conn) as Rc<RefCell<dyn BodySource>>, exchange);
    let request = request.map(|()| ClientBody::Http1(body));
    // The client going away drops the request, and with it the upstream exchange
    // (nginx's default, `proxy_ignore_client_abort off`).
    let answered = UntilGone {
        answer: worker.handle_request(request, upgrade, info),
        gone: client_gone(worker, conn),
    };
    answered.then(move |response| match response {
        None => Either::Left(ready(Next::Close)),
        Some(response) => Either::Right(answer(conn, response, asked, handover, worker.drain())),
    })
}

/// Writes the response to the request `asked` described; what the connection does
/// next.
fn answer<'a>(
    conn: &'a Rc<RefCell<Conn>>,
    response: Response<RecordedBody>,
    asked: Asked,
    handover: Option<oneshot::Sender<Upgraded>>,
    drain: &Drain,
) -> impl Future<Output = Next> + 'a {
    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
        // Boxed: rare, and it would keep the response in this future.
        return Either::Left(Box::pin(async move {
            match handover {
                Some(handover) => write_switch(conn, &response, handover).await,
                None => Next::Close,
            }
        }));
    }
    // A body still held elsewhere (an h2c upload hyper drives in its own task) may
    // still be read from this connection: it cannot carry another request.
    let body_released = Rc::strong_count(conn) == 1;
    let asked = Asked {
        keep_alive: asked.keep_alive
            && !drain.started()
            && body_released
            && conn.borrow_mut().finish_buffered_body(),
        ..asked
    };
    conn.borrow_mut().answered();
    Either::Right(
        write_response(conn, response, asked).map(|written| match written {
            Ok(true) => Next::Request,
            Ok(false) | Err(_) => Next::Close,
        }),
    )
}

pin_project! {
    /// The answer to a request, or `None` when the client went away first.
    struct UntilGone<A, G> {
        #[pin]
        answer: A,
        #[pin]
        gone: G,
    }
}

impl<A: Future, G: Future<Output = ()>> Future for UntilGone<A, G> {
    type Output = Option<A::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(answer) = this.answer.poll(cx) {
            return Poll::Ready(Some(answer));
        }
        match this.gone.poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Writes the `101` head.
async fn write_switch<B>(
    conn: &RefCell<Conn>,
    response: &Response<B>,
    handover: oneshot::Sender<Upgraded>,
) -> Next {
    let mut out = Vec::with_capacity(512);
    with_http_date(|date| {
        encode_response_head(
            &mut out,
            response.status(),
            (None, response.headers()),
            ResponseBodyFraming::None,
            None,
            date,
        );
    });
    if write_out(conn, &mut out).await.is_err()
        || poll_fn(|cx| conn.borrow_mut().poll_flush(cx))
            .await
            .is_err()
    {
        return Next::Close;
    }
    Next::Upgrade(handover)
}

/// Hands the connection, with the bytes read past the upgrade request, to whoever
/// splices it to the backend.
fn hand_over(conn: &RefCell<Conn>, handover: oneshot::Sender<Upgraded>) {
    let (io, read) = conn.borrow_mut().take_io();
    let _ = handover.send(Prefixed::new(read, io));
}

/// Flushes and shuts the connection down (a TLS `close_notify`, then a FIN), then
/// closes it.
///
/// The shutdown comes first even on a clean connection: it sends the last
/// response's bytes, held for it (see [`io`]), in one segment with the FIN, where
/// a close with bytes unread by us would reset the connection and drop them.
/// When the client may still be sending (a request body left unread, bytes past the
/// last head), closing at once could reset the connection before the client has
/// read our last response; so the connection lingers like nginx's
/// `lingering_close`: what arrives after the shutdown is read and dropped until
/// the client closes, for at most [`LINGER`] and [`LINGER_BYTES`]. `timer` (the
/// connection's, no longer needed) times the linger.
async fn close(conn: &RefCell<Conn>, mut timer: Pin<&mut Sleep>) {
    let unread = conn.borrow().may_have_unread();
    // A body still held elsewhere fails from here on instead of reading on.
    conn.borrow_mut().end_exchange();
    let _ = poll_fn(|cx| conn.borrow_mut().poll_shutdown(cx)).await;
    if unread {
        let mut left = LINGER_BYTES;
        let drain = async {
            while left > 0 {
                match poll_fn(|cx| conn.borrow_mut().poll_discard(cx)).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => left = left.saturating_sub(read),
                }
            }
        };
        timer.as_mut().reset(Instant::now() + LINGER);
        tokio::select! {
            () = drain => {}
            () = timer => {}
        }
    }
    // Closed now, even if a body of the last request is still held somewhere.
    drop(conn.borrow_mut().take_io());
}

/// Resolves when the client closes or breaks the connection while its request is in
/// flight. Watched only once the request has been in flight for
/// [`WATCH_AFTER_TICKS`] worker ticks (a quick exchange pays for neither an extra
/// read nor a timer) and only while no request body is being read;
/// bytes the client sends meanwhile (a pipelined request) are kept.
async fn client_gone(worker: &Worker, conn: &RefCell<Conn>) {
    let ticks = worker.ticks();
    let watch_from = ticks.now() + u64::from(WATCH_AFTER_TICKS);
    poll_fn(|cx| {
        let mut conn = conn.borrow_mut();
        if ticks.now() < watch_from {
            conn.wake_next_tick(ticks, cx.waker());
            return Poll::Pending;
        }
        conn.poll_client_gone(cx)
    })
    .await;
}
