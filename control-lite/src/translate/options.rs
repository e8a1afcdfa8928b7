//! What a translation is given besides the objects: the controller it speaks for,
//! how Gateways get addresses ([`AddressAssigner`]) and what is known about tunnel
//! claims ([`ClaimChecker`]). The bottom layer: it imports no stage.

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
