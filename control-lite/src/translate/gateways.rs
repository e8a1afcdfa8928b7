//! The second stage: the Gateways of Culvert's classes, each validated on its own
//! (class, parameters, unsupported fields, addresses, listeners, the HTTPS redirect
//! it asks for, the client certificate it shows backends) and put in the order they
//! hold sockets, slots and tunnels: oldest first. `translate` then runs the steps
//! that weigh Gateways against each other, in order: listener budgets (`budget`),
//! admission of dedicated planes (`admission`), sockets of shared planes
//! ([`resolve_shared_plane_conflicts`]), the verdict of their listeners
//! ([`judge_listeners`]), the plane budgets, and [`withdraw_unserved`].

use super::certificates::tls_pair;
use super::client_validation;
use super::conditions::{Verdict, reason};
use super::listeners;
use super::options::{AddressError, Options};
use super::references::{GatewayRefError, gateway_core_ref};
use super::state::{ClassState, Context, DataPlaneId, GatewayState, ListenerState, Transport};
use crate::Error;
use crate::model::{
    CULVERT_GROUP, Gateway, GatewayAddress, GatewayConfig, HTTPS_REDIRECT_ANNOTATION,
};
use crate::store::{NamespacedName, Store};
use culvert_router::config::BackendClientCertificate;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// `ResolvedRefs` reason of an unusable `spec.tls.backend.clientCertificateRef`.
const INVALID_CLIENT_CERTIFICATE_REF: &str = "InvalidClientCertificateRef";

/// Validates every Gateway of a class of ours, oldest first (creation time, then
/// namespace and name).
pub(crate) fn validate(cx: &mut Context<'_>) {
    let (store, options) = (cx.store, cx.options);
    let mut states: Vec<GatewayState> = store
        .gateways
        .iter()
        .filter_map(|(key, gateway)| {
            let class = cx.classes.get(&gateway.spec.gateway_class_name)?;
            Some(gateway_state(store, options, key, gateway, class))
        })
        .collect();
    states.sort_by(|a, b| (&a.creation_timestamp, &a.key).cmp(&(&b.creation_timestamp, &b.key)));
    cx.gateways = states;
}

/// One Gateway, validated on its own. The first refusal found is the one its
/// `Accepted` condition reports: its class, then its parameters, then unsupported
/// fields, then its addresses, then the redirect annotation.
fn gateway_state(
    store: &Store,
    options: &Options,
    key: &NamespacedName,
    gateway: &Gateway,
    class: &ClassState,
) -> GatewayState {
    let config = store.gateway_config(key.0.as_str(), gateway);
    let mut accepted = class_verdict(gateway, class);
    let plane = match plane(key, gateway, config) {
        Ok(plane) => Some(plane),
        Err(refusal) => {
            accepted = refusal;
            Some(DataPlaneId::Shared(gateway.spec.gateway_class_name.clone()))
        }
    };
    if let (Some(why), true) = (unsupported_field(gateway), accepted.status) {
        accepted = Verdict::no(reason::UNSUPPORTED_VALUE, why);
    }
    let (backend_client_certificate, resolved_refs) = client_certificate(store, gateway);
    let assigned = assign_addresses(store, options, key, gateway);
    if let (Some(why), true) = (assigned.unsupported, accepted.status) {
        accepted = Verdict::no(reason::UNSUPPORTED_ADDRESS, why);
    }
    let https_redirect = match https_redirect(gateway, config) {
        Ok(code) => code,
        Err(why) => {
            if accepted.status {
                accepted = Verdict::no(reason::UNSUPPORTED_VALUE, why.to_string());
            }
            None
        }
    };
    GatewayState {
        key: key.clone(),
        generation: gateway.metadata.generation(),
        creation_timestamp: gateway
            .metadata
            .creation_timestamp
            .clone()
            .unwrap_or_default(),
        accepted,
        local_ip: local_ip(&assigned.addresses, options),
        addresses: assigned.addresses,
        address_problem: assigned.problem,
        address_pending: assigned.pending,
        listeners: listeners::validate(gateway, store),
        insecure_frontend_validation: client_validation::insecure_fallback(gateway),
        plane,
        parent_refusal: None,
        refused_plane: None,
        tunnel: None,
        tunnel_shared: None,
        https_redirect,
        backend_client_certificate,
        resolved_refs,
    }
}

