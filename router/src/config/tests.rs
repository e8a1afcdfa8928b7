use super::*;

fn parse(json: &str) -> Result<DataPlaneConfig, serde_json::Error> {
    serde_json::from_str(json)
}

const FULL: &str = r#"{
  "version": 7,
  "listeners": [
    {"name": "http", "port": 80, "protocol": "HTTP"},
    {"name": "tls", "address": "127.0.0.2", "port": 443, "protocol": "TLS", "hostname": "*.example.com"}
  ],
  "httpRoutes": [{
    "namespace": "default", "name": "web", "creationTimestamp": "2024-01-01T00:00:00Z",
    "listeners": ["http"], "hostnames": ["example.com"],
    "rules": [{
      "name": "api",
      "matches": [{"path": {"type": "PathPrefix", "value": "/api"}, "method": "GET",
                   "headers": [{"name": "x-v", "value": "1"}],
                   "queryParams": [{"type": "RegularExpression", "name": "q", "value": "[0-9]+"}]}],
      "filters": [
        {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "a", "value": "b"}], "remove": ["c"]}},
        {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/v2"}}},
        {"type": "RequestMirror", "requestMirror": {"backend": {"name": "m", "endpoints": ["127.0.0.1:9"]}, "percent": 10}},
        {"type": "CORS", "cors": {"allowOrigins": ["*"], "maxAge": 60}}
      ],
      "backends": [{"name": "default/api:80", "weight": 3, "endpoints": ["10.0.0.1:8080"], "appProtocol": "kubernetes.io/h2c"},
                   {"name": "default/gone:80", "unavailable": "InvalidReference"}],
      "timeouts": {"request": "10s", "backendRequest": "2s"},
      "retry": {"attempts": 2, "codes": [503], "backoff": "100ms"}
    }]
  }],
  "grpcRoutes": [{"name": "g", "listeners": ["http"], "rules": [{"matches": [{"method": {"service": "pkg.Svc", "method": "Get"}}]}]}],
  "tlsRoutes": [{"name": "t", "listeners": ["tls"], "hostnames": ["db.example.com"], "backends": [{"name": "db", "endpoints": ["10.0.0.2:5432"]}]}]
}"#;

#[test]
fn the_documented_shape_parses_and_round_trips() {
    let config = parse(FULL).unwrap();
    assert_eq!(config.version, 7);
    let rule = &config.http_routes[0].rules[0];
    assert_eq!(rule.backends[0].weight, 3);
    assert_eq!(rule.backends[0].app_protocol, AppProtocol::H2c);
    assert_eq!(rule.backends[1].weight, 1, "weight defaults to 1");
    assert_eq!(
        rule.backends[1].unavailable,
        Some(Unavailable::InvalidReference)
    );
    assert!(matches!(
        &rule.filters[1],
        HttpFilterConfig::UrlRewrite { url_rewrite } if url_rewrite.path == Some(PathModifierConfig::ReplacePrefixMatch { replace_prefix_match: "/v2".into() })
    ));
    let again: DataPlaneConfig =
        serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
    assert_eq!(again, config);
}

#[test]
fn unknown_fields_are_refused_at_every_level() {
    let cases = [
        r#"{"version": 1, "extra": true}"#,
        r#"{"version": 1, "listeners": [{"name": "a", "port": 80, "protocol": "HTTP", "tls": {"certs": []}}]}"#,
        r#"{"version": 1, "httpRoutes": [{"name": "r", "listeners": [], "rules": [{"backendRefs": []}]}]}"#,
        r#"{"version": 1, "httpRoutes": [{"name": "r", "listeners": [], "rules": [{"matches": [{"path": {"type": "Exact", "value": "/", "x": 1}}]}]}]}"#,
        r#"{"version": 1, "httpRoutes": [{"name": "r", "listeners": [], "rules": [{"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {}, "urlRewrite": {}}]}]}]}"#,
        r#"{"version": 1, "httpRoutes": [{"name": "r", "listeners": [], "rules": [{"filters": [{"type": "ExtensionRef"}]}]}]}"#,
    ];
    for json in cases {
        assert!(parse(json).is_err(), "accepted: {json}");
    }
}

#[test]
fn wrong_types_are_refused() {
    assert!(parse(r#"{"version": -1}"#).is_err());
    assert!(
        parse(r#"{"version": 1, "listeners": [{"name": "a", "port": 70000, "protocol": "HTTP"}]}"#)
            .is_err()
    );
    assert!(
        parse(r#"{"version": 1, "listeners": [{"name": "a", "port": 80, "protocol": "UDP"}]}"#)
            .is_err()
    );
    assert!(parse(r#"{"version": 1, "httpRoutes": [{"name": "r", "listeners": [], "rules": [{"backends": [{"name": "b", "endpoints": ["nope"]}]}]}]}"#).is_err());
}

#[test]
fn path_match_defaults_to_prefix_slash() {
    let config = parse(r#"{"version": 1, "httpRoutes": [{"name": "r", "listeners": [], "rules": [{"matches": [{"path": {}}]}]}]}"#).unwrap();
    let path = config.http_routes[0].rules[0].matches[0]
        .path
        .clone()
        .unwrap();
    assert_eq!(path.kind, PathMatchType::PathPrefix);
    assert_eq!(path.value, "/");
}

#[test]
fn acme_listeners_need_https_and_one_exact_hostname() {
    let config = |protocol: &str, hostname: Option<&str>| {
        let hostname = hostname.map_or(String::new(), |h| format!(r#", "hostname": "{h}""#));
        parse(&format!(
            r#"{{"version": 1, "listeners": [{{"name": "l", "port": 443, "protocol": "{protocol}"{hostname}, "tls": {{"acme": {{}}}}}}]}}"#
        ))
        .unwrap()
    };
    let exact = config("HTTPS", Some("www.example.com"));
    assert_eq!(exact.listeners[0].acme_name(), Some("www.example.com"));
    assert_eq!(exact.listeners[0].acme_refusal(), None);
    crate::RouteTableBuilder::new().build(&exact).unwrap();
    for (refused, why) in [
        (config("HTTPS", Some("*.example.com")), "wildcard"),
        (config("HTTPS", None), "hostname"),
        (config("TLS", Some("www.example.com")), "only for HTTPS"),
    ] {
        let reason = refused.listeners[0].acme_refusal().unwrap();
        assert!(reason.contains(why), "{reason}");
        let err = crate::RouteTableBuilder::new().build(&refused).unwrap_err();
        assert!(err.to_string().contains(why), "{err}");
    }
    let plain =
        parse(r#"{"version": 1, "listeners": [{"name": "l", "port": 80, "protocol": "HTTP"}]}"#)
            .unwrap();
    assert_eq!(plain.listeners[0].acme_name(), None);
}

#[test]
fn the_content_hash_is_fnv_of_the_canonical_json_without_the_version() {
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    let first: DataPlaneConfig = serde_json::from_str(
        r#"{"version": 1, "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"}]}"#,
    )
    .unwrap();
    // Formatting, field order and the version do not count; content does.
    let second: DataPlaneConfig = serde_json::from_str(
        r#"{"listeners": [{"protocol": "HTTP",   "port": 80, "name": "a"}], "version": 7}"#,
    )
    .unwrap();
    assert_eq!(
        first.content_hash().unwrap(),
        second.content_hash().unwrap()
    );
    assert_eq!(first.content_hash().unwrap().len(), 16);
    let mut third = first.clone();
    third.listeners[0].port = 81;
    assert_ne!(first.content_hash().unwrap(), third.content_hash().unwrap());
}
