//! Unit tests of the compiled table: one test per precedence rule and edge case.

use super::*;
use crate::config::DataPlaneConfig;
use http::HeaderValue;

fn table(json: &str) -> RouteTable {
    let config: DataPlaneConfig = serde_json::from_str(json).expect("test config parses");
    RouteTableBuilder::new()
        .build(&config)
        .expect("test config compiles")
}

fn build_error(json: &str) -> String {
    let config: DataPlaneConfig = serde_json::from_str(json).expect("test config parses");
    RouteTableBuilder::new()
        .build(&config)
        .expect_err("config must be refused")
        .to_string()
}

/// Routes `method host target` (plus headers) on port 80 and names the winner
/// `route#rule.match`, or the miss.
fn route(
    table: &RouteTable,
    method: &str,
    host: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> String {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    let view = RequestView {
        port: 80,
        local_ip: None,
        host,
        path: target,
        method,
        headers: &map,
    };
    match table.route(&view) {
        Ok(found) => {
            let by_id = table.rule(found.rule_id).unwrap();
            assert!(
                std::ptr::eq(by_id, found.rule),
                "the rule id names the matched rule"
            );
            let info = table.route_info(found.route).unwrap();
            format!("{}#{}.{}", info.name, found.rule_index, found.match_index)
        }
        Err(miss) => format!("{miss:?}"),
    }
}

fn get(table: &RouteTable, host: &str, target: &str) -> String {
    route(table, "GET", host, target, &[])
}

const HTTP_LISTENER: &str = r#""listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]"#;

fn routes(body: &str) -> RouteTable {
    table(&format!(
        r#"{{"version": 1, {HTTP_LISTENER}, "httpRoutes": [{body}]}}"#
    ))
}

#[test]
fn exact_beats_any_prefix() {
    let t = routes(
        r#"{"name": "prefix", "listeners": ["http"], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/foo/bar"}, "method": "GET", "headers": [{"name": "a", "value": "1"}]}]}]},
           {"name": "exact", "listeners": ["http"], "rules": [{"matches": [{"path": {"type": "Exact", "value": "/foo/bar"}}]}]}"#,
    );
    assert_eq!(
        route(&t, "GET", "x", "/foo/bar", &[("a", "1")]),
        "exact#0.0"
    );
    assert_eq!(
        route(&t, "GET", "x", "/foo/bar/baz", &[("a", "1")]),
        "prefix#0.0"
    );
}

#[test]
fn longest_prefix_wins_and_respects_segments() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]},
            {"matches": [{"path": {"type": "PathPrefix", "value": "/foo"}}]},
            {"matches": [{"path": {"type": "PathPrefix", "value": "/foo/bar/"}}]}]}"#,
    );
    assert_eq!(get(&t, "x", "/foo/bar/baz"), "r#2.0");
    assert_eq!(get(&t, "x", "/foo/bar"), "r#2.0");
    assert_eq!(get(&t, "x", "/foo/barbaz"), "r#1.0");
    assert_eq!(get(&t, "x", "/foo/"), "r#1.0");
    assert_eq!(get(&t, "x", "/foo"), "r#1.0");
    assert_eq!(get(&t, "x", "/foobar"), "r#0.0");
    assert_eq!(get(&t, "x", "/"), "r#0.0");
}

#[test]
fn a_prefix_whose_conditions_fail_falls_back_to_a_shorter_one() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]},
            {"matches": [{"path": {"type": "PathPrefix", "value": "/v2"}, "headers": [{"name": "version", "value": "two"}]}]}]}"#,
    );
    assert_eq!(
        route(&t, "GET", "x", "/v2/x", &[("Version", "two")]),
        "r#1.0"
    );
    assert_eq!(
        route(&t, "GET", "x", "/v2/x", &[("version", "one")]),
        "r#0.0"
    );
}

#[test]
fn prefix_beats_regex_and_regex_matches_the_whole_path() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"path": {"type": "RegularExpression", "value": "/api/v[0-9]+"}}]},
            {"matches": [{"path": {"type": "PathPrefix", "value": "/api/v1"}}]}]}"#,
    );
    assert_eq!(get(&t, "x", "/api/v1"), "r#1.0");
    assert_eq!(get(&t, "x", "/api/v22"), "r#0.0");
    assert_eq!(get(&t, "x", "/api/v22/extra"), "NoRoute");
    assert_eq!(get(&t, "x", "/api/v22?q=1"), "r#0.0");
}