/// `Accepted` as far as the Gateway's class decides it.
fn class_verdict(gateway: &Gateway, class: &ClassState) -> Verdict {
    if class.accepted.status {
        Verdict::yes(reason::ACCEPTED)
    } else {
        Verdict::no(
            reason::INVALID_PARAMETERS,
            format!(
                "GatewayClass {} is not accepted",
                gateway.spec.gateway_class_name
            ),
        )
    }
}

/// The data plane the Gateway asks for: its own when
/// `infrastructure.parametersRef` names a GatewayConfig that exists, the class's
/// shared one when it names none, and the refusal when it names one that does not
/// resolve.
fn plane(
    key: &NamespacedName,
    gateway: &Gateway,
    config: Option<&GatewayConfig>,
) -> Result<DataPlaneId, Verdict> {
    let Some(reference) = gateway
        .spec
        .infrastructure
        .as_ref()
        .and_then(|i| i.parameters_ref.as_ref())
    else {
        return Ok(DataPlaneId::Shared(gateway.spec.gateway_class_name.clone()));
    };
    if config.is_some() {
        return Ok(DataPlaneId::Dedicated(key.clone()));
    }
    Err(Verdict::no(
        reason::INVALID_PARAMETERS,
        format!(
            "infrastructure.parametersRef must name an existing {CULVERT_GROUP} GatewayConfig in {}, not {}/{} {:?}",
            key.0, reference.group, reference.kind, reference.name
        ),
    ))
}

/// The first field of the Gateway's spec Culvert does not know: in `spec.tls`, in
/// `spec.tls.backend`, then in `spec`.
fn unsupported_field(gateway: &Gateway) -> Option<String> {
    let in_tls = gateway.spec.tls.as_ref().and_then(|tls| {
        let unknown_backend = tls.backend.iter().flat_map(|backend| {
            backend
                .unknown
                .keys()
                .map(|field| format!("spec.tls.backend.{field}"))
        });
        tls.unknown
            .keys()
            .map(|field| format!("spec.tls.{field}"))
            .chain(unknown_backend)
            .next()
    });
    let field = in_tls.or_else(|| {
        let field = gateway.spec.unknown.keys().next()?;
        Some(format!("spec.{field}"))
    })?;
    Some(format!("{field} is not supported"))
}

/// The addresses a Gateway gets, and why it gets none.
struct Assigned {
    addresses: Vec<GatewayAddress>,
    /// A requested address type Culvert does not support: the Gateway is refused.
    unsupported: Option<String>,
    /// Requested addresses that cannot be programmed.
    problem: Option<String>,
    /// What the address waits for.
    pending: Option<String>,
}

fn assign_addresses(
    store: &Store,
    options: &Options,
    key: &NamespacedName,
    gateway: &Gateway,
) -> Assigned {
    let mut assigned = Assigned {
        addresses: Vec::new(),
        unsupported: None,
        problem: None,
        pending: None,
    };
    match options
        .addresses
        .assign_from(store, key, &gateway.spec.addresses)
    {
        Ok(addresses) => assigned.addresses = addresses,
        Err(AddressError::UnsupportedType(why)) => assigned.unsupported = Some(why),
        Err(AddressError::NotUsable(why)) => assigned.problem = Some(why),
        Err(AddressError::NotAssigned(why)) => assigned.pending = Some(why),
    }
    assigned
}

