//! HTTP/1.1 on the wire, without IO (RFC 9112): the codec both sides of Culvert's
//! proxy speak. It reads and writes bytes in buffers and never touches a socket, so
//! it can be tested and fuzzed on its own.
//!
//! - `client`: writing a request head to a backend and parsing its response head;
//! - `server`: parsing a client's request head and writing the response head;
//! - `chunked`: the chunked transfer coding, both ways;
//! - `body`: reading a body of any framing off a buffer, both ways;
//! - `raw`: response fields forwarded as the bytes they arrived in;
//! - `lines`: fields the proxy adds to a request, kept as field lines;
//! - `client_hello`: a TLS ClientHello's server name and ALPN, read without
//!   consuming it (for routing TLS passthrough by SNI).
//!
//! Everything a peer sends is untrusted: a head over its [`HeadLimits`] (by default
//! [`MAX_HEAD`] bytes and [`MAX_HEADERS`] fields), a malformed line or conflicting `Content-Length` values
//! is a [`WireError`], never a panic. Header values are sliced out of the received
//! bytes, not copied.
#![forbid(unsafe_code)]

use std::mem::MaybeUninit;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};

mod body;
mod chunked;
mod client;
mod client_hello;
mod lines;
mod raw;
mod server;

pub use body::BodyDecoder;
pub use chunked::{Chunk, ChunkedDecoder, encode_chunk_start, encode_last_chunk};
pub use client::{
    FieldsAs, ResponseFraming, ResponseHead, encode_request_head, parse_response_head,
};
pub use client_hello::{ClientHello, HelloError, MAX_CLIENT_HELLO, Peeked, peek_client_hello};
pub use lines::FieldLines;
pub use raw::{CarriesRawFields, RawFields, headers_mut};
pub use server::{
    RequestHead, ResponseBodyFraming, encode_response_head, error_response, parse_request_head,
};

/// How a request body is framed on the wire, in both directions: what a client's
/// head announced, and what the head written to a backend announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body and no framing field (a `GET`).
    Empty,
    /// `Content-Length: n` (a parsed request head never has 0 here: that is `Empty`).
    Length(u64),
    /// `Transfer-Encoding: chunked` (the length is not known up front).
    Chunked,
}

/// Largest message head (or trailer section) accepted unless [`HeadLimits`] say
/// otherwise.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header fields accepted in a message head or trailer section unless
/// [`HeadLimits`] say otherwise.
pub const MAX_HEADERS: usize = 128;

/// How large a request head a server accepts: over `max_bytes` it is refused with
/// `431` (`414` if the request line alone is that long), over `max_fields` with
/// `431`. Response heads and trailer sections keep the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadLimits {
    max_bytes: usize,
    max_fields: usize,
}

impl HeadLimits {
    /// [`MAX_HEAD`] bytes and [`MAX_HEADERS`] fields.
    pub const DEFAULT: Self = Self {
        max_bytes: MAX_HEAD,
        max_fields: MAX_HEADERS,
    };
    /// The smallest head size a limit may set: room for a request line and a few
    /// fields.
    pub const MIN_BYTES: usize = 1024;
    /// The largest head size a limit may set (offsets into a head are 32-bit, and a
    /// head is held whole while it is parsed).
    pub const MAX_BYTES: usize = 1024 * 1024;
    /// The most fields a limit may allow (their slots live on the stack while a
    /// head is parsed).
    pub const MAX_FIELDS: usize = 1024;

    /// Limits of `max_bytes` and `max_fields`, if each is within
    /// [`MIN_BYTES`](Self::MIN_BYTES)..=[`MAX_BYTES`](Self::MAX_BYTES) and
    /// 1..=[`MAX_FIELDS`](Self::MAX_FIELDS).
    pub fn new(max_bytes: usize, max_fields: usize) -> Result<Self, HeadLimitError> {
        if !(Self::MIN_BYTES..=Self::MAX_BYTES).contains(&max_bytes) {
            return Err(HeadLimitError::Bytes(max_bytes));
        }
        if !(1..=Self::MAX_FIELDS).contains(&max_fields) {
            return Err(HeadLimitError::Fields(max_fields));
        }
        Ok(Self {
            max_bytes,
            max_fields,
        })
    }

    /// The largest head accepted, in bytes.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The most fields a head may have.
    pub fn max_fields(&self) -> usize {
        self.max_fields
    }
}

