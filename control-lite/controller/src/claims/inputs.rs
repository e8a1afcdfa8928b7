//! The claims one translation makes, and where each one's API credential lives.
//! Pure: read from the [`Store`] and the [`Translation`] only.

use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{Translation, gateway_tunnel_token};
use culvert_tunnel_proto::TunnelToken;

use crate::cloudflare_sync::{CredentialRef, gateway_credential};

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
        let Some(config) = store.gateway_config(&key.0, gateway) else {
            continue;
        };
        configured |= config.spec.cloudflare_credentials_secret_ref.is_some();
        let credential = gateway_credential(
            store,
            &key.0,
            &gateway.spec.gateway_class_name,
            &config.spec,
        );
        claims.push(ClaimInput {
            gateway: key.clone(),
            token,
            credential,
        });
    }
    ClaimInputs { claims, configured }
}
