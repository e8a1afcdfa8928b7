//! Judging `conditions` and `statusChecks` entries against the status a translation
//! wrote, exactly as the vector README defines them.

use super::vector::{CheckKind, ConditionCheck, StatusCheck};
use culvert_control_lite::model::{Condition, GATEWAY_GROUP, ObjectKey, ParentReference};
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::Translation;

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It held.
    Pass,
    /// It did not; says expected and actual.
    Fail(String),
    /// It cannot be judged here; says why.
    Skip(String),
}

fn generation_of(store: &Store, kind: &str, namespace: &str, name: &str) -> i64 {
    let key = (namespace.to_owned(), name.to_owned());
    match kind {
        "GatewayClass" => store
            .gateway_classes
            .get(name)
            .map(|o| o.metadata.generation()),
        "Gateway" => store.gateways.get(&key).map(|o| o.metadata.generation()),
        "HTTPRoute" => store.http_routes.get(&key).map(|o| o.metadata.generation()),
        "GRPCRoute" => store.grpc_routes.get(&key).map(|o| o.metadata.generation()),
        "TLSRoute" => store.tls_routes.get(&key).map(|o| o.metadata.generation()),
        "BackendTLSPolicy" => store
            .backend_tls_policies
            .get(&key)
            .map(|o| o.metadata.generation()),
        _ => None,
    }
    .unwrap_or(1)
}

fn describe(conditions: &[Condition]) -> String {
    let listed: Vec<String> = conditions
        .iter()
        .map(|c| {
            format!(
                "{}={}/{}@{}",
                c.kind, c.status, c.reason, c.observed_generation
            )
        })
        .collect();
    format!("[{}]", listed.join(", "))
}

/// Judges one `conditions[]` entry.
pub fn condition(store: &Store, translation: &Translation, check: &ConditionCheck) -> Verdict {
    let namespace = check.namespace.as_deref().unwrap_or("");
    let generation = generation_of(store, &check.kind, namespace, &check.name);
    let found: Vec<&Condition> = match check.kind.as_str() {
        "GatewayClass" => translation
            .gateway_classes
            .get(&check.name)
            .map(|s| s.conditions.iter().collect())
            .unwrap_or_default(),
        "Gateway" => {
            let Some(status) = translation
                .gateways
                .get(&(namespace.to_owned(), check.name.clone()))
            else {
                return Verdict::Fail(format!("Gateway {namespace}/{} has no status", check.name));
            };
            match &check.listener {
                None => status.conditions.iter().collect(),
                Some(listener) => match status.listeners.iter().find(|l| l.name == *listener) {
                    Some(l) => l.conditions.iter().collect(),
                    None => return Verdict::Fail(format!("listener {listener} has no status")),
                },
            }
        }
        "HTTPRoute" | "GRPCRoute" | "TLSRoute" => {
            let key = ObjectKey::new(&check.kind, namespace, &check.name);
            let Some(status) = translation.routes.get(&key) else {
                return Verdict::Fail(format!("{key} has no status"));
            };
            let wanted = check.parent_ref.as_ref();
            status
                .parents
                .iter()
                .filter(|p| wanted.is_none_or(|w| parent_matches(w, &p.parent_ref, namespace)))
                .flat_map(|p| p.conditions.iter())
                .collect()
        }
        "BackendTLSPolicy" => {
            let key = (namespace.to_owned(), check.name.clone());
            let Some(status) = translation.backend_tls_policies.get(&key) else {
                return Verdict::Fail(format!(
                    "BackendTLSPolicy {namespace}/{} has no status",
                    check.name
                ));
            };
            let wanted = check.parent_ref.as_ref();
            status
                .ancestors
                .iter()
                .filter(|a| wanted.is_none_or(|w| parent_matches(w, &a.ancestor_ref, namespace)))
                .flat_map(|a| a.conditions.iter())
                .collect()
        }
        other => return Verdict::Skip(format!("status of {other} is not written by Culvert")),
    };
    let hit = found.iter().find(|c| {
        c.kind == check.condition_type
            && check.status.as_ref().is_none_or(|s| *s == c.status)
            && check.reason.as_ref().is_none_or(|r| *r == c.reason)
    });
    match hit {
        Some(c) if c.observed_generation == generation => Verdict::Pass,
        Some(c) => Verdict::Fail(format!(
            "observedGeneration {} != generation {generation}",
            c.observed_generation
        )),
        None => Verdict::Fail(format!(
            "expected {}={}/{} got {}",
            check.condition_type,
            check.status.as_deref().unwrap_or("*"),
            check.reason.as_deref().unwrap_or("*"),
            describe(&found.into_iter().cloned().collect::<Vec<_>>())
        )),
    }
}

fn parent_matches(
    wanted: &super::vector::ParentRef,
    actual: &ParentReference,
    route_namespace: &str,
) -> bool {
    let group = actual.group.as_deref().unwrap_or(GATEWAY_GROUP);
    let kind = actual.kind.as_deref().unwrap_or("Gateway");
    let namespace = actual.namespace.as_deref().unwrap_or(route_namespace);
    wanted.name == actual.name
        && wanted.group.as_deref().is_none_or(|g| g == group)
        && wanted.kind.as_deref().is_none_or(|k| k == kind)
        && wanted.namespace.as_deref().is_none_or(|n| n == namespace)
        && wanted
            .section_name
            .as_ref()
            .is_none_or(|s| actual.section_name.as_ref() == Some(s))
        && wanted
            .port
            .is_none_or(|p| actual.port == Some(i64::from(p)))
}

