//! The chunked transfer coding (RFC 9112 §7.1): writing chunks and decoding a
//! chunked body (with its trailer section) from a buffer that fills as bytes arrive.

use bytes::{Buf, Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};

use super::{MAX_HEAD, MAX_HEADERS, WireError, push_field};

/// Longest chunk-size line (with extensions) accepted.
const MAX_CHUNK_LINE: usize = 4096;

/// Appends the line that starts a chunk of `len` bytes.
pub fn encode_chunk_start(out: &mut Vec<u8>, len: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (usize::BITS - len.leading_zeros()).div_ceil(4).max(1);
    for shift in (0..digits).rev() {
        out.push(HEX[(len >> (shift * 4)) & 0xf]);
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends the last chunk and the trailer section.
pub fn encode_last_chunk(out: &mut Vec<u8>, trailers: Option<&HeaderMap>) {
    out.extend_from_slice(b"0\r\n");
    for (name, value) in trailers.into_iter().flatten() {
        push_field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

/// One step of a chunked body.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunk {
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
pub struct ChunkedDecoder {
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
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Chunk, WireError> {
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
                    // The same limit whether the line came in one read or many.
                    if end > MAX_CHUNK_LINE {
                        return Err(WireError::Malformed);
                    }
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
        // A bare LF may not end a trailer line: where the body ends must not
        // depend on which line endings a reader takes.
        if buf.first() == Some(&b'\n') {
            return Err(WireError::Malformed);
        }
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
            Ok(httparse::Status::Complete((len, _))) if len > MAX_HEAD => {
                return Err(WireError::TooLarge);
            }
            Ok(httparse::Status::Complete((len, _))) if has_bare_lf(&buf[..len]) => {
                return Err(WireError::Malformed);
            }
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

/// Whether a line in `bytes` ends in LF alone.
fn has_bare_lf(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .enumerate()
        .any(|(at, &b)| b == b'\n' && (at == 0 || bytes[at - 1] != b'\r'))
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|pair| pair == b"\r\n")
}

/// The size of a chunk-size line (hex digits, then optional whitespace and
/// extensions, which are ignored). Leading zeros are allowed in any number; more
/// than 16 significant digits (a size past `u64`) and control bytes are not.
fn chunk_size(line: &[u8]) -> Result<u64, WireError> {
    let digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    let (number, rest) = line.split_at(digits);
    let significant = number
        .iter()
        .position(|&b| b != b'0')
        .map_or(&[][..], |at| &number[at..]);
    if digits == 0
        || significant.len() > 16
        || !(rest.is_empty() || matches!(rest[0], b';' | b' ' | b'\t'))
        || rest.iter().any(|&b| (b < b' ' && b != b'\t') || b == 0x7f)
    {
        return Err(WireError::Malformed);
    }
    Ok(significant.iter().fold(0u64, |size, &digit| {
        (size << 4) | u64::from(hex_value(digit))
    }))
}

/// The value of one ASCII hex digit (the caller has checked that it is one).
fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit - b'A' + 10,
    }
}
