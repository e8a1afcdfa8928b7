//! Raw TLS passthrough route types.

use super::BackendConfig;
use serde::{Deserialize, Serialize};

/// A TLS passthrough route (Gateway API `TLSRoute`): SNI hostnames to backends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsRouteConfig {
    /// Namespace of the route object.
    #[serde(default)]
    pub namespace: String,
    /// Name of the route object.
    pub name: String,
    /// RFC 3339 creation time; older routes win precedence ties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// `TLS` listener names this route is attached to.
    pub listeners: Vec<String>,
    /// SNI hostnames, exact or `*.suffix`; empty means the listener's hostname.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// Weighted backends that receive the raw TLS stream.
    #[serde(default)]
    pub backends: Vec<BackendConfig>,
}
