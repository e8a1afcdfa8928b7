//! `culvert validate` end to end on real manifest files.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn validate(path: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_culvert"))
        .arg("validate")
        .arg(path)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("culvert-validate-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("manifests.yaml");
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn the_shipped_example_is_valid_and_every_condition_is_printed() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/examples/gateway.yaml");
    let (ok, out) = validate(&example);
    assert!(ok, "{out}");
    assert!(
        out.contains("GatewayClass culvert: Accepted=True (Accepted)"),
        "{out}"
    );
    assert!(
        out.contains("listener http: Accepted=True (Accepted)"),
        "{out}"
    );
    assert!(out.contains("attachedRoutes=1"), "{out}");
    assert!(out.contains("HTTPRoute shop/storefront -> Gateway shop/edge: Accepted=True (Accepted), ResolvedRefs=True"), "{out}");
    assert!(out.trim_end().ends_with("valid"), "{out}");
}

#[test]
fn refused_routes_and_malformed_documents_fail_with_the_reason() {
    let text = r#"
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
  listeners: [{name: http, port: 80, protocol: HTTP, hostname: "*.example.com"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: elsewhere, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [shop.example.org]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: broken, namespace: default}
spec:
  gatewayClassName: culvert
  listeners: [{name: http, port: eighty, protocol: HTTP}]
"#;
    let file = scratch("refused", text);
    let (ok, out) = validate(&file);
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    assert!(!ok, "{out}");
    assert!(
        out.contains("Accepted=False (NoMatchingListenerHostname"),
        "{out}"
    );
    assert!(
        out.contains("manifests.yaml#3: Gateway: spec.listeners[0].port"),
        "{out}"
    );
    assert!(
        out.trim_end()
            .ends_with("invalid: see the conditions above"),
        "{out}"
    );
}

#[test]
fn a_parent_ref_is_printed_as_written_with_section_and_port() {
    let text = r#"
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
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: default}
spec:
  parentRefs: [{name: edge, sectionName: http, port: 8080}]
  rules: [{}]
"#;
    let (_, out) = validate(&scratch("parent-ref", text));
    assert!(
        out.contains(
            "HTTPRoute default/web -> Gateway default/edge (http) port 8080: Accepted=True"
        ),
        "{out}"
    );
}

fn render(path: &Path) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_culvert"))
        .args(["controller", "--namespace", "culvert-system"])
        .args([
            "--image",
            "culvert:test",
            "--tunnel-edge",
            "198.41.192.7:7844",
        ])
        .arg("--render")
        .arg(path)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn controller_render_prints_every_plane_without_a_cluster() {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes/examples/planes");
    let (ok, out, err) = render(&example);
    assert!(ok, "{err}");
    let documents: Vec<serde_json::Value> = out
        .split("\n---\n")
        .map(|part| part.trim_start_matches("---\n"))
        .map(|part| {
            part.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<String>()
        })
        .map(|json| serde_json::from_str(&json).unwrap())
        .collect();
    let names: Vec<String> = documents
        .iter()
        .map(|d| {
            format!(
                "{} {}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["namespace"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "Service culvert-system/culvert-class-culvert-config",
            "NetworkPolicy culvert-system/culvert-class-culvert",
            "Deployment culvert-system/culvert-class-culvert",
            "PodDisruptionBudget culvert-system/culvert-class-culvert",
            "Service team-a/culvert-edge-config",
            "NetworkPolicy team-a/culvert-edge",
            "Deployment team-a/culvert-edge",
            "PodDisruptionBudget team-a/culvert-edge",
            "HorizontalPodAutoscaler team-a/culvert-edge",
        ]
    );
    let deployment = |namespace: &str| {
        documents
            .iter()
            .find(|d| d["kind"] == "Deployment" && d["metadata"]["namespace"] == namespace)
            .unwrap()
    };
    let shared = deployment("culvert-system");
    assert_eq!(
        shared["metadata"]["ownerReferences"][0]["kind"],
        "GatewayClass"
    );
    let volumes = shared["spec"]["template"]["spec"]["volumes"].to_string();
    assert!(
        volumes.contains("culvert-class-culvert-tunnel"),
        "{volumes}"
    );
    let dedicated = deployment("team-a");
    assert_eq!(dedicated["metadata"]["labels"]["team"], "a");
    assert_eq!(
        dedicated["spec"]["template"]["metadata"]["annotations"]["culvert.dev/secrets-hash"],
        "0000000000000000"
    );
    let args = dedicated["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("198.41.192.7:7844"), "{args}");

    // A plane that cannot be rendered fails the command and says why.
    let broken = std::fs::read_to_string(example.join("cluster.yaml"))
        .unwrap()
        .replace(
            "  replicas: 2\n  autoscaling:",
            "  replicas: 3000000000\n  autoscaling:",
        );
    let dir = scratch("render-broken", &broken);
    let (ok, _, err) = render(&dir);
    assert!(!ok);
    assert!(
        err.contains("the plane of Gateway team-a/edge cannot be rendered"),
        "{err}"
    );
}
