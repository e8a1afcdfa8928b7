//! `head_round_trip`: a request head written by the proxy parses back to itself.
//!
//! The input is read as choices ([`Input`]): a method, a request target, header
//! fields, forwarding lines the proxy adds ([`FieldLines`]) and a body framing, each
//! made of bytes that are valid where they go. [`encode_request_head`] writes the head
//! and [`parse_request_head`] must read back exactly that: method, target, fields
//! (the added lines replacing fields of their names, the framing field the writer
//! adds) and framing, with no byte left.
//! Fields the codec reads itself (`Content-Length`, `Transfer-Encoding`,
//! `Connection`, `TE`, `Expect`) are not generated: they are framing and connection
//! state, not fields that travel.

use bytes::BytesMut;
use culvert_wire::{BodyFraming, FieldLines, HeadLimits, encode_request_head, parse_request_head};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Version};

use crate::input::Input;

/// Methods picked by the first byte; past the list, an extension method is made.
const METHODS: [Method; 9] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::OPTIONS,
    Method::PATCH,
    Method::TRACE,
    Method::CONNECT,
];

/// Bytes of a request target that every parser on the way keeps as they are: RFC
/// 3986 unreserved and sub-delimiters, `:`, `@`, `/` and `?` (`%` is added with two
/// hex digits).
const TARGET_BYTES: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?";

/// Token bytes, for field names (lower case) and extension methods.
const TOKEN_BYTES: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~";

/// Fields the codec reads or drops itself.
const CODEC_FIELDS: [&str; 5] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "expect",
];

/// Fields the proxy adds as lines.
const ADDED_NAMES: [&str; 4] = ["x-forwarded-for", "x-forwarded-proto", "forwarded", "via"];

/// Builds a head from `data`, writes it and parses it back; panics when the parsed
/// head is not the one written.
pub fn head_round_trip(data: &[u8]) {
    let mut input = Input::new(data);
    let method = method(&mut input);
    let target = target(&mut input);
    let headers = headers(&mut input);
    let (added, added_fields) = added(&mut input);
    let framing = match input.below(3) {
        0 => BodyFraming::Empty,
        // A length the parser takes: 1 to 19 digits.
        1 => BodyFraming::Length(input.number(8) % 10_000_000_000_000_000_000),
        _ => BodyFraming::Chunked,
    };

    let mut wire = Vec::new();
    encode_request_head(&mut wire, &method, &target, &headers, &added, framing);
    let mut buf = BytesMut::from(&wire[..]);
    let head = match parse_request_head(&mut buf, HeadLimits::DEFAULT) {
        Ok(Some(head)) => head,
        other => panic!(
            "the written head {:?} parses to {other:?}",
            String::from_utf8_lossy(&wire)
        ),
    };
    assert!(buf.is_empty(), "bytes left after a written head: {buf:?}");
    assert_eq!(head.request.method(), method);
    assert_eq!(head.request.uri().to_string(), target, "target");
    assert_eq!(head.request.version(), Version::HTTP_11);

    let mut expected = HeaderMap::new();
    for (name, value) in &headers {
        if !added.replaces(name) {
            expected.append(name.clone(), value.clone());
        }
    }
    for (name, value) in added_fields {
        expected.append(name, value);
    }
    // The framing field the writer adds stays in the parsed head's fields.
    match framing {
        BodyFraming::Empty => {}
        BodyFraming::Length(length) => {
            expected.append(header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        BodyFraming::Chunked => {
            let chunked = HeaderValue::from_static("chunked");
            expected.append(header::TRANSFER_ENCODING, chunked);
        }
    }
    assert_eq!(head.request.headers(), &expected, "fields");
    let framing = match framing {
        BodyFraming::Length(0) => BodyFraming::Empty,
        framing => framing,
    };
    assert_eq!(head.body, framing, "framing");
    assert!(
        head.keep_alive,
        "an HTTP/1.1 head without Connection: close"
    );
    assert!(!head.expect_continue && !head.trailers && !head.names_fields);
}

fn method(input: &mut Input<'_>) -> Method {
    let choice = input.byte();
    if let Some(method) = METHODS.get(usize::from(choice) % 16) {
        return method.clone();
    }
    let len = input.below(8) + 1;
    let token: Vec<u8> = (0..len)
        .map(|_| TOKEN_BYTES[input.below(TOKEN_BYTES.len())].to_ascii_uppercase())
        .collect();
    Method::from_bytes(&token).unwrap_or(Method::GET)
}

/// An origin-form target (`/path?query`), an absolute-form one
/// (`http://host:port/path`) or `*`.
fn target(input: &mut Input<'_>) -> String {
    let form = input.below(4);
    if form == 3 {
        return "*".to_owned();
    }
    let mut target = String::new();
    if form == 2 {
        target.push_str("http://");
        let len = input.below(12) + 1;
        for _ in 0..len {
            target.push(char::from(
                b"abcdefghijklmnopqrstuvwxyz0123456789-."[input.below(38)],
            ));
        }
        if input.byte() % 2 == 1 {
            target.push_str(&format!(":{}", input.number(2)));
        }
    }
    target.push('/');
    let len = input.below(40);
    for _ in 0..len {
        let byte = input.byte();
        if byte == b'%' {
            target.push_str(&format!("%{:02X}", input.byte()));
        } else {
            target.push(char::from(
                TARGET_BYTES[usize::from(byte) % TARGET_BYTES.len()],
            ));
        }
    }
    target
}

/// Up to 11 fields with token names and values of visible bytes, spaces and tabs
/// inside, and obs-text.
fn headers(input: &mut Input<'_>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for _ in 0..input.below(12) {
        let len = input.below(16) + 1;
        let name: Vec<u8> = (0..len)
            .map(|_| TOKEN_BYTES[input.below(TOKEN_BYTES.len())])
            .collect();
        let Ok(name) = HeaderName::from_bytes(&name) else {
            continue;
        };
        let value = field_value(input);
        if CODEC_FIELDS.contains(&name.as_str()) {
            continue;
        }
        if let Ok(value) = HeaderValue::from_bytes(&value) {
            headers.append(name, value);
        }
    }
    headers
}

/// A field value: any byte but controls other than tab and DEL, without leading or
/// trailing whitespace (which a parser strips).
fn field_value(input: &mut Input<'_>) -> Vec<u8> {
    let len = input.below(24);
    let value: Vec<u8> = input
        .take(len)
        .iter()
        .map(|&b| match b {
            b'\t' | 0x20..=0x7e | 0x80..=0xff => b,
            _ => b'a' + b % 26,
        })
        .collect();
    value.trim_ascii().to_vec()
}

/// Up to three added lines, and the fields they should parse to. A value with a
/// control byte must be refused.
fn added(input: &mut Input<'_>) -> (FieldLines, Vec<(HeaderName, HeaderValue)>) {
    let mut lines = FieldLines::with_capacity(64);
    let mut fields: Vec<(HeaderName, HeaderValue)> = Vec::new();
    for _ in 0..input.below(4) {
        let name = HeaderName::from_static(ADDED_NAMES[input.below(ADDED_NAMES.len())]);
        let mut value = field_value(input);
        if input.byte() == 0xff {
            value.push(b'\n');
        }
        let valid = !value.iter().any(|&b| (b < b' ' && b != b'\t') || b == 0x7f);
        let pushed = lines.push(&name, |out| out.extend_from_slice(&value));
        assert_eq!(pushed, valid, "FieldLines::push of {value:?}");
        if !pushed {
            continue;
        }
        if let Ok(value) = HeaderValue::from_bytes(&value) {
            fields.push((name, value));
        }
    }
    (lines, fields)
}