/// The address the Gateway's listeners bind: its first IP address, when the
/// assigner's addresses belong to this host.
fn local_ip(addresses: &[GatewayAddress], options: &Options) -> Option<IpAddr> {
    addresses
        .iter()
        .filter(|_| options.addresses.binds())
        .find(|a| a.kind.as_deref().is_none_or(|k| k == "IPAddress"))
        .and_then(|a| a.value.as_deref())
        .and_then(|v| v.parse::<IpAddr>().ok())
        // An unspecified address means "every address": no per-address socket.
        .filter(|ip| !ip.is_unspecified())
}

/// The redirect a Gateway asks for: `Ok(None)` without the annotation, the status
/// code with a valid one, and why not when the value is not `"301"` or `"308"` or the
/// Gateway's data plane dials a tunnel, whose requests arrive on the first HTTP
/// listener already terminated at the edge and would be redirected forever.
fn https_redirect(gateway: &Gateway, config: Option<&GatewayConfig>) -> Result<Option<u16>, Error> {
    let Some(value) = gateway.metadata.annotations.get(HTTPS_REDIRECT_ANNOTATION) else {
        return Ok(None);
    };
    let code = match value.as_str() {
        "301" => 301,
        "308" => 308,
        other => {
            return Err(Error::RedirectCode {
                value: other.to_owned(),
            });
        }
    };
    if config.is_some_and(|c| c.spec.tunnel.is_some()) {
        return Err(Error::RedirectWithTunnel);
    }
    Ok(Some(code))
}

/// The client certificate `gateway` shows backends over TLS, and its `ResolvedRefs`
/// verdict when it names one (`None` when `spec.tls.backend` names none).
fn client_certificate(
    store: &Store,
    gateway: &Gateway,
) -> (Option<BackendClientCertificate>, Option<Verdict>) {
    let Some(reference) = gateway
        .spec
        .tls
        .as_ref()
        .and_then(|tls| tls.backend.as_ref())
        .and_then(|backend| backend.client_certificate_ref.as_ref())
    else {
        return (None, None);
    };
    let invalid = |why: String| (None, Some(Verdict::no(INVALID_CLIENT_CERTIFICATE_REF, why)));
    let namespace = match gateway_core_ref(store, gateway.metadata.namespace(), reference, "Secret")
    {
        Ok(namespace) => namespace,
        Err(GatewayRefError::Kind { group, kind }) => {
            return invalid(format!(
                "clientCertificateRef {group:?}/{kind} {:?} is not a core Secret",
                reference.name
            ));
        }
        Err(GatewayRefError::NotPermitted { namespace }) => {
            return (
                None,
                Some(Verdict::no(
                    reason::REF_NOT_PERMITTED,
                    format!(
                        "no ReferenceGrant allows Secret {namespace}/{}",
                        reference.name
                    ),
                )),
            );
        }
    };
    let Some(secret) = store
        .secrets
        .get(&(namespace.to_owned(), reference.name.clone()))
    else {
        return invalid(format!("Secret {namespace}/{} not found", reference.name));
    };
    match tls_pair(secret) {
        Ok(pair) => (
            Some(BackendClientCertificate {
                certificate_pem: pair.chain,
                private_key_pem: pair.key,
            }),
            Some(Verdict::yes(reason::RESOLVED_REFS)),
        ),
        Err(why) => invalid(format!("Secret {namespace}/{}: {why}", reference.name)),
    }
}

/// Gateway `Accepted` once its listeners are judged: an earlier refusal stands;
/// otherwise valid listeners decide.
pub(crate) fn judge_listeners(cx: &mut Context<'_>) {
    for state in &mut cx.gateways {
        state.accepted = gateway_verdict(state.accepted.clone(), &state.listeners);
    }
}

/// Takes the plane away from the Gateways that end up refused or without a usable
/// address: they are served nowhere.
pub(crate) fn withdraw_unserved(cx: &mut Context<'_>) {
    for state in &mut cx.gateways {
        if !state.accepted.status || state.address_problem.is_some() {
            state.plane = None;
        }
    }
}

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
pub(crate) fn resolve_shared_plane_conflicts(cx: &mut Context<'_>) {
    let states = &mut cx.gateways;
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
