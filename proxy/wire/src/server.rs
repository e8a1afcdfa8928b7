//! The server side: parsing a client's request head (RFC 9112 §3, §6.1–6.3) and
//! writing the response head with the framing the connection chose.
//!
//! A request is refused (400) when its framing is ambiguous: `Transfer-Encoding`
//! together with `Content-Length`, a transfer coding that does not end in
//! `chunked`, or `Transfer-Encoding` in HTTP/1.0 — the shapes request smuggling is
//! built from. Every field the client sent stays in the request; the proxy strips
//! the hop-by-hop ones before forwarding.

use std::mem::MaybeUninit;

use bytes::BytesMut;
use http::header::{self, HeaderMap};
use http::{Method, Request, StatusCode, Uri, Version};

use super::raw::RawFields;
use super::{
    BodyFraming, CodecField, ContentLength, FieldSlots, HeadLimits, MAX_HEADERS, TransferCodings,
    WireError, build_headers, field_spans, push_decimal, push_field, tokens,
};

/// A parsed request head.
#[derive(Debug)]
pub struct RequestHead {
    /// Method, target, version and fields.
    pub request: Request<()>,
    /// How the body is delimited.
    pub body: BodyFraming,
    /// The client wants the connection kept after this exchange.
    pub keep_alive: bool,
    /// The client waits for `100 Continue` before sending its body.
    pub expect_continue: bool,
    /// The client takes trailers (`TE: trailers`).
    pub trailers: bool,
    /// A `Connection` field names other fields: only then can the request ask for
    /// an upgrade (`Connection: upgrade`).
    pub names_fields: bool,
}

/// How a response body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseBodyFraming {
    /// No body is written (`HEAD`, `1xx`, `204`, `304`); the fields stay as they are.
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// The body ends when the connection closes (an HTTP/1.0 client, length unknown).
    UntilClose,
}

/// Takes one request head no larger than `limits` off the front of `buf`;
/// `Ok(None)` until it is complete.
pub fn parse_request_head(
    buf: &mut BytesMut,
    limits: HeadLimits,
) -> Result<Option<RequestHead>, WireError> {
    // The field slots live on the stack while a head is parsed: room for the
    // default count unless the limits allow more, so the usual parse keeps a small
    // frame.
    if limits.max_fields() <= MAX_HEADERS {
        parse_request_head_with::<MAX_HEADERS>(buf, limits)
    } else {
        parse_request_head_with::<{ HeadLimits::MAX_FIELDS }>(buf, limits)
    }
}

