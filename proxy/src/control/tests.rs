use super::*;

#[test]
fn constant_time_eq_compares_whole_strings() {
    assert!(constant_time_eq(b"secret", b"secret"));
    assert!(!constant_time_eq(b"secreT", b"secret"));
    assert!(!constant_time_eq(b"secret-and-more", b"secret"));
    assert!(!constant_time_eq(b"sec", b"secret"));
    assert!(!constant_time_eq(b"", b"secret"));
    assert!(constant_time_eq(b"", b""));
}

#[test]
fn json_content_types() {
    let mut headers = http::HeaderMap::new();
    assert!(!is_json(&headers));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("Application/JSON; charset=utf-8"),
    );
    assert!(is_json(&headers));
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    assert!(!is_json(&headers));
}

#[test]
fn exposed_control_needs_a_token() {
    let public: SocketAddr = "0.0.0.0:8081".parse().unwrap();
    let loopback: SocketAddr = "[::1]:8081".parse().unwrap();
    assert!(matches!(
        check_exposure(public, None, false),
        Err(Error::InsecureControl { .. })
    ));
    assert!(check_exposure(public, Some("t"), false).is_ok());
    assert!(check_exposure(public, None, true).is_ok());
    assert!(check_exposure(loopback, None, false).is_ok());
}
