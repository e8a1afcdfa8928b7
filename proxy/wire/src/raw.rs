//! Response fields forwarded as they arrived. A backend's response head is
//! usually passed on unchanged but for the fields of its hop; [`RawFields`] keeps
//! the field lines that go on as runs of the received bytes, so the common answer is
//! never parsed into a header map and written back out field by field. The map is
//! built only when something needs it: a header filter, CORS, an HTTP/2 client or
//! the tunnel ([`RawFields::to_map`]). The raw fields travel with the response's body
//! ([`CarriesRawFields`]), not in its extensions: that would cost three allocations
//! per response.

use bytes::{Bytes, BytesMut};
use http::header::HeaderMap;
use http::{Method, Response, StatusCode};

use super::FieldSpan;
use super::client::{FieldsAs, parse_response_head};

/// Runs of consecutive field lines one head may be kept as; a head whose dropped
/// fields cut it into more pieces is parsed into a map instead.
const MAX_RUNS: usize = 4;

/// The field lines of a response head that are forwarded unchanged: every field but
/// those of the hop and `Content-Length` (which the side writing the response sets
/// from the body's framing), CRLFs included.
#[derive(Debug, Clone)]
pub struct RawFields {
    head: Bytes,
    runs: [(u32, u32); MAX_RUNS],
    run_count: usize,
    has_date: bool,
    /// The response answers a `HEAD` (its framing, should it be parsed again).
    to_head: bool,
}

impl RawFields {
    pub(crate) fn new(head: Bytes, to_head: bool) -> Self {
        Self {
            head,
            runs: [(0, 0); MAX_RUNS],
            run_count: 0,
            has_date: false,
            to_head,
        }
    }

    /// Keeps the line of `span`; `false` when the head has too many runs.
    pub(crate) fn keep(&mut self, span: &FieldSpan, name: &[u8]) -> bool {
        let start = span.name.0;
        let value_end = (span.value.0 + span.value.1) as usize;
        let Some(newline) = self.head[value_end..].iter().position(|&b| b == b'\n') else {
            return false;
        };
        // A line ending in a bare LF is not passed on as it is (the head is parsed
        // into a map and written with CRLFs).
        let line_feed = value_end + newline;
        if self.head.get(line_feed.wrapping_sub(1)) != Some(&b'\r') {
            return false;
        }
        let end = (value_end + newline + 1) as u32;
        self.has_date |= name.eq_ignore_ascii_case(b"date");
        match self
            .run_count
            .checked_sub(1)
            .map(|last| &mut self.runs[last])
        {
            Some(run) if run.1 == start => run.1 = end,
            _ if self.run_count == MAX_RUNS => return false,
            _ => {
                self.runs[self.run_count] = (start, end);
                self.run_count += 1;
            }
        }
        true
    }

    /// The kept bytes, run by run.
    pub fn runs(&self) -> impl Iterator<Item = &[u8]> {
        self.runs[..self.run_count]
            .iter()
            .map(|&(start, end)| &self.head[start as usize..end as usize])
    }

    /// Whether a `Date` is among the kept fields.
    pub fn has_date(&self) -> bool {
        self.has_date
    }

    /// The fields as a header map, as a parsed head would have had them
    /// (`Content-Length` included).
    pub fn to_map(&self) -> HeaderMap {
        let method = if self.to_head {
            Method::HEAD
        } else {
            Method::GET
        };
        // The head parsed once already, so it parses again the same way.
        parse_response_head(&mut BytesMut::from(&self.head[..]), &method, FieldsAs::Map)
            .ok()
            .flatten()
            .map(|head| head.response.into_parts().0.headers)
            .unwrap_or_default()
    }
}

/// A response body that may carry its response's fields as [`RawFields`]. A body
/// that never does (a local answer, hyper's) keeps the defaults: none.
pub trait CarriesRawFields {
    /// The raw fields, if the response's fields are kept raw.
    fn raw_fields(&self) -> Option<&RawFields> {
        None
    }
    /// Takes the raw fields out (they are being parsed into the header map).
    fn take_raw_fields(&mut self) -> Option<RawFields> {
        None
    }
}

impl CarriesRawFields for Option<RawFields> {
    fn raw_fields(&self) -> Option<&RawFields> {
        self.as_ref()
    }

    fn take_raw_fields(&mut self) -> Option<RawFields> {
        self.take()
    }
}

/// A buffered body (a local answer) has its fields in the header map.
impl<D> CarriesRawFields for http_body_util::Full<D> {}

/// The header map of `response` to read or change, the raw fields its body carries
/// (if any) parsed into it first. Everything but the HTTP/1.1 writer reaches
/// response fields through this.
pub fn headers_mut<B: CarriesRawFields>(response: &mut Response<B>) -> &mut HeaderMap {
    if let Some(raw) = response.body_mut().take_raw_fields() {
        let added = std::mem::take(response.headers_mut());
        let headers = response.headers_mut();
        *headers = raw.to_map();
        headers.extend(added);
    }
    response.headers_mut()
}

/// Whether a response to `method` with `status` has no body at all.
pub(crate) fn bodyless(method: &Method, status: StatusCode) -> bool {
    *method == Method::HEAD
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
}
