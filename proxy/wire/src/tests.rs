use bytes::BytesMut;
use http::header::{HeaderMap, HeaderName};
use http::{HeaderValue, Method, StatusCode, Version};

use super::{
    BodyDecoder, BodyFraming, Chunk, ChunkedDecoder, FieldLines, FieldsAs, HeadLimits, MAX_HEAD,
    ResponseFraming, WireError, encode_chunk_start, encode_last_chunk, encode_request_head,
    parse_request_head, parse_response_head,
};

fn parse(bytes: &[u8], method: &Method) -> Result<Option<super::ResponseHead>, WireError> {
    parse_response_head(&mut BytesMut::from(bytes), method, FieldsAs::Raw)
}

#[test]
fn request_head_carries_the_framing_it_is_given() {
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("a.example"));
    headers.insert("content-length", HeaderValue::from_static("99"));
    headers.insert("transfer-encoding", HeaderValue::from_static("gzip"));
    headers.append("x-two", HeaderValue::from_static("1"));
    headers.append("x-two", HeaderValue::from_static("2"));
    let mut out = Vec::new();
    encode_request_head(
        &mut out,
        &Method::POST,
        "/p?q=1",
        &headers,
        &FieldLines::default(),
        BodyFraming::Length(12),
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "POST /p?q=1 HTTP/1.1\r\nhost: a.example\r\nx-two: 1\r\nx-two: 2\r\ncontent-length: 12\r\n\r\n"
    );
    let mut out = Vec::new();
    encode_request_head(
        &mut out,
        &Method::GET,
        "/",
        &HeaderMap::new(),
        &FieldLines::default(),
        BodyFraming::Empty,
    );
    assert_eq!(out, b"GET / HTTP/1.1\r\n\r\n");
    let mut out = Vec::new();
    encode_request_head(
        &mut out,
        &Method::PUT,
        "/",
        &HeaderMap::new(),
        &FieldLines::default(),
        BodyFraming::Chunked,
    );
    assert_eq!(out, b"PUT / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n");
}

#[test]
fn added_lines_replace_the_fields_of_their_names() {
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("a.example"));
    headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
    headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.2"));
    let mut added = FieldLines::default();
    let xff = HeaderName::from_static("x-forwarded-for");
    assert!(added.push(&xff, |out| {
        out.extend_from_slice(b"10.0.0.1, 10.0.0.2, 10.0.0.3")
    }));
    let mut out = Vec::new();
    encode_request_head(
        &mut out,
        &Method::GET,
        "/",
        &headers,
        &added,
        BodyFraming::Empty,
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "GET / HTTP/1.1\r\nhost: a.example\r\nx-forwarded-for: 10.0.0.1, 10.0.0.2, 10.0.0.3\r\n\r\n"
    );
    added.insert_into(&mut headers);
    assert_eq!(headers.get_all("x-forwarded-for").iter().count(), 1);
    assert_eq!(headers["x-forwarded-for"], "10.0.0.1, 10.0.0.2, 10.0.0.3");
    assert_eq!(headers["host"], "a.example");
}

#[test]
fn added_lines_refuse_values_that_would_split_the_head_and_stop_at_capacity() {
    let mut added = FieldLines::default();
    let name = HeaderName::from_static("x-a");
    assert!(!added.push(&name, |out| out.extend_from_slice(b"ok\r\nx-evil: 1")));
    assert!(!added.push(&name, |out| out.push(0)));
    assert!(added.as_bytes().is_empty());
    assert!(added.push(&name, |out| out.extend_from_slice(b"tab\tok")));
    let pushed = (0..8)
        .filter(|_| added.push(&name, |out| out.push(b'1')))
        .count();
    assert_eq!(pushed, 3, "four lines in all");
    assert!(added.replaces(&name));
    assert!(!added.replaces(&HeaderName::from_static("x-b")));
    let mut headers = HeaderMap::new();
    added.insert_into(&mut headers);
    assert_eq!(headers.get_all("x-a").iter().count(), 1);
    assert_eq!(headers["x-a"], "1");
}

#[test]
fn chunk_lines_are_lowercase_hex() {
    for (len, line) in [
        (1usize, "1\r\n"),
        (15, "f\r\n"),
        (16, "10\r\n"),
        (65535, "ffff\r\n"),
    ] {
        let mut out = Vec::new();
        encode_chunk_start(&mut out, len);
        assert_eq!(out, line.as_bytes());
    }
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let mut out = Vec::new();
    encode_last_chunk(&mut out, Some(&trailers));
    assert_eq!(out, b"0\r\ngrpc-status: 0\r\n\r\n");
}

#[test]
fn a_head_is_parsed_once_complete_and_leaves_the_body() {
    let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: b"[..]);
    assert!(
        parse_response_head(&mut buf, &Method::GET, FieldsAs::Raw)
            .unwrap()
            .is_none()
    );
    buf.extend_from_slice(b"\r\n\r\nhello");
    let head = parse_response_head(&mut buf, &Method::GET, FieldsAs::Raw)
        .unwrap()
        .unwrap();
    assert_eq!(head.response.status(), StatusCode::OK);
    assert_eq!(head.response.version(), Version::HTTP_11);
    assert_eq!(super::headers_mut(&mut carried(&head))["x-a"], "b");
    assert_eq!(head.framing, ResponseFraming::Length(5));
    assert!(head.keep_alive);
    assert_eq!(&buf[..], b"hello");
}

