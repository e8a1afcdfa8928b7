use super::*;
use culvert_control_lite::translate::Translation;
use serde_json::{Value, json};

/// Gateway `team/edge` with a dedicated plane (no tunnel) listening on 80,
/// Gateway `team/shared` on the class's shared plane, and `extra` objects.
fn store(extra: Vec<Value>) -> Store {
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": "culvert", "uid": "c-1"},
               "spec": {"controllerName": "culvert.dev/gateway-controller"}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
               "metadata": {"name": "own", "namespace": "team"}, "spec": {}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "team", "uid": "u-1"},
               "spec": {"gatewayClassName": "culvert",
                        "infrastructure": {"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}},
                        "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "shared", "namespace": "team", "uid": "u-2"},
               "spec": {"gatewayClassName": "culvert",
                        "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}}),
    ];
    objects.extend(extra);
    crate::testing::store(objects)
}

fn translated(store: &Store) -> Translation {
    crate::testing::translate_with(
        store,
        Box::new(PlaneAddresses {
            shared_in: "culvert-system".to_owned(),
            held: Arc::default(),
        }),
    )
}

/// `(addresses, Programmed status, reason, message)` of Gateway `team/name`.
fn gateway(t: &Translation, name: &str) -> (Vec<String>, String, String, String) {
    let status = &t.gateways[&("team".to_owned(), name.to_owned())];
    let programmed = status
        .conditions
        .iter()
        .find(|c| c.kind == "Programmed")
        .unwrap();
    (
        status
            .addresses
            .iter()
            .map(|a| {
                format!(
                    "{}={}",
                    a.kind.as_deref().unwrap_or(""),
                    a.value.as_deref().unwrap_or("")
                )
            })
            .collect(),
        programmed.status.clone(),
        programmed.reason.clone(),
        programmed.message.clone(),
    )
}

fn load_balancer(namespace: &str, name: &str, ingress: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": ingress}}})
}

#[test]
fn gateways_wait_for_their_plane_s_load_balancer_then_report_it() {
    let t = translated(&store(Vec::new()));
    let (addresses, status, reason, message) = gateway(&t, "edge");
    assert!(addresses.is_empty());
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "AddressNotAssigned")
    );
    assert_eq!(
        message,
        "waiting for the load balancer of Service team/culvert-edge"
    );
    let accepted = t.gateways[&("team".to_owned(), "edge".to_owned())]
        .conditions
        .iter()
        .any(|c| c.kind == "Accepted" && c.status == "True");
    assert!(accepted, "waiting for an address is no refusal");
    let (_, _, _, message) = gateway(&t, "shared");
    assert_eq!(
        message,
        "waiting for the load balancer of Service culvert-system/culvert-class-culvert"
    );

    let t = translated(&store(vec![
        load_balancer(
            "team",
            "culvert-edge",
            json!([{"ip": "203.0.113.7"}, {"hostname": "lb.example.net"}]),
        ),
        load_balancer(
            "culvert-system",
            "culvert-class-culvert",
            json!([{"ip": "203.0.113.9"}]),
        ),
    ]));
    let (addresses, status, _, _) = gateway(&t, "edge");
    assert_eq!(
        addresses,
        ["IPAddress=203.0.113.7", "Hostname=lb.example.net"]
    );
    assert_eq!(status, "True");
    let (addresses, status, _, _) = gateway(&t, "shared");
    assert_eq!(addresses, ["IPAddress=203.0.113.9"]);
    assert_eq!(status, "True");
}

#[test]
fn a_requested_address_cannot_be_honoured() {
    let mut store = store(Vec::new());
    let gateway_object = store
        .gateways
        .get_mut(&("team".to_owned(), "edge".to_owned()))
        .unwrap();
    gateway_object.spec.addresses = vec![GatewayAddress {
        kind: None,
        value: Some("192.0.2.1".to_owned()),
    }];
    let t = translated(&store);
    let (_, status, reason, _) = gateway(&t, "edge");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "AddressNotUsable")
    );
}