/// [`parse_request_head`] with `SLOTS` field slots (at least `limits.max_fields()`).
fn parse_request_head_with<const SLOTS: usize>(
    buf: &mut BytesMut,
    limits: HeadLimits,
) -> Result<Option<RequestHead>, WireError> {
    let config = httparse::ParserConfig::default();
    let max_bytes = limits.max_bytes();
    let mut slots: FieldSlots<'_, SLOTS> = [const { MaybeUninit::uninit() }; SLOTS];
    let slots = &mut slots[..limits.max_fields()];
    let mut parsed = httparse::Request::new(&mut []);
    let len = match config.parse_request_with_uninit_headers(&mut parsed, buf, slots) {
        Ok(httparse::Status::Complete(len)) if len <= max_bytes => len,
        Ok(httparse::Status::Complete(_)) => return Err(too_large(buf, max_bytes)),
        Ok(httparse::Status::Partial) if buf.len() > max_bytes => {
            return Err(too_large(buf, max_bytes));
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(WireError::TooLarge),
        Err(httparse::Error::Version) => {
            // `HTTP/1.2` and later minors are HTTP/1.1 to us (RFC 9112 §2.3): the
            // version digit is made `1` in place and the head parsed again. Judged
            // only once the line has ended, so the answer does not depend on where
            // a read ended.
            return match other_version(buf)? {
                OtherVersion::Incomplete if buf.len() > max_bytes => Err(too_large(buf, max_bytes)),
                OtherVersion::Incomplete => Ok(None),
                OtherVersion::LaterMinor => parse_request_head(buf, limits),
            };
        }
        Err(_) => return Err(WireError::Malformed),
    };
    let (Some(method), Some(target), Some(minor)) = (parsed.method, parsed.path, parsed.version)
    else {
        return Err(WireError::Malformed);
    };
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| WireError::Malformed)?;
    let version = if minor == 1 {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    let base = buf.as_ptr() as usize;
    let target = target.as_ptr() as usize - base..target.as_ptr() as usize - base + target.len();
    let spans = field_spans(parsed.headers, buf.as_ptr());
    let head = buf.split_to(len).freeze();
    let uri = Uri::from_maybe_shared(head.slice(target)).map_err(|_| WireError::Malformed)?;
    let mut facts = RequestFacts::default();
    let headers = build_headers(&head, &spans, |name, value| facts.observe(name, value))?;
    let body = facts.framing(version)?;
    let keep_alive = match version {
        Version::HTTP_11 => !facts.close,
        _ => facts.keep_alive && !facts.close,
    };
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = version;
    *request.headers_mut() = headers;
    Ok(Some(RequestHead {
        request,
        body,
        keep_alive,
        expect_continue: facts.expect_continue && version == Version::HTTP_11,
        trailers: facts.trailers,
        names_fields: facts.names_fields,
    }))
}

/// Why a head grew past `max_bytes`: a request line that has not even ended is a
/// target too long (414), else the fields are too large (431).
fn too_large(buf: &[u8], max_bytes: usize) -> WireError {
    let line_end = buf.iter().take(max_bytes).position(|&b| b == b'\n');
    if line_end.is_none() {
        WireError::TargetTooLong
    } else {
        WireError::TooLarge
    }
}

/// What a request line httparse refused for its version holds.
enum OtherVersion {
    /// The line has not ended yet.
    Incomplete,
    /// `HTTP/1.x` with x > 1, now rewritten to `HTTP/1.1` in place.
    LaterMinor,
}

/// Looks at a request line whose version httparse refused: a later HTTP/1 minor
/// is rewritten to `1`; another major version is 505; anything else (a line that
/// is not exactly method, target and version) is 400.
fn other_version(buf: &mut BytesMut) -> Result<OtherVersion, WireError> {
    let Some(line_end) = buf.iter().position(|&b| b == b'\n') else {
        return Ok(OtherVersion::Incomplete);
    };
    let line = &buf[..line_end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(WireError::Malformed);
    };
    if method.is_empty() || target.is_empty() {
        return Err(WireError::Malformed);
    }
    let at = method.len() + 1 + target.len() + 1;
    match version {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor] if minor.is_ascii_digit() => {
            // 1.0 and 1.1 parse; refused, the line is wrong elsewhere.
            if *minor <= b'1' {
                return Err(WireError::Malformed);
            }
            buf[at + 7] = b'1';
            Ok(OtherVersion::LaterMinor)
        }
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Err(WireError::UnsupportedVersion)
        }
        _ => Err(WireError::Malformed),
    }
}

/// What the fields of a request head say about its body and the connection.
#[derive(Default)]
struct RequestFacts {
    length: ContentLength,
    codings: TransferCodings,
    /// `Connection: close`.
    close: bool,
    /// `Connection: keep-alive` (what an HTTP/1.0 client must send to keep it).
    keep_alive: bool,
    expect_continue: bool,
    /// `TE: trailers`.
    trailers: bool,
    /// A `Connection` field names fields other than `close` and `keep-alive`.
    names_fields: bool,
}

