//! The HTTPS redirect from manifests to answers: Gateway API objects translated, the
//! merged config compiled by the router, and requests routed as the data plane
//! routes them, down to the `Location` a client is sent.
#![allow(
    clippy::unwrap_used,
    reason = "a test: a failed unwrap is a failed test"
)]

use culvert_control_lite::model::Resource;
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{FixedAddresses, Options, translate};
use culvert_router::outcome::{RedirectRequest, redirect_location};
use culvert_router::{NoMatch, RequestView, RouteTable, RouteTableBuilder};
use http::HeaderMap;
use serde_json::json;

const PEM: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

fn table() -> RouteTable {
    let all = json!({"namespaces": {"from": "All"}});
    let tls = json!({"certificateRefs": [{"name": "cert"}]});
    let backend = json!([{"name": "shop", "port": 80}]);
    let objects = [
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": "culvert"}, "spec": {"controllerName": "culvert.dev/gateway-controller"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "web",
                            "annotations": {"culvert.dev/https-redirect": "301"}},
               "spec": {"gatewayClassName": "culvert", "listeners": [
                   {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": all},
                   {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
                    "tls": tls, "allowedRoutes": all}]}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": "cert", "namespace": "web"},
               "stringData": {"tls.crt": PEM, "tls.key": KEY}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop", "namespace": "web"},
               "spec": {"ports": [{"port": 80}]}}),
        // Attached to the whole Gateway: served over HTTPS, redirected over HTTP.
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "shop", "namespace": "web"},
               "spec": {"parentRefs": [{"name": "edge"}], "hostnames": ["shop.example.com"],
                        "rules": [{"backendRefs": backend}]}}),
        // Attached to the HTTP listener by name: served over plain HTTP.
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "solver", "namespace": "web"},
               "spec": {"parentRefs": [{"name": "edge", "sectionName": "http"}],
                        "hostnames": ["cert.example.com"],
                        "rules": [{"matches": [{"path": {"type": "Exact", "value": "/.well-known/acme-challenge/t0k3n"}}],
                                   "backendRefs": backend}]}}),
    ];
    let store = Store::from_resources(objects.map(|o| Resource::from_value(o).unwrap()));
    let options = Options {
        controller_name: "culvert.dev/gateway-controller".to_owned(),
        privileged_namespace_prefixes: Vec::new(),
        addresses: Box::new(FixedAddresses(vec!["0.0.0.0".to_owned()])),
        claims: Box::new(culvert_control_lite::translate::NoClaimChecks),
    };
    let config = translate(&store, &options).merged_config().unwrap();
    RouteTableBuilder::new().build(&config).unwrap()
}

/// What a request gets: `(status, location)` for a redirect, the route's name when
/// it is forwarded, or why nothing matched.
fn answer(table: &RouteTable, port: u16, host: &str, path: &str) -> Result<String, NoMatch> {
    let headers = HeaderMap::new();
    let request = RequestView {
        port,
        local_ip: None,
        host,
        path,
        method: "GET",
        headers: &headers,
    };
    let found = table.route(&request)?;
    let route = &table.route_info(found.route).unwrap().name;
    Ok(match &found.rule.filters().redirect {
        Some(redirect) => {
            let (path, query) = path
                .split_once('?')
                .map_or((path, None), |(p, q)| (p, Some(q)));
            let location = redirect_location(
                redirect,
                &RedirectRequest {
                    scheme: if port == 443 { "https" } else { "http" },
                    host,
                    listener_port: port,
                    path,
                    query,
                    matched_prefix_len: found.matched_prefix_len.unwrap_or(0),
                },
            );
            format!("{} {location} ({route})", redirect.status)
        }
        None => route.to_string(),
    })
}

#[test]
fn plain_http_is_redirected_to_https_except_what_names_the_http_listener() {
    let table = table();
    assert_eq!(
        answer(&table, 80, "shop.example.com", "/cart?item=7").unwrap(),
        "301 https://shop.example.com/cart?item=7 (edge:https-redirect:http:443)"
    );
    // Every name the HTTPS listener serves, with or without a route.
    assert_eq!(
        answer(&table, 80, "Other.Example.com:80", "/").unwrap(),
        "301 https://other.example.com/ (edge:https-redirect:http:443)"
    );
    assert_eq!(
        answer(&table, 443, "shop.example.com", "/cart").unwrap(),
        "shop"
    );
    // The solver's challenge is answered over plain HTTP.
    assert_eq!(
        answer(
            &table,
            80,
            "cert.example.com",
            "/.well-known/acme-challenge/t0k3n"
        )
        .unwrap(),
        "solver"
    );
    // A name no HTTPS listener serves is not redirected.
    assert_eq!(
        answer(&table, 80, "shop.example.org", "/").unwrap_err(),
        NoMatch::NoRoute
    );
}
