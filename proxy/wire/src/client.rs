//! The client side: writing a request head to a backend and parsing the response
//! head it sends back (RFC 9112 §4–6), with the interim answers before it kept to
//! be relayed.

use std::mem::MaybeUninit;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{self, HeaderMap};
use http::{Method, Response, StatusCode, Version};

use super::lines::FieldLines;
use super::raw::{RawFields, bodyless};
use super::{
    BodyFraming, CodecField, ContentLength, FieldSlots, FieldSpan, MAX_HEAD, MAX_HEADERS,
    TransferCodings, WireError, build_headers, field_spans, push_decimal, push_field, tokens,
};

/// How a response body ends (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseFraming {
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
pub struct ResponseHead {
    /// Status, version and (unless kept raw) the fields.
    pub response: Response<()>,
    /// How the body is delimited.
    pub framing: ResponseFraming,
    /// The connection may carry another request once this body has been read.
    pub keep_alive: bool,
    /// The fields that go on unchanged, kept raw (the response's header map is then
    /// empty); carried with the response's body to the side that writes it.
    pub raw: Option<RawFields>,
    /// Interim `1xx` heads that came before this one (`103 Early Hints`, `102`,
    /// `100`), re-encoded as HTTP/1.1, to be relayed ahead of it: a proxy forwards
    /// the 1xx it did not ask for itself (RFC 9110 §15.2).
    pub interim: Vec<u8>,
}

