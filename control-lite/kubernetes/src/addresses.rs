//! The addresses Gateways report in `status.addresses` when Culvert runs as a
//! DaemonSet: the host IPs of its own running pods (each node serves on its host
//! ports), or fixed addresses given on the command line. Listeners bind every
//! address of the pod either way.

use std::collections::BTreeMap;

use culvert_control_lite::model::GatewayAddress;
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{AddressAssigner, AddressError, FixedAddresses};
use kube::api::DynamicObject;
use kube::runtime::watcher::Event;

/// Host IPs of the plane's pods, by pod name.
#[derive(Debug, Default, Clone)]
pub struct PodAddresses {
    hosts: BTreeMap<String, String>,
    relisting: Option<BTreeMap<String, String>>,
}

impl PodAddresses {
    /// Applies a pod watch event; returns whether the set of addresses changed.
    pub fn handle(&mut self, event: Event<DynamicObject>) -> bool {
        let before = self.addresses();
        match event {
            Event::Init => self.relisting = Some(BTreeMap::new()),
            Event::InitApply(pod) => {
                if let (Some(list), Some((name, ip))) = (&mut self.relisting, host_of(&pod)) {
                    list.insert(name, ip);
                }
            }
            Event::InitDone => self.hosts = self.relisting.take().unwrap_or_default(),
            Event::Apply(pod) => match host_of(&pod) {
                Some((name, ip)) => {
                    self.hosts.insert(name, ip);
                }
                None => {
                    self.hosts
                        .remove(pod.metadata.name.as_deref().unwrap_or_default());
                }
            },
            Event::Delete(pod) => {
                self.hosts
                    .remove(pod.metadata.name.as_deref().unwrap_or_default());
            }
        }
        before != self.addresses()
    }

    /// The distinct host IPs, sorted.
    pub fn addresses(&self) -> Vec<String> {
        let mut ips: Vec<String> = self.hosts.values().cloned().collect();
        ips.sort();
        ips.dedup();
        ips
    }
}

/// A running pod's name and host IP.
fn host_of(pod: &DynamicObject) -> Option<(String, String)> {
    let status = pod.data.get("status")?;
    if status.get("phase")?.as_str()? != "Running" || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let ip = status.get("hostIP")?.as_str()?.to_owned();
    Some((pod.metadata.name.clone()?, ip))
}

/// Publishes `addresses` without binding them.
pub struct Published(pub FixedAddresses);

impl AddressAssigner for Published {
    fn assign(
        &self,
        gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        self.0.assign(gateway, requested)
    }

    fn assign_from(
        &self,
        store: &Store,
        gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        self.0.assign_from(store, gateway, requested)
    }

    fn binds(&self) -> bool {
        false
    }
}

/// An address assigner shared with the thread that translates.
#[derive(Clone)]
pub struct SharedAssigner(pub std::sync::Arc<dyn AddressAssigner + Send + Sync>);

impl std::fmt::Debug for SharedAssigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedAssigner")
    }
}

impl AddressAssigner for SharedAssigner {
    fn assign(
        &self,
        gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        self.0.assign(gateway, requested)
    }

    fn assign_from(
        &self,
        store: &Store,
        gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        self.0.assign_from(store, gateway, requested)
    }

    fn binds(&self) -> bool {
        self.0.binds()
    }
}
