//! The plane's NetworkPolicy: the config API port admits only the controller's
//! pods, every other port stays open.
//!
//! The config API takes configuration (with certificates and keys) and drains the
//! plane, so its port admits only pods that match both the controller's namespace
//! (`kubernetes.io/metadata.name`, which the API server sets and no tenant can
//! forge) and the controller's pod labels, in one peer, so the two are ANDed. Pods
//! in the Gateway's own namespace get no exception. `/metrics` shares that port,
//! so a Prometheus feeding the autoscaler must be named in
//! [`PlaneSpec::metrics_scrapers`](super::PlaneSpec::metrics_scrapers).
//!
//! A policy that selects a pod denies every ingress it does not allow, so the data
//! ports are opened explicitly: TCP 1–8080 and 8082–65535, all of UDP (HTTP/3),
//! from anywhere. The ranges use `endPort` (stable since Kubernetes 1.25); a
//! network plugin that ignores it opens only the first port of each range. Start
//! at `network_policy`.

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::labels::{check_key, check_label_value};
use super::{CONFIG_API_PORT, Plane, PodPeer};
use crate::Error;

/// The label the API server puts on every Namespace, holding its name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The NetworkPolicy.
pub(super) fn network_policy(plane: &Plane<'_>) -> Result<NetworkPolicy, Error> {
    let controller = &plane.spec.controller;
    if controller.labels.is_empty() {
        return Err(Error::EmptyControllerSelector);
    }
    let mut admitted = vec![peer(controller)?];
    for scraper in &plane.spec.metrics_scrapers {
        admitted.push(peer(scraper)?);
    }
    Ok(NetworkPolicy {
        metadata: plane.metadata(&plane.names.workload),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(plane.pod_selector()),
            policy_types: Some(vec!["Ingress".to_owned()]),
            ingress: Some(vec![
                NetworkPolicyIngressRule {
                    from: Some(admitted),
                    ports: Some(vec![port("TCP", CONFIG_API_PORT, None)]),
                },
                // No `from`: any source.
                NetworkPolicyIngressRule {
                    from: None,
                    ports: Some(vec![
                        port("TCP", 1, Some(CONFIG_API_PORT - 1)),
                        port("TCP", CONFIG_API_PORT + 1, Some(65535)),
                        port("UDP", 1, Some(65535)),
                    ]),
                },
            ]),
            ..NetworkPolicySpec::default()
        }),
    })
}

/// Pods with `peer.labels` in the namespace `peer.namespace`, both in one peer.
fn peer(peer: &PodPeer) -> Result<NetworkPolicyPeer, Error> {
    check_label(NAMESPACE_NAME_LABEL, &peer.namespace)?;
    if peer.namespace.is_empty() {
        return Err(Error::ControllerLabel {
            key: NAMESPACE_NAME_LABEL.to_owned(),
            reason: "the namespace is empty".to_owned(),
        });
    }
    for (key, value) in &peer.labels {
        check_label(key, value)?;
    }
    Ok(NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector {
            match_labels: Some([(NAMESPACE_NAME_LABEL.to_owned(), peer.namespace.clone())].into()),
            match_expressions: None,
        }),
        pod_selector: Some(LabelSelector {
            match_labels: Some(peer.labels.clone()),
            match_expressions: None,
        }),
        ip_block: None,
    })
}

fn check_label(key: &str, value: &str) -> Result<(), Error> {
    check_key(key)
        .and_then(|()| check_label_value(value))
        .map_err(|reason| Error::ControllerLabel {
            key: key.to_owned(),
            reason: reason.to_owned(),
        })
}

fn port(protocol: &str, port: i32, end: Option<i32>) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some(protocol.to_owned()),
        port: Some(IntOrString::Int(port)),
        end_port: end,
    }
}
