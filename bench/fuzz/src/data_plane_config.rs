//! `data_plane_config`: a `DataPlaneConfig` from JSON, its route table, and lookups
//! in it.
//!
//! A config that parses survives JSON unchanged. Building its route table may refuse
//! it, but never panics. A table that builds is asked to route requests made from
//! the config's own hostnames, paths, methods, headers and query parameters (and
//! variants of them), and each answer must be consistent: a match names a listener,
//! route and rule of the table, a prefix no longer than the path, the listener
//! [`RouteTable::listener`] names for that host; no listener for a host means no
//! match. The pure outcomes of a match (rewrites, redirects, header edits, CORS,
//! backend and mirror choice) are computed for it. Request paths and hosts
//! normalize to fixed points.

use std::collections::BTreeSet;

use culvert_router::RouteTable;
use culvert_router::config::{ListenerProtocol, PathMatchConfig};
use culvert_router::host::normalize_request_host;
use culvert_router::outcome::{
    RedirectRequest, apply_header_modifier, is_preflight, preflight_response, redirect_location,
    response_headers, rewrite_path,
};
use culvert_router::path::{normalize_path, split_query};
use culvert_router::{DataPlaneConfig, NoMatch, RequestView, RouteMatch, RouteTableBuilder};
use http::Method;
use http::header::{HeaderMap, HeaderName, HeaderValue};

/// Most hosts and most paths a config is probed with.
const MAX_PROBES: usize = 8;

/// Parses the input as a config, builds it and routes requests through it; panics
/// on a violated property.
pub fn data_plane_config(data: &[u8]) {
    let Ok(config) = serde_json::from_slice::<DataPlaneConfig>(data) else {
        return;
    };
    let json = serde_json::to_vec(&config);
    let again = json
        .as_ref()
        .map(|json| serde_json::from_slice::<DataPlaneConfig>(json));
    assert!(
        matches!(&again, Ok(Ok(again)) if *again == config),
        "a config does not survive JSON: {again:?}"
    );
    let Ok(table) = RouteTableBuilder::new().build(&config) else {
        return;
    };
    let probes = Probes::of(&config);
    for (index, (host, target)) in probes
        .hosts
        .iter()
        .flat_map(|host| probes.targets.iter().map(move |target| (host, target)))
        .enumerate()
    {
        let port = probes.ports[index % probes.ports.len()];
        let method = &probes.methods[index % probes.methods.len()];
        let headers = &probes.headers[index % probes.headers.len()];
        route(&table, port, host, target, method, headers);
    }
    for host in &probes.hosts {
        for &port in &probes.tls_ports {
            if let Some(tls) = table.route_tls(port, None, host) {
                assert!(table.route_info(tls.route).is_some(), "TLS route id");
                assert_eq!(table.listener(port, None, host), Some(tls.listener));
            }
        }
    }
}

/// What requests are made of.
struct Probes {
    ports: Vec<u16>,
    tls_ports: Vec<u16>,
    hosts: Vec<String>,
    /// Normalized paths, with or without a query.
    targets: Vec<String>,
    methods: Vec<Method>,
    headers: Vec<HeaderMap>,
}

impl Probes {
    fn of(config: &DataPlaneConfig) -> Self {
        let mut ports = BTreeSet::from([80]);
        let mut tls_ports = BTreeSet::new();
        let mut hosts = BTreeSet::from(["example.com".to_owned()]);
        for listener in &config.listeners {
            ports.insert(listener.port);
            if listener.protocol == ListenerProtocol::Tls {
                tls_ports.insert(listener.port);
            }
            hosts.extend(
                listener
                    .hostname
                    .iter()
                    .flat_map(|host| host_variants(host)),
            );
        }
        let route_hosts = config
            .http_routes
            .iter()
            .flat_map(|route| &route.hostnames)
            .chain(config.grpc_routes.iter().flat_map(|route| &route.hostnames))
            .chain(config.tls_routes.iter().flat_map(|route| &route.hostnames));
        for host in route_hosts {
            hosts.extend(host_variants(host));
        }

        let mut paths = BTreeSet::from(["/".to_owned()]);
        let mut queries = BTreeSet::new();
        let mut methods = vec![Method::GET, Method::POST, Method::OPTIONS];
        let mut headers = HeaderMap::new();
        for rule in config.http_routes.iter().flat_map(|route| &route.rules) {
            for found in &rule.matches {
                if let Some(PathMatchConfig { value, .. }) = &found.path {
                    paths.extend(path_variants(value));
                }
                for query in &found.query_params {
                    queries.insert(format!("{}={}", query.name, query.value));
                }
                let method = found.method.as_deref().map(str::parse::<Method>);
                methods.extend(method.and_then(Result::ok));
                for header in &found.headers {
                    append(&mut headers, &header.name, &header.value);
                }
            }
        }
        for rule in config.grpc_routes.iter().flat_map(|route| &route.rules) {
            for found in &rule.matches {
                if let Some(method) = &found.method {
                    let service = method.service.as_deref().unwrap_or("s");
                    let name = method.method.as_deref().unwrap_or("m");
                    paths.insert(format!("/{service}/{name}"));
                }
                for header in &found.headers {
                    append(&mut headers, &header.name, &header.value);
                }
            }
        }
        append(&mut headers, "origin", "https://example.com");
        append(&mut headers, "access-control-request-method", "GET");
        append(&mut headers, "content-type", "application/grpc");

        let mut targets = Vec::new();
        for path in paths.iter().take(MAX_PROBES) {
            let Ok(normal) = normalize_path(path) else {
                continue;
            };
            let normal = normal.into_owned();
            assert_eq!(
                normalize_path(&normal).ok().as_deref(),
                Some(normal.as_str()),
                "a normalized path {path:?} normalizes again to something else"
            );
            for query in queries.iter().take(2) {
                targets.push(format!("{normal}?{query}"));
            }
            targets.push(normal);
        }
        let hosts: Vec<String> = hosts.into_iter().take(MAX_PROBES).collect();
        for host in &hosts {
            let normal = normalize_request_host(host);
            assert_eq!(
                normalize_request_host(&normal),
                normal,
                "a normalized host is not a fixed point"
            );
        }
        Self {
            ports: ports.into_iter().collect(),
            tls_ports: tls_ports.into_iter().collect(),
            hosts,
            targets,
            methods,
            headers: vec![HeaderMap::new(), headers],
        }
    }
}

