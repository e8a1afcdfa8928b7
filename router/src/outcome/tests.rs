use super::*;
use crate::config::HttpFilterConfig;
use crate::error::Origin;
use crate::rule::{
    AllowList, Cors, FilterScope, Filters, HeaderModifier, OriginPattern, PathModifier, Redirect,
    RedirectScheme, compile_filters,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::{Value, json};

/// Compiles one rule filter, written as in an `HTTPRoute`, the way the route table
/// does, so the tests exercise exactly what the data plane will hold.
fn compile(filter: Value) -> Filters {
    let config: HttpFilterConfig = serde_json::from_value(filter).unwrap();
    let at = Origin::route("HTTPRoute", "gateway-conformance-infra", "test");
    *compile_filters(&[config], FilterScope::HttpRule, &at)
        .unwrap()
        .unwrap()
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

/// Every value of a header joined with `,`, as an echo backend reports it.
fn joined(map: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = map
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

// ---------------------------------------------------------------------------------
// Header modifier

fn modifier(set: &[(&str, &str)], add: &[(&str, &str)], remove: &[&str]) -> HeaderModifier {
    let pairs = |list: &[(&str, &str)]| {
        list.iter()
            .map(|(n, v)| {
                (
                    HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    };
    HeaderModifier {
        set: pairs(set),
        add: pairs(add),
        remove: remove
            .iter()
            .map(|n| HeaderName::from_bytes(n.as_bytes()).unwrap())
            .collect(),
    }
}

#[test]
fn set_replaces_every_existing_value() {
    let mut map = headers(&[("x-a", "1"), ("X-A", "2"), ("x-a", "3"), ("other", "keep")]);
    apply_header_modifier(&modifier(&[("X-A", "new")], &[], &[]), &mut map);
    assert_eq!(joined(&map, "x-a").as_deref(), Some("new"));
    assert_eq!(map.get_all("x-a").iter().count(), 1);
    assert_eq!(joined(&map, "other").as_deref(), Some("keep"));
}

#[test]
fn set_creates_an_absent_header() {
    let mut map = HeaderMap::new();
    apply_header_modifier(&modifier(&[("x-a", "new")], &[], &[]), &mut map);
    assert_eq!(joined(&map, "x-a").as_deref(), Some("new"));
}

#[test]
fn add_appends_after_existing_values_in_order() {
    let mut map = headers(&[("x-a", "append-val-1")]);
    apply_header_modifier(&modifier(&[], &[("x-a", "header-val-2")], &[]), &mut map);
    assert_eq!(
        joined(&map, "x-a").as_deref(),
        Some("append-val-1,header-val-2")
    );
}

#[test]
fn add_to_an_absent_header_creates_it() {
    let mut map = headers(&[("other", "keep")]);
    apply_header_modifier(&modifier(&[], &[("x-a", "added")], &[]), &mut map);
    assert_eq!(joined(&map, "x-a").as_deref(), Some("added"));
    assert_eq!(map.len(), 2);
}

#[test]
fn remove_deletes_every_value_and_ignores_absent_headers() {
    let mut map = headers(&[("x-a", "1"), ("x-a", "2"), ("other", "keep")]);
    apply_header_modifier(&modifier(&[], &[], &["X-A", "x-absent"]), &mut map);
    assert!(!map.contains_key("x-a"));
    assert_eq!(map.len(), 1);
}

#[test]
fn edits_apply_in_order_set_add_remove() {
    // The same header in all three lists: set then add gives two values, remove wins.
    let mut map = headers(&[("x-a", "old")]);
    apply_header_modifier(
        &modifier(&[("x-a", "set")], &[("x-a", "added")], &[]),
        &mut map,
    );
    assert_eq!(joined(&map, "x-a").as_deref(), Some("set,added"));
    let mut map = headers(&[("x-a", "old")]);
    apply_header_modifier(
        &modifier(&[("x-a", "set")], &[("x-a", "added")], &["x-a"]),
        &mut map,
    );
    assert!(map.is_empty());
}

#[test]
fn empty_modifier_changes_nothing() {
    let mut map = headers(&[("x-a", "1"), ("x-a", "2")]);
    apply_header_modifier(&HeaderModifier::default(), &mut map);
    assert_eq!(map, headers(&[("x-a", "1"), ("x-a", "2")]));
}

/// `httproute-request-header-modifier`: every request, hand-transcribed, against the
/// filter its route compiles to.
#[test]
fn conformance_request_header_modifier() {
    let filter = |m: Value| {
        compile(json!({"type": "RequestHeaderModifier", "requestHeaderModifier": m}))
            .request_headers
            .unwrap()
    };
    let set = filter(json!({"set": [{"name": "X-Header-Set", "value": "set-overwrites-values"}]}));
    let add = filter(json!({"add": [{"name": "X-Header-Add", "value": "add-appends-values"}]}));
    let remove = filter(json!({"remove": ["X-Header-Remove"]}));
    let multiple = filter(json!({
        "set": [{"name": "X-Header-Set-1", "value": "header-set-1"}, {"name": "X-Header-Set-2", "value": "header-set-2"}],
        "add": [{"name": "X-Header-Add-1", "value": "header-add-1"}, {"name": "X-Header-Add-2", "value": "header-add-2"}, {"name": "X-Header-Add-3", "value": "header-add-3"}],
        "remove": ["X-Header-Remove-1", "X-Header-Remove-2"],
    }));
    let case = filter(json!({
        "set": [{"name": "X-Header-Set", "value": "header-set"}],
        "add": [{"name": "X-Header-Add", "value": "header-add"}],
        "remove": ["X-Header-Remove"],
    }));
    type Case<'a> = (
        &'a HeaderModifier,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a [&'a str],
    );
    let cases: &[Case<'_>] = &[
        (
            &set,
            &[("Some-Other-Header", "val")],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Set", "set-overwrites-values"),
            ],
            &[],
        ),
        (
            &set,
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Set", "some-other-value"),
            ],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Set", "set-overwrites-values"),
            ],
            &[],
        ),
        (
            &add,
            &[("Some-Other-Header", "val")],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Add", "add-appends-values"),
            ],
            &[],
        ),
        (
            &add,
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Add", "some-other-value"),
            ],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Add", "some-other-value,add-appends-values"),
            ],
            &[],
        ),
        (
            &remove,
            &[("X-Header-Remove", "val")],
            &[],
            &["X-Header-Remove"],
        ),
        (
            &multiple,
            &[
                ("X-Header-Set-2", "set-val-2"),
                ("X-Header-Add-2", "add-val-2"),
                ("X-Header-Remove-2", "remove-val-2"),
                ("Another-Header", "another-header-val"),
            ],
            &[
                ("X-Header-Set-1", "header-set-1"),
                ("X-Header-Set-2", "header-set-2"),
                ("X-Header-Add-1", "header-add-1"),
                ("X-Header-Add-2", "add-val-2,header-add-2"),
                ("X-Header-Add-3", "header-add-3"),
                ("Another-Header", "another-header-val"),
            ],
            &["X-Header-Remove-1", "X-Header-Remove-2"],
        ),
        (
            &case,
            &[
                ("x-header-set", "original-val-set"),
                ("x-header-add", "original-val-add"),
                ("x-header-remove", "original-val-remove"),
                ("Another-Header", "another-header-val"),
            ],
            &[
                ("X-Header-Set", "header-set"),
                ("X-Header-Add", "original-val-add,header-add"),
                ("Another-Header", "another-header-val"),
            ],
            &["x-header-remove", "X-Header-Remove"],
        ),
    ];
    for (i, (modifier, request, seen, absent)) in cases.iter().enumerate() {
        let mut map = headers(request);
        apply_header_modifier(modifier, &mut map);
        for (name, value) in *seen {
            let name = name.to_ascii_lowercase();
            assert_eq!(
                joined(&map, &name).as_deref(),
                Some(*value),
                "case {i}: {name}"
            );
        }
        for name in *absent {
            assert!(
                !map.contains_key(name.to_ascii_lowercase().as_str()),
                "case {i}: {name} present"
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// Path rewrite

/// `matched_prefix_len` for a `PathPrefix` value, as the route table reports it.
fn prefix_len(prefix: &str) -> usize {
    prefix.trim_end_matches('/').len()
}

fn prefix_rewrite(prefix: &str, replacement: &str, path: &str) -> String {
    rewrite_path(
        &PathModifier::ReplacePrefixMatch(replacement.into()),
        path,
        prefix_len(prefix),
    )
}

#[test]
fn replace_prefix_match_examples() {
    let cases = [
        // The Gateway API table for ReplacePrefixMatch.
        ("/foo", "/xyz", "/foo/bar", "/xyz/bar"),
        ("/foo", "/xyz/", "/foo/bar", "/xyz/bar"),
        ("/foo/", "/xyz", "/foo/bar", "/xyz/bar"),
        ("/foo/", "/xyz/", "/foo/bar", "/xyz/bar"),
        ("/foo", "/xyz", "/foo", "/xyz"),
        ("/foo", "/xyz", "/foo/", "/xyz/"),
        ("/foo", "", "/foo/bar", "/bar"),
        ("/foo", "", "/foo/", "/"),
        ("/foo", "", "/foo", "/"),
        ("/foo", "/", "/foo/", "/"),
        ("/foo", "/", "/foo", "/"),
        ("/foo", "/", "/foo/bar", "/bar"),
        // A `/` prefix keeps the whole path as the remainder.
        ("/", "/foo", "/bar", "/foo/bar"),
        ("/", "/foo", "/", "/foo/"),
        ("/", "/", "/bar/baz", "/bar/baz"),
        ("/", "/", "/", "/"),
        // Deeper paths and longer replacements.
        (
            "/original-prefix",
            "/replacement-prefix",
            "/original-prefix/lemon",
            "/replacement-prefix/lemon",
        ),
        ("/a/b", "/c", "/a/b/d/e/", "/c/d/e/"),
        ("/foo", "/x/y/z", "/foo/bar", "/x/y/z/bar"),
    ];
    for (prefix, replacement, path, want) in cases {
        assert_eq!(
            prefix_rewrite(prefix, replacement, path),
            want,
            "{prefix} {replacement} {path}"
        );
    }
}

#[test]
fn replace_full_path_ignores_the_request_path() {
    let full = PathModifier::ReplaceFullPath("/full-path-replacement".into());
    assert_eq!(
        rewrite_path(&full, "/full/path/original", 5),
        "/full-path-replacement"
    );
    assert_eq!(rewrite_path(&full, "/", 0), "/full-path-replacement");
    assert_eq!(rewrite_path(&full, "/x", 99), "/full-path-replacement");
    assert_eq!(
        rewrite_path(&PathModifier::ReplaceFullPath("/".into()), "/a/b", 2),
        "/"
    );
}

#[test]
fn bad_prefix_lengths_never_panic() {
    let modifier = PathModifier::ReplacePrefixMatch("/xyz".into());
    // Past the end: no remainder.
    assert_eq!(rewrite_path(&modifier, "/foo", 5), "/xyz");
    assert_eq!(rewrite_path(&modifier, "/foo", usize::MAX), "/xyz");
    // Inside a multi-byte character: no remainder.
    assert_eq!(rewrite_path(&modifier, "/é/bar", 2), "/xyz");
    // Exactly the whole path.
    assert_eq!(rewrite_path(&modifier, "/foo", 4), "/xyz");
    // Not on a segment boundary: the parts stay separate segments.
    assert_eq!(rewrite_path(&modifier, "/foobar", 4), "/xyz/bar");
    // Empty path.
    assert_eq!(rewrite_path(&modifier, "", 0), "/xyz");
    assert_eq!(
        rewrite_path(&PathModifier::ReplacePrefixMatch("/".into()), "", 0),
        "/"
    );
}

#[test]
fn hand_built_modifiers_still_give_absolute_paths() {
    assert_eq!(
        rewrite_path(&PathModifier::ReplaceFullPath("".into()), "/a", 0),
        "/"
    );
    assert_eq!(
        rewrite_path(&PathModifier::ReplaceFullPath("x".into()), "/a", 0),
        "/x"
    );
    assert_eq!(
        rewrite_path(
            &PathModifier::ReplacePrefixMatch("xyz".into()),
            "/foo/bar",
            4
        ),
        "/xyz/bar"
    );
    assert_eq!(
        rewrite_path(
            &PathModifier::ReplacePrefixMatch("/xyz//".into()),
            "/foo/bar",
            4
        ),
        "/xyz/bar"
    );
}

// ---------------------------------------------------------------------------------
// Redirect

fn redirect(config: Value) -> Redirect {
    compile(json!({"type": "RequestRedirect", "requestRedirect": config}))
        .redirect
        .unwrap()
}

/// A plain-HTTP request on port 80 for `path`, matched by a `PathPrefix` equal to
/// `prefix`.
fn http_request<'a>(host: &'a str, path: &'a str, prefix: &str) -> RedirectRequest<'a> {
    RedirectRequest {
        scheme: "http",
        host,
        listener_port: 80,
        path,
        query: None,
        matched_prefix_len: prefix_len(prefix),
    }
}

#[test]
fn redirect_port_examples() {
    let request = http_request("example.com", "/port", "/port");
    assert_eq!(
        redirect_location(&redirect(json!({"port": 8083})), &request),
        "http://example.com:8083/port"
    );
    let status = redirect(json!({"port": 8083, "statusCode": 301}));
    assert_eq!(status.status, 301);
    assert_eq!(
        redirect_location(&status, &request),
        "http://example.com:8083/port"
    );
    // A port that is the scheme's default is left out.
    assert_eq!(
        redirect_location(&redirect(json!({"port": 80})), &request),
        "http://example.com/port"
    );
    let https = redirect(json!({"scheme": "https", "port": 443}));
    assert_eq!(
        redirect_location(&https, &request),
        "https://example.com/port"
    );
    let https = redirect(json!({"scheme": "https", "port": 8443}));
    assert_eq!(
        redirect_location(&https, &request),
        "https://example.com:8443/port"
    );
    // An explicit port is kept even when it is the other scheme's default.
    let https = redirect(json!({"scheme": "https", "port": 80}));
    assert_eq!(
        redirect_location(&https, &request),
        "https://example.com:80/port"
    );
}

#[test]
fn redirect_scheme_uses_the_well_known_port() {
    let to_https = redirect(json!({"scheme": "https"}));
    let mut request = http_request("example.com:8080", "/scheme", "/scheme");
    request.listener_port = 8080;
    assert_eq!(
        redirect_location(&to_https, &request),
        "https://example.com/scheme"
    );
    let to_http = redirect(json!({"scheme": "http"}));
    let request = RedirectRequest {
        scheme: "https",
        listener_port: 8443,
        ..http_request("example.com:8443", "/a", "/a")
    };
    assert_eq!(
        redirect_location(&to_http, &request),
        "http://example.com/a"
    );
}

#[test]
fn redirect_without_scheme_or_port_keeps_the_listener_port() {
    let to_host = redirect(json!({"hostname": "example.org"}));
    let request = http_request("foo.com:8080", "/path", "/path");
    let request = RedirectRequest {
        listener_port: 8080,
        ..request
    };
    assert_eq!(
        redirect_location(&to_host, &request),
        "http://example.org:8080/path"
    );
    let path_only =
        redirect(json!({"path": {"type": "ReplaceFullPath", "replaceFullPath": "/path"}}));
    let request = RedirectRequest {
        listener_port: 8080,
        ..http_request("foo.com:8080", "/x", "/x")
    };
    assert_eq!(
        redirect_location(&path_only, &request),
        "http://foo.com:8080/path"
    );
    // An https listener on 443 needs no port.
    let request = RedirectRequest {
        scheme: "https",
        listener_port: 443,
        ..http_request("foo.com", "/x", "/x")
    };
    assert_eq!(
        redirect_location(&to_host, &request),
        "https://example.org/x"
    );
}

#[test]
fn redirect_hostname_examples() {
    let to_host = redirect(json!({"hostname": "example.org"}));
    assert_eq!(
        redirect_location(&to_host, &http_request("example.com", "/path", "/path")),
        "http://example.org/path"
    );
    // The request's port does not leak into the new host.
    assert_eq!(
        redirect_location(&to_host, &http_request("example.com:80", "/path", "/path")),
        "http://example.org/path"
    );
}

#[test]
fn request_host_loses_its_port() {
    let to_port = redirect(json!({"port": 9000}));
    let cases = [
        ("example.com", "http://example.com:9000/a"),
        ("example.com:80", "http://example.com:9000/a"),
        ("Example.COM:8080", "http://example.com:9000/a"),
        ("example.com.", "http://example.com:9000/a"),
        ("[::1]:8080", "http://[::1]:9000/a"),
        ("[::1]", "http://[::1]:9000/a"),
        ("[2001:db8::1]:443", "http://[2001:db8::1]:9000/a"),
        ("10.0.0.1:8080", "http://10.0.0.1:9000/a"),
    ];
    for (host, want) in cases {
        assert_eq!(
            redirect_location(&to_port, &http_request(host, "/a", "/a")),
            want,
            "{host}"
        );
    }
    // With nothing to change, an IPv6 host keeps brackets and the listener port.
    let request = RedirectRequest {
        listener_port: 8080,
        ..http_request("[::1]:8080", "/a", "/a")
    };
    let to_status = redirect(json!({"statusCode": 302}));
    assert_eq!(
        redirect_location(&to_status, &request),
        "http://[::1]:8080/a"
    );
}

#[test]
fn redirect_keeps_non_empty_queries() {
    let to_host = redirect(json!({"hostname": "example.org"}));
    let with = |query| RedirectRequest {
        query,
        ..http_request("example.com", "/p", "/p")
    };
    assert_eq!(
        redirect_location(&to_host, &with(Some("a=1&b=2"))),
        "http://example.org/p?a=1&b=2"
    );
    assert_eq!(
        redirect_location(&to_host, &with(Some(""))),
        "http://example.org/p"
    );
    assert_eq!(
        redirect_location(&to_host, &with(None)),
        "http://example.org/p"
    );
    let full = redirect(json!({"path": {"type": "ReplaceFullPath", "replaceFullPath": "/new"}}));
    assert_eq!(
        redirect_location(&full, &with(Some("q"))),
        "http://example.com/new?q"
    );
    let prefix =
        redirect(json!({"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/new"}}));
    let request = RedirectRequest {
        query: Some("q=1"),
        ..http_request("example.com", "/p/x", "/p")
    };
    assert_eq!(
        redirect_location(&prefix, &request),
        "http://example.com/new/x?q=1"
    );
}

#[test]
fn redirect_of_an_empty_path_is_root() {
    let to_host = redirect(json!({"hostname": "example.org"}));
    assert_eq!(
        redirect_location(&to_host, &http_request("a", "", "/")),
        "http://example.org/"
    );
}

/// `httproute-redirect-path`, `-port`, `-scheme` and `-host-and-status`: every request
/// against the redirect its rule compiles to. The harness sends no `Host`, so the
/// gateway address stands in where the expectation names no host.
#[test]
fn conformance_redirects() {
    const GATEWAY: &str = "192.0.2.1";
    let prefix = |value| json!({"type": "ReplacePrefixMatch", "replacePrefixMatch": value});
    let full = |value| json!({"type": "ReplaceFullPath", "replaceFullPath": value});
    // (rule prefix, redirect config, request path, status, location)
    let cases = [
        (
            "/original-prefix",
            json!({"path": prefix("/replacement-prefix")}),
            "/original-prefix/lemon",
            302,
            "http://192.0.2.1/replacement-prefix/lemon",
        ),
        (
            "/full",
            json!({"path": full("/full-path-replacement")}),
            "/full/path/original",
            302,
            "http://192.0.2.1/full-path-replacement",
        ),
        (
            "/path-and-host",
            json!({"hostname": "example.org", "path": prefix("/replacement-prefix")}),
            "/path-and-host",
            302,
            "http://example.org/replacement-prefix",
        ),
        (
            "/path-and-status",
            json!({"path": prefix("/replacement-prefix"), "statusCode": 301}),
            "/path-and-status",
            301,
            "http://192.0.2.1/replacement-prefix",
        ),
        (
            "/full-path-and-host",
            json!({"hostname": "example.org", "path": full("/replacement-full")}),
            "/full-path-and-host",
            302,
            "http://example.org/replacement-full",
        ),
        (
            "/full-path-and-status",
            json!({"path": full("/replacement-full"), "statusCode": 301}),
            "/full-path-and-status",
            301,
            "http://192.0.2.1/replacement-full",
        ),
        (
            "/port",
            json!({"port": 8083}),
            "/port",
            302,
            "http://192.0.2.1:8083/port",
        ),
        (
            "/port-and-host",
            json!({"hostname": "example.org", "port": 8083}),
            "/port-and-host",
            302,
            "http://example.org:8083/port-and-host",
        ),
        (
            "/port-and-status",
            json!({"port": 8083, "statusCode": 301}),
            "/port-and-status",
            301,
            "http://192.0.2.1:8083/port-and-status",
        ),
        (
            "/port-and-host-and-status",
            json!({"port": 8083, "hostname": "example.org", "statusCode": 302}),
            "/port-and-host-and-status",
            302,
            "http://example.org:8083/port-and-host-and-status",
        ),
        (
            "/scheme",
            json!({"scheme": "https"}),
            "/scheme",
            302,
            "https://192.0.2.1/scheme",
        ),
        (
            "/scheme-and-host",
            json!({"hostname": "example.org", "scheme": "https"}),
            "/scheme-and-host",
            302,
            "https://example.org/scheme-and-host",
        ),
        (
            "/scheme-and-status",
            json!({"scheme": "https", "statusCode": 301}),
            "/scheme-and-status",
            301,
            "https://192.0.2.1/scheme-and-status",
        ),
        (
            "/scheme-and-host-and-status",
            json!({"scheme": "https", "statusCode": 302, "hostname": "example.org"}),
            "/scheme-and-host-and-status",
            302,
            "https://example.org/scheme-and-host-and-status",
        ),
        (
            "/hostname-redirect",
            json!({"hostname": "example.org"}),
            "/hostname-redirect",
            302,
            "http://example.org/hostname-redirect",
        ),
        (
            "/host-and-status",
            json!({"statusCode": 301, "hostname": "example.org"}),
            "/host-and-status",
            301,
            "http://example.org/host-and-status",
        ),
    ];
    for (rule_prefix, config, path, status, location) in cases {
        // Only explicit status codes are checked: the default for an absent
        // `statusCode` is decided when the rule compiles, not here.
        let explicit = config.get("statusCode").is_some();
        let compiled = redirect(config);
        if explicit {
            assert_eq!(compiled.status, status, "{path}");
        }
        assert_eq!(
            redirect_location(&compiled, &http_request(GATEWAY, path, rule_prefix)),
            location,
            "{path}"
        );
    }
}

#[test]
fn redirect_scheme_names() {
    assert_eq!(RedirectScheme::Https.as_str(), "https");
    let hand_built = Redirect {
        scheme: Some(RedirectScheme::Https),
        hostname: None,
        path: Some(PathModifier::ReplacePrefixMatch("/".into())),
        port: None,
        status: 308,
    };
    let request = http_request("example.com:8080", "/old/x", "/old");
    assert_eq!(
        redirect_location(&hand_built, &request),
        "https://example.com/x"
    );
}

// ---------------------------------------------------------------------------------
// CORS

fn cors(config: Value) -> Cors {
    compile(json!({"type": "CORS", "cors": config}))
        .cors
        .unwrap()
}

fn only(values: &[&str]) -> AllowList {
    AllowList::Only(values.iter().map(|v| (*v).into()).collect())
}

/// The five policies of `httproute-cors`, compiled from the routes' filters.
struct Routes {
    cors_1: Cors,
    cors_2: Cors,
    wildcard_origin: Cors,
    wildcard_methods_headers: Cors,
    wildcard_methods_headers_unauth: Cors,
}

fn routes() -> Routes {
    Routes {
        cors_1: cors(json!({
            "allowOrigins": ["https://www.foo.com", "https://*.bar.com"],
            "allowMethods": ["GET", "OPTIONS"],
            "allowHeaders": ["x-header-1", "x-header-2"],
            "exposeHeaders": ["x-header-3", "x-header-4"],
            "allowCredentials": true,
            "maxAge": 3600,
        })),
        cors_2: cors(json!({"allowOrigins": ["https://www.foo.com"], "allowMethods": ["*"]})),
        wildcard_origin: cors(
            json!({"allowOrigins": ["*"], "allowMethods": ["PUT"], "allowCredentials": false}),
        ),
        wildcard_methods_headers: cors(json!({
            "allowOrigins": ["*"], "allowMethods": ["*"], "allowHeaders": ["*"], "allowCredentials": true,
        })),
        wildcard_methods_headers_unauth: cors(json!({
            "allowOrigins": ["*"], "allowMethods": ["*"], "allowHeaders": ["*"], "allowCredentials": false,
        })),
    }
}

#[test]
fn conformance_policies_compile_as_expected() {
    let routes = routes();
    assert_eq!(
        routes.cors_1,
        Cors {
            allow_origins: vec![
                OriginPattern::Exact("https://www.foo.com".into()),
                OriginPattern::Wildcard {
                    prefix: "https://".into(),
                    suffix: ".bar.com".into()
                },
            ],
            allow_credentials: true,
            allow_methods: only(&["GET", "OPTIONS"]),
            allow_headers: only(&["x-header-1", "x-header-2"]),
            expose_headers: only(&["x-header-3", "x-header-4"]),
            max_age: 3600,
        }
    );
    assert_eq!(routes.cors_2.allow_methods, AllowList::Any);
    assert!(!routes.cors_2.allow_credentials);
    assert_eq!(
        routes.wildcard_origin.allow_origins,
        vec![OriginPattern::Any]
    );
    assert_eq!(
        routes.wildcard_methods_headers.allow_headers,
        AllowList::Any
    );
    assert!(routes.wildcard_methods_headers.allow_credentials);
    assert!(!routes.wildcard_methods_headers_unauth.allow_credentials);
}

/// One request of `httproute-cors` and what must come back.
struct CorsCase<'a> {
    name: &'a str,
    policy: &'a Cors,
    method: Method,
    request: &'a [(&'a str, &'a str)],
    /// `responseHeaders`: exact values.
    exact: &'a [(&'a str, &'a str)],
    /// `responseHeaderOneOf`: the value must be one of these.
    one_of: &'a [(&'a str, &'a [&'a str])],
    /// `absentResponseHeaders`.
    absent: &'a [&'a str],
    /// `ignoreWhitespaceInHeaderValues`.
    ignore_whitespace: bool,
}

