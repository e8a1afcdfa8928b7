//! The claims one translation makes, and where each one's API credential lives.
//! Pure: read from the [`Store`] and the [`Translation`] only.

use culvert_control_lite::model::{CULVERT_GROUP, Gateway, TOKEN_KEY};
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{Translation, gateway_tunnel_token};
use culvert_tunnel_proto::TunnelToken;

use crate::cloudflare_sync::CredentialRef;
use crate::render::SecretKey;

/// One dedicated Gateway's claim on the tunnel its token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimInput {
    /// The Gateway.
    pub gateway: NamespacedName,
    /// Its connector token, read as the translation reads it.
    pub token: TunnelToken,
    /// The credential the claim is checked with, the one that writes its tunnel's
    /// configuration; `None` when none is named.
    pub credential: Option<CredentialRef>,
}

/// Every claim to check, and whether any credential is configured at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimInputs {
    /// The claims, by Gateway.
    pub claims: Vec<ClaimInput>,
    /// Some GatewayClassConfig, or the GatewayConfig of some claim, names a
    /// credential: claims can be checked, and a new claim waits for its check.
    pub configured: bool,
}

/// The claims of the Gateways `translation` covers whose GatewayConfig has a tunnel
/// whose token reads.
pub fn inputs(store: &Store, translation: &Translation) -> ClaimInputs {
    let mut configured = store
        .gateway_class_configs
        .values()
        .any(|config| config.spec.cloudflare_credentials_secret_ref.is_some());
    let mut claims = Vec::new();
    for key in translation.gateways.keys() {
        let Some(gateway) = store.gateways.get(key) else {
            continue;
        };
        let Some(token) = gateway_tunnel_token(store, key) else {
            continue;
        };
        let own = store
            .gateway_config(&key.0, gateway)
            .and_then(|config| config.spec.cloudflare_credentials_secret_ref.as_ref());
        configured |= own.is_some();
        let credential = match own {
            Some(reference) => Some(credential(&key.0, &reference.name, TOKEN_KEY)),
            None => class_credential(store, gateway),
        };
        claims.push(ClaimInput {
            gateway: key.clone(),
            token,
            credential,
        });
    }
    ClaimInputs { claims, configured }
}

/// Key `key` of Secret `namespace/name`. A GatewayConfig's is always in the
/// Gateway's own namespace, key `token`, as `cloudflare_sync` reads it: a tenant
/// can only ever point at its own credentials.
fn credential(namespace: &str, name: &str, key: &str) -> CredentialRef {
    CredentialRef {
        namespace: namespace.to_owned(),
        secret: SecretKey {
            name: name.to_owned(),
            key: key.to_owned(),
        },
    }
}

/// The credential of the GatewayClassConfig of `gateway`'s class.
fn class_credential(store: &Store, gateway: &Gateway) -> Option<CredentialRef> {
    let reference = store
        .gateway_classes
        .get(&gateway.spec.gateway_class_name)?
        .spec
        .parameters_ref
        .as_ref()
        .filter(|r| r.group == CULVERT_GROUP && r.kind == "GatewayClassConfig")?;
    let secret = store
        .gateway_class_configs
        .get(&reference.name)?
        .spec
        .cloudflare_credentials_secret_ref
        .as_ref()?;
    Some(credential(
        &secret.namespace,
        &secret.name,
        secret.key.as_deref().unwrap_or(TOKEN_KEY),
    ))
}
