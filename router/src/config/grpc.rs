//! Raw gRPC route types.

use super::{BackendConfig, HeaderMatchConfig, HttpFilterConfig, StringMatchType};
use serde::{Deserialize, Serialize};

/// A gRPC route (Gateway API `GRPCRoute`) attached to one or more listeners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrpcRouteConfig {
    /// Namespace of the route object.
    #[serde(default)]
    pub namespace: String,
    /// Name of the route object.
    pub name: String,
    /// RFC 3339 creation time; older routes win precedence ties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// Listener names this route is attached to.
    pub listeners: Vec<String>,
    /// Hostnames, exact or `*.suffix`; empty means the listener's hostname.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// Rules, in the order the route lists them.
    #[serde(default)]
    pub rules: Vec<GrpcRuleConfig>,
}

/// One rule of a gRPC route.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrpcRuleConfig {
    /// Optional rule name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Matches, ORed; empty matches every gRPC call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<GrpcMatchConfig>,
    /// Filters (header modifiers and mirrors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<HttpFilterConfig>,
    /// Weighted backends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendConfig>,
}

/// One match of a gRPC rule.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrpcMatchConfig {
    /// Service and method condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<GrpcMethodMatchConfig>,
    /// Metadata (header) conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderMatchConfig>,
}

/// A gRPC service/method condition; at least one of the two must be given.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcMethodMatchConfig {
    /// How service and method compare.
    #[serde(rename = "type", default)]
    pub kind: StringMatchType,
    /// Fully qualified service name, such as `pkg.Service`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Method name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}
