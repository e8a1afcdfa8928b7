//! Admission of dedicated data planes: which Gateways that ask for a plane of their
//! own (`spec.infrastructure.parametersRef`) get one. Two rules, each in its own
//! module: the tunnel a Gateway's token names must be its to serve
//! (`tunnel_claims`), and its namespace must have a free slot under the class's
//! cap (`caps`).
//!
//! The two verdicts are computed independently, from the same inputs: a Gateway
//! refused its tunnel still holds its cap slot, and a Gateway over the cap still
//! holds or contests its tunnel. Neither verdict moves when the other changes, so
//! fixing one problem never evicts a neighbour through the other rule. When both
//! refuse, the claim is reported (`Accepted=False`, `InvalidParameters`) rather than
//! the cap: it is a fault of the Gateway's own parameters that no free slot would
//! cure, while a cap refusal can end on its own when an older sibling goes.
//!
//! An admitted tunnel Gateway advertises `<tunnel-id>.cfargotunnel.com` as its one
//! address. A refused one keeps the tunnel hostname its status already advertises,
//! since that address is how it holds the tunnel. Start at [`admit`].

pub(crate) mod caps;
mod seniority;
pub(crate) mod tunnel_claims;

use super::conditions::{Verdict, reason};
use super::options::{Options, Proof};
use super::state::{ClassState, Context, DataPlaneId, PlaneRefusal};
use super::tunnels::{advertised_tunnel, read_token, tunnel_address};
use crate::Error;
use crate::model::{Gateway, GatewayConfig, SecretObjectReference, TOKEN_KEY};
use crate::store::{NamespacedName, Store};
use culvert_tunnel_proto::{TunnelToken, Uuid};
pub(crate) use seniority::Seniority;
use std::collections::{BTreeMap, BTreeSet};
use tunnel_claims::{Claim, Outcome};

/// Applies both admission rules to the Gateways asking for a dedicated plane:
/// refuses those that may not have one and gives tunnel Gateways their address.
pub(crate) fn admit(cx: &mut Context<'_>) {
    let Context {
        store,
        options,
        classes,
        gateways: states,
        ..
    } = cx;
    let (store, options) = (*store, *options);
    let asking: Vec<(usize, &Gateway, &ClassState)> = states
        .iter()
        .enumerate()
        .filter_map(|(index, state)| {
            let gateway = store.gateways.get(&state.key)?;
            gateway
                .spec
                .infrastructure
                .as_ref()?
                .parameters_ref
                .as_ref()?;
            let class = classes.get(&gateway.spec.gateway_class_name)?;
            Some((index, gateway, class))
        })
        .collect();
    let requests: Vec<caps::Request> = asking
        .iter()
        .map(|(index, gateway, class)| caps::Request {
            namespace: states[*index].key.0.clone(),
            class: gateway.spec.gateway_class_name.clone(),
            seniority: Seniority::of(&states[*index].key, &gateway.metadata),
            cap: class.max_data_planes,
        })
        .collect();
    let over_cap = caps::over_cap(&requests);
    let mut claims: Vec<Claim> = Vec::new();
    let mut claim_of: BTreeMap<usize, usize> = BTreeMap::new();
    for (index, gateway, class) in &asking {
        if let Some(claim) = claim(store, options, &states[*index].key, gateway, class) {
            claim_of.insert(*index, claims.len());
            claims.push(claim);
        }
    }
    let class_tunnels: BTreeSet<Uuid> = classes.values().filter_map(|c| c.tunnel).collect();
    let outcomes = tunnel_claims::arbitrate(&claims, &class_tunnels, options.claims.available());
    for ((index, _, _), over_cap) in asking.iter().zip(over_cap) {
        let state = &mut states[*index];
        let claim = claim_of.get(index).map(|&c| (&claims[c], &outcomes[c]));
        let refusal = match (claim, over_cap) {
            (Some((claim, Outcome::Refuse(message))), _) if claim.tunnel.is_err() => Some((
                PlaneRefusal::ConfigUnresolved,
                Verdict::no(reason::INVALID_PARAMETERS, message.clone()),
                reason::INVALID_PARAMETERS,
            )),
            (Some((_, Outcome::Refuse(message))), _) => Some((
                PlaneRefusal::TunnelClaimRejected,
                Verdict::no(reason::INVALID_PARAMETERS, message.clone()),
                reason::TUNNEL_CLAIM_REJECTED,
            )),
            (_, Some(message)) => Some((
                PlaneRefusal::DataPlaneQuotaExceeded,
                Verdict::no(reason::DATA_PLANE_QUOTA_EXCEEDED, message),
                reason::DATA_PLANE_QUOTA_EXCEEDED,
            )),
            _ => None,
        };
        if let Some((kind, verdict, route_reason)) = refusal {
            if state.accepted.status {
                state.parent_refusal = Some(Verdict::no(
                    route_reason,
                    format!("the Gateway is not accepted: {}", verdict.message),
                ));
                state.accepted = verdict;
                state.refused_plane = Some(kind);
            }
        }
        match claim {
            Some((_, Outcome::Admit(tunnel))) if state.accepted.status => {
                state.tunnel = Some(*tunnel);
                state.addresses = vec![tunnel_address(*tunnel)];
                state.address_problem = None;
                state.address_pending = None;
                // Its traffic arrives through the tunnel: no address to bind.
                state.local_ip = None;
            }
            Some((claim, _)) if !state.accepted.status => {
                if let Some(held) = claim.advertised {
                    state.addresses = vec![tunnel_address(held)];
                }
            }
            _ => {}
        }
        if !state.accepted.status {
            state.plane = None;
        }
    }
}

