//! Connector tokens and the tunnels they name: reading a token from a Secret
//! (checked as admission checks it, naming the Secret and never the token) and the
//! `<tunnel-id>.cfargotunnel.com` address a Gateway serving a tunnel advertises.
//! A helper beside the state layer: GatewayClasses (the class tunnel), admission
//! (tunnel claims) and the crate's public token readers all read tokens here.

use super::certificates::{SecretValueError, secret_value};
use crate::model::{GatewayAddress, Secret, TUNNEL_TOKEN_LABEL};
use crate::store::Store;
use culvert_tunnel_proto::{TunnelToken, Uuid};

/// The domain under which every tunnel answers, `<tunnel-id>.cfargotunnel.com`.
pub(crate) const TUNNEL_DOMAIN: &str = "cfargotunnel.com";

/// The hostname a tunnel answers on: the address a Gateway serving it advertises.
pub(crate) fn tunnel_address(tunnel: Uuid) -> GatewayAddress {
    GatewayAddress {
        kind: Some("Hostname".to_owned()),
        value: Some(format!("{tunnel}.{TUNNEL_DOMAIN}")),
    }
}

/// The tunnel a Gateway's stored `status.addresses` advertise, if one does.
pub(crate) fn advertised_tunnel(addresses: &[GatewayAddress]) -> Option<Uuid> {
    addresses
        .iter()
        .filter(|a| a.kind.as_deref() == Some("Hostname"))
        .filter_map(|a| a.value.as_deref())
        .filter_map(|value| value.strip_suffix(TUNNEL_DOMAIN)?.strip_suffix('.'))
        .find_map(|id| id.parse::<Uuid>().ok())
}

/// The connector token in key `key` of Secret `namespace/name`, parsed and checked,
/// or why it cannot be used. Messages name the Secret and key, never any of the
/// token.
pub(crate) fn read_token(
    store: &Store,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<TunnelToken, String> {
    let secret: &Secret = store
        .secrets
        .get(&(namespace.to_owned(), name.to_owned()))
        .ok_or_else(|| {
            format!(
                "Secret {namespace}/{name} with the tunnel token not found (in a cluster it \
                 needs the label {TUNNEL_TOKEN_LABEL})"
            )
        })?;
    let bytes = secret_value(secret, key).map_err(|error| match error {
        SecretValueError::Missing => format!("Secret {namespace}/{name} has no key {key:?}"),
        SecretValueError::NotBase64 => {
            format!("key {key:?} of Secret {namespace}/{name} is not base64")
        }
    })?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| format!("key {key:?} of Secret {namespace}/{name} is not text"))?;
    // The parser's messages name the layer or field at fault, never a value of the
    // secret (`tunnel-proto/src/error.rs`).
    let token = TunnelToken::parse(text).map_err(|error| {
        format!("key {key:?} of Secret {namespace}/{name} is not a connector token: {error}")
    })?;
    if token.account_tag.len() != 32 || !token.account_tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "the connector token in key {key:?} of Secret {namespace}/{name} names an \
             account tag that is not a Cloudflare account ID"
        ));
    }
    Ok(token)
}
