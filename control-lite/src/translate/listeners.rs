//! Listener validation, part of the gateways stage: protocol support, conflicts
//! between listeners of one Gateway, allowed route kinds and namespaces, certificate
//! references and the `culvert.dev/acme` option. Start at [`validate`].

use super::certificates::check_tls_secret;
use super::client_validation;
use super::conditions::{Verdict, reason};
use super::references::{GatewayRefError, gateway_core_ref};
use super::state::{ListenerState, NamespacePolicy, Transport};
use crate::model::GATEWAY_GROUP;
use crate::model::{Gateway, Listener, RouteGroupKind};
use crate::store::Store;
use culvert_router::config::CertificateRef;
use culvert_router::host::HostPattern;

/// What `listener` speaks.
fn transport_of(listener: &Listener) -> Transport {
    match listener.protocol.as_str() {
        "HTTP" => Transport::Http,
        "HTTPS" => Transport::Https,
        "TLS" => match listener.tls.as_ref().and_then(|t| t.mode.as_deref()) {
            Some("Passthrough") => Transport::TlsPassthrough,
            _ => Transport::TlsTerminate,
        },
        _ => Transport::Unsupported,
    }
}

/// Route kinds `transport` can carry.
fn route_kinds(transport: Transport) -> &'static [&'static str] {
    match transport {
        Transport::Http | Transport::Https => &["HTTPRoute", "GRPCRoute"],
        Transport::TlsPassthrough | Transport::TlsTerminate => &["TLSRoute"],
        Transport::Unsupported => &[],
    }
}

/// Validates every listener of a Gateway.
pub(crate) fn validate(gateway: &Gateway, store: &Store) -> Vec<ListenerState> {
    let namespace = gateway.metadata.namespace();
    let mut states: Vec<ListenerState> = gateway
        .spec
        .listeners
        .iter()
        .map(|l| validate_one(gateway, l, namespace, store))
        .collect();
    mark_conflicts(&mut states);
    states
}

fn validate_one(
    gateway: &Gateway,
    listener: &Listener,
    namespace: &str,
    store: &Store,
) -> ListenerState {
    let transport = transport_of(listener);
    let mut accepted = Verdict::yes(reason::ACCEPTED);
    let mut resolved_refs = Verdict::yes(reason::RESOLVED_REFS);
    let port = u16::try_from(listener.port).ok().filter(|p| *p != 0);
    if port.is_none() {
        accepted = Verdict::no(
            reason::UNSUPPORTED_VALUE,
            format!("port {} is out of range", listener.port),
        );
    }
    let hostname = match listener
        .hostname
        .as_deref()
        .map(HostPattern::parse)
        .transpose()
    {
        Ok(hostname) => hostname,
        Err(why) => {
            accepted = Verdict::no(reason::UNSUPPORTED_VALUE, why.to_string());
            None
        }
    };
    if transport == Transport::Unsupported {
        accepted = Verdict::no(
            reason::UNSUPPORTED_PROTOCOL,
            format!("protocol {:?} is not supported", listener.protocol),
        );
    }
    let (supported_kinds, kinds_ok) = supported_kinds(listener, transport);
    if !kinds_ok {
        resolved_refs = Verdict::no(
            reason::INVALID_ROUTE_KINDS,
            "allowedRoutes.kinds names a kind this listener cannot carry",
        );
    }
    let mut certificates = Vec::new();
    let mut client_validation = None;
    let acme = match acme_option(listener, transport) {
        Ok(acme) => acme,
        Err(refused) => {
            accepted = refused;
            false
        }
    };
    if let (true, Some(port)) = (transport.terminates(), port) {
        let has_refs = listener
            .tls
            .as_ref()
            .is_some_and(|tls| !tls.certificate_refs.is_empty());
        if !acme || has_refs {
            match resolve_certificates(listener, namespace, store) {
                Ok(refs) => certificates = refs,
                Err(verdict) => resolved_refs = verdict,
            }
        }
        let validation = client_validation::for_listener(gateway, listener, port, store);
        client_validation = validation.config;
        if let Some(unresolved) = validation.unresolved {
            if resolved_refs.status {
                resolved_refs = unresolved;
            }
        }
        if let Some(refused) = validation.refused {
            if accepted.status {
                accepted = refused;
            }
        }
    }
    let namespaces = match listener
        .allowed_routes
        .as_ref()
        .and_then(|a| a.namespaces.as_ref())
    {
        None => NamespacePolicy::Same,
        Some(policy) => match policy.from.as_deref().unwrap_or("Same") {
            "Same" => NamespacePolicy::Same,
            "All" => NamespacePolicy::All,
            "Selector" => policy
                .selector
                .clone()
                .map_or(NamespacePolicy::None, NamespacePolicy::Selector),
            _ => NamespacePolicy::None,
        },
    };
    ListenerState {
        name: listener.name.clone(),
        port: port.unwrap_or(0),
        transport,
        hostname,
        supported_kinds: if accepted.status {
            supported_kinds
        } else {
            Vec::new()
        },
        namespaces,
        accepted,
        conflicted: Verdict::no(reason::NO_CONFLICTS, ""),
        resolved_refs,
        certificates,
        client_validation,
        acme,
        attached_routes: 0,
    }
}

