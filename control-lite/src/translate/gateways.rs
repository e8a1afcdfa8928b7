//! GatewayClasses and Gateways: which belong to Culvert, their parameters, addresses
//! and listeners, and which data plane serves each (within the listener budgets of
//! `budget`, and for dedicated planes the tunnel claims and caps of `admission`).

use super::admission::{self, tunnel_claims};
use super::backend_tls;
use super::budget;
use super::client_validation;
use super::conditions::{Verdict, reason};
use super::listeners::{self, ListenerState, Transport};
use super::redirect;
use super::{AddressError, DataPlaneId, Options, PlaneRefusal};
use crate::model::{
    CULVERT_GROUP, Gateway, GatewayAddress, GatewayClass, GatewayClassConfig, TOKEN_KEY,
};
use crate::store::{NamespacedName, Store};
use culvert_router::config::BackendClientCertificate;
use culvert_tunnel_proto::Uuid;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// A GatewayClass Culvert owns, and its verdict.
pub(crate) struct ClassState {
    pub(crate) generation: i64,
    pub(crate) accepted: Verdict,
    pub(crate) privileged_prefixes: Vec<String>,
    /// Gateways of different namespaces may share a tunnel (`allowSharedTunnels`).
    pub(crate) allow_shared_tunnels: bool,
    /// Most dedicated planes per namespace (`maxDataPlanesPerNamespace`).
    pub(crate) max_data_planes: Option<u32>,
    /// The tunnel the class's shared plane serves, which no Gateway may claim.
    pub(crate) tunnel: Option<Uuid>,
}

/// Validates the classes whose controller is ours.
pub(crate) fn classes(store: &Store, options: &Options) -> BTreeMap<String, ClassState> {
    store
        .gateway_classes
        .iter()
        .filter(|(_, class)| class.spec.controller_name == options.controller_name)
        .map(|(name, class)| (name.clone(), class_state(store, class, options)))
        .collect()
}

fn class_state(store: &Store, class: &GatewayClass, options: &Options) -> ClassState {
    let mut state = ClassState {
        generation: class.metadata.generation(),
        accepted: Verdict::yes(reason::ACCEPTED),
        privileged_prefixes: options.privileged_namespace_prefixes.clone(),
        allow_shared_tunnels: false,
        max_data_planes: None,
        tunnel: None,
    };
    state.accepted = match &class.spec.parameters_ref {
        None => Verdict::yes(reason::ACCEPTED),
        Some(reference)
            if reference.group == CULVERT_GROUP && reference.kind == "GatewayClassConfig" =>
        {
            match store.gateway_class_configs.get(&reference.name) {
                Some(config) => apply_class_config(store, config, &mut state),
                None => Verdict::no(
                    reason::INVALID_PARAMETERS,
                    format!("GatewayClassConfig {:?} not found", reference.name),
                ),
            }
        }
        Some(reference) => Verdict::no(
            reason::INVALID_PARAMETERS,
            format!(
                "parametersRef must be a {CULVERT_GROUP} GatewayClassConfig, not {}/{}",
                reference.group, reference.kind
            ),
        ),
    };
    state
}

/// Takes a GatewayClassConfig's policy into the class. A class tunnel whose token
/// cannot be read refuses the class: the tunnel could not be defended against
/// claims, so the class fails closed until the operator fixes it.
fn apply_class_config(
    store: &Store,
    config: &GatewayClassConfig,
    state: &mut ClassState,
) -> Verdict {
    let spec = &config.spec;
    state
        .privileged_prefixes
        .extend(spec.privileged_namespace_prefixes.iter().cloned());
    state.allow_shared_tunnels = spec.allow_shared_tunnels;
    state.max_data_planes = spec.max_data_planes_per_namespace;
    let Some(tunnel) = &spec.tunnel else {
        return Verdict::yes(reason::ACCEPTED);
    };
    let reference = &tunnel.token_ref;
    let key = reference.key.as_deref().unwrap_or(TOKEN_KEY);
    match tunnel_claims::read_token(store, &reference.namespace, &reference.name, key) {
        Ok(token) => {
            state.tunnel = Some(token.tunnel_id);
            Verdict::yes(reason::ACCEPTED)
        }
        Err(why) => Verdict::no(
            reason::INVALID_PARAMETERS,
            format!("the class tunnel cannot be read: {why}"),
        ),
    }
}

