//! The HTTP/1.1 client side of the wire, without IO: writing a request head,
//! parsing a response head (RFC 9112 §4–6) and decoding a chunked body (§7.1).
//!
//! Everything the backend sends is untrusted: a head over [`MAX_HEAD`] bytes or
//! [`MAX_HEADERS`] fields, a malformed line, conflicting `Content-Length` values or
//! an unexpected `101` is a [`WireError`], never a panic. Header values are sliced
//! out of the received bytes, not copied.

use std::mem::MaybeUninit;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode, Version};

use crate::worker::headers::HOP_BY_HOP;

/// Largest response head (or trailer section) accepted.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most header fields accepted in a response head or trailer section.
pub(crate) const MAX_HEADERS: usize = 128;
/// Longest chunk-size line (with extensions) accepted.
const MAX_CHUNK_LINE: usize = 4096;

/// What the backend sent that is not HTTP/1.1 as we accept it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WireError {
    /// The status line, a header line or a chunk line does not parse.
    #[error("malformed HTTP/1.1 message from the backend")]
    Malformed,
    /// The head or a trailer section is larger than we accept.
    #[error("response head from the backend is too large")]
    TooLarge,
    /// `Content-Length` is not one number.
    #[error("invalid Content-Length from the backend")]
    BadLength,
    /// `101 Switching Protocols` to a request that asked for no upgrade.
    #[error("unexpected 101 from the backend")]
    UnexpectedUpgrade,
}