const FOO_HEADERS: &[&str] = &["x-header-1, x-header-2", "x-header-2, x-header-1"];

/// `responseHeaderOneOf` of the three allowed `cors-1` preflights, which differ only in
/// the origin.
fn cors_1_preflight(
    origin: &'static [&'static str],
) -> [(&'static str, &'static [&'static str]); 6] {
    [
        ("access-control-allow-origin", origin),
        (
            "access-control-allow-methods",
            &["GET, OPTIONS", "OPTIONS, GET"],
        ),
        ("access-control-allow-headers", FOO_HEADERS),
        (
            "access-control-expose-headers",
            &["x-header-3, x-header-4", "x-header-4, x-header-3"],
        ),
        ("access-control-max-age", &["3600"]),
        ("access-control-allow-credentials", &["true"]),
    ]
}

/// Runs a case the way the proxy would: a preflight is answered by the proxy, any
/// other request gets the CORS headers added to the backend's response.
fn run(case: &CorsCase<'_>) {
    let request = headers(case.request);
    let preflight = is_preflight(&case.method, &request);
    assert_eq!(
        preflight,
        case.method == Method::OPTIONS,
        "{}: preflight",
        case.name
    );
    let response = if preflight {
        preflight_response(case.policy, &request)
    } else {
        response_headers(case.policy, &request)
    };
    let strip = |value: &str| -> String {
        if case.ignore_whitespace {
            value.chars().filter(|c| !c.is_whitespace()).collect()
        } else {
            value.to_owned()
        }
    };
    for (name, want) in case.exact {
        let got = response.get(*name).map(|v| v.to_str().unwrap());
        assert_eq!(got, Some(*want), "{}: {name}", case.name);
    }
    for (name, allowed) in case.one_of {
        assert_eq!(
            response.get_all(*name).iter().count(),
            1,
            "{}: one {name}",
            case.name
        );
        let got = strip(response[*name].to_str().unwrap());
        assert!(
            allowed.iter().any(|want| strip(want) == got),
            "{}: {name} is {got:?}, want one of {allowed:?}",
            case.name
        );
    }
    for name in case.absent {
        assert!(
            !response.contains_key(name.to_ascii_lowercase().as_str()),
            "{}: {name} present",
            case.name
        );
    }
}

#[test]
fn conformance_httproute_cors() {
    let routes = routes();
    let foo_preflight = cors_1_preflight(&["https://www.foo.com"]);
    let bar_preflight = cors_1_preflight(&["https://www.bar.com"]);
    let xpto_preflight = cors_1_preflight(&["https://xpto.www.bar.com"]);
    let cases = [
        CorsCase {
            name: "preflight from an exact matching origin",
            policy: &routes.cors_1,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://www.foo.com"),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "x-header-1, x-header-2"),
            ],
            exact: &[],
            one_of: &foo_preflight,
            absent: &[],
            ignore_whitespace: true,
        },
        CorsCase {
            name: "preflight from a wildcard matching origin",
            policy: &routes.cors_1,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://www.bar.com"),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "x-header-1, x-header-2"),
            ],
            exact: &[],
            one_of: &bar_preflight,
            absent: &[],
            ignore_whitespace: true,
        },
        CorsCase {
            name: "preflight from a wildcard matching any number of periods",
            policy: &routes.cors_1,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://xpto.www.bar.com"),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "x-header-1, x-header-2"),
            ],
            exact: &[],
            one_of: &xpto_preflight,
            absent: &[],
            ignore_whitespace: true,
        },
        CorsCase {
            name: "preflight from a non-matching origin",
            policy: &routes.cors_1,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://foobar.com"),
                ("access-control-request-method", "GET"),
            ],
            exact: &[],
            one_of: &[],
            absent: &["access-control-allow-origin"],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "simple request from an exact matching origin",
            policy: &routes.cors_1,
            method: Method::GET,
            request: &[
                ("Origin", "https://www.foo.com"),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "x-header-1, x-header-2"),
            ],
            exact: &[("access-control-allow-origin", "https://www.foo.com")],
            one_of: &[],
            absent: &[],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "simple request from a wildcard matching origin",
            policy: &routes.cors_1,
            method: Method::GET,
            request: &[
                ("Origin", "https://www.bar.com"),
                ("access-control-request-method", "GET"),
                ("access-control-request-headers", "x-header-1, x-header-2"),
            ],
            exact: &[("access-control-allow-origin", "https://www.bar.com")],
            one_of: &[],
            absent: &[],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "simple request from a non-matching origin",
            policy: &routes.cors_1,
            method: Method::GET,
            request: &[
                ("Origin", "https://foobar.com"),
                ("access-control-request-method", "GET"),
            ],
            exact: &[],
            one_of: &[],
            absent: &["access-control-allow-origin"],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "preflight with POST allowed by allowMethods wildcard",
            policy: &routes.cors_2,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://www.foo.com"),
                ("access-control-request-method", "POST"),
            ],
            exact: &[("access-control-allow-origin", "https://www.foo.com")],
            one_of: &[("access-control-allow-methods", &["POST", "*"])],
            absent: &["access-control-allow-credentials"],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "preflight without allowCredentials",
            policy: &routes.cors_2,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://www.foo.com"),
                ("access-control-request-method", "POST"),
            ],
            exact: &[],
            one_of: &[],
            absent: &["Access-Control-Allow-Credentials"],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "preflight from a wildcard origin",
            policy: &routes.wildcard_origin,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://foobar.com"),
                ("access-control-request-method", "PUT"),
            ],
            exact: &[],
            one_of: &[
                ("access-control-allow-origin", &["https://foobar.com", "*"]),
                ("access-control-allow-methods", &["PUT"]),
            ],
            absent: &["Access-Control-Allow-Credentials"],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "preflight from a wildcard origin with a port",
            policy: &routes.wildcard_origin,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://foobar.com:12345"),
                ("access-control-request-method", "PUT"),
            ],
            exact: &[],
            one_of: &[
                (
                    "access-control-allow-origin",
                    &["https://foobar.com:12345", "*"],
                ),
                ("access-control-allow-methods", &["PUT"]),
            ],
            absent: &["Access-Control-Allow-Credentials"],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "request from a wildcard origin with a port",
            policy: &routes.wildcard_origin,
            method: Method::PUT,
            request: &[("Origin", "https://foobar.com:12345")],
            exact: &[],
            one_of: &[(
                "access-control-allow-origin",
                &["https://foobar.com:12345", "*"],
            )],
            absent: &[],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "simple request from a wildcard origin",
            policy: &routes.wildcard_origin,
            method: Method::PUT,
            request: &[("Origin", "https://foobar.com")],
            exact: &[],
            one_of: &[("access-control-allow-origin", &["https://foobar.com", "*"])],
            absent: &["Access-Control-Allow-Credentials"],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "preflight with wildcard methods and headers, credentials",
            policy: &routes.wildcard_methods_headers,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://other.foo.com"),
                ("access-control-request-method", "PUT"),
                ("access-control-request-headers", "x-header-1, x-header-2"),
            ],
            exact: &[],
            one_of: &[
                ("access-control-allow-origin", &["https://other.foo.com"]),
                ("access-control-allow-methods", &["PUT"]),
                ("access-control-allow-headers", FOO_HEADERS),
                ("access-control-allow-credentials", &["true"]),
            ],
            absent: &[],
            ignore_whitespace: true,
        },
        CorsCase {
            name: "preflight with wildcard methods and headers, no credentials",
            policy: &routes.wildcard_methods_headers_unauth,
            method: Method::OPTIONS,
            request: &[
                ("Origin", "https://other.foo.com"),
                ("access-control-request-method", "PUT"),
                ("access-control-request-headers", "x-header-1, x-header-2"),
            ],
            exact: &[],
            one_of: &[
                (
                    "access-control-allow-origin",
                    &["https://other.foo.com", "*"],
                ),
                ("access-control-allow-methods", &["PUT", "*"]),
                (
                    "access-control-allow-headers",
                    &["x-header-1, x-header-2", "x-header-2, x-header-1", "*"],
                ),
            ],
            absent: &["access-control-allow-credentials"],
            ignore_whitespace: true,
        },
        CorsCase {
            name: "request with credentials",
            policy: &routes.wildcard_methods_headers,
            method: Method::GET,
            request: &[("Origin", "https://other.foo.com")],
            exact: &[],
            one_of: &[
                ("access-control-allow-origin", &["https://other.foo.com"]),
                ("access-control-allow-credentials", &["true"]),
            ],
            absent: &[],
            ignore_whitespace: false,
        },
        CorsCase {
            name: "request without credentials",
            policy: &routes.wildcard_methods_headers_unauth,
            method: Method::GET,
            request: &[("Origin", "https://other.foo.com")],
            exact: &[],
            one_of: &[(
                "access-control-allow-origin",
                &["https://other.foo.com", "*"],
            )],
            absent: &["access-control-allow-credentials"],
            ignore_whitespace: false,
        },
    ];
    assert_eq!(cases.len(), 17, "every request of httproute-cors");
    for case in &cases {
        run(case);
    }
}