#[test]
fn interim_answers_are_set_aside_and_101_refused() {
    let mut buf =
        BytesMut::from(&b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"[..]);
    let head = parse_response_head(&mut buf, &Method::POST, FieldsAs::Raw)
        .unwrap()
        .unwrap();
    assert_eq!(head.response.status(), StatusCode::NO_CONTENT);
    assert_eq!(head.framing, ResponseFraming::Empty);
    assert_eq!(head.interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    assert!(buf.is_empty());
    let err = parse(b"HTTP/1.1 101 Switching Protocols\r\n\r\n", &Method::GET).unwrap_err();
    assert_eq!(err, WireError::UnexpectedUpgrade);
}

#[test]
fn framing_follows_rfc_9112() {
    let framing = |head: &[u8], method: &Method| parse(head, method).unwrap().unwrap().framing;
    let get = Method::GET;
    assert_eq!(
        framing(
            b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\n",
            &Method::HEAD
        ),
        ResponseFraming::Empty
    );
    assert_eq!(
        framing(
            b"HTTP/1.1 304 Not Modified\r\ncontent-length: 3\r\n\r\n",
            &get
        ),
        ResponseFraming::Empty
    );
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\ncontent-length: 3, 3\r\n\r\n", &get),
        ResponseFraming::Length(3)
    );
    // A coding the proxy does not decode would reach the client unlabelled once
    // the hop's Transfer-Encoding is dropped: such a response is refused (502).
    for coded in [
        &b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: identity\r\ncontent-length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding: \r\n\r\n",
    ] {
        assert_eq!(
            parse(coded, &get).unwrap_err(),
            WireError::Malformed,
            "{coded:?}"
        );
    }
    // A 204 announces no length, whatever the backend wrote.
    let no_content = parse(
        b"HTTP/1.1 204 No Content\r\ncontent-length: 5\r\nx-a: b\r\n\r\n",
        &get,
    )
    .unwrap()
    .unwrap();
    assert_eq!(raw_text(&no_content).unwrap(), "x-a: b\r\n");
    let mut buf = BytesMut::from(&b"HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\n"[..]);
    let mapped = parse_response_head(&mut buf, &get, FieldsAs::Map)
        .unwrap()
        .unwrap();
    assert!(!mapped.response.headers().contains_key("content-length"));
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\n\r\n", &get),
        ResponseFraming::UntilClose
    );
    // Transfer-Encoding wins and Content-Length is dropped.
    let head = parse(
        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n",
        &get,
    )
    .unwrap()
    .unwrap();
    assert_eq!(head.framing, ResponseFraming::Chunked);
    assert!(!head.response.headers().contains_key("content-length"));
    assert!(
        !head.keep_alive,
        "both framings: the connection is not reused"
    );
}