/// A Gateway Culvert owns, after validation.
pub(crate) struct GatewayState {
    pub(crate) key: NamespacedName,
    pub(crate) generation: i64,
    pub(crate) creation_timestamp: String,
    pub(crate) accepted: Verdict,
    pub(crate) addresses: Vec<GatewayAddress>,
    /// Why the requested addresses cannot be programmed, when they cannot.
    pub(crate) address_problem: Option<String>,
    /// What its address waits for (a load balancer being provisioned): it keeps
    /// its plane, since the plane is what gets the address.
    pub(crate) address_pending: Option<String>,
    /// The address its listeners bind, when the address is an IP.
    pub(crate) local_ip: Option<IpAddr>,
    pub(crate) listeners: Vec<ListenerState>,
    /// A port lets clients without a valid certificate through
    /// (`InsecureFrontendValidationMode`).
    pub(crate) insecure_frontend_validation: bool,
    /// `None` when the Gateway is not accepted and so not served.
    pub(crate) plane: Option<DataPlaneId>,
    /// What its routes' parents say when admission refused it (`admission`).
    pub(crate) parent_refusal: Option<Verdict>,
    /// Which admission rule refused its dedicated plane.
    pub(crate) refused_plane: Option<PlaneRefusal>,
    /// The tunnel its dedicated plane serves, once admitted.
    pub(crate) tunnel: Option<Uuid>,
    /// Set when its tunnel is shared with other dedicated Gateways (`TunnelShared`).
    pub(crate) tunnel_shared: Option<Verdict>,
    /// The status code of the HTTPS redirect it asks for (`redirect`).
    pub(crate) https_redirect: Option<u16>,
    /// The client certificate it shows backends over TLS (`spec.tls.backend`).
    pub(crate) backend_client_certificate: Option<BackendClientCertificate>,
    /// The Gateway-level `ResolvedRefs`, when `spec.tls.backend` names a certificate.
    pub(crate) resolved_refs: Option<Verdict>,
}

impl GatewayState {
    /// The Gateway-level `Programmed` verdict.
    pub(crate) fn programmed(&self) -> Verdict {
        if !self.accepted.status {
            Verdict::no(reason::INVALID, "gateway is not accepted")
        } else if let Some(problem) = &self.address_problem {
            Verdict::no(reason::ADDRESS_NOT_USABLE, problem.clone())
        } else if let Some(pending) = &self.address_pending {
            Verdict::no(reason::ADDRESS_NOT_ASSIGNED, pending.clone())
        } else if self.addresses.is_empty() {
            Verdict::no(reason::ADDRESS_NOT_USABLE, "no address could be assigned")
        } else {
            Verdict::yes(reason::PROGRAMMED)
        }
    }

    /// The name a listener has in the data-plane config.
    pub(crate) fn listener_id(&self, listener: &ListenerState) -> String {
        format!("{}/{}/{}", self.key.0, self.key.1, listener.name)
    }
}

/// Validates every Gateway of an accepted class of ours, oldest first.
pub(crate) fn gateways(
    store: &Store,
    options: &Options,
    classes: &BTreeMap<String, ClassState>,
) -> Vec<GatewayState> {
    let mut states: Vec<GatewayState> = store
        .gateways
        .iter()
        .filter(|(_, gateway)| classes.contains_key(&gateway.spec.gateway_class_name))
        .map(|(key, gateway)| {
            let mut state = gateway_state(
                store,
                options,
                key,
                gateway,
                &classes[&gateway.spec.gateway_class_name],
            );
            match redirect::policy(gateway, store.gateway_config(key.0.as_str(), gateway)) {
                Ok(code) => state.https_redirect = code,
                Err(why) if state.accepted.status => {
                    state.accepted = Verdict::no(reason::UNSUPPORTED_VALUE, why);
                }
                Err(_) => {}
            }
            state
        })
        .collect();
    states.sort_by(|a, b| (&a.creation_timestamp, &a.key).cmp(&(&b.creation_timestamp, &b.key)));
    for state in &mut states {
        budget::refuse_oversized(state);
    }
    admission::admit(store, options, classes, &mut states);
    resolve_shared_plane_conflicts(&mut states);
    for state in &mut states {
        state.accepted = gateway_verdict(state.accepted.clone(), &state.listeners);
    }
    budget::fit_planes(&mut states);
    for state in &mut states {
        if !state.accepted.status || state.address_problem.is_some() {
            state.plane = None;
        }
    }
    admission::mark_shared(&mut states);
    states
}

