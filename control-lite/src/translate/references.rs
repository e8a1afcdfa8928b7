//! ReferenceGrant checks: may an object in one namespace refer to an object in
//! another?

use crate::model::{GATEWAY_GROUP, SecretObjectReference};
use crate::store::Store;

/// One side of a reference: group, kind, namespace (and, for the target, name).
pub(crate) struct Side<'a> {
    pub(crate) group: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) namespace: &'a str,
}

/// Whether `from` may refer to `to_name` of `to`: always within a namespace, across
/// namespaces only when a ReferenceGrant in the target namespace allows it.
pub(crate) fn permitted(store: &Store, from: &Side<'_>, to: &Side<'_>, to_name: &str) -> bool {
    if from.namespace == to.namespace {
        return true;
    }
    store
        .reference_grants
        .iter()
        .filter(|((namespace, _), _)| namespace == to.namespace)
        .any(|(_, grant)| {
            grant.spec.from.iter().any(|f| {
                f.group == from.group && f.kind == from.kind && f.namespace == from.namespace
            }) && grant.spec.to.iter().any(|t| {
                t.group == to.group
                    && t.kind == to.kind
                    && t.name.as_deref().is_none_or(|n| n == to_name)
            })
        })
}

/// Why a Gateway's reference to a core object cannot be followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GatewayRefError<'a> {
    /// It names no core object of the kind asked for: its group and kind.
    Kind { group: &'a str, kind: &'a str },
    /// The object is in `namespace`, another one, and no ReferenceGrant allows it.
    NotPermitted { namespace: &'a str },
}

/// The namespace of the core `kind` object that a Gateway in `gateway_namespace`
/// names in `reference` (whose kind defaults to `kind`), once the reference is of
/// that kind and ReferenceGrants allow it.
pub(crate) fn gateway_core_ref<'a>(
    store: &Store,
    gateway_namespace: &'a str,
    reference: &'a SecretObjectReference,
    kind: &'a str,
) -> Result<&'a str, GatewayRefError<'a>> {
    let group = reference.group.as_deref().unwrap_or("");
    let named_kind = reference.kind.as_deref().unwrap_or(kind);
    if !group.is_empty() || named_kind != kind {
        return Err(GatewayRefError::Kind {
            group,
            kind: named_kind,
        });
    }
    let namespace = reference.namespace.as_deref().unwrap_or(gateway_namespace);
    let from = Side {
        group: GATEWAY_GROUP,
        kind: "Gateway",
        namespace: gateway_namespace,
    };
    let to = Side {
        group: "",
        kind,
        namespace,
    };
    if permitted(store, &from, &to, &reference.name) {
        Ok(namespace)
    } else {
        Err(GatewayRefError::NotPermitted { namespace })
    }
}
