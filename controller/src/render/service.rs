//! The headless Service of the config API: how the controller finds every plane
//! pod to push to. Headless, so each pod is its own endpoint (a push goes to
//! every pod, not to one behind a virtual IP); `publishNotReadyAddresses`, because a
//! pushed plane turns ready only after its first push. Carries the config API port
//! only: requests never reach the plane through this Service. Start at `config_service`.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{CONFIG_API_PORT, CONFIG_API_PORT_NAME, Plane};

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