#[test]
fn regex_candidates_follow_precedence_not_pattern_order() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"path": {"type": "RegularExpression", "value": "/a.*"}}]},
            {"matches": [{"path": {"type": "RegularExpression", "value": "/ab"}, "method": "GET"}]},
            {"matches": [{"path": {"type": "RegularExpression", "value": "/a.*"}, "headers": [{"name": "h", "value": "1"}]}]}]}"#,
    );
    assert_eq!(route(&t, "GET", "x", "/ab", &[("h", "1")]), "r#1.0");
    assert_eq!(route(&t, "POST", "x", "/ab", &[("h", "1")]), "r#2.0");
    assert_eq!(route(&t, "POST", "x", "/ab", &[]), "r#0.0");
}

#[test]
fn method_then_headers_then_query_break_ties() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"queryParams": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}]},
            {"matches": [{"headers": [{"name": "h", "value": "1"}]}]},
            {"matches": [{"headers": [{"name": "h", "value": "1"}, {"name": "i", "value": "2"}]}]},
            {"matches": [{"method": "POST"}]}]}"#,
    );
    let both = [("h", "1"), ("i", "2")];
    assert_eq!(route(&t, "POST", "x", "/?a=1&b=2", &both), "r#3.0");
    assert_eq!(route(&t, "GET", "x", "/?a=1&b=2", &both), "r#2.0");
    assert_eq!(route(&t, "GET", "x", "/?a=1&b=2", &[("h", "1")]), "r#1.0");
    assert_eq!(route(&t, "GET", "x", "/?a=1&b=2", &[]), "r#0.0");
    assert_eq!(route(&t, "GET", "x", "/?a=1", &[]), "NoRoute");
}

#[test]
fn older_route_then_name_then_rule_order_break_remaining_ties() {
    let t = routes(
        r#"{"namespace": "b", "name": "young", "creationTimestamp": "2024-02-01T00:00:00Z", "listeners": ["http"], "rules": [{}]},
           {"namespace": "b", "name": "old", "creationTimestamp": "2024-01-01T00:00:00Z", "listeners": ["http"], "rules": [{}, {}]}"#,
    );
    assert_eq!(get(&t, "x", "/"), "old#0.0");
    let t = routes(
        r#"{"namespace": "b", "name": "a", "creationTimestamp": "2024-01-01T00:00:00Z", "listeners": ["http"], "rules": [{}]},
           {"namespace": "a", "name": "z", "creationTimestamp": "2024-01-01T00:00:00Z", "listeners": ["http"], "rules": [{}]}"#,
    );
    assert_eq!(get(&t, "x", "/"), "z#0.0");
}

#[test]
fn exact_host_then_longest_wildcard_then_catch_all_without_fallthrough() {
    let t = routes(
        r#"{"name": "exact", "listeners": ["http"], "hostnames": ["api.example.com"], "rules": [{"matches": [{"path": {"type": "Exact", "value": "/only"}}]}]},
           {"name": "wild", "listeners": ["http"], "hostnames": ["*.example.com"], "rules": [{}]},
           {"name": "deeper", "listeners": ["http"], "hostnames": ["*.v1.example.com"], "rules": [{}]},
           {"name": "any", "listeners": ["http"], "rules": [{}]}"#,
    );
    assert_eq!(get(&t, "api.example.com", "/only"), "exact#0.0");
    assert_eq!(get(&t, "api.example.com", "/other"), "NoRoute");
    assert_eq!(get(&t, "www.example.com", "/"), "wild#0.0");
    assert_eq!(get(&t, "a.v1.example.com", "/"), "deeper#0.0");
    assert_eq!(get(&t, "v1.example.com", "/"), "wild#0.0");
    assert_eq!(get(&t, "example.com", "/"), "any#0.0");
    assert_eq!(get(&t, "10.0.0.1", "/"), "any#0.0");
}

#[test]
fn host_case_port_and_trailing_dot_are_ignored() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "hostnames": ["Example.COM"], "rules": [{}]}"#,
    );
    for host in [
        "example.com",
        "EXAMPLE.com",
        "example.com:8080",
        "example.com.",
        "Example.Com.:80",
    ] {
        assert_eq!(get(&t, host, "/"), "r#0.0", "{host}");
    }
    assert_eq!(get(&t, "example.org", "/"), "NoRoute");
}

