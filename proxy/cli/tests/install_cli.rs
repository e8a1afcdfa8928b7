//! `culvert install` and `culvert drain` end to end, through the binary.
//!
//! - The committed `deploy/kubernetes/culvert.yaml` is exactly the default
//!   rendering (`--no-secrets`), so it never goes stale.
//! - The rendering holds every object in apply order, RBAC with exactly the verbs
//!   the Kubernetes source uses, a DaemonSet as documented, and fresh Secrets each
//!   time (a certificate valid for the control name).
//! - The `culvert.dev` CRD schemas are structural, name exactly the fields the
//!   control-lite model has, and the example objects that satisfy them parse with
//!   the model (an object the model refuses, the schema refuses too).
//! - `culvert drain` makes a real `culvert serve` drain and exit 0, over HTTP and
//!   over HTTPS with the certificate `culvert install` generated.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

// The data plane's test helpers, one copy for both crates' tests.
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use culvert_control_lite::load::{Document, load_path, load_str};
use culvert_control_lite::model::{
    Autoscaling, ClassTunnel, GatewayClassConfigSpec, GatewayConfigSpec, Resource,
    SecretKeyReference, SecretObjectReference, SharedPlane, TunnelConfig,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use serde_json::{Value, json};
use support::{free_port, temp_dir};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn culvert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_culvert"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs `culvert install` with `args`, which must succeed; the documents.
fn install(args: &[&str]) -> Vec<Document> {
    let output = culvert(&[&["install", "--mode", "daemonset"], args].concat());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let loaded = load_str(&text, Path::new("install.yaml"));
    assert!(loaded.is_clean(), "{:?}", loaded.errors);
    loaded.documents
}

fn find<'a>(documents: &'a [Document], kind: &str, name: &str) -> &'a Value {
    &documents
        .iter()
        .find(|d| d.kind() == kind && d.name() == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
        .value
}

fn container(documents: &[Document]) -> &Value {
    &find(documents, "DaemonSet", "culvert")["spec"]["template"]["spec"]["containers"][0]
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn committed_manifest_is_the_default_rendering() {
    let output = culvert(&["install", "--mode", "daemonset", "--no-secrets"]);
    assert!(output.status.success());
    let rendered = String::from_utf8(output.stdout).unwrap();
    let committed = std::fs::read_to_string(repo("deploy/kubernetes/culvert.yaml")).unwrap();
    assert!(
        rendered == committed,
        "deploy/kubernetes/culvert.yaml is stale; regenerate it with\n  \
         cargo run -p culvert --bin culvert -- install --mode daemonset --no-secrets \
         > deploy/kubernetes/culvert.yaml"
    );
    assert!(!rendered.contains("{{"), "a placeholder was left unfilled");
    assert!(!rendered.contains("kind: Secret"));
}

#[test]
fn install_renders_every_object_in_apply_order() {
    let documents = install(&[]);
    let kinds: Vec<String> = documents
        .iter()
        .map(|d| format!("{} {}", d.kind(), d.name()))
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace culvert-system",
            "CustomResourceDefinition gatewayconfigs.culvert.dev",
            "CustomResourceDefinition gatewayclassconfigs.culvert.dev",
            "ServiceAccount culvert",
            "ClusterRole culvert",
            "ClusterRoleBinding culvert",
            "Role culvert",
            "RoleBinding culvert",
            "Secret culvert-control-token",
            "Secret culvert-control-tls",
            "GatewayClass culvert",
            "DaemonSet culvert",
        ]
    );
    for document in &documents {
        let cluster_scoped = matches!(
            document.kind(),
            "Namespace"
                | "CustomResourceDefinition"
                | "ClusterRole"
                | "ClusterRoleBinding"
                | "GatewayClass"
        );
        let expected = (!cluster_scoped).then_some("culvert-system");
        assert_eq!(document.namespace(), expected, "{}", document.source);
    }
    let class = find(&documents, "GatewayClass", "culvert");
    assert_eq!(
        class["spec"]["controllerName"],
        "culvert.dev/gateway-controller"
    );
    // The control-lite model reads the GatewayClass as the source will.
    assert!(matches!(
        Resource::from_value(class.clone()).unwrap(),
        Resource::GatewayClass(_)
    ));
}

