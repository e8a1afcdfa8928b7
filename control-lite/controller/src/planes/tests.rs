use super::*;
use serde_json::json;

fn store() -> Store {
    let objects = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": "culvert"}, "spec": {"controllerName": "culvert.dev/gateway-controller"}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
               "metadata": {"name": "own", "namespace": "team"}, "spec": {"replicas": 2}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "team", "uid": "u-1"},
               "spec": {"gatewayClassName": "culvert",
                        "infrastructure": {"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}},
                        "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "shared", "namespace": "team"},
               "spec": {"gatewayClassName": "culvert",
                        "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "culvert-edge-config-1", "namespace": "team",
                            "labels": {"kubernetes.io/service-name": "culvert-edge-config"}},
               "addressType": "IPv4",
               "endpoints": [{"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
                             {"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
                             {"addresses": ["10.0.0.9"], "conditions": {"terminating": true}}],
               "ports": [{"name": "control", "port": 8081}]}),
    ];
    crate::testing::store(objects)
}

#[test]
fn dedicated_gateways_are_planes_with_their_config_and_pods() {
    let store = store();
    let translation = crate::testing::translated(&store);
    let planes = desired(&store, &translation);
    let keys: Vec<_> = planes.keys().cloned().collect();
    assert_eq!(
        keys,
        [("team".to_owned(), "edge".to_owned())],
        "the shared Gateway is no plane"
    );
    let plane = &planes[&keys[0]];
    assert_eq!(plane.gateway.uid, "u-1");
    assert_eq!(plane.config.replicas, Some(2));
    assert_eq!(
        plane.pods,
        [
            "10.0.0.1:8081".parse().unwrap(),
            "10.0.0.2:8081".parse::<SocketAddr>().unwrap()
        ],
        "ready or not, sorted, without the terminating one"
    );
    assert_eq!(plane.data_plane.listeners.len(), 1);
    assert_eq!(plane.data_plane.listeners[0].port, 80);
}

#[test]
fn a_class_with_shared_gateways_gets_a_shared_plane_in_the_controller_namespace() {
    let mut store = store();
    let class = store.gateway_classes.get_mut("culvert").unwrap();
    class.metadata.uid = Some("class-uid".to_owned());
    let translation = crate::testing::translated(&store);
    assert_eq!(
        wanted(&store, &translation, None).planes.len(),
        1,
        "no shared plane unless asked"
    );
    let planes = wanted(&store, &translation, Some("culvert-system")).planes;
    let key = (
        "culvert-system".to_owned(),
        "gatewayclass/culvert".to_owned(),
    );
    let plane = &planes[&key];
    assert_eq!(plane.key(), key);
    assert_eq!(plane.gateway.owner, crate::render::OwnerKind::GatewayClass);
    assert_eq!(plane.gateway.uid, "class-uid");
    assert_eq!(plane.gateway.names().workload, "culvert-class-culvert");
    assert_eq!(plane.config.replicas, Some(2), "two replicas by default");
    assert_eq!(plane.class_tunnel, None);
    let ports: Vec<u16> = plane.data_plane.listeners.iter().map(|l| l.port).collect();
    assert_eq!(ports, [8080], "only the shared Gateway's listener");

    // A class whose Gateways are all dedicated has no shared plane.
    store
        .gateways
        .remove(&("team".to_owned(), "shared".to_owned()));
    let translation = crate::testing::translated(&store);
    let planes = wanted(&store, &translation, Some("culvert-system")).planes;
    assert!(!planes.contains_key(&key));
}
