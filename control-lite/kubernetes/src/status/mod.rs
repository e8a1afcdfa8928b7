//! What the status of each object should become: the conditions translation
//! computed, merged into the status the object carries now. Pure: the writer
//! ([`crate::writer`]) carries the result out.
//!
//! The merge keeps what is not Culvert's: a route's `status.parents` entries of
//! other controllers stay as they are, in place, and only entries whose
//! `controllerName` is Culvert's are replaced or removed. A GatewayClass, Gateway
//! or ListenerSet has one owner, the controller of its (parent's) class, so
//! Culvert's fields replace the stored ones. A condition keeps its
//! `lastTransitionTime` while its status does not change. An object whose merged
//! status equals the stored one gets no write at all.

use culvert_control_lite::model::{Condition, ObjectKey};
use culvert_control_lite::translate::Translation;
use serde_json::{Map, Value, json};

use crate::mirror::Observed;

/// The route kinds whose status Culvert writes, as translation names them.
const ROUTE_KINDS: [&str; 5] = ["HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"];
/// The policy kind whose status Culvert writes.
const POLICY_KIND: &str = "BackendTLSPolicy";

/// The status `key` should have, or `None` when the stored one is already right
/// (or Culvert has nothing to say about the object).
pub fn desired(
    translation: &Translation,
    key: &ObjectKey,
    observed: &Observed,
    controller_name: &str,
    now: &str,
) -> Option<Value> {
    let ours = ours(translation, key)?;
    let merged = match entry_list(&key.kind) {
        None => merge_owned(&observed.status, ours, now),
        Some(list) => merge_entries(&observed.status, ours, list, controller_name, now),
    };
    (merged != observed.status).then_some(merged)
}

/// Every object that may need a status write: those translation covers, and
/// routes that carry an entry of Culvert's that translation no longer makes.
pub fn candidates<'o>(
    translation: &Translation,
    observed: impl Iterator<Item = (&'o ObjectKey, &'o Observed)>,
    controller_name: &str,
) -> Vec<ObjectKey> {
    let mut keys: Vec<ObjectKey> = translation
        .gateway_classes
        .keys()
        .map(|name| ObjectKey::new("GatewayClass", "", name))
        .chain(
            translation
                .gateways
                .keys()
                .map(|(namespace, name)| ObjectKey::new("Gateway", namespace, name)),
        )
        .chain(translation.routes.keys().cloned())
        .chain(
            translation
                .listener_sets
                .keys()
                .map(|(namespace, name)| ObjectKey::new("ListenerSet", namespace, name)),
        )
        .chain(
            translation
                .backend_tls_policies
                .keys()
                .map(|(namespace, name)| ObjectKey::new(POLICY_KIND, namespace, name)),
        )
        .collect();
    for (key, observed) in observed {
        let Some(list) = entry_list(&key.kind) else {
            continue;
        };
        let stale = ours(translation, key).is_some_and(|ours| ours == json!([]))
            && entries(&observed.status, list)
                .iter()
                .any(|entry| is_ours(entry, controller_name));
        if stale {
            keys.push(key.clone());
        }
    }
    keys
}

/// Culvert's part of the status of `key`, as JSON: the whole status of a class,
/// Gateway or ListenerSet; the parent entries of a route (an empty list when it has
/// none).
fn ours(translation: &Translation, key: &ObjectKey) -> Option<Value> {
    let value = match key.kind.as_str() {
        "GatewayClass" => serde_json::to_value(translation.gateway_classes.get(&key.name)?),
        "Gateway" => serde_json::to_value(
            translation
                .gateways
                .get(&(key.namespace.clone(), key.name.clone()))?,
        ),
        "ListenerSet" => serde_json::to_value(
            translation
                .listener_sets
                .get(&(key.namespace.clone(), key.name.clone()))?,
        ),
        kind if ROUTE_KINDS.contains(&kind) => match translation.routes.get(key) {
            Some(status) => serde_json::to_value(&status.parents),
            None => Ok(Value::Array(Vec::new())),
        },
        POLICY_KIND => match translation
            .backend_tls_policies
            .get(&(key.namespace.clone(), key.name.clone()))
        {
            Some(status) => serde_json::to_value(&status.ancestors),
            None => Ok(Value::Array(Vec::new())),
        },
        _ => return None,
    };
    value.ok()
}

/// A class's, Gateway's or ListenerSet's status: Culvert's fields replace the
/// stored ones, other fields stay; conditions keep their transition times.
fn merge_owned(stored: &Value, mut ours: Value, now: &str) -> Value {
    let mut merged = stored.as_object().cloned().unwrap_or_default();
    stamp(ours.get_mut("conditions"), stored.get("conditions"), now);
    if let Some(listeners) = ours.get_mut("listeners").and_then(Value::as_array_mut) {
        for listener in listeners {
            let name = listener.get("name").cloned();
            let before = stored
                .get("listeners")
                .and_then(Value::as_array)
                .and_then(|all| all.iter().find(|l| l.get("name") == name.as_ref()))
                .and_then(|l| l.get("conditions"));
            stamp(listener.get_mut("conditions"), before, now);
        }
    }
    if let Value::Object(fields) = ours {
        merged.extend(fields);
    }
    Value::Object(merged)
}

/// Where a kind shared between controllers keeps their entries: a route's
/// `parents` (by `parentRef`), a policy's `ancestors` (by `ancestorRef`).
#[derive(Debug, Clone, Copy)]
struct EntryList {
    field: &'static str,
    reference: &'static str,
}

