use super::proxy::{add_forwarded_for, request_host, splitmix64, strip_hop_by_hop};
use http::{HeaderMap, HeaderValue};

#[test]
fn hop_by_hop_headers_and_connection_tokens_are_removed() {
    let mut headers = HeaderMap::new();
    headers.insert("connection", HeaderValue::from_static("close, x-private"));
    headers.insert("x-private", HeaderValue::from_static("1"));
    headers.insert("transfer-encoding", HeaderValue::from_static("chunked"));
    headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
    headers.insert("x-kept", HeaderValue::from_static("1"));
    strip_hop_by_hop(&mut headers);
    let names: Vec<&str> = headers.keys().map(|n| n.as_str()).collect();
    assert_eq!(names, ["x-kept"]);
}

#[test]
fn forwarded_for_appends_the_client() {
    let mut headers = HeaderMap::new();
    headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
    headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.2"));
    add_forwarded_for(&mut headers, "192.0.2.7:5000".parse().unwrap());
    assert_eq!(headers["x-forwarded-for"], "10.0.0.1, 10.0.0.2, 192.0.2.7");
}

#[test]
fn splitmix_matches_reference() {
    // First output of splitmix64 seeded with 0 (state advanced once).
    assert_eq!(splitmix64(0x9E37_79B9_7F4A_7C15), 0xE220_A839_7B1D_CDAF);
}

#[test]
fn the_routed_host_is_one_validated_value() {
    use http::{Uri, Version};
    let origin_form: Uri = "/x".parse().unwrap();
    let absolute: Uri = "http://a.example/x".parse().unwrap();
    let host = |values: &[&[u8]]| {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("host", HeaderValue::from_bytes(value).unwrap());
        }
        headers
    };
    assert_eq!(
        request_host(&host(&[b"b.example:8080"]), &origin_form, Version::HTTP_11).as_deref(),
        Some("b.example:8080")
    );
    assert_eq!(
        request_host(&host(&[b"b.example"]), &absolute, Version::HTTP_11).as_deref(),
        Some("a.example"),
        "absolute form wins"
    );
    assert_eq!(
        request_host(&host(&[b"a", b"b"]), &origin_form, Version::HTTP_11),
        None,
        "two Host headers"
    );
    assert_eq!(
        request_host(&host(&[b"a\xffb"]), &origin_form, Version::HTTP_11),
        None,
        "not visible ASCII"
    );
    assert_eq!(
        request_host(&host(&[b"a b"]), &origin_form, Version::HTTP_11),
        None,
        "space"
    );
    assert_eq!(
        request_host(&host(&[]), &origin_form, Version::HTTP_11),
        None,
        "HTTP/1.1 needs Host"
    );
    assert_eq!(
        request_host(&host(&[]), &origin_form, Version::HTTP_10).as_deref(),
        Some("")
    );
}
