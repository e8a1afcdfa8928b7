//! `ReferenceGrant` (gateway.networking.k8s.io, v1 and v1beta1): permission for
//! objects in other namespaces to refer to objects in this one.

use super::meta::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A `ReferenceGrant`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceGrant {
    /// Metadata; the namespace is the one references point into.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: ReferenceGrantSpec,
}

/// `ReferenceGrant.spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceGrantSpec {
    /// Who may refer.
    #[serde(default)]
    pub from: Vec<ReferenceGrantFrom>,
    /// What may be referred to.
    #[serde(default)]
    pub to: Vec<ReferenceGrantTo>,
}

/// A referrer kind in a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceGrantFrom {
    /// API group (`""` for core).
    #[serde(default)]
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace of the referrers.
    pub namespace: String,
}

/// A referent kind, optionally one name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceGrantTo {
    /// API group (`""` for core).
    #[serde(default)]
    pub group: String,
    /// Kind.
    pub kind: String,
    /// One object; every object of the kind when absent.
    #[serde(default)]
    pub name: Option<String>,
}