#[test]
fn preflight_needs_options_origin_and_requested_method() {
    let full = headers(&[
        ("origin", "https://a.com"),
        ("access-control-request-method", "GET"),
    ]);
    assert!(is_preflight(&Method::OPTIONS, &full));
    assert!(!is_preflight(&Method::GET, &full));
    assert!(!is_preflight(&Method::POST, &full));
    assert!(!is_preflight(
        &Method::OPTIONS,
        &headers(&[("origin", "https://a.com")])
    ));
    assert!(!is_preflight(
        &Method::OPTIONS,
        &headers(&[("access-control-request-method", "GET")])
    ));
    assert!(!is_preflight(&Method::OPTIONS, &HeaderMap::new()));
    // Header names are case-insensitive on the wire.
    let upper = headers(&[
        ("ORIGIN", "https://a.com"),
        ("Access-Control-Request-Method", "GET"),
    ]);
    assert!(is_preflight(&Method::OPTIONS, &upper));
}

#[test]
fn refused_origins_get_no_headers_at_all() {
    let routes = routes();
    let request = |origin| headers(&[("origin", origin), ("access-control-request-method", "GET")]);
    for origin in [
        "https://foobar.com",
        "http://www.foo.com",
        "https://bar.com",
        "https://www.foo.com:8443",
        "null",
    ] {
        assert!(
            preflight_response(&routes.cors_1, &request(origin)).is_empty(),
            "{origin}"
        );
        assert!(
            response_headers(&routes.cors_1, &request(origin)).is_empty(),
            "{origin}"
        );
    }
    // No Origin at all: not a CORS request.
    let no_origin = headers(&[("access-control-request-method", "GET")]);
    assert!(preflight_response(&routes.wildcard_origin, &no_origin).is_empty());
    assert!(response_headers(&routes.wildcard_origin, &HeaderMap::new()).is_empty());
    // Two Origin headers, or one that is not text, are refused even by `*`.
    let twice = headers(&[("origin", "https://a.com"), ("origin", "https://b.com")]);
    assert!(response_headers(&routes.wildcard_origin, &twice).is_empty());
    let mut binary = HeaderMap::new();
    binary.insert(
        "origin",
        HeaderValue::from_bytes(b"https://\xffa.com").unwrap(),
    );
    assert!(response_headers(&routes.wildcard_origin, &binary).is_empty());
    // A policy with no origins allows none.
    let none = Cors {
        allow_origins: Vec::new(),
        ..routes.wildcard_origin.clone()
    };
    assert!(response_headers(&none, &headers(&[("origin", "https://a.com")])).is_empty());
}