/// The entry list of `kind`; `None` for a kind Culvert owns whole.
fn entry_list(kind: &str) -> Option<EntryList> {
    if ROUTE_KINDS.contains(&kind) {
        Some(EntryList {
            field: "parents",
            reference: "parentRef",
        })
    } else if kind == POLICY_KIND {
        Some(EntryList {
            field: "ancestors",
            reference: "ancestorRef",
        })
    } else {
        None
    }
}

/// A shared status: other controllers' entries stay where they are, Culvert's
/// are replaced by `ours` (a JSON array of entries).
fn merge_entries(
    stored: &Value,
    ours: Value,
    list: EntryList,
    controller_name: &str,
    now: &str,
) -> Value {
    let mut merged: Map<String, Value> = stored.as_object().cloned().unwrap_or_default();
    let before = entries(stored, list);
    let mut kept: Vec<Value> = before
        .iter()
        .filter(|entry| !is_ours(entry, controller_name))
        .cloned()
        .collect();
    let Value::Array(mut new) = ours else {
        return stored.clone();
    };
    for entry in &mut new {
        let previous = before
            .iter()
            .find(|old| {
                is_ours(old, controller_name)
                    && old.get(list.reference) == entry.get(list.reference)
            })
            .and_then(|old| old.get("conditions"));
        stamp(entry.get_mut("conditions"), previous, now);
    }
    kept.extend(new);
    if kept.is_empty() && !merged.contains_key(list.field) {
        return stored.clone();
    }
    merged.insert(list.field.to_owned(), Value::Array(kept));
    Value::Object(merged)
}

fn entries(status: &Value, list: EntryList) -> Vec<Value> {
    status
        .get(list.field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn is_ours(entry: &Value, controller_name: &str) -> bool {
    entry.get("controllerName").and_then(Value::as_str) == Some(controller_name)
}

/// Sets each condition's `lastTransitionTime`: the stored one while the
/// condition's status is unchanged, `now` otherwise.
fn stamp(conditions: Option<&mut Value>, stored: Option<&Value>, now: &str) {
    let Some(Value::Array(conditions)) = conditions else {
        return;
    };
    let stored: Vec<Condition> = stored
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    for condition in conditions {
        let kind = condition.get("type").and_then(Value::as_str);
        let status = condition.get("status").and_then(Value::as_str);
        let time = stored
            .iter()
            .find(|c| Some(c.kind.as_str()) == kind && Some(c.status.as_str()) == status)
            .and_then(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| now.to_owned());
        if let Some(map) = condition.as_object_mut() {
            map.insert("lastTransitionTime".to_owned(), json!(time));
        }
    }
}

/// Warnings about a status Culvert wrote for `key`, as `(reason, message)`: the
/// conditions that say the object or one of its parts is not accepted, not
/// resolved, not programmed or in conflict, and a route's `TunnelShared` (its
/// Gateway's tunnel serves other dedicated Gateways too, reason `TunnelShared`).
/// A Gateway that admission refused a dedicated plane is reported with the reason
/// of that refusal (`TunnelClaimRejected`, `DataPlaneQuotaExceeded`) rather than
/// its condition's. They become Warning events.
pub fn refusals(
    translation: &Translation,
    key: &ObjectKey,
    status: &Value,
    controller_name: &str,
) -> Vec<(String, String)> {
    let kind = key.kind.as_str();
    // The object's own conditions, then its listeners'.
    let mut lists: Vec<(&Value, bool)> = Vec::new();
    if let Some(list) = entry_list(kind) {
        if let Some(entries) = status.get(list.field).and_then(Value::as_array) {
            lists.extend(
                entries
                    .iter()
                    .filter(|e| is_ours(e, controller_name))
                    .filter_map(|e| e.get("conditions"))
                    .map(|c| (c, true)),
            );
        }
    } else {
        lists.extend(status.get("conditions").map(|c| (c, true)));
        if let Some(listeners) = status.get("listeners").and_then(Value::as_array) {
            lists.extend(
                listeners
                    .iter()
                    .filter_map(|l| l.get("conditions"))
                    .map(|c| (c, false)),
            );
        }
    }
    let refused_plane = (kind == "Gateway")
        .then(|| {
            translation
                .refused_planes
                .get(&(key.namespace.clone(), key.name.clone()))
        })
        .flatten();
    let mut out: Vec<(String, String)> = Vec::new();
    for (list, own) in lists {
        let conditions: Vec<Condition> = serde_json::from_value(list.clone()).unwrap_or_default();
        for c in conditions {
            let reason = match (c.kind.as_str(), c.status.as_str()) {
                ("Conflicted", "True") => c.reason,
                ("TunnelShared", "True") => "TunnelShared".to_owned(),
                ("Accepted", "False") if own && refused_plane.is_some() => refused_plane
                    .map(|why| why.reason().to_owned())
                    .unwrap_or(c.reason),
                ("Accepted" | "ResolvedRefs" | "Programmed", "False") => c.reason,
                // The controller's pushes: only a sustained failure is worth a
                // Warning, not a plane still starting.
                ("ProxyConfigPushed", "False") if c.reason == "ProxyConfigPushFailed" => c.reason,
                _ => continue,
            };
            if !out.iter().any(|(r, m)| *r == reason && *m == c.message) {
                out.push((reason, c.message));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
