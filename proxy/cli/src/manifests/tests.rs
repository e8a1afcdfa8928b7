use super::*;
use std::path::PathBuf;

const GATEWAY: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: culvert}
spec: {controllerName: culvert.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: default}
spec:
  gatewayClassName: culvert
  listeners: [{name: http, port: 8080, protocol: HTTP}]
"#;

const ROUTE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [www.example.com]
  rules: [{backendRefs: [{name: missing, port: 80}]}]
"#;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("culvert-source-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn manifests_translate_and_changes_are_noticed() {
    let dir = temp_dir("ok");
    std::fs::write(dir.join("gateway.yaml"), GATEWAY).unwrap();
    let mut source = ManifestSource::new(&dir, "culvert.dev/gateway-controller", "0.0.0.0");
    let (config, refusals) = source.load().unwrap();
    assert_eq!(config.listeners.len(), 1);
    assert_eq!(config.listeners[0].port, 8080);
    assert!(config.http_routes.is_empty());
    assert!(refusals.is_empty(), "{refusals:?}");
    assert!(!source.changed());

    std::fs::write(dir.join("route.yaml"), ROUTE).unwrap();
    assert!(source.changed());
    let (config, refusals) = source.load().unwrap();
    assert_eq!(config.http_routes.len(), 1);
    // The backend Service does not exist: the route is served (500 for its share)
    // and its ResolvedRefs condition says why.
    assert!(
        refusals.iter().any(|r| r.contains("BackendNotFound")),
        "{refusals:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_broken_document_refuses_the_whole_load() {
    let dir = temp_dir("broken");
    std::fs::write(dir.join("gateway.yaml"), GATEWAY).unwrap();
    std::fs::write(dir.join("route.yaml"), "kind: HTTPRoute\nspec: [unclosed").unwrap();
    let mut source = ManifestSource::new(&dir, "culvert.dev/gateway-controller", "0.0.0.0");
    let err = source.load().unwrap_err().to_string();
    assert!(err.contains("route.yaml"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn manifests_for_another_controller_serve_nothing() {
    let dir = temp_dir("other");
    std::fs::write(dir.join("gateway.yaml"), GATEWAY).unwrap();
    let mut source = ManifestSource::new(&dir, "example.com/other", "0.0.0.0");
    let err = source.load().unwrap_err();
    assert!(matches!(err, SourceError::NothingToServe(_)), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