#[test]
fn origins_match_case_insensitively_and_are_echoed_as_sent() {
    let routes = routes();
    let response = response_headers(
        &routes.cors_1,
        &headers(&[("Origin", "HTTPS://WWW.Foo.com")]),
    );
    assert_eq!(
        response["access-control-allow-origin"],
        "HTTPS://WWW.Foo.com"
    );
}

#[test]
fn allowed_answers_vary_on_origin() {
    let routes = routes();
    let request = headers(&[
        ("origin", "https://www.foo.com"),
        ("access-control-request-method", "GET"),
    ]);
    let preflight = preflight_response(&routes.cors_1, &request);
    assert_eq!(joined(&preflight, "vary").as_deref(), Some("origin"));
    let simple = response_headers(
        &routes.cors_1,
        &headers(&[("origin", "https://www.foo.com")]),
    );
    assert_eq!(joined(&simple, "vary").as_deref(), Some("origin"));
    // Echoed request headers are named in vary too.
    let request = headers(&[
        ("origin", "https://a.com"),
        ("access-control-request-method", "PUT"),
        ("access-control-request-headers", "x-a"),
    ]);
    let echoed = preflight_response(&routes.wildcard_methods_headers, &request);
    assert_eq!(
        joined(&echoed, "vary").as_deref(),
        Some("origin,access-control-request-method,access-control-request-headers")
    );
}

