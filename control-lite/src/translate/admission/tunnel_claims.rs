//! Tunnel claims: which dedicated Gateways may serve the Cloudflare Tunnel their
//! connector token names. Pure: the proof of each claim comes in from the
//! [`ClaimChecker`](crate::translate::ClaimChecker), already known; nothing here asks
//! Cloudflare or reads a clock.
//!
//! The tunnel is the one the token names (never a separate id that could drift
//! from it), read from a Secret by [`read_token`](crate::translate::tunnels::read_token),
//! which says why it cannot, naming the Secret and never the token. [`arbitrate`]
//! then decides every claim at once, tunnel by tunnel:
//!
//! - a refuted claim is refused and contests nothing; its message says only that
//!   Cloudflare did not confirm it, since anything more would tell a tenant which
//!   tunnels exist;
//! - while a checker is configured, an unchecked claim that does not already hold
//!   its tunnel is refused until the check answers, and contests nothing; without
//!   one ("proof unavailable") unchecked claims compete as equals;
//! - the GatewayClass's own tunnel belongs to the operator: every claim on it is
//!   refused;
//! - among the rest, a Gateway being deleted keeps its tunnel until it is gone
//!   (its connector may still serve), then a confirmed claim beats an unchecked
//!   one, then possession (the tunnel's hostname already in `status.addresses`)
//!   beats age, and only then age and UID decide;
//! - the holder shares with Gateways of its own namespace, and with other
//!   namespaces only when both classes set `allowSharedTunnels`; every other
//!   contender is refused, told which Gateway serves the tunnel.
//!
//! A Gateway whose token cannot be read but whose status already advertises a
//! tunnel still holds that tunnel against newcomers (so a token rotation never
//! surrenders it), though it is itself refused. Start at [`arbitrate`].

use super::seniority::Seniority;
use crate::store::NamespacedName;
use crate::translate::options::Proof;
use culvert_tunnel_proto::Uuid;
use std::collections::{BTreeMap, BTreeSet};

/// What one dedicated Gateway brings to the arbitration.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) gateway: NamespacedName,
    pub(crate) seniority: Seniority,
    /// Its deletion was requested; finalizers still hold it.
    pub(crate) deleting: bool,
    /// Its class allows Gateways of different namespaces on one tunnel.
    pub(crate) share_across: bool,
    /// The tunnel its token names, or why none can be read.
    pub(crate) tunnel: Result<Uuid, String>,
    /// The tunnel its stored status advertises.
    pub(crate) advertised: Option<Uuid>,
    /// What the checker knows of the claim (`Unchecked` when there is no token).
    pub(crate) proof: Proof,
}

impl Claim {
    /// The tunnel it competes for: the token's, else the one it already advertises.
    fn contested(&self) -> Option<Uuid> {
        self.tunnel.as_ref().ok().copied().or(self.advertised)
    }

    fn possesses(&self, tunnel: Uuid) -> bool {
        self.advertised == Some(tunnel)
    }
}

/// The verdict on one claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The Gateway serves this tunnel.
    Admit(Uuid),
    /// Refused, with the message its `Accepted` condition carries.
    Refuse(String),
}

/// Decides every claim; the outcomes are in the order of `claims`. `class_tunnels`
/// are the tunnels GatewayClasses serve; `proof_available` is whether a checker
/// with credentials is configured.
pub(crate) fn arbitrate(
    claims: &[Claim],
    class_tunnels: &BTreeSet<Uuid>,
    proof_available: bool,
) -> Vec<Outcome> {
    let mut outcomes: Vec<Outcome> = claims
        .iter()
        .map(|claim| match &claim.tunnel {
            Ok(tunnel) => Outcome::Admit(*tunnel),
            Err(why) => Outcome::Refuse(why.clone()),
        })
        .collect();
    let mut contenders: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
    for (index, claim) in claims.iter().enumerate() {
        let Some(tunnel) = claim.contested() else {
            continue;
        };
        let holder = claim.possesses(tunnel) || claim.deleting;
        let refusal = match claim.proof {
            Proof::Refuted => Some(
                "Cloudflare did not confirm that the connector token holds the tunnel it names"
                    .to_owned(),
            ),
            Proof::Unchecked if proof_available && !holder => Some(format!(
                "the claim on tunnel {tunnel} is not confirmed by Cloudflare yet; \
                 the check will be retried"
            )),
            _ if class_tunnels.contains(&tunnel) => Some(format!(
                "tunnel {tunnel} is the GatewayClass's own tunnel; no Gateway may claim it"
            )),
            _ => None,
        };
        match refusal {
            Some(message) => {
                // A refusal of the token itself says more than this one.
                if matches!(outcomes[index], Outcome::Admit(_)) {
                    outcomes[index] = Outcome::Refuse(message);
                }
            }
            None => contenders.entry(tunnel).or_default().push(index),
        }
    }
    for (tunnel, mut indexes) in contenders {
        indexes.sort_by_key(|&i| {
            let claim = &claims[i];
            (
                !claim.deleting,
                claim.proof != Proof::Confirmed,
                !claim.possesses(tunnel),
                claim.seniority.clone(),
            )
        });
        let Some((&first, rest)) = indexes.split_first() else {
            continue;
        };
        let holder = &claims[first];
        for &index in rest {
            let claim = &claims[index];
            let shares =
                claim.gateway.0 == holder.gateway.0 || (claim.share_across && holder.share_across);
            if !shares && matches!(outcomes[index], Outcome::Admit(_)) {
                let (namespace, name) = &holder.gateway;
                outcomes[index] = Outcome::Refuse(format!(
                    "tunnel {tunnel} is already served by Gateway {namespace}/{name} \
                     in another namespace"
                ));
            }
        }
    }
    outcomes
}