/// How a request body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestFraming {
    /// No body and no framing header (a `GET` without a body).
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked` (the length is not known up front).
    Chunked,
}

/// How a response body ends (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseFraming {
    /// No body: a `HEAD` request, or a `1xx`, `204` or `304` answer.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Everything until the backend closes the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    pub(crate) response: Response<()>,
    pub(crate) framing: ResponseFraming,
    /// The connection may carry another request once this body has been read.
    pub(crate) keep_alive: bool,
}

/// Appends the request head: request line, every header but the framing ones (which
/// `framing` decides), then the framing header.
pub(crate) fn encode_request_head(
    out: &mut Vec<u8>,
    method: &Method,
    target: &str,
    headers: &HeaderMap,
    framing: RequestFraming,
) {
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in headers {
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match framing {
        RequestFraming::None => {}
        RequestFraming::Length(length) => {
            out.extend_from_slice(b"content-length: ");
            push_decimal(out, length);
            out.extend_from_slice(b"\r\n");
        }
        RequestFraming::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends the line that starts a chunk of `len` bytes.
pub(crate) fn encode_chunk_start(out: &mut Vec<u8>, len: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (usize::BITS - len.leading_zeros()).div_ceil(4).max(1);
    for shift in (0..digits).rev() {
        out.push(HEX[(len >> (shift * 4)) & 0xf]);
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends the last chunk and the trailer section.
pub(crate) fn encode_last_chunk(out: &mut Vec<u8>, trailers: Option<&HeaderMap>) {
    out.extend_from_slice(b"0\r\n");
    for (name, value) in trailers.into_iter().flatten() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn push_decimal(out: &mut Vec<u8>, mut value: u64) {
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

/// Takes one final response head off the front of `buf`, skipping interim `1xx`
/// answers; `Ok(None)` until the head is complete.
pub(crate) fn parse_response_head(
    buf: &mut BytesMut,
    method: &Method,
) -> Result<Option<ResponseHead>, WireError> {
    let config = httparse::ParserConfig::default();
    loop {
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut []);
        let len = match config.parse_response_with_uninit_headers(&mut parsed, buf, &mut slots) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(WireError::TooLarge);
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(WireError::TooLarge),
            Err(_) => return Err(WireError::Malformed),
        };
        let code = parsed.code.unwrap_or(0);
        let status = StatusCode::from_u16(code).map_err(|_| WireError::Malformed)?;
        if status == StatusCode::SWITCHING_PROTOCOLS {
            return Err(WireError::UnexpectedUpgrade);
        }
        if status.is_informational() {
            buf.advance(len);
            continue;
        }
        let version = if parsed.version == Some(1) {
            Version::HTTP_11
        } else {
            Version::HTTP_10
        };
        // Where each field sits in the head, so values can be sliced out of it once
        // it is split off the buffer.
        let base = buf.as_ptr() as usize;
        let spans: Vec<(usize, usize, usize, usize)> = parsed
            .headers
            .iter()
            .map(|field| {
                let name = field.name.as_ptr() as usize - base;
                let value = field.value.as_ptr() as usize - base;
                (name, field.name.len(), value, field.value.len())
            })
            .collect();
        let head = buf.split_to(len).freeze();
        let mut facts = ConnectionFacts::default();
        let mut headers = HeaderMap::with_capacity(spans.len());
        for &(name, name_len, value, value_len) in &spans {
            let name = &head[name..name + name_len];
            if facts.observe(name, &head[value..value + value_len])? {
                continue;
            }
            let name = HeaderName::from_bytes(name).map_err(|_| WireError::Malformed)?;
            let value = HeaderValue::from_maybe_shared(head.slice(value..value + value_len))
                .map_err(|_| WireError::Malformed)?;
            headers.append(name, value);
        }
        return Ok(Some(facts.finish(status, version, headers, method)));
    }
}

/// What the fields of a response head say about the connection and the body's
/// framing. Those fields describe this hop only, so they are taken out of the head
/// as it is parsed (RFC 9110 §7.6.1): `Connection`, the fields it names,
/// `Keep-Alive`, `Proxy-Connection`, `Trailer`, `Upgrade` and `Transfer-Encoding`.
#[derive(Default)]
struct ConnectionFacts {
    /// The one length every `Content-Length` value agrees on.
    length: Option<u64>,
    transfer_encoding: bool,
    /// The last transfer coding is `chunked`.
    chunked: bool,
    /// `Connection: close`.
    close: bool,
    /// Other fields `Connection` names (rare), dropped once the head is built.
    named: Vec<String>,
}

impl ConnectionFacts {
    /// Notes one field; `true` when it describes the connection and is dropped.
    fn observe(&mut self, name: &[u8], value: &[u8]) -> Result<bool, WireError> {
        if name.eq_ignore_ascii_case(b"content-length") {
            self.add_length(value)?;
            return Ok(false);
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            self.transfer_encoding = true;
            self.chunked = tokens(value)
                .next_back()
                .is_some_and(|coding| coding.eq_ignore_ascii_case(b"chunked"));
            return Ok(true);
        }
        if name.eq_ignore_ascii_case(b"connection") {
            for token in tokens(value) {
                if token.eq_ignore_ascii_case(b"close") {
                    self.close = true;
                } else if !token.eq_ignore_ascii_case(b"keep-alive") {
                    self.named
                        .push(String::from_utf8_lossy(token).to_ascii_lowercase());
                }
            }
            return Ok(true);
        }
        Ok(HOP_BY_HOP
            .iter()
            .any(|hop| name.eq_ignore_ascii_case(hop.as_bytes())))
    }

    fn add_length(&mut self, value: &[u8]) -> Result<(), WireError> {
        for item in value.split(|&b| b == b',') {
            let item = item.trim_ascii();
            if item.is_empty() || item.len() > 19 || !item.iter().all(u8::is_ascii_digit) {
                return Err(WireError::BadLength);
            }
            let parsed = item
                .iter()
                .fold(0u64, |n, digit| n * 10 + u64::from(digit - b'0'));
            if self.length.is_some_and(|seen| seen != parsed) {
                return Err(WireError::BadLength);
            }
            self.length = Some(parsed);
        }
        Ok(())
    }

    /// The head, with its framing (RFC 9112 §6.3) and whether the connection may be
    /// reused after it.
    fn finish(
        self,
        status: StatusCode,
        version: Version,
        mut headers: HeaderMap,
        method: &Method,
    ) -> ResponseHead {
        for name in &self.named {
            headers.remove(name.as_str());
        }
        let framing = if *method == Method::HEAD
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            ResponseFraming::Empty
        } else if self.transfer_encoding {
            // Transfer-Encoding overrides Content-Length, which must then go.
            headers.remove(header::CONTENT_LENGTH);
            if self.chunked {
                ResponseFraming::Chunked
            } else {
                ResponseFraming::UntilClose
            }
        } else if let Some(length) = self.length {
            ResponseFraming::Length(length)
        } else {
            ResponseFraming::UntilClose
        };
        // Both framings at once is a message to treat as an error (RFC 9112 §6.3):
        // read it by Transfer-Encoding, but never trust the connection afterwards.
        let ambiguous = self.transfer_encoding && self.length.is_some();
        let keep_alive = version == Version::HTTP_11
            && framing != ResponseFraming::UntilClose
            && !self.close
            && !ambiguous;
        let mut response = Response::new(());
        *response.status_mut() = status;
        *response.version_mut() = version;
        *response.headers_mut() = headers;
        ResponseHead {
            response,
            framing,
            keep_alive,
        }
    }
}

/// The comma-separated items of a field value, trimmed, empty ones skipped.
fn tokens(value: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|token| !token.is_empty())
}

/// One step of a chunked body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// Body bytes.
    Data(Bytes),
    /// The trailer section (only when it has fields); the body is over.
    Trailers(HeaderMap),
    /// The body is over.
    End,
    /// More bytes are needed.
    Incomplete,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

/// Decodes a chunked body from a buffer that fills as bytes arrive.
#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: ChunkState,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self {
            state: ChunkState::Size,
        }
    }
}

impl ChunkedDecoder {
    /// The next step, taking what it uses off the front of `buf`.
    pub(crate) fn decode(&mut self, buf: &mut BytesMut) -> Result<Chunk, WireError> {
        loop {
            match self.state {
                ChunkState::Done => return Ok(Chunk::End),
                ChunkState::Size => {
                    let Some(end) = find_crlf(buf) else {
                        return if buf.len() > MAX_CHUNK_LINE {
                            Err(WireError::Malformed)
                        } else {
                            Ok(Chunk::Incomplete)
                        };
                    };
                    let size = chunk_size(&buf[..end])?;
                    buf.advance(end + 2);
                    self.state = if size == 0 {
                        ChunkState::Trailers
                    } else {
                        ChunkState::Data(size)
                    };
                }
                ChunkState::Data(remaining) => {
                    if buf.is_empty() {
                        return Ok(Chunk::Incomplete);
                    }
                    let take = usize::try_from(remaining).map_or(buf.len(), |r| r.min(buf.len()));
                    let left = remaining - take as u64;
                    self.state = if left == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left)
                    };
                    return Ok(Chunk::Data(buf.split_to(take).freeze()));
                }
                ChunkState::DataEnd => {
                    if buf.len() < 2 {
                        return Ok(Chunk::Incomplete);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err(WireError::Malformed);
                    }
                    buf.advance(2);
                    self.state = ChunkState::Size;
                }
                ChunkState::Trailers => return self.trailers(buf),
            }
        }
    }

    fn trailers(&mut self, buf: &mut BytesMut) -> Result<Chunk, WireError> {
        if buf.len() < 2 {
            return Ok(Chunk::Incomplete);
        }
        if &buf[..2] == b"\r\n" {
            buf.advance(2);
            self.state = ChunkState::Done;
            return Ok(Chunk::End);
        }
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let (len, fields) = match httparse::parse_headers(buf, &mut slots) {
            Ok(httparse::Status::Complete(done)) => done,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(WireError::TooLarge);
            }
            Ok(httparse::Status::Partial) => return Ok(Chunk::Incomplete),
            Err(httparse::Error::TooManyHeaders) => return Err(WireError::TooLarge),
            Err(_) => return Err(WireError::Malformed),
        };
        let mut trailers = HeaderMap::with_capacity(fields.len());
        for field in fields {
            let name =
                HeaderName::from_bytes(field.name.as_bytes()).map_err(|_| WireError::Malformed)?;
            let value = HeaderValue::from_bytes(field.value).map_err(|_| WireError::Malformed)?;
            trailers.append(name, value);
        }
        buf.advance(len);
        self.state = ChunkState::Done;
        Ok(Chunk::Trailers(trailers))
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|pair| pair == b"\r\n")
}

/// The size of a chunk-size line (hex digits, then optional whitespace and
/// extensions, which are ignored).
fn chunk_size(line: &[u8]) -> Result<u64, WireError> {
    let digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    let rest = &line[digits..];
    if digits == 0
        || digits > 16
        || !(rest.is_empty() || matches!(rest[0], b';' | b' ' | b'\t'))
        || rest.iter().any(|&b| b == b'\r' || b == b'\n')
    {
        return Err(WireError::Malformed);
    }
    let text = std::str::from_utf8(&line[..digits]).map_err(|_| WireError::Malformed)?;
    u64::from_str_radix(text, 16).map_err(|_| WireError::Malformed)
}

#[cfg(test)]
mod tests;
