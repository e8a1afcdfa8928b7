//! BackendTLSPolicy and Gateway `spec.tls.backend`: which policy a Service port
//! gets, what its backends then carry, how a policy that cannot be honoured fails
//! closed, the policy's status per Gateway, and the client certificate each
//! Gateway shows.

use super::*;
use culvert_router::config::BackendConfig;

const PEM: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

fn policy(name: &str, created: &str, target: Value, validation: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy",
           "metadata": {"name": name, "namespace": "infra", "creationTimestamp": created},
           "spec": {"targetRefs": [target], "validation": validation}})
}

fn web(section: Option<&str>) -> Value {
    match section {
        Some(section) => {
            json!({"group": "", "kind": "Service", "name": "web", "sectionName": section})
        }
        None => json!({"group": "", "kind": "Service", "name": "web"}),
    }
}

fn ca(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "infra"},
           "data": {"ca.crt": PEM}})
}

fn validation(hostname: &str, config_map: &str) -> Value {
    json!({"hostname": hostname, "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": config_map}]})
}

fn tls_secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
           "metadata": {"name": name, "namespace": "infra"},
           "stringData": {"tls.crt": format!("{PEM}# {name}\n"), "tls.key": KEY}})
}

/// `base()` with one route to `web:80` (port `http`).
fn with_route(mut objects: Vec<Value>) -> Vec<Value> {
    objects.push(route(
        "infra",
        "site",
        "2026-01-01T00:00:00Z",
        &[],
        backend_rule(),
    ));
    objects
}

fn backend(t: &Translation) -> &BackendConfig {
    &plane(t).http_routes[0].rules[0].backends[0]
}

/// `(Accepted, ResolvedRefs)` of policy `name` for Gateway `edge`, as `status/reason`.
fn policy_conditions(t: &Translation, name: &str) -> (String, String) {
    let status = &t.backend_tls_policies[&("infra".to_owned(), name.to_owned())];
    assert_eq!(status.ancestors.len(), 1);
    let ancestor = &status.ancestors[0];
    assert_eq!(ancestor.ancestor_ref.name, "edge");
    assert_eq!(ancestor.controller_name, CONTROLLER);
    let get = |kind: &str| {
        let c = ancestor.conditions.iter().find(|c| c.kind == kind).unwrap();
        format!("{}/{}", c.status, c.reason)
    };
    (get("Accepted"), get("ResolvedRefs"))
}

#[test]
fn a_policy_gives_its_service_ports_tls_and_reports_per_gateway() {
    let mut objects = with_route(base());
    objects.push(ca("backend-ca"));
    objects.push(policy(
        "web-tls",
        "2026-01-02T00:00:00Z",
        web(None),
        validation("web.internal", "backend-ca"),
    ));
    let t = run(objects);
    let tls = backend(&t).tls.as_ref().expect("the backend speaks TLS");
    assert_eq!(tls.hostname, "web.internal");
    assert_eq!(tls.ca_certificates_pem.as_deref(), Some(PEM));
    assert!(tls.subject_alt_names.is_empty());
    assert!(tls.client_certificate.is_none());
    assert_eq!(backend(&t).unavailable, None);
    assert_eq!(
        policy_conditions(&t, "web-tls"),
        ("True/Accepted".to_owned(), "True/ResolvedRefs".to_owned())
    );
}

#[test]
fn a_port_policy_beats_a_service_policy_and_the_older_of_two_wins() {
    let mut objects = with_route(base());
    objects.push(ca("backend-ca"));
    objects.push(policy(
        "whole",
        "2026-01-01T00:00:00Z",
        web(None),
        validation("whole.internal", "backend-ca"),
    ));
    objects.push(policy(
        "port-new",
        "2026-01-03T00:00:00Z",
        web(Some("http")),
        validation("new.internal", "backend-ca"),
    ));
    objects.push(policy(
        "port-old",
        "2026-01-02T00:00:00Z",
        web(Some("http")),
        validation("old.internal", "backend-ca"),
    ));
    let t = run(objects);
    assert_eq!(backend(&t).tls.as_ref().unwrap().hostname, "old.internal");
    assert_eq!(policy_conditions(&t, "port-old").0, "True/Accepted");
    assert_eq!(policy_conditions(&t, "port-new").0, "False/Conflicted");
    // The whole-Service policy conflicts with neither: it targets something else.
    assert_eq!(policy_conditions(&t, "whole").0, "True/Accepted");
}

