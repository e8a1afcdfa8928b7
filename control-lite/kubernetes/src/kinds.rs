//! The kinds the Kubernetes source watches: where each lives in the API, and which
//! of its objects are worth holding in memory.

use kube::api::ApiResource;

/// One watched kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchedKind {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Version served and read.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name in URLs.
    pub plural: &'static str,
    /// Names this watch among the watches of one kind (Secrets are watched twice).
    pub id: &'static str,
    /// A field selector narrowing the watch, so objects Culvert never reads are not
    /// held (Secrets: only TLS ones).
    pub field_selector: Option<&'static str>,
    /// A label selector narrowing the watch (Secrets: connector tokens, labelled).
    pub label_selector: Option<&'static str>,
    /// Whether Culvert writes this kind's `status`.
    pub has_status: bool,
}

impl WatchedKind {
    /// `apiVersion` as objects carry it.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kube-rs description of the kind, for a dynamic `Api`.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            api_version: self.api_version(),
            kind: self.kind.to_owned(),
            plural: self.plural.to_owned(),
        }
    }
}

const GATEWAY_API: &str = "gateway.networking.k8s.io";

pub use culvert_control_lite::model::TUNNEL_TOKEN_LABEL;

const fn kind(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
) -> WatchedKind {
    WatchedKind {
        group,
        version,
        kind,
        plural,
        id: plural,
        field_selector: None,
        label_selector: None,
        has_status: false,
    }
}

const fn with_status(mut watched: WatchedKind) -> WatchedKind {
    watched.has_status = true;
    watched
}

/// Every kind translation reads, at the versions Gateway API v1.5 and v1.6 both
/// serve (`v1` throughout the Gateway API group). ConfigMaps hold the CA bundles
/// of client certificate validation (Gateway `spec.tls.frontend`); Secrets are
/// watched only of type `kubernetes.io/tls`, the only type a listener's
/// `certificateRefs` may name.
///
/// TCPRoute, UDPRoute and ListenerSet are watched only so that translation can
/// refuse them in their status. TCPRoute and UDPRoute are `v1` from Gateway API
/// v1.6 on; with older CRDs (or none) the list answers 404 and the kind counts as
/// listed and empty, like any CRD that is not installed.
pub const WATCHED: &[WatchedKind] = &[
    with_status(kind(GATEWAY_API, "v1", "GatewayClass", "gatewayclasses")),
    with_status(kind(GATEWAY_API, "v1", "Gateway", "gateways")),
    with_status(kind(GATEWAY_API, "v1", "HTTPRoute", "httproutes")),
    with_status(kind(GATEWAY_API, "v1", "GRPCRoute", "grpcroutes")),
    with_status(kind(GATEWAY_API, "v1", "TLSRoute", "tlsroutes")),
    with_status(kind(GATEWAY_API, "v1", "TCPRoute", "tcproutes")),
    with_status(kind(GATEWAY_API, "v1", "UDPRoute", "udproutes")),
    with_status(kind(GATEWAY_API, "v1", "ListenerSet", "listenersets")),
    with_status(kind(
        GATEWAY_API,
        "v1",
        "BackendTLSPolicy",
        "backendtlspolicies",
    )),
    kind(GATEWAY_API, "v1", "ReferenceGrant", "referencegrants"),
    kind("", "v1", "Namespace", "namespaces"),
    kind("", "v1", "Service", "services"),
    kind("", "v1", "ConfigMap", "configmaps"),
    kind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"),
    WatchedKind {
        field_selector: Some("type=kubernetes.io/tls"),
        ..kind("", "v1", "Secret", "secrets")
    },
    WatchedKind {
        id: "secrets/tunnel-tokens",
        label_selector: Some(TUNNEL_TOKEN_LABEL),
        ..kind("", "v1", "Secret", "secrets")
    },
    kind(
        "culvert.dev",
        "v1alpha1",
        "GatewayClassConfig",
        "gatewayclassconfigs",
    ),
    kind("culvert.dev", "v1alpha1", "GatewayConfig", "gatewayconfigs"),
];

/// The watched kind named `kind`.
pub fn by_kind(kind: &str) -> Option<&'static WatchedKind> {
    WATCHED.iter().find(|w| w.kind == kind)
}
