//! A plane's Services.
//!
//! - The headless Service of the config API: how the controller finds every plane
//!   pod to push to. Headless, so each pod is its own endpoint (a push goes to
//!   every pod, not to one behind a virtual IP); `publishNotReadyAddresses`,
//!   because a pushed plane turns ready only after its first push. Carries the
//!   config API port only. Start at `config_service`.
//! - For a plane without a tunnel, the data Service clients reach it through: a
//!   `LoadBalancer` with one TCP port per listener port the plane serves, only
//!   ready pods behind it, `externalTrafficPolicy: Local` so the proxy sees the
//!   client's address. Its load balancer's address is what the plane's Gateways
//!   report. Start at `data_service`.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{CONFIG_API_PORT, CONFIG_API_PORT_NAME, Plane};

/// The data Service, when the plane has listener ports and no tunnel.
pub(super) fn data_service(plane: &Plane<'_>) -> Option<Service> {
    if plane.has_tunnel() || plane.spec.listener_ports.is_empty() {
        return None;
    }
    let ports = plane
        .spec
        .listener_ports
        .iter()
        .map(|&port| ServicePort {
            name: Some(format!("tcp-{port}")),
            port: i32::from(port),
            target_port: Some(IntOrString::Int(i32::from(port))),
            protocol: Some("TCP".to_owned()),
            ..ServicePort::default()
        })
        .collect();
    Some(Service {
        metadata: plane.metadata(&plane.names.workload),
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".to_owned()),
            external_traffic_policy: Some("Local".to_owned()),
            selector: Some(plane.selector.clone()),
            ports: Some(ports),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// The headless config Service.
pub(super) fn config_service(plane: &Plane<'_>) -> Service {
    Service {
        metadata: plane.metadata(&plane.names.config_service),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            cluster_ip: Some("None".to_owned()),
            publish_not_ready_addresses: Some(true),
            selector: Some(plane.selector.clone()),
            ports: Some(vec![ServicePort {
                name: Some(CONFIG_API_PORT_NAME.to_owned()),
                port: CONFIG_API_PORT,
                target_port: Some(IntOrString::String(CONFIG_API_PORT_NAME.to_owned())),
                protocol: Some("TCP".to_owned()),
                app_protocol: Some("https".to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
