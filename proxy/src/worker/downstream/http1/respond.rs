//! Writing one response to an HTTP/1.1 client: the head with the framing chosen
//! for the body (`Content-Length` when the size is known, chunked when it is not,
//! until-close for an HTTP/1.0 client), then the body as it arrives.
//!
//! Frames that are ready are gathered into one buffer and written together (a small
//! answer leaves in one write with its head); the buffer is written whenever the
//! body has nothing more ready, so streaming is never held back.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::Poll;

use http::{HeaderMap, Response, StatusCode, header};
use hyper::body::Body;

use super::conn::Conn;
use crate::pipeline::fields::has_token;
use crate::worker::exchange::record::RecordedBody;
use crate::worker::runtime::date::with_http_date;
use crate::worker::upstream::InterimHeads;
use culvert_wire::{
    CarriesRawFields, ResponseBodyFraming, encode_chunk_start, encode_last_chunk,
    encode_response_head,
};

/// Gathered body bytes are written once they pass this size.
const WRITE_BATCH: usize = 64 * 1024;
/// Room reserved for a response head (it grows if a head needs more).
const HEAD_ROOM: usize = 512;

/// What the request said that shapes its response.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked {
    /// The method was `HEAD`: no body is written.
    pub(super) head: bool,
    /// The client speaks HTTP/1.1 (else 1.0).
    pub(super) http11: bool,
    /// The connection is to be kept after this response.
    pub(super) keep_alive: bool,
    /// The client takes trailers (`TE: trailers`); without it, a response's
    /// trailers are dropped (as hyper did).
    pub(super) trailers: bool,
}

/// The response could not be written whole (the client went away, the response
/// body failed or did not match its `Content-Length`): the connection must close.
#[derive(Debug)]
pub(super) struct Broken;

impl From<io::Error> for Broken {
    fn from(_: io::Error) -> Self {
        Self
    }
}

/// The framing of a response's body.
fn framing(response: &Response<RecordedBody>, asked: Asked) -> ResponseBodyFraming {
    let status = response.status();
    if asked.head
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return ResponseBodyFraming::None;
    }
    if let Some(length) = content_length(response.headers()) {
        return ResponseBodyFraming::Length(length);
    }
    let body = response.body();
    if body.is_end_stream() {
        return ResponseBodyFraming::Length(0);
    }
    if let Some(exact) = body.size_hint().exact() {
        return ResponseBodyFraming::Length(exact);
    }
    if asked.http11 {
        ResponseBodyFraming::Chunked
    } else {
        ResponseBodyFraming::UntilClose
    }
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Writes `response`; `Ok(true)` when the connection can serve another request.
///
/// The head is encoded by the call itself; the future holds only the body and
/// the write buffer. The buffer lives for one response (an idle connection keeps
/// none), sized for the head and as much of the body as is gathered before a write.
pub(super) fn write_response(
    conn: &RefCell<Conn>,
    response: Response<RecordedBody>,
    asked: Asked,
) -> impl Future<Output = Result<bool, Broken>> + '_ {
    let framing = framing(&response, asked);
    // The response itself may say `Connection: close` (a header filter can).
    let keep_alive = asked.keep_alive
        && !has_token(response.headers(), &header::CONNECTION, "close")
        && framing != ResponseBodyFraming::UntilClose;
    let body_room = match framing {
        ResponseBodyFraming::None => 0,
        ResponseBodyFraming::Length(length) => length.min(WRITE_BATCH as u64) as usize,
        ResponseBodyFraming::Chunked | ResponseBodyFraming::UntilClose => 4 * 1024,
    };
    let mut out = Vec::with_capacity(HEAD_ROOM + body_room);
    let connection: Option<&'static [u8]> = match (keep_alive, asked.http11) {
        (false, _) => Some(b"close"),
        (true, false) => Some(b"keep-alive"),
        (true, true) => None,
    };
    let (parts, mut body) = response.into_parts();
    if asked.http11 {
        if let Some(InterimHeads(interim)) = parts.extensions.get() {
            out.extend_from_slice(interim);
        }
    }
    let raw = body.take_raw_fields();
    with_http_date(|date| {
        encode_response_head(
            &mut out,
            parts.status,
            (raw.as_ref(), &parts.headers),
            framing,
            connection,
            date,
        );
    });
    async move {
        let out = &mut out;
        let result = match framing {
            ResponseBodyFraming::None => Ok(()),
            _ => write_body(conn, &mut body, (framing, asked.trailers), out).await,
        };
        if !out.is_empty() {
            // A connection that closes after this sends it as its last bytes. When
            // the body failed, what was gathered (the head, the body so far) still
            // goes before the close: the client sees the response cut short, not
            // a connection closed without an answer.
            write_all(conn, out, !keep_alive || result.is_err()).await?;
        }
        out.clear();
        result?;
        poll_fn(|cx| conn.borrow_mut().poll_flush(cx)).await?;
        Ok(keep_alive)
    }
}

