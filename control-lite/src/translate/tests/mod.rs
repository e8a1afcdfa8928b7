//! Translation rules that the conformance vectors do not pin down: hostname
//! conflicts, privileged namespaces, refusal of unsupported fields, fail-closed
//! backends, endpoint resolution and dedicated data planes. The files below hold
//! one concern each: listener budgets, the admission of dedicated data planes
//! (tunnel claims, per-namespace caps), the HTTPS redirect, and the refusal of
//! kinds Culvert reads but does not carry.

mod backend_tls;
mod budget;
mod caps;
mod l4_routes;
mod listener_sets;
mod redirect;
mod tunnel_claims;

use super::*;
use crate::model::{ObjectKey, Resource};
use culvert_router::config::{AppProtocol, Unavailable};
use serde_json::{Value, json};

const CONTROLLER: &str = "culvert.dev/gateway-controller";

fn options() -> Options {
    Options {
        controller_name: CONTROLLER.to_owned(),
        privileged_namespace_prefixes: vec!["platform-".to_owned()],
        addresses: Box::new(FixedAddresses(vec!["192.0.2.10".to_owned()])),
        claims: Box::new(NoClaimChecks),
    }
}

fn base() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "infra"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "culvert"},
               "spec": {"controllerName": CONTROLLER}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "infra", "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"gatewayClassName": "culvert", "listeners": [
                   {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "infra"},
               "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080},
                                                           {"name": "grpc", "port": 9000, "appProtocol": "kubernetes.io/h2c"}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-1", "namespace": "infra", "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4",
               "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
                             {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
                             {"addresses": ["10.0.0.3"]}],
               "ports": [{"name": "http", "port": 8080}, {"name": "grpc", "port": 9090}]}),
    ]
}

fn route(namespace: &str, name: &str, created: &str, hostnames: &[&str], rule: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
           "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
           "spec": {"parentRefs": [{"name": "edge", "namespace": "infra"}], "hostnames": hostnames, "rules": [rule]}})
}

fn backend_rule() -> Value {
    json!({"backendRefs": [{"name": "web", "namespace": "infra", "port": 80}]})
}

fn grant_all_to_web(namespace: &str) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
           "metadata": {"name": format!("from-{namespace}"), "namespace": "infra"},
           "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": namespace}],
                    "to": [{"group": "", "kind": "Service"}]}})
}

fn run(objects: Vec<Value>) -> Translation {
    let resources = objects
        .into_iter()
        .map(|v| Resource::from_value(v).unwrap());
    translate(&Store::from_resources(resources), &options())
}

/// `(status, reason)` of a route's condition for its first parent.
fn route_condition(t: &Translation, namespace: &str, name: &str, kind: &str) -> (String, String) {
    let status = &t.routes[&ObjectKey::new("HTTPRoute", namespace, name)];
    let condition = status.parents[0]
        .conditions
        .iter()
        .find(|c| c.kind == kind)
        .unwrap();
    (condition.status.clone(), condition.reason.clone())
}

fn plane(t: &Translation) -> &culvert_router::config::DataPlaneConfig {
    &t.data_planes[&DataPlaneId::Shared("culvert".to_owned())]
}

#[test]
fn older_route_wins_a_cross_namespace_hostname_and_the_loser_is_told_why() {
    let mut objects = base();
    objects.extend([
        grant_all_to_web("team-a"),
        grant_all_to_web("team-b"),
        route(
            "team-a",
            "first",
            "2026-01-02T00:00:00Z",
            &["shop.example.com"],
            backend_rule(),
        ),
        route(
            "team-b",
            "second",
            "2026-01-03T00:00:00Z",
            &["shop.example.com"],
            backend_rule(),
        ),
    ]);
    let t = run(objects);
    assert_eq!(
        route_condition(&t, "team-a", "first", "Accepted"),
        ("True".into(), "Accepted".into())
    );
    assert_eq!(
        route_condition(&t, "team-b", "second", "Accepted"),
        ("False".into(), "HostnameConflict".into())
    );
    let loser =
        &t.routes[&ObjectKey::new("HTTPRoute", "team-b", "second")].parents[0].conditions[0];
    assert!(loser.message.contains("team-a/first"), "{}", loser.message);
    let served: Vec<&str> = plane(&t)
        .http_routes
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(served, ["first"]);
    assert_eq!(
        t.gateways[&("infra".to_owned(), "edge".to_owned())].listeners[0].attached_routes,
        1
    );
}

