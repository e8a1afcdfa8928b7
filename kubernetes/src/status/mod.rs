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
    let merged = match key.kind.as_str() {
        "GatewayClass" | "Gateway" | "ListenerSet" => merge_owned(&observed.status, ours, now),
        _ => merge_parents(&observed.status, ours, controller_name, now),
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
        .collect();
    for (key, observed) in observed {
        let stale = ROUTE_KINDS.contains(&key.kind.as_str())
            && !translation.routes.contains_key(key)
            && parents(&observed.status)
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

/// A route's status: other controllers' parent entries stay where they are,
/// Culvert's are replaced by `ours` (a JSON array of parent statuses).
fn merge_parents(stored: &Value, ours: Value, controller_name: &str, now: &str) -> Value {
    let mut merged: Map<String, Value> = stored.as_object().cloned().unwrap_or_default();
    let before = parents(stored);
    let mut entries: Vec<Value> = before
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
                is_ours(old, controller_name) && old.get("parentRef") == entry.get("parentRef")
            })
            .and_then(|old| old.get("conditions"));
        stamp(entry.get_mut("conditions"), previous, now);
    }
    entries.extend(new);
    if entries.is_empty() && !merged.contains_key("parents") {
        return stored.clone();
    }
    merged.insert("parents".to_owned(), Value::Array(entries));
    Value::Object(merged)
}

fn parents(status: &Value) -> Vec<Value> {
    status
        .get("parents")
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

/// Refusals in a status Culvert wrote, as `(reason, message)`: conditions that
/// say an object or one of its parts is not accepted, not resolved, not
/// programmed or in conflict. They become Warning events.
pub fn refusals(kind: &str, status: &Value, controller_name: &str) -> Vec<(String, String)> {
    let mut lists: Vec<&Value> = Vec::new();
    if ROUTE_KINDS.contains(&kind) {
        if let Some(entries) = status.get("parents").and_then(Value::as_array) {
            lists.extend(
                entries
                    .iter()
                    .filter(|e| is_ours(e, controller_name))
                    .filter_map(|e| e.get("conditions")),
            );
        }
    } else {
        lists.extend(status.get("conditions"));
        if let Some(listeners) = status.get("listeners").and_then(Value::as_array) {
            lists.extend(listeners.iter().filter_map(|l| l.get("conditions")));
        }
    }
    let mut out = Vec::new();
    for list in lists {
        let conditions: Vec<Condition> = serde_json::from_value(list.clone()).unwrap_or_default();
        for c in conditions {
            let bad = match c.kind.as_str() {
                "Conflicted" => c.status == "True",
                "Accepted" | "ResolvedRefs" | "Programmed" => c.status == "False",
                _ => false,
            };
            if bad && !out.iter().any(|(r, m)| *r == c.reason && *m == c.message) {
                out.push((c.reason, c.message));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