/// Writes the body frames, gathering ready ones in `out` after the head.
async fn write_body(
    conn: &RefCell<Conn>,
    body: &mut RecordedBody,
    (framing, trailers_taken): (ResponseBodyFraming, bool),
    out: &mut Vec<u8>,
) -> Result<(), Broken> {
    let mut left = match framing {
        ResponseBodyFraming::Length(length) => length,
        _ => u64::MAX,
    };
    let mut last_chunk_written = false;
    loop {
        let polled = poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await;
        let frame = match polled {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                if !out.is_empty() {
                    write_out(conn, out).await?;
                    poll_fn(|cx| conn.borrow_mut().poll_flush(cx)).await?;
                }
                poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
            }
        };
        let frame = match frame {
            None => break,
            Some(Err(_)) => return Err(Broken),
            Some(Ok(frame)) => frame,
        };
        match frame.into_data() {
            Ok(data) => put_data(&data, framing, &mut left, out)?,
            Err(frame) => {
                // Trailers go out only in a chunked body to a client that takes
                // them; elsewhere they are dropped.
                if let (Ok(trailers), ResponseBodyFraming::Chunked, true) =
                    (frame.into_trailers(), framing, trailers_taken)
                {
                    encode_last_chunk(out, Some(&trailers));
                    last_chunk_written = true;
                    break;
                }
            }
        }
        if out.len() >= WRITE_BATCH {
            write_out(conn, out).await?;
        }
    }
    if framing == ResponseBodyFraming::Chunked && !last_chunk_written {
        encode_last_chunk(out, None);
    }
    // A body shorter than its length leaves the client waiting: close instead.
    if framing != ResponseBodyFraming::Chunked
        && framing != ResponseBodyFraming::UntilClose
        && left > 0
    {
        return Err(Broken);
    }
    Ok(())
}

/// Appends one data frame in the body's framing; a body longer than its length is
/// an error (what fits is not written either: the connection is closed).
fn put_data(
    data: &[u8],
    framing: ResponseBodyFraming,
    left: &mut u64,
    out: &mut Vec<u8>,
) -> Result<(), Broken> {
    match framing {
        ResponseBodyFraming::Chunked => {
            if !data.is_empty() {
                encode_chunk_start(out, data.len());
                out.extend_from_slice(data);
                out.extend_from_slice(b"\r\n");
            }
        }
        ResponseBodyFraming::Length(_) => {
            let len = data.len() as u64;
            if len > *left {
                return Err(Broken);
            }
            *left -= len;
            out.extend_from_slice(data);
        }
        ResponseBodyFraming::UntilClose => out.extend_from_slice(data),
        ResponseBodyFraming::None => {}
    }
    Ok(())
}

/// Writes all of `out` and empties it.
pub(super) async fn write_out(conn: &RefCell<Conn>, out: &mut Vec<u8>) -> io::Result<()> {
    write_all(conn, out, false).await
}

/// Writes all of `out`, the last bytes before the connection is shut down, and
/// empties it: on TCP they leave with the FIN (see `worker::io::Io`).
pub(super) async fn write_last(conn: &RefCell<Conn>, out: &mut Vec<u8>) -> io::Result<()> {
    write_all(conn, out, true).await
}

async fn write_all(conn: &RefCell<Conn>, out: &mut Vec<u8>, last: bool) -> io::Result<()> {
    let mut written = 0;
    poll_fn(|cx| {
        conn.borrow_mut()
            .poll_write_all(cx, out, &mut written, last)
    })
    .await?;
    out.clear();
    Ok(())
}
