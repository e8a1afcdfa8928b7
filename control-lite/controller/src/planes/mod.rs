//! Which planes should exist, read off one translation: every Gateway the
//! translation gave a [`DataPlaneId::Dedicated`] plane, with its `GatewayConfig`,
//! and every GatewayClass with Gateways on its [`DataPlaneId::Shared`] plane, sized
//! by its `GatewayClassConfig.spec.sharedPlane` and serving the class tunnel; each
//! with the config to push and the addresses of the plane's pods (the config API
//! endpoints of its headless Service). Pure; the controller calls [`wanted`] from
//! the source's translation hook and reconciles what it returns.
//!
//! A Gateway admission refused (a contested tunnel, a namespace over its cap) has
//! no plane in the translation, so it is simply not here: its rendered objects are
//! removed like those of a Gateway that went back to the shared plane. One
//! refused because its own configuration stopped resolving (its token Secret
//! deleted, say) is [held](Wanted::held) instead: no new config reaches it, but
//! its running plane keeps the last one.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use culvert_control_lite::model::{
    DEFAULT_SHARED_REPLICAS, GatewayConfigSpec, SecretKeyReference, TOKEN_KEY,
};
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{DataPlaneId, PlaneRefusal, Translation};
use culvert_router::DataPlaneConfig;

use crate::render::{CONFIG_API_PORT, GatewayRef, PlaneSecrets, SecretKey};

/// One plane as the translation wants it.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredPlane {
    /// What it serves and what owns it: the Gateway, or the GatewayClass of a
    /// shared plane.
    pub gateway: GatewayRef,
    /// Its `GatewayConfig` (for a shared plane, the class's `sharedPlane` size and
    /// nothing else).
    pub config: GatewayConfigSpec,
    /// A shared plane's tunnel: the class's token, in whatever namespace the
    /// operator keeps it (the controller copies it next to the plane).
    pub class_tunnel: Option<SecretKeyReference>,
    /// What its pods serve (`version` 0: the pusher numbers it).
    pub data_plane: Arc<DataPlaneConfig>,
    /// The config API address of each of its pods that is not terminating.
    pub pods: Vec<SocketAddr>,
}

impl DesiredPlane {
    /// Its key among all planes ([`GatewayRef::key`]).
    pub fn key(&self) -> NamespacedName {
        self.gateway.key()
    }

    /// Whether it serves a tunnel: its GatewayConfig's, or its class's.
    pub fn has_tunnel(&self) -> bool {
        self.config.tunnel.is_some() || self.class_tunnel.is_some()
    }

    /// Whether clients reach it through a data Service: no tunnel, and some
    /// listener port to expose.
    pub fn has_data_service(&self) -> bool {
        !self.has_tunnel() && !self.data_plane.listeners.is_empty()
    }

    /// The listener ports its config serves, sorted and distinct.
    pub fn listener_ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.data_plane.listeners.iter().map(|l| l.port).collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// The Secrets its pods mount, as the controller names them, with
    /// `content_hash` (the hash of their data, which only the cluster knows): the
    /// config API token (`configApiTokenRef`, else the generated one), the serving
    /// certificate, and the tunnel token (the GatewayConfig's, or a shared plane's
    /// copy of its class's).
    pub fn secrets(&self, content_hash: String) -> PlaneSecrets {
        let names = self.gateway.names();
        let token_key = |name: &str| SecretKey {
            name: name.to_owned(),
            key: TOKEN_KEY.to_owned(),
        };
        let config_token = match &self.config.config_api_token_ref {
            Some(reference) => token_key(&reference.name),
            None => token_key(&names.token_secret),
        };
        let tunnel_token = match (&self.config.tunnel, &self.class_tunnel) {
            (Some(tunnel), _) => Some(token_key(&tunnel.token_ref.name)),
            (None, Some(_)) => Some(token_key(&names.tunnel_secret)),
            (None, None) => None,
        };
        PlaneSecrets {
            config_token,
            config_tls: names.config_tls_secret,
            tunnel_token,
            content_hash,
        }
    }
}

