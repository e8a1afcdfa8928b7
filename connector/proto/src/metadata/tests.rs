use http::HeaderMap;
use proptest::prelude::*;

use super::*;

fn request(metadata: Vec<Metadata>) -> ConnectRequest {
    ConnectRequest {
        dest: "http://test.com/a/b?q=1".to_owned(),
        kind: ConnectionType::Http,
        metadata,
    }
}

#[test]
fn request_parts_from_metadata() {
    let req = request(vec![
        Metadata::new("HttpMethod", "POST"),
        Metadata::new("HttpHost", "example.com"),
        Metadata::new("HttpHeader:Accept", "text/html"),
        Metadata::new("HttpHeader:Accept", "application/json"),
        Metadata::new("HttpHeader:Content-Length", "3"),
        Metadata::new(
            "HttpHeader:Cf-Cloudflared-Proxy-Connection-Upgrade",
            "websocket",
        ),
        Metadata::new("FlowID", "ignored"),
    ]);
    let parts = request_parts(&req).unwrap();
    assert_eq!(parts.method, Method::POST);
    assert_eq!(parts.uri.path(), "/a/b");
    assert_eq!(parts.uri.query(), Some("q=1"));
    assert_eq!(parts.headers["host"], "example.com");
    let accept: Vec<_> = parts.headers.get_all("accept").iter().collect();
    assert_eq!(accept, ["text/html", "application/json"]);
    assert!(!parts.headers.contains_key(PROXY_CONNECTION_UPGRADE));
    assert_eq!(parts.headers.len(), 4);
    assert!(request_body_expected(&req));
}

#[test]
fn method_defaults_to_get_and_is_passed_unchanged() {
    assert_eq!(request_parts(&request(vec![])).unwrap().method, Method::GET);
    let lower = request_parts(&request(vec![Metadata::new("HttpMethod", "get")])).unwrap();
    assert_eq!(lower.method.as_str(), "get");
}

#[test]
fn header_keys_need_exactly_one_colon() {
    let err = request_parts(&request(vec![Metadata::new("HttpHeader:X:Y", "v")])).unwrap_err();
    assert!(matches!(err, Error::Metadata(_)));
    assert!(err.to_string().contains("exactly one ':'"), "{err}");
    // A key that merely contains the marker is still a header key, as in cloudflared.
    let parts = request_parts(&request(vec![Metadata::new("XHttpHeader:Foo", "v")])).unwrap();
    assert_eq!(parts.headers["foo"], "v");
    assert!(header_name_of("HttpHost").is_none());
}

#[test]
fn tcp_streams_have_no_request_head() {
    let tcp = ConnectRequest {
        dest: "10.0.0.1:22".to_owned(),
        kind: ConnectionType::Tcp,
        metadata: vec![Metadata::new(FLOW_ID, "1")],
    };
    assert!(request_parts(&tcp).is_err());
    assert!(request_body_expected(&tcp));
}

#[test]
fn body_only_with_length_or_chunked() {
    assert!(!request_body_expected(&request(vec![Metadata::new(
        "HttpMethod",
        "POST"
    )])));
    assert!(request_body_expected(&request(vec![Metadata::new(
        "HttpHeader:Transfer-Encoding",
        "gzip, chunked"
    )])));
    assert!(!request_body_expected(&request(vec![Metadata::new(
        "HttpHeader:Transfer-Encoding",
        "gzip"
    )])));
}

#[test]
fn canonical_names_follow_go() {
    assert_eq!(canonical_header_name("content-type"), "Content-Type");
    assert_eq!(
        canonical_header_name("SEC-WEBSOCKET-ACCEPT"),
        "Sec-Websocket-Accept"
    );
    assert_eq!(canonical_header_name("x-forwarded-for"), "X-Forwarded-For");
    assert_eq!(canonical_header_name("a--b"), "A--B");
    assert_eq!(canonical_header_name("bad name"), "bad name");
}