/// `(group, resource, verb)` for every rule of a Role or ClusterRole.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut grants = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    grants.insert((group.to_owned(), resource.to_owned(), verb.to_owned()));
                }
            }
        }
    }
    grants
}

fn expected(rules: &[(&str, &[&str], &[&str])]) -> BTreeSet<(String, String, String)> {
    let mut grants = BTreeSet::new();
    for (group, resources, verbs) in rules {
        for resource in *resources {
            for verb in *verbs {
                grants.insert((
                    (*group).to_owned(),
                    (*resource).to_owned(),
                    (*verb).to_owned(),
                ));
            }
        }
    }
    grants
}

#[test]
fn rbac_grants_exactly_the_verbs_the_kubernetes_source_uses() {
    let documents = install(&["--no-secrets"]);
    let read = &["list", "watch"][..];
    let cluster = expected(&[
        (
            "gateway.networking.k8s.io",
            &[
                "gatewayclasses",
                "gateways",
                "httproutes",
                "grpcroutes",
                "tlsroutes",
                "tcproutes",
                "udproutes",
                "listenersets",
                "backendtlspolicies",
            ],
            &["get", "list", "watch"],
        ),
        ("gateway.networking.k8s.io", &["referencegrants"], read),
        (
            "gateway.networking.k8s.io",
            &[
                "gatewayclasses/status",
                "gateways/status",
                "httproutes/status",
                "grpcroutes/status",
                "tlsroutes/status",
                "tcproutes/status",
                "udproutes/status",
                "listenersets/status",
                "backendtlspolicies/status",
            ],
            &["patch"],
        ),
        (
            "",
            &["namespaces", "services", "configmaps", "secrets"],
            read,
        ),
        ("discovery.k8s.io", &["endpointslices"], read),
        (
            "culvert.dev",
            &["gatewayconfigs", "gatewayclassconfigs"],
            read,
        ),
        ("events.k8s.io", &["events"], &["create", "patch"]),
    ]);
    assert_eq!(grants(find(&documents, "ClusterRole", "culvert")), cluster);
    let local = expected(&[
        (
            "coordination.k8s.io",
            &["leases"],
            &["get", "create", "update"],
        ),
        ("", &["pods"], read),
    ]);
    assert_eq!(grants(find(&documents, "Role", "culvert")), local);
    for binding in ["ClusterRoleBinding", "RoleBinding"] {
        let binding = find(&documents, binding, "culvert");
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "culvert", "namespace": "culvert-system"}])
        );
        assert_eq!(binding["roleRef"]["name"], "culvert");
    }
}