/// The claim a Gateway asking for a plane makes: the tunnel its GatewayConfig's
/// token names, or, when its configuration does not resolve, the tunnel its status
/// already advertises. `None` when it claims no tunnel.
fn claim(
    store: &Store,
    options: &Options,
    key: &NamespacedName,
    gateway: &Gateway,
    class: &ClassState,
) -> Option<Claim> {
    let advertised = gateway
        .status
        .as_ref()
        .and_then(|s| advertised_tunnel(&s.addresses));
    let token = match store.gateway_config(key.0.as_str(), gateway) {
        Some(config) => config_token(store, key, config)?,
        None => {
            advertised?;
            Err(Error::GatewayConfigUnresolved)
        }
    };
    let proof = match &token {
        Ok(token) => options.claims.proof(key, token),
        Err(_) => Proof::Unchecked,
    };
    Some(Claim {
        gateway: key.clone(),
        seniority: Seniority::of(key, &gateway.metadata),
        deleting: gateway.metadata.deletion_timestamp.is_some(),
        share_across: class.allow_shared_tunnels,
        // The claim carries the message its refusal will show.
        tunnel: token
            .map(|t| t.tunnel_id)
            .map_err(|error| error.to_string()),
        advertised,
        proof,
    })
}

/// The connector token of the tunnel Gateway `key`'s GatewayConfig names, or why it
/// cannot be read; `None` when the GatewayConfig has no tunnel.
pub(crate) fn config_token(
    store: &Store,
    key: &NamespacedName,
    config: &GatewayConfig,
) -> Option<Result<TunnelToken, Error>> {
    let tunnel = config.spec.tunnel.as_ref()?;
    Some(
        local_secret(key, &tunnel.token_ref)
            .and_then(|name| read_token(store, &key.0, name, TOKEN_KEY)),
    )
}

/// The name of the Secret a GatewayConfig's `tokenRef` names, which must be a
/// Secret in the Gateway's own namespace: a tenant can only ever point at its own
/// credentials.
fn local_secret<'r>(
    key: &NamespacedName,
    reference: &'r SecretObjectReference,
) -> Result<&'r str, Error> {
    let group = reference.group.as_deref().unwrap_or("");
    let kind = reference.kind.as_deref().unwrap_or("Secret");
    if !group.is_empty() || kind != "Secret" {
        return Err(Error::TokenRefKind {
            group: group.to_owned(),
            kind: kind.to_owned(),
        });
    }
    match reference.namespace.as_deref() {
        Some(namespace) if namespace != key.0 => Err(Error::TokenRefNamespace {
            gateway_namespace: key.0.clone(),
            namespace: namespace.to_owned(),
        }),
        _ => Ok(&reference.name),
    }
}

/// Marks the dedicated Gateways still served that share a tunnel with another
/// dedicated Gateway (the class's shared plane does not count), so their routes say
/// so.
pub(crate) fn mark_shared(cx: &mut Context<'_>) {
    let states = &mut cx.gateways;
    let mut by_tunnel: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
    for (index, state) in states.iter().enumerate() {
        if let (Some(tunnel), Some(DataPlaneId::Dedicated(_))) = (state.tunnel, &state.plane) {
            by_tunnel.entry(tunnel).or_default().push(index);
        }
    }
    for (tunnel, members) in by_tunnel.into_iter().filter(|(_, m)| m.len() > 1) {
        for &index in &members {
            let namespace = &states[index].key.0;
            let others: Vec<String> = members
                .iter()
                .filter(|&&other| other != index)
                .map(|&other| format!("{}/{}", states[other].key.0, states[other].key.1))
                .collect();
            let across = members.iter().any(|&m| states[m].key.0 != *namespace);
            let shared = Verdict {
                status: true,
                reason: if across {
                    reason::TUNNEL_SHARED_ACROSS_NAMESPACES
                } else {
                    reason::TUNNEL_SHARED_WITHIN_NAMESPACE
                },
                message: format!(
                    "tunnel {tunnel} is also served by dedicated Gateway(s) {}, which see \
                     this route's configuration",
                    others.join(", ")
                ),
            };
            states[index].tunnel_shared = Some(shared);
        }
    }
}