impl Default for HeadLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A [`HeadLimits`] value out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeadLimitError {
    /// The head size is not within the bounds.
    #[error(
        "a request head limit of {0} bytes is outside {min}..={max}",
        min = HeadLimits::MIN_BYTES,
        max = HeadLimits::MAX_BYTES
    )]
    Bytes(usize),
    /// The field count is not within the bounds.
    #[error("a request field limit of {0} is outside 1..={max}", max = HeadLimits::MAX_FIELDS)]
    Fields(usize),
}

/// What a peer sent that is not HTTP/1.1 as we accept it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The start line, a header line or a chunk line does not parse.
    #[error("malformed HTTP/1.1 message")]
    Malformed,
    /// The head or a trailer section is larger than we accept.
    #[error("HTTP/1.1 message head too large")]
    TooLarge,
    /// `Content-Length` is not one number.
    #[error("invalid Content-Length")]
    BadLength,
    /// Request framing that cannot be read one way only (RFC 9112 §6.1, §6.3):
    /// `Transfer-Encoding` with `Content-Length`, in HTTP/1.0, with `chunked` not
    /// last or listed twice, or with an empty list element.
    #[error("ambiguous request framing")]
    BadFraming,
    /// A transfer coding other than `chunked` (`gzip, chunked`, `identity`): the
    /// proxy does not decode it, and dropping the label would corrupt the body.
    #[error("unsupported transfer coding")]
    UnsupportedCoding,
    /// The request line is longer than a head may be (a target too long to read).
    #[error("request target too long")]
    TargetTooLong,
    /// The request line names an HTTP major version other than 1.
    #[error("HTTP version not supported")]
    UnsupportedVersion,
    /// A body ended before its framing said it would (the peer closed, or the body
    /// was abandoned with its exchange).
    #[error("message body cut short")]
    Truncated,
    /// `101 Switching Protocols` to a request that asked for no upgrade.
    #[error("unexpected 101 from the backend")]
    UnexpectedUpgrade,
}

/// Uninitialised slots for the fields of one head.
pub(crate) type FieldSlots<'b, const N: usize = MAX_HEADERS> =
    [MaybeUninit<httparse::Header<'b>>; N];

/// Where a field's name and value sit in a head, so both can be taken from the head
/// once it has been split off the read buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldSpan {
    name: (u32, u32),
    value: (u32, u32),
}

impl FieldSpan {
    const EMPTY: Self = Self {
        name: (0, 0),
        value: (0, 0),
    };

    fn range((at, len): (u32, u32)) -> std::ops::Range<usize> {
        at as usize..at as usize + len as usize
    }

    /// The field's name in `head`.
    pub(crate) fn name<'h>(&self, head: &'h [u8]) -> &'h [u8] {
        &head[Self::range(self.name)]
    }

    /// The field's value in `head`.
    pub(crate) fn value<'h>(&self, head: &'h [u8]) -> &'h [u8] {
        &head[Self::range(self.value)]
    }
}

/// Fields of a head kept inline, without an allocation; a head with more (rare)
/// keeps its spans in a `Vec`.
const INLINE_SPANS: usize = 16;

/// The spans of a head's fields: inline for the usual few (clearing a fixed array
/// for the most a head may have would be kilobytes per head).
#[allow(
    clippy::large_enum_variant,
    reason = "a stack value that lives while one head is parsed; inline is the point"
)]
pub(crate) enum FieldSpans {
    Inline([FieldSpan; INLINE_SPANS], usize),
    Heap(Vec<FieldSpan>),
}

impl std::ops::Deref for FieldSpans {
    type Target = [FieldSpan];

    fn deref(&self) -> &[FieldSpan] {
        match self {
            Self::Inline(spans, len) => &spans[..*len],
            Self::Heap(spans) => spans,
        }
    }
}

