use bytes::BytesMut;
use http::header::HeaderMap;
use http::{HeaderValue, Method, StatusCode, Version};

use super::{
    Chunk, ChunkedDecoder, RequestFraming, ResponseFraming, WireError, encode_chunk_start,
    encode_last_chunk, encode_request_head, parse_response_head,
};

fn parse(bytes: &[u8], method: &Method) -> Result<Option<super::ResponseHead>, WireError> {
    parse_response_head(&mut BytesMut::from(bytes), method)
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
        RequestFraming::Length(12),
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
        RequestFraming::None,
    );
    assert_eq!(out, b"GET / HTTP/1.1\r\n\r\n");
    let mut out = Vec::new();
    encode_request_head(
        &mut out,
        &Method::PUT,
        "/",
        &HeaderMap::new(),
        RequestFraming::Chunked,
    );
    assert_eq!(out, b"PUT / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n");
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
        parse_response_head(&mut buf, &Method::GET)
            .unwrap()
            .is_none()
    );
    buf.extend_from_slice(b"\r\n\r\nhello");
    let head = parse_response_head(&mut buf, &Method::GET)
        .unwrap()
        .unwrap();
    assert_eq!(head.response.status(), StatusCode::OK);
    assert_eq!(head.response.version(), Version::HTTP_11);
    assert_eq!(head.response.headers()["x-a"], "b");
    assert_eq!(head.framing, ResponseFraming::Length(5));
    assert!(head.keep_alive);
    assert_eq!(&buf[..], b"hello");
}

#[test]
fn interim_answers_are_skipped_and_101_refused() {
    let mut buf =
        BytesMut::from(&b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"[..]);
    let head = parse_response_head(&mut buf, &Method::POST)
        .unwrap()
        .unwrap();
    assert_eq!(head.response.status(), StatusCode::NO_CONTENT);
    assert_eq!(head.framing, ResponseFraming::Empty);
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
    assert_eq!(
        framing(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
            &get
        ),
        ResponseFraming::Chunked
    );
    assert_eq!(
        framing(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\n",
            &get
        ),
        ResponseFraming::UntilClose
    );
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
    for length in ["-1", "1, 2", "", "0x10", "99999999999999999999999"] {
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
    let mut names: Vec<&str> = head.response.headers().keys().map(|n| n.as_str()).collect();
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
        closing.response.headers().len(),
        1,
        "only content-length is left"
    );
}
