//! The third stage, route attachment: for each `parentRef` of a route, which
//! listeners of which Gateway accept it (sectionName, port, protocol and kind,
//! namespaces, hostnames), and the reason when none does. Routes of every kind
//! attach here (`routes` for the kinds Culvert serves, `l4_routes` for those it
//! refuses). Start at [`attach`].

use super::conditions::{Verdict, reason};
use super::state::{GatewayState, ParentOutcome};
use crate::model::{GATEWAY_GROUP, ParentReference};
use crate::store::{NamespacedName, Store};
use culvert_router::host::HostPattern;
use std::collections::BTreeMap;

/// What attachment needs to know about a route of any kind.
pub(crate) struct RouteView<'a> {
    pub(crate) kind: &'static str,
    pub(crate) namespace: &'a str,
    pub(crate) parent_refs: &'a [ParentReference],
    pub(crate) hostnames: &'a [HostPattern],
}

/// Attaches a route to its parents. Parents that are not Gateways Culvert owns get no
/// outcome: another controller reports on them.
pub(crate) fn attach(
    store: &Store,
    route: &RouteView<'_>,
    gateways: &[GatewayState],
    by_key: &BTreeMap<NamespacedName, usize>,
) -> Vec<ParentOutcome> {
    let mut out = Vec::new();
    for parent in route.parent_refs {
        let group = parent.group.as_deref().unwrap_or(GATEWAY_GROUP);
        let kind = parent.kind.as_deref().unwrap_or("Gateway");
        if group != GATEWAY_GROUP || kind != "Gateway" {
            continue;
        }
        let namespace = parent.namespace.as_deref().unwrap_or(route.namespace);
        let Some(&index) = by_key.get(&(namespace.to_owned(), parent.name.clone())) else {
            continue;
        };
        let (accepted, listeners) = attach_to_gateway(store, route, parent, &gateways[index]);
        out.push(ParentOutcome {
            parent_ref: parent.clone(),
            gateway: index,
            accepted,
            listeners,
        });
    }
    out
}

fn attach_to_gateway(
    store: &Store,
    route: &RouteView<'_>,
    parent: &ParentReference,
    gateway: &GatewayState,
) -> (Verdict, Vec<usize>) {
    if !gateway.accepted.status {
        let refusal = gateway.parent_refusal.clone().unwrap_or_else(|| {
            Verdict::no(reason::NO_MATCHING_PARENT, "the Gateway is not accepted")
        });
        return (refusal, Vec::new());
    }
    let candidates: Vec<usize> = gateway
        .listeners
        .iter()
        .enumerate()
        .filter(|(_, l)| parent.section_name.as_ref().is_none_or(|s| *s == l.name))
        .filter(|(_, l)| parent.port.is_none_or(|p| p == i64::from(l.port)))
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return (
            Verdict::no(
                reason::NO_MATCHING_PARENT,
                "no listener matches the parentRef's sectionName and port",
            ),
            Vec::new(),
        );
    }
    let mut accepted = Vec::new();
    let mut hostname_miss = false;
    for index in candidates {
        let listener = &gateway.listeners[index];
        if !listener.usable()
            || !listener.allows_kind(route.kind)
            || !listener.allows_namespace(store, &gateway.key.0, route.namespace)
        {
            continue;
        }
        let intersects = route.hostnames.is_empty()
            || listener
                .hostname
                .as_ref()
                .is_none_or(|own| route.hostnames.iter().any(|h| own.intersect(h).is_some()));
        if intersects {
            accepted.push(index);
        } else {
            hostname_miss = true;
        }
    }
    if !accepted.is_empty() {
        (Verdict::yes(reason::ACCEPTED), accepted)
    } else if hostname_miss {
        (
            Verdict::no(
                reason::NO_MATCHING_LISTENER_HOSTNAME,
                "no listener hostname intersects the route's hostnames",
            ),
            accepted,
        )
    } else {
        (
            Verdict::no(
                reason::NOT_ALLOWED_BY_LISTENERS,
                format!(
                    "no listener allows a {} from namespace {}",
                    route.kind, route.namespace
                ),
            ),
            accepted,
        )
    }
}