#[test]
fn simple_responses_carry_only_origin_credentials_and_exposed_headers() {
    let routes = routes();
    let response = response_headers(
        &routes.cors_1,
        &headers(&[("origin", "https://www.foo.com")]),
    );
    let mut names: Vec<&str> = response.keys().map(HeaderName::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "access-control-allow-credentials",
            "access-control-allow-origin",
            "access-control-expose-headers",
            "vary",
        ]
    );
    assert_eq!(
        response["access-control-expose-headers"],
        "x-header-3, x-header-4"
    );
    let bare = response_headers(
        &routes.cors_2,
        &headers(&[("origin", "https://www.foo.com")]),
    );
    let mut names: Vec<&str> = bare.keys().map(HeaderName::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["access-control-allow-origin", "vary"]);
}

#[test]
fn preflight_lists_configured_values_in_order() {
    let routes = routes();
    let request = headers(&[
        ("origin", "https://www.foo.com"),
        ("access-control-request-method", "DELETE"),
    ]);
    let response = preflight_response(&routes.cors_1, &request);
    // The configured list is sent whatever was requested: the browser decides.
    assert_eq!(response["access-control-allow-methods"], "GET, OPTIONS");
    assert_eq!(
        response["access-control-allow-headers"],
        "x-header-1, x-header-2"
    );
    assert_eq!(response["access-control-max-age"], "3600");
}

