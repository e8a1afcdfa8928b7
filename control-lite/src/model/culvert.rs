//! Culvert's own kinds (group `culvert.dev`, version `v1alpha1`): `GatewayClassConfig`
//! (cluster-wide policy, named by a GatewayClass's `parametersRef`) and
//! `GatewayConfig` (per-Gateway dedicated data plane, named by a Gateway's
//! `infrastructure.parametersRef`).

use super::gateway::SecretObjectReference;
use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};

/// API group of Culvert's kinds.
pub const GROUP: &str = "culvert.dev";

/// A `GatewayClassConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayClassConfig {
    /// Metadata (cluster-scoped).
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: GatewayClassConfigSpec,
}

/// `GatewayClassConfig.spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayClassConfigSpec {
    /// Whether Gateways in different namespaces may share one tunnel.
    #[serde(default)]
    pub allow_shared_tunnels: bool,
    /// Most dedicated data planes one namespace may have; unlimited when absent.
    #[serde(default)]
    pub max_data_planes_per_namespace: Option<u32>,
    /// Namespace prefixes whose routes win hostname conflicts before age does.
    #[serde(default)]
    pub privileged_namespace_prefixes: Vec<String>,
    /// The tunnel the class's shared data plane serves. It belongs to the operator:
    /// no dedicated Gateway may claim it.
    #[serde(default)]
    pub tunnel: Option<ClassTunnel>,
    /// How `culvert controller` runs the class's shared data plane.
    #[serde(default)]
    pub shared_plane: Option<SharedPlane>,
    /// The Secret holding the Cloudflare API token (key [`TOKEN_KEY`] unless the
    /// reference names another) the controller proves tunnel claims and writes
    /// tunnel ingress and DNS records with, for Gateways whose GatewayConfig names
    /// none and for the class tunnel.
    #[serde(default)]
    pub cloudflare_credentials_secret_ref: Option<SecretKeyReference>,
}

/// The size of a class's shared data plane (`culvert controller`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharedPlane {
    /// Replicas (the minimum when autoscaling); [`DEFAULT_SHARED_REPLICAS`] when
    /// absent.
    #[serde(default)]
    pub replicas: Option<u32>,
    /// Autoscaling on the in-flight requests gauge.
    #[serde(default)]
    pub autoscaling: Option<Autoscaling>,
}

/// Replicas of a shared plane whose class does not say: two, so one pod can roll
/// or fail while the other serves every Gateway of the class.
pub const DEFAULT_SHARED_REPLICAS: u32 = 2;

/// The class's own tunnel, named by its connector token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassTunnel {
    /// The Secret holding the connector token.
    pub token_ref: SecretKeyReference,
}

/// A key of a Secret in a named namespace (a cluster-scoped object's reference).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretKeyReference {
    /// Name of the Secret.
    pub name: String,
    /// Namespace of the Secret.
    pub namespace: String,
    /// Key of the value; [`TOKEN_KEY`] when absent.
    #[serde(default)]
    pub key: Option<String>,
}

/// The Secret key a connector token is read from unless a reference names another.
pub const TOKEN_KEY: &str = "token";

/// The label (any value) that makes a Secret holding a connector token visible to
/// Culvert in a cluster, where other Secrets are watched only of type
/// `kubernetes.io/tls`.
pub const TUNNEL_TOKEN_LABEL: &str = "culvert.dev/tunnel-token";

/// The Gateway annotation that turns on the HTTPS redirect of its HTTP listeners;
/// its value is the status code, `"301"` or `"308"`.
pub const HTTPS_REDIRECT_ANNOTATION: &str = "culvert.dev/https-redirect";

/// A `GatewayConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayConfig {
    /// Metadata (same namespace as the Gateway).
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(default)]
    pub spec: GatewayConfigSpec,
}

/// `GatewayConfig.spec`: a dedicated data plane for one Gateway.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayConfigSpec {
    /// Data-plane replicas (the minimum when autoscaling).
    #[serde(default)]
    pub replicas: Option<u32>,
    /// Autoscaling on the in-flight requests gauge.
    #[serde(default)]
    pub autoscaling: Option<Autoscaling>,
    /// Cloudflare Tunnel this data plane connects.
    #[serde(default)]
    pub tunnel: Option<TunnelConfig>,
    /// Secret holding the bearer token for config pushes; generated when absent.
    #[serde(default)]
    pub config_api_token_ref: Option<SecretObjectReference>,
    /// Secret, in the Gateway's namespace, holding the Cloudflare API token (key
    /// [`TOKEN_KEY`]) that proves this Gateway's tunnel claim and writes its
    /// tunnel's ingress and DNS records; the class's when absent.
    #[serde(default)]
    pub cloudflare_credentials_secret_ref: Option<SecretObjectReference>,
}

/// Autoscaling bounds and target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Autoscaling {
    /// Most replicas.
    pub max_replicas: u32,
    /// Target in-flight requests per replica.
    #[serde(default)]
    pub target_in_flight: Option<u32>,
}

/// A tunnel claim. The tunnel is the one the connector token names (account tag and
/// tunnel UUID): there is deliberately no separate id that could drift from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TunnelConfig {
    /// The Secret, in the Gateway's namespace, whose key [`TOKEN_KEY`] holds the
    /// connector token.
    pub token_ref: SecretObjectReference,
}
