//! ReferenceGrant checks: may an object in one namespace refer to an object in
//! another?

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