#[test]
fn idn_hostnames_are_matched_in_punycode() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "hostnames": ["xn--bcher-kva.example"], "rules": [{}]}"#,
    );
    assert_eq!(get(&t, "XN--BCHER-KVA.example", "/"), "r#0.0");
    assert_eq!(get(&t, "bücher.example", "/"), "NoRoute");
    let error = build_error(&format!(
        r#"{{"version": 1, {HTTP_LISTENER}, "httpRoutes": [{{"name": "r", "listeners": ["http"], "hostnames": ["bücher.example"]}}]}}"#
    ));
    assert!(error.contains("punycode"), "{error}");
}

#[test]
fn configured_paths_are_normalized_like_request_paths() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"path": {"type": "Exact", "value": "/caf%c3%a9"}}]},
            {"matches": [{"path": {"type": "PathPrefix", "value": "/%7Euser"}}]}]}"#,
    );
    let normal = crate::path::normalize_path("/caf%C3%A9").unwrap();
    assert_eq!(get(&t, "x", &normal), "r#0.0");
    let normal = crate::path::normalize_path("/%7euser/x").unwrap();
    assert_eq!(get(&t, "x", &normal), "r#1.0");
    assert_eq!(get(&t, "x", "/~user/x"), "r#1.0");
    assert_eq!(
        get(&t, "x", "/Caf%C3%A9"),
        "NoRoute",
        "paths are case-sensitive"
    );
}

#[test]
fn exact_paths_keep_their_trailing_slash() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [{"matches": [{"path": {"type": "Exact", "value": "/foo/"}}]}]}"#,
    );
    assert_eq!(get(&t, "x", "/foo/"), "r#0.0");
    assert_eq!(get(&t, "x", "/foo"), "NoRoute");
}

#[test]
fn header_names_ignore_case_values_do_not_and_repeats_join() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"headers": [{"name": "X-Env", "value": "Prod"}]}]},
            {"matches": [{"headers": [{"type": "RegularExpression", "name": "x-multi", "value": "a,b"}]}]}]}"#,
    );
    assert_eq!(route(&t, "GET", "x", "/", &[("x-env", "Prod")]), "r#0.0");
    assert_eq!(route(&t, "GET", "x", "/", &[("x-env", "prod")]), "NoRoute");
    assert_eq!(
        route(&t, "GET", "x", "/", &[("x-multi", "a"), ("x-multi", "b")]),
        "r#1.0"
    );
}

#[test]
fn only_the_first_condition_on_a_name_counts() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [{"matches": [{"headers": [{"name": "h", "value": "1"}, {"name": "H", "value": "2"}],
            "queryParams": [{"name": "q", "value": "1"}, {"name": "q", "value": "2"}]}]}]}"#,
    );
    assert_eq!(route(&t, "GET", "x", "/?q=1", &[("h", "1")]), "r#0.0");
    assert_eq!(route(&t, "GET", "x", "/?q=2", &[("h", "2")]), "NoRoute");
}

#[test]
fn query_names_are_case_sensitive_and_first_value_counts() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [{"matches": [{"queryParams": [{"name": "animal", "value": "whale"}]}]}]}"#,
    );
    assert_eq!(get(&t, "x", "/?animal=whale"), "r#0.0");
    assert_eq!(get(&t, "x", "/?ANIMAL=whale"), "NoRoute");
    assert_eq!(get(&t, "x", "/?animal=dolphin&animal=whale"), "NoRoute");
    assert_eq!(get(&t, "x", "/?a=1&animal=whale"), "r#0.0");
}

#[test]
fn listeners_on_one_port_isolate_their_hostnames() {
    let t = table(
        r#"{"version": 1, "listeners": [
            {"name": "empty", "port": 80, "protocol": "HTTP"},
            {"name": "wild", "port": 80, "protocol": "HTTP", "hostname": "*.example.com"},
            {"name": "exact", "port": 80, "protocol": "HTTP", "hostname": "foo.example.com"}],
          "httpRoutes": [
            {"name": "on-empty", "listeners": ["empty"], "rules": [{}]},
            {"name": "on-wild", "listeners": ["wild"], "rules": [{}]},
            {"name": "on-exact", "listeners": ["exact"], "rules": [{"matches": [{"path": {"type": "Exact", "value": "/x"}}]}]}]}"#,
    );
    assert_eq!(get(&t, "foo.example.com", "/x"), "on-exact#0.0");
    assert_eq!(
        get(&t, "foo.example.com", "/y"),
        "NoRoute",
        "no fall-through to another listener"
    );
    assert_eq!(get(&t, "bar.example.com", "/y"), "on-wild#0.0");
    assert_eq!(get(&t, "other.org", "/y"), "on-empty#0.0");
    assert_eq!(
        t.listener(80, None, "FOO.example.com:80").map(|l| l.0),
        Some(2)
    );
}

