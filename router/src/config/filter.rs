//! Raw filter types, shaped like Gateway API filters: a `type` plus one field named
//! after it (`{"type": "RequestRedirect", "requestRedirect": {...}}`).

use super::BackendConfig;
use serde::{Deserialize, Serialize};

/// A filter of a rule or of one backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum HttpFilterConfig {
    /// Edit request headers before forwarding.
    RequestHeaderModifier {
        /// The edits.
        request_header_modifier: HeaderModifierConfig,
    },
    /// Edit response headers before answering the client.
    ResponseHeaderModifier {
        /// The edits.
        response_header_modifier: HeaderModifierConfig,
    },
    /// Answer with a redirect instead of forwarding.
    RequestRedirect {
        /// Where to redirect.
        request_redirect: RequestRedirectConfig,
    },
    /// Rewrite host and path before forwarding.
    #[serde(rename = "URLRewrite")]
    UrlRewrite {
        /// The rewrite.
        url_rewrite: UrlRewriteConfig,
    },
    /// Send a copy of the request to another backend; its answer is discarded.
    RequestMirror {
        /// The mirror.
        request_mirror: RequestMirrorConfig,
    },
    /// Cross-origin resource sharing, preflight answered by the proxy.
    #[serde(rename = "CORS")]
    Cors {
        /// The policy.
        cors: CorsConfig,
    },
}

/// Header edits: `set` replaces, `add` appends, `remove` deletes. Names compare
/// case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderModifierConfig {
    /// Headers to set, replacing any existing values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<HeaderValueConfig>,
    /// Headers to add, keeping existing values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<HeaderValueConfig>,
    /// Header names to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

/// A header name and value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderValueConfig {
    /// Header name.
    pub name: String,
    /// Header value.
    pub value: String,
}

/// A redirect. Every absent part keeps the request's own.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestRedirectConfig {
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Hostname of the `Location`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Path of the `Location`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathModifierConfig>,
    /// Port of the `Location`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// 301, 302 (default), 303, 307 or 308.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
}

/// A path change, for redirects and rewrites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum PathModifierConfig {
    /// Replace the whole path.
    ReplaceFullPath {
        /// The new path.
        replace_full_path: String,
    },
    /// Replace the part matched by the rule's `PathPrefix`.
    ReplacePrefixMatch {
        /// The new prefix.
        replace_prefix_match: String,
    },
}

/// A rewrite of host and path before forwarding.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlRewriteConfig {
    /// New `Host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// New path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathModifierConfig>,
}

/// A request mirror. Without `percent` or `fraction`, every request is mirrored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestMirrorConfig {
    /// Where copies go.
    pub backend: BackendConfig,
    /// Share of requests mirrored, 0-100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<u32>,
    /// Share of requests mirrored, as a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<FractionConfig>,
}

/// A fraction `numerator / denominator`, with `numerator <= denominator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FractionConfig {
    /// Numerator.
    pub numerator: u32,
    /// Denominator; 100 when absent.
    #[serde(default = "hundred")]
    pub denominator: u32,
}

fn hundred() -> u32 {
    100
}

/// A CORS policy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CorsConfig {
    /// Allowed origins: `*`, exact `scheme://host[:port]`, or with a `*` wildcard in
    /// the host (`https://*.example.com`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_origins: Vec<String>,
    /// Whether credentials may be sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_credentials: Option<bool>,
    /// Allowed methods, or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_methods: Vec<String>,
    /// Allowed request headers, or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_headers: Vec<String>,
    /// Response headers exposed to scripts, or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expose_headers: Vec<String>,
    /// Seconds a preflight answer may be cached; 5 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<u32>,
}