#[test]
fn privileged_namespace_wins_before_age_and_same_namespace_routes_share() {
    let mut objects = base();
    objects.extend([
        grant_all_to_web("team-a"),
        grant_all_to_web("platform-edge"),
        route(
            "team-a",
            "old",
            "2026-01-02T00:00:00Z",
            &["shop.example.com"],
            backend_rule(),
        ),
        route(
            "platform-edge",
            "new",
            "2026-01-09T00:00:00Z",
            &["shop.example.com"],
            backend_rule(),
        ),
        route(
            "platform-edge",
            "sibling",
            "2026-01-10T00:00:00Z",
            &["shop.example.com"],
            backend_rule(),
        ),
    ]);
    let t = run(objects);
    assert_eq!(
        route_condition(&t, "platform-edge", "new", "Accepted").1,
        "Accepted"
    );
    assert_eq!(
        route_condition(&t, "platform-edge", "sibling", "Accepted").1,
        "Accepted"
    );
    assert_eq!(
        route_condition(&t, "team-a", "old", "Accepted").1,
        "HostnameConflict"
    );
}

#[test]
fn fields_culvert_cannot_honour_refuse_the_route_instead_of_being_dropped() {
    let mut objects = base();
    let mut rule = backend_rule();
    rule["sessionPersistence"] = json!({"sessionName": "sticky"});
    objects.push(route("infra", "sticky", "2026-01-02T00:00:00Z", &[], rule));
    let mut ext = backend_rule();
    ext["filters"] = json!([{"type": "ExtensionRef", "extensionRef": {"group": "x.io", "kind": "Auth", "name": "a"}}]);
    objects.push(route("infra", "ext", "2026-01-02T00:00:00Z", &[], ext));
    let t = run(objects);
    for name in ["sticky", "ext"] {
        assert_eq!(
            route_condition(&t, "infra", name, "Accepted"),
            ("False".into(), "UnsupportedValue".into()),
            "{name}"
        );
    }
    assert!(plane(&t).http_routes.is_empty());
}

#[test]
fn a_route_the_router_refuses_is_reported_and_the_others_still_serve() {
    let mut objects = base();
    let bad = json!({"matches": [{"path": {"type": "RegularExpression", "value": "/(unclosed"}}], "backendRefs": [{"name": "web", "port": 80}]});
    objects.push(route(
        "infra",
        "bad-regex",
        "2026-01-02T00:00:00Z",
        &[],
        bad,
    ));
    objects.push(route(
        "infra",
        "good",
        "2026-01-03T00:00:00Z",
        &["ok.example.com"],
        backend_rule(),
    ));
    let t = run(objects);
    assert_eq!(
        route_condition(&t, "infra", "bad-regex", "Accepted"),
        ("False".into(), "UnsupportedValue".into())
    );
    let names: Vec<&str> = plane(&t)
        .http_routes
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["good"]);
}

#[test]
fn invalid_backends_keep_their_share_and_fail_closed() {
    let mut objects = base();
    let rule = json!({"backendRefs": [{"name": "web", "port": 80, "weight": 3}, {"name": "missing", "port": 80, "weight": 1},
                                      {"name": "web", "namespace": "elsewhere", "port": 80}]});
    objects.push(route("infra", "split", "2026-01-02T00:00:00Z", &[], rule));
    let t = run(objects);
    assert_eq!(
        route_condition(&t, "infra", "split", "Accepted").1,
        "Accepted"
    );
    assert_eq!(
        route_condition(&t, "infra", "split", "ResolvedRefs"),
        ("False".into(), "BackendNotFound".into())
    );
    let backends = &plane(&t).http_routes[0].rules[0].backends;
    assert_eq!(backends.len(), 3, "no backend is dropped");
    assert_eq!(backends[1].unavailable, Some(Unavailable::InvalidReference));
    assert_eq!(backends[1].weight, 1);
    assert_eq!(
        backends[2].unavailable,
        Some(Unavailable::InvalidReference),
        "cross-namespace without a grant"
    );
}

