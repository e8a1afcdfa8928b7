//! The plane's PodDisruptionBudget: `maxUnavailable: 1`, whatever the replica
//! count.
//!
//! One rule, chosen over `minAvailable: 1` from two replicas on: it lets a node
//! drain evict a single-replica plane (a `minAvailable: 1` budget on one pod would
//! block the drain forever), takes pods one at a time at any size, and needs no
//! change when the autoscaler moves the count. A voluntary eviction then always
//! goes through the pod's `preStop` drain. Start at `disruption_budget`.

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::Plane;

/// The disruption budget.
pub(super) fn disruption_budget(plane: &Plane<'_>) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: plane.metadata(&plane.names.workload),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(plane.pod_selector()),
            // A pod that never turned ready (no push yet, no connector) may be
            // evicted without counting against the budget.
            unhealthy_pod_eviction_policy: Some("AlwaysAllow".to_owned()),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    }
}