#[test]
fn daemonset_runs_the_plane_as_documented() {
    let documents = install(&["--no-secrets"]);
    let daemonset = find(&documents, "DaemonSet", "culvert");
    let pod = &daemonset["spec"]["template"]["spec"];
    let container = container(&documents);
    assert_eq!(
        container["image"],
        format!(
            "ghcr.io/culvert-proxy/culvert:{}",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(
        strings(&container["args"]).join(" "),
        "serve --kubernetes --control $(POD_IP):8081 \
         --control-tls-cert /etc/culvert/control-tls/tls.crt \
         --control-tls-key /etc/culvert/control-tls/tls.key \
         --lease-namespace $(POD_NAMESPACE) --identity $(POD_NAME) \
         --publish-pods app.kubernetes.io/name=culvert --drain-grace 30s"
    );
    let env = container["env"].as_array().unwrap();
    let field = |name: &str| {
        env.iter().find(|e| e["name"] == name).unwrap()["valueFrom"]["fieldRef"]["fieldPath"]
            .clone()
    };
    assert_eq!(field("POD_IP"), "status.podIP");
    assert_eq!(field("POD_NAME"), "metadata.name");
    assert_eq!(field("POD_NAMESPACE"), "metadata.namespace");
    assert_eq!(field("NODE_NAME"), "spec.nodeName");
    let token = env.iter().find(|e| e["name"] == "CULVERT_TOKEN").unwrap();
    assert_eq!(
        token["valueFrom"]["secretKeyRef"],
        json!({"name": "culvert-control-token", "key": "token"})
    );
    // The publish-pods selector matches the pods' own labels.
    assert_eq!(
        daemonset["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"],
        "culvert"
    );

    let ports = container["ports"].as_array().unwrap();
    for port in [80, 443] {
        assert!(
            ports
                .iter()
                .any(|p| p["containerPort"] == port && p["hostPort"] == port),
            "{port}"
        );
    }
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"], path);
        assert_eq!(get["scheme"], "HTTPS");
        assert_eq!(get["port"], "control");
    }
    let annotations = &daemonset["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], "8081");
    assert_eq!(annotations["prometheus.io/scheme"], "https");

    let security = &container["securityContext"];
    assert_eq!(security["runAsNonRoot"], true);
    assert_eq!(security["runAsUser"], 65532);
    assert_eq!(security["runAsGroup"], 65532);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(security["capabilities"]["add"], json!(["NET_BIND_SERVICE"]));
    assert!(container["resources"]["requests"]["memory"].is_string());
    assert!(container["resources"]["limits"]["memory"].is_string());
    assert_eq!(
        daemonset["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
    );

    // The kubelet waits longer than the plane's drain grace.
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(grace > 30, "{grace}");
    let pre_stop = strings(&container["lifecycle"]["preStop"]["exec"]["command"]);
    assert_eq!(pre_stop[..2], ["/culvert", "drain"]);
    assert!(pre_stop.contains(&"--wait"));
    assert!(pre_stop.contains(&"culvert-control.culvert-system.svc"));

    // Host ports: the pod's own network namespace may bind 80 without root.
    assert_eq!(pod["hostNetwork"], Value::Null);
    assert_eq!(
        pod["securityContext"]["sysctls"],
        json!([{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}])
    );
    let host_ports = install(&["--no-secrets", "--host-ports"]);
    assert_eq!(
        find(&host_ports, "DaemonSet", "culvert"),
        find(&documents, "DaemonSet", "culvert")
    );
}

#[test]
fn host_network_shares_the_node_network() {
    let documents = install(&["--no-secrets", "--host-network"]);
    let pod = &find(&documents, "DaemonSet", "culvert")["spec"]["template"]["spec"];
    assert_eq!(pod["hostNetwork"], true);
    assert_eq!(pod["dnsPolicy"], "ClusterFirstWithHostNet");
    assert_eq!(pod["securityContext"]["sysctls"], Value::Null);
    let output = culvert(&[
        "install",
        "--mode",
        "daemonset",
        "--host-network",
        "--host-ports",
    ]);
    assert!(!output.status.success());
}

#[test]
fn namespace_and_image_reach_every_object() {
    let documents = install(&[
        "--namespace",
        "edge",
        "--image",
        "registry.example:5000/culvert@sha256:0123abcd",
    ]);
    for document in &documents {
        assert_ne!(document.namespace(), Some("culvert-system"));
    }
    assert_eq!(find(&documents, "Namespace", "edge")["kind"], "Namespace");
    assert_eq!(
        container(&documents)["image"],
        "registry.example:5000/culvert@sha256:0123abcd"
    );
    let pre_stop = strings(&container(&documents)["lifecycle"]["preStop"]["exec"]["command"]);
    assert!(pre_stop.contains(&"culvert-control.edge.svc"));
    let certificate = find(&documents, "Secret", "culvert-control-tls")["stringData"]["tls.crt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_valid_for(&certificate, "culvert-control.edge.svc");
}

#[test]
fn controller_mode_renders_the_controller_and_the_rbac_it_uses() {
    let output = culvert(&[
        "install",
        "--mode",
        "controller",
        "--image",
        "registry.example/culvert:1",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let loaded = load_str(&text, Path::new("install.yaml"));
    assert!(loaded.is_clean(), "{:?}", loaded.errors);
    let documents = loaded.documents;
    let kinds: Vec<String> = documents
        .iter()
        .map(|d| format!("{} {}", d.kind(), d.name()))
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace culvert-system",
            "CustomResourceDefinition gatewayconfigs.culvert.dev",
            "CustomResourceDefinition gatewayclassconfigs.culvert.dev",
            "ServiceAccount culvert",
            "ClusterRole culvert",
            "ClusterRoleBinding culvert",
            "Role culvert",
            "RoleBinding culvert",
            "ClusterRole culvert-controller",
            "ClusterRoleBinding culvert-controller",
            "GatewayClass culvert",
            "Deployment culvert-controller",
        ]
    );
    // Writes of dedicated planes: apply (create, patch), removal (list, delete),
    // re-reads (get); Secrets are made and read, never deleted.
    let write = &["get", "list", "create", "patch", "delete"][..];
    assert_eq!(
        grants(find(&documents, "ClusterRole", "culvert-controller")),
        expected(&[
            ("apps", &["deployments"], write),
            ("", &["services"], write),
            ("networking.k8s.io", &["networkpolicies"], write),
            ("policy", &["poddisruptionbudgets"], write),
            ("autoscaling", &["horizontalpodautoscalers"], write),
            ("", &["secrets"], &["get", "create", "patch"]),
        ])
    );
    let binding = find(&documents, "ClusterRoleBinding", "culvert-controller");
    assert_eq!(binding["subjects"][0]["name"], "culvert");
    let deployment = find(&documents, "Deployment", "culvert-controller");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example/culvert:1");
    assert_eq!(
        strings(&container["args"]).join(" "),
        "controller --namespace $(POD_NAMESPACE) --identity $(POD_NAME) \
         --image registry.example/culvert:1 \
         --controller-pod-label app.kubernetes.io/name=culvert-controller"
    );
    // The controller pods carry the label the planes' NetworkPolicies admit.
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"],
        "culvert-controller"
    );
    assert!(
        !text.contains("kind: Secret"),
        "the controller makes its own Secrets"
    );
}

#[test]
fn bad_options_are_refused() {
    for (args, message) in [
        (
            &["install", "--mode", "controller", "--namespace", "Bad_Name"][..],
            "not a DNS label",
        ),
        (
            &["install", "--mode", "daemonset", "--image", "x: y"],
            "not an image reference",
        ),
    ] {
        let output = culvert(args);
        assert!(!output.status.success(), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

fn assert_valid_for(certificate_pem: &str, name: &str) {
    let der = CertificateDer::from_pem_slice(certificate_pem.as_bytes()).unwrap();
    let certificate = webpki::EndEntityCert::try_from(&der).unwrap();
    certificate
        .verify_is_valid_for_subject_name(&ServerName::try_from(name).unwrap())
        .unwrap();
    // Trusting the certificate itself, it verifies as a server certificate now.
    let anchor = webpki::anchor_from_trusted_cert(&der).unwrap();
    certificate
        .verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &[],
            UnixTime::now(),
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .unwrap();
}

#[test]
fn secrets_are_fresh_on_every_install() {
    let first = install(&[]);
    let second = install(&[]);
    let token = |documents: &[Document]| {
        find(documents, "Secret", "culvert-control-token")["stringData"]["token"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (a, b) = (token(&first), token(&second));
    assert_eq!(a.len(), 64);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b);

    let tls = find(&first, "Secret", "culvert-control-tls");
    assert_eq!(tls["type"], "kubernetes.io/tls");
    let certificate = tls["stringData"]["tls.crt"].as_str().unwrap();
    let key = tls["stringData"]["tls.key"].as_str().unwrap();
    assert_valid_for(certificate, "culvert-control.culvert-system.svc");
    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    assert_ne!(
        certificate,
        find(&second, "Secret", "culvert-control-tls")["stringData"]["tls.crt"]
    );
}

// --- The culvert.dev CRDs --------------------------------------------------------

fn crd(file: &str) -> Value {
    let loaded = load_path(&repo(&format!("deploy/crds/culvert/{file}")));
    assert!(loaded.is_clean(), "{:?}", loaded.errors);
    assert_eq!(loaded.documents.len(), 1);
    loaded.documents[0].value.clone()
}

fn schema(crd: &Value) -> &Value {
    let versions = crd["spec"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["name"], "v1alpha1");
    assert_eq!(versions[0]["served"], true);
    assert_eq!(versions[0]["storage"], true);
    &versions[0]["schema"]["openAPIV3Schema"]
}

/// The structural-schema rules of apiextensions.k8s.io/v1 that a hand-written
/// schema can break: every node has a type, objects use `properties` or
/// `additionalProperties` but not both, arrays have `items`, no `$ref`, and
/// metadata is not constrained.
fn assert_structural(node: &Value, path: &str) {
    let object = node
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not a mapping"));
    let kind = object
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{path}: no type"));
    assert!(
        ["object", "array", "string", "integer", "number", "boolean"].contains(&kind),
        "{path}: type {kind}"
    );
    for banned in [
        "$ref",
        "definitions",
        "dependencies",
        "id",
        "patternProperties",
    ] {
        assert!(!object.contains_key(banned), "{path}: {banned}");
    }
    assert!(
        !(object.contains_key("properties") && object.contains_key("additionalProperties")),
        "{path}: properties and additionalProperties"
    );
    if let Some(properties) = object.get("properties") {
        assert_eq!(kind, "object", "{path}: properties on a {kind}");
        for (name, child) in properties.as_object().unwrap() {
            let child_path = format!("{path}.{name}");
            if path == "<root>" && name == "metadata" {
                assert_eq!(child, &json!({"type": "object"}), "{child_path}");
                continue;
            }
            assert_structural(child, &child_path);
        }
        for required in strings(object.get("required").unwrap_or(&json!([]))) {
            assert!(
                properties.get(required).is_some(),
                "{path}: required {required} is not a property"
            );
        }
    }
    if kind == "array" {
        assert_structural(
            object
                .get("items")
                .unwrap_or_else(|| panic!("{path}: no items")),
            &format!("{path}[]"),
        );
    }
}

/// The tree of field names of a serialized model value, as the schema's tree of
/// property names: each object maps to its fields' subtrees.
fn field_tree(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), field_tree(v)))
                .collect(),
        ),
        Value::Array(items) => items.first().map_or(Value::Null, field_tree),
        _ => Value::Null,
    }
}

fn property_tree(schema: &Value) -> Value {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        return Value::Object(
            properties
                .iter()
                .map(|(k, v)| (k.clone(), property_tree(v)))
                .collect(),
        );
    }
    match schema.get("items") {
        Some(items) => property_tree(items),
        None => Value::Null,
    }
}

fn secret_ref(name: &str) -> SecretObjectReference {
    SecretObjectReference {
        group: Some(String::new()),
        kind: Some("Secret".to_owned()),
        name: name.to_owned(),
        namespace: Some("default".to_owned()),
    }
}

/// Every field of the model set, so that serializing names every field (a field
/// added to the model breaks this literal, and then the comparison).
fn full_gateway_config() -> GatewayConfigSpec {
    GatewayConfigSpec {
        replicas: Some(1),
        autoscaling: Some(Autoscaling {
            max_replicas: 2,
            target_in_flight: Some(10),
        }),
        tunnel: Some(TunnelConfig {
            token_ref: secret_ref("tunnel"),
        }),
        config_api_token_ref: Some(secret_ref("token")),
        cloudflare_credentials_secret_ref: Some(secret_ref("cloudflare")),
    }
}

fn full_gateway_class_config() -> GatewayClassConfigSpec {
    GatewayClassConfigSpec {
        allow_shared_tunnels: true,
        max_data_planes_per_namespace: Some(3),
        privileged_namespace_prefixes: vec!["kube-".to_owned()],
        tunnel: Some(ClassTunnel {
            token_ref: SecretKeyReference {
                name: "culvert-tunnel".to_owned(),
                namespace: "culvert-system".to_owned(),
                key: Some("token".to_owned()),
            },
        }),
        cloudflare_credentials_secret_ref: Some(SecretKeyReference {
            name: "cloudflare".to_owned(),
            namespace: "culvert-system".to_owned(),
            key: Some("token".to_owned()),
        }),
        shared_plane: Some(SharedPlane {
            replicas: Some(3),
            autoscaling: Some(Autoscaling {
                max_replicas: 4,
                target_in_flight: Some(20),
            }),
        }),
    }
}

/// A small validator for what these schemas use: type, required, properties
/// (unknown fields refused, as strict field validation does), items, minimum,
/// maximum, minLength, maxLength, maxItems. Returns the first violation.
fn violation(schema: &Value, value: &Value, path: &str) -> Option<String> {
    let kind = schema["type"].as_str().unwrap_or_default();
    let fits = match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !fits {
        return Some(format!("{path}: not a {kind}"));
    }
    if let Some(number) = value.as_f64() {
        if schema["minimum"].as_f64().is_some_and(|min| number < min) {
            return Some(format!("{path}: below the minimum"));
        }
        if schema["maximum"].as_f64().is_some_and(|max| number > max) {
            return Some(format!("{path}: above the maximum"));
        }
    }
    if let Some(text) = value.as_str() {
        let length = text.chars().count() as u64;
        if schema["minLength"].as_u64().is_some_and(|min| length < min) {
            return Some(format!("{path}: too short"));
        }
        if schema["maxLength"].as_u64().is_some_and(|max| length > max) {
            return Some(format!("{path}: too long"));
        }
    }
    if let Some(items) = value.as_array() {
        if schema["maxItems"]
            .as_u64()
            .is_some_and(|max| items.len() as u64 > max)
        {
            return Some(format!("{path}: too many items"));
        }
        for (index, item) in items.iter().enumerate() {
            if let Some(v) = violation(&schema["items"], item, &format!("{path}[{index}]")) {
                return Some(v);
            }
        }
    }
    if let (Some(map), Some(properties)) = (value.as_object(), schema["properties"].as_object()) {
        for required in schema["required"].as_array().into_iter().flatten() {
            let required = required.as_str().unwrap();
            if !map.contains_key(required) {
                return Some(format!("{path}.{required}: required"));
            }
        }
        for (name, field) in map {
            let Some(field_schema) = properties.get(name) else {
                return Some(format!("{path}.{name}: unknown field"));
            };
            // metadata is the API server's to check.
            if path.is_empty() && name == "metadata" {
                continue;
            }
            if let Some(v) = violation(field_schema, field, &format!("{path}.{name}")) {
                return Some(v);
            }
        }
    }
    None
}

#[test]
fn crd_schemas_are_structural_and_match_the_model() {
    for (file, kind, scope, spec) in [
        (
            "gatewayconfigs.yaml",
            "GatewayConfig",
            "Namespaced",
            serde_json::to_value(full_gateway_config()).unwrap(),
        ),
        (
            "gatewayclassconfigs.yaml",
            "GatewayClassConfig",
            "Cluster",
            serde_json::to_value(full_gateway_class_config()).unwrap(),
        ),
    ] {
        let crd = crd(file);
        assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(crd["spec"]["group"], "culvert.dev");
        assert_eq!(crd["spec"]["names"]["kind"], kind);
        assert_eq!(crd["spec"]["scope"], scope);
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap();
        assert_eq!(crd["metadata"]["name"], format!("{plural}.culvert.dev"));
        let schema = schema(&crd);
        assert_structural(schema, "<root>");
        let properties: BTreeSet<&String> =
            schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            properties,
            BTreeSet::from([
                &"apiVersion".to_owned(),
                &"kind".to_owned(),
                &"metadata".to_owned(),
                &"spec".to_owned()
            ]),
            "{file}"
        );
        assert_eq!(
            property_tree(&schema["properties"]["spec"]),
            field_tree(&spec),
            "{file}: the schema's fields differ from the model's"
        );
    }
}

