//! Raw HTTP route types: routes, rules, matches, timeouts and retries.

use super::{BackendConfig, HttpFilterConfig};
use serde::{Deserialize, Serialize};

/// An HTTP route (Gateway API `HTTPRoute`) attached to one or more listeners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpRouteConfig {
    /// Namespace of the route object.
    #[serde(default)]
    pub namespace: String,
    /// Name of the route object; used as the metrics label.
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
    pub rules: Vec<HttpRuleConfig>,
}

/// One rule of an HTTP route.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpRuleConfig {
    /// Optional rule name (Gateway API `sectionName` of a rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Matches, ORed; empty means one match of `PathPrefix /`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<HttpMatchConfig>,
    /// Filters applied to every request this rule matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<HttpFilterConfig>,
    /// Weighted backends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendConfig>,
    /// Request and backend timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<TimeoutsConfig>,
    /// Retry policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryConfig>,
}

/// One match of an HTTP rule: every condition given must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpMatchConfig {
    /// Path condition; absent means `PathPrefix /`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathMatchConfig>,
    /// Header conditions, all of which must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HeaderMatchConfig>,
    /// Query parameter conditions, all of which must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_params: Vec<QueryParamMatchConfig>,
    /// HTTP method, such as `GET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// A path condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathMatchConfig {
    /// How `value` is compared with the request path.
    #[serde(rename = "type", default)]
    pub kind: PathMatchType,
    /// The path, prefix or regular expression.
    #[serde(default = "root_path")]
    pub value: String,
}

fn root_path() -> String {
    "/".to_owned()
}

/// How a path condition compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PathMatchType {
    /// The whole path equals the value.
    Exact,
    /// The path starts with the value at a segment boundary.
    #[default]
    PathPrefix,
    /// The whole path matches the regular expression.
    RegularExpression,
}

/// How a header or query parameter value is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum StringMatchType {
    /// Byte-for-byte equality.
    #[default]
    Exact,
    /// The whole value matches the regular expression.
    RegularExpression,
}

/// A header condition. Names compare case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderMatchConfig {
    /// How `value` is compared.
    #[serde(rename = "type", default)]
    pub kind: StringMatchType,
    /// Header name.
    pub name: String,
    /// Expected value or regular expression.
    pub value: String,
}

/// A query parameter condition. Names compare case-sensitively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryParamMatchConfig {
    /// How `value` is compared.
    #[serde(rename = "type", default)]
    pub kind: StringMatchType,
    /// Parameter name.
    pub name: String,
    /// Expected value or regular expression.
    pub value: String,
}

/// Timeouts of a rule, as Gateway API durations (`"10s"`, `"500ms"`, `"1m30s"`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimeoutsConfig {
    /// Whole request, from the first byte received to the last byte of the response
    /// headers, retries included. `"0s"` disables it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// One attempt to a backend. `"0s"` disables it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_request: Option<String>,
}

/// Retry policy of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryConfig {
    /// Retries after the first attempt.
    #[serde(default)]
    pub attempts: u32,
    /// Backend status codes that are retried (500-599). Connection errors always are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<u16>,
    /// Wait between attempts, as a Gateway API duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<String>,
}
