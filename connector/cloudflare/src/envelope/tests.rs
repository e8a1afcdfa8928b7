//! Recorded envelopes, in the shapes the v4 API answers with.

use http::{Method, StatusCode};

use super::*;
use crate::model::{DnsRecord, Tunnel, Zone};
use crate::{ApiToken, Error};

const ZONES_PAGE_1: &str = r#"{
  "result": [
    {"id": "023e105f4ecef8ad9ca31a8372d0c353", "name": "example.com", "status": "active",
     "paused": false, "type": "full",
     "account": {"id": "01a7362d577a6c3019a474fd6f485823", "name": "Demo Account"},
     "name_servers": ["bob.ns.cloudflare.com", "lola.ns.cloudflare.com"]}
  ],
  "result_info": {"page": 1, "per_page": 1, "count": 1, "total_count": 3, "total_pages": 3},
  "success": true,
  "errors": [],
  "messages": []
}"#;

const TUNNEL_CREATED: &str = r#"{
  "success": true, "errors": [], "messages": [],
  "result": {
    "id": "f70ff985-a4ef-4643-bbbc-4a0ed4fc8415",
    "account_tag": "699d98642c564d2e855e9661899b7252",
    "created_at": "2026-01-25T20:47:05Z",
    "deleted_at": null,
    "name": "edge",
    "connections": [],
    "conns_active_at": null,
    "conns_inactive_at": "2026-01-25T20:47:05Z",
    "tun_type": "cfd_tunnel",
    "metadata": {},
    "status": "inactive",
    "remote_config": true,
    "config_src": "cloudflare",
    "token": "eyJhIjoiNjk5ZDk4NjQyYzU2NGQyZTg1NWU5NjYxODk5YjcyNTIifQ=="
  }
}"#;

const RECORD: &str = r#"{
  "success": true, "errors": [], "messages": [],
  "result": {
    "id": "372e67954025e0ba6aaa6d586b9e0b59",
    "zone_id": "023e105f4ecef8ad9ca31a8372d0c353",
    "zone_name": "example.com",
    "name": "app.example.com",
    "type": "CNAME",
    "content": "f70ff985-a4ef-4643-bbbc-4a0ed4fc8415.cfargotunnel.com",
    "proxiable": true,
    "proxied": true,
    "ttl": 1,
    "settings": {},
    "meta": {},
    "comment": null,
    "tags": [],
    "created_on": "2026-01-01T05:20:00.12345Z",
    "modified_on": "2026-01-01T05:20:00.12345Z"
  }
}"#;

const NOT_FOUND: &str = r#"{"success":false,"errors":[{"code":7003,"message":"Could not route to /accounts/x/cfd_tunnel/y, perhaps your object identifier is invalid?"},{"code":7000,"message":"No route for that URI"}],"messages":[],"result":null}"#;

const UNAUTHORIZED: &str = r#"{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}"#;

const THROTTLED: &str = r#"{"success":false,"errors":[{"code":971,"message":"Please wait and consider throttling your request speed"}],"messages":[],"result":null}"#;

const DNS_CONFLICT: &str = r#"{"result":null,"success":false,"errors":[{"code":81053,"message":"An A, AAAA, or CNAME record with that host already exists.","error_chain":[{"code":1,"message":"x"}]}],"messages":[]}"#;

fn api_error(status: StatusCode, body: &str) -> Error {
    let Err(Refusal::Api { errors, messages }) =
        decode::<serde_json::Value>(status, body.as_bytes())
    else {
        panic!("{status} {body} is not refused");
    };
    Error::Api {
        method: Method::GET,
        path: "/x".to_owned(),
        status,
        errors,
        messages,
        retry_after: None,
    }
}

