//! Connector tokens and the tunnels they name: reading a token from a Secret
//! (checked as admission checks it, naming the Secret and never the token) and the
//! `<tunnel-id>.cfargotunnel.com` address a Gateway serving a tunnel advertises.
//! A helper beside the state layer: GatewayClasses (the class tunnel), admission
//! (tunnel claims) and the crate's public token readers all read tokens here.

use super::certificates::{SecretValueError, secret_value};
use crate::Error;
use crate::model::GatewayAddress;
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
/// or why it cannot be used. Errors name the Secret and key, never any of the
/// token.
pub(crate) fn read_token(
    store: &Store,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<TunnelToken, Error> {
    let (namespace, name, key) = (namespace.to_owned(), name.to_owned(), key.to_owned());
    let Some(secret) = store.secrets.get(&(namespace.clone(), name.clone())) else {
        return Err(Error::TokenSecretNotFound { namespace, name });
    };
    let bytes = match secret_value(secret, &key) {
        Ok(bytes) => bytes,
        Err(SecretValueError::Missing) => {
            return Err(Error::TokenKeyMissing {
                namespace,
                name,
                key,
            });
        }
        Err(SecretValueError::NotBase64) => {
            return Err(Error::TokenNotBase64 {
                namespace,
                name,
                key,
            });
        }
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(Error::TokenNotText {
            namespace,
            name,
            key,
        });
    };
    // The parser's messages name the layer or field at fault, never a value of the
    // secret (`connector/proto/src/error.rs`).
    let token = match TunnelToken::parse(text) {
        Ok(token) => token,
        Err(source) => {
            return Err(Error::TokenUnparsable {
                namespace,
                name,
                key,
                source: Box::new(source),
            });
        }
    };
    if token.account_tag.len() != 32 || !token.account_tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::TokenAccountTag {
            namespace,
            name,
            key,
        });
    }
    Ok(token)
}
