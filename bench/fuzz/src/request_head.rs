//! `request_head`: a client's request head, read whole and in two reads.
//!
//! A server parses a head as its bytes arrive, and a peer decides where its reads
//! end. So the outcome of two reads, cut anywhere, must be the outcome of one: the
//! same error, or the same head with the same bytes left for the body. The first
//! read must then have answered "not complete yet" (or already the same error, or
//! the same head when it held all of it). Each head is also checked against what
//! `culvert_wire` documents of a parsed head.

use bytes::BytesMut;
use culvert_wire::{BodyFraming, HeadLimits, RequestHead, WireError, parse_request_head};
use http::{HeaderMap, Version};

use crate::input::split_offsets;

/// Cuts tried per input (all of them for a short one).
const SPLITS: usize = 16;

/// Parses `data` in one read and in two reads cut at several offsets; panics when the
/// outcomes differ or a parsed head breaks a documented property.
pub fn request_head(data: &[u8]) {
    let whole = parse_whole(data);
    if let Ok(Some(head)) = &whole {
        check_head(head, data);
    }
    let seed = data.first().copied().unwrap_or(0);
    for at in split_offsets(data.len(), seed, SPLITS) {
        let split = parse_split(data, at);
        assert_eq!(
            split, whole,
            "a head read in two reads cut at {at} differs from one read"
        );
    }
}

/// What a parse produced, comparable across reads.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    method: String,
    uri: String,
    version: Version,
    headers: HeaderMap,
    body: BodyFraming,
    keep_alive: bool,
    expect_continue: bool,
    trailers: bool,
    names_fields: bool,
    /// The bytes left in the buffer after the head.
    rest: Vec<u8>,
}

type Outcome = Result<Option<Parsed>, WireError>;

impl Parsed {
    fn new(head: RequestHead, rest: &[u8]) -> Self {
        Self {
            method: head.request.method().to_string(),
            uri: head.request.uri().to_string(),
            version: head.request.version(),
            headers: head.request.headers().clone(),
            body: head.body,
            keep_alive: head.keep_alive,
            expect_continue: head.expect_continue,
            trailers: head.trailers,
            names_fields: head.names_fields,
            rest: rest.to_vec(),
        }
    }
}

fn parse_whole(data: &[u8]) -> Outcome {
    let mut buf = BytesMut::from(data);
    let head = parse_request_head(&mut buf, HeadLimits::DEFAULT)?;
    Ok(head.map(|head| Parsed::new(head, &buf)))
}

/// Reads `data[..at]`, then `data[at..]` appended to what the first read left.
fn parse_split(data: &[u8], at: usize) -> Outcome {
    let (first, second) = data.split_at(at);
    let mut buf = BytesMut::from(first);
    if let Some(head) = parse_request_head(&mut buf, HeadLimits::DEFAULT)? {
        // The head was whole in the first read: what follows it is the body.
        buf.extend_from_slice(second);
        return Ok(Some(Parsed::new(head, &buf)));
    }
    buf.extend_from_slice(second);
    let head = parse_request_head(&mut buf, HeadLimits::DEFAULT)?;
    Ok(head.map(|head| Parsed::new(head, &buf)))
}

/// What `culvert_wire` documents of a parsed request head.
fn check_head(head: &Parsed, data: &[u8]) {
    // The head is taken off the front; the bytes after it are left untouched.
    assert!(
        data.ends_with(&head.rest),
        "the bytes after the head changed"
    );
    assert_ne!(
        head.body,
        BodyFraming::Length(0),
        "a parsed head announces an empty body as Empty"
    );
    if head.body == BodyFraming::Chunked || head.expect_continue {
        assert_eq!(
            head.version,
            Version::HTTP_11,
            "chunked and 100-continue are HTTP/1.1 only"
        );
    }
    // A Connection field that only says close or keep-alive is acted on and dropped;
    // one that names fields stays.
    assert_eq!(
        head.headers.contains_key(http::header::CONNECTION),
        head.names_fields,
        "Connection is kept exactly when it names fields"
    );
    assert!(
        matches!(head.version, Version::HTTP_10 | Version::HTTP_11),
        "a request head is HTTP/1.0 or HTTP/1.1"
    );
}
