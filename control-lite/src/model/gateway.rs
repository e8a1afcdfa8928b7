//! `GatewayClass` and `Gateway` (gateway.networking.k8s.io, v1 and v1beta1), with
//! the status Culvert writes for them.

use super::meta::{Condition, LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A `GatewayClass`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayClass {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: GatewayClassSpec,
}

/// `GatewayClass.spec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClassSpec {
    /// The controller that owns Gateways of this class.
    pub controller_name: String,
    /// Implementation-specific parameters (Culvert: a `GatewayClassConfig`).
    #[serde(default)]
    pub parameters_ref: Option<ParametersReference>,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
}

/// A reference to a parameters object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParametersReference {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace, for namespaced kinds.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// A `Gateway`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gateway {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: GatewaySpec,
    /// What its stored status advertises, as far as translation reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AdvertisedStatus>,
}

/// The part of a Gateway's stored status translation reads: the addresses it
/// advertises, which is how a tunnel Gateway shows that it already holds its
/// tunnel. Everything else in the stored status is the status writer's business.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvertisedStatus {
    /// `status.addresses`.
    #[serde(default)]
    pub addresses: Vec<GatewayAddress>,
}

/// `Gateway.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// Name of the `GatewayClass`.
    pub gateway_class_name: String,
    /// Listeners.
    #[serde(default)]
    pub listeners: Vec<Listener>,
    /// Requested addresses.
    #[serde(default)]
    pub addresses: Vec<GatewayAddress>,
    /// Labels, annotations and parameters for the infrastructure the Gateway gets.
    #[serde(default)]
    pub infrastructure: Option<Infrastructure>,
    /// Which ListenerSets may attach. Culvert merges none; translation reports
    /// that on the Gateway instead of refusing it.
    #[serde(default)]
    pub allowed_listeners: Option<AllowedListeners>,
    /// Gateway-wide TLS settings: client certificate validation per port, the
    /// client certificate shown to backends.
    #[serde(default)]
    pub tls: Option<GatewayTls>,
    /// Fields this version of Culvert does not know; reported, never ignored.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, serde_json::Value>,
}

/// One listener of a Gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    /// Name, unique within the Gateway.
    pub name: String,
    /// Hostname, exact or `*.suffix`.
    #[serde(default)]
    pub hostname: Option<String>,
    /// Port.
    pub port: i64,
    /// `HTTP`, `HTTPS`, `TLS`, `TCP`, `UDP` or an implementation-specific value.
    pub protocol: String,
    /// TLS settings for `HTTPS` and `TLS`.
    #[serde(default)]
    pub tls: Option<ListenerTls>,
    /// Which routes may attach.
    #[serde(default)]
    pub allowed_routes: Option<AllowedRoutes>,
}

/// `Listener.tls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerTls {
    /// `Terminate` (default) or `Passthrough`.
    #[serde(default)]
    pub mode: Option<String>,
    /// Certificates for `Terminate`.
    #[serde(default)]
    pub certificate_refs: Vec<SecretObjectReference>,
    /// Implementation-specific options.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// A reference to a Secret (or another certificate-holding kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretObjectReference {
    /// API group; `""` (core) when absent.
    #[serde(default)]
    pub group: Option<String>,
    /// Kind; `Secret` when absent.
    #[serde(default)]
    pub kind: Option<String>,
    /// Name.
    pub name: String,
    /// Namespace; the referrer's when absent.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `Listener.allowedRoutes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedRoutes {
    /// Namespaces routes may come from.
    #[serde(default)]
    pub namespaces: Option<RouteNamespaces>,
    /// Route kinds; empty means the kinds the protocol supports.
    #[serde(default)]
    pub kinds: Vec<RouteGroupKind>,
}

/// `Gateway.spec.allowedListeners`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedListeners {
    /// Namespaces ListenerSets may come from.
    #[serde(default)]
    pub namespaces: Option<ListenerNamespaces>,
}

/// `allowedListeners.namespaces`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerNamespaces {
    /// `None` (default), `Same`, `All` or `Selector`.
    #[serde(default)]
    pub from: Option<String>,
    /// For `Selector`.
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

