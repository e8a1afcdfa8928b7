//! TLS to backends: BackendTLSPolicy, part of the routes stage.
//!
//! A policy targets Services of its own namespace, each whole or one port by name
//! (`sectionName`). For a Service port, the policies naming that port apply, else
//! those naming the whole Service; among several of one kind the oldest wins
//! (creation time, then name) and the others are `Conflicted` for that target. The
//! winner's settings become the backend's [`BackendTlsConfig`]: SNI `hostname`, the
//! CA certificates of its ConfigMaps (or the system's roots, for
//! `wellKnownCACertificates: System`), and its DNS `subjectAltNames`. A policy that
//! cannot be honoured (no valid CA certificate, a URI subjectAltName, an option
//! Culvert does not know) still wins its target, and that backend's traffic then
//! fails closed (500) instead of going out in clear text.
//!
//! The status of a policy has one entry per Gateway whose accepted routes send
//! traffic to a Service it targets (its "ancestors"), with `Accepted` and
//! `ResolvedRefs`; the stage that writes status asks for it ([`statuses`]).
//!
//! The client certificate a Gateway shows backends (`spec.tls.backend`) is a
//! parameter of the Gateway, read by the gateways stage; `planes` puts it on the
//! backends of that Gateway's routes.

use std::collections::{BTreeMap, BTreeSet};

use culvert_router::config::BackendTlsConfig;
use rustls_pki_types::ServerName;

use super::client_validation::{join_bundles, read_ca_bundle};
use super::conditions::{ACCEPTED, RESOLVED_REFS, Verdict, reason};
use super::state::{GatewayState, RouteState};
use crate::model::{
    BackendTlsPolicy, GATEWAY_GROUP, ParentReference, PolicyAncestorStatus, PolicyStatus,
    ServicePort,
};
use crate::store::{NamespacedName, Store};

/// `Accepted` reason of a policy another one beats for the same target.
const CONFLICTED: &str = "Conflicted";
/// `Accepted` reason of a policy naming no Service that exists.
const TARGET_NOT_FOUND: &str = "TargetNotFound";

/// The TLS settings of the policy that applies to port `port` of Service
/// `namespace/service`, or why that policy cannot be honoured; `None` when no
/// policy applies.
pub(crate) fn for_service_port(
    store: &Store,
    namespace: &str,
    service: &str,
    port: &ServicePort,
) -> Option<Result<BackendTlsConfig, Verdict>> {
    let port_name = port.name.as_deref().unwrap_or("");
    let by_port = winner(store, namespace, service, Some(port_name));
    let key = by_port.or_else(|| winner(store, namespace, service, None))?;
    let policy = store.backend_tls_policies.get(&key)?;
    Some(settings(store, policy).map_err(|(accepted, _)| accepted))
}

/// The oldest policy of `namespace` naming Service `service` with exactly
/// `section` (`None`: the whole Service).
fn winner(
    store: &Store,
    namespace: &str,
    service: &str,
    section: Option<&str>,
) -> Option<NamespacedName> {
    contenders(store, namespace, service, section)
        .into_iter()
        .next()
}

/// The policies of `namespace` naming Service `service` with exactly `section`,
/// oldest first (creation time, then name).
fn contenders(
    store: &Store,
    namespace: &str,
    service: &str,
    section: Option<&str>,
) -> Vec<NamespacedName> {
    let mut found: Vec<(&str, &NamespacedName)> = store
        .backend_tls_policies
        .range((namespace.to_owned(), String::new())..)
        .take_while(|((ns, _), _)| ns == namespace)
        .filter(|(_, policy)| {
            policy.spec.target_refs.iter().any(|target| {
                is_service(&target.group, &target.kind)
                    && target.name == service
                    && target.section_name.as_deref() == section
            })
        })
        .map(|(key, policy)| {
            let created = policy.metadata.creation_timestamp.as_deref();
            (created.unwrap_or(""), key)
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, key)| key.clone()).collect()
}

fn is_service(group: &str, kind: &str) -> bool {
    group.is_empty() && kind == "Service"
}

/// The backend TLS settings `policy` asks for; when it cannot be honoured, its
/// `Accepted` verdict and its `ResolvedRefs` verdict.
fn settings(
    store: &Store,
    policy: &BackendTlsPolicy,
) -> Result<BackendTlsConfig, (Verdict, Verdict)> {
    let resolved = |accepted: Verdict| (accepted, Verdict::yes(reason::RESOLVED_REFS));
    let validation = &policy.spec.validation;
    let hostname = &validation.hostname;
    let is_dns_name = matches!(
        ServerName::try_from(hostname.as_str()),
        Ok(ServerName::DnsName(_))
    );
    if !is_dns_name || hostname.starts_with("*.") {
        return Err(resolved(Verdict::no(
            reason::INVALID,
            format!("validation.hostname {hostname:?} is not a DNS name"),
        )));
    }
    if let Some(option) = policy.spec.options.keys().next() {
        return Err(resolved(Verdict::no(
            reason::INVALID,
            format!("option {option:?} is not supported"),
        )));
    }
    let mut subject_alt_names = Vec::new();
    for name in &validation.subject_alt_names {
        match (name.kind.as_str(), &name.hostname) {
            ("Hostname", Some(hostname)) => subject_alt_names.push(hostname.clone()),
            (kind, _) => {
                return Err(resolved(Verdict::no(
                    reason::INVALID,
                    format!("subjectAltNames of type {kind:?} are not supported (Hostname is)"),
                )));
            }
        }
    }
    let ca_certificates_pem = match validation.well_known_ca_certificates.as_deref() {
        Some("System") if validation.ca_certificate_refs.is_empty() => None,
        Some(other) if validation.ca_certificate_refs.is_empty() => {
            return Err(resolved(Verdict::no(
                reason::INVALID,
                format!("wellKnownCACertificates {other:?} is not supported (System is)"),
            )));
        }
        Some(_) => {
            return Err(resolved(Verdict::no(
                reason::INVALID,
                "caCertificateRefs and wellKnownCACertificates exclude each other",
            )));
        }
        None => Some(ca_bundle(store, policy)?),
    };
    Ok(BackendTlsConfig {
        hostname: hostname.clone(),
        ca_certificates_pem,
        subject_alt_names,
        client_certificate: None,
    })
}