#[test]
fn examples_satisfy_the_schemas_and_parse_with_the_model() {
    for (example, file) in [
        ("gatewayconfig.yaml", "gatewayconfigs.yaml"),
        ("gatewayclassconfig.yaml", "gatewayclassconfigs.yaml"),
    ] {
        let loaded = load_path(&repo(&format!("deploy/kubernetes/examples/{example}")));
        assert!(loaded.is_clean(), "{:?}", loaded.errors);
        let object = loaded.documents[0].value.clone();
        let crd = crd(file);
        let schema = schema(&crd);
        assert_eq!(violation(schema, &object, ""), None, "{example}");
        // Every field is set, so the example exercises the whole schema.
        assert_eq!(
            field_tree(&object["spec"]),
            property_tree(&schema["properties"]["spec"]),
            "{example} leaves a field out"
        );
        let resource = Resource::from_value(object).unwrap();
        match (example, resource) {
            ("gatewayconfig.yaml", Resource::GatewayConfig(config)) => {
                assert_eq!(config.spec.autoscaling.unwrap().max_replicas, 8);
            }
            ("gatewayclassconfig.yaml", Resource::GatewayClassConfig(config)) => {
                assert_eq!(config.spec.max_data_planes_per_namespace, Some(4));
            }
            (example, other) => panic!("{example}: {other:?}"),
        }
    }
}

