//! TCPRoutes and UDPRoutes. Culvert has no TCP or UDP listener (a listener of either
//! protocol is refused `UnsupportedProtocol`, and naming either kind in
//! `allowedRoutes.kinds` is `InvalidRouteKinds`), so such a route is never served;
//! what this module owns is saying so. Each parentRef that names one of Culvert's
//! Gateways gets `Accepted=False` in the route's status, so the route does not look
//! merely unreconciled.
//!
//! The reason is the one attachment gives: `NotAllowedByListeners` when the
//! parentRef reaches the Gateway's listeners (Gateway API: "the Gateway has no
//! Listener whose allowedRoutes criteria permit the route", and no listener of
//! Culvert's lists either kind among its supported kinds), `NoMatchingParent` when
//! it does not (the Gateway is not accepted, or no listener has the sectionName or
//! port). `UnsupportedValue` would misname it: the spec keeps that reason for an
//! enum value the implementation does not recognise, and the route's kind is not a
//! value in the route.

use super::attach::{RouteView, attach};
use super::conditions::{ACCEPTED, Verdict, reason};
use super::state::Context;
use super::status::Translation;
use crate::model::{ObjectKey, RouteParentStatus, RouteStatus};

/// Adds the status Culvert writes for every TCPRoute and UDPRoute with a parent of
/// its own to `translation`; routes of other controllers' Gateways get nothing.
pub(crate) fn report(cx: &Context<'_>, translation: &mut Translation) {
    let (store, gateways) = (cx.store, &cx.gateways);
    let controller_name = &cx.options.controller_name;
    let by_key = cx.gateway_index();
    let out = &mut translation.routes;
    for (kind, routes) in [
        ("TCPRoute", &store.tcp_routes),
        ("UDPRoute", &store.udp_routes),
    ] {
        for ((namespace, name), route) in routes {
            let view = RouteView {
                kind,
                namespace,
                parent_refs: &route.spec.parent_refs,
                hostnames: &[],
            };
            let generation = route.metadata.generation();
            let parents: Vec<RouteParentStatus> = attach(store, &view, gateways, &by_key)
                .into_iter()
                .map(|outcome| RouteParentStatus {
                    parent_ref: outcome.parent_ref,
                    controller_name: controller_name.to_owned(),
                    conditions: vec![
                        refusal(kind, outcome.accepted).condition(ACCEPTED, generation),
                    ],
                })
                .collect();
            if !parents.is_empty() {
                out.insert(
                    ObjectKey::new(kind, namespace, name),
                    RouteStatus { parents },
                );
            }
        }
    }
}

/// Attachment's verdict, said in terms of the kind when it is about the listeners.
fn refusal(kind: &str, attached: Verdict) -> Verdict {
    if attached.status || attached.reason == reason::NOT_ALLOWED_BY_LISTENERS {
        Verdict::no(
            reason::NOT_ALLOWED_BY_LISTENERS,
            format!("Culvert does not support {kind}: none of its listeners can carry one"),
        )
    } else {
        attached
    }
}