#[test]
fn keep_alive_needs_http11_a_known_end_and_no_close() {
    let keep = |head: &[u8]| parse(head, &Method::GET).unwrap().unwrap().keep_alive;
    assert!(keep(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"));
    assert!(keep(
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nConnection: Keep-Alive\r\n\r\n"
    ));
    assert!(!keep(
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: keep-alive, close\r\n\r\n"
    ));
    assert!(!keep(b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"));
    assert!(!keep(b"HTTP/1.1 200 OK\r\n\r\n"));
}

#[test]
fn bad_heads_are_errors() {
    let get = Method::GET;
    assert_eq!(
        parse(b"HTTP/1.1 2x0 OK\r\n\r\n", &get).unwrap_err(),
        WireError::Malformed
    );
    assert_eq!(
        parse(b"garbage\r\n\r\n", &get).unwrap_err(),
        WireError::Malformed
    );
    for length in [
        "-1",
        "1, 2",
        "",
        "0x10",
        "99999999999999999999999",
        "3,",
        "3,,3",
        " ,3",
    ] {
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {length}\r\n\r\n");
        assert_eq!(
            parse(head.as_bytes(), &get).unwrap_err(),
            WireError::BadLength,
            "{length}"
        );
    }
    let mut many = String::from("HTTP/1.1 200 OK\r\n");
    for i in 0..200 {
        many.push_str(&format!("x-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(
        parse(many.as_bytes(), &get).unwrap_err(),
        WireError::TooLarge
    );
    let endless = format!("HTTP/1.1 200 OK\r\nx: {}", "v".repeat(70 * 1024));
    assert_eq!(
        parse(endless.as_bytes(), &get).unwrap_err(),
        WireError::TooLarge
    );
}

/// Decodes `wire` fed in pieces of `step` bytes; returns the body and trailers.
fn decode_in_steps(wire: &[u8], step: usize) -> Result<(Vec<u8>, Option<HeaderMap>), WireError> {
    let mut decoder = ChunkedDecoder::default();
    let mut buf = BytesMut::new();
    let mut body = Vec::new();
    let mut fed = 0;
    loop {
        match decoder.decode(&mut buf)? {
            Chunk::Data(data) => body.extend_from_slice(&data),
            Chunk::Trailers(trailers) => return Ok((body, Some(trailers))),
            Chunk::End => return Ok((body, None)),
            Chunk::Incomplete => {
                assert!(fed < wire.len(), "ran out of input");
                let next = (fed + step).min(wire.len());
                buf.extend_from_slice(&wire[fed..next]);
                fed = next;
            }
        }
    }
}

#[test]
fn chunked_bodies_decode_whatever_the_read_sizes() {
    let wire =
        b"5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\ngrpc-status: 0\r\n\r\n";
    for step in [1, 2, 3, 7, wire.len()] {
        let (body, trailers) = decode_in_steps(wire, step).unwrap();
        assert_eq!(body, b"helloabcdefghijklmnopqrstuvwxyz");
        assert_eq!(trailers.unwrap()["grpc-status"], "0");
    }
    let (body, trailers) = decode_in_steps(b"3\r\nabc\r\n0\r\n\r\n", 1).unwrap();
    assert_eq!(body, b"abc");
    assert!(trailers.is_none());
}

#[test]
fn bad_chunks_are_errors() {
    for wire in [
        &b"zz\r\n"[..],
        b"5\r\nhelloXX",
        b"\r\n",
        b"11111111111111111\r\n",
        b"5x\r\nhello\r\n",
        b"5;a\nb\r\nhello\r\n",
    ] {
        assert_eq!(
            decode_in_steps(wire, 1).unwrap_err(),
            WireError::Malformed,
            "{}",
            String::from_utf8_lossy(wire)
        );
    }
    let long_line = vec![b'1'; 5000];
    assert_eq!(
        decode_in_steps(&long_line, 4096).unwrap_err(),
        WireError::Malformed
    );
}

#[test]
fn fields_of_the_hop_are_taken_out_of_the_head() {
    let head = parse(
        b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\n\
          Trailer: x-sum\r\nUpgrade: h2c\r\nProxy-Connection: close\r\nX-End: kept\r\nContent-Length: 0\r\n\r\n",
        &Method::GET,
    )
    .unwrap()
    .unwrap();
    let mut response = carried(&head);
    let mut names: Vec<&str> = super::headers_mut(&mut response)
        .keys()
        .map(|n| n.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["content-length", "x-end"]);
    assert!(head.keep_alive);
    let closing = parse(
        b"HTTP/1.1 200 OK\r\nCONNECTION: Close\r\ncontent-length: 0\r\n\r\n",
        &Method::GET,
    )
    .unwrap()
    .unwrap();
    assert!(!closing.keep_alive);
    assert_eq!(
        super::headers_mut(&mut carried(&closing)).len(),
        1,
        "only content-length is left"
    );
}

/// The head's response with its raw fields carried as the body, as the proxy
/// carries them.
fn carried(head: &super::ResponseHead) -> http::Response<Option<super::RawFields>> {
    let mut response = http::Response::new(head.raw.clone());
    *response.headers_mut() = head.response.headers().clone();
    response
}

/// The raw runs of a parsed head, as text.
fn raw_text(head: &super::ResponseHead) -> Option<String> {
    let raw = head.raw.as_ref()?;
    Some(raw.runs().map(|run| String::from_utf8_lossy(run)).collect())
}

#[test]
fn fields_going_on_unchanged_stay_raw_and_parse_on_demand() {
    let wire: &[u8] =
        b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Mon, 30 Nov 2026 00:00:00 GMT\r\n\
        Content-Type: text/html\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\
        ETag: \"x\"\r\nKeep-Alive: timeout=5\r\nX-Last:  spaced  \r\n\r\nabc";
    let head = parse(wire, &Method::GET).unwrap().unwrap();
    // Content-Length (the writer sets it from the framing) and the hop's fields are
    // left out; everything else is the received bytes, in order.
    assert_eq!(
        raw_text(&head).unwrap(),
        "Server: nginx\r\nDate: Mon, 30 Nov 2026 00:00:00 GMT\r\nContent-Type: text/html\r\n\
         ETag: \"x\"\r\nX-Last:  spaced  \r\n"
    );
    assert!(head.response.headers().is_empty());
    let raw = head.raw.as_ref().unwrap();
    assert!(raw.has_date());
    // Parsed on demand, the map is what a parsed head has: Content-Length included.
    let mut response = carried(&head);
    let headers = super::headers_mut(&mut response).clone();
    assert!(response.body().is_none(), "the raw fields were taken");
    assert_eq!(headers["server"], "nginx");
    assert_eq!(headers["x-last"], "spaced");
    assert_eq!(headers["content-length"], "3");
    assert!(!headers.contains_key("connection"));

    // Without a body, Content-Length describes the resource and is forwarded.
    let head = parse(
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nKeep-Alive: timeout=5\r\n\r\n",
        &Method::HEAD,
    )
    .unwrap()
    .unwrap();
    assert_eq!(raw_text(&head).unwrap(), "Content-Length: 9\r\n");
    let raw = head.raw.as_ref().unwrap();
    assert!(!raw.has_date());
    assert_eq!(raw.to_map()["content-length"], "9");

    // Fields a Connection header names, or a head cut into too many runs, are
    // parsed into the map at once.
    let named = parse(
        b"HTTP/1.1 200 OK\r\nConnection: x-hop\r\nX-Hop: 1\r\ncontent-length: 0\r\n\r\n",
        &Method::GET,
    )
    .unwrap()
    .unwrap();
    assert!(raw_text(&named).is_none());
    let names: Vec<&str> = named
        .response
        .headers()
        .keys()
        .map(|n| n.as_str())
        .collect();
    assert_eq!(names, ["content-length"]);
    let mut cut = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..6 {
        cut.extend_from_slice(format!("x-{i}: v\r\nkeep-alive: 1\r\n").as_bytes());
    }
    cut.extend_from_slice(b"content-length: 0\r\n\r\n");
    // A line ending in a bare LF is not forwarded as it came.
    let bare = parse(
        b"HTTP/1.1 200 OK\r\nx-a: 1\nx-b: 2\r\ncontent-length: 0\r\n\r\n",
        &Method::GET,
    )
    .unwrap()
    .unwrap();
    assert!(raw_text(&bare).is_none());
    assert_eq!(bare.response.headers()["x-a"], "1");
    let cut = parse(&cut, &Method::GET).unwrap().unwrap();
    assert!(raw_text(&cut).is_none());
    assert_eq!(cut.response.headers().len(), 7);
}

fn parse_request(bytes: &[u8]) -> Result<Option<super::RequestHead>, WireError> {
    parse_request_head(&mut BytesMut::from(bytes), HeadLimits::DEFAULT)
}

#[test]
fn request_heads_carry_their_framing_and_keep_alive() {
    let head = parse_request(b"POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap()
        .unwrap();
    assert_eq!(head.request.method(), Method::POST);
    assert_eq!(head.request.uri(), "/a?b=1");
    assert_eq!(head.request.headers()["host"], "x");
    assert_eq!(head.body, BodyFraming::Length(5));
    assert!(head.keep_alive);
    assert!(!head.expect_continue);

    let head = parse_request(
        b"PUT / HTTP/1.1\r\ntransfer-encoding: Chunked\r\n\
          expect: 100-continue\r\nconnection: close\r\n\r\n",
    )
    .unwrap()
    .unwrap();
    assert_eq!(head.body, BodyFraming::Chunked);
    assert!(head.expect_continue);
    assert!(!head.keep_alive);

    let head = parse_request(b"GET / HTTP/1.0\r\ncontent-length: 0\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(head.request.version(), Version::HTTP_10);
    assert_eq!(head.body, BodyFraming::Empty);
    assert!(!head.keep_alive);
    let head = parse_request(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
        .unwrap()
        .unwrap();
    assert!(head.keep_alive);
}

#[test]
fn request_heads_wait_for_their_end_and_refuse_ambiguity() {
    assert!(
        parse_request(b"GET / HTTP/1.1\r\nhost: x\r\n")
            .unwrap()
            .is_none()
    );
    for (bytes, error) in [
        (
            &b"GET / HTTP/1.1\r\nbad header\r\n\r\n"[..],
            WireError::Malformed,
        ),
        (
            b"GET / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
            WireError::BadLength,
        ),
        (
            b"GET / HTTP/1.1\r\ncontent-length: -1\r\n\r\n",
            WireError::BadLength,
        ),
        (
            b"POST / HTTP/1.1\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n",
            WireError::BadFraming,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked, gzip\r\n\r\n",
            WireError::BadFraming,
        ),
        (
            b"POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n",
            WireError::BadFraming,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked, chunked\r\n\r\n",
            WireError::BadFraming,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n",
            WireError::BadFraming,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: , chunked\r\n\r\n",
            WireError::BadFraming,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: xchunked\r\n\r\n",
            WireError::BadFraming,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
            WireError::UnsupportedCoding,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: identity, chunked\r\n\r\n",
            WireError::UnsupportedCoding,
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n",
            WireError::UnsupportedCoding,
        ),
        (
            b"GET / HTTP/2.0\r\nhost: a\r\n\r\n",
            WireError::UnsupportedVersion,
        ),
        (
            b"GET / HTTP/3.1\r\nhost: a\r\n\r\n",
            WireError::UnsupportedVersion,
        ),
        (b"GET / HTTP/1.x\r\nhost: a\r\n\r\n", WireError::Malformed),
        (b"GET / HTTP/1.12\r\nhost: a\r\n\r\n", WireError::Malformed),
        (b"GE T / HTTP/1.1\r\nhost: a\r\n\r\n", WireError::Malformed),
        (b"GET / HTTP/2\r\nhost: a\r\n\r\n", WireError::Malformed),
        (
            b"GET / HTTP/2.0\r x\r\nhost: a\r\n\r\n",
            WireError::Malformed,
        ),
    ] {
        assert_eq!(parse_request(bytes).unwrap_err(), error, "{bytes:?}");
    }
    let mut many = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..200 {
        many.extend_from_slice(format!("x-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert_eq!(parse_request(&many).unwrap_err(), WireError::TooLarge);
}

#[test]
fn a_connection_field_that_only_says_close_or_keep_alive_is_acted_on_and_left_out() {
    let head = parse_request(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap()
        .unwrap();
    assert!(!head.keep_alive);
    assert!(!head.request.headers().contains_key("connection"));
    assert!(!head.names_fields);
    let head = parse_request(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
        .unwrap()
        .unwrap();
    assert!(head.keep_alive);
    assert!(!head.request.headers().contains_key("connection"));
    assert!(!head.names_fields);
    // Naming fields (an upgrade, fields to drop), it stays for the proxy.
    for value in ["upgrade", "keep-alive, x-private"] {
        let wire = format!("GET / HTTP/1.1\r\nConnection: {value}\r\nUpgrade: websocket\r\n\r\n");
        let head = parse_request(wire.as_bytes()).unwrap().unwrap();
        assert!(head.keep_alive, "{value}");
        assert!(head.names_fields, "{value}");
        assert_eq!(head.request.headers()["connection"], value);
    }
}

#[test]
fn heads_with_more_fields_than_fit_inline_keep_every_field() {
    for count in [15, 16, 17, 100] {
        let mut request = b"GET / HTTP/1.1\r\n".to_vec();
        let mut response = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n".to_vec();
        for i in 0..count {
            request.extend_from_slice(format!("x-{i}: v{i}\r\n").as_bytes());
            response.extend_from_slice(format!("x-{i}: v{i}\r\n").as_bytes());
        }
        request.extend_from_slice(b"\r\n");
        response.extend_from_slice(b"\r\n");
        let parsed = parse_request(&request).unwrap().unwrap();
        assert_eq!(parsed.request.headers().len(), count, "request, {count}");
        assert_eq!(
            parsed.request.headers()[format!("x-{}", count - 1)],
            format!("v{}", count - 1)
        );
        let head = parse_response_head(
            &mut BytesMut::from(&response[..]),
            &Method::GET,
            FieldsAs::Map,
        )
        .unwrap()
        .unwrap();
        // Content-Length stays in a parsed map; every x- field is there.
        assert_eq!(
            head.response.headers().len(),
            count + 1,
            "response, {count}"
        );
        assert_eq!(head.response.headers()["x-0"], "v0");
    }
}

#[test]
fn pipelined_heads_leave_the_next_request_in_the_buffer() {
    let mut buf = BytesMut::from(&b"GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n"[..]);
    let first = parse_request_head(&mut buf, HeadLimits::DEFAULT)
        .unwrap()
        .unwrap();
    assert_eq!(first.request.uri(), "/1");
    assert_eq!(&buf[..], b"GET /2 HTTP/1.1\r\n\r\n");
}

#[test]
fn response_heads_replace_framing_and_connection_fields() {
    use super::ResponseBodyFraming;
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("text/plain"));
    headers.insert("content-length", HeaderValue::from_static("999"));
    headers.insert("connection", HeaderValue::from_static("keep-alive"));
    headers.insert(
        "date",
        HeaderValue::from_static("Mon, 30 Nov 2026 00:00:00 GMT"),
    );
    let mut out = Vec::new();
    super::encode_response_head(
        &mut out,
        StatusCode::OK,
        (None, &headers),
        ResponseBodyFraming::Length(3),
        Some(b"close"),
        b"Tue, 01 Dec 2026 00:00:00 GMT",
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ndate: Mon, 30 Nov 2026 00:00:00 GMT\r\n\
         content-length: 3\r\nconnection: close\r\n\r\n"
    );

    let mut out = Vec::new();
    super::encode_response_head(
        &mut out,
        StatusCode::NOT_FOUND,
        (None, &HeaderMap::new()),
        ResponseBodyFraming::Chunked,
        None,
        b"Tue, 01 Dec 2026 00:00:00 GMT",
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 404 Not Found\r\ndate: Tue, 01 Dec 2026 00:00:00 GMT\r\n\
         transfer-encoding: chunked\r\n\r\n"
    );

    // A 101 keeps its own Connection and Upgrade.
    let mut headers = HeaderMap::new();
    headers.insert("connection", HeaderValue::from_static("upgrade"));
    headers.insert("upgrade", HeaderValue::from_static("websocket"));
    let mut out = Vec::new();
    super::encode_response_head(
        &mut out,
        StatusCode::SWITCHING_PROTOCOLS,
        (None, &headers),
        ResponseBodyFraming::None,
        Some(b"close"),
        b"Tue, 01 Dec 2026 00:00:00 GMT",
    );
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("connection: upgrade\r\nupgrade: websocket\r\n"),
        "{text}"
    );
    assert!(!text.contains("close"), "{text}");
}

/// Feeds `wire` to `decoder` `step` bytes at a time, then closes the input; returns
/// the body bytes and how it ended.
fn read_body(
    mut decoder: BodyDecoder,
    wire: &[u8],
    step: usize,
) -> (Vec<u8>, Result<Option<HeaderMap>, WireError>) {
    let mut buf = BytesMut::new();
    let mut body = Vec::new();
    let mut fed = 0;
    loop {
        match decoder.decode(&mut buf) {
            Ok(Chunk::Data(data)) => {
                assert!(!data.is_empty(), "empty data step");
                body.extend_from_slice(&data);
            }
            Ok(Chunk::Trailers(trailers)) => return (body, Ok(Some(trailers))),
            Ok(Chunk::End) => return (body, Ok(None)),
            Err(error) => return (body, Err(error)),
            Ok(Chunk::Incomplete) if fed == wire.len() => {
                return (body, decoder.end_of_input().map(|()| None));
            }
            Ok(Chunk::Incomplete) => {
                let next = (fed + step).min(wire.len());
                buf.extend_from_slice(&wire[fed..next]);
                fed = next;
            }
        }
    }
}

#[test]
fn bodies_of_every_framing_decode_whatever_the_read_sizes() {
    for step in [1, 3, 64] {
        let (body, end) = read_body(BodyDecoder::request(BodyFraming::Length(5)), b"hello", step);
        assert_eq!((body.as_slice(), end), (&b"hello"[..], Ok(None)));

        let chunked = BodyDecoder::request(BodyFraming::Chunked);
        let (body, end) = read_body(chunked, b"2\r\nhi\r\n0\r\nx-t: 1\r\n\r\n", step);
        assert_eq!(body, b"hi");
        assert_eq!(end.unwrap().unwrap()["x-t"], "1");

        let until_close = BodyDecoder::response(ResponseFraming::UntilClose);
        let (body, end) = read_body(until_close, b"all of it", step);
        assert_eq!((body.as_slice(), end), (&b"all of it"[..], Ok(None)));
    }
    let mut empty = BodyDecoder::response(ResponseFraming::Length(0));
    assert!(empty.is_done());
    assert_eq!(empty.remaining(), Some(0));
    assert_eq!(empty.decode(&mut BytesMut::new()), Ok(Chunk::End));
}

#[test]
fn a_sized_body_stops_at_its_length_and_leaves_the_next_message() {
    let mut decoder = BodyDecoder::request(BodyFraming::Length(3));
    assert_eq!(decoder.remaining(), Some(3));
    let mut buf = BytesMut::from(&b"abcGET / HTTP/1.1\r\n"[..]);
    assert_eq!(decoder.decode(&mut buf), Ok(Chunk::Data("abc".into())));
    assert!(decoder.is_done());
    assert_eq!(decoder.decode(&mut buf), Ok(Chunk::End));
    assert_eq!(&buf[..], b"GET / HTTP/1.1\r\n");
}

#[test]
fn cut_and_malformed_bodies_fail_and_stay_failed() {
    let (body, end) = read_body(BodyDecoder::request(BodyFraming::Length(10)), b"short", 2);
    assert_eq!(
        (body.as_slice(), end),
        (&b"short"[..], Err(WireError::Truncated))
    );
    let (_, end) = read_body(BodyDecoder::request(BodyFraming::Chunked), b"5\r\nhel", 2);
    assert_eq!(end, Err(WireError::Truncated));

    let mut decoder = BodyDecoder::request(BodyFraming::Chunked);
    let mut buf = BytesMut::from(&b"zz\r\n"[..]);
    assert_eq!(decoder.decode(&mut buf), Err(WireError::Malformed));
    assert!(decoder.is_failed());
    let mut good = BytesMut::from(&b"0\r\n\r\n"[..]);
    assert_eq!(decoder.decode(&mut good), Err(WireError::Malformed));
    assert_eq!(decoder.end_of_input(), Err(WireError::Malformed));

    let mut abandoned = BodyDecoder::abandoned();
    assert!(abandoned.is_failed());
    assert_eq!(abandoned.remaining(), None);
    let mut data = BytesMut::from(&b"data"[..]);
    assert_eq!(abandoned.decode(&mut data), Err(WireError::Truncated));
}

#[test]
fn fields_wanted_in_a_map_are_parsed_into_it_at_once() {
    let wire = b"HTTP/1.1 200 OK\r\nx-a: b\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n";
    let raw = parse_response_head(&mut BytesMut::from(&wire[..]), &Method::GET, FieldsAs::Raw)
        .unwrap()
        .unwrap();
    assert!(raw.raw.is_some());
    assert!(raw.response.headers().is_empty());

    let mapped = parse_response_head(&mut BytesMut::from(&wire[..]), &Method::GET, FieldsAs::Map)
        .unwrap()
        .unwrap();
    assert!(mapped.raw.is_none());
    let headers = mapped.response.headers();
    assert_eq!(headers["x-a"], "b");
    assert_eq!(headers["content-length"], "0");
    assert!(
        headers.get("connection").is_none(),
        "hop fields are dropped"
    );
    assert!(mapped.keep_alive);
}

#[test]
fn a_later_http_1_minor_is_read_as_http_1_1() {
    let head = parse_request(b"GET /a HTTP/1.2\r\nhost: a\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(head.request.version(), Version::HTTP_11);
    assert_eq!(head.request.uri(), "/a");
    assert!(head.keep_alive);
    // The line may arrive in pieces: the rewritten digit stays in the buffer.
    let mut buf = BytesMut::from(&b"GET / HTTP/1.9"[..]);
    assert!(
        parse_request_head(&mut buf, HeadLimits::DEFAULT)
            .unwrap()
            .is_none()
    );
    buf.extend_from_slice(b"\r\nhost: a\r\n\r\n");
    let head = parse_request_head(&mut buf, HeadLimits::DEFAULT)
        .unwrap()
        .unwrap();
    assert_eq!(head.request.version(), Version::HTTP_11);
}

#[test]
fn an_overlong_request_line_is_414_and_overlong_fields_431() {
    let mut line = b"GET /".to_vec();
    line.resize(MAX_HEAD + 10, b'a');
    assert_eq!(parse_request(&line).unwrap_err(), WireError::TargetTooLong);
    let mut fields = b"GET / HTTP/1.1\r\nx-big: ".to_vec();
    fields.resize(MAX_HEAD + 10, b'a');
    assert_eq!(parse_request(&fields).unwrap_err(), WireError::TooLarge);
    assert!(super::error_response(WireError::TargetTooLong).starts_with(b"HTTP/1.1 414 "));
    assert!(super::error_response(WireError::TooLarge).starts_with(b"HTTP/1.1 431 "));
    assert!(super::error_response(WireError::UnsupportedCoding).starts_with(b"HTTP/1.1 501 "));
    assert!(super::error_response(WireError::UnsupportedVersion).starts_with(b"HTTP/1.1 505 "));
}

#[test]
fn request_head_limits_hold_both_ways() {
    let head_with = |fields: usize, value_len: usize| {
        let mut head = b"GET / HTTP/1.1\r\nhost: a\r\n".to_vec();
        for n in 1..fields {
            head.extend_from_slice(format!("x-{n}: ").as_bytes());
            head.resize(head.len() + value_len, b'v');
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        head
    };
    let parse = |head: &[u8], limits: HeadLimits| {
        parse_request_head(&mut BytesMut::from(head), limits).map(|head| head.is_some())
    };
    let small = HeadLimits::new(2048, 8).unwrap();
    assert_eq!(parse(&head_with(8, 10), small), Ok(true));
    assert_eq!(parse(&head_with(9, 10), small), Err(WireError::TooLarge));
    assert_eq!(parse(&head_with(2, 2100), small), Err(WireError::TooLarge));
    // Over the limit before it is complete: refused without waiting for the end.
    let partial = &head_with(2, 2100)[..2080];
    assert_eq!(parse(partial, small), Err(WireError::TooLarge));
    let mut line = b"GET /".to_vec();
    line.resize(2100, b'a');
    assert_eq!(parse(&line, small), Err(WireError::TargetTooLong));
    // Larger limits take what the defaults refuse.
    let large = HeadLimits::new(256 * 1024, 512).unwrap();
    let many = head_with(300, 10);
    assert_eq!(parse(&many, HeadLimits::DEFAULT), Err(WireError::TooLarge));
    assert_eq!(parse(&many, large), Ok(true));
    let big = head_with(2, 100 * 1024);
    assert_eq!(parse(&big, HeadLimits::DEFAULT), Err(WireError::TooLarge));
    assert_eq!(parse(&big, large), Ok(true));
    let max_fields = head_with(HeadLimits::MAX_FIELDS, 1);
    let most = HeadLimits::new(HeadLimits::MAX_BYTES, HeadLimits::MAX_FIELDS).unwrap();
    assert_eq!(parse(&max_fields, most), Ok(true));
}

#[test]
fn request_head_limits_out_of_range_are_refused() {
    use super::HeadLimitError;
    assert_eq!(HeadLimits::new(1023, 8), Err(HeadLimitError::Bytes(1023)));
    assert_eq!(
        HeadLimits::new(HeadLimits::MAX_BYTES + 1, 8),
        Err(HeadLimitError::Bytes(HeadLimits::MAX_BYTES + 1))
    );
    assert_eq!(HeadLimits::new(4096, 0), Err(HeadLimitError::Fields(0)));
    assert_eq!(
        HeadLimits::new(4096, HeadLimits::MAX_FIELDS + 1),
        Err(HeadLimitError::Fields(HeadLimits::MAX_FIELDS + 1))
    );
    assert_eq!(
        HeadLimits::new(MAX_HEAD, super::MAX_HEADERS),
        Ok(HeadLimits::DEFAULT)
    );
}

#[test]
fn chunk_sizes_take_leading_zeros_but_no_signs_prefixes_or_control_bytes() {
    let decode = |body: &[u8]| {
        let mut decoder = ChunkedDecoder::default();
        let mut buf = BytesMut::from(body);
        let mut data = Vec::new();
        loop {
            match decoder.decode(&mut buf)? {
                Chunk::Data(bytes) => data.extend_from_slice(&bytes),
                Chunk::End | Chunk::Trailers(_) => return Ok(data),
                Chunk::Incomplete => return Err(WireError::Truncated),
            }
        }
    };
    assert_eq!(
        decode(b"0000000000000000000005\r\nhello\r\n0\r\n\r\n").unwrap(),
        b"hello"
    );
    assert_eq!(
        decode(b"5;name=\"v\"\r\nhello\r\n00\r\n\r\n").unwrap(),
        b"hello"
    );
    assert_eq!(decode(b"0000000000000000000\r\n\r\n").unwrap(), b"");
    for refused in [
        &b"+5\r\nhello\r\n0\r\n\r\n"[..],
        b"-5\r\nhello\r\n0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"10000000000000000\r\n",
        b"5;a\x00b\r\nhello\r\n0\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5\rx\r\nhello\r\n0\r\n\r\n",
    ] {
        assert_eq!(
            decode(refused).unwrap_err(),
            WireError::Malformed,
            "{refused:?}"
        );
    }
}

#[test]
fn interim_heads_are_kept_for_the_client() {
    let wire: &[u8] = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n\
        HTTP/1.1 100 Continue\r\n\r\n\
        HTTP/1.1 102 Processing\r\n\r\n\
        HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    // Whatever the reads, the interim heads survive a final head that is not in yet.
    for split in [10, 60, 80, wire.len() - 10] {
        let mut buf = BytesMut::from(&wire[..split]);
        assert!(
            parse_response_head(&mut buf, &Method::GET, FieldsAs::Raw)
                .unwrap()
                .is_none()
        );
        buf.extend_from_slice(&wire[split..]);
        let head = parse_response_head(&mut buf, &Method::GET, FieldsAs::Raw)
            .unwrap()
            .unwrap();
        assert_eq!(head.response.status(), StatusCode::OK);
        assert_eq!(
            String::from_utf8(head.interim).unwrap(),
            "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n\
             HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
        );
        assert_eq!(&buf[..], b"ok");
    }
    let plain = parse(
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
        &Method::GET,
    )
    .unwrap()
    .unwrap();
    assert!(plain.interim.is_empty());
}

#[test]
fn a_version_is_judged_the_same_whatever_the_reads() {
    for (wire, expected) in [
        (
            &b"GET / HTTP/2.0\r\nhost: a\r\n\r\n"[..],
            Err(WireError::UnsupportedVersion),
        ),
        (
            b"GET / HTTP/2\r\nhost: a\r\n\r\n",
            Err(WireError::Malformed),
        ),
        (b"GET / HTTP/1.3\r\nhost: a\r\n\r\n", Ok(Version::HTTP_11)),
    ] {
        for split in 1..wire.len() {
            let mut buf = BytesMut::from(&wire[..split]);
            let first = parse_request_head(&mut buf, HeadLimits::DEFAULT);
            let outcome = match first {
                Ok(None) => {
                    buf.extend_from_slice(&wire[split..]);
                    parse_request_head(&mut buf, HeadLimits::DEFAULT)
                }
                other => other,
            };
            let outcome = outcome.map(|head| head.map(|head| head.request.version()));
            assert_eq!(outcome, expected.map(Some), "{wire:?} split at {split}");
        }
    }
}

#[test]
fn chunk_and_trailer_limits_hold_whatever_the_reads_and_bare_lf_ends_nothing() {
    let decode = |body: &[u8]| {
        let mut decoder = ChunkedDecoder::default();
        let mut buf = BytesMut::from(body);
        loop {
            match decoder.decode(&mut buf)? {
                Chunk::Data(_) => {}
                Chunk::End | Chunk::Trailers(_) => return Ok(()),
                Chunk::Incomplete => return Err(WireError::Truncated),
            }
        }
    };
    let mut long_line = b"5;".to_vec();
    long_line.resize(5000, b'x');
    long_line.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    assert_eq!(decode(&long_line), Err(WireError::Malformed));
    let mut big_trailers = b"0\r\n".to_vec();
    for i in 0..100 {
        big_trailers.extend_from_slice(format!("x-{i}: {}\r\n", "v".repeat(700)).as_bytes());
    }
    big_trailers.extend_from_slice(b"\r\n");
    assert_eq!(decode(&big_trailers), Err(WireError::TooLarge));
    assert_eq!(decode(b"0\r\n\n"), Err(WireError::Malformed));
    assert_eq!(decode(b"0\r\nx: y\n\r\n"), Err(WireError::Malformed));
    assert_eq!(decode(b"0\r\nx: y\r\n\r\n"), Ok(()));
}
