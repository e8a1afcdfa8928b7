//! Listener budgets: a Gateway over Gateway API's 64 listeners is refused whole; a
//! data plane over its budget refuses the listeners that do not fit, newest
//! Gateways' first, and serves the rest.

use super::*;

/// A Gateway with `count` HTTP listeners on port 80, each with its own hostname.
fn gateway(name: &str, created: &str, count: usize) -> Value {
    let listeners: Vec<Value> = (0..count)
        .map(|i| {
            json!({"name": format!("l{i}"), "port": 80, "protocol": "HTTP",
                   "hostname": format!("{name}-{i}.example.com")})
        })
        .collect();
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
           "metadata": {"name": name, "namespace": "infra", "creationTimestamp": created},
           "spec": {"gatewayClassName": "culvert", "listeners": listeners}})
}

fn status<'t>(t: &'t Translation, name: &str) -> &'t crate::model::GatewayStatus {
    &t.gateways[&("infra".to_owned(), name.to_owned())]
}

fn condition(conditions: &[crate::model::Condition], kind: &str) -> (String, String, String) {
    let c = conditions.iter().find(|c| c.kind == kind).unwrap();
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[test]
fn a_gateway_over_the_schemas_64_listeners_is_refused_whole() {
    let mut objects = base();
    objects.push(gateway("wide", "2026-01-02T00:00:00Z", 65));
    objects.push(gateway("full", "2026-01-03T00:00:00Z", 64));
    let mut pinned = route("infra", "r", "2026-01-04T00:00:00Z", &[], backend_rule());
    pinned["spec"]["parentRefs"] = json!([{"name": "wide"}, {"name": "full"}]);
    objects.push(pinned);
    let t = run(objects);
    let wide = status(&t, "wide");
    let (accepted, why, message) = condition(&wide.conditions, "Accepted");
    assert_eq!((accepted.as_str(), why.as_str()), ("False", "Invalid"));
    assert!(
        message.contains("65") && message.contains("64"),
        "{message}"
    );
    assert_eq!(condition(&wide.conditions, "Programmed").0, "False");
    assert!(
        wide.listeners.is_empty(),
        "no more listener statuses than the schema allows"
    );
    assert!(
        !t.gateway_planes
            .contains_key(&("infra".to_owned(), "wide".to_owned()))
    );
    // At the limit a Gateway is served as usual.
    let full = status(&t, "full");
    assert_eq!(condition(&full.conditions, "Accepted").1, "Accepted");
    assert_eq!(full.listeners.len(), 64);
    let served = plane(&t)
        .listeners
        .iter()
        .filter(|l| l.name.starts_with("infra/wide/"))
        .count();
    assert_eq!(served, 0);
    // A route naming it is told its parent is not accepted, and still serves on the other.
    let parents = &t.routes[&ObjectKey::new("HTTPRoute", "infra", "r")].parents;
    assert_eq!(
        condition(&parents[0].conditions, "Accepted").1,
        "NoMatchingParent"
    );
    assert_eq!(condition(&parents[1].conditions, "Accepted").1, "Accepted");
}

#[test]
fn a_plane_over_its_budget_refuses_the_newest_listeners_and_serves_the_rest() {
    assert_eq!(LISTENERS_PER_PLANE, 16 * LISTENERS_PER_GATEWAY);
    // `edge` (one listener, the oldest) and sixteen more fill 1023 of the 1024 slots.
    let mut objects = base();
    objects.push(gateway("g00", "2026-02-01T00:00:00Z", 62));
    for g in 1..16 {
        let created = format!("2026-02-{:02}T00:00:00Z", g + 1);
        objects.push(gateway(&format!("g{g:02}"), &created, 64));
    }
    // The newest Gateway sorts first by name: age, not name, decides who fits. Its
    // first listener, HTTPS without a certificate, is not sent to the plane and
    // takes no room.
    let mut late = gateway("aaa-late", "2026-03-01T00:00:00Z", 3);
    late["spec"]["listeners"].as_array_mut().unwrap().insert(
        0,
        json!({"name": "tls", "port": 443, "protocol": "HTTPS", "hostname": "late.example.com",
               "tls": {"certificateRefs": [{"name": "missing"}]}}),
    );
    objects.push(late);
    objects.push(gateway("aab-later", "2026-03-02T00:00:00Z", 2));
    // A Gateway with its own data plane has its own budget.
    let mut own = gateway("aac-own", "2026-03-03T00:00:00Z", 2);
    own["spec"]["infrastructure"] =
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    objects.push(own);
    objects.push(
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
                        "metadata": {"name": "own", "namespace": "infra"}, "spec": {}}),
    );
    let t = run(objects);

    let shared = plane(&t);
    assert_eq!(shared.listeners.len(), LISTENERS_PER_PLANE);
    assert!(
        shared
            .listeners
            .iter()
            .any(|l| l.name == "infra/aaa-late/l0")
    );
    assert!(
        !shared
            .listeners
            .iter()
            .any(|l| l.name == "infra/aaa-late/l1")
    );

    // Partly over: still accepted, and each refused listener says why.
    let late = status(&t, "aaa-late");
    let (accepted, why, message) = condition(&late.conditions, "Accepted");
    assert_eq!(
        (accepted.as_str(), why.as_str()),
        ("True", "ListenersNotValid")
    );
    assert!(
        message.starts_with("2 listener(s) did not fit"),
        "{message}"
    );
    assert!(message.contains("GatewayClass culvert"), "{message}");
    let listener_reasons: Vec<String> = late
        .listeners
        .iter()
        .map(|l| condition(&l.conditions, "Accepted").1)
        .collect();
    assert_eq!(
        listener_reasons,
        [
            "Accepted",
            "Accepted",
            "TooManyListeners",
            "TooManyListeners"
        ]
    );
    assert_eq!(
        condition(&late.listeners[2].conditions, "Programmed").0,
        "False"
    );

    // Wholly over: not accepted, not served, and says so.
    let later = status(&t, "aab-later");
    let (accepted, why, message) = condition(&later.conditions, "Accepted");
    assert_eq!(
        (accepted.as_str(), why.as_str()),
        ("False", "ListenersNotValid")
    );
    assert!(message.contains("1024-listener budget"), "{message}");
    assert!(
        !t.gateway_planes
            .contains_key(&("infra".to_owned(), "aab-later".to_owned()))
    );

    // Older Gateways are untouched; the dedicated plane serves its own.
    assert_eq!(
        condition(&status(&t, "g15").conditions, "Accepted").1,
        "Accepted"
    );
    let key = ("infra".to_owned(), "aac-own".to_owned());
    assert_eq!(
        t.data_planes[&DataPlaneId::Dedicated(key)].listeners.len(),
        2
    );
    // One process serving every plane serves all that fit, nothing more.
    assert_eq!(
        t.merged_config().unwrap().listeners.len(),
        LISTENERS_PER_PLANE + 2
    );
}