#[test]
fn a_list_page_decodes_with_its_result_info() {
    let decoded: Decoded<Vec<Zone>> = decode(StatusCode::OK, ZONES_PAGE_1.as_bytes()).unwrap();
    assert_eq!(decoded.result.len(), 1);
    assert_eq!(decoded.result[0].name, "example.com");
    assert_eq!(
        decoded.result[0].account.id.as_str(),
        "01a7362d577a6c3019a474fd6f485823"
    );
    let info = decoded.info.unwrap();
    assert_eq!((info.page, info.total_pages, info.pages()), (1, 3, 3));
}

#[test]
fn a_created_tunnel_keeps_its_token_out_of_debug() {
    let decoded: Decoded<Tunnel> = decode(StatusCode::OK, TUNNEL_CREATED.as_bytes()).unwrap();
    let tunnel = decoded.result;
    assert_eq!(
        tunnel.id.to_string(),
        "f70ff985-a4ef-4643-bbbc-4a0ed4fc8415"
    );
    assert_eq!(tunnel.config_src.as_deref(), Some("cloudflare"));
    let token = tunnel.token.as_ref().unwrap();
    assert!(token.expose().starts_with("eyJ"));
    assert!(!format!("{tunnel:?}").contains("eyJ"));
    assert!(decoded.info.is_none());
}

#[test]
fn a_record_decodes_with_fields_it_does_not_know() {
    let decoded: Decoded<DnsRecord> = decode(StatusCode::OK, RECORD.as_bytes()).unwrap();
    let record = decoded.result;
    assert_eq!(record.record_type, "CNAME");
    assert!(record.proxied);
    assert_eq!(record.comment, None);
}

#[test]
fn error_statuses_keep_codes_and_classify() {
    let not_found = api_error(StatusCode::NOT_FOUND, NOT_FOUND);
    assert!(not_found.is_not_found() && !not_found.is_transient() && !not_found.is_auth());
    assert_eq!(
        not_found
            .api_errors()
            .iter()
            .map(|e| e.code)
            .collect::<Vec<_>>(),
        [7003, 7000]
    );
    let message = not_found.to_string();
    assert!(
        message.contains("404") && message.contains("[7003]"),
        "{message}"
    );

    let unauthorized = api_error(StatusCode::UNAUTHORIZED, UNAUTHORIZED);
    assert!(unauthorized.is_auth() && !unauthorized.is_transient());
    assert_eq!(unauthorized.api_errors()[0].code, 10000);
    assert!(api_error(StatusCode::FORBIDDEN, UNAUTHORIZED).is_auth());

    let throttled = api_error(StatusCode::TOO_MANY_REQUESTS, THROTTLED);
    assert!(throttled.is_transient() && throttled.is_rate_limited());

    let conflict = api_error(StatusCode::BAD_REQUEST, DNS_CONFLICT);
    assert!(conflict.is_conflict() && !conflict.is_transient());
    assert!(
        api_error(
            StatusCode::CONFLICT,
            r#"{"success":false,"errors":[{"code":1013,"message":"tunnel name taken"}]}"#
        )
        .is_conflict()
    );
    assert!(
        !api_error(
            StatusCode::BAD_REQUEST,
            r#"{"success":false,"errors":[{"code":1001,"message":"bad json"}]}"#
        )
        .is_conflict()
    );
}

#[test]
fn an_error_status_without_an_envelope_is_still_an_api_error() {
    let gateway = api_error(
        StatusCode::BAD_GATEWAY,
        "<html><body>502 Bad Gateway</body></html>",
    );
    assert!(gateway.is_transient());
    assert!(gateway.api_errors().is_empty());
    assert!(api_error(StatusCode::INTERNAL_SERVER_ERROR, "").is_transient());
}

