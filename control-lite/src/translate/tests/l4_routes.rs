//! TCPRoutes and UDPRoutes are refused where they name Culvert's Gateways, and
//! listeners that ask for those kinds say the kinds are invalid.

use super::*;

fn l4_route(kind: &str, name: &str, parent_refs: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
           "metadata": {"name": name, "namespace": "infra", "generation": 4},
           "spec": {"parentRefs": parent_refs,
                    "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}})
}

/// `(status, reason, message)` of each parent entry's `Accepted`.
fn accepted(t: &Translation, kind: &str, name: &str) -> Vec<(String, String, String)> {
    t.routes[&ObjectKey::new(kind, "infra", name)]
        .parents
        .iter()
        .map(|parent| {
            assert_eq!(parent.controller_name, CONTROLLER);
            let c = parent
                .conditions
                .iter()
                .find(|c| c.kind == "Accepted")
                .unwrap();
            assert_eq!(c.observed_generation, 4);
            (c.status.clone(), c.reason.clone(), c.message.clone())
        })
        .collect()
}

#[test]
fn tcp_and_udp_routes_on_a_culvert_gateway_are_refused_in_their_status() {
    let mut objects = base();
    objects.extend([
        // The second parent is another controller's: Culvert writes no entry for it.
        l4_route(
            "TCPRoute",
            "db",
            json!([{"name": "edge"}, {"name": "elsewhere", "namespace": "other"}]),
        ),
        l4_route("UDPRoute", "dns", json!([{"name": "edge", "port": 80}])),
        l4_route(
            "TCPRoute",
            "pinned",
            json!([{"name": "edge", "sectionName": "tcp"}]),
        ),
        l4_route(
            "UDPRoute",
            "foreign",
            json!([{"name": "elsewhere", "namespace": "other"}]),
        ),
    ]);
    let t = run(objects);
    for (kind, name) in [("TCPRoute", "db"), ("UDPRoute", "dns")] {
        let parents = accepted(&t, kind, name);
        assert_eq!(
            parents.len(),
            1,
            "{kind}: only Culvert's parent gets an entry"
        );
        let (status, reason, message) = &parents[0];
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("False", "NotAllowedByListeners")
        );
        assert!(message.contains(kind), "{message}");
    }
    // A parentRef that matches no listener is told that, as for any route.
    assert_eq!(accepted(&t, "TCPRoute", "pinned")[0].1, "NoMatchingParent");
    assert!(
        !t.routes
            .contains_key(&ObjectKey::new("UDPRoute", "infra", "foreign"))
    );
    // Nothing of theirs is served, and the HTTP listener counts no attachment.
    let config = plane(&t);
    assert!(config.http_routes.is_empty() && config.tls_routes.is_empty());
    assert_eq!(
        t.gateways[&("infra".to_owned(), "edge".to_owned())].listeners[0].attached_routes,
        0
    );
}

#[test]
fn listeners_asking_for_tcp_or_udp_routes_report_invalid_route_kinds() {
    let mut objects = base();
    objects[2]["spec"]["listeners"] = json!([
        {"name": "http", "port": 80, "protocol": "HTTP",
         "allowedRoutes": {"kinds": [{"kind": "HTTPRoute"}, {"kind": "TCPRoute"}]}},
        {"name": "tcp", "port": 5432, "protocol": "TCP",
         "allowedRoutes": {"kinds": [{"kind": "TCPRoute"}]}},
        {"name": "udp", "port": 53, "protocol": "UDP",
         "allowedRoutes": {"kinds": [{"group": "gateway.networking.k8s.io", "kind": "UDPRoute"}]}},
    ]);
    let t = run(objects);
    let status = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    let condition = |listener: usize, kind: &str| {
        let c = status.listeners[listener]
            .conditions
            .iter()
            .find(|c| c.kind == kind)
            .unwrap();
        (c.status.clone(), c.reason.clone())
    };
    // The HTTP listener keeps the kind it can carry and serves it.
    assert_eq!(condition(0, "Accepted"), ("True".into(), "Accepted".into()));
    assert_eq!(
        condition(0, "ResolvedRefs"),
        ("False".into(), "InvalidRouteKinds".into())
    );
    let kinds: Vec<&str> = status.listeners[0]
        .supported_kinds
        .iter()
        .map(|k| k.kind.as_str())
        .collect();
    assert_eq!(kinds, ["HTTPRoute"]);
    for listener in [1, 2] {
        assert_eq!(
            condition(listener, "Accepted"),
            ("False".into(), "UnsupportedProtocol".into())
        );
        assert_eq!(
            condition(listener, "ResolvedRefs"),
            ("False".into(), "InvalidRouteKinds".into())
        );
        assert!(status.listeners[listener].supported_kinds.is_empty());
    }
}
