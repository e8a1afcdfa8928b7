//! The connector token (`--token`, `TUNNEL_TOKEN`, `--token-file`), PROTOCOL.md §1.
//!
//! Two layers: standard padded base64 of a JSON object with single-letter keys, whose
//! `s` value is itself standard padded base64 of the raw tunnel secret. Parsing names
//! the layer that is wrong and never panics; encoding is for the edge simulator,
//! which hands tokens to the connectors it tests.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use super::registration::TunnelAuth;
use super::uuid::Uuid;
use crate::Error;

/// A parsed connector token.
#[derive(Clone, PartialEq, Eq)]
pub struct TunnelToken {
    /// `a`: the account tag (32 hex characters), sent as `TunnelAuth.accountTag`.
    pub account_tag: String,
    /// `s`, base64-decoded: the raw tunnel secret, sent as `TunnelAuth.tunnelSecret`.
    pub tunnel_secret: Vec<u8>,
    /// `t`: the tunnel ID, sent as 16 raw bytes in `registerConnection`'s `tunnelId`.
    pub tunnel_id: Uuid,
    /// `e`: the endpoint, used as the region (`fed` is FedRAMP). Absent when empty.
    pub endpoint: Option<String>,
}

/// The JSON object inside the outer base64 layer. Every field is optional here so a
/// missing one is reported by name rather than as a generic JSON error.
#[derive(Serialize, Deserialize)]
struct RawToken {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<String>,
}

impl TunnelToken {
    /// Parses a token. Surrounding whitespace is ignored, as cloudflared trims the
    /// contents of `--token-file`.
    pub fn parse(token: &str) -> Result<Self, Error> {
        let json = STANDARD
            .decode(token.trim().as_bytes())
            .map_err(Error::TokenBase64)?;
        let value: serde_json::Value = serde_json::from_slice(&json).map_err(Error::TokenJson)?;
        if !value.is_object() {
            // serde would also accept a JSON array for a struct; Go would not.
            return Err(Error::TokenJson(serde::de::Error::custom(
                "expected a json object",
            )));
        }
        let raw: RawToken = serde_json::from_value(value).map_err(Error::TokenJson)?;
        let account_tag = raw.a.ok_or(Error::TokenMissingField("a"))?;
        let secret = raw.s.ok_or(Error::TokenMissingField("s"))?;
        let tunnel_id = raw.t.ok_or(Error::TokenMissingField("t"))?;
        let tunnel_secret = STANDARD
            .decode(secret.as_bytes())
            .map_err(Error::TokenSecret)?;
        let tunnel_id = tunnel_id
            .parse::<Uuid>()
            .map_err(|_| Error::TokenTunnelId(tunnel_id.clone()))?;
        Ok(Self {
            account_tag,
            tunnel_secret,
            tunnel_id,
            endpoint: raw.e.filter(|e| !e.is_empty()),
        })
    }

    /// Encodes the token the way cloudflared's tooling does: JSON keys `a`, `s`, `t`
    /// (and `e` only when set and non-empty), then standard padded base64.
    pub fn encode(&self) -> String {
        let raw = RawToken {
            a: Some(self.account_tag.clone()),
            s: Some(STANDARD.encode(&self.tunnel_secret)),
            t: Some(self.tunnel_id.to_string()),
            e: self.endpoint.clone().filter(|e| !e.is_empty()),
        };
        // Serializing a struct of strings to JSON cannot fail: no maps with
        // non-string keys, no custom serializers.
        let json = serde_json::to_vec(&raw).unwrap_or_default();
        STANDARD.encode(json)
    }

    /// The `TunnelAuth` argument of `registerConnection`.
    pub fn auth(&self) -> TunnelAuth {
        TunnelAuth {
            account_tag: self.account_tag.clone(),
            tunnel_secret: self.tunnel_secret.clone(),
        }
    }
}

impl FromStr for TunnelToken {
    type Err = Error;

    fn from_str(token: &str) -> Result<Self, Error> {
        Self::parse(token)
    }
}

/// The secret is redacted so tokens can be logged.
impl fmt::Debug for TunnelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TunnelToken")
            .field("account_tag", &self.account_tag)
            .field(
                "tunnel_secret",
                &format_args!("<{} bytes>", self.tunnel_secret.len()),
            )
            .field("tunnel_id", &self.tunnel_id)
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

#[cfg(test)]
mod tests;
