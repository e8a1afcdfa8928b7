//! The `infrastructureMetadataPropagated` status check. Culvert makes per-Gateway
//! Kubernetes objects only for dedicated data planes, which `culvert controller`
//! renders (`culvert_controller::render`). The check renders the plane the
//! controller would make for the Gateway (with a default GatewayConfig, since the
//! vector names none) and requires every object selected by the label
//! `gateway.networking.k8s.io/gateway-name=<gateway>`, the pod template included,
//! to carry all of the Gateway's `spec.infrastructure` labels and annotations.

use std::collections::BTreeMap;

use culvert_control_lite::model::GatewayConfigSpec;
use culvert_control_lite::store::Store;
use culvert_controller::render::{
    self, GatewayRef, Image, PlaneSecrets, PlaneSpec, PodPeer, PullPolicy, SecretKey, label,
};
use serde_json::Value;

/// `Ok` when the rendered plane of Gateway `namespace/name` carries its
/// infrastructure metadata everywhere; `Err` says what is missing where.
pub fn propagated(store: &Store, namespace: &str, name: &str) -> Result<(), String> {
    let gateway = store
        .gateways
        .get(&(namespace.to_owned(), name.to_owned()))
        .ok_or_else(|| format!("Gateway {namespace}/{name} not found"))?;
    let mut reference = GatewayRef::from_gateway(gateway);
    if reference.uid.is_empty() {
        // Files carry no UIDs; an API server would have set one.
        reference.uid = format!("uid-of-{namespace}-{name}");
    }
    let wanted_labels = reference.labels.clone();
    let wanted_annotations = reference.annotations.clone();
    let spec = PlaneSpec {
        gateway: reference,
        config: GatewayConfigSpec::default(),
        image: Image {
            name: "culvert:conformance".to_owned(),
            pull_policy: PullPolicy::IfNotPresent,
        },
        controller: PodPeer {
            namespace: "culvert-system".to_owned(),
            labels: BTreeMap::from([(
                "app.kubernetes.io/name".to_owned(),
                "culvert-controller".to_owned(),
            )]),
        },
        metrics_scrapers: Vec::new(),
        secrets: PlaneSecrets {
            config_token: SecretKey {
                name: "token".to_owned(),
                key: "token".to_owned(),
            },
            config_tls: "tls".to_owned(),
            tunnel_token: None,
            content_hash: "0".to_owned(),
        },
        tunnel_edges: Vec::new(),
        listener_ports: gateway
            .spec
            .listeners
            .iter()
            .filter_map(|l| u16::try_from(l.port).ok())
            .collect(),
    };
    let rendered = render::render(&spec).map_err(|e| format!("rendering the plane: {e}"))?;
    let documents = rendered
        .apply_documents()
        .map_err(|e| format!("rendering the plane: {e}"))?;
    let mut selected = Vec::new();
    for document in &documents {
        let kind = document["kind"].as_str().unwrap_or("?").to_owned();
        selected.push((kind.clone(), &document["metadata"]));
        if let Some(template) = document["spec"]["template"].get("metadata") {
            selected.push((format!("{kind} pod template"), template));
        }
    }
    let mut problems = Vec::new();
    let mut matched = 0;
    for (what, metadata) in selected {
        if metadata["labels"][label::GATEWAY_NAME].as_str() != Some(name) {
            continue;
        }
        matched += 1;
        for (field, wanted) in [
            ("labels", &wanted_labels),
            ("annotations", &wanted_annotations),
        ] {
            for (key, value) in wanted {
                if metadata[field][key] != Value::String(value.clone()) {
                    problems.push(format!("{what} lacks {field} {key}={value}"));
                }
            }
        }
    }
    if matched == 0 {
        problems.push(format!(
            "no rendered object carries {}={name}",
            label::GATEWAY_NAME
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
