use super::*;
use serde_json::json;

#[test]
fn dispatches_on_api_version_and_kind() {
    let gateway = Resource::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "Gateway",
        "metadata": {"name": "g", "namespace": "ns", "generation": 3},
        "spec": {"gatewayClassName": "c", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP",
            "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {"matchLabels": {"a": "b"}}}}}]}
    }))
    .unwrap();
    let Resource::Gateway(gateway) = gateway else {
        panic!("not a gateway")
    };
    assert_eq!(gateway.metadata.generation(), 3);
    assert_eq!(gateway.spec.listeners[0].port, 80);
    let other = Resource::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"}})).unwrap();
    assert_eq!(other.key(), ObjectKey::new("Deployment", "x", "d"));
}

#[test]
fn unserved_versions_are_refused() {
    let error = Resource::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1alpha2", "kind": "TLSRoute", "metadata": {"name": "t"}, "spec": {}
    }))
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "TLSRoute v1alpha2 is not a served version (use one of: v1)"
    );
}

#[test]
fn kinds_read_only_to_be_refused_decode_at_v1() {
    for kind in ["TCPRoute", "UDPRoute"] {
        let route = Resource::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
            "metadata": {"name": "r", "namespace": "n"},
            "spec": {"parentRefs": [{"name": "edge", "sectionName": "db"}],
                     "rules": [{"backendRefs": [{"name": "db", "port": 5432}]}]}
        }))
        .unwrap();
        assert_eq!(route.key(), ObjectKey::new(kind, "n", "r"));
        let (Resource::TcpRoute(route) | Resource::UdpRoute(route)) = route else {
            panic!("{kind} is not an L4 route")
        };
        assert_eq!(
            route.spec.parent_refs[0].section_name.as_deref(),
            Some("db")
        );
        // The experimental channel's v1alpha2 is not served by the standard CRDs.
        let error = Resource::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1alpha2", "kind": kind,
            "metadata": {"name": "r"}, "spec": {}
        }))
        .unwrap_err();
        assert!(matches!(error, Error::UnservedVersion { .. }), "{error}");
    }
    let set = Resource::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
        "metadata": {"name": "s", "namespace": "n"},
        "spec": {"parentRef": {"name": "edge"},
                 "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"}]}
    }))
    .unwrap();
    let Resource::ListenerSet(set) = set else {
        panic!("not a ListenerSet")
    };
    assert_eq!(set.spec.parent_ref.name, "edge");
}

#[test]
fn schema_errors_name_the_field() {
    let error = Resource::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "g"},
        "spec": {"gatewayClassName": "c", "listeners": [{"name": "a", "port": 80, "protocol": "HTTP"}, {"name": "b", "port": "eighty", "protocol": "HTTP"}]}
    }))
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("Gateway: spec.listeners[1].port: invalid type"),
        "{error}"
    );
    assert!(matches!(
        Resource::from_value(json!({"kind": "Gateway"})),
        Err(Error::MissingType)
    ));
}

#[test]
fn unknown_route_fields_are_kept_for_translation_to_refuse() {
    let route = Resource::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "n"},
        "spec": {"rules": [{"sessionPersistence": {"sessionName": "x"}, "matches": [{"path": {"value": "/"}, "futureField": 1}]}]}
    }))
    .unwrap();
    let Resource::HttpRoute(route) = route else {
        panic!("not a route")
    };
    let rule = &route.spec.rules.as_ref().unwrap()[0];
    assert!(rule.unknown.contains_key("sessionPersistence"));
    assert!(rule.matches[0].unknown.contains_key("futureField"));
}

#[test]
fn label_selectors_follow_kubernetes_semantics() {
    let labels = [
        ("env".to_owned(), "prod".to_owned()),
        ("team".to_owned(), "a".to_owned()),
    ]
    .into_iter()
    .collect();
    let selector =
        |value: serde_json::Value| serde_json::from_value::<LabelSelector>(value).unwrap();
    assert!(selector(json!({})).matches(&labels));
    assert!(selector(json!({"matchLabels": {"env": "prod"}})).matches(&labels));
    assert!(!selector(json!({"matchLabels": {"env": "dev"}})).matches(&labels));
    assert!(selector(json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]})).matches(&labels));
    assert!(
        selector(json!({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}))
            .matches(&labels)
    );
    assert!(
        !selector(
            json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]})
        )
        .matches(&labels)
    );
    assert!(
        !selector(json!({"matchExpressions": [{"key": "team", "operator": "Bogus"}]}))
            .matches(&labels)
    );
}