/// The kinds that may attach, and whether every requested kind was valid.
fn supported_kinds(listener: &Listener, transport: Transport) -> (Vec<RouteGroupKind>, bool) {
    let carried = route_kinds(transport);
    let requested = listener
        .allowed_routes
        .as_ref()
        .map(|a| a.kinds.as_slice())
        .unwrap_or_default();
    let kind = |name: &str| RouteGroupKind {
        group: Some(GATEWAY_GROUP.to_owned()),
        kind: name.to_owned(),
    };
    if requested.is_empty() {
        return (carried.iter().map(|k| kind(k)).collect(), true);
    }
    let mut out: Vec<RouteGroupKind> = Vec::new();
    let mut all_valid = true;
    for wanted in requested {
        let group_ok = wanted.group.as_deref().is_none_or(|g| g == GATEWAY_GROUP);
        if group_ok && carried.contains(&wanted.kind.as_str()) {
            if !out.iter().any(|k| k.kind == wanted.kind) {
                out.push(kind(&wanted.kind));
            }
        } else {
            all_valid = false;
        }
    }
    (out, all_valid)
}

/// The `tls.options` key that asks the data plane to obtain the certificate by ACME.
pub(crate) const ACME_OPTION: &str = "culvert.dev/acme";

/// Whether the listener asks for ACME (`culvert.dev/acme: "true"`); refused (the
/// `Accepted` verdict) on a listener that is not `HTTPS` or has no exact hostname,
/// since HTTP-01 and TLS-ALPN-01 validate exact names only.
fn acme_option(listener: &Listener, transport: Transport) -> Result<bool, Verdict> {
    let value = listener
        .tls
        .as_ref()
        .and_then(|tls| tls.options.get(ACME_OPTION));
    let Some(value) = value else {
        return Ok(false);
    };
    let refuse = |why: String| Err(Verdict::no(reason::UNSUPPORTED_VALUE, why));
    match value.as_str() {
        "false" => return Ok(false),
        "true" => {}
        other => {
            return refuse(format!(
                "{ACME_OPTION} is {other:?}, not \"true\" or \"false\""
            ));
        }
    }
    if transport != Transport::Https {
        return refuse(format!("{ACME_OPTION} is only for HTTPS listeners"));
    }
    match listener.hostname.as_deref() {
        None => refuse(format!(
            "{ACME_OPTION} needs a hostname: the certificate is obtained for it"
        )),
        Some(name) if name.contains('*') => refuse(format!(
            "{ACME_OPTION} cannot obtain a certificate for the wildcard {name:?}: HTTP-01 and TLS-ALPN-01 validate exact names only"
        )),
        Some(_) => Ok(true),
    }
}

fn resolve_certificates(
    listener: &Listener,
    namespace: &str,
    store: &Store,
) -> Result<Vec<CertificateRef>, Verdict> {
    let refs = listener
        .tls
        .as_ref()
        .map(|t| t.certificate_refs.as_slice())
        .unwrap_or_default();
    if refs.is_empty() {
        return Err(Verdict::no(
            reason::INVALID_CERTIFICATE_REF,
            "HTTPS listener has no certificateRefs",
        ));
    }
    let mut out = Vec::with_capacity(refs.len());
    for reference in refs {
        let secret_namespace = match gateway_core_ref(store, namespace, reference, "Secret") {
            Ok(secret_namespace) => secret_namespace,
            Err(GatewayRefError::Kind { group, kind }) => {
                return Err(Verdict::no(
                    reason::INVALID_CERTIFICATE_REF,
                    format!(
                        "certificateRef {group:?}/{kind} {:?} is not a core Secret",
                        reference.name
                    ),
                ));
            }
            Err(GatewayRefError::NotPermitted { namespace }) => {
                return Err(Verdict::no(
                    reason::REF_NOT_PERMITTED,
                    format!(
                        "no ReferenceGrant allows Secret {namespace}/{}",
                        reference.name
                    ),
                ));
            }
        };
        let secret = store
            .secrets
            .get(&(secret_namespace.to_owned(), reference.name.clone()))
            .ok_or_else(|| {
                Verdict::no(
                    reason::INVALID_CERTIFICATE_REF,
                    format!("Secret {secret_namespace}/{} not found", reference.name),
                )
            })?;
        check_tls_secret(secret).map_err(|why| {
            Verdict::no(
                reason::INVALID_CERTIFICATE_REF,
                format!("Secret {secret_namespace}/{}: {why}", reference.name),
            )
        })?;
        out.push(CertificateRef {
            namespace: secret_namespace.to_owned(),
            name: reference.name.clone(),
        });
    }
    Ok(out)
}

/// Listeners on one port must speak compatible protocols and, when compatible, have
/// distinct hostnames; every listener involved in a conflict is refused.
fn mark_conflicts(states: &mut [ListenerState]) {
    let count = states.len();
    for i in 0..count {
        for j in 0..count {
            if i == j || states[i].port != states[j].port || states[i].port == 0 {
                continue;
            }
            let (a, b) = (states[i].transport, states[j].transport);
            if a == Transport::Unsupported || b == Transport::Unsupported {
                continue;
            }
            let verdict = if !a.compatible(b) {
                Some((
                    reason::PROTOCOL_CONFLICT,
                    format!(
                        "port {} is shared with listener {:?} of an incompatible protocol",
                        states[i].port, states[j].name
                    ),
                ))
            } else if states[i].hostname == states[j].hostname {
                Some((
                    reason::HOSTNAME_CONFLICT,
                    format!(
                        "port {} and hostname are shared with listener {:?}",
                        states[i].port, states[j].name
                    ),
                ))
            } else {
                None
            };
            if let Some((why, message)) = verdict {
                states[i].mark_conflicted(why, message);
            }
        }
    }
}