#[test]
fn preflight_leaves_out_empty_lists_and_defaults_max_age() {
    let routes = routes();
    let request = headers(&[
        ("origin", "https://foobar.com"),
        ("access-control-request-method", "PUT"),
        ("access-control-request-headers", "x-a"),
    ]);
    let response = preflight_response(&routes.wildcard_origin, &request);
    assert_eq!(response["access-control-allow-methods"], "PUT");
    assert!(!response.contains_key("access-control-allow-headers"));
    assert!(!response.contains_key("access-control-expose-headers"));
    assert!(!response.contains_key("access-control-allow-credentials"));
    assert_eq!(response["access-control-max-age"], "5");
    // No methods configured at all: the header is left out.
    let no_methods = Cors {
        allow_methods: only(&[]),
        ..routes.wildcard_origin.clone()
    };
    assert!(
        !preflight_response(&no_methods, &request).contains_key("access-control-allow-methods")
    );
}

#[test]
fn wildcards_without_credentials_answer_star() {
    let policy = Cors {
        allow_origins: vec![OriginPattern::Any],
        allow_credentials: false,
        allow_methods: AllowList::Any,
        allow_headers: AllowList::Any,
        expose_headers: AllowList::Any,
        max_age: 0,
    };
    let request = headers(&[
        ("origin", "https://a.com"),
        ("access-control-request-method", "PATCH"),
    ]);
    let response = preflight_response(&policy, &request);
    assert_eq!(response["access-control-allow-origin"], "https://a.com");
    assert_eq!(response["access-control-allow-methods"], "*");
    assert_eq!(response["access-control-allow-headers"], "*");
    assert_eq!(response["access-control-expose-headers"], "*");
    assert_eq!(response["access-control-max-age"], "0");
    assert_eq!(joined(&response, "vary").as_deref(), Some("origin"));
    let simple = response_headers(&policy, &headers(&[("origin", "https://a.com")]));
    assert_eq!(simple["access-control-expose-headers"], "*");
}

