//! The last stage, the output of translation: data-plane configs and the status of
//! every object Culvert owns, with `observedGeneration` set from each object's
//! generation. The kinds Culvert reads only to refuse add theirs after
//! (`l4_routes`, `listener_sets`). Start at [`build`].

use super::backend_tls;
use super::conditions::{
    ACCEPTED, CONFLICTED, INSECURE_FRONTEND_VALIDATION_MODE, PROGRAMMED, RESOLVED_REFS,
    SUPPORTED_VERSION, TUNNEL_SHARED, Verdict, reason,
};
use super::state::{
    ClassState, Context, DataPlaneId, GatewayState, ListenerState, ParentOutcome, PlaneRefusal,
    RouteState,
};
use crate::model::{
    GatewayClassStatus, GatewayStatus, ListenerSetStatus, ListenerStatus, ObjectKey, PolicyStatus,
    RouteParentStatus, RouteStatus,
};
use crate::store::NamespacedName;
use culvert_router::config::DataPlaneConfig;
use std::collections::BTreeMap;

/// Everything one translation produces.
#[derive(Debug, Clone, Default)]
pub struct Translation {
    /// One config per data plane; `version` is left 0 for the sink to assign.
    pub data_planes: BTreeMap<DataPlaneId, DataPlaneConfig>,
    /// Status of every GatewayClass Culvert owns.
    pub gateway_classes: BTreeMap<String, GatewayClassStatus>,
    /// Status of every Gateway Culvert owns.
    pub gateways: BTreeMap<NamespacedName, GatewayStatus>,
    /// Status of every route with at least one parent Culvert owns (key kind is
    /// `HTTPRoute`, `GRPCRoute` or `TLSRoute`, or `TCPRoute` or `UDPRoute`, which
    /// are always refused).
    pub routes: BTreeMap<ObjectKey, RouteStatus>,
    /// Status of every ListenerSet whose parent is a Gateway Culvert owns (always
    /// refused: Culvert merges no ListenerSet).
    pub listener_sets: BTreeMap<NamespacedName, ListenerSetStatus>,
    /// Status of every BackendTLSPolicy that applies for a Gateway Culvert owns.
    pub backend_tls_policies: BTreeMap<NamespacedName, PolicyStatus>,
    /// Which data plane serves each accepted Gateway.
    pub gateway_planes: BTreeMap<NamespacedName, DataPlaneId>,
    /// Gateways admission refused a dedicated data plane, and why.
    pub refused_planes: BTreeMap<NamespacedName, PlaneRefusal>,
}

impl Translation {
    /// Every data plane's config in one, for a process that serves them all (the
    /// embedded control plane, a test harness). Listener names carry their Gateway, so
    /// they do not collide; certificates are listed once. `None` when nothing is
    /// served.
    pub fn merged_config(&self) -> Option<DataPlaneConfig> {
        let mut planes = self.data_planes.values();
        let mut merged = planes.next()?.clone();
        for plane in planes {
            merged.listeners.extend(plane.listeners.iter().cloned());
            merged.http_routes.extend(plane.http_routes.iter().cloned());
            merged.grpc_routes.extend(plane.grpc_routes.iter().cloned());
            merged.tls_routes.extend(plane.tls_routes.iter().cloned());
            for certificate in &plane.certificates {
                if !merged.certificates.contains(certificate) {
                    merged.certificates.push(certificate.clone());
                }
            }
        }
        Some(merged)
    }
}

/// The translation's output: the data-plane configs and the status of every class,
/// Gateway and route of ours, and of the BackendTLSPolicies they use.
pub(crate) fn build(
    cx: &Context<'_>,
    data_planes: BTreeMap<DataPlaneId, DataPlaneConfig>,
) -> Translation {
    let gateways = &cx.gateways;
    let controller_name = &cx.options.controller_name;
    Translation {
        data_planes,
        gateway_classes: class_statuses(&cx.classes),
        gateways: gateways
            .iter()
            .map(|g| (g.key.clone(), gateway_status(g)))
            .collect(),
        routes: route_statuses(&cx.routes, gateways, controller_name),
        listener_sets: BTreeMap::new(),
        backend_tls_policies: backend_tls::statuses(
            cx.store,
            gateways,
            &cx.routes,
            controller_name,
        ),
        gateway_planes: gateways
            .iter()
            .filter_map(|g| g.plane.clone().map(|plane| (g.key.clone(), plane)))
            .collect(),
        refused_planes: gateways
            .iter()
            .filter_map(|g| g.refused_plane.map(|why| (g.key.clone(), why)))
            .collect(),
    }
}

