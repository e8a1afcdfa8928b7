use http::{HeaderMap, HeaderValue, StatusCode};

use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

#[test]
fn stream_types_follow_cloudflared_order() {
    assert_eq!(StreamType::of(&HeaderMap::new()), StreamType::Http);
    let h = headers(&[(UPGRADE_HEADER, "control-stream")]);
    assert_eq!(StreamType::of(&h), StreamType::Control);
    let h = headers(&[(UPGRADE_HEADER, "websocket")]);
    assert_eq!(StreamType::of(&h), StreamType::Websocket);
    let h = headers(&[(UPGRADE_HEADER, "update-configuration")]);
    assert_eq!(StreamType::of(&h), StreamType::Configuration);
    // Compared exactly.
    let h = headers(&[(UPGRADE_HEADER, "WebSocket")]);
    assert_eq!(StreamType::of(&h), StreamType::Http);
    // TCP wins over the control stream, not over websocket.
    let h = headers(&[(UPGRADE_HEADER, "control-stream"), (TCP_SRC_HEADER, "x")]);
    assert_eq!(StreamType::of(&h), StreamType::Tcp);
    let h = headers(&[(UPGRADE_HEADER, "websocket"), (TCP_SRC_HEADER, "x")]);
    assert_eq!(StreamType::of(&h), StreamType::Websocket);
    let h = headers(&[(TCP_SRC_HEADER, "")]);
    assert_eq!(StreamType::of(&h), StreamType::Http);
}

#[test]
fn serialization_matches_the_spec_format() {
    let h = headers(&[("content-type", "text/plain"), ("x-a", "1"), ("x-a", "2")]);
    let s = serialize_headers(&h);
    // "Content-Type" / "text/plain", no padding.
    assert_eq!(s, "Q29udGVudC1UeXBl:dGV4dC9wbGFpbg;WC1B:MQ;WC1B:Mg", "{s}");
    assert!(!s.contains('='));
    let back = deserialize_headers(&s).unwrap();
    assert_eq!(back, h);
    assert!(deserialize_headers("").unwrap().is_empty());
}

#[test]
fn malformed_serializations_are_errors() {
    for bad in ["abc", "a:b:c", "!!:QQ", "QQ:!!", ";", "WC1B:MQ;"] {
        assert!(deserialize_headers(bad).is_err(), "{bad}");
    }
}

#[test]
fn response_head_serializes_user_headers_only() {
    let h = headers(&[
        ("content-length", "5"),
        ("transfer-encoding", "chunked"),
        ("cf-int-cloudflared-tracing", "span"),
        ("cf-proxy-x", "hidden"),
        ("sec-websocket-accept", "abc"),
        ("upgrade", "websocket"),
        ("x-kept", "yes"),
    ]);
    let head = response_head(StatusCode::SWITCHING_PROTOCOLS, &h);
    assert_eq!(head.status(), StatusCode::OK);
    let out = head.headers();
    assert_eq!(out["content-length"], "5");
    assert_eq!(out[TRACING_HEADER], "span");
    assert_eq!(out[RESPONSE_META], META_ORIGIN);
    let decoded = ResponseHead::decode(head.status(), out).unwrap();
    assert!(!decoded.from_connector);
    let user = decoded.headers;
    assert_eq!(user["content-length"], "5");
    assert_eq!(user["sec-websocket-accept"], "abc");
    assert_eq!(user["upgrade"], "websocket");
    assert_eq!(user["x-kept"], "yes");
    assert_eq!(user[TRACING_HEADER], "span");
    assert!(!user.contains_key("transfer-encoding"));
    assert!(!user.contains_key("cf-proxy-x"));
}

#[test]
fn error_head_is_a_502_from_the_connector() {
    let head = error_head();
    assert_eq!(head.status(), StatusCode::BAD_GATEWAY);
    let decoded = ResponseHead::decode(head.status(), head.headers()).unwrap();
    assert!(decoded.from_connector);
    assert!(decoded.headers.is_empty());
}
