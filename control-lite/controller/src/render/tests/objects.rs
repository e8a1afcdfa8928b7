//! The Service, NetworkPolicy, PodDisruptionBudget and HorizontalPodAutoscaler,
//! field by field.

use k8s_openapi::api::networking::v1::NetworkPolicyPort;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{autoscaling_spec, map, own_labels, render, selector, spec, tunnel_spec};
use crate::Error;
use crate::render::{PodPeer, Rendered};
use culvert_control_lite::model::Autoscaling;

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "gateway.networking.k8s.io/v1".to_owned(),
        kind: "Gateway".to_owned(),
        name: "edge".to_owned(),
        uid: "6f1d3c1e-8a53-4c1b-9d0e-1f2a3b4c5d6e".to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn all_metadata(rendered: &Rendered) -> Vec<&ObjectMeta> {
    let mut all = vec![
        &rendered.deployment.metadata,
        &rendered.config_service.metadata,
        &rendered.network_policy.metadata,
        &rendered.disruption_budget.metadata,
    ];
    if let Some(hpa) = &rendered.autoscaler {
        all.push(&hpa.metadata);
    }
    all
}

#[test]
fn every_object_is_owned_by_the_gateway_in_its_namespace() {
    let rendered = render(&autoscaling_spec());
    let all = all_metadata(&rendered);
    assert_eq!(all.len(), 5);
    for meta in all {
        assert_eq!(meta.namespace.as_deref(), Some("tenant-a"));
        assert_eq!(meta.owner_references, Some(vec![owner()]));
        assert_eq!(meta.labels.as_ref(), Some(&own_labels()));
        assert_eq!(meta.annotations, None);
        assert_eq!(meta.resource_version, None);
        assert_eq!(meta.uid, None);
    }
}

#[test]
fn a_plane_without_a_tunnel_gets_a_load_balancer_on_its_listener_ports() {
    let rendered = render(&spec());
    let service = rendered.data_service.as_ref().unwrap();
    assert_eq!(service.metadata.name.as_deref(), Some("culvert-edge"));
    assert_eq!(service.metadata.namespace.as_deref(), Some("tenant-a"));
    let spec = service.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Local"));
    assert_eq!(spec.selector.as_ref(), Some(&selector()));
    assert_eq!(spec.publish_not_ready_addresses, None, "ready pods only");
    let ports: Vec<String> = spec
        .ports
        .iter()
        .flatten()
        .map(|p| {
            format!(
                "{} {} -> {:?} {}",
                p.name.as_deref().unwrap_or_default(),
                p.port,
                p.target_port,
                p.protocol.as_deref().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        ports,
        [
            "tcp-80 80 -> Some(Int(80)) TCP",
            "tcp-443 443 -> Some(Int(443)) TCP"
        ]
    );
    assert!(render(&tunnel_spec()).data_service.is_none());
    let mut no_listeners = super::spec();
    no_listeners.listener_ports.clear();
    assert!(render(&no_listeners).data_service.is_none());
}

#[test]
fn config_service_is_headless_and_publishes_unready_pods() {
    let rendered = render(&spec());
    let service = &rendered.config_service;
    assert_eq!(
        service.metadata.name.as_deref(),
        Some("culvert-edge-config")
    );
    let spec = service.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    assert_eq!(spec.selector.as_ref(), Some(&selector()));
    let ports = spec.ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name.as_deref(), Some("control"));
    assert_eq!(ports[0].port, 8081);
    assert_eq!(
        ports[0].target_port,
        Some(IntOrString::String("control".to_owned()))
    );
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
    assert_eq!(ports[0].app_protocol.as_deref(), Some("https"));
    assert_eq!(service.status, None);
}

fn port(protocol: &str, port: i32, end: Option<i32>) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some(protocol.to_owned()),
        port: Some(IntOrString::Int(port)),
        end_port: end,
    }
}

#[test]
fn network_policy_admits_only_the_controller_to_the_config_port() {
    let rendered = render(&spec());
    let policy = &rendered.network_policy;
    assert_eq!(policy.metadata.name.as_deref(), Some("culvert-edge"));
    let spec = policy.spec.as_ref().unwrap();
    let selected = spec.pod_selector.as_ref().unwrap();
    assert_eq!(selected.match_labels.as_ref(), Some(&selector()));
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_owned()]));
    assert_eq!(spec.egress, None);
    let ingress = spec.ingress.as_ref().unwrap();
    assert_eq!(ingress.len(), 2);

    let config = &ingress[0];
    assert_eq!(config.ports, Some(vec![port("TCP", 8081, None)]));
    let from = config.from.as_ref().unwrap();
    assert_eq!(from.len(), 1);
    // Namespace and pods in ONE peer: ANDed, not ORed.
    let namespace = from[0].namespace_selector.as_ref().unwrap();
    assert_eq!(
        namespace.match_labels.as_ref(),
        Some(&map(&[("kubernetes.io/metadata.name", "culvert-system")]))
    );
    let pods = from[0].pod_selector.as_ref().unwrap();
    assert_eq!(
        pods.match_labels.as_ref(),
        Some(&map(&[("app.kubernetes.io/name", "culvert-controller")]))
    );
    assert_eq!(from[0].ip_block, None);

    let data = &ingress[1];
    assert_eq!(data.from, None);
    assert_eq!(
        data.ports,
        Some(vec![
            port("TCP", 1, Some(8080)),
            port("TCP", 8082, Some(65535)),
            port("UDP", 1, Some(65535)),
        ])
    );
}

