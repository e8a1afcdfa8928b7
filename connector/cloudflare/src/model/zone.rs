//! Zones: the domains of an account, each with its DNS records.

use serde::Deserialize;

use crate::ids::{AccountId, ZoneId};

/// A zone (a domain on Cloudflare).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Zone {
    /// The zone's id.
    pub id: ZoneId,
    /// Its domain name (`example.com`).
    pub name: String,
    /// `active` once Cloudflare serves it.
    #[serde(default)]
    pub status: String,
    /// The account it belongs to.
    pub account: ZoneAccount,
}

/// The account a zone belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ZoneAccount {
    /// The account's id.
    pub id: AccountId,
    /// Its name.
    #[serde(default)]
    pub name: String,
}