#[test]
fn success_needs_both_the_status_and_the_flag() {
    let flag_false = r#"{"success":false,"errors":[{"code":1055,"message":"last rule must be a catch-all"}],"result":null}"#;
    assert!(matches!(
        decode::<serde_json::Value>(StatusCode::OK, flag_false.as_bytes()),
        Err(Refusal::Api { errors, .. }) if errors[0].code == 1055
    ));
    let no_flag = r#"{"errors":[],"result":{"id":"x"}}"#;
    assert!(matches!(
        decode::<serde_json::Value>(StatusCode::OK, no_flag.as_bytes()),
        Err(Refusal::Api { .. })
    ));
    let error_status_claiming_success = r#"{"success":true,"errors":[],"result":null}"#;
    assert!(matches!(
        decode::<serde_json::Value>(
            StatusCode::BAD_REQUEST,
            error_status_claiming_success.as_bytes()
        ),
        Err(Refusal::Api { .. })
    ));
}

#[test]
fn a_success_that_does_not_fit_is_malformed_with_the_field_named() {
    for body in [
        "",
        "null",
        "[1,2]",
        r#"{"success":true} trailing"#,
        "<html>",
    ] {
        assert!(
            matches!(
                decode::<serde_json::Value>(StatusCode::OK, body.as_bytes()),
                Err(Refusal::Malformed(_))
            ),
            "{body:?}"
        );
    }
    let bad_id = r#"{"success":true,"errors":[],"result":[{"id":"NOT-HEX","name":"x","account":{"id":"01a7362d577a6c3019a474fd6f485823"}}]}"#;
    let Err(Refusal::Malformed(detail)) = decode::<Vec<Zone>>(StatusCode::OK, bad_id.as_bytes())
    else {
        panic!("a bad zone id must be refused");
    };
    assert!(detail.contains("[0].id"), "{detail}");
}

#[test]
fn server_text_is_bounded() {
    let long = "é".repeat(10_000);
    let many: Vec<String> = (0..100)
        .map(|i| format!(r#"{{"code":{i},"message":"{long}\u0007"}}"#))
        .collect();
    let body = format!(r#"{{"success":false,"errors":[{}]}}"#, many.join(","));
    let Err(Refusal::Api { errors, .. }) =
        decode::<serde_json::Value>(StatusCode::BAD_REQUEST, body.as_bytes())
    else {
        panic!("refused");
    };
    assert_eq!(errors.len(), MAX_ERRORS);
    assert!(
        errors
            .iter()
            .all(|e| e.message.chars().count() <= MAX_MESSAGE + 1)
    );
    assert!(errors.iter().all(|e| !e.message.contains('\u{7}')));
}

#[test]
fn codes_that_do_not_fit_are_malformed_not_a_panic() {
    let body = r#"{"success":false,"errors":[{"code":-1,"message":"x"}]}"#;
    // Not an envelope this client reads: for an error status it stays an api error.
    assert!(matches!(
        decode::<serde_json::Value>(StatusCode::BAD_REQUEST, body.as_bytes()),
        Err(Refusal::Api { errors, .. }) if errors.is_empty()
    ));
}

#[test]
fn an_api_token_never_prints() {
    let token = ApiToken::new("  abc-DEF_123  \n").unwrap();
    assert_eq!(token.expose(), "abc-DEF_123");
    assert_eq!(token.to_string(), "<redacted>");
    assert!(!format!("{token:?}").contains("abc"));
    for bad in ["", "   ", "has space", "tab\tinside", "é"] {
        let error = ApiToken::new(bad).unwrap_err().to_string();
        assert!(
            bad.trim().is_empty() || !error.contains(bad.trim()),
            "{error}"
        );
    }
}

#[test]
fn envelope_messages_are_kept_beside_the_errors() {
    let body = r#"{"success":false,"errors":[{"code":1004,"message":"DNS Validation Error"}],
        "messages":[{"code":10500,"message":"the record's ttl was set to automatic"}],"result":null}"#;
    let error = api_error(StatusCode::BAD_REQUEST, body);
    let Error::Api { messages, .. } = &error else {
        panic!("an api error");
    };
    assert_eq!(messages[0].code, 10500);
    assert!(!error.to_string().contains("10500"), "{error}");
}
