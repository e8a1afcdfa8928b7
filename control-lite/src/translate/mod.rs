//! Translation: a pure function from the objects in a [`Store`] to one
//! `DataPlaneConfig` per data plane plus every status condition Culvert owns.
//!
//! Order of work: classes (`gateways::classes`), Gateways and their listeners
//! (`gateways::gateways`, `listeners`, within the listener budgets of `budget`;
//! dedicated data planes only for Gateways `admission` admits: tunnel claims
//! arbitrated, per-namespace caps kept),
//! route attachment per parentRef (`attach`),
//! rule translation (`routes`, `backends`, with BackendTLSPolicy from
//! `backend_tls`), cross-namespace hostname conflicts
//! (`conflicts`), then assembly per data plane (`planes`), where each route is also
//! compiled alone by the router so a route the router refuses is reported, not
//! served, and the HTTPS redirects Gateways ask for are added (`redirect`). Objects Culvert reads but cannot honour are refused in their status, not
//! ignored: TCPRoutes and UDPRoutes (`l4_routes`), ListenerSets (`listener_sets`).
//! Start at [`translate`].

mod admission;
mod attach;
mod backend_tls;
mod backends;
mod budget;
mod certificates;
mod client_validation;
mod conditions;
mod conflicts;
mod gateways;
mod l4_routes;
mod listener_sets;
mod listeners;
mod planes;
mod redirect;
mod references;
mod routes;
mod status;

pub use budget::{LISTENERS_PER_GATEWAY, LISTENERS_PER_PLANE};

/// The connector token in key `key` of Secret `namespace/name`, parsed and
/// checked as admission checks it, or why it cannot be used (naming the Secret
/// and key, never any of the token).
pub fn read_tunnel_token(
    store: &Store,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<TunnelToken, String> {
    admission::tunnel_claims::read_token(store, namespace, name, key)
}

/// The address Gateways on GatewayClass `class`'s shared plane are reached at
/// when the class has a tunnel whose token reads: `<tunnel-id>.cfargotunnel.com`.
pub fn class_tunnel_address(store: &Store, class: &str) -> Option<GatewayAddress> {
    let tunnel = store.gateway_class_config(class)?.spec.tunnel.as_ref()?;
    let token_ref = &tunnel.token_ref;
    let key = token_ref.key.as_deref().unwrap_or(crate::model::TOKEN_KEY);
    let token =
        admission::tunnel_claims::read_token(store, &token_ref.namespace, &token_ref.name, key)
            .ok()?;
    Some(admission::tunnel_claims::tunnel_address(token.tunnel_id))
}

/// The connector token Gateway `key`'s GatewayConfig names, read and checked exactly
/// as tunnel-claim admission reads it (a Secret in the Gateway's own namespace, key
/// `token`, an account tag that is a Cloudflare account ID). `None` when the Gateway
/// asks for no GatewayConfig, its GatewayConfig has no tunnel, or the token does not
/// read.
pub fn gateway_tunnel_token(store: &Store, key: &NamespacedName) -> Option<TunnelToken> {
    let gateway = store.gateways.get(key)?;
    let config = store.gateway_config(&key.0, gateway)?;
    admission::config_token(store, key, config)?.ok()
}

pub use redirect::HTTPS_REDIRECT_ANNOTATION;
pub use status::Translation;

use crate::model::GatewayAddress;
use crate::store::{NamespacedName, Store};
use culvert_tunnel_proto::TunnelToken;

/// Settings of a translation.
pub struct Options {
    /// The `controllerName` of GatewayClasses Culvert owns.
    pub controller_name: String,
    /// Namespace prefixes whose routes win hostname conflicts before age decides.
    pub privileged_namespace_prefixes: Vec<String>,
    /// Assigns addresses to Gateways.
    pub addresses: Box<dyn AddressAssigner>,
    /// What is known about each tunnel claim ([`NoClaimChecks`] without Cloudflare
    /// credentials).
    pub claims: Box<dyn ClaimChecker>,
}

/// How far Cloudflare has confirmed that a connector token holds the tunnel it
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// The tunnel's own token carries the same account, tunnel and secret.
    Confirmed,
    /// Cloudflare answered, and the token does not hold that tunnel.
    Refuted,
    /// Not known (yet): no answer, an outage, or a credential Cloudflare refused.
    Unchecked,
}

/// What is known about tunnel claims. Translation is pure, so a checker answers
/// from what it already knows (a cache filled elsewhere) and may schedule a check
/// for later; it never blocks on Cloudflare.
pub trait ClaimChecker {
    /// Whether claims can be checked at all (Cloudflare credentials exist). When
    /// they cannot, every claim is unchecked and unchecked claims compete as
    /// equals; when they can, a new unchecked claim waits for its check.
    fn available(&self) -> bool;

    /// What is known about `gateway`'s claim on the tunnel `token` names.
    fn proof(&self, gateway: &NamespacedName, token: &TunnelToken) -> Proof;
}

