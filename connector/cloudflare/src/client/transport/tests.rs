use super::*;

#[test]
fn http_is_allowed_only_on_loopback() {
    for good in [
        "https://api.cloudflare.com/client/v4",
        "https://api.cloudflare.com/client/v4/",
        "http://127.0.0.1:8080/client/v4",
        "http://127.1.2.3/client/v4",
        "http://localhost:9/client/v4",
        "http://[::1]:9/client/v4",
    ] {
        assert!(BaseUrl::parse(good).is_ok(), "{good}");
    }
    for bad in [
        "http://api.cloudflare.com/client/v4",
        "http://10.0.0.1/client/v4",
        "http://localhost.example.com/client/v4",
        "http://127.0.0.1.nip.io/client/v4",
        "ftp://127.0.0.1/",
        "https://user:pw@api.cloudflare.com/",
        "https://api.cloudflare.com/client/v4?x=1",
        "/client/v4",
        "not a url",
    ] {
        assert!(BaseUrl::parse(bad).is_err(), "{bad}");
    }
    let message = BaseUrl::parse("http://api.cloudflare.com/client/v4")
        .unwrap_err()
        .to_string();
    assert!(message.contains("loopback"), "{message}");
}

#[test]
fn paths_join_below_the_prefix() {
    let base = BaseUrl::parse("https://api.cloudflare.com/client/v4/").unwrap();
    assert_eq!(
        base.join("/zones?page=2").unwrap().to_string(),
        "https://api.cloudflare.com/client/v4/zones?page=2"
    );
}
