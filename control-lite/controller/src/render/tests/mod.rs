//! Tests of the rendering: one file per concern, the fixtures here.

mod deployment;
mod json;
mod metadata;
mod names;
mod objects;
mod properties;

use std::collections::BTreeMap;

use culvert_control_lite::model::{
    Autoscaling, GatewayConfigSpec, SecretObjectReference, TunnelConfig,
};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};

use super::{
    GatewayRef, Image, OwnerKind, PlaneSecrets, PlaneSpec, PodPeer, PullPolicy, Rendered, SecretKey,
};

/// A plain Gateway `tenant-a/edge` with an empty GatewayConfig.
fn spec() -> PlaneSpec {
    PlaneSpec {
        gateway: GatewayRef {
            owner: OwnerKind::Gateway,
            namespace: "tenant-a".to_owned(),
            name: "edge".to_owned(),
            uid: "6f1d3c1e-8a53-4c1b-9d0e-1f2a3b4c5d6e".to_owned(),
            class_name: "culvert".to_owned(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
        },
        config: GatewayConfigSpec::default(),
        image: Image {
            name: "ghcr.io/culvert-proxy/culvert:0.1.0".to_owned(),
            pull_policy: PullPolicy::IfNotPresent,
        },
        controller: PodPeer {
            namespace: "culvert-system".to_owned(),
            labels: map(&[("app.kubernetes.io/name", "culvert-controller")]),
        },
        metrics_scrapers: Vec::new(),
        secrets: PlaneSecrets {
            config_token: SecretKey {
                name: "culvert-edge-token".to_owned(),
                key: "token".to_owned(),
            },
            config_tls: "culvert-edge-config-tls-1".to_owned(),
            tunnel_token: None,
            content_hash: "3b1f0c9a".to_owned(),
        },
        tunnel_edges: Vec::new(),
        listener_ports: vec![80, 443],
    }
}

/// [`spec`] with a tunnel, its token Secret and two edges.
fn tunnel_spec() -> PlaneSpec {
    let mut spec = spec();
    spec.config.tunnel = Some(TunnelConfig {
        token_ref: SecretObjectReference {
            group: None,
            kind: None,
            name: "edge-tunnel".to_owned(),
            namespace: None,
        },
    });
    spec.secrets.tunnel_token = Some(SecretKey {
        name: "edge-tunnel".to_owned(),
        key: "tunnel-token".to_owned(),
    });
    spec.tunnel_edges = vec![
        "region1.v2.argotunnel.com:7844".to_owned(),
        "region2.v2.argotunnel.com:7844".to_owned(),
    ];
    spec
}

/// [`spec`] with `replicas: 2` and autoscaling up to 10 at the default target.
fn autoscaling_spec() -> PlaneSpec {
    let mut spec = spec();
    spec.config.replicas = Some(2);
    spec.config.autoscaling = Some(Autoscaling {
        max_replicas: 10,
        target_in_flight: None,
    });
    spec
}

fn render(spec: &PlaneSpec) -> Rendered {
    super::render(spec).expect("the fixture renders")
}

fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn template(rendered: &Rendered) -> &PodTemplateSpec {
    &rendered.deployment.spec.as_ref().unwrap().template
}

fn pod(rendered: &Rendered) -> &PodSpec {
    template(rendered).spec.as_ref().unwrap()
}

fn container(rendered: &Rendered) -> &Container {
    let pod = pod(rendered);
    assert_eq!(pod.containers.len(), 1);
    &pod.containers[0]
}

/// The labels every rendered object of [`spec`] carries.
fn own_labels() -> BTreeMap<String, String> {
    map(&[
        ("app.kubernetes.io/name", "culvert-plane"),
        ("app.kubernetes.io/instance", "edge"),
        ("app.kubernetes.io/component", "data-plane"),
        ("app.kubernetes.io/part-of", "culvert"),
        ("app.kubernetes.io/managed-by", "culvert-controller"),
        ("gateway.networking.k8s.io/gateway-name", "edge"),
        ("gateway.networking.k8s.io/gateway-class-name", "culvert"),
    ])
}

fn selector() -> BTreeMap<String, String> {
    map(&[
        ("app.kubernetes.io/name", "culvert-plane"),
        ("app.kubernetes.io/instance", "edge"),
    ])
}
