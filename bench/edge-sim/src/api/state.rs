//! The simulated account behind the API and the edge: its tunnels (with their
//! secrets and remote configurations), zones and DNS records (`dns.rs`), the API
//! token, and the queued API faults. Operations return the
//! Cloudflare error (status, code, message) they would answer with; the HTTP side
//! in `mod.rs` only wraps them.

use std::collections::VecDeque;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use culvert_connector::io::{random_bytes, random_uuid};
use culvert_tunnel_proto::{TunnelToken, Uuid};

use super::dns::{Records, Zone};
use super::error::{ApiError, internal, route_not_found};
use super::time::now_rfc3339;
use crate::error::Error;
use crate::random::random_hex;

/// One tunnel of the account (or the start-up tunnel, whatever its account).
#[derive(Debug, Clone)]
pub(crate) struct TunnelEntry {
    pub(crate) id: Uuid,
    pub(crate) account_tag: String,
    pub(crate) name: String,
    pub(crate) secret: Vec<u8>,
    pub(crate) created_at: String,
    pub(crate) deleted_at: Option<String>,
    pub(crate) config_src: String,
    /// Whether a connector ever registered (`down` rather than `inactive` now).
    pub(crate) ever_registered: bool,
    /// The remote configuration (`{"ingress": [...], ...}`), once written.
    pub(crate) config: Option<Value>,
    pub(crate) config_version: u64,
    pub(crate) config_created_at: String,
}

impl TunnelEntry {
    /// A live tunnel with no configuration, created now.
    pub(crate) fn new(token: &TunnelToken, name: &str, config_src: &str) -> Self {
        let now = now_rfc3339();
        Self {
            id: token.tunnel_id,
            account_tag: token.account_tag.clone(),
            name: name.to_owned(),
            secret: token.tunnel_secret.clone(),
            created_at: now.clone(),
            deleted_at: None,
            config_src: config_src.to_owned(),
            ever_registered: false,
            config: None,
            config_version: 0,
            config_created_at: now,
        }
    }

    pub(crate) fn token(&self) -> TunnelToken {
        TunnelToken {
            account_tag: self.account_tag.clone(),
            tunnel_secret: self.secret.clone(),
            tunnel_id: self.id,
            endpoint: None,
        }
    }

    /// The configuration object of the `configurations` endpoints.
    pub(crate) fn configuration_json(&self) -> Value {
        json!({
            "tunnel_id": self.id.to_string(),
            "version": self.config_version,
            "config": self.config,
            "source": "cloudflare",
            "created_at": self.config_created_at,
        })
    }
}

/// A fault the next API request answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct ApiFault {
    /// `429` (with `Retry-After` and code 971) or any 5xx (code 10001).
    pub status: u16,
    /// The `Retry-After` seconds of a `429`.
    #[serde(default)]
    pub retry_after: u32,
}

/// The account's state.
#[derive(Debug)]
pub(crate) struct Cloud {
    pub(crate) account_id: String,
    pub(crate) account_name: String,
    pub(crate) api_token: String,
    pub(crate) api_token_id: String,
    /// Every tunnel, in creation order (deleted ones stay, marked).
    pub(crate) tunnels: Vec<TunnelEntry>,
    pub(crate) zones: Vec<Zone>,
    pub(crate) records: Records,
    pub(crate) faults: VecDeque<ApiFault>,
}

/// A `POST /cfd_tunnel` body.
#[derive(Debug, Deserialize)]
pub(crate) struct CreateTunnel {
    name: String,
    #[serde(default)]
    config_src: Option<String>,
    #[serde(default)]
    tunnel_secret: Option<String>,
}

/// A `PUT /configurations` body.
#[derive(Debug, Deserialize)]
pub(crate) struct ConfigBody {
    config: Value,
}

/// How many tunnels a client may create.
const MAX_TUNNELS: usize = 1000;

impl Cloud {
    pub(crate) fn new(
        account_id: String,
        api_token: String,
        zones: &[String],
        startup: TunnelEntry,
    ) -> Result<Self, Error> {
        let mut out = Vec::new();
        for name in zones {
            let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
            if name.is_empty() || out.iter().any(|z: &Zone| z.name == name) {
                continue;
            }
            out.push(Zone {
                id: random_hex::<16>()?,
                name,
            });
        }
        Ok(Self {
            account_name: format!("Simulated account {}", &account_id),
            account_id,
            api_token,
            api_token_id: random_hex::<16>()?,
            tunnels: vec![startup],
            zones: out,
            records: Records::default(),
            faults: VecDeque::new(),
        })
    }

    /// The tunnel with this ID, deleted or not.
    pub(crate) fn tunnel(&self, id: Uuid) -> Option<&TunnelEntry> {
        self.tunnels.iter().find(|t| t.id == id)
    }

    pub(crate) fn tunnel_mut(&mut self, id: Uuid) -> Option<&mut TunnelEntry> {
        self.tunnels.iter_mut().find(|t| t.id == id)
    }

    /// A tunnel of this account by its ID text; unknown -> 404.
    pub(crate) fn account_tunnel(&self, id: &str) -> Result<&TunnelEntry, ApiError> {
        id.parse::<Uuid>()
            .ok()
            .and_then(|id| self.tunnel(id))
            .filter(|t| t.account_tag == self.account_id)
            .ok_or_else(|| tunnel_not_found(id))
    }