/// Appends the request head: request line, every header but the framing ones (which
/// `framing` decides) and those `added` replaces, the lines of `added`, then the
/// framing header.
pub fn encode_request_head(
    out: &mut Vec<u8>,
    method: &Method,
    target: &str,
    headers: &HeaderMap,
    added: &FieldLines,
    framing: BodyFraming,
) {
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in headers {
        if name == header::CONTENT_LENGTH
            || name == header::TRANSFER_ENCODING
            || added.replaces(name)
        {
            continue;
        }
        push_field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(added.as_bytes());
    match framing {
        BodyFraming::Empty => {}
        BodyFraming::Length(length) => {
            out.extend_from_slice(b"content-length: ");
            push_decimal(out, length);
            out.extend_from_slice(b"\r\n");
        }
        BodyFraming::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Where a parsed response head keeps the fields that go on unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldsAs {
    /// As [`RawFields`] (in [`ResponseHead::raw`], the header map left empty) when
    /// they form a few runs of lines, as they nearly always do, else in the header
    /// map: for a response written out over HTTP/1.1 as it came.
    Raw,
    /// In the header map: for a response whose fields will be read or changed (an
    /// HTTP/2 or tunnel client, a response filter), which would parse raw fields
    /// again.
    Map,
}

/// Takes one final response head off the front of `buf`, keeping interim `1xx`
/// answers for [`ResponseHead::interim`]; `Ok(None)` until the final head is
/// complete (interim heads already read stay in `buf` until then, so a call may
/// parse them again). `fields` says where the fields that go on unchanged are kept.
pub fn parse_response_head(
    buf: &mut BytesMut,
    method: &Method,
    fields: FieldsAs,
) -> Result<Option<ResponseHead>, WireError> {
    let config = httparse::ParserConfig::default();
    let mut interim = Vec::new();
    let mut at = 0;
    loop {
        let mut slots: FieldSlots<'_> = [const { MaybeUninit::uninit() }; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut []);
        let rest = &buf[at..];
        let len = match config.parse_response_with_uninit_headers(&mut parsed, rest, &mut slots) {
            Ok(httparse::Status::Complete(len)) if len <= MAX_HEAD => len,
            Ok(httparse::Status::Complete(_)) => return Err(WireError::TooLarge),
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
            encode_interim(&mut interim, status, parsed.headers);
            at += len;
            continue;
        }
        let version = if parsed.version == Some(1) {
            Version::HTTP_11
        } else {
            Version::HTTP_10
        };
        let spans = field_spans(parsed.headers, rest.as_ptr());
        buf.advance(at);
        let head = buf.split_to(len).freeze();
        let mut parsed = match fields {
            FieldsAs::Raw => raw_head(&head, &spans, status, version, method)?,
            FieldsAs::Map => None,
        };
        if parsed.is_none() {
            let mut facts = ConnectionFacts::default();
            let headers = build_headers(&head, &spans, |name, value| {
                facts.observe(name, value).map(|dropped| !dropped)
            })?;
            parsed = Some(facts.finish(status, version, headers, method)?);
        }
        return Ok(parsed.map(|mut head| {
            head.interim = interim;
            head
        }));
    }
}

/// Appends an interim head as HTTP/1.1: its status line and its fields.
fn encode_interim(out: &mut Vec<u8>, status: StatusCode, fields: &[httparse::Header<'_>]) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for field in fields {
        push_field(out, field.name.as_bytes(), field.value);
    }
    out.extend_from_slice(b"\r\n");
}

/// The head with its fields kept raw, or `None` when they do not fit in a few runs
/// (or `Connection` names other fields to drop).
fn raw_head(
    head: &Bytes,
    spans: &[FieldSpan],
    status: StatusCode,
    version: Version,
    method: &Method,
) -> Result<Option<ResponseHead>, WireError> {
    let mut facts = ConnectionFacts::default();
    let mut raw = RawFields::new(head.clone(), *method == Method::HEAD);
    let has_body = !bodyless(method, status);
    let mut fits = true;
    for span in spans {
        let name = span.name(head);
        let dropped = facts.observe(name, span.value(head))?;
        // The length goes with the framing; a 204 carries none at all.
        let framing = (has_body || status == StatusCode::NO_CONTENT)
            && name.eq_ignore_ascii_case(b"content-length");
        if fits && !dropped && !framing {
            fits = raw.keep(span, name);
        }
    }
    if !fits || !facts.named.is_empty() {
        return Ok(None);
    }
    let mut head = facts.finish(status, version, HeaderMap::new(), method)?;
    head.raw = Some(raw);
    Ok(Some(head))
}

/// What the fields of a response head say about the connection and the body's
/// framing. Those fields describe this hop only, so they are taken out of the head
/// as it is parsed (RFC 9110 §7.6.1): `Connection`, the fields it names,
/// `Keep-Alive`, `Proxy-Connection`, `Trailer`, `Upgrade` and `Transfer-Encoding`.
#[derive(Default)]
struct ConnectionFacts {
    length: ContentLength,
    codings: TransferCodings,
    /// `Connection: close`.
    close: bool,
    /// Other fields `Connection` names (rare), dropped once the head is built.
    named: Vec<String>,
}

impl ConnectionFacts {
    /// Notes one field; `true` when it describes the connection and is dropped.
    fn observe(&mut self, name: &[u8], value: &[u8]) -> Result<bool, WireError> {
        match CodecField::of(name) {
            CodecField::ContentLength => {
                self.length.add(value)?;
                Ok(false)
            }
            CodecField::TransferEncoding => {
                self.codings.add(value);
                Ok(true)
            }
            CodecField::Connection => {
                // What backends nearly always send, without splitting the value.
                if value.eq_ignore_ascii_case(b"keep-alive") {
                    return Ok(true);
                }
                for token in tokens(value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        self.close = true;
                    } else if !token.eq_ignore_ascii_case(b"keep-alive") {
                        self.named
                            .push(String::from_utf8_lossy(token).to_ascii_lowercase());
                    }
                }
                Ok(true)
            }
            CodecField::OtherHop => Ok(true),
            CodecField::Te | CodecField::Expect | CodecField::Other => Ok(false),
        }
    }

    /// The head, with its framing (RFC 9112 §6.3) and whether the connection may be
    /// reused after it. A transfer coding other than `chunked` is refused: the
    /// proxy would forward coded bytes with the label that says so dropped.
    fn finish(
        self,
        status: StatusCode,
        version: Version,
        mut headers: HeaderMap,
        method: &Method,
    ) -> Result<ResponseHead, WireError> {
        for name in &self.named {
            headers.remove(name.as_str());
        }
        if status == StatusCode::NO_CONTENT {
            // A 204 has no body, so no length to announce (RFC 9110 §8.6).
            headers.remove(header::CONTENT_LENGTH);
        }
        let framing = if bodyless(method, status) {
            ResponseFraming::Empty
        } else if self.codings.present() {
            self.codings.check().map_err(|_| WireError::Malformed)?;
            // Transfer-Encoding overrides Content-Length, which must then go.
            headers.remove(header::CONTENT_LENGTH);
            ResponseFraming::Chunked
        } else if let Some(length) = self.length.get() {
            ResponseFraming::Length(length)
        } else {
            ResponseFraming::UntilClose
        };
        // Both framings at once is a message to treat as an error (RFC 9112 §6.3):
        // read it by Transfer-Encoding, but never trust the connection afterwards.
        let ambiguous = self.codings.present() && self.length.get().is_some();
        let keep_alive = version == Version::HTTP_11
            && framing != ResponseFraming::UntilClose
            && !self.close
            && !ambiguous;
        let mut response = Response::new(());
        *response.status_mut() = status;
        *response.version_mut() = version;
        *response.headers_mut() = headers;
        Ok(ResponseHead {
            response,
            framing,
            keep_alive,
            raw: None,
            interim: Vec::new(),
        })
    }
}