fn append(headers: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(name), Ok(value)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        headers.append(name, value);
    }
}

/// A host a hostname pattern owns, as clients write it in several ways.
fn host_variants(pattern: &str) -> [String; 3] {
    let host = match pattern.strip_prefix("*.") {
        Some(suffix) => format!("a.{suffix}"),
        None => pattern.to_owned(),
    };
    [
        format!("{}:8080", host.to_ascii_uppercase()),
        format!("{host}."),
        host,
    ]
}

/// Paths at, under and beside a configured one.
fn path_variants(path: &str) -> [String; 3] {
    [
        path.to_owned(),
        format!("{}/x", path.trim_end_matches('/')),
        format!("{path}x"),
    ]
}

/// Routes one request and checks the answer.
fn route(
    table: &RouteTable,
    port: u16,
    host: &str,
    target: &str,
    method: &Method,
    headers: &HeaderMap,
) {
    let request = RequestView {
        port,
        local_ip: None,
        host,
        path: target,
        method: method.as_str(),
        headers,
    };
    let listener = table.listener(port, None, host);
    match table.route(&request) {
        Ok(found) => {
            assert_eq!(listener, Some(found.listener), "listener of {host}");
            assert!(table.listener_info(found.listener).is_some(), "listener id");
            assert!(table.route_info(found.route).is_some(), "route id");
            assert!(
                table
                    .rule(found.rule_id)
                    .is_some_and(|rule| std::ptr::eq(rule, found.rule)),
                "rule id"
            );
            outcomes(&found, port, host, target, method, headers);
        }
        Err(NoMatch::NoListener) => assert_eq!(listener, None, "no listener for {host}"),
        Err(NoMatch::NoRoute) => assert!(listener.is_some(), "no route without a listener"),
    }
}

/// The pure outcomes of a match: none may panic, and each is well formed.
fn outcomes(
    found: &RouteMatch<'_>,
    port: u16,
    host: &str,
    target: &str,
    method: &Method,
    headers: &HeaderMap,
) {
    let (path, query) = split_query(target);
    let prefix = found.matched_prefix_len.unwrap_or(0);
    assert!(prefix <= path.len(), "prefix {prefix} of {path:?}");
    let filters = found.rule.filters();
    if let Some(modifier) = filters.rewrite.as_ref().and_then(|r| r.path.as_ref()) {
        let rewritten = rewrite_path(modifier, path, prefix);
        assert!(rewritten.starts_with('/'), "rewritten to {rewritten:?}");
    }
    if let Some(redirect) = &filters.redirect {
        let location = redirect_location(
            redirect,
            &RedirectRequest {
                scheme: "http",
                host,
                listener_port: port,
                path,
                query,
                matched_prefix_len: prefix,
            },
        );
        assert!(location.contains("://"), "redirect to {location:?}");
    }
    for modifier in [&filters.request_headers, &filters.response_headers]
        .into_iter()
        .flatten()
    {
        apply_header_modifier(modifier, &mut headers.clone());
    }
    if let Some(cors) = &filters.cors {
        if is_preflight(method, headers) {
            preflight_response(cors, headers);
        }
        response_headers(cors, headers);
    }
    let backends = found.rule.backends();
    for random in [0, 1, u64::MAX / 3, u64::MAX] {
        if let Some(backend) = backends.pick(random) {
            backend.failure_status();
        }
        for mirror in &filters.mirrors {
            mirror.sample(random);
        }
    }
    found.rule.timeouts();
    found.rule.retry();
}