/// The PEM bundle of every usable CA reference of `policy`. With some usable,
/// the policy is honoured with those; with none it is not.
fn ca_bundle(store: &Store, policy: &BackendTlsPolicy) -> Result<String, (Verdict, Verdict)> {
    let namespace = policy.metadata.namespace();
    let reads = policy
        .spec
        .validation
        .ca_certificate_refs
        .iter()
        .map(|reference| {
            if reference.group.is_empty() && reference.kind == "ConfigMap" {
                read_ca_bundle(store, namespace, &reference.name)
            } else {
                Err(Verdict::no(
                    reason::INVALID_KIND,
                    format!(
                        "caCertificateRef {:?}/{} {:?} is not a core ConfigMap",
                        reference.group, reference.kind, reference.name
                    ),
                ))
            }
        });
    let (bundle, unresolved) = join_bundles(reads);
    if bundle.is_empty() {
        let unresolved = unresolved.unwrap_or_else(|| {
            Verdict::no(
                reason::INVALID_CA_CERTIFICATE_REF,
                "validation names no CA certificate",
            )
        });
        let accepted = Verdict::no(
            reason::NO_VALID_CA_CERTIFICATE,
            format!("no valid CA certificate: {}", unresolved.message),
        );
        return Err((accepted, unresolved));
    }
    Ok(bundle)
}

/// The verdicts of `policy`: `Accepted`, then `ResolvedRefs`.
fn verdicts(store: &Store, key: &NamespacedName, policy: &BackendTlsPolicy) -> (Verdict, Verdict) {
    let (namespace, name) = key;
    let mut exists = false;
    for target in &policy.spec.target_refs {
        if !is_service(&target.group, &target.kind) {
            continue;
        }
        if store
            .services
            .contains_key(&(namespace.clone(), target.name.clone()))
        {
            exists = true;
        }
        let section = target.section_name.as_deref();
        let contenders = contenders(store, namespace, &target.name, section);
        if let Some(first) = contenders.first().filter(|first| *first != key) {
            return (
                Verdict::no(
                    CONFLICTED,
                    format!(
                        "BackendTLSPolicy {}/{} already applies to Service {}{}",
                        first.0,
                        first.1,
                        target.name,
                        section.map(|s| format!(" port {s}")).unwrap_or_default()
                    ),
                ),
                Verdict::yes(reason::RESOLVED_REFS),
            );
        }
    }
    if !exists {
        return (
            Verdict::no(
                TARGET_NOT_FOUND,
                format!("BackendTLSPolicy {namespace}/{name} targets no Service that exists"),
            ),
            Verdict::yes(reason::RESOLVED_REFS),
        );
    }
    match settings(store, policy) {
        Ok(_) => (
            Verdict::yes(reason::ACCEPTED),
            Verdict::yes(reason::RESOLVED_REFS),
        ),
        Err(verdicts) => verdicts,
    }
}

/// The status of every policy that applies for at least one Gateway: one ancestor
/// entry per Gateway whose accepted routes use a Service the policy targets.
pub(crate) fn statuses(
    store: &Store,
    gateways: &[GatewayState],
    routes: &[RouteState],
    controller_name: &str,
) -> BTreeMap<NamespacedName, PolicyStatus> {
    let mut out = BTreeMap::new();
    for (key, policy) in &store.backend_tls_policies {
        let targets: BTreeSet<NamespacedName> = policy
            .spec
            .target_refs
            .iter()
            .filter(|t| is_service(&t.group, &t.kind))
            .map(|t| (key.0.clone(), t.name.clone()))
            .collect();
        let ancestors: BTreeSet<usize> = routes
            .iter()
            .filter(|route| route.services.iter().any(|s| targets.contains(s)))
            .flat_map(|route| route.parents.iter())
            .filter(|parent| parent.accepted.status)
            .map(|parent| parent.gateway)
            .collect();
        if ancestors.is_empty() {
            continue;
        }
        let (accepted, resolved_refs) = verdicts(store, key, policy);
        let generation = policy.metadata.generation();
        let ancestors = ancestors
            .into_iter()
            .map(|index| {
                let gateway = &gateways[index].key;
                PolicyAncestorStatus {
                    ancestor_ref: ParentReference {
                        group: Some(GATEWAY_GROUP.to_owned()),
                        kind: Some("Gateway".to_owned()),
                        namespace: Some(gateway.0.clone()),
                        name: gateway.1.clone(),
                        section_name: None,
                        port: None,
                    },
                    controller_name: controller_name.to_owned(),
                    conditions: vec![
                        accepted.condition(ACCEPTED, generation),
                        resolved_refs.condition(RESOLVED_REFS, generation),
                    ],
                }
            })
            .collect();
        out.insert(key.clone(), PolicyStatus { ancestors });
    }
    out
}
