//! The fifth stage, cross-namespace hostname conflicts: when routes from different namespaces claim
//! the same hostname on one listener, the route from a privileged namespace wins,
//! then the oldest, then the first by namespace/name. Routes in the winner's
//! namespace share the hostname as usual; the others lose that listener and, when
//! none is left, get `Accepted=False / HostnameConflict` naming the winner.

use super::conditions::{Verdict, reason};
use super::state::{Context, RouteState};
use std::collections::BTreeMap;

/// Resolves conflicts in place. Privileged namespaces are those every class of ours
/// names (`Options` and each `GatewayClassConfig`).
pub(crate) fn resolve(cx: &mut Context<'_>) {
    let privileged: Vec<String> = cx
        .classes
        .values()
        .flat_map(|c| c.privileged_prefixes.iter().cloned())
        .collect();
    let (routes, gateways) = (&mut cx.routes, &cx.gateways);
    // (gateway, listener, hostname) -> claiming (route index, parent index).
    let mut claims: BTreeMap<(usize, usize, String), Vec<(usize, usize)>> = BTreeMap::new();
    for (route_index, route) in routes.iter().enumerate() {
        if route.kind == "TLSRoute" || route.patterns.is_empty() {
            continue;
        }
        for (parent_index, parent) in route
            .parents
            .iter()
            .enumerate()
            .filter(|(_, p)| p.accepted.status)
        {
            for &listener in &parent.listeners {
                let own = gateways[parent.gateway].listeners[listener]
                    .hostname
                    .as_ref();
                for pattern in &route.patterns {
                    let effective = match own {
                        None => Some(pattern.clone()),
                        Some(own) => own.intersect(pattern),
                    };
                    if let Some(effective) = effective {
                        let key = (parent.gateway, listener, effective.to_string());
                        let entry = claims.entry(key).or_default();
                        if !entry.contains(&(route_index, parent_index)) {
                            entry.push((route_index, parent_index));
                        }
                    }
                }
            }
        }
    }
    let rank = |route: &RouteState| {
        let is_privileged = privileged
            .iter()
            .any(|prefix| route.key.0.starts_with(prefix.as_str()));
        (
            !is_privileged,
            route
                .creation_timestamp
                .clone()
                .unwrap_or_else(|| "~".to_owned()),
            route.key.clone(),
        )
    };
    let mut losses: Vec<(usize, usize, usize, String)> = Vec::new();
    for ((_, listener, hostname), claimants) in &claims {
        let Some(&(winner, _)) = claimants.iter().min_by_key(|(r, _)| rank(&routes[*r])) else {
            continue;
        };
        let winner_namespace = &routes[winner].key.0;
        for &(route_index, parent_index) in claimants {
            if routes[route_index].key.0 != *winner_namespace {
                let (ns, name) = &routes[winner].key;
                let message = format!(
                    "hostname {hostname} is claimed by {} {ns}/{name}",
                    routes[winner].kind
                );
                losses.push((route_index, parent_index, *listener, message));
            }
        }
    }
    for (route_index, parent_index, listener, message) in losses {
        let parent = &mut routes[route_index].parents[parent_index];
        parent.listeners.retain(|l| *l != listener);
        if parent.listeners.is_empty() {
            parent.accepted = Verdict::no(reason::HOSTNAME_CONFLICT, message);
        }
    }
}