#[test]
fn route_hostnames_intersect_with_the_listener() {
    let t = table(
        r#"{"version": 1, "listeners": [{"name": "wild", "port": 80, "protocol": "HTTP", "hostname": "*.example.com"}],
          "httpRoutes": [{"name": "r", "listeners": ["wild"], "hostnames": ["*.com", "foo.example.com", "bar.example.org"], "rules": [{}]}]}"#,
    );
    assert_eq!(get(&t, "foo.example.com", "/"), "r#0.0");
    assert_eq!(
        get(&t, "x.example.com", "/"),
        "r#0.0",
        "*.com ∩ *.example.com = *.example.com"
    );
    assert_eq!(get(&t, "bar.example.org", "/"), "NoListener");
}

#[test]
fn addresses_and_ports_select_entrypoints() {
    let t = table(
        r#"{"version": 1, "listeners": [
            {"name": "any", "port": 80, "protocol": "HTTP"},
            {"name": "two", "address": "127.0.0.2", "port": 80, "protocol": "HTTP"}],
          "httpRoutes": [{"name": "a", "listeners": ["any"], "rules": [{}]}, {"name": "b", "listeners": ["two"], "rules": [{}]}]}"#,
    );
    let headers = HeaderMap::new();
    let view = |ip: &str| RequestView {
        port: 80,
        local_ip: Some(ip.parse().unwrap()),
        host: "h",
        path: "/",
        method: "GET",
        headers: &headers,
    };
    let name = |v: RequestView<'_>| {
        t.route_info(t.route(&v).unwrap().route)
            .unwrap()
            .name
            .to_string()
    };
    assert_eq!(name(view("127.0.0.2")), "b");
    assert_eq!(name(view("127.0.0.3")), "a");
    let other_port = RequestView {
        port: 81,
        ..view("127.0.0.2")
    };
    assert_eq!(t.route(&other_port).unwrap_err(), NoMatch::NoListener);
}

#[test]
fn grpc_routes_match_service_and_method_of_grpc_calls_only() {
    let t = table(&format!(
        r#"{{"version": 1, {HTTP_LISTENER}, "grpcRoutes": [{{"name": "g", "listeners": ["http"], "rules": [
            {{"matches": [{{"method": {{"service": "pkg.Echo", "method": "Echo"}}}}]}},
            {{"matches": [{{"method": {{"service": "pkg.Echo"}}}}]}},
            {{"matches": [{{"method": {{"method": "EchoThree"}}}}]}},
            {{"matches": [{{"method": {{"type": "RegularExpression", "service": "pkg\\.E.*", "method": "Two"}}}}]}}]}}]}}"#
    ));
    let grpc = [("content-type", "application/grpc")];
    assert_eq!(route(&t, "POST", "x", "/pkg.Echo/Echo", &grpc), "g#0.0");
    assert_eq!(route(&t, "POST", "x", "/pkg.Echo/EchoTwo", &grpc), "g#1.0");
    assert_eq!(
        route(&t, "POST", "x", "/other.Svc/EchoThree", &grpc),
        "g#2.0"
    );
    assert_eq!(route(&t, "POST", "x", "/pkg.Else/Two", &grpc), "g#3.0");
    assert_eq!(route(&t, "POST", "x", "/pkg.Else/One", &grpc), "NoRoute");
    assert_eq!(
        route(&t, "POST", "x", "/pkg.Echo/Echo", &[]),
        "NoRoute",
        "plain HTTP is not gRPC"
    );
}

