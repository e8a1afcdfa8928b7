//! ListenerSets aimed at Culvert's Gateways are refused in their status, and the
//! Gateway says none is attached; its own listeners keep serving.

use super::*;

fn listener_set(namespace: &str, name: &str, parent_ref: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
           "metadata": {"name": name, "namespace": namespace, "generation": 2},
           "spec": {"parentRef": parent_ref,
                    "listeners": [{"name": "extra", "port": 8080, "protocol": "HTTP"}]}})
}

fn gateway_condition(t: &Translation, kind: &str) -> Option<(String, String)> {
    t.gateways[&("infra".to_owned(), "edge".to_owned())]
        .conditions
        .iter()
        .find(|c| c.kind == kind)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

#[test]
fn listener_sets_naming_a_culvert_gateway_are_refused_and_the_gateway_attaches_none() {
    let mut objects = base();
    objects[2]["spec"]["allowedListeners"] = json!({"namespaces": {"from": "All"}});
    objects.extend([
        listener_set("infra", "same", json!({"name": "edge"})),
        listener_set(
            "team-a",
            "across",
            json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge", "namespace": "infra"}),
        ),
        listener_set("infra", "foreign", json!({"name": "elsewhere"})),
    ]);
    let t = run(objects);
    for key in [("infra", "same"), ("team-a", "across")] {
        let status = &t.listener_sets[&(key.0.to_owned(), key.1.to_owned())];
        let kinds: Vec<(&str, &str, &str)> = status
            .conditions
            .iter()
            .map(|c| (c.kind.as_str(), c.status.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("Accepted", "False", "NotAllowed"),
                ("Programmed", "False", "NotAllowed")
            ]
        );
        assert!(status.conditions[0].message.contains("infra/edge"));
        assert_eq!(status.conditions[0].observed_generation, 2);
    }
    assert!(
        !t.listener_sets
            .contains_key(&("infra".to_owned(), "foreign".to_owned())),
        "a set naming another controller's Gateway is not Culvert's to judge"
    );
    assert_eq!(
        gateway_condition(&t, "AttachedListenerSets"),
        Some(("False".into(), "ListenerSetsNotAllowed".into()))
    );
    let status = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    assert_eq!(status.attached_listener_sets, Some(0));
    // allowedListeners is understood, not refused: the Gateway serves as before, and
    // no listener of the sets is.
    assert_eq!(
        gateway_condition(&t, "Accepted"),
        Some(("True".into(), "Accepted".into()))
    );
    let names: Vec<&str> = plane(&t)
        .listeners
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(names, ["infra/edge/http"]);
}

#[test]
fn a_gateway_admitting_listener_sets_says_none_attach_and_one_that_does_not_is_silent() {
    let mut objects = base();
    objects[2]["spec"]["allowedListeners"] = json!({"namespaces": {"from": "Same"}});
    let t = run(objects.clone());
    assert_eq!(
        gateway_condition(&t, "AttachedListenerSets"),
        Some(("False".into(), "NoListenerSetsAttached".into()))
    );
    // `from: None` (the default) admits no set: nothing to say.
    objects[2]["spec"]["allowedListeners"] = json!({"namespaces": {"from": "None"}});
    let t = run(objects);
    assert_eq!(gateway_condition(&t, "AttachedListenerSets"), None);
    let status = &t.gateways[&("infra".to_owned(), "edge".to_owned())];
    assert_eq!(status.attached_listener_sets, None);
    assert!(
        !serde_json::to_value(status)
            .unwrap()
            .as_object()
            .unwrap()
            .contains_key("attachedListenerSets")
    );
}