    fn account_tunnel_mut(&mut self, id: &str) -> Result<&mut TunnelEntry, ApiError> {
        let account = self.account_id.clone();
        id.parse::<Uuid>()
            .ok()
            .and_then(|id| self.tunnel_mut(id))
            .filter(|t| t.account_tag == account)
            .ok_or_else(|| tunnel_not_found(id))
    }

    pub(crate) fn create_tunnel(&mut self, body: CreateTunnel) -> Result<TunnelEntry, ApiError> {
        let name = body.name.trim().to_owned();
        if name.is_empty() || name.len() > 64 {
            return Err(ApiError::bad_request(
                1001,
                "tunnel name must be 1 to 64 characters",
            ));
        }
        if self
            .tunnels
            .iter()
            .any(|t| t.account_tag == self.account_id && t.deleted_at.is_none() && t.name == name)
        {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                1013,
                "You already have a tunnel with this name",
            ));
        }
        if self.tunnels.len() >= MAX_TUNNELS {
            return Err(ApiError::bad_request(1001, "too many tunnels"));
        }
        let config_src = match body.config_src.as_deref() {
            None | Some("cloudflare") => "cloudflare",
            Some("local") => "local",
            Some(other) => {
                return Err(ApiError::bad_request(
                    1001,
                    format!("config_src must be \"cloudflare\" or \"local\", not {other:?}"),
                ));
            }
        };
        let secret = match body.tunnel_secret {
            Some(text) => match STANDARD.decode(text.trim()) {
                Ok(secret) if secret.len() >= 32 => secret,
                _ => {
                    return Err(ApiError::bad_request(
                        1001,
                        "tunnel_secret must be the base64 encoding of at least 32 bytes",
                    ));
                }
            },
            None => random_bytes::<32>()
                .map_err(|e| internal(&e.into()))?
                .to_vec(),
        };
        let token = TunnelToken {
            account_tag: self.account_id.clone(),
            tunnel_secret: secret,
            tunnel_id: random_uuid().map_err(|e| internal(&e.into()))?,
            endpoint: None,
        };
        let tunnel = TunnelEntry::new(&token, &name, config_src);
        self.tunnels.push(tunnel.clone());
        Ok(tunnel)
    }

    pub(crate) fn delete_tunnel(&mut self, id: &str) -> Result<TunnelEntry, ApiError> {
        let tunnel = self.account_tunnel_mut(id)?;
        if tunnel.deleted_at.is_none() {
            tunnel.deleted_at = Some(now_rfc3339());
        }
        Ok(tunnel.clone())
    }

    /// A live tunnel of the account (for its token and configuration).
    pub(crate) fn live_tunnel(&self, id: &str) -> Result<&TunnelEntry, ApiError> {
        let tunnel = self.account_tunnel(id)?;
        if tunnel.deleted_at.is_some() {
            return Err(tunnel_not_found(id));
        }
        Ok(tunnel)
    }

    pub(crate) fn put_configuration(
        &mut self,
        id: &str,
        body: ConfigBody,
    ) -> Result<Value, ApiError> {
        validate_config(&body.config)?;
        let tunnel = self.account_tunnel_mut(id)?;
        if tunnel.deleted_at.is_some() {
            return Err(tunnel_not_found(id));
        }
        tunnel.config = Some(body.config);
        tunnel.config_version += 1;
        tunnel.config_created_at = now_rfc3339();
        Ok(tunnel.configuration_json())
    }

    /// A zone by ID; unknown -> 404 code 7003.
    pub(crate) fn zone(&self, id: &str, path: &str) -> Result<&Zone, ApiError> {
        self.zones
            .iter()
            .find(|z| z.id == id)
            .ok_or_else(|| route_not_found(path))
    }
}

fn tunnel_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        1003,
        format!("tunnel {id:?} not found"),
    )
}

/// Checks a remote configuration as cloudflared would before using it: an
/// `ingress` list of rules with a `service` each, the last one a catch-all (no
/// hostname, no path).
fn validate_config(config: &Value) -> Result<(), ApiError> {
    let invalid = |why: &str| ApiError::bad_request(1055, format!("invalid configuration: {why}"));
    let Some(object) = config.as_object() else {
        return Err(invalid("config must be an object"));
    };
    let Some(ingress) = object.get("ingress") else {
        return Ok(());
    };
    let Some(rules) = ingress.as_array() else {
        return Err(invalid("ingress must be a list"));
    };
    let Some(last) = rules.last() else {
        return Err(invalid("ingress must have at least one rule"));
    };
    for (i, rule) in rules.iter().enumerate() {
        let Some(rule) = rule.as_object() else {
            return Err(invalid(&format!("ingress rule {i} is not an object")));
        };
        if !rule.get("service").is_some_and(Value::is_string) {
            return Err(invalid(&format!("ingress rule {i} has no service")));
        }
        for key in ["hostname", "path"] {
            if rule
                .get(key)
                .is_some_and(|v| !v.is_string() && !v.is_null())
            {
                return Err(invalid(&format!(
                    "ingress rule {i}: {key} must be a string"
                )));
            }
        }
    }
    let set = |key: &str| {
        last.get(key)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty() && v != "*")
    };
    if set("hostname") || set("path") {
        return Err(invalid(
            "the last ingress rule must match everything (no hostname, no path)",
        ));
    }
    Ok(())
}