#[test]
fn response_metadata_has_status_and_canonical_headers() {
    let mut headers = HeaderMap::new();
    headers.append("content-type", "text/plain".parse().unwrap());
    headers.append("set-cookie", "a=1".parse().unwrap());
    headers.append("set-cookie", "b=2".parse().unwrap());
    headers.append("transfer-encoding", "chunked".parse().unwrap());
    headers.append("content-length", "5".parse().unwrap());
    let meta = response_metadata(StatusCode::SWITCHING_PROTOCOLS, &headers);
    assert_eq!(
        meta,
        vec![
            Metadata::new("HttpStatus", "101"),
            Metadata::new("HttpHeader:Content-Type", "text/plain"),
            Metadata::new("HttpHeader:Set-Cookie", "a=1"),
            Metadata::new("HttpHeader:Set-Cookie", "b=2"),
            Metadata::new("HttpHeader:Content-Length", "5"),
        ]
    );
    let parts = response_parts(&http_response(StatusCode::SWITCHING_PROTOCOLS, &headers)).unwrap();
    assert_eq!(parts.status, StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(parts.headers.get_all("set-cookie").iter().count(), 2);
    assert!(!parts.headers.contains_key("transfer-encoding"));
}

#[test]
fn response_parts_needs_status_and_success() {
    let missing = ConnectResponse {
        error: String::new(),
        metadata: vec![Metadata::new("HttpHeader:A", "b")],
    };
    assert!(
        response_parts(&missing)
            .unwrap_err()
            .to_string()
            .contains("HttpStatus")
    );
    let bad = ConnectResponse {
        error: String::new(),
        metadata: vec![Metadata::new("HttpStatus", "abc")],
    };
    assert!(response_parts(&bad).is_err());
    assert!(response_parts(&ConnectResponse::failure("origin down")).is_err());
}

#[test]
fn request_metadata_round_trips_through_request_parts() {
    let (parts, ()) = http::Request::builder()
        .method("PUT")
        .uri("http://origin.example/x")
        .header("host", "origin.example")
        .header("x-custom", "1")
        .header("x-custom", "2")
        .body(())
        .unwrap()
        .into_parts();
    let meta = request_metadata(&parts);
    assert_eq!(meta[0], Metadata::new("HttpMethod", "PUT"));
    assert_eq!(meta[1], Metadata::new("HttpHost", "origin.example"));
    assert!(meta.contains(&Metadata::new("HttpHeader:X-Custom", "2")));
    let back = request_parts(&ConnectRequest {
        dest: parts.uri.to_string(),
        kind: ConnectionType::Http,
        metadata: meta,
    })
    .unwrap();
    assert_eq!(back.method, parts.method);
    assert_eq!(back.uri, parts.uri);
    assert_eq!(back.headers, parts.headers);
}

proptest! {
    #[test]
    fn response_head_round_trips(
        status in 100u16..1000,
        headers in proptest::collection::vec(("[a-z][a-z0-9-]{0,10}", "[ -~]{0,16}"), 0..6),
    ) {
        let status = StatusCode::from_u16(status).unwrap();
        let mut map = HeaderMap::new();
        for (name, value) in &headers {
            if name == "transfer-encoding" {
                continue;
            }
            map.append(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value.trim()).unwrap());
        }
        let parts = response_parts(&http_response(status, &map)).unwrap();
        prop_assert_eq!(parts.status, status);
        prop_assert_eq!(parts.headers, map);
    }

    #[test]
    fn arbitrary_metadata_never_panics(pairs in proptest::collection::vec((".{0,16}", ".{0,16}"), 0..6), dest in ".{0,24}") {
        let req = ConnectRequest {
            dest,
            kind: ConnectionType::Http,
            metadata: pairs.iter().map(|(k, v)| Metadata::new(k.clone(), v.clone())).collect(),
        };
        if let Ok(parts) = request_parts(&req) {
            // Every header that survived came from a well-formed header key.
            prop_assert!(parts.headers.len() <= req.metadata.len());
        }
        let response = ConnectResponse { error: String::new(), metadata: req.metadata.clone() };
        if let Ok(parts) = response_parts(&response) {
            prop_assert!(req.metadata.iter().any(|m| m.key == HTTP_STATUS && m.val == parts.status.as_str()));
        }
    }
}