#[test]
fn wildcards_with_credentials_echo_the_request() {
    let policy = Cors {
        allow_origins: vec![OriginPattern::Any],
        allow_credentials: true,
        allow_methods: AllowList::Any,
        allow_headers: AllowList::Any,
        expose_headers: AllowList::Any,
        max_age: 10,
    };
    let request = headers(&[
        ("origin", "https://a.com"),
        ("access-control-request-method", "PATCH"),
        ("access-control-request-headers", "x-a, x-b"),
        ("access-control-request-headers", "x-c"),
    ]);
    let response = preflight_response(&policy, &request);
    assert_eq!(response["access-control-allow-origin"], "https://a.com");
    assert_eq!(response["access-control-allow-credentials"], "true");
    assert_eq!(response["access-control-allow-methods"], "PATCH");
    // Repeated request headers are joined into one list.
    assert_eq!(response["access-control-allow-headers"], "x-a, x-b, x-c");
    // `*` would be read literally with credentials, and there is nothing to echo.
    assert!(!response.contains_key("access-control-expose-headers"));
    // Nothing requested, nothing allowed: no header rather than `*`.
    let bare = headers(&[
        ("origin", "https://a.com"),
        ("access-control-request-method", "GET"),
    ]);
    assert!(!preflight_response(&policy, &bare).contains_key("access-control-allow-headers"));
    let blank = headers(&[
        ("origin", "https://a.com"),
        ("access-control-request-method", "GET"),
        ("access-control-request-headers", " "),
    ]);
    assert!(!preflight_response(&policy, &blank).contains_key("access-control-allow-headers"));
    // Called without a requested method (not a real preflight): no methods header.
    let no_method = headers(&[("origin", "https://a.com")]);
    let response = preflight_response(&policy, &no_method);
    assert!(!response.contains_key("access-control-allow-methods"));
    assert_eq!(joined(&response, "vary").as_deref(), Some("origin"));
}

