use super::*;
use crate::planes::wanted;
use serde_json::json;

/// A connector token for tunnel 6ff42ae2-765d-4adf-8112-31c55c1551ef of account
/// 0123456789abcdef0123456789abcdef, as Secret data.
const TOKEN: &str = "ZXlKaElqb2lNREV5TXpRMU5qYzRPV0ZpWTJSbFpqQXhNak0wTlRZM09EbGhZbU5rWldZaUxDSjBJam9pTm1abU5ESmhaVEl0TnpZMVpDMDBZV1JtTFRneE1USXRNekZqTlRWak1UVTFNV1ZtSWl3aWN5STZJbU15Vm1wamJWWXdURmhPYkZrelNteGtRekY2V2xkT2VWcFlVWFJqTWxacVkyMVdNRXhZVG14WmR6MDlJbjA9";

fn store(credentials: bool) -> Store {
    let mut spec = json!({"tunnel": {"tokenRef": {"name": "edge-tunnel"}}});
    if credentials {
        spec["cloudflareCredentialsSecretRef"] = json!({"name": "cf"});
    }
    let objects = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": "culvert", "uid": "c-1"},
               "spec": {"controllerName": "culvert.dev/gateway-controller",
                        "parametersRef": {"group": "culvert.dev", "kind": "GatewayClassConfig", "name": "policy"}}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayClassConfig",
               "metadata": {"name": "policy"},
               "spec": {"cloudflareCredentialsSecretRef": {"name": "operator-cf", "namespace": "ops"}}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "edge-tunnel", "namespace": "team"}, "data": {"token": TOKEN}}),
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
               "metadata": {"name": "own", "namespace": "team"}, "spec": spec}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "team", "uid": "u-1"},
               "spec": {"gatewayClassName": "culvert",
                        "infrastructure": {"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}},
                        "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"},
                                      {"name": "docs", "port": 8081, "protocol": "HTTP", "hostname": "docs.example.com"}]}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "web", "namespace": "team"},
               "spec": {"parentRefs": [{"name": "edge", "sectionName": "http"}],
                        "hostnames": ["App.example.com", "api.example.com"],
                        "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "docs", "namespace": "team"},
               "spec": {"parentRefs": [{"name": "edge", "sectionName": "docs"}],
                        "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team"},
               "spec": {"ports": [{"port": 80}]}}),
    ];
    crate::testing::store(objects)
}

fn sync_inputs(store: &Store) -> SyncInputs {
    let translation = crate::testing::translated(store);
    let planes = wanted(store, &translation, Some("culvert-system"));
    inputs(store, &translation, &planes, &Held::new())
}

#[test]
fn a_tunnel_plane_syncs_its_routes_hostnames_with_its_credential() {
    let inputs = sync_inputs(&store(true));
    let tunnel = &inputs.tunnels["6ff42ae2-765d-4adf-8112-31c55c1551ef"];
    assert_eq!(tunnel.account, "0123456789abcdef0123456789abcdef");
    assert_eq!(tunnel.service, "http://localhost:8080");
    assert_eq!(
        tunnel.credential,
        Some(CredentialRef {
            namespace: "team".to_owned(),
            secret: SecretKey {
                name: "cf".to_owned(),
                key: "token".to_owned()
            }
        })
    );
    assert_eq!(
        tunnel.gateways,
        BTreeSet::from([("team".to_owned(), "edge".to_owned())])
    );
    let routes: Vec<(&str, &[String])> = tunnel
        .routes
        .iter()
        .map(|r| (r.route.name.as_str(), r.hostnames.as_slice()))
        .collect();
    assert_eq!(
        routes,
        [
            ("docs", &["docs.example.com".to_owned()][..]),
            (
                "web",
                &["api.example.com".to_owned(), "app.example.com".to_owned()][..]
            ),
        ],
        "a route's own hostnames, else its listener's, in lower case"
    );
    assert_eq!(
        tunnel.hostnames(),
        ["api.example.com", "app.example.com", "docs.example.com"]
    );
}

#[test]
fn without_its_own_credential_a_gateway_uses_the_class_s() {
    let inputs = sync_inputs(&store(false));
    let tunnel = inputs.tunnels.values().next().unwrap();
    assert_eq!(
        tunnel.credential,
        Some(CredentialRef {
            namespace: "ops".to_owned(),
            secret: SecretKey {
                name: "operator-cf".to_owned(),
                key: "token".to_owned()
            }
        })
    );
}