#[test]
fn endpoints_come_from_ready_slice_entries_on_the_named_port() {
    let mut objects = base();
    let rule = json!({"backendRefs": [{"name": "web", "port": 80}, {"name": "web", "port": 9000}]});
    objects.push(route("infra", "r", "2026-01-02T00:00:00Z", &[], rule));
    let t = run(objects);
    let backends = &plane(&t).http_routes[0].rules[0].backends;
    let http: Vec<String> = backends[0]
        .endpoints
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        http,
        ["10.0.0.1:8080", "10.0.0.3:8080"],
        "not-ready endpoint left out"
    );
    assert_eq!(backends[0].app_protocol, AppProtocol::Http1);
    assert_eq!(backends[1].endpoints[0].to_string(), "10.0.0.1:9090");
    assert_eq!(backends[1].app_protocol, AppProtocol::H2c);
}

#[test]
fn gateway_config_gives_a_dedicated_data_plane() {
    let mut objects = base();
    objects[2]["spec"]["infrastructure"] =
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    objects.push(json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig", "metadata": {"name": "own", "namespace": "infra"},
                        "spec": {"replicas": 2}}));
    let t = run(objects);
    let key = ("infra".to_owned(), "edge".to_owned());
    assert_eq!(t.gateway_planes[&key], DataPlaneId::Dedicated(key.clone()));
    assert_eq!(
        t.data_planes[&DataPlaneId::Dedicated(key)].listeners[0].name,
        "infra/edge/http"
    );
}

#[test]
fn requested_addresses_outside_the_pool_are_not_programmed() {
    let mut objects = base();
    objects[2]["spec"]["addresses"] = json!([{"value": "198.51.100.7"}]);
    let t = run(objects);
    let status = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    let programmed = status
        .conditions
        .iter()
        .find(|c| c.kind == "Programmed")
        .unwrap();
    assert_eq!(
        (programmed.status.as_str(), programmed.reason.as_str()),
        ("False", "AddressNotUsable")
    );
    assert!(t.data_planes.is_empty());
}

#[test]
fn a_namespace_selector_on_the_name_label_works_for_manifests_without_labels() {
    let mut objects = base();
    objects[2]["spec"]["listeners"][0]["allowedRoutes"] = json!({"namespaces": {
        "from": "Selector",
        "selector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}}});
    // Namespaces declared without labels, as manifests on disk usually are.
    objects.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}));
    objects.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}}));
    for namespace in ["team-a", "team-b"] {
        objects.push(route(
            namespace,
            "web",
            "2026-01-02T00:00:00Z",
            &[],
            json!({}),
        ));
    }
    let translation = run(objects);
    let accepted = |namespace: &str| {
        translation.routes[&ObjectKey::new("HTTPRoute", namespace, "web")].parents[0]
            .conditions
            .iter()
            .any(|c| c.kind == "Accepted" && c.is_true())
    };
    assert!(
        accepted("team-a"),
        "the label Kubernetes sets selects team-a"
    );
    assert!(!accepted("team-b"));
}

#[test]
fn an_https_listener_without_a_usable_certificate_is_left_out_and_the_others_serve() {
    let mut objects = base();
    objects[2]["spec"]["listeners"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "https", "port": 443, "protocol": "HTTPS",
                     "allowedRoutes": {"namespaces": {"from": "All"}},
                     "tls": {"certificateRefs": [{"name": "missing"}]}}));
    objects.push(route(
        "infra",
        "app",
        "2026-01-01T00:00:00Z",
        &[],
        backend_rule(),
    ));
    let t = run(objects);
    let gateway = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    let https = gateway
        .listeners
        .iter()
        .find(|l| l.name == "https")
        .unwrap();
    let condition = |kind: &str| {
        let c = https.conditions.iter().find(|c| c.kind == kind).unwrap();
        (c.status.clone(), c.reason.clone())
    };
    assert_eq!(
        condition("ResolvedRefs"),
        ("False".to_owned(), "InvalidCertificateRef".to_owned())
    );
    assert_eq!(condition("Programmed").0, "False");
    // The plane gets the HTTP listener and the route on it, not the HTTPS one (which
    // would make the data plane refuse the whole config).
    let config = plane(&t);
    let names: Vec<&str> = config.listeners.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["infra/edge/http"]);
    assert_eq!(config.http_routes.len(), 1);
    assert_eq!(config.http_routes[0].listeners, ["infra/edge/http"]);
    culvert_router::RouteTableBuilder::new()
        .build(config)
        .unwrap();
}