/// Judges one `statusChecks[]` entry.
pub fn status(store: &Store, translation: &Translation, check: &StatusCheck) -> Verdict {
    let namespace = check.namespace.as_deref().unwrap_or("");
    let gateway = translation
        .gateways
        .get(&(namespace.to_owned(), check.name.clone()));
    let route = translation
        .routes
        .get(&ObjectKey::new(&check.kind, namespace, &check.name));
    let generation = generation_of(store, &check.kind, namespace, &check.name);
    let fail = |message: String| Verdict::Fail(message);
    match &check.check {
        CheckKind::HasAddress => match gateway {
            Some(g) if !g.addresses.is_empty() => Verdict::Pass,
            _ => fail("gateway has no address".to_owned()),
        },
        CheckKind::StatusAddressesExactly => {
            let actual: Vec<String> = gateway
                .map(|g| g.addresses.iter().filter_map(|a| a.value.clone()).collect())
                .unwrap_or_default();
            let mut wanted = serde_json::json!(check.value.clone().unwrap_or_default());
            super::prepare::replace_placeholders(&mut wanted);
            let wanted: Vec<String> = serde_json::from_value(wanted).unwrap_or_default();
            if actual == wanted {
                Verdict::Pass
            } else {
                fail(format!("addresses {actual:?}, expected {wanted:?}"))
            }
        }
        CheckKind::ZeroAttachedRoutes => match gateway {
            None => Verdict::Pass,
            Some(g)
                if g.listeners.is_empty()
                    || (g.listeners.len() == 1 && g.listeners[0].attached_routes == 0) =>
            {
                Verdict::Pass
            }
            Some(g) => fail(format!(
                "attachedRoutes {:?}",
                g.listeners
                    .iter()
                    .map(|l| (&l.name, l.attached_routes))
                    .collect::<Vec<_>>()
            )),
        },
        CheckKind::NoAcceptedParents => {
            let parents = route.map(|r| r.parents.as_slice()).unwrap_or_default();
            let accepted_false = |p: &culvert_control_lite::model::RouteParentStatus| {
                p.conditions
                    .iter()
                    .any(|c| c.kind == "Accepted" && c.status == "False")
            };
            if parents.is_empty() || (parents.len() == 1 && accepted_false(&parents[0])) {
                Verdict::Pass
            } else {
                fail(format!(
                    "{} parent(s), first: {}",
                    parents.len(),
                    describe(&parents[0].conditions)
                ))
            }
        }
        CheckKind::ConditionsHaveLatestObservedGeneration => {
            let conditions: Vec<&Condition> = match check.kind.as_str() {
                "Gateway" => gateway
                    .map(|g| {
                        g.conditions
                            .iter()
                            .chain(g.listeners.iter().flat_map(|l| l.conditions.iter()))
                            .collect()
                    })
                    .unwrap_or_default(),
                "GatewayClass" => translation
                    .gateway_classes
                    .get(&check.name)
                    .map(|c| c.conditions.iter().collect())
                    .unwrap_or_default(),
                _ => route
                    .map(|r| r.parents.iter().flat_map(|p| p.conditions.iter()).collect())
                    .unwrap_or_default(),
            };
            if conditions.is_empty() {
                return fail("object has no conditions".to_owned());
            }
            match conditions
                .iter()
                .find(|c| c.observed_generation != generation)
            {
                None => Verdict::Pass,
                Some(c) => fail(format!(
                    "{} has observedGeneration {} != {generation}",
                    c.kind, c.observed_generation
                )),
            }
        }
        CheckKind::Listeners => {
            let Some(g) = gateway else {
                return fail("gateway has no status".to_owned());
            };
            if let Some(count) = check.listener_count {
                if g.listeners.len() != count as usize {
                    return fail(format!("{} listeners, expected {count}", g.listeners.len()));
                }
            }
            for wanted in &check.listeners {
                let Some(actual) = g.listeners.iter().find(|l| l.name == wanted.name) else {
                    return fail(format!("listener {} has no status", wanted.name));
                };
                if let Some(attached) = wanted.attached_routes {
                    if i64::from(actual.attached_routes) != i64::from(attached) {
                        return fail(format!(
                            "listener {} attachedRoutes {}, expected {attached}",
                            wanted.name, actual.attached_routes
                        ));
                    }
                }
                if wanted.supported_kinds_empty && !actual.supported_kinds.is_empty() {
                    return fail(format!(
                        "listener {} supportedKinds {:?}, expected none",
                        wanted.name, actual.supported_kinds
                    ));
                }
                for kind in &wanted.supported_kinds_include {
                    let group = kind.group.as_deref().unwrap_or(GATEWAY_GROUP);
                    let present = actual.supported_kinds.iter().any(|k| {
                        k.kind == kind.kind && k.group.as_deref().unwrap_or(GATEWAY_GROUP) == group
                    });
                    if !present {
                        return fail(format!(
                            "listener {} lacks supported kind {}",
                            wanted.name, kind.kind
                        ));
                    }
                }
            }
            Verdict::Pass
        }
        CheckKind::InfrastructureMetadataPropagated => {
            match super::infrastructure::propagated(store, namespace, &check.name) {
                Ok(()) => Verdict::Pass,
                Err(why) => fail(why),
            }
        }
        other => Verdict::Skip(format!("check {other} is not known to this harness")),
    }
}
