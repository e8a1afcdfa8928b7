//! `response_head`: a backend's response head, its fields kept raw and parsed into a
//! map.
//!
//! A response head is parsed with its fields kept as raw lines ([`FieldsAs::Raw`],
//! for a response forwarded over HTTP/1.1 as it came) or in a header map
//! ([`FieldsAs::Map`]). Both must read the same head: same outcome, status, version,
//! framing, keep-alive and bytes left over, and the raw fields, once parsed on
//! demand ([`headers_mut`]), must be the map's fields. Checked for a `GET` and a
//! `HEAD`, whose responses frame differently. As for request heads, a response head
//! read in two reads, cut anywhere, reads as in one.

use bytes::BytesMut;
use culvert_wire::{
    FieldsAs, RawFields, ResponseFraming, ResponseHead, WireError, headers_mut, parse_response_head,
};
use http::{HeaderMap, Method, Response, StatusCode, Version, header};

use crate::input::split_offsets;

/// Cuts tried per input.
const SPLITS: usize = 8;

/// The fields of one hop, which a parsed head never carries on.
const HOP_FIELDS: [&str; 6] = [
    "connection",
    "transfer-encoding",
    "trailer",
    "upgrade",
    "keep-alive",
    "proxy-connection",
];

/// Parses `data` both ways for `GET` and `HEAD`; panics when they disagree or a
/// parsed head breaks a documented property.
pub fn response_head(data: &[u8]) {
    for method in [Method::GET, Method::HEAD] {
        let raw = parse(data, &method, FieldsAs::Raw);
        let map = parse(data, &method, FieldsAs::Map);
        match (raw, map) {
            (Ok(Some((raw, raw_rest))), Ok(Some((map, map_rest)))) => {
                assert_eq!(raw_rest, map_rest, "{method}: different bytes left over");
                check_head(&map, &method);
                same_head(raw, &map, &method);
            }
            (Ok(None), Ok(None)) => {}
            (Err(raw), Err(map)) => assert_eq!(raw, map, "{method}: different errors"),
            (raw, map) => panic!("{method}: Raw gives {raw:?}, Map gives {map:?}"),
        }
    }
    let whole = summary(parse(data, &Method::GET, FieldsAs::Map));
    let seed = data.first().copied().unwrap_or(0);
    for at in split_offsets(data.len(), seed, SPLITS) {
        assert_eq!(
            summary(parse_split(data, at)),
            whole,
            "a head read in two reads cut at {at} differs from one read"
        );
    }
}

/// What a mapped parse produced, comparable across reads.
type Summary = Result<
    Option<(
        StatusCode,
        Version,
        ResponseFraming,
        bool,
        HeaderMap,
        Vec<u8>,
    )>,
    WireError,
>;

fn summary(parsed: Result<Option<Parsed>, WireError>) -> Summary {
    Ok(parsed?.map(|(head, rest)| {
        (
            head.response.status(),
            head.response.version(),
            head.framing,
            head.keep_alive,
            head.response.headers().clone(),
            rest,
        )
    }))
}

/// Reads `data[..at]`, then `data[at..]` appended to what the first read left.
fn parse_split(data: &[u8], at: usize) -> Result<Option<Parsed>, WireError> {
    let (first, second) = data.split_at(at);
    let mut buf = BytesMut::from(first);
    let head = parse_response_head(&mut buf, &Method::GET, FieldsAs::Map)?;
    buf.extend_from_slice(second);
    if let Some(head) = head {
        return Ok(Some((head, buf.to_vec())));
    }
    let head = parse_response_head(&mut buf, &Method::GET, FieldsAs::Map)?;
    Ok(head.map(|head| (head, buf.to_vec())))
}

/// A parsed head and the bytes left after it.
type Parsed = (ResponseHead, Vec<u8>);

fn parse(data: &[u8], method: &Method, fields: FieldsAs) -> Result<Option<Parsed>, WireError> {
    let mut buf = BytesMut::from(data);
    let head = parse_response_head(&mut buf, method, fields)?;
    Ok(head.map(|head| (head, buf.to_vec())))
}

/// The raw head reads as the mapped one.
fn same_head(raw: ResponseHead, map: &ResponseHead, method: &Method) {
    assert_eq!(raw.response.status(), map.response.status(), "{method}");
    assert_eq!(raw.response.version(), map.response.version(), "{method}");
    assert_eq!(raw.framing, map.framing, "{method}: framing");
    assert_eq!(raw.keep_alive, map.keep_alive, "{method}: keep-alive");
    assert!(map.raw.is_none(), "{method}: Map kept raw fields");
    if let Some(fields) = &raw.raw {
        assert!(
            raw.response.headers().is_empty(),
            "{method}: fields both raw and in the map"
        );
        check_runs(fields);
    }
    // The raw fields travel with the body; whoever needs a map parses them then.
    let mut carried = Response::new(raw.raw);
    *carried.headers_mut() = raw.response.headers().clone();
    assert_eq!(
        headers_mut(&mut carried),
        map.response.headers(),
        "{method}: raw fields parse to other fields than the map"
    );
}

/// Raw fields are whole field lines, each ending in CRLF.
fn check_runs(fields: &RawFields) {
    for run in fields.runs() {
        assert!(run.ends_with(b"\r\n"), "a raw run {run:?} ends mid-line");
        assert!(
            !run.starts_with(b" ") && !run.starts_with(b"\t"),
            "a raw run {run:?} starts mid-line"
        );
    }
}

/// What `culvert_wire` documents of a parsed response head.
fn check_head(head: &ResponseHead, method: &Method) {
    let status = head.response.status();
    assert!(
        !status.is_informational(),
        "{method}: interim answers are skipped, 101 refused"
    );
    if *method == Method::HEAD
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        assert_eq!(head.framing, ResponseFraming::Empty, "{method} {status}");
    }
    if head.framing == ResponseFraming::UntilClose {
        assert!(
            !head.keep_alive,
            "a body read until close ends the connection"
        );
    }
    let headers = head.response.headers();
    if status == StatusCode::NO_CONTENT || head.framing == ResponseFraming::Chunked {
        assert!(
            !headers.contains_key(header::CONTENT_LENGTH),
            "{method} {status}: Content-Length kept with {:?}",
            head.framing
        );
    }
    for name in HOP_FIELDS {
        assert!(
            !headers.contains_key(name),
            "{method}: the hop's {name} was kept"
        );
    }
}
