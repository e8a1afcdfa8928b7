//! The output of translation: data-plane configs and the status of every object
//! Culvert owns, with `observedGeneration` set from each object's generation.

use super::backend_tls;
use super::conditions::{
    ACCEPTED, CONFLICTED, INSECURE_FRONTEND_VALIDATION_MODE, PROGRAMMED, RESOLVED_REFS,
    SUPPORTED_VERSION, TUNNEL_SHARED, Verdict, reason,
};
use super::gateways::{ClassState, GatewayState};
use super::planes::RouteState;
use super::{DataPlaneId, Options, PlaneRefusal};
use crate::model::{
    GatewayClassStatus, GatewayStatus, ListenerSetStatus, ListenerStatus, ObjectKey, PolicyStatus,
    RouteParentStatus, RouteStatus,
};
use crate::store::{NamespacedName, Store};
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

pub(super) fn build(
    store: &Store,
    options: &Options,
    classes: &BTreeMap<String, ClassState>,
    gateways: &[GatewayState],
    routes: &[RouteState],
    data_planes: BTreeMap<DataPlaneId, DataPlaneConfig>,
) -> Translation {
    let gateway_classes = classes
        .iter()
        .map(|(name, class)| {
            let conditions = vec![
                class.accepted.condition(ACCEPTED, class.generation),
                Verdict::yes(reason::SUPPORTED_VERSION)
                    .condition(SUPPORTED_VERSION, class.generation),
            ];
            (name.clone(), GatewayClassStatus { conditions })
        })
        .collect();
    let gateway_statuses = gateways
        .iter()
        .map(|gateway| {
            let generation = gateway.generation;
            let listeners = gateway
                .listeners
                .iter()
                .map(|listener| ListenerStatus {
                    name: listener.name.clone(),
                    supported_kinds: listener.supported_kinds.clone(),
                    attached_routes: listener.attached_routes,
                    conditions: vec![
                        listener.accepted.condition(ACCEPTED, generation),
                        listener.programmed().condition(PROGRAMMED, generation),
                        listener.resolved_refs.condition(RESOLVED_REFS, generation),
                        listener.conflicted.condition(CONFLICTED, generation),
                    ],
                })
                .collect();
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
            let status = GatewayStatus {
                addresses: gateway.addresses.clone(),
                conditions,
                listeners,
                attached_listener_sets: None,
            };
            (gateway.key.clone(), status)
        })
        .collect();
    let route_statuses = routes
        .iter()
        .filter(|route| !route.parents.is_empty())
        .map(|route| {
            let parents = route
                .parents
                .iter()
                .map(|parent| {
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
                        controller_name: options.controller_name.clone(),
                        conditions,
                    }
                })
                .collect();
            (
                ObjectKey::new(route.kind, &route.key.0, &route.key.1),
                RouteStatus { parents },
            )
        })
        .collect();
    let gateway_planes = gateways
        .iter()
        .filter_map(|g| g.plane.clone().map(|plane| (g.key.clone(), plane)))
        .collect();
    let refused_planes = gateways
        .iter()
        .filter_map(|g| g.refused_plane.map(|why| (g.key.clone(), why)))
        .collect();
    Translation {
        data_planes,
        gateway_classes,
        gateways: gateway_statuses,
        routes: route_statuses,
        listener_sets: BTreeMap::new(),
        backend_tls_policies: backend_tls::statuses(
            store,
            gateways,
            routes,
            &options.controller_name,
        ),
        gateway_planes,
        refused_planes,
    }
}