#[test]
fn tls_routes_pick_by_sni_oldest_first() {
    let t = table(
        r#"{"version": 1, "listeners": [{"name": "tls", "port": 443, "protocol": "TLS", "hostname": "*.example.com"}],
          "tlsRoutes": [
            {"name": "new", "creationTimestamp": "2024-02-01T00:00:00Z", "listeners": ["tls"], "hostnames": ["db.example.com"], "backends": [{"name": "n", "endpoints": ["127.0.0.1:1"]}]},
            {"name": "old", "creationTimestamp": "2024-01-01T00:00:00Z", "listeners": ["tls"], "hostnames": ["db.example.com"], "backends": [{"name": "o", "endpoints": ["127.0.0.1:2"]}]},
            {"name": "wild", "listeners": ["tls"], "backends": [{"name": "w", "endpoints": ["127.0.0.1:3"]}]}]}"#,
    );
    let name = |sni: &str| {
        t.route_tls(443, None, sni)
            .map(|m| t.route_info(m.route).unwrap().name.to_string())
    };
    assert_eq!(name("DB.example.com").as_deref(), Some("old"));
    assert_eq!(name("web.example.com").as_deref(), Some("wild"));
    assert_eq!(name("example.org"), None);
}

#[test]
fn prefix_match_reports_what_it_covered() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [
            {"matches": [{"path": {"type": "PathPrefix", "value": "/foo/"}}]},
            {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}]}"#,
    );
    let headers = HeaderMap::new();
    let view = |path| RequestView {
        port: 80,
        local_ip: None,
        host: "x",
        path,
        method: "GET",
        headers: &headers,
    };
    assert_eq!(
        t.route(&view("/foo/bar?x")).unwrap().matched_prefix_len,
        Some(4)
    );
    assert_eq!(
        t.route(&view("/other")).unwrap().matched_prefix_len,
        Some(0)
    );
}

#[test]
fn invalid_configs_are_refused_with_the_culprit_named() {
    let cases = [
        (
            r#""httpRoutes": [{"namespace": "ns", "name": "r", "listeners": ["nope"]}]"#,
            "HTTPRoute ns/r: listener \"nope\" does not exist",
        ),
        (
            r#""httpRoutes": [{"name": "r", "listeners": ["http"], "rules": [{"matches": [{"path": {"type": "Exact", "value": "no-slash"}}]}]}]"#,
            "HTTPRoute /r rule 0 match 0",
        ),
        (
            r#""httpRoutes": [{"name": "r", "listeners": ["http"], "rules": [{"matches": [{"path": {"type": "RegularExpression", "value": "("}}]}]}]"#,
            "regular expression \"(\" refused",
        ),
        (
            r#""httpRoutes": [{"name": "r", "listeners": ["http"], "rules": [{"matches": [{"path": {"type": "Exact", "value": "/x"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/y"}}}]}]}]"#,
            "ReplacePrefixMatch needs a PathPrefix match",
        ),
        (
            r#""httpRoutes": [{"name": "r", "listeners": ["http"], "rules": [{"filters": [{"type": "RequestRedirect", "requestRedirect": {"statusCode": 200}}]}]}]"#,
            "redirect status 200",
        ),
        (
            r#""httpRoutes": [{"name": "r", "listeners": ["http"], "rules": [{"matches": [{"headers": [{"name": "bad name", "value": "x"}]}]}]}]"#,
            "invalid header name",
        ),
        (
            r#""httpRoutes": [{"name": "r", "creationTimestamp": "yesterday", "listeners": ["http"]}]"#,
            "not an RFC 3339 timestamp",
        ),
        (
            r#""httpRoutes": [{"name": "r", "listeners": ["http"], "rules": [{"timeouts": {"request": "1s", "backendRequest": "2s"}}]}]"#,
            "must not exceed",
        ),
        (
            r#""tlsRoutes": [{"name": "t", "listeners": ["http"]}]"#,
            "does not carry TLSRoute",
        ),
    ];
    for (body, want) in cases {
        let error = build_error(&format!(r#"{{"version": 1, {HTTP_LISTENER}, {body}}}"#));
        assert!(error.contains(want), "{error:?} lacks {want:?}");
    }
}

#[test]
fn hostile_regular_expressions_are_build_errors() {
    let error = build_error(&format!(
        r#"{{"version": 1, {HTTP_LISTENER}, "httpRoutes": [{{"namespace": "evil", "name": "r", "listeners": ["http"], "rules": [{{"matches": [{{"path": {{"type": "RegularExpression", "value": "/[a-z]*a[a-z]{{40}}"}}}}]}}]}}]}}"#
    ));
    assert!(error.starts_with("HTTPRoute evil/r rule 0"), "{error}");
    assert!(error.contains("limit"), "{error}");
}

#[test]
fn conflicting_listeners_are_refused() {
    let same_host = build_error(
        r#"{"version": 1, "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"}, {"name": "b", "port": 80, "protocol": "HTTP"}]}"#,
    );
    assert!(
        same_host.contains("same address, port and hostname"),
        "{same_host}"
    );
    let mixed = build_error(
        r#"{"version": 1, "listeners": [{"name": "a", "port": 443, "protocol": "HTTP"}, {"name": "b", "port": 443, "protocol": "TLS", "hostname": "x.com"}]}"#,
    );
    assert!(mixed.contains("cannot share a port"), "{mixed}");
    let duplicate = build_error(
        r#"{"version": 1, "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"}, {"name": "a", "port": 81, "protocol": "HTTP"}]}"#,
    );
    assert!(
        duplicate.contains("used by another listener"),
        "{duplicate}"
    );
}

#[test]
fn https_and_tls_listeners_share_a_port_by_hostname() {
    let t = table(
        r#"{"version": 1, "listeners": [
            {"name": "web", "port": 443, "protocol": "HTTPS", "hostname": "www.example.com"},
            {"name": "pass", "port": 443, "protocol": "TLS", "hostname": "db.example.com"}]}"#,
    );
    assert_eq!(
        t.listener(443, None, "www.example.com"),
        Some(ListenerId(0))
    );
    assert_eq!(t.listener(443, None, "db.example.com"), Some(ListenerId(1)));
    assert_eq!(t.listener(443, None, "other.example.com"), None);
}

