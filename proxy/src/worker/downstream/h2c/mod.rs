//! h2c by upgrade (RFC 7540 section 3.2): a clear-text HTTP/1.1 request with
//! `Upgrade: h2c` and one `HTTP2-Settings` field is answered `101 Switching
//! Protocols`, and the connection continues as HTTP/2 with that request as stream 1.
//!
//! The HTTP/2 side is hyper's, which only knows connections that start with the
//! client's preface. So the upgrade request is handed to it as what a client would
//! have sent: once the client's preface and first SETTINGS frame have arrived, a
//! HEADERS frame for stream 1 carrying the request is put after them. Its header
//! block uses only literal fields without indexing, so the HPACK table the
//! client's own later frames rely on is left as the client expects.
//!
//! An upgrade is taken only when it can be done cleanly: a request with a body, a
//! head too big for one frame, or a malformed `HTTP2-Settings` is answered over
//! HTTP/1.1 instead, as RFC 9110 lets a server ignore an `Upgrade`. The values in
//! `HTTP2-Settings` are not applied: the client's SETTINGS frame, which comes
//! before anything is sent on the new connection, says the same or newer.

use std::future::poll_fn;
use std::pin::Pin;

use bytes::BytesMut;
use http::header;
use http::{Request, Version};
use tokio::io::{AsyncRead, ReadBuf};

use crate::pipeline::fields::{has_token, strip_hop_by_hop};
use culvert_wire::BodyFraming;

/// The answer that switches the connection.
pub(super) const SWITCHING: &[u8] =
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";

/// The client connection preface (RFC 9113 section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An HTTP/2 frame header's length.
const FRAME_HEADER: usize = 9;
/// Largest frame payload a peer must accept before SETTINGS say otherwise.
const MAX_FRAME: usize = 16_384;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// Whether `request` asks for h2c and can be switched: HTTP/1.1 with `Upgrade`
/// listing `h2c` in a `Connection: upgrade` request, exactly one well-formed
/// `HTTP2-Settings`, and no body. The caller checks the connection is clear text.
pub(super) fn wants_h2c(request: &Request<()>, body: BodyFraming) -> bool {
    let headers = request.headers();
    let mut settings = headers.get_all("http2-settings").iter();
    let one_settings = match (settings.next(), settings.next()) {
        (Some(value), None) => is_settings_payload(value.as_bytes()),
        _ => false,
    };
    request.version() == Version::HTTP_11
        && body == BodyFraming::Empty
        && one_settings
        && has_token(headers, &header::CONNECTION, "upgrade")
        && has_token(headers, &header::UPGRADE, "h2c")
}

/// Whether `value` is base64url (unpadded, as RFC 7540 asks, or padded) of a
/// SETTINGS payload: six bytes per setting.
fn is_settings_payload(value: &[u8]) -> bool {
    let unpadded = value
        .strip_suffix(b"==")
        .or_else(|| value.strip_suffix(b"="));
    let unpadded = unpadded.unwrap_or(value);
    let alphabet = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
    let decoded = unpadded.len() / 4 * 3 + (unpadded.len() % 4).saturating_sub(1);
    unpadded.iter().all(alphabet) && unpadded.len() % 4 != 1 && decoded % 6 == 0
}

/// The HEADERS frame that carries `request` as stream 1, ended (the request has
/// no body); `None` when its header block does not fit in one frame.
pub(super) fn stream_one(request: &Request<()>) -> Option<Vec<u8>> {
    let headers = request.headers();
    let authority = request
        .uri()
        .authority()
        .map(|authority| authority.as_str().as_bytes())
        .or_else(|| headers.get(header::HOST).map(|host| host.as_bytes()))
        .unwrap_or_default();
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |path| path.as_str());
    let mut block = Vec::with_capacity(256);
    literal(&mut block, b":method", request.method().as_str().as_bytes());
    literal(&mut block, b":scheme", b"http");
    literal(&mut block, b":authority", authority);
    literal(&mut block, b":path", path.as_bytes());
    // The fields of this HTTP/1.1 connection stay behind, as when forwarding;
    // `Host` became `:authority`. What is kept goes in the request's order.
    let mut kept = headers.clone();
    strip_hop_by_hop(&mut kept);
    kept.remove(header::HOST);
    kept.remove("http2-settings");
    for name in headers.keys() {
        for value in kept.get_all(name) {
            literal(&mut block, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    if block.len() > MAX_FRAME {
        return None;
    }
    let length = u32::try_from(block.len()).ok()?.to_be_bytes();
    let mut frame = Vec::with_capacity(FRAME_HEADER + block.len());
    frame.extend_from_slice(&length[1..]);
    frame.extend_from_slice(&[HEADERS, END_STREAM | END_HEADERS]);
    frame.extend_from_slice(&1u32.to_be_bytes());
    frame.extend_from_slice(&block);
    Some(frame)
}

/// Appends a literal header field without indexing, new name, no Huffman coding
/// (RFC 7541 section 6.2.2).
fn literal(block: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    block.push(0x00);
    string(block, name);
    string(block, value);
}

/// Appends a string literal: its length as a 7-bit-prefix integer, then its bytes.
fn string(block: &mut Vec<u8>, bytes: &[u8]) {
    let mut length = bytes.len();
    if length < 0x7f {
        block.push(length as u8);
    } else {
        block.push(0x7f);
        length -= 0x7f;
        while length >= 0x80 {
            block.push((length as u8 & 0x7f) | 0x80);
            length >>= 7;
        }
        block.push(length as u8);
    }
    block.extend_from_slice(bytes);
}

/// Reads on `io`, after `read` (what came past the upgrade request), until the
/// client's preface and first frame are in, and returns the bytes the HTTP/2
/// server is to read first: those, then `stream_one`, then whatever followed. If
/// the client did not open with the preface and a SETTINGS frame, its bytes are
/// returned as they are and the HTTP/2 server refuses them itself. `None` when
/// the client closed first.
pub(super) async fn after_client_preface<I: AsyncRead + Unpin + ?Sized>(
    io: &mut I,
    mut read: BytesMut,
    stream_one: &[u8],
) -> Option<BytesMut> {
    loop {
        match first_frame_end(&read) {
            Some(Ok(end)) => {
                let rest = read.split_off(end);
                read.extend_from_slice(stream_one);
                read.unsplit(rest);
                return Some(read);
            }
            Some(Err(NotPreface)) => return Some(read),
            None => {}
        }
        let mut chunk = [0u8; 1024];
        let mut buf = ReadBuf::new(&mut chunk);
        poll_fn(|cx| Pin::new(&mut *io).poll_read(cx, &mut buf))
            .await
            .ok()?;
        if buf.filled().is_empty() {
            return None;
        }
        read.extend_from_slice(buf.filled());
    }
}

/// The client did not open with the preface and a SETTINGS frame.
struct NotPreface;

/// Where the client's first frame ends in `read`, if it has all arrived.
fn first_frame_end(read: &[u8]) -> Option<Result<usize, NotPreface>> {
    let seen = read.len().min(PREFACE.len());
    if read[..seen] != PREFACE[..seen] {
        return Some(Err(NotPreface));
    }
    let header = read.get(PREFACE.len()..PREFACE.len() + FRAME_HEADER)?;
    let length =
        usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    if header[3] != SETTINGS || length > MAX_FRAME {
        return Some(Err(NotPreface));
    }
    let end = PREFACE.len() + FRAME_HEADER + length;
    (read.len() >= end).then_some(Ok(end))
}

#[cfg(test)]
mod tests;