impl AllowedListeners {
    /// Whether ListenerSets from some namespace may attach (`from` is not `None`).
    pub fn admits_any(&self) -> bool {
        self.namespaces
            .as_ref()
            .and_then(|n| n.from.as_deref())
            .is_some_and(|from| from != "None")
    }
}

/// `allowedRoutes.namespaces`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteNamespaces {
    /// `Same` (default), `All` or `Selector`.
    #[serde(default)]
    pub from: Option<String>,
    /// For `Selector`.
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

/// A route group and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RouteGroupKind {
    /// API group; `gateway.networking.k8s.io` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind.
    pub kind: String,
}

/// A requested or assigned address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayAddress {
    /// `IPAddress` (default), `Hostname` or `NamedAddress`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The address; may be absent in a request ("any address of this type").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `Gateway.spec.tls`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayTls {
    /// How clients' certificates are validated.
    #[serde(default)]
    pub frontend: Option<FrontendTls>,
    /// The client certificate the Gateway shows backends over TLS.
    #[serde(default)]
    pub backend: Option<Box<GatewayBackendTls>>,
    /// Fields this version of Culvert does not know; reported, never ignored.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, serde_json::Value>,
}

/// `Gateway.spec.tls.backend`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayBackendTls {
    /// The Secret (`kubernetes.io/tls`) holding the client certificate and key.
    #[serde(default)]
    pub client_certificate_ref: Option<SecretObjectReference>,
    /// Fields this version of Culvert does not know; reported, never ignored.
    #[serde(flatten)]
    pub unknown: BTreeMap<String, serde_json::Value>,
}

/// `Gateway.spec.tls.frontend`: a default for every port, and per-port settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontendTls {
    /// Settings of every port without its own.
    #[serde(default)]
    pub default: Option<FrontendTlsConfig>,
    /// Settings of single ports.
    #[serde(default)]
    pub per_port: Vec<PerPortTls>,
}

/// One port's frontend TLS settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PerPortTls {
    /// The port.
    pub port: i64,
    /// Its settings.
    #[serde(default)]
    pub tls: FrontendTlsConfig,
}

/// Frontend TLS settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontendTlsConfig {
    /// Client certificate validation; none when absent.
    #[serde(default)]
    pub validation: Option<FrontendValidation>,
}

/// `FrontendTLSValidation`: the CAs client certificates must chain to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontendValidation {
    /// ConfigMaps (key `ca.crt`) holding PEM CA certificates.
    #[serde(default)]
    pub ca_certificate_refs: Vec<SecretObjectReference>,
    /// `AllowValidOnly` (default) or `AllowInsecureFallback`.
    #[serde(default)]
    pub mode: Option<String>,
}

/// `Gateway.spec.infrastructure`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Infrastructure {
    /// Labels for generated resources.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Annotations for generated resources.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// Culvert: a `GatewayConfig` in the Gateway's namespace.
    #[serde(default)]
    pub parameters_ref: Option<LocalParametersReference>,
}

/// A same-namespace parameters reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalParametersReference {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
}

/// Status of a `GatewayClass`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayClassStatus {
    /// Conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Status of a `Gateway`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayStatus {
    /// Assigned addresses.
    #[serde(default)]
    pub addresses: Vec<GatewayAddress>,
    /// Conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Per-listener status.
    #[serde(default)]
    pub listeners: Vec<ListenerStatus>,
    /// How many ListenerSets are attached: written (always 0) when ListenerSets
    /// name the Gateway or it admits some, since Culvert merges none.
    #[serde(
        rename = "attachedListenerSets",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub attached_listener_sets: Option<i32>,
}

/// Status of one listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerStatus {
    /// Listener name.
    pub name: String,
    /// Route kinds that may attach.
    pub supported_kinds: Vec<RouteGroupKind>,
    /// Routes attached.
    pub attached_routes: i32,
    /// Conditions.
    pub conditions: Vec<Condition>,
}
