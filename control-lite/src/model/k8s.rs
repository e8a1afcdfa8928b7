//! The core Kubernetes objects translation reads: `Namespace`, `Service`,
//! `EndpointSlice`, `Secret` and `ConfigMap`.

use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A `Namespace` (only its labels matter, for `allowedRoutes` selectors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespace {
    /// Metadata.
    pub metadata: ObjectMeta,
}

/// A `Service`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: ServiceSpec,
    /// Status: only its load balancer's addresses are kept (a `LoadBalancer`
    /// Service's address is what a Gateway it fronts reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ServiceStatus>,
}

/// `Service.status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus {
    /// The load balancer in front of it, once one is provisioned.
    #[serde(default)]
    pub load_balancer: LoadBalancerStatus,
}

/// `Service.status.loadBalancer`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancerStatus {
    /// Its addresses.
    #[serde(default)]
    pub ingress: Vec<LoadBalancerIngress>,
}

/// One address of a load balancer: an IP, a host name, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancerIngress {
    /// An IP address.
    #[serde(default)]
    pub ip: Option<String>,
    /// A DNS name.
    #[serde(default)]
    pub hostname: Option<String>,
}

/// `Service.spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// `ClusterIP` (default), `NodePort`, `LoadBalancer` or `ExternalName`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Cluster IP, `None` for headless.
    #[serde(rename = "clusterIP", default)]
    pub cluster_ip: Option<String>,
    /// Ports.
    #[serde(default)]
    pub ports: Vec<ServicePort>,
    /// For `ExternalName`.
    #[serde(default)]
    pub external_name: Option<String>,
}

/// One port of a Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// Port name.
    #[serde(default)]
    pub name: Option<String>,
    /// Service port.
    pub port: i64,
    /// Port (number or name) on the pods.
    #[serde(default)]
    pub target_port: Option<serde_json::Value>,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default)]
    pub protocol: Option<String>,
    /// Application protocol, such as `kubernetes.io/h2c`.
    #[serde(default)]
    pub app_protocol: Option<String>,
}

/// An `EndpointSlice` (discovery.k8s.io/v1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    /// Metadata; label `kubernetes.io/service-name` names the Service.
    pub metadata: ObjectMeta,
    /// `IPv4`, `IPv6` or `FQDN`.
    #[serde(default)]
    pub address_type: Option<String>,
    /// Endpoints.
    #[serde(default)]
    pub endpoints: Vec<Endpoint>,
    /// Ports.
    #[serde(default)]
    pub ports: Vec<EndpointPort>,
}

impl EndpointSlice {
    /// The Service this slice belongs to.
    pub fn service_name(&self) -> Option<&str> {
        self.metadata
            .labels
            .get("kubernetes.io/service-name")
            .map(String::as_str)
    }
}

/// One endpoint of a slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Addresses.
    #[serde(default)]
    pub addresses: Vec<String>,
    /// Readiness.
    #[serde(default)]
    pub conditions: EndpointConditions,
    /// The object behind the endpoint, usually its Pod.
    #[serde(default, rename = "targetRef", skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<EndpointTarget>,
}

/// `Endpoint.targetRef`: the object an endpoint stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointTarget {
    /// Kind, such as `Pod`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Name.
    #[serde(default)]
    pub name: Option<String>,
}

/// `Endpoint.conditions`; absent `ready` means ready.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointConditions {
    /// Ready to receive traffic.
    #[serde(default)]
    pub ready: Option<bool>,
    /// Serving (may be terminating).
    #[serde(default)]
    pub serving: Option<bool>,
    /// Terminating.
    #[serde(default)]
    pub terminating: Option<bool>,
}

/// One port of a slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPort {
    /// Name, matching the Service port name.
    #[serde(default)]
    pub name: Option<String>,
    /// Port on the endpoints.
    #[serde(default)]
    pub port: Option<i64>,
    /// Protocol.
    #[serde(default)]
    pub protocol: Option<String>,
    /// Application protocol.
    #[serde(default)]
    pub app_protocol: Option<String>,
}

/// A `Secret`; `data` values are base64 as Kubernetes stores them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Type, such as `kubernetes.io/tls`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Base64 values.
    #[serde(default)]
    pub data: BTreeMap<String, String>,
    /// Plain-text values (merged into `data` by the API server).
    #[serde(default)]
    pub string_data: BTreeMap<String, String>,
}

/// A `ConfigMap`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Values.
    #[serde(default)]
    pub data: BTreeMap<String, String>,
}
