use super::*;

#[test]
fn query_values_are_percent_encoded() {
    let call = Call::new(Method::GET, "/zones".to_owned())
        .query("account.id", "0123")
        .query("name", "a b&c=d/é")
        .query("page", "2");
    assert_eq!(
        call.path_and_query(),
        "/zones?account.id=0123&name=a%20b%26c%3Dd%2F%C3%A9&page=2"
    );
}

#[test]
fn settings_are_checked_before_anything_is_sent() {
    let token = || ApiToken::new("token-value").unwrap();
    let loopback = "http://127.0.0.1:1/client/v4";
    let cases = [
        Client::builder(token()).base_url("http://example.com/client/v4"),
        Client::builder(token())
            .base_url(loopback)
            .timeout(Duration::ZERO),
        Client::builder(token())
            .base_url(loopback)
            .rate_limit(RateLimit {
                requests: 0,
                per: Duration::from_secs(1),
            }),
        Client::builder(token())
            .base_url(loopback)
            .retry(RetryPolicy {
                max_attempts: 0,
                ..RetryPolicy::default()
            }),
        Client::builder(token())
            .system_roots(false)
            .extra_ca_pem("not pem"),
    ];
    for builder in cases {
        assert!(builder.build().is_err());
    }
    assert!(Client::builder(token()).base_url(loopback).build().is_ok());
}

#[test]
fn the_client_never_prints_its_token() {
    let client = Client::builder(ApiToken::new("s3cr3t-token-value").unwrap())
        .base_url("http://127.0.0.1:1/client/v4")
        .build()
        .unwrap();
    let printed = format!("{client:?}");
    assert!(!printed.contains("s3cr3t"), "{printed}");
    assert!(format!("{:?}", client.authorization).contains("Sensitive"));
}
