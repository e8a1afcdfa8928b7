//! The client against a scripted server on loopback: pagination, retries, the rate
//! budget, what each endpoint sends, TLS with an extra CA, and that the token never
//! shows in an error.

#![allow(clippy::unwrap_used, reason = "tests")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use culvert_cloudflare::{
    AccountId, ApiToken, Client, Error, IngressRule, NewDnsRecord, RateLimit, RecordId, TunnelId,
    ZoneId,
};
use serde_json::json;
use support::{Reply, Server, TOKEN, fast_retries, printed};

const ACCOUNT: &str = "699d98642c564d2e855e9661899b7252";
const ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";
const TUNNEL: &str = "f70ff985-a4ef-4643-bbbc-4a0ed4fc8415";

fn account() -> AccountId {
    ACCOUNT.parse().unwrap()
}

fn zone() -> ZoneId {
    ZONE.parse().unwrap()
}

fn tunnel_id() -> TunnelId {
    TUNNEL.parse().unwrap()
}

fn tunnel_json(name: &str) -> serde_json::Value {
    json!({"id": TUNNEL, "account_tag": ACCOUNT, "name": name,
           "created_at": "2026-01-25T20:47:05Z", "deleted_at": null,
           "config_src": "cloudflare", "status": "inactive", "connections": []})
}

fn record_json(id: &str, name: &str) -> serde_json::Value {
    json!({"id": id, "zone_id": ZONE, "zone_name": "example.com", "name": name,
           "type": "CNAME", "content": format!("{TUNNEL}.cfargotunnel.com"),
           "proxied": true, "ttl": 1, "comment": null,
           "created_on": "2026-01-01T00:00:00Z", "modified_on": "2026-01-01T00:00:00Z"})
}

fn verify_ok() -> Reply {
    Reply::ok(json!({"id": "a1b2", "status": "active"}))
}

#[tokio::test]
async fn lists_are_walked_across_three_pages() {
    let server = Server::start(|seen| {
        let page: u32 = seen.query("page").unwrap().parse().unwrap();
        let per_page: u32 = seen.query("per_page").unwrap().parse().unwrap();
        assert_eq!(per_page, 100);
        // The server's own page size is 2, five records in all.
        let records: Vec<_> = (1..=5)
            .skip((page as usize - 1) * 2)
            .take(2)
            .map(|i| record_json(&format!("rec{i}"), "app.example.com"))
            .collect();
        Reply::page(json!(records), page, 2, 5)
    })
    .await;
    let records = server
        .client()
        .dns_records(&zone(), Some("CNAME"), Some("app.example.com"))
        .await
        .unwrap();
    let ids: Vec<_> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["rec1", "rec2", "rec3", "rec4", "rec5"]);
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    for (i, request) in seen.iter().enumerate() {
        assert_eq!(request.method, "GET");
        assert_eq!(request.path(), format!("/zones/{ZONE}/dns_records"));
        assert_eq!(request.query("type").as_deref(), Some("CNAME"));
        assert_eq!(request.query("name").as_deref(), Some("app.example.com"));
        assert_eq!(request.query("page"), Some((i + 1).to_string()));
    }
}

#[tokio::test]
async fn a_list_that_never_ends_is_cut_off() {
    let server = Server::start(|seen| {
        let page: u32 = seen.query("page").unwrap().parse().unwrap();
        Reply::page(
            json!([tunnel_json(&format!("t{page}"))]),
            page,
            1,
            1_000_000,
        )
    })
    .await;
    let error = server
        .client()
        .list_tunnels(&account(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::TooManyPages { limit: 200, .. }),
        "{error}"
    );
    assert_eq!(server.seen().len(), 200);
}

