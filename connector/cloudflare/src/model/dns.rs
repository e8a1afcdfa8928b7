//! DNS records of a zone, as read ([`DnsRecord`]) and as written ([`NewDnsRecord`]).

use serde::{Deserialize, Serialize};

use crate::ids::{RecordId, TunnelId, ZoneId};

/// A DNS record as Cloudflare holds it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DnsRecord {
    /// The record's id.
    pub id: RecordId,
    /// The zone's id (Cloudflare is dropping it from answers, so it may be absent).
    #[serde(default)]
    pub zone_id: Option<ZoneId>,
    /// The zone's name (may be absent, like `zone_id`).
    #[serde(default)]
    pub zone_name: Option<String>,
    /// The fully qualified name.
    pub name: String,
    /// `CNAME`, `TXT`, `A`, …
    #[serde(rename = "type")]
    pub record_type: String,
    /// The value; TXT content keeps the double quotes it was written with.
    pub content: String,
    /// Whether Cloudflare proxies the name.
    #[serde(default)]
    pub proxied: bool,
    /// Seconds, `1` meaning automatic.
    #[serde(default)]
    pub ttl: u32,
    /// The record's comment.
    #[serde(default)]
    pub comment: Option<String>,
    /// When it was created (RFC 3339).
    #[serde(default)]
    pub created_on: Option<String>,
    /// When it was last changed (RFC 3339).
    #[serde(default)]
    pub modified_on: Option<String>,
}

/// A record to create, or the full replacement of one (`PUT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewDnsRecord {
    /// `CNAME`, `TXT`, …
    #[serde(rename = "type")]
    pub record_type: String,
    /// The fully qualified name.
    pub name: String,
    /// The value.
    pub content: String,
    /// Whether Cloudflare proxies the name (for A, AAAA and CNAME).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxied: Option<bool>,
    /// Seconds, `1` meaning automatic.
    pub ttl: u32,
    /// A comment kept with the record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl NewDnsRecord {
    /// A proxied CNAME sending `name` to `tunnel`.
    pub fn tunnel_cname(name: impl Into<String>, tunnel: &TunnelId) -> Self {
        Self {
            record_type: "CNAME".to_owned(),
            name: name.into(),
            content: tunnel.cname_target(),
            proxied: Some(true),
            ttl: 1,
            comment: None,
        }
    }

    /// A TXT record with `content` sent as it is (quote it yourself if you want the
    /// quotes kept).
    pub fn txt(name: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            record_type: "TXT".to_owned(),
            name: name.into(),
            content: content.into(),
            proxied: None,
            ttl: 1,
            comment: None,
        }
    }

    /// The same record with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}