#[test]
fn what_the_model_refuses_the_schema_refuses() {
    let config_crd = crd("gatewayconfigs.yaml");
    let config_schema = schema(&config_crd);
    let object = |spec: Value| {
        json!({
            "apiVersion": "culvert.dev/v1alpha1",
            "kind": "GatewayConfig",
            "metadata": {"name": "edge", "namespace": "default"},
            "spec": spec,
        })
    };
    for spec in [
        json!({"autoscaling": {"targetInFlight": 5}}),
        json!({"replicas": -1}),
        json!({"replicas": 4_294_967_296_u64}),
        json!({"replicas": "2"}),
        json!({"tunnel": {}}),
        json!({"tunnel": {"tunnelId": "6ff42ae2-765d-4adf-8112-31c55c1551ef",
                          "tokenRef": {"name": "edge-tunnel"}}}),
        json!({"configApiTokenRef": {"namespace": "default"}}),
    ] {
        let object = object(spec);
        assert!(
            Resource::from_value(object.clone()).is_err(),
            "the model takes {object}"
        );
        assert!(
            violation(config_schema, &object, "").is_some(),
            "the schema takes {object}"
        );
    }
    let class = crd("gatewayclassconfigs.yaml");
    let object = json!({
        "apiVersion": "culvert.dev/v1alpha1",
        "kind": "GatewayClassConfig",
        "metadata": {"name": "culvert"},
        "spec": {"maxDataPlanesPerNamespace": -3},
    });
    assert!(Resource::from_value(object.clone()).is_err());
    assert!(violation(schema(&class), &object, "").is_some());
    for spec in [
        json!({"tunnel": {"tokenRef": {"name": "culvert-tunnel"}}}),
        json!({"tunnel": {"tokenRef": {"namespace": "culvert-system"}}}),
    ] {
        let object = json!({
            "apiVersion": "culvert.dev/v1alpha1",
            "kind": "GatewayClassConfig",
            "metadata": {"name": "culvert"},
            "spec": spec,
        });
        assert!(
            Resource::from_value(object.clone()).is_err(),
            "the model takes {object}"
        );
        assert!(
            violation(schema(&class), &object, "").is_some(),
            "the schema takes {object}"
        );
    }
}

