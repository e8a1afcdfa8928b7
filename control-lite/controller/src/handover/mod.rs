//! A Gateway moving from its class's shared plane to a dedicated one moves
//! without a gap: until a pod of the new plane serves its config and can be
//! reached (with a tunnel, has a registered connection), the Gateway stays on the
//! shared plane too. Its dedicated config is merged into the shared plane's
//! config, its routes' DNS records stay on the class tunnel, and its address stays
//! the shared plane's; the move completes on the first translation after the new
//! plane is reachable, and after [`MAX_HANDOVER`] whatever happens.
//!
//! The other way, dedicated to shared, needs no hold: the shared plane already
//! runs and takes the Gateway's config on the next push, while the dedicated
//! plane's pods drain.
//!
//! Pure: [`Handover::adjust`] takes the planes one translation wants, the push
//! summaries and the time, and remembers which plane last served each Gateway.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use culvert_control_lite::store::NamespacedName;
use culvert_control_lite::translate::{DataPlaneId, Translation};
use culvert_router::{DataPlaneConfig, RouteTableBuilder};

use crate::planes::{DesiredPlane, Wanted};
use crate::push::{PlaneKey, Summaries};
use crate::render::CLASS_KEY_PREFIX;

/// Longest a Gateway is held on its old plane.
pub const MAX_HANDOVER: Duration = Duration::from_secs(600);

/// Where each Gateway was, and the moves under way.
#[derive(Debug, Default)]
pub struct Handover {
    /// The plane each Gateway was on, until a move to another completes.
    home: BTreeMap<NamespacedName, NamespacedName>,
    /// When each move under way started.
    started: BTreeMap<NamespacedName, Instant>,
    /// Each shared plane as last wanted, to keep one running for a Gateway it
    /// served alone until that Gateway's new plane takes over.
    last_shared: BTreeMap<NamespacedName, DesiredPlane>,
}

/// The Gateways held on their old plane this round, with that plane's key.
pub type Held = BTreeMap<NamespacedName, NamespacedName>;

impl Handover {
    /// Adjusts `wanted` (the planes of `translation`) for the moves under way, and
    /// returns the Gateways held on their class's shared plane. `shared_in` is the
    /// namespace shared planes are rendered in.
    pub fn adjust(
        &mut self,
        wanted: &mut Wanted,
        translation: &Translation,
        summaries: &Summaries,
        shared_in: &str,
        now: Instant,
    ) -> Held {
        let mut held = Held::new();
        let mut present = BTreeSet::new();
        for (key, plane) in &wanted.planes {
            if key.1.starts_with(CLASS_KEY_PREFIX) {
                self.last_shared.insert(key.clone(), plane.clone());
            }
        }
        for (gateway, plane) in &translation.gateway_planes {
            present.insert(gateway.clone());
            let key = plane_key(plane, shared_in);
            let old = match self.home.get(gateway) {
                Some(old) if *old != key => old.clone(),
                _ => {
                    self.home.insert(gateway.clone(), key);
                    self.started.remove(gateway);
                    continue;
                }
            };
            let started = *self.started.entry(gateway.clone()).or_insert(now);
            let moving_to_dedicated =
                matches!(plane, DataPlaneId::Dedicated(_)) && old.1.starts_with(CLASS_KEY_PREFIX);
            if !moving_to_dedicated
                || serves(summaries, &key)
                || !reachable(summaries, &old)
                || now.duration_since(started) >= MAX_HANDOVER
            {
                self.home.insert(gateway.clone(), key);
                self.started.remove(gateway);
                continue;
            }
            let Some(part) = wanted.planes.get(&key).map(|p| Arc::clone(&p.data_plane)) else {
                continue;
            };
            if !wanted.planes.contains_key(&old) {
                // It served this Gateway alone: kept, serving only that Gateway.
                let Some(mut last) = self.last_shared.get(&old).cloned() else {
                    continue;
                };
                last.data_plane = Arc::new(DataPlaneConfig::default());
                wanted.planes.insert(old.clone(), last);
            }
            let Some(shared) = wanted.planes.get_mut(&old) else {
                continue;
            };
            match merged(&shared.data_plane, &part) {
                Some(config) => {
                    shared.data_plane = Arc::new(config);
                    held.insert(gateway.clone(), old);
                }
                None => tracing::warn!(
                    gateway = %format!("{}/{}", gateway.0, gateway.1),
                    "the Gateway's config does not fit its old shared plane: moved without a hold"
                ),
            }
        }
        self.home.retain(|gateway, _| present.contains(gateway));
        self.started.retain(|gateway, _| present.contains(gateway));
        let kept: BTreeSet<&NamespacedName> = held.values().collect();
        self.last_shared
            .retain(|key, _| wanted.planes.contains_key(key) || kept.contains(key));
        held
    }
}

/// The key of `plane` among the controller's planes.
fn plane_key(plane: &DataPlaneId, shared_in: &str) -> NamespacedName {
    match plane {
        DataPlaneId::Dedicated(key) => key.clone(),
        DataPlaneId::Shared(class) => (shared_in.to_owned(), format!("{CLASS_KEY_PREFIX}{class}")),
    }
}

/// Whether a pod of plane `key` serves the plane's current config and can be
/// reached.
fn serves(summaries: &Summaries, key: &NamespacedName) -> bool {
    summaries
        .get(&PlaneKey::new(&key.0, &key.1))
        .is_some_and(|s| s.current > 0 && s.reachable > 0)
}

/// Whether a pod of plane `key` serves some config and can be reached: the old
/// plane of a move, whose pods still serve the Gateway.
fn reachable(summaries: &Summaries, key: &NamespacedName) -> bool {
    summaries
        .get(&PlaneKey::new(&key.0, &key.1))
        .is_some_and(|s| s.reachable > 0)
}

/// `base` with `part`'s listeners, routes and certificates added, if the result
/// still compiles (listener names are per Gateway, so they do not collide; a
/// listener the shared plane already has is kept once).
fn merged(base: &DataPlaneConfig, part: &DataPlaneConfig) -> Option<DataPlaneConfig> {
    let mut out = base.clone();
    let names: BTreeSet<String> = out.listeners.iter().map(|l| l.name.clone()).collect();
    out.listeners.extend(
        part.listeners
            .iter()
            .filter(|l| !names.contains(&l.name))
            .cloned(),
    );
    out.http_routes.extend(part.http_routes.iter().cloned());
    out.grpc_routes.extend(part.grpc_routes.iter().cloned());
    out.tls_routes.extend(part.tls_routes.iter().cloned());
    let certificates: BTreeSet<(String, String)> = out
        .certificates
        .iter()
        .map(|c| (c.namespace.clone(), c.name.clone()))
        .collect();
    out.certificates.extend(
        part.certificates
            .iter()
            .filter(|c| !certificates.contains(&(c.namespace.clone(), c.name.clone())))
            .cloned(),
    );
    RouteTableBuilder::new().build(&out).ok().map(|_| out)
}

#[cfg(test)]
mod tests;