#[test]
fn a_policy_that_cannot_be_honoured_fails_its_backends_closed() {
    let cases = [
        (
            validation("web.internal", "missing"),
            "False/NoValidCACertificate",
            "False/InvalidCACertificateRef",
        ),
        (
            json!({"hostname": "web.internal", "caCertificateRefs": [{"group": "", "kind": "Secret", "name": "backend-ca"}]}),
            "False/NoValidCACertificate",
            "False/InvalidKind",
        ),
        (
            json!({"hostname": "web.internal", "wellKnownCACertificates": "System",
                   "subjectAltNames": [{"type": "URI", "uri": "spiffe://cluster/web"}]}),
            "False/Invalid",
            "True/ResolvedRefs",
        ),
        (
            validation("*.internal", "backend-ca"),
            "False/Invalid",
            "True/ResolvedRefs",
        ),
    ];
    for (validation, accepted, resolved) in cases {
        let mut objects = with_route(base());
        objects.push(ca("backend-ca"));
        objects.push(policy(
            "web-tls",
            "2026-01-02T00:00:00Z",
            web(None),
            validation.clone(),
        ));
        let t = run(objects);
        assert_eq!(
            policy_conditions(&t, "web-tls"),
            (accepted.to_owned(), resolved.to_owned()),
            "{validation}"
        );
        let backend = backend(&t);
        assert_eq!(
            backend.unavailable,
            Some(Unavailable::InvalidReference),
            "{validation}"
        );
        assert!(backend.tls.is_none());
        // The route's own references are fine: only the policy is at fault.
        assert_eq!(
            route_condition(&t, "infra", "site", "ResolvedRefs"),
            ("True".to_owned(), "ResolvedRefs".to_owned())
        );
    }
}

#[test]
fn system_roots_and_hostname_subject_alt_names_pass_through() {
    let mut objects = with_route(base());
    objects.push(policy(
        "web-tls",
        "2026-01-02T00:00:00Z",
        web(None),
        json!({"hostname": "web.internal", "wellKnownCACertificates": "System",
               "subjectAltNames": [{"type": "Hostname", "hostname": "web.svc.example"}]}),
    ));
    let t = run(objects);
    let tls = backend(&t).tls.as_ref().unwrap();
    assert_eq!(tls.ca_certificates_pem, None);
    assert_eq!(tls.subject_alt_names, ["web.svc.example"]);
}

#[test]
fn each_gateway_shows_its_client_certificate_to_tls_backends_only() {
    let mut objects = with_route(base());
    objects.push(ca("backend-ca"));
    objects.push(tls_secret("edge-client"));
    objects.push(tls_secret("side-client"));
    objects[2]["spec"]["tls"] =
        json!({"backend": {"clientCertificateRef": {"name": "edge-client"}}});
    let mut side = objects[2].clone();
    side["metadata"]["name"] = json!("side");
    side["spec"]["tls"]["backend"]["clientCertificateRef"]["name"] = json!("side-client");
    side["spec"]["listeners"][0]["port"] = json!(8080);
    objects.push(side);
    // The route attaches to both Gateways, to a TLS backend and a clear-text one.
    let mut site = route(
        "infra",
        "site",
        "2026-01-01T00:00:00Z",
        &[],
        json!({"backendRefs": [
        {"name": "web", "port": 80}, {"name": "web", "port": 9000}]}),
    );
    site["spec"]["parentRefs"] = json!([{"name": "edge"}, {"name": "side"}]);
    objects[5] = site;
    objects.push(policy(
        "web-tls",
        "2026-01-02T00:00:00Z",
        web(Some("http")),
        validation("web.internal", "backend-ca"),
    ));
    let t = run(objects);
    let routes = &plane(&t).http_routes;
    assert_eq!(routes.len(), 2, "one copy per client certificate");
    for route in routes {
        let gateway = if route.listeners == ["infra/edge/http"] {
            "edge"
        } else {
            "side"
        };
        let [tls_backend, clear] = &route.rules[0].backends[..] else {
            panic!("two backends");
        };
        let shown = &tls_backend
            .tls
            .as_ref()
            .unwrap()
            .client_certificate
            .as_ref()
            .unwrap()
            .certificate_pem;
        assert!(
            shown.contains(&format!("# {gateway}-client")),
            "{gateway}: {shown}"
        );
        assert!(clear.tls.is_none());
    }
    let resolved = |name: &str| {
        let status = &t.gateways[&("infra".to_owned(), name.to_owned())];
        let c = status
            .conditions
            .iter()
            .find(|c| c.kind == "ResolvedRefs")
            .unwrap();
        format!("{}/{}", c.status, c.reason)
    };
    assert_eq!(resolved("edge"), "True/ResolvedRefs");
    assert_eq!(resolved("side"), "True/ResolvedRefs");
}

#[test]
fn an_unusable_client_certificate_ref_is_reported_and_the_gateway_still_serves() {
    for (reference, reason) in [
        (json!({"name": "missing"}), "InvalidClientCertificateRef"),
        (
            json!({"name": "edge-client", "kind": "ConfigMap"}),
            "InvalidClientCertificateRef",
        ),
        (
            json!({"name": "edge-client", "namespace": "other"}),
            "RefNotPermitted",
        ),
    ] {
        let mut objects = with_route(base());
        objects.push(tls_secret("edge-client"));
        objects[2]["spec"]["tls"] = json!({"backend": {"clientCertificateRef": reference}});
        let t = run(objects);
        let status = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
        let get = |kind: &str| {
            let c = status.conditions.iter().find(|c| c.kind == kind).unwrap();
            format!("{}/{}", c.status, c.reason)
        };
        assert_eq!(
            get("ResolvedRefs"),
            format!("False/{reason}"),
            "{reference}"
        );
        assert_eq!(get("Accepted"), "True/Accepted");
        assert_eq!(plane(&t).http_routes.len(), 1);
    }
}