#[test]
fn network_policy_admits_named_metrics_scrapers() {
    let mut spec = spec();
    spec.metrics_scrapers = vec![PodPeer {
        namespace: "monitoring".to_owned(),
        labels: map(&[("app.kubernetes.io/name", "prometheus")]),
    }];
    let rendered = render(&spec);
    let ingress = rendered.network_policy.spec.unwrap().ingress.unwrap();
    let from = ingress[0].from.as_ref().unwrap();
    assert_eq!(from.len(), 2);
    assert_eq!(
        from[1].namespace_selector.as_ref().unwrap().match_labels,
        Some(map(&[("kubernetes.io/metadata.name", "monitoring")]))
    );
}

#[test]
fn network_policy_refuses_a_selector_that_admits_too_much() {
    let mut spec = spec();
    spec.controller.labels.clear();
    assert_eq!(
        crate::render::render(&spec),
        Err(Error::EmptyControllerSelector)
    );

    let mut spec = super::spec();
    spec.controller.namespace.clear();
    assert!(matches!(
        crate::render::render(&spec),
        Err(Error::ControllerLabel { .. })
    ));

    let mut spec = super::spec();
    spec.controller.labels = map(&[("app", "bad value!")]);
    assert!(matches!(
        crate::render::render(&spec),
        Err(Error::ControllerLabel { key, .. }) if key == "app"
    ));
}

#[test]
fn disruption_budget_allows_one_pod_down() {
    for spec in [spec(), tunnel_spec(), autoscaling_spec()] {
        let rendered = render(&spec);
        let budget = &rendered.disruption_budget;
        assert_eq!(budget.metadata.name.as_deref(), Some("culvert-edge"));
        let spec = budget.spec.as_ref().unwrap();
        assert_eq!(spec.max_unavailable, Some(IntOrString::Int(1)));
        assert_eq!(spec.min_available, None);
        assert_eq!(
            spec.selector.as_ref().unwrap().match_labels.as_ref(),
            Some(&selector())
        );
        assert_eq!(
            spec.unhealthy_pod_eviction_policy.as_deref(),
            Some("AlwaysAllow")
        );
    }
}

#[test]
fn no_autoscaler_without_autoscaling() {
    assert_eq!(render(&spec()).autoscaler, None);
    assert_eq!(render(&tunnel_spec()).autoscaler, None);
}

#[test]
fn autoscaler_scales_the_deployment_on_in_flight_requests() {
    let rendered = render(&autoscaling_spec());
    let hpa = rendered.autoscaler.as_ref().unwrap();
    assert_eq!(hpa.metadata.name.as_deref(), Some("culvert-edge"));
    let spec = hpa.spec.as_ref().unwrap();
    assert_eq!(
        spec.scale_target_ref.api_version.as_deref(),
        Some("apps/v1")
    );
    assert_eq!(spec.scale_target_ref.kind, "Deployment");
    assert_eq!(spec.scale_target_ref.name, "culvert-edge");
    assert_eq!(spec.min_replicas, Some(2));
    assert_eq!(spec.max_replicas, 10);
    assert_eq!(spec.behavior, None);
    let metrics = spec.metrics.as_ref().unwrap();
    assert_eq!(metrics.len(), 1);
    assert_eq!(metrics[0].type_, "Pods");
    assert_eq!(metrics[0].resource, None);
    let pods = metrics[0].pods.as_ref().unwrap();
    assert_eq!(pods.metric.name, "culvert_requests_in_flight");
    assert_eq!(pods.metric.selector, None);
    assert_eq!(pods.target.type_, "AverageValue");
    assert_eq!(pods.target.average_value, Some(Quantity("50".to_owned())));
    assert_eq!(pods.target.average_utilization, None);
    assert_eq!(pods.target.value, None);
}

#[test]
fn autoscaler_target_and_default_minimum() {
    let mut spec = spec();
    spec.config.autoscaling = Some(Autoscaling {
        max_replicas: 1,
        target_in_flight: Some(200),
    });
    let rendered = render(&spec);
    let hpa = rendered.autoscaler.unwrap().spec.unwrap();
    assert_eq!(hpa.min_replicas, Some(1));
    assert_eq!(hpa.max_replicas, 1);
    let metrics = hpa.metrics.unwrap();
    let target = &metrics[0].pods.as_ref().unwrap().target;
    assert_eq!(target.average_value, Some(Quantity("200".to_owned())));
}

#[test]
fn autoscaler_bounds_are_checked() {
    let refused = |replicas: Option<u32>, max: u32, target: Option<u32>| {
        let mut spec = spec();
        spec.config.replicas = replicas;
        spec.config.autoscaling = Some(Autoscaling {
            max_replicas: max,
            target_in_flight: target,
        });
        crate::render::render(&spec).err()
    };
    assert_eq!(
        refused(Some(3), 2, None),
        Some(Error::AutoscalingBounds { min: 3, max: 2 })
    );
    assert_eq!(
        refused(None, 0, None),
        Some(Error::AutoscalingBounds { min: 1, max: 0 })
    );
    assert_eq!(refused(Some(0), 5, None), Some(Error::AutoscalingFromZero));
    assert_eq!(
        refused(Some(2), 2, Some(0)),
        Some(Error::AutoscalingTarget(0))
    );
    assert_eq!(
        refused(Some(2), 2, Some(u32::MAX)),
        Some(Error::AutoscalingTarget(u32::MAX))
    );
    assert_eq!(
        refused(Some(2), u32::MAX, None),
        Some(Error::TooManyReplicas(u32::MAX))
    );
    assert_eq!(refused(Some(2), 2, None), None);
}