#[tokio::test(start_paused = true)]
async fn throttled_requests_wait_out_retry_after() {
    let server = Server::scripted(vec![
        Reply::error(
            429,
            971,
            "Please wait and consider throttling your request speed",
        )
        .with_header("retry-after", "7"),
        verify_ok(),
    ])
    .await;
    let status = server.client().verify_token().await.unwrap();
    assert!(status.is_active());
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].at - seen[0].at >= Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn a_throttled_post_is_retried_because_cloudflare_did_not_act_on_it() {
    let server = Server::scripted(vec![
        Reply::error(429, 971, "throttled").with_header("retry-after", "2"),
        Reply::ok(record_json("rec1", "app.example.com")),
    ])
    .await;
    let record = NewDnsRecord::tunnel_cname("app.example.com", &tunnel_id());
    server
        .client()
        .create_dns_record(&zone(), &record)
        .await
        .unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].at - seen[0].at >= Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_beyond_the_cap_ends_the_call() {
    let server = Server::scripted(vec![
        Reply::error(429, 971, "throttled").with_header("retry-after", "3600"),
        verify_ok(),
    ])
    .await;
    let error = server.client().verify_token().await.unwrap_err();
    assert!(error.is_rate_limited() && error.is_transient(), "{error}");
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let server = Server::scripted(vec![
        Reply::error(503, 0, "unavailable"),
        Reply::Answer {
            status: 502,
            headers: Vec::new(),
            body: "<html>bad gateway</html>".to_owned(),
        },
        Reply::ok(tunnel_json("edge")),
    ])
    .await;
    let tunnel = server
        .client()
        .tunnel(&account(), &tunnel_id())
        .await
        .unwrap();
    assert_eq!(tunnel.name, "edge");
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn server_errors_exhaust_the_attempts() {
    let server = Server::start(|_| Reply::error(500, 10001, "internal")).await;
    let client = server.builder().retry(fast_retries(3)).build().unwrap();
    let error = client.tunnel(&account(), &tunnel_id()).await.unwrap_err();
    assert!(error.is_transient(), "{error}");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(500));
    assert_eq!(error.api_errors()[0].code, 10001);
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn a_post_the_server_saw_is_not_retried() {
    let server = Server::scripted(vec![Reply::error(503, 0, "unavailable"), verify_ok()]).await;
    let error = server
        .client()
        .create_tunnel(&account(), "edge", None)
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    assert_eq!(server.seen().len(), 1);

    let server = Server::scripted(vec![Reply::Close, verify_ok()]).await;
    let record = NewDnsRecord::txt("a.example.com", "\"x\"");
    let error = server
        .client()
        .create_dns_record(&zone(), &record)
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::Transport { connect: false, .. }),
        "{error}"
    );
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn a_lost_connection_is_retried_for_idempotent_methods() {
    let server = Server::scripted(vec![
        Reply::Close,
        Reply::ok(json!({"id": "372e67954025e0ba6aaa6d586b9e0b59"})),
    ])
    .await;
    let id: RecordId = "372e67954025e0ba6aaa6d586b9e0b59".parse().unwrap();
    let deleted = server
        .client()
        .delete_dns_record(&zone(), &id)
        .await
        .unwrap();
    assert_eq!(deleted, id);
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out_each_attempt() {
    let server = Server::start(|_| Reply::Hang).await;
    let client = server
        .builder()
        .retry(fast_retries(2))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let error = client.verify_token().await.unwrap_err();
    assert!(
        matches!(error, Error::Timeout { .. }) && error.is_transient(),
        "{error}"
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].at - seen[0].at >= Duration::from_secs(5));
}

#[tokio::test]
async fn nobody_listening_is_a_transient_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = Client::builder(ApiToken::new(TOKEN).unwrap())
        .base_url(format!("http://{addr}/client/v4"))
        .retry(fast_retries(2))
        .build()
        .unwrap();
    let error = client.verify_token().await.unwrap_err();
    assert!(
        matches!(error, Error::Transport { connect: true, .. }) && error.is_transient(),
        "{error}"
    );
}

#[tokio::test]
async fn an_answer_too_large_is_refused_and_not_retried() {
    let huge = "x".repeat(culvert_cloudflare::MAX_BODY + 1);
    let server = Server::start(move |_| Reply::Answer {
        status: 200,
        headers: Vec::new(),
        body: huge.clone(),
    })
    .await;
    let error = server.client().verify_token().await.unwrap_err();
    assert!(matches!(error, Error::TooLarge { .. }), "{error}");
    assert!(!error.is_transient());
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_request_past_the_budget_waits_for_a_token() {
    let server = Server::start(|_| verify_ok()).await;
    let client = server
        .builder()
        .rate_limit(RateLimit {
            requests: 2,
            per: Duration::from_secs(60),
        })
        .build()
        .unwrap();
    // A copy with another token shares the budget.
    let other = client.with_token(ApiToken::new("another-token").unwrap());
    client.verify_token().await.unwrap();
    other.verify_token().await.unwrap();
    client.verify_token().await.unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen[1].at - seen[0].at < Duration::from_secs(60));
    assert!(seen[2].at - seen[0].at >= Duration::from_secs(60));
    assert_eq!(
        seen[1].authorization.as_deref(),
        Some("Bearer another-token")
    );
}