// --- culvert drain against a real culvert serve -----------------------------------

/// Kills the process on drop, so a failing test leaves no `culvert serve` behind.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(args: &[&str]) -> (Reaper, SocketAddr) {
    // Each plane on a loopback address of its own: a port another test (or an
    // outgoing connection) takes on 127.0.0.1 meanwhile cannot be mistaken for it.
    static NEXT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);
    let host = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let control = SocketAddr::from(([127, 0, 78, host], free_port()));
    let child = Command::new(env!("CARGO_BIN_EXE_culvert"))
        .args(["serve", "--workers", "1", "--no-access-log", "--control"])
        .arg(control.to_string())
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reaper = Reaper(child);
    let start = Instant::now();
    while TcpStream::connect(control).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the config API never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (reaper, control)
}

/// Waits for `culvert serve` to exit by itself; its status and stderr.
fn exit_of(mut reaper: Reaper) -> (std::process::ExitStatus, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = reaper.0.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut reaper.0.stderr.take().unwrap(), &mut stderr)
                .unwrap();
            return (status, stderr);
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "culvert serve did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn drain(args: &[&str], token: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_culvert"))
        .arg("drain")
        .args(args)
        .env("CULVERT_TOKEN", token)
        .env_remove("CULVERT_CONTROL")
        .output()
        .unwrap()
}