impl RequestFacts {
    /// Notes one field; `false` when it is left out of the header map: a
    /// `Connection` that only says `close` or `keep-alive` (what most clients
    /// send), which this codec has acted on and which is never forwarded. One that
    /// names fields (`upgrade`, or fields to drop) stays for the proxy to act on.
    fn observe(&mut self, name: &[u8], value: &[u8]) -> Result<bool, WireError> {
        match CodecField::of(name) {
            CodecField::ContentLength => self.length.add(value)?,
            CodecField::TransferEncoding => self.codings.add(value),
            CodecField::Connection => {
                let mut names_fields = false;
                for token in tokens(value) {
                    let close = token.eq_ignore_ascii_case(b"close");
                    let keep_alive = token.eq_ignore_ascii_case(b"keep-alive");
                    self.close |= close;
                    self.keep_alive |= keep_alive;
                    names_fields |= !close && !keep_alive;
                }
                self.names_fields |= names_fields;
                return Ok(names_fields);
            }
            CodecField::Te => {
                self.trailers |= tokens(value).any(|token| token.eq_ignore_ascii_case(b"trailers"));
            }
            CodecField::Expect => {
                self.expect_continue = value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
            }
            CodecField::OtherHop | CodecField::Other => {}
        }
        Ok(true)
    }

    fn framing(&self, version: Version) -> Result<BodyFraming, WireError> {
        if self.codings.present() {
            if version != Version::HTTP_11 || self.length.get().is_some() {
                return Err(WireError::BadFraming);
            }
            self.codings.check()?;
            return Ok(BodyFraming::Chunked);
        }
        Ok(match self.length.get() {
            None | Some(0) => BodyFraming::Empty,
            Some(length) => BodyFraming::Length(length),
        })
    }
}

/// Appends a response head: the status line, the response's fields (raw ones
/// first, then those of the map) and the framing and connection fields this
/// connection decided. For a `101` the fields are
/// written as they are (its `Connection` and `Upgrade` are the point); otherwise
/// the response's own framing and connection fields are replaced. A `Date` is added
/// when the response has none: `date`, the current time as an HTTP-date, which the
/// caller supplies (this codec reads no clock).
pub fn encode_response_head(
    out: &mut Vec<u8>,
    status: StatusCode,
    fields: (Option<&RawFields>, &HeaderMap),
    framing: ResponseBodyFraming,
    connection: Option<&'static [u8]>,
    date: &[u8],
) {
    let (raw, headers) = fields;
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    let upgrade = status == StatusCode::SWITCHING_PROTOCOLS;
    let mut dated = false;
    // Raw fields hold neither framing nor connection fields.
    if let Some(raw) = raw {
        raw.runs().for_each(|run| out.extend_from_slice(run));
        dated = raw.has_date();
    }
    for (name, value) in headers {
        if !upgrade
            && (name == header::CONNECTION
                || name == header::TRANSFER_ENCODING
                || (name == header::CONTENT_LENGTH && framing != ResponseBodyFraming::None))
        {
            continue;
        }
        dated |= name == header::DATE;
        push_field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    if !dated {
        push_field(out, b"date", date);
    }
    match framing {
        ResponseBodyFraming::Length(length) => {
            out.extend_from_slice(b"content-length: ");
            push_decimal(out, length);
            out.extend_from_slice(b"\r\n");
        }
        ResponseBodyFraming::Chunked => {
            out.extend_from_slice(b"transfer-encoding: chunked\r\n");
        }
        ResponseBodyFraming::None | ResponseBodyFraming::UntilClose => {}
    }
    if let Some(connection) = connection.filter(|_| !upgrade) {
        push_field(out, b"connection", connection);
    }
    out.extend_from_slice(b"\r\n");
}

/// The whole answer to a request head that could not be taken: the connection
/// closes after it.
pub fn error_response(error: WireError) -> &'static [u8] {
    match error {
        WireError::TooLarge => {
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        }
        WireError::TargetTooLong => {
            b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        }
        WireError::UnsupportedCoding => {
            b"HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        }
        WireError::UnsupportedVersion => {
            b"HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        }
        _ => b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    }
}
