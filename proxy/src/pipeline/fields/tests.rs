//! The header rules of a proxy hop, case by case.

use super::{Forwarding, Hop, IpText, request_host, strip_hop_by_hop};
use http::{HeaderMap, HeaderValue};

#[test]
fn hop_by_hop_headers_and_connection_tokens_are_removed() {
    let mut headers = HeaderMap::new();
    headers.insert(
        "connection",
        HeaderValue::from_static("close, x-private, Host"),
    );
    headers.insert("host", HeaderValue::from_static("a.example"));
    headers.insert("x-private", HeaderValue::from_static("1"));
    headers.insert("transfer-encoding", HeaderValue::from_static("chunked"));
    headers.insert("keep-alive", HeaderValue::from_static("timeout=5"));
    headers.insert("x-kept", HeaderValue::from_static("1"));
    strip_hop_by_hop(&mut headers);
    let mut names: Vec<&str> = headers.keys().map(|n| n.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["host", "x-kept"],
        "Host is end to end whatever Connection names"
    );
}

#[test]
fn ip_text_matches_display() {
    for octet in 0..=255u8 {
        let ips = [
            std::net::IpAddr::from([octet, 0, 255, octet]),
            std::net::IpAddr::from([10, octet, octet, 9]),
        ];
        for ip in ips {
            let text = IpText::new(ip);
            assert_eq!(text.as_bytes(), ip.to_string().as_bytes());
            assert!(!text.is_ipv6());
        }
    }
    for ip in [
        "2001:db8::1",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "::ffff:255.255.255.255",
        "::",
    ] {
        let text = IpText::new(ip.parse().unwrap());
        assert_eq!(text.as_bytes(), ip.as_bytes());
        assert!(text.is_ipv6());
    }
}

#[test]
fn headers_without_hop_by_hop_names_are_left_alone() {
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("a.example"));
    headers.append("accept", HeaderValue::from_static("*/*"));
    headers.append("accept", HeaderValue::from_static("text/html"));
    let before = headers.clone();
    strip_hop_by_hop(&mut headers);
    assert_eq!(headers, before);
}

fn peer(address: &str) -> IpText {
    IpText::new(address.parse::<std::net::SocketAddr>().unwrap().ip())
}

fn hop(peer: &IpText) -> Hop<'_> {
    Hop {
        peer,
        scheme: "https",
        host: "a.example",
    }
}

#[test]
fn forwarded_for_appends_the_client() {
    let mut headers = HeaderMap::new();
    headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
    headers.append("x-forwarded-for", HeaderValue::from_static("10.0.0.2"));
    Forwarding::default()
        .fields(&headers, &hop(&peer("192.0.2.7:5000")))
        .insert_into(&mut headers);
    assert_eq!(headers["x-forwarded-for"], "10.0.0.1, 10.0.0.2, 192.0.2.7");
}

#[test]
fn an_untrusted_client_cannot_set_proto_host_or_forwarded() {
    let mut headers = HeaderMap::new();
    headers.insert("x-forwarded-proto", HeaderValue::from_static("http"));
    headers.insert("x-forwarded-host", HeaderValue::from_static("evil.example"));
    headers.insert("forwarded", HeaderValue::from_static("for=1.2.3.4"));
    Forwarding::default()
        .fields(&headers, &hop(&peer("[2001:db8::1]:443")))
        .insert_into(&mut headers);
    assert_eq!(headers["x-forwarded-proto"], "https");
    assert_eq!(headers["x-forwarded-host"], "a.example");
    assert_eq!(
        headers["forwarded"],
        "for=\"[2001:db8::1]\";proto=https;host=\"a.example\""
    );
}

#[test]
fn trusted_hops_keep_their_headers_and_name_the_client() {
    let trusted = Forwarding { trusted_hops: 1 };
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-forwarded-for",
        HeaderValue::from_static("198.51.100.9, 10.0.0.5"),
    );
    headers.insert("x-forwarded-proto", HeaderValue::from_static("http"));
    headers.insert("forwarded", HeaderValue::from_static("for=198.51.100.9"));
    let address = "10.0.0.6:1000".parse().unwrap();
    assert_eq!(trusted.client(&headers, address).to_string(), "10.0.0.5");
    assert_eq!(
        Forwarding::default().client(&headers, address).to_string(),
        "10.0.0.6"
    );
    trusted
        .fields(&headers, &hop(&peer("10.0.0.6:1000")))
        .insert_into(&mut headers);
    assert_eq!(headers["x-forwarded-proto"], "http");
    assert_eq!(
        headers["forwarded"],
        "for=198.51.100.9, for=10.0.0.6;proto=https;host=\"a.example\""
    );
}

#[test]
fn te_survives_only_as_trailers() {
    let mut headers = HeaderMap::new();
    headers.insert("te", HeaderValue::from_static("gzip, trailers"));
    strip_hop_by_hop(&mut headers);
    assert_eq!(headers["te"], "trailers");
    let mut headers = HeaderMap::new();
    headers.insert("te", HeaderValue::from_static("gzip"));
    strip_hop_by_hop(&mut headers);
    assert!(!headers.contains_key("te"));
}

#[test]
fn upgrades_need_connection_upgrade_on_http11() {
    use super::upgrade_protocol;
    use http::Version;
    let mut headers = HeaderMap::new();
    headers.insert("upgrade", HeaderValue::from_static("websocket"));
    assert!(upgrade_protocol(&headers, Version::HTTP_11).is_none());
    headers.insert(
        "connection",
        HeaderValue::from_static("keep-alive, Upgrade"),
    );
    assert_eq!(
        upgrade_protocol(&headers, Version::HTTP_11).unwrap(),
        "websocket"
    );
    assert!(upgrade_protocol(&headers, Version::HTTP_2).is_none());
    // h2c is this connection's business, never passed on.
    headers.insert("upgrade", HeaderValue::from_static("H2C"));
    assert!(upgrade_protocol(&headers, Version::HTTP_11).is_none());
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
    for accepted in [
        &b"a.example"[..],
        b"a.example:80",
        b"127.0.0.1:8080",
        b"[::1]",
        b"[2001:db8::1]:443",
        b"xn--bcher-kva.example",
        b"a%2eb",
    ] {
        assert_eq!(
            request_host(&host(&[accepted]), &origin_form, Version::HTTP_11).as_deref(),
            std::str::from_utf8(accepted).ok(),
        );
    }
    // Not `host[:port]`: refused rather than routed on or forwarded verbatim.
    for refused in [
        &b"a@b"[..],
        b"b:abc",
        b"b/admin",
        b"b:80:80",
        b"",
        b":80",
        b"[::1",
        b"[::1]x",
        b"[::1]:8a",
        b"a\\b",
    ] {
        assert_eq!(
            request_host(&host(&[refused]), &origin_form, Version::HTTP_11),
            None,
            "{refused:?}"
        );
    }
    let with_userinfo: Uri = "http://user:pw@a.example/x".parse().unwrap();
    assert_eq!(
        request_host(&host(&[b"a.example"]), &with_userinfo, Version::HTTP_11),
        None,
        "userinfo in an absolute-form target"
    );
}