#[tokio::test]
async fn each_endpoint_sends_what_the_contract_says() {
    let server = Server::start(|seen| {
        let tunnel_path = format!("/accounts/{ACCOUNT}/cfd_tunnel/{TUNNEL}");
        let records_path = format!("/zones/{ZONE}/dns_records");
        let configuration = json!({"tunnel_id": TUNNEL, "version": 4,
            "config": {"ingress": [{"service": "http_status:404"}]},
            "source": "cloudflare", "created_at": "2026-01-25T20:47:05Z"});
        match (seen.method.as_str(), seen.path()) {
            ("GET", "/user/tokens/verify") => verify_ok(),
            ("POST", p) if p == format!("/accounts/{ACCOUNT}/cfd_tunnel") => {
                let mut tunnel = tunnel_json("edge");
                tunnel["token"] = json!("eyJhIjoiYWJjIn0=");
                Reply::ok(tunnel)
            }
            ("GET", p) if p == format!("/accounts/{ACCOUNT}/cfd_tunnel") => {
                Reply::page(json!([tunnel_json("edge")]), 1, 50, 1)
            }
            ("GET", p) if p == tunnel_path => Reply::ok(tunnel_json("edge")),
            ("DELETE", p) if p == tunnel_path => {
                let mut tunnel = tunnel_json("edge");
                tunnel["deleted_at"] = json!("2026-01-26T00:00:00Z");
                Reply::ok(tunnel)
            }
            ("GET", p) if p == format!("{tunnel_path}/token") => {
                Reply::ok(json!("eyJhIjoiYWJjIn0="))
            }
            ("GET" | "PUT", p) if p == format!("{tunnel_path}/configurations") => {
                Reply::ok(configuration)
            }
            ("GET", "/zones") => Reply::page(
                json!([{"id": ZONE, "name": "example.com", "status": "active",
                        "account": {"id": ACCOUNT, "name": "Demo"}}]),
                1,
                50,
                1,
            ),
            ("GET", p) if p == records_path => {
                Reply::page(json!([record_json("rec1", "app.example.com")]), 1, 100, 1)
            }
            ("POST", p) if p == records_path => Reply::ok(record_json("rec2", "b.example.com")),
            ("PUT", p) if p == format!("{records_path}/rec2") => {
                Reply::ok(record_json("rec2", "b.example.com"))
            }
            ("DELETE", p) if p == format!("{records_path}/rec2") => {
                Reply::ok(json!({"id": "rec2"}))
            }
            _ => Reply::error(404, 7003, "Could not route"),
        }
    })
    .await;
    let client = server.client();
    client.verify_token().await.unwrap();
    let created = client
        .create_tunnel(&account(), "edge", Some(&[7u8; 32]))
        .await
        .unwrap();
    assert_eq!(created.token.unwrap().expose(), "eyJhIjoiYWJjIn0=");
    assert_eq!(
        client
            .list_tunnels(&account(), Some("edge"))
            .await
            .unwrap()
            .len(),
        1
    );
    client.tunnel(&account(), &tunnel_id()).await.unwrap();
    let deleted = client
        .delete_tunnel(&account(), &tunnel_id())
        .await
        .unwrap();
    assert!(deleted.deleted_at.is_some());
    let token = client.tunnel_token(&account(), &tunnel_id()).await.unwrap();
    assert_eq!(token.expose(), "eyJhIjoiYWJjIn0=");
    let configuration = client
        .tunnel_configuration(&account(), &tunnel_id())
        .await
        .unwrap();
    assert_eq!(configuration.version, 4);
    let rules = [
        IngressRule {
            hostname: Some("app.example.com".to_owned()),
            path: None,
            service: "http://10.0.0.1:80".to_owned(),
            origin_request: None,
        },
        IngressRule {
            hostname: None,
            path: None,
            service: "http_status:404".to_owned(),
            origin_request: None,
        },
    ];
    client
        .put_tunnel_configuration(&account(), &tunnel_id(), &rules)
        .await
        .unwrap();
    let zones = client.zones(&account(), Some("example.com")).await.unwrap();
    assert_eq!(zones[0].id, zone());
    client
        .dns_records(&zone(), None, Some("app.example.com"))
        .await
        .unwrap();
    let record = NewDnsRecord::tunnel_cname("b.example.com", &tunnel_id());
    let created = client.create_dns_record(&zone(), &record).await.unwrap();
    client
        .update_dns_record(&zone(), &created.id, &record)
        .await
        .unwrap();
    client
        .delete_dns_record(&zone(), &created.id)
        .await
        .unwrap();

    let seen = server.seen();
    let lines: Vec<String> = seen
        .iter()
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    let expected = [
        "GET /user/tokens/verify".to_owned(),
        format!("POST /accounts/{ACCOUNT}/cfd_tunnel"),
        format!("GET /accounts/{ACCOUNT}/cfd_tunnel?name=edge&is_deleted=false&page=1&per_page=50"),
        format!("GET /accounts/{ACCOUNT}/cfd_tunnel/{TUNNEL}"),
        format!("DELETE /accounts/{ACCOUNT}/cfd_tunnel/{TUNNEL}"),
        format!("GET /accounts/{ACCOUNT}/cfd_tunnel/{TUNNEL}/token"),
        format!("GET /accounts/{ACCOUNT}/cfd_tunnel/{TUNNEL}/configurations"),
        format!("PUT /accounts/{ACCOUNT}/cfd_tunnel/{TUNNEL}/configurations"),
        format!(
            "GET /zones?account.id={ACCOUNT}&name=example.com&status=active&page=1&per_page=50"
        ),
        format!("GET /zones/{ZONE}/dns_records?name=app.example.com&page=1&per_page=100"),
        format!("POST /zones/{ZONE}/dns_records"),
        format!("PUT /zones/{ZONE}/dns_records/rec2"),
        format!("DELETE /zones/{ZONE}/dns_records/rec2"),
    ];
    assert_eq!(lines, expected);
    for request in &seen {
        assert_eq!(
            request.authorization.as_deref(),
            Some(&*format!("Bearer {TOKEN}"))
        );
        let has_body = !request.body.is_empty();
        assert_eq!(
            request.content_type.is_some(),
            has_body,
            "{}",
            request.target
        );
    }
    let body = |i: usize| serde_json::from_str::<serde_json::Value>(&seen[i].body).unwrap();
    assert_eq!(
        body(1),
        json!({"name": "edge", "config_src": "cloudflare",
               "tunnel_secret": "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="})
    );
    assert_eq!(
        body(7),
        json!({"config": {"ingress": [
            {"hostname": "app.example.com", "service": "http://10.0.0.1:80"},
            {"service": "http_status:404"}]}})
    );
    assert_eq!(
        body(10),
        json!({"type": "CNAME", "name": "b.example.com",
               "content": format!("{TUNNEL}.cfargotunnel.com"), "proxied": true, "ttl": 1})
    );
    assert_eq!(body(11), body(10));
}

