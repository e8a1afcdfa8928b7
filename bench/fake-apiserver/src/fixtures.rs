//! Objects the tests of Culvert's Kubernetes path keep needing: the Gateway API
//! CRDs the repository vendors, and a minimal cluster of one GatewayClass, one
//! Gateway with an HTTP listener, and a Service whose EndpointSlice points at a
//! backend on loopback. Tests add their own routes.

use std::path::Path;

use serde_json::{Value, json};

use crate::FakeApiServer;
use crate::error::Error;

/// `apiVersion` of the Gateway API kinds.
pub const GATEWAY_API: &str = "gateway.networking.k8s.io/v1";

/// Registers the Gateway API CRDs the repository vendors (v1.6.1) and Culvert's
/// own (`deploy/crds/culvert`).
pub fn register_repository_crds(server: &FakeApiServer) -> Result<(), Error> {
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
    server.register_crd_dir(&crds.join("gateway-api/v1.6.1"))?;
    server.register_crd_dir(&crds.join("culvert"))
}

/// Namespace `default`, GatewayClass `culvert` of `controller`, Gateway
/// `default/edge` with listener `http` on `port`, and Service `default/web` (port
/// 80) whose one ready endpoint is `127.0.0.1:backend_port`.
pub fn minimal_cluster(controller: &str, port: u16, backend_port: u16) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
        json!({"apiVersion": GATEWAY_API, "kind": "GatewayClass", "metadata": {"name": "culvert"},
               "spec": {"controllerName": controller}}),
        json!({"apiVersion": GATEWAY_API, "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "default"},
               "spec": {"gatewayClassName": "culvert",
                        "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"ports": [{"port": 80}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-1", "namespace": "default",
                            "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4", "ports": [{"port": backend_port}],
               "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]}),
    ]
}

/// HTTPRoute `default/NAME` for `host`, attached to Gateway `edge`, every request
/// to Service `web`.
pub fn http_route(name: &str, host: &str) -> Value {
    json!({"apiVersion": GATEWAY_API, "kind": "HTTPRoute",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"parentRefs": [{"name": "edge"}], "hostnames": [host],
                    "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}})
}