#[test]
fn rule_without_matches_matches_everything_and_exposes_its_parts() {
    let t = routes(
        r#"{"name": "r", "listeners": ["http"], "rules": [{"name": "all", "backends": [{"name": "a", "weight": 0, "endpoints": ["127.0.0.1:1"]}, {"name": "b", "endpoints": ["127.0.0.1:2"]}],
            "timeouts": {"request": "5s"}, "retry": {"attempts": 2, "codes": [503]}}]}"#,
    );
    let headers = HeaderMap::new();
    let view = RequestView {
        port: 80,
        local_ip: None,
        host: "x",
        path: "/anything/at/all",
        method: "DELETE",
        headers: &headers,
    };
    let found = t.route(&view).unwrap();
    assert_eq!(found.rule.name(), Some("all"));
    assert_eq!(
        found.rule.timeouts().request,
        Some(std::time::Duration::from_secs(5))
    );
    assert_eq!(found.rule.retry().map(|r| r.attempts), Some(2));
    for random in [0, u64::MAX / 2, u64::MAX] {
        assert_eq!(
            &*found.rule.backends().pick(random).unwrap().name,
            "b",
            "weight 0 never picked"
        );
    }
}

#[test]
fn amplifying_configs_are_refused_before_they_allocate() {
    let hostnames: Vec<String> = (0..100).map(|i| format!("\"h{i}.example.com\"")).collect();
    let matches = vec!["{}"; 100].join(", ");
    let json = format!(
        r#"{{"version": 1, {HTTP_LISTENER}, "httpRoutes": [{{"namespace": "evil", "name": "wide", "listeners": ["http"],
            "hostnames": [{}], "rules": [{{"matches": [{matches}]}}]}}]}}"#,
        hostnames.join(", ")
    );
    let config: DataPlaneConfig = serde_json::from_str(&json).unwrap();
    let error = RouteTableBuilder::new()
        .max_entries(5_000)
        .build(&config)
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("HTTPRoute evil/wide"), "{error}");
    assert!(error.contains("10000 table entries"), "{error}");
    assert!(
        RouteTableBuilder::new()
            .max_entries(10_000)
            .build(&config)
            .is_ok()
    );
}

#[test]
fn header_regexes_cannot_escape_the_whole_value_anchor() {
    let error = build_error(&format!(
        r#"{{"version": 1, {HTTP_LISTENER}, "httpRoutes": [{{"name": "r", "listeners": ["http"], "rules": [{{"matches": [{{"headers": [{{"type": "RegularExpression", "name": "h", "value": "x)|(?:y"}}]}}]}}]}}]}}"#
    ));
    assert!(
        error.contains("regular expression \"x)|(?:y\" refused"),
        "{error}"
    );
}