/// No Cloudflare credentials: proof is unavailable and every claim unchecked.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoClaimChecks;

impl ClaimChecker for NoClaimChecks {
    fn available(&self) -> bool {
        false
    }

    fn proof(&self, _gateway: &NamespacedName, _token: &TunnelToken) -> Proof {
        Proof::Unchecked
    }
}

/// Why admission refused a Gateway its dedicated data plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneRefusal {
    /// Its tunnel claim was refused (contested, unproven, the class's tunnel, or a
    /// token that cannot be read).
    TunnelClaimRejected,
    /// Its namespace is at the class's `maxDataPlanesPerNamespace`.
    DataPlaneQuotaExceeded,
    /// Its own GatewayConfig or tunnel token does not resolve (a Secret deleted,
    /// say): it takes no new config, but a plane already running keeps serving the
    /// last one it was given.
    ConfigUnresolved,
}

impl PlaneRefusal {
    /// The reason events about the refusal carry.
    pub fn reason(self) -> &'static str {
        match self {
            Self::TunnelClaimRejected => "TunnelClaimRejected",
            Self::DataPlaneQuotaExceeded => "DataPlaneQuotaExceeded",
            Self::ConfigUnresolved => "InvalidParameters",
        }
    }
}

/// Decides the addresses of a Gateway.
pub trait AddressAssigner {
    /// The addresses `gateway` gets, given the ones it requests.
    fn assign(
        &self,
        gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError>;

    /// The same, for an assigner that also reads the objects being translated
    /// (`culvert controller` reports the load balancer of a plane's Service);
    /// [`assign`](Self::assign) by default.
    fn assign_from(
        &self,
        _store: &Store,
        gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        self.assign(gateway, requested)
    }

    /// Whether the assigned addresses belong to this host, so listeners bind to
    /// them. `false` when they are published elsewhere (the nodes of a DaemonSet):
    /// listeners then bind every address of the pod.
    fn binds(&self) -> bool {
        true
    }
}

/// Why a Gateway's requested addresses cannot all be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressError {
    /// An address type Culvert does not support: the Gateway is not accepted.
    UnsupportedType(String),
    /// A supported type whose value cannot be used here: the Gateway is accepted
    /// but cannot be programmed.
    NotUsable(String),
    /// No address yet (a load balancer still being provisioned): the Gateway is
    /// accepted but not programmed, reason `AddressNotAssigned`.
    NotAssigned(String),
}

/// Every Gateway gets the same fixed addresses (a bare-metal host or a node); a
/// Gateway may request only those.
#[derive(Debug, Clone)]
pub struct FixedAddresses(pub Vec<String>);

impl AddressAssigner for FixedAddresses {
    fn assign(
        &self,
        _gateway: &NamespacedName,
        requested: &[GatewayAddress],
    ) -> Result<Vec<GatewayAddress>, AddressError> {
        for address in requested {
            let kind = address.kind.as_deref().unwrap_or("IPAddress");
            if kind != "IPAddress" {
                return Err(AddressError::UnsupportedType(format!(
                    "address type {kind:?} is not supported"
                )));
            }
            if let Some(value) = &address.value {
                if !self.0.contains(value) {
                    return Err(AddressError::NotUsable(format!(
                        "address {value:?} is not one this data plane can use"
                    )));
                }
            }
        }
        let wanted: Vec<&String> = requested.iter().filter_map(|a| a.value.as_ref()).collect();
        Ok(self
            .0
            .iter()
            .filter(|a| wanted.is_empty() || wanted.contains(a))
            .map(|value| GatewayAddress {
                kind: Some("IPAddress".to_owned()),
                value: Some(value.clone()),
            })
            .collect())
    }
}

/// Which data plane serves a Gateway.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataPlaneId {
    /// The shared data plane of a GatewayClass.
    Shared(String),
    /// A dedicated data plane for one Gateway (`GatewayConfig`).
    Dedicated(NamespacedName),
}

/// Translates everything in `store`.
pub fn translate(store: &Store, options: &Options) -> Translation {
    let classes = gateways::classes(store, options);
    let mut gateways = gateways::gateways(store, options, &classes);
    let mut routes = planes::attach_all(store, &gateways);
    let privileged: Vec<String> = classes
        .values()
        .flat_map(|c| c.privileged_prefixes.iter().cloned())
        .collect();
    conflicts::resolve(&mut routes, &gateways, &privileged);
    let data_planes = planes::assemble(store, &mut routes, &mut gateways);
    let mut translation = status::build(store, options, &classes, &gateways, &routes, data_planes);
    translation.routes.extend(l4_routes::statuses(
        store,
        &gateways,
        &options.controller_name,
    ));
    listener_sets::report(store, &gateways, &mut translation);
    translation
}

#[cfg(test)]
mod tests;