fn gateway_state(
    store: &Store,
    options: &Options,
    key: &NamespacedName,
    gateway: &Gateway,
    class: &ClassState,
) -> GatewayState {
    let mut accepted = if class.accepted.status {
        Verdict::yes(reason::ACCEPTED)
    } else {
        Verdict::no(
            reason::INVALID_PARAMETERS,
            format!(
                "GatewayClass {} is not accepted",
                gateway.spec.gateway_class_name
            ),
        )
    };
    let mut plane = Some(DataPlaneId::Shared(gateway.spec.gateway_class_name.clone()));
    if let Some(reference) = gateway
        .spec
        .infrastructure
        .as_ref()
        .and_then(|i| i.parameters_ref.as_ref())
    {
        if store.gateway_config(key.0.as_str(), gateway).is_some() {
            plane = Some(DataPlaneId::Dedicated(key.clone()));
        } else {
            accepted = Verdict::no(
                reason::INVALID_PARAMETERS,
                format!(
                    "infrastructure.parametersRef must name an existing {CULVERT_GROUP} GatewayConfig in {}, not {}/{} {:?}",
                    key.0, reference.group, reference.kind, reference.name
                ),
            );
        }
    }
    if let Some(tls) = &gateway.spec.tls {
        let unknown_backend = tls.backend.iter().flat_map(|backend| {
            backend
                .unknown
                .keys()
                .map(|field| format!("spec.tls.backend.{field}"))
        });
        let unsupported = tls
            .unknown
            .keys()
            .map(|field| format!("spec.tls.{field}"))
            .chain(unknown_backend)
            .next()
            .map(|field| format!("{field} is not supported"));
        if let (Some(why), true) = (unsupported, accepted.status) {
            accepted = Verdict::no(reason::UNSUPPORTED_VALUE, why);
        }
    }
    if let Some(field) = gateway.spec.unknown.keys().next() {
        if accepted.status {
            accepted = Verdict::no(
                reason::UNSUPPORTED_VALUE,
                format!("spec.{field} is not supported"),
            );
        }
    }
    let (backend_client_certificate, resolved_refs) =
        backend_tls::client_certificate(store, gateway);
    let mut address_problem = None;
    let mut address_pending = None;
    let addresses = match options
        .addresses
        .assign_from(store, key, &gateway.spec.addresses)
    {
        Ok(addresses) => addresses,
        Err(AddressError::UnsupportedType(why)) => {
            if accepted.status {
                accepted = Verdict::no(reason::UNSUPPORTED_ADDRESS, why);
            }
            Vec::new()
        }
        Err(AddressError::NotUsable(why)) => {
            address_problem = Some(why);
            Vec::new()
        }
        Err(AddressError::NotAssigned(why)) => {
            address_pending = Some(why);
            Vec::new()
        }
    };
    let local_ip = addresses
        .iter()
        .filter(|_| options.addresses.binds())
        .find(|a| a.kind.as_deref().is_none_or(|k| k == "IPAddress"))
        .and_then(|a| a.value.as_deref())
        .and_then(|v| v.parse::<IpAddr>().ok())
        // An unspecified address means "every address": no per-address socket.
        .filter(|ip| !ip.is_unspecified());
    GatewayState {
        key: key.clone(),
        generation: gateway.metadata.generation(),
        creation_timestamp: gateway
            .metadata
            .creation_timestamp
            .clone()
            .unwrap_or_default(),
        accepted,
        addresses,
        address_problem,
        address_pending,
        local_ip,
        listeners: listeners::validate(gateway, store),
        insecure_frontend_validation: client_validation::insecure_fallback(gateway),
        plane,
        parent_refusal: None,
        refused_plane: None,
        tunnel: None,
        tunnel_shared: None,
        https_redirect: None,
        backend_client_certificate,
        resolved_refs,
    }
}

/// Gateway `Accepted`: an earlier refusal stands; otherwise valid listeners decide.
fn gateway_verdict(earlier: Verdict, listeners: &[ListenerState]) -> Verdict {
    if !earlier.status {
        return earlier;
    }
    let invalid = listeners.iter().filter(|l| !l.usable()).count();
    if invalid == 0 {
        earlier
    } else if invalid == listeners.len() {
        Verdict::no(reason::LISTENERS_NOT_VALID, "no listener is valid")
    } else {
        Verdict {
            status: true,
            reason: reason::LISTENERS_NOT_VALID,
            message: format!("{invalid} listener(s) are not valid"),
        }
    }
}

/// A listening socket of a data plane.
type Socket = (DataPlaneId, Option<IpAddr>, u16);
/// Who holds a socket: transport, hostname and owning Gateway.
type Claim = (Transport, Option<String>, String);

/// Gateways sharing a data plane share its sockets: a listener that would take an
/// address, port and hostname an older Gateway already serves is refused.
fn resolve_shared_plane_conflicts(states: &mut [GatewayState]) {
    let mut taken: BTreeMap<Socket, Vec<Claim>> = BTreeMap::new();
    for state in states.iter_mut() {
        let Some(plane) = state.plane.clone() else {
            continue;
        };
        let owner = format!("{}/{}", state.key.0, state.key.1);
        for listener in state.listeners.iter_mut().filter(|l| l.usable()) {
            let slot = taken
                .entry((plane.clone(), state.local_ip, listener.port))
                .or_default();
            let hostname = listener.hostname.as_ref().map(ToString::to_string);
            let clash = slot.iter().find(|(transport, other_host, other_owner)| {
                *other_owner != owner
                    && (!transport.compatible(listener.transport) || *other_host == hostname)
            });
            if let Some((transport, _, other_owner)) = clash {
                let why = if transport.compatible(listener.transport) {
                    reason::HOSTNAME_CONFLICT
                } else {
                    reason::PROTOCOL_CONFLICT
                };
                let message = format!(
                    "port {} is already served by Gateway {other_owner} on the same data plane",
                    listener.port
                );
                listener.mark_conflicted(why, message);
            } else {
                slot.push((listener.transport, hostname, owner.clone()));
            }
        }
    }
}