#[test]
fn invalid_hand_built_lists_lose_the_header_instead_of_panicking() {
    let policy = Cors {
        allow_origins: vec![OriginPattern::Any],
        allow_credentials: false,
        allow_methods: only(&["GET\n"]),
        allow_headers: only(&["x-a"]),
        expose_headers: only(&["bad\0"]),
        max_age: 5,
    };
    let request = headers(&[
        ("origin", "https://a.com"),
        ("access-control-request-method", "GET"),
    ]);
    let response = preflight_response(&policy, &request);
    assert!(!response.contains_key("access-control-allow-methods"));
    assert!(!response.contains_key("access-control-expose-headers"));
    assert_eq!(response["access-control-allow-headers"], "x-a");
}

#[test]
fn grpc_content_types_are_told_from_others() {
    for grpc in [
        "application/grpc",
        "application/grpc+proto",
        "Application/GRPC; charset=utf-8",
        " application/grpc+json ",
    ] {
        assert!(is_grpc_content_type(grpc.as_bytes()), "{grpc}");
    }
    for other in [
        "application/grpc-web",
        "application/grpc-web+proto",
        "application/json",
        "application/grp",
        "",
    ] {
        assert!(!is_grpc_content_type(other.as_bytes()), "{other}");
    }
}

#[test]
fn http_statuses_map_to_the_grpc_codes_clients_infer() {
    let mapped: Vec<(u16, u32)> = [400, 401, 403, 404, 429, 500, 502, 503, 504, 200]
        .into_iter()
        .map(|status| (status, grpc_status_for_http(status)))
        .collect();
    assert_eq!(
        mapped,
        [
            (400, 13),
            (401, 16),
            (403, 7),
            (404, 12),
            (429, 14),
            (500, 2),
            (502, 14),
            (503, 14),
            (504, 14),
            (200, 2)
        ]
    );
}

#[test]
fn grpc_status_is_read_only_when_well_formed() {
    let fields = |value: &str| headers(&[("grpc-status", value)]);
    assert_eq!(grpc_status(&fields("0")), Some(0));
    assert_eq!(grpc_status(&fields(" 14 ")), Some(14));
    assert_eq!(grpc_status(&fields("OK")), None);
    assert_eq!(grpc_status(&fields("-1")), None);
    assert_eq!(grpc_status(&HeaderMap::new()), None);
}