/// The spans of `fields`, parsed out of a buffer starting at `base`.
pub(crate) fn field_spans(fields: &[httparse::Header<'_>], base: *const u8) -> FieldSpans {
    let base = base as usize;
    // Offsets fit in u32: a head larger than that is refused long before it parses.
    let span = |bytes: &[u8]| ((bytes.as_ptr() as usize - base) as u32, bytes.len() as u32);
    let spans = fields.iter().map(|field| FieldSpan {
        name: span(field.name.as_bytes()),
        value: span(field.value),
    });
    if fields.len() > INLINE_SPANS {
        return FieldSpans::Heap(spans.collect());
    }
    let mut inline = [FieldSpan::EMPTY; INLINE_SPANS];
    for (slot, span) in inline.iter_mut().zip(spans) {
        *slot = span;
    }
    FieldSpans::Inline(inline, fields.len())
}

/// The header map of `head`: every field `keep` accepts (it sees name and value and
/// may refuse the whole head). Values share `head`'s memory. The map has room for
/// just these fields: the forwarding fields the proxy adds to a request are not
/// kept in it (see [`FieldLines`]).
pub(crate) fn build_headers(
    head: &Bytes,
    spans: &[FieldSpan],
    mut keep: impl FnMut(&[u8], &[u8]) -> Result<bool, WireError>,
) -> Result<HeaderMap, WireError> {
    let mut headers = HeaderMap::with_capacity(spans.len());
    for span in spans {
        let name = span.name(head);
        if !keep(name, span.value(head))? {
            continue;
        }
        let name = HeaderName::from_bytes(name).map_err(|_| WireError::Malformed)?;
        let value = HeaderValue::from_maybe_shared(head.slice(FieldSpan::range(span.value)))
            .map_err(|_| WireError::Malformed)?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// The one length every `Content-Length` value of a message agrees on.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ContentLength(Option<u64>);

impl ContentLength {
    /// Adds one field value (itself possibly a list of equal numbers).
    pub(crate) fn add(&mut self, value: &[u8]) -> Result<(), WireError> {
        // One number, the usual value, is taken without splitting it.
        if let Some(parsed) = decimal(value) {
            return self.agree(parsed);
        }
        for item in value.split(|&b| b == b',') {
            let parsed = decimal(item.trim_ascii()).ok_or(WireError::BadLength)?;
            self.agree(parsed)?;
        }
        Ok(())
    }

    fn agree(&mut self, parsed: u64) -> Result<(), WireError> {
        if self.0.is_some_and(|seen| seen != parsed) {
            return Err(WireError::BadLength);
        }
        self.0 = Some(parsed);
        Ok(())
    }

    pub(crate) fn get(self) -> Option<u64> {
        self.0
    }
}

/// `digits` as a number: 1 to 20 ASCII digits that fit in a `u64`, else `None`
/// (any length the codec writes parses back).
fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, digit| {
        n.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })
}

/// The fields the codec itself reads: framing and connection management.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodecField {
    ContentLength,
    TransferEncoding,
    Connection,
    /// `Keep-Alive`, `Proxy-Connection`, `Trailer` and `Upgrade`: fields of one hop
    /// the codec only drops or passes on.
    OtherHop,
    Te,
    Expect,
    /// Any other field.
    Other,
}

impl CodecField {
    /// What `name` is. Every field of every head goes through this, so the length
    /// picks the candidate before any bytes are compared.
    pub(crate) fn of(name: &[u8]) -> Self {
        let is = |known: &[u8]| name.eq_ignore_ascii_case(known);
        match name.len() {
            2 if is(b"te") => Self::Te,
            6 if is(b"expect") => Self::Expect,
            7 if is(b"trailer") || is(b"upgrade") => Self::OtherHop,
            10 if is(b"connection") => Self::Connection,
            10 if is(b"keep-alive") => Self::OtherHop,
            14 if is(b"content-length") => Self::ContentLength,
            16 if is(b"proxy-connection") => Self::OtherHop,
            17 if is(b"transfer-encoding") => Self::TransferEncoding,
            _ => Self::Other,
        }
    }
}

/// What the `Transfer-Encoding` fields of a message list, all of them together
/// (codings may be split over several fields; the list is their concatenation).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TransferCodings {
    present: bool,
    chunked: u8,
    chunked_last: bool,
    other: bool,
    empty_element: bool,
}

impl TransferCodings {
    /// Adds one field value.
    pub(crate) fn add(&mut self, value: &[u8]) {
        self.present = true;
        for item in value.split(|&b| b == b',') {
            let coding = item.trim_ascii();
            if coding.is_empty() {
                self.empty_element = true;
            } else if coding.eq_ignore_ascii_case(b"chunked") {
                self.chunked = self.chunked.saturating_add(1);
                self.chunked_last = true;
            } else {
                self.other = true;
                self.chunked_last = false;
            }
        }
    }

    /// Whether the message had a `Transfer-Encoding` field at all.
    pub(crate) fn present(&self) -> bool {
        self.present
    }

    /// `Ok` when the list is exactly `chunked`, the only coding the proxy reads.
    pub(crate) fn check(&self) -> Result<(), WireError> {
        if self.empty_element || self.chunked > 1 || !self.chunked_last {
            return Err(WireError::BadFraming);
        }
        if self.other {
            return Err(WireError::UnsupportedCoding);
        }
        Ok(())
    }
}

/// The comma-separated items of a field value, trimmed, empty ones skipped.
pub(crate) fn tokens(value: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|token| !token.is_empty())
}

/// Appends `value` in decimal.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends one `name: value` line.
pub(crate) fn push_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests;