#[test]
fn drain_over_http_makes_serve_drain_and_exit_zero() {
    let (server, control) = serve(&["--token", "s3cret"]);
    let control = control.to_string();

    let refused = drain(&["--control", &control], "wrong");
    assert!(!refused.status.success());
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(stdout.contains("401"), "{stdout}");

    let dir = temp_dir("drain-http");
    let token_file = dir.join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let accepted = drain(
        &[
            "--control",
            &format!("http://{control}"),
            "--token-file",
            token_file.to_str().unwrap(),
        ],
        "",
    );
    let stdout = String::from_utf8_lossy(&accepted.stdout);
    assert!(
        accepted.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&accepted.stderr)
    );
    assert!(stdout.contains("202"), "{stdout}");
    let (status, stderr) = exit_of(server);
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(stderr.contains("drained"), "{stderr}");
}

#[test]
fn drain_over_https_with_the_installed_certificate_waits_for_the_drain() {
    let documents = install(&["--namespace", "test"]);
    let tls = &find(&documents, "Secret", "culvert-control-tls")["stringData"];
    let dir = temp_dir("drain-https");
    let (certificate, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&certificate, tls["tls.crt"].as_str().unwrap()).unwrap();
    std::fs::write(&key, tls["tls.key"].as_str().unwrap()).unwrap();
    let token = find(&documents, "Secret", "culvert-control-token")["stringData"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (server, control) = serve(&[
        "--token",
        &token,
        "--control-tls-cert",
        certificate.to_str().unwrap(),
        "--control-tls-key",
        key.to_str().unwrap(),
    ]);
    let url = format!("https://{control}");
    let ca = certificate.to_str().unwrap();

    // The certificate is for the control name, not the address.
    let unverified = drain(&["--control", &url, "--ca-file", ca], &token);
    assert!(!unverified.status.success());
    // Verified, but a wrong token: the API answers 401 and nothing drains yet.
    let refused = drain(
        &[
            "--control",
            &url,
            "--ca-file",
            ca,
            "--server-name",
            "culvert-control.test.svc",
            "--timeout",
            "5s",
        ],
        "wrong",
    );
    assert!(!refused.status.success());
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(stdout.contains("401"), "{stdout}");
    // Verified against the certificate and its name, and waiting for the drain.
    let waited = drain(
        &[
            "--control",
            &control.to_string(),
            "--ca-file",
            ca,
            "--server-name",
            "culvert-control.test.svc",
            "--wait",
            "--timeout",
            "20s",
        ],
        &token,
    );
    let stdout = String::from_utf8_lossy(&waited.stdout);
    assert!(
        waited.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&waited.stderr)
    );
    assert!(stdout.contains("202"), "{stdout}");
    assert!(stdout.contains("drained"), "{stdout}");
    let (status, stderr) = exit_of(server);
    assert!(status.success(), "{status:?}: {stderr}");
}
