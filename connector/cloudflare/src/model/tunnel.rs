//! Tunnels (`cfd_tunnel`) and their remotely managed configuration: the ingress rules
//! Cloudflare hands to the tunnel's connectors.

use serde::{Deserialize, Serialize};

use crate::ids::{AccountId, TunnelId};
use crate::token::ConnectorToken;

/// A Cloudflare Tunnel.
#[derive(Debug, Clone, Deserialize)]
pub struct Tunnel {
    /// The tunnel's id.
    pub id: TunnelId,
    /// The account it belongs to.
    pub account_tag: AccountId,
    /// Its name, unique among the account's tunnels that are not deleted.
    pub name: String,
    /// When it was created (RFC 3339).
    #[serde(default)]
    pub created_at: Option<String>,
    /// When it was deleted (RFC 3339), if it was.
    #[serde(default)]
    pub deleted_at: Option<String>,
    /// `cloudflare` when its configuration is managed through the API.
    #[serde(default)]
    pub config_src: Option<String>,
    /// Whether connectors are registered.
    #[serde(default)]
    pub status: TunnelStatus,
    /// The connections its connectors hold.
    #[serde(default)]
    pub connections: Vec<TunnelConnection>,
    /// The connector token, only in the answer that created the tunnel.
    #[serde(default)]
    pub token: Option<ConnectorToken>,
}

/// A tunnel's health as Cloudflare reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum TunnelStatus {
    /// No connector has ever registered, or none has for a long time.
    #[default]
    Inactive,
    /// At least one connector is registered.
    Healthy,
    /// Some connections are missing.
    Degraded,
    /// Connectors were registered and are gone.
    Down,
    /// A status this client does not know.
    Other(String),
}

impl From<String> for TunnelStatus {
    fn from(status: String) -> Self {
        match status.as_str() {
            "inactive" => Self::Inactive,
            "healthy" => Self::Healthy,
            "degraded" => Self::Degraded,
            "down" => Self::Down,
            _ => Self::Other(status),
        }
    }
}

/// One connection of a tunnel's connector to a Cloudflare data center.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TunnelConnection {
    /// The connection's id.
    #[serde(default)]
    pub id: String,
    /// The data center (`"lhr01"`, ...).
    #[serde(default)]
    pub colo_name: String,
    /// Whether the connector is about to reconnect.
    #[serde(default)]
    pub is_pending_reconnect: bool,
    /// When it opened (RFC 3339).
    #[serde(default)]
    pub opened_at: String,
    /// The connector's public address.
    #[serde(default)]
    pub origin_ip: String,
}

/// A tunnel's remotely managed configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "RawConfiguration")]
pub struct TunnelConfiguration {
    /// The tunnel.
    pub tunnel_id: TunnelId,
    /// Raised by one on every write.
    pub version: u64,
    /// The ingress rules; `None` before any configuration was written.
    pub ingress: Option<Vec<IngressRule>>,
    /// `cloudflare` for a configuration managed through the API.
    pub source: Option<String>,
    /// When this version was written (RFC 3339).
    pub created_at: Option<String>,
}

#[derive(Deserialize)]
struct RawConfiguration {
    tunnel_id: TunnelId,
    #[serde(default)]
    version: u64,
    #[serde(default)]
    config: Option<RawConfig>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
}

#[derive(Deserialize)]
struct RawConfig {
    #[serde(default)]
    ingress: Vec<IngressRule>,
}

impl From<RawConfiguration> for TunnelConfiguration {
    fn from(raw: RawConfiguration) -> Self {
        Self {
            tunnel_id: raw.tunnel_id,
            version: raw.version,
            ingress: raw.config.map(|config| config.ingress),
            source: raw.source,
            created_at: raw.created_at,
        }
    }
}

/// One ingress rule: requests for `hostname` (and `path`) go to `service`. The last
/// rule of a configuration must match everything (neither hostname nor path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngressRule {
    /// The hostname matched (`*.example.com` allowed), or any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// A regular expression the path must match, or any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Where matching requests go: `http://host:port`, `https://…`, `http_status:404`, …
    pub service: String,
    /// Per-rule origin settings, passed through as they are.
    #[serde(
        default,
        rename = "originRequest",
        skip_serializing_if = "Option::is_none"
    )]
    pub origin_request: Option<serde_json::Map<String, serde_json::Value>>,
}

impl IngressRule {
    /// Whether the rule matches every request (the catch-all that must come last).
    pub fn is_catch_all(&self) -> bool {
        self.hostname.as_deref().is_none_or(str::is_empty)
            && self.path.as_deref().is_none_or(str::is_empty)
    }
}

/// The body of `PUT …/configurations`.
#[derive(Serialize)]
pub(crate) struct ConfigurationBody<'a> {
    pub(crate) config: IngressBody<'a>,
}

/// The `config` of a configuration write.
#[derive(Serialize)]
pub(crate) struct IngressBody<'a> {
    pub(crate) ingress: &'a [IngressRule],
}
