//! The addresses Gateways on the controller's planes report, as the
//! translation's [`AddressAssigner`]. A plane without a tunnel is reached through
//! its data Service (a `LoadBalancer`), so its Gateways report that load
//! balancer's addresses, and are accepted but not programmed (reason
//! `AddressNotAssigned`) until it has one. A dedicated tunnel plane's Gateway
//! gets `<tunnel-id>.cfargotunnel.com` from admission; a shared plane serving its
//! class's tunnel gives its Gateways the class tunnel's. A Gateway cannot pick
//! its address (`spec.addresses`): the load balancer or the tunnel decides. A
//! Gateway [held](crate::handover) on its class's shared plane while its
//! dedicated one starts keeps the shared plane's address.
//! Listeners bind every address of the plane's pods.

use culvert_control_lite::model::GatewayAddress;
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{AddressAssigner, AddressError, class_tunnel_address};

use std::sync::{Arc, Mutex};

use crate::handover::Held;
use crate::render::PlaneNames;

/// Addresses from the planes' data Services (and class tunnels); shared planes
/// live in `shared_in`, the controller's namespace.
#[derive(Debug, Clone)]
pub struct PlaneAddresses {
    /// The namespace shared planes are rendered in.
    pub shared_in: String,
    /// Gateways held on their class's shared plane while their dedicated plane
    /// starts ([`crate::handover`]): they keep the shared plane's address.
    pub held: Arc<Mutex<Held>>,
}

impl AddressAssigner for PlaneAddresses {
    fn assign(
        &self,
        _gateway: &NamespacedName,
        _requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        Err(AddressError::NotAssigned(
            "a plane's address is known only from its Service".to_owned(),
        ))
    }

    fn assign_from(
        &self,
        store: &Store,
        key: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        if !requested.is_empty() {
            return Err(AddressError::NotUsable(
                "spec.addresses cannot be chosen: the plane's load balancer or tunnel decides"
                    .to_owned(),
            ));
        }
        let Some(gateway) = store.gateways.get(key) else {
            return Ok(Vec::new());
        };
        let held = self
            .held
            .lock()
            .map(|held| held.contains_key(key))
            .unwrap_or(false);
        let dedicated = store.gateway_config(&key.0, gateway).filter(|_| !held);
        let service = match dedicated {
            // A tunnel Gateway's address comes from admission.
            Some(config) if config.spec.tunnel.is_some() => return Ok(Vec::new()),
            Some(_) => (key.0.clone(), PlaneNames::new(&key.1).workload),
            None => {
                let class = &gateway.spec.gateway_class_name;
                if let Some(address) = class_tunnel_address(store, class) {
                    return Ok(vec![address]);
                }
                (
                    self.shared_in.clone(),
                    PlaneNames::for_class(class).workload,
                )
            }
        };
        let addresses = load_balancer(store, &service);
        if addresses.is_empty() {
            return Err(AddressError::NotAssigned(format!(
                "waiting for the load balancer of Service {}/{}",
                service.0, service.1
            )));
        }
        Ok(addresses)
    }

    fn binds(&self) -> bool {
        false
    }
}

/// The addresses Service `key`'s load balancer has: IPs as `IPAddress`, names
/// as `Hostname`.
fn load_balancer(store: &Store, key: &NamespacedName) -> Vec<GatewayAddress> {
    let Some(status) = store.services.get(key).and_then(|s| s.status.as_ref()) else {
        return Vec::new();
    };
    status
        .load_balancer
        .ingress
        .iter()
        .filter_map(|ingress| {
            let (kind, value) = match (&ingress.ip, &ingress.hostname) {
                (Some(ip), _) => ("IPAddress", ip),
                (None, Some(hostname)) => ("Hostname", hostname),
                (None, None) => return None,
            };
            Some(GatewayAddress {
                kind: Some(kind.to_owned()),
                value: Some(value.clone()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
