//! Which dedicated planes should exist, read off one translation: every Gateway
//! the translation gave a [`DataPlaneId::Dedicated`] plane, with its
//! `GatewayConfig`, the config to push and the addresses of the plane's pods (the
//! config API endpoints of its headless Service). Pure; the controller calls
//! [`desired`] from the source's translation hook and reconciles what it returns.
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

use culvert_control_lite::model::GatewayConfigSpec;
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{DataPlaneId, PlaneRefusal, Translation};
use culvert_router::DataPlaneConfig;

use crate::render::{CONFIG_API_PORT, GatewayRef, PlaneNames};

/// One dedicated plane as the translation wants it.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredPlane {
    /// The Gateway it serves.
    pub gateway: GatewayRef,
    /// Its `GatewayConfig`.
    pub config: GatewayConfigSpec,
    /// What its pods serve (`version` 0: the pusher numbers it).
    pub data_plane: Arc<DataPlaneConfig>,
    /// The config API address of each of its pods that is not terminating.
    pub pods: Vec<SocketAddr>,
}

/// What the controller should run after one translation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wanted {
    /// The planes to render and push to.
    pub planes: BTreeMap<NamespacedName, DesiredPlane>,
    /// Gateways whose configuration stopped resolving: their running plane stays
    /// as it is, with the last config it was given.
    pub held: BTreeSet<NamespacedName>,
}

/// The planes of `translation` and the Gateways held back.
pub fn wanted(store: &Store, translation: &Translation) -> Wanted {
    Wanted {
        planes: desired(store, translation),
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
        let names = PlaneNames::new(&key.1);
        out.insert(
            key.clone(),
            DesiredPlane {
                gateway: GatewayRef::from_gateway(gateway),
                config: gateway_config.spec.clone(),
                data_plane: Arc::new(config.clone()),
                pods: pods(store, &key.0, &names.config_service),
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