/// What the controller should run after one translation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wanted {
    /// The planes to render and push to, by [`DesiredPlane::key`].
    pub planes: BTreeMap<NamespacedName, DesiredPlane>,
    /// Gateways whose configuration stopped resolving: their running plane stays
    /// as it is, with the last config it was given.
    pub held: BTreeSet<NamespacedName>,
}

/// The planes of `translation` and the Gateways held back; with `shared_in`
/// (the controller's namespace), also the classes' shared planes, rendered there.
pub fn wanted(store: &Store, translation: &Translation, shared_in: Option<&str>) -> Wanted {
    let mut planes = desired(store, translation);
    if let Some(namespace) = shared_in {
        planes.extend(shared(store, translation, namespace));
    }
    Wanted {
        planes,
        held: translation
            .refused_planes
            .iter()
            .filter(|(_, refusal)| **refusal == PlaneRefusal::ConfigUnresolved)
            .map(|(key, _)| key.clone())
            .collect(),
    }
}

/// Every dedicated plane of `translation`, by Gateway.
pub fn desired(store: &Store, translation: &Translation) -> BTreeMap<NamespacedName, DesiredPlane> {
    let mut out = BTreeMap::new();
    for (plane, config) in &translation.data_planes {
        let DataPlaneId::Dedicated(key) = plane else {
            continue;
        };
        let Some(gateway) = store.gateways.get(key) else {
            continue;
        };
        let Some(gateway_config) = store.gateway_config(&key.0, gateway) else {
            continue;
        };
        let owner = GatewayRef::from_gateway(gateway);
        out.insert(
            key.clone(),
            DesiredPlane {
                pods: pods(store, &key.0, &owner.names().config_service),
                gateway: owner,
                config: gateway_config.spec.clone(),
                class_tunnel: None,
                data_plane: Arc::new(config.clone()),
            },
        );
    }
    out
}

/// Every class's shared plane of `translation` that serves at least one
/// Gateway, rendered in `namespace`, by [`DesiredPlane::key`].
pub fn shared(
    store: &Store,
    translation: &Translation,
    namespace: &str,
) -> BTreeMap<NamespacedName, DesiredPlane> {
    let mut out = BTreeMap::new();
    for (plane, config) in &translation.data_planes {
        let DataPlaneId::Shared(class_name) = plane else {
            continue;
        };
        let serves_any = translation.gateway_planes.values().any(|p| p == plane);
        let Some(class) = store.gateway_classes.get(class_name) else {
            continue;
        };
        if !serves_any {
            continue;
        }
        let class_config = store.gateway_class_config(class_name).map(|c| &c.spec);
        let size = class_config.and_then(|c| c.shared_plane.as_ref());
        let owner = GatewayRef::for_class(class, namespace);
        out.insert(
            owner.key(),
            DesiredPlane {
                pods: pods(store, namespace, &owner.names().config_service),
                gateway: owner,
                config: GatewayConfigSpec {
                    replicas: Some(
                        size.and_then(|s| s.replicas)
                            .unwrap_or(DEFAULT_SHARED_REPLICAS),
                    ),
                    autoscaling: size.and_then(|s| s.autoscaling.clone()),
                    tunnel: None,
                    config_api_token_ref: None,
                    cloudflare_credentials_secret_ref: None,
                },
                class_tunnel: class_config
                    .and_then(|c| c.tunnel.as_ref())
                    .map(|t| t.token_ref.clone()),
                data_plane: Arc::new(config.clone()),
            },
        );
    }
    out
}

/// The config API addresses of Service `namespace/service`'s endpoints, ready or
/// not (a plane becomes ready only once pushed), leaving out terminating ones.
fn pods(store: &Store, namespace: &str, service: &str) -> Vec<SocketAddr> {
    let port = u16::try_from(CONFIG_API_PORT).unwrap_or(8081);
    let mut out: Vec<SocketAddr> = store
        .slices_of(namespace, service)
        .flat_map(|slice| &slice.endpoints)
        .filter(|endpoint| endpoint.conditions.terminating != Some(true))
        .flat_map(|endpoint| &endpoint.addresses)
        .filter_map(|address| address.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, port))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests;
