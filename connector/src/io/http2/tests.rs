use http::{Method, Request};

use super::stream::request_parts;
use crate::proto::http2::{StreamType, TCP_SRC_HEADER, UPGRADE_HEADER};

fn head(request: Request<()>) -> http::request::Parts {
    request.into_parts().0
}

#[test]
fn http_requests_keep_their_head_and_get_a_host() {
    let h = head(
        Request::post("https://app.test/a?b=1")
            .header("x-y", "z")
            .body(())
            .unwrap(),
    );
    let parts = request_parts(&h, StreamType::Http).unwrap();
    assert_eq!(parts.method, Method::POST);
    assert_eq!(parts.uri, "https://app.test/a?b=1");
    assert_eq!(parts.headers["host"], "app.test");
    assert_eq!(parts.headers["x-y"], "z");
}

#[test]
fn missing_scheme_and_authority_are_filled_like_cloudflared() {
    let h = head(Request::get("/only/path").body(()).unwrap());
    let parts = request_parts(&h, StreamType::Http).unwrap();
    assert_eq!(parts.uri, "http://localhost:8080/only/path");
}

#[test]
fn websockets_get_the_upgrade_headers_and_lose_the_marker() {
    let h = head(
        Request::get("http://ws.test/ws")
            .header(UPGRADE_HEADER, "websocket")
            .header("sec-websocket-key", "k")
            .body(())
            .unwrap(),
    );
    let parts = request_parts(&h, StreamType::Websocket).unwrap();
    assert!(!parts.headers.contains_key(UPGRADE_HEADER));
    assert_eq!(parts.headers["connection"], "Upgrade");
    assert_eq!(parts.headers["upgrade"], "websocket");
    assert_eq!(parts.headers["sec-websocket-version"], "13");
    assert_eq!(parts.headers["sec-websocket-key"], "k");
}

#[test]
fn tcp_streams_become_connect_to_an_ip_and_port() {
    let h = head(
        Request::connect("10.0.0.1:5432")
            .header(TCP_SRC_HEADER, "warp")
            .body(())
            .unwrap(),
    );
    let parts = request_parts(&h, StreamType::Tcp).unwrap();
    assert_eq!(parts.method, Method::CONNECT);
    assert_eq!(parts.uri, "10.0.0.1:5432");
    assert!(!parts.headers.contains_key(TCP_SRC_HEADER));
    let h = head(Request::connect("db.internal:5432").body(()).unwrap());
    assert!(request_parts(&h, StreamType::Tcp).is_err());
}