#[tokio::test]
async fn values_the_api_would_refuse_are_refused_before_sending() {
    let server = Server::start(|_| verify_ok()).await;
    let client = server.client();
    let no_catch_all = [IngressRule {
        hostname: Some("a.example.com".to_owned()),
        path: None,
        service: "http://a:80".to_owned(),
        origin_request: None,
    }];
    let errors = [
        client
            .put_tunnel_configuration(&account(), &tunnel_id(), &no_catch_all)
            .await
            .unwrap_err(),
        client
            .put_tunnel_configuration(&account(), &tunnel_id(), &[])
            .await
            .unwrap_err(),
        client
            .create_tunnel(&account(), "edge", Some(&[1u8; 31]))
            .await
            .unwrap_err(),
        client
            .create_tunnel(&account(), "", None)
            .await
            .unwrap_err(),
    ];
    for error in errors {
        assert!(matches!(error, Error::Invalid { .. }), "{error}");
    }
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn https_with_an_extra_ca() {
    let (ca_pem, config) = tls_material();
    let server = Server::start_tls(config, |_| verify_ok()).await;
    let base = format!("https://localhost:{}/client/v4", server.addr.port());
    let client = Client::builder(ApiToken::new(TOKEN).unwrap())
        .base_url(&base)
        .system_roots(false)
        .extra_ca_pem(ca_pem)
        .build()
        .unwrap();
    assert!(client.verify_token().await.unwrap().is_active());

    // Without the CA the same server is not trusted, and that is not retried forever.
    let untrusting = Client::builder(ApiToken::new(TOKEN).unwrap())
        .base_url(&base)
        .system_roots(false)
        .extra_ca_pem(tls_material().0)
        .retry(fast_retries(2))
        .build()
        .unwrap();
    let error = untrusting.verify_token().await.unwrap_err();
    assert!(matches!(error, Error::Transport { .. }), "{error}");
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_token_never_appears_in_an_error() {
    let mut errors: Vec<Error> = Vec::new();
    // The server answers every failure this client reports, one per request, and
    // echoes the token back in a message as a hostile server might.
    let echo = format!("bad token {TOKEN} given");
    let server = Server::scripted(vec![
        Reply::error(401, 10000, "Authentication error"),
        Reply::error(403, 9109, &echo),
        Reply::error(404, 7003, "Could not route"),
        Reply::error(409, 1013, "tunnel name taken"),
        Reply::error(400, 81053, "record exists"),
        Reply::error(429, 971, &echo).with_header("retry-after", "3600"),
        Reply::json(
            200,
            json!({"success": true, "errors": [], "result": {"id": TOKEN}}),
        ),
        Reply::Answer {
            status: 200,
            headers: Vec::new(),
            body: format!("{TOKEN} is not json"),
        },
    ])
    .await;
    let client = server.builder().retry(fast_retries(1)).build().unwrap();
    for _ in 0..6 {
        errors.push(client.verify_token().await.unwrap_err());
    }
    // `result.status` missing: a decode error.
    errors.push(client.verify_token().await.unwrap_err());
    errors.push(client.verify_token().await.unwrap_err());
    errors.push(client.verify_token().await.unwrap_err()); // scripted 500
    let hanging = Server::start(|_| Reply::Hang).await;
    let client = hanging
        .builder()
        .retry(fast_retries(1))
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    errors.push(client.verify_token().await.unwrap_err());
    let closing = Server::start(|_| Reply::Close).await;
    errors.push(
        closing
            .builder()
            .retry(fast_retries(1))
            .build()
            .unwrap()
            .verify_token()
            .await
            .unwrap_err(),
    );
    errors.push(
        Client::builder(ApiToken::new(TOKEN).unwrap())
            .base_url("http://example.com/")
            .build()
            .unwrap_err(),
    );
    errors.push(ApiToken::new(format!("{TOKEN} with space")).unwrap_err());
    errors.push(
        Client::builder(ApiToken::new(TOKEN).unwrap())
            .system_roots(false)
            .build()
            .unwrap_err(),
    );
    let huge = Server::start(|_| Reply::Answer {
        status: 200,
        headers: Vec::new(),
        body: TOKEN.repeat(culvert_cloudflare::MAX_BODY / TOKEN.len() + 1),
    })
    .await;
    errors.push(huge.client().verify_token().await.unwrap_err());
    let endless = Server::start(|seen| {
        let page: u32 = seen.query("page").unwrap().parse().unwrap();
        Reply::page(json!([tunnel_json(TOKEN)]), page, 1, 1_000_000)
    })
    .await;
    errors.push(
        endless
            .client()
            .list_tunnels(&account(), Some(TOKEN))
            .await
            .unwrap_err(),
    );

    let kinds: Vec<String> = errors
        .iter()
        .map(|e| {
            format!("{e:?}")
                .split([' ', '{', '('])
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    for kind in [
        "Api",
        "Decode",
        "Timeout",
        "Transport",
        "Config",
        "Invalid",
        "Trust",
        "TooLarge",
        "TooManyPages",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "no {kind} error in {kinds:?}"
        );
    }
    for error in &errors {
        let text = printed(error);
        assert!(!text.contains(TOKEN), "{text}");
    }
    assert!(printed(&errors[1]).contains("<redacted>"));
}

/// A CA and a server configuration for `localhost` signed by it.
fn tls_material() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let provider = culvert_tls::crypto_provider();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    (ca_cert.pem(), Arc::new(config))
}

#[tokio::test]
async fn clients_and_their_calls_can_move_between_threads() {
    fn is_send_sync<T: Send + Sync>(_: &T) {}
    fn is_send<T: Send>(_: &T) {}
    let server = Server::start(|_| verify_ok()).await;
    let client = server.client();
    is_send_sync(&client);
    is_send(&client.verify_token());
    is_send(&client.list_tunnels(&account(), None));
    let error = client
        .put_tunnel_configuration(&account(), &tunnel_id(), &[])
        .await
        .unwrap_err();
    is_send_sync(&error);
    let handle = tokio::spawn(async move { client.verify_token().await.map(|s| s.id) });
    assert_eq!(handle.await.unwrap().unwrap(), "a1b2");
}
