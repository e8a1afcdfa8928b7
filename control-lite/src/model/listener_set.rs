//! `ListenerSet` (gateway.networking.k8s.io/v1, standard since Gateway API v1.5) as
//! far as Culvert reads it: the Gateway it names, so that a set aimed at one of
//! Culvert's Gateways can be refused in its status. Culvert does not merge
//! ListenerSets into Gateways, so their listeners are never read.

use super::meta::{Condition, ObjectMeta};
use serde::{Deserialize, Serialize};

/// A `ListenerSet`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListenerSet {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: ListenerSetSpec,
}

/// The part of `ListenerSet.spec` Culvert reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerSetSpec {
    /// The Gateway the set's listeners would join.
    pub parent_ref: ListenerSetParentRef,
}

/// `ListenerSet.spec.parentRef`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerSetParentRef {
    /// API group; `gateway.networking.k8s.io` when absent.
    #[serde(default)]
    pub group: Option<String>,
    /// Kind; `Gateway` when absent.
    #[serde(default)]
    pub kind: Option<String>,
    /// Name.
    pub name: String,
    /// Namespace; the ListenerSet's own when absent.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// Status of a `ListenerSet`: Culvert writes only its conditions, since it accepts
/// none of the set's listeners.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerSetStatus {
    /// Conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
