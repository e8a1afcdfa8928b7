use std::time::{Duration, SystemTime};

use http::HeaderMap;
use http::header::RETRY_AFTER;

use super::*;

fn retry_after(value: &str, now: SystemTime) -> Option<String> {
    let mut headers = HeaderMap::new();
    headers.insert(RETRY_AFTER, value.parse().unwrap());
    sanitize_retry_after(&mut headers, now);
    headers
        .get(RETRY_AFTER)
        .map(|value| value.to_str().unwrap().to_owned())
}

#[test]
fn retry_after_is_clamped_to_a_day_or_dropped() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert_eq!(retry_after("5", now).as_deref(), Some("5"));
    assert_eq!(
        retry_after("18446744073709551615", now).as_deref(),
        Some("86400")
    );
    assert_eq!(retry_after("99999999999999999999999", now), None);
    assert_eq!(retry_after("soon", now), None);
    assert_eq!(retry_after("-3", now), None);
    // An HTTP date two minutes ahead, one far ahead, one in the past.
    let ahead = httpdate::fmt_http_date(now + Duration::from_secs(120));
    assert_eq!(retry_after(&ahead, now).as_deref(), Some("120"));
    assert_eq!(
        retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now).as_deref(),
        Some("86400")
    );
    assert_eq!(
        retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now).as_deref(),
        Some("0")
    );
}

#[test]
fn a_directory_must_list_urls() {
    assert!(check_directory(br#"{"newNonce":"https://a/n","newAccount":"https://a/a","newOrder":"https://a/o","meta":{"termsOfService":"x y"}}"#).is_ok());
    assert!(matches!(
        check_directory(br#"{"newNonce":"not a url","newAccount":"https://a/a"}"#),
        Err(Failure::BadDirectory { field, .. }) if field == "newNonce"
    ));
    assert!(matches!(
        check_directory(b"[1]"),
        Err(Failure::DirectoryNotObject)
    ));
    assert!(matches!(
        check_directory(b"{"),
        Err(Failure::DirectoryNotObject)
    ));
}

#[test]
fn trust_must_be_pem_certificates() {
    assert!(matches!(
        roots(Some("nonsense"), false),
        Err(Error::Tls(culvert_tls::Error::NoCertificate))
    ));
    let key = rcgen::KeyPair::generate().unwrap();
    let ca = rcgen::CertificateParams::new(Vec::<String>::new())
        .unwrap()
        .self_signed(&key)
        .unwrap();
    assert_eq!(roots(Some(&ca.pem()), false).unwrap().len(), 1);
}
