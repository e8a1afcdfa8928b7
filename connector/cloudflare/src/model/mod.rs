//! The objects the API returns and takes, as serde types whose ids are validated while
//! they are decoded ([`crate::ids`]). Unknown fields are ignored, so Cloudflare may add
//! fields; fields Culvert does not rely on are optional.

mod dns;
mod tunnel;
mod zone;

pub use dns::{DnsRecord, NewDnsRecord};
pub(crate) use tunnel::{ConfigurationBody, IngressBody};
pub use tunnel::{IngressRule, Tunnel, TunnelConfiguration, TunnelConnection, TunnelStatus};
pub use zone::{Zone, ZoneAccount};

use serde::Deserialize;

/// What `GET /user/tokens/verify` says about the token.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenStatus {
    /// The token's id (not the token).
    pub id: String,
    /// `active`, `disabled` or `expired`.
    pub status: String,
}

impl TokenStatus {
    /// Whether the token can be used.
    pub fn is_active(&self) -> bool {
        self.status == "active"
    }
}

#[cfg(test)]
mod tests;
