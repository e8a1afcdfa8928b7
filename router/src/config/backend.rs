//! Raw backend types: weighted backends with resolved endpoints.

use super::HttpFilterConfig;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// One weighted backend of a rule, with its endpoints already resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackendConfig {
    /// Display name, such as `namespace/service:port`; used in logs and metrics.
    pub name: String,
    /// Relative weight; 0 means the backend never receives traffic.
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Ready endpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<SocketAddr>,
    /// Protocol spoken to the endpoints.
    #[serde(default)]
    pub app_protocol: AppProtocol,
    /// Filters applied only when this backend is chosen (header modifiers only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<HttpFilterConfig>,
    /// Why the backend cannot be used; its share of traffic gets an error status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<Unavailable>,
    /// TLS to the endpoints (Gateway API BackendTLSPolicy); clear text when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<BackendTlsConfig>,
}

/// How the data plane speaks TLS to a backend's endpoints.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackendTlsConfig {
    /// The SNI sent, and the name the certificate must carry unless
    /// `subjectAltNames` says otherwise.
    pub hostname: String,
    /// PEM CA certificates the endpoints' certificates must chain to; the system's
    /// roots when absent (`wellKnownCACertificates: System`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificates_pem: Option<String>,
    /// DNS names of which the certificate must carry one, in place of `hostname`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subject_alt_names: Vec<String>,
    /// The client certificate shown to the endpoints (Gateway
    /// `spec.tls.backend.clientCertificateRef`): PEM chain and key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<BackendClientCertificate>,
}

/// A client certificate for backends, as PEM.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackendClientCertificate {
    /// PEM chain, leaf first.
    pub certificate_pem: String,
    /// PEM private key.
    pub private_key_pem: String,
}

fn default_weight() -> u32 {
    1
}

/// The protocol a backend speaks, from the Service port's `appProtocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum AppProtocol {
    /// HTTP/1.1 (and whatever the client upgrades to).
    #[default]
    #[serde(rename = "http")]
    Http1,
    /// Clear-text HTTP/2 with prior knowledge (`kubernetes.io/h2c`).
    #[serde(rename = "kubernetes.io/h2c")]
    H2c,
    /// HTTP/1.1 with WebSocket upgrades (`kubernetes.io/ws`).
    #[serde(rename = "kubernetes.io/ws")]
    WebSocket,
}

/// Why a backend cannot serve its share of traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Unavailable {
    /// The reference is invalid (missing, not permitted, wrong kind): answer 500.
    InvalidReference,
    /// The reference is valid but has no ready endpoints: answer 503.
    NoEndpoints,
}
