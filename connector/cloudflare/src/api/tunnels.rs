//! `/accounts/{account}/cfd_tunnel`: tunnels, their connector tokens and their
//! configurations.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use culvert_tunnel_proto::TunnelToken;
use http::Method;
use serde::Serialize;

use super::LIST_PAGE;
use crate::client::Call;
use crate::model::{ConfigurationBody, IngressBody};
use crate::model::{IngressRule, Tunnel, TunnelConfiguration};
use crate::token::ConnectorToken;
use crate::{AccountId, Client, Error, TunnelId};

/// The shortest tunnel secret Cloudflare accepts.
pub(crate) const MIN_SECRET: usize = 32;

#[derive(Serialize)]
struct NewTunnel<'a> {
    name: &'a str,
    config_src: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tunnel_secret: Option<String>,
}

fn tunnels_path(account: &AccountId) -> String {
    format!("/accounts/{account}/cfd_tunnel")
}

fn tunnel_path(account: &AccountId, tunnel: &TunnelId) -> String {
    format!("/accounts/{account}/cfd_tunnel/{tunnel}")
}

impl Client {
    /// Creates a tunnel whose configuration is managed through the API. `secret` (at
    /// least 32 bytes) is the tunnel secret; without one Cloudflare makes it up. The
    /// answer carries the connector token ([`Tunnel::token`]). A name already taken
    /// fails with [`Error::is_conflict`].
    pub async fn create_tunnel(
        &self,
        account: &AccountId,
        name: &str,
        secret: Option<&[u8]>,
    ) -> Result<Tunnel, Error> {
        if name.is_empty() {
            return Err(Error::Invalid {
                kind: "tunnel name",
                reason: "empty".to_owned(),
            });
        }
        if secret.is_some_and(|secret| secret.len() < MIN_SECRET) {
            return Err(Error::Invalid {
                kind: "tunnel secret",
                reason: format!("shorter than {MIN_SECRET} bytes"),
            });
        }
        let body = NewTunnel {
            name,
            config_src: "cloudflare",
            tunnel_secret: secret.map(|secret| STANDARD.encode(secret)),
        };
        let call = Call::new(Method::POST, tunnels_path(account)).json(&body)?;
        Ok(self.call(&call).await?.result)
    }

    /// The account's tunnels that are not deleted, only the one called `name` when
    /// given.
    pub async fn list_tunnels(
        &self,
        account: &AccountId,
        name: Option<&str>,
    ) -> Result<Vec<Tunnel>, Error> {
        let mut call = Call::new(Method::GET, tunnels_path(account));
        if let Some(name) = name {
            call = call.query("name", name);
        }
        call = call.query("is_deleted", "false");
        self.list_all(call, LIST_PAGE).await
    }

    /// One tunnel; an unknown one fails with [`Error::is_not_found`].
    pub async fn tunnel(&self, account: &AccountId, tunnel: &TunnelId) -> Result<Tunnel, Error> {
        let call = Call::new(Method::GET, tunnel_path(account, tunnel));
        Ok(self.call(&call).await?.result)
    }

    /// Deletes a tunnel; the answer is the tunnel with `deleted_at` set.
    pub async fn delete_tunnel(
        &self,
        account: &AccountId,
        tunnel: &TunnelId,
    ) -> Result<Tunnel, Error> {
        let call = Call::new(Method::DELETE, tunnel_path(account, tunnel));
        Ok(self.call(&call).await?.result)
    }

    /// The tunnel's connector token, as text. An unknown tunnel fails with
    /// [`Error::is_not_found`].
    pub async fn tunnel_token(
        &self,
        account: &AccountId,
        tunnel: &TunnelId,
    ) -> Result<ConnectorToken, Error> {
        let path = format!("{}/token", tunnel_path(account, tunnel));
        let call = Call::new(Method::GET, path);
        Ok(self.call(&call).await?.result)
    }

    /// The tunnel's connector token, parsed: the account, tunnel and secret it
    /// carries. A token that does not parse is an [`Error::Decode`] naming no part of
    /// it.
    pub async fn tunnel_token_parsed(
        &self,
        account: &AccountId,
        tunnel: &TunnelId,
    ) -> Result<TunnelToken, Error> {
        let token = self.tunnel_token(account, tunnel).await?;
        token.parse().map_err(|_| Error::Decode {
            method: Method::GET,
            path: format!("{}/token", tunnel_path(account, tunnel)),
            status: http::StatusCode::OK,
            detail: "the connector token does not parse".to_owned(),
        })
    }

    /// The tunnel's current configuration.
    pub async fn tunnel_configuration(
        &self,
        account: &AccountId,
        tunnel: &TunnelId,
    ) -> Result<TunnelConfiguration, Error> {
        let path = format!("{}/configurations", tunnel_path(account, tunnel));
        let call = Call::new(Method::GET, path);
        Ok(self.call(&call).await?.result)
    }

    /// Replaces the tunnel's ingress rules; the answer carries the new version. The
    /// rules must end with a catch-all (no hostname, no path); that is checked here
    /// before anything is sent.
    pub async fn put_tunnel_configuration(
        &self,
        account: &AccountId,
        tunnel: &TunnelId,
        ingress: &[IngressRule],
    ) -> Result<TunnelConfiguration, Error> {
        if !ingress.last().is_some_and(IngressRule::is_catch_all) {
            return Err(Error::Invalid {
                kind: "ingress rules",
                reason: "the last rule must match everything (no hostname, no path)".to_owned(),
            });
        }
        let body = ConfigurationBody {
            config: IngressBody { ingress },
        };
        let path = format!("{}/configurations", tunnel_path(account, tunnel));
        let call = Call::new(Method::PUT, path).json(&body)?;
        Ok(self.call(&call).await?.result)
    }
}