#[test]
fn frontend_validation_reaches_the_listeners_of_its_port_with_the_forward_option() {
    let ca = rcgen::generate_simple_self_signed(vec!["ca.example".to_owned()]).unwrap();
    let leaf = rcgen::generate_simple_self_signed(vec!["app.example".to_owned()]).unwrap();
    let mut objects = base();
    objects[2]["spec"]["tls"] = json!({"frontend": {
        "default": {"validation": {"caCertificateRefs": [{"kind": "ConfigMap", "group": "", "name": "cas"}]}},
        "perPort": [{"port": 8443, "tls": {"validation": {
            "mode": "AllowInsecureFallback",
            "caCertificateRefs": [{"kind": "ConfigMap", "group": "", "name": "cas"}]}}}]}});
    let https = |name: &str, port: u16, options: Value| {
        json!({"name": name, "port": port, "protocol": "HTTPS",
               "tls": {"certificateRefs": [{"name": "site"}], "options": options}})
    };
    let listeners = objects[2]["spec"]["listeners"].as_array_mut().unwrap();
    listeners.push(https(
        "strict",
        443,
        json!({"culvert.dev/forward-client-certificate": "true"}),
    ));
    listeners.push(https("fallback", 8443, json!({})));
    objects.push(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cas", "namespace": "infra"}, "data": {"ca.crt": ca.cert.pem()}}));
    objects.push(
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "site", "namespace": "infra"},
        "stringData": {"tls.crt": leaf.cert.pem(), "tls.key": leaf.signing_key.serialize_pem()}}),
    );
    let t = run(objects);
    let config = plane(&t);
    let validation = |name: &str| {
        config
            .listeners
            .iter()
            .find(|l| l.name == format!("infra/edge/{name}"))
            .and_then(|l| l.tls.as_ref()?.client_validation.clone())
    };
    let strict = validation("strict").unwrap();
    assert_eq!(
        strict.mode,
        culvert_router::config::ClientValidationMode::AllowValidOnly
    );
    assert!(strict.forward_identity);
    assert_eq!(strict.ca_certificates_pem, ca.cert.pem());
    let fallback = validation("fallback").unwrap();
    assert_eq!(
        fallback.mode,
        culvert_router::config::ClientValidationMode::AllowInsecureFallback
    );
    assert!(!fallback.forward_identity);
    assert!(validation("http").is_none());
    let gateway = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    let insecure = gateway
        .conditions
        .iter()
        .find(|c| c.kind == "InsecureFrontendValidationMode")
        .unwrap();
    assert_eq!(
        (insecure.status.as_str(), insecure.reason.as_str()),
        ("True", "ConfigurationChanged")
    );
}

#[test]
fn the_acme_option_gives_an_acme_listener_without_certificate_refs() {
    let mut objects = base();
    let listeners = objects[2]["spec"]["listeners"].as_array_mut().unwrap();
    let acme = |name: &str, hostname: Option<&str>| {
        let mut listener = json!({"name": name, "port": 443, "protocol": "HTTPS",
                                  "allowedRoutes": {"namespaces": {"from": "All"}},
                                  "tls": {"options": {"culvert.dev/acme": "true"}}});
        if let Some(hostname) = hostname {
            listener["hostname"] = json!(hostname);
        }
        listener
    };
    listeners.push(acme("site", Some("www.example.com")));
    listeners.push(acme("wild", Some("*.example.com")));
    listeners.push(acme("any", None));
    let t = run(objects);
    let gateway = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    let condition = |listener: &str, kind: &str| {
        let status = gateway
            .listeners
            .iter()
            .find(|l| l.name == listener)
            .unwrap();
        let c = status.conditions.iter().find(|c| c.kind == kind).unwrap();
        (c.status.clone(), c.reason.clone())
    };
    for kind in ["Accepted", "ResolvedRefs", "Programmed"] {
        assert_eq!(condition("site", kind).0, "True", "{kind}");
    }
    // HTTP-01 and TLS-ALPN-01 cannot validate a wildcard, nor a listener without a name.
    for refused in ["wild", "any"] {
        assert_eq!(
            condition(refused, "Accepted"),
            ("False".to_owned(), "UnsupportedValue".to_owned()),
            "{refused}"
        );
    }
    let config = plane(&t);
    let names: Vec<&str> = config.listeners.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["infra/edge/http", "infra/edge/site"]);
    let tls = config.listeners[1].tls.as_ref().unwrap();
    assert!(tls.acme.is_some());
    assert!(tls.certificate_refs.is_empty());
    assert_eq!(config.listeners[1].acme_name(), Some("www.example.com"));
    culvert_router::RouteTableBuilder::new()
        .build(config)
        .unwrap();
}
