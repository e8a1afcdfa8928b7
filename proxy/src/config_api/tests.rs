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
fn exposed_control_needs_a_token_and_tls() {
    let public: SocketAddr = "0.0.0.0:8081".parse().unwrap();
    let loopback: SocketAddr = "[::1]:8081".parse().unwrap();
    let refused = |result: Result<(), Error>| matches!(result, Err(Error::InsecureControl { .. }));
    assert!(refused(check_exposure(public, None, false, false)));
    assert!(refused(check_exposure(public, Some("t"), false, false)));
    assert!(refused(check_exposure(public, None, true, false)));
    assert!(check_exposure(public, Some("t"), true, false).is_ok());
    assert!(check_exposure(public, None, false, true).is_ok());
    assert!(check_exposure(loopback, None, false, false).is_ok());
}

#[test]
fn health_is_ok_until_a_worker_stops() {
    assert_eq!(health(0).0, StatusCode::OK);
    let (status, body) = health(1);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["stoppedWorkers"], 1);
}