/// Each class: `Accepted` and `SupportedVersion`.
fn class_statuses(classes: &BTreeMap<String, ClassState>) -> BTreeMap<String, GatewayClassStatus> {
    classes
        .iter()
        .map(|(name, class)| {
            let conditions = vec![
                class.accepted.condition(ACCEPTED, class.generation),
                Verdict::yes(reason::SUPPORTED_VERSION)
                    .condition(SUPPORTED_VERSION, class.generation),
            ];
            (name.clone(), GatewayClassStatus { conditions })
        })
        .collect()
}

/// A Gateway's addresses, conditions and listeners.
fn gateway_status(gateway: &GatewayState) -> GatewayStatus {
    let generation = gateway.generation;
    let mut conditions = vec![
        gateway.accepted.condition(ACCEPTED, generation),
        gateway.programmed().condition(PROGRAMMED, generation),
    ];
    if let Some(resolved_refs) = &gateway.resolved_refs {
        conditions.push(resolved_refs.condition(RESOLVED_REFS, generation));
    }
    if gateway.insecure_frontend_validation {
        let insecure = Verdict {
            message: "a port accepts clients without a valid certificate \
                      (AllowInsecureFallback)"
                .to_owned(),
            ..Verdict::yes(reason::CONFIGURATION_CHANGED)
        };
        conditions.push(insecure.condition(INSECURE_FRONTEND_VALIDATION_MODE, generation));
    }
    GatewayStatus {
        addresses: gateway.addresses.clone(),
        conditions,
        listeners: gateway
            .listeners
            .iter()
            .map(|listener| listener_status(listener, generation))
            .collect(),
        attached_listener_sets: None,
    }
}

fn listener_status(listener: &ListenerState, generation: i64) -> ListenerStatus {
    ListenerStatus {
        name: listener.name.clone(),
        supported_kinds: listener.supported_kinds.clone(),
        attached_routes: listener.attached_routes,
        conditions: vec![
            listener.accepted.condition(ACCEPTED, generation),
            listener.programmed().condition(PROGRAMMED, generation),
            listener.resolved_refs.condition(RESOLVED_REFS, generation),
            listener.conflicted.condition(CONFLICTED, generation),
        ],
    }
}

/// Every route with a parent of ours: one entry per such parent.
fn route_statuses(
    routes: &[RouteState],
    gateways: &[GatewayState],
    controller_name: &str,
) -> BTreeMap<ObjectKey, RouteStatus> {
    routes
        .iter()
        .filter(|route| !route.parents.is_empty())
        .map(|route| {
            let parents = route
                .parents
                .iter()
                .map(|parent| parent_status(route, parent, gateways, controller_name))
                .collect();
            (
                ObjectKey::new(route.kind, &route.key.0, &route.key.1),
                RouteStatus { parents },
            )
        })
        .collect()
}

/// `Accepted`, `ResolvedRefs` and, when its Gateway's tunnel is shared, `TunnelShared`.
fn parent_status(
    route: &RouteState,
    parent: &ParentOutcome,
    gateways: &[GatewayState],
    controller_name: &str,
) -> RouteParentStatus {
    let mut conditions = vec![
        parent.accepted.condition(ACCEPTED, route.generation),
        route
            .resolved_refs
            .condition(RESOLVED_REFS, route.generation),
    ];
    let shared = gateways[parent.gateway].tunnel_shared.as_ref();
    if let (true, Some(shared)) = (parent.accepted.status, shared) {
        conditions.push(shared.condition(TUNNEL_SHARED, route.generation));
    }
    RouteParentStatus {
        parent_ref: parent.parent_ref.clone(),
        controller_name: controller_name.to_owned(),
        conditions,
    }
}
