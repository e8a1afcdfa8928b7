//! The REST semantics: paths to kinds, list with pagination, watch streams, create,
//! replace, merge patch, delete, the `/status` subresource and optimistic
//! concurrency, answered with the bodies and codes a real API server gives.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::Inner;
use crate::selector::{Selector, field, label};
use crate::store::{Event, Key, Kind, status};

/// A parsed request path.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The kind addressed.
    pub(crate) kind: Kind,
    /// Namespace in the path, if any.
    pub(crate) namespace: Option<String>,
    /// Object name, if any.
    pub(crate) name: Option<String>,
    /// `status` when the subresource is addressed.
    pub(crate) status: bool,
}

/// Parses `/api/v1/...` and `/apis/G/V/...` paths; `None` is a 404 page.
pub(crate) fn target(kinds: &[Kind], path: &str) -> Option<Target> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, rest @ ..] => (Some((*ns).to_owned()), {
            let mut v = vec![*plural];
            v.extend_from_slice(rest);
            v
        }),
        other => (None, other.to_vec()),
    };
    // `/api/v1/namespaces/NAME` addresses a Namespace itself.
    let (namespace, rest) = match (namespace, rest.as_slice()) {
        (Some(ns), [plural]) if group.is_empty() && !is_plural(kinds, group, version, plural) => (
            None,
            vec!["namespaces", ns.as_str()]
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        ),
        (ns, _) => (ns, rest.iter().map(|s| (*s).to_owned()).collect()),
    };
    let (plural, name, status) = match rest.as_slice() {
        [plural] => (plural.clone(), None, false),
        [plural, name] => (plural.clone(), Some(name.clone()), false),
        [plural, name, sub] if sub == "status" => (plural.clone(), Some(name.clone()), true),
        _ => return None,
    };
    let kind = kinds
        .iter()
        .find(|k| k.group == group && k.version == version && k.plural == plural)?
        .clone();
    if namespace.is_some() && !kind.namespaced {
        return None;
    }
    Some(Target {
        kind,
        namespace,
        name,
        status,
    })
}

fn is_plural(kinds: &[Kind], group: &str, version: &str, plural: &str) -> bool {
    kinds
        .iter()
        .any(|k| k.group == group && k.version == version && k.plural == plural)
}

/// An answer: status code and JSON body.
pub(crate) type Answer = (u16, Value);

fn not_found(kind: &Kind, name: &str) -> Answer {
    let message = format!("{} \"{name}\" not found", kind.qualified());
    let details = json!({"name": name, "group": kind.group, "kind": kind.plural});
    (404, status(404, "NotFound", &message, Some(details)))
}

fn conflict(kind: &Kind, name: &str) -> Answer {
    let message = format!(
        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
        kind.qualified()
    );
    let details = json!({"name": name, "group": kind.group, "kind": kind.plural});
    (409, status(409, "Conflict", &message, Some(details)))
}

fn key(kind: &Kind, namespace: Option<&str>, name: &str) -> Key {
    (
        kind.qualified(),
        namespace.unwrap_or_default().to_owned(),
        name.to_owned(),
    )
}

/// Query parameters of a list or watch.
#[derive(Debug, Default)]
pub(crate) struct ListQuery {
    /// `labelSelector`.
    pub(crate) labels: Selector,
    /// `fieldSelector` terms.
    pub(crate) fields: Selector,
    /// `limit`.
    pub(crate) limit: Option<usize>,
    /// `continue`.
    pub(crate) continue_token: Option<String>,
    /// `resourceVersion`.
    pub(crate) resource_version: Option<u64>,
    /// `timeoutSeconds`.
    pub(crate) timeout_seconds: Option<u64>,
}

impl ListQuery {
    /// Parses the query string; `Err` is a 400 answer.
    pub(crate) fn parse(query: &BTreeMap<String, String>, kind: &Kind) -> Result<Self, Answer> {
        let bad = |message: String| (400, status(400, "BadRequest", &message, None));
        let labels =
            Selector::parse(query.get("labelSelector").map_or("", String::as_str)).map_err(bad)?;
        let fields =
            Selector::parse(query.get("fieldSelector").map_or("", String::as_str)).map_err(bad)?;
        for key in fields.keys() {
            field(&Value::Null, &kind.kind, key).map_err(bad)?;
        }
        Ok(Self {
            labels,
            fields,
            limit: query
                .get("limit")
                .and_then(|l| l.parse().ok())
                .filter(|l| *l > 0),
            continue_token: query.get("continue").cloned().filter(|c| !c.is_empty()),
            resource_version: query.get("resourceVersion").and_then(|rv| rv.parse().ok()),
            timeout_seconds: query.get("timeoutSeconds").and_then(|t| t.parse().ok()),
        })
    }

    /// Whether `object` (of `kind`, in `namespace` when one is addressed) is selected.
    pub(crate) fn selects(&self, kind: &Kind, namespace: Option<&str>, object: &Value) -> bool {
        if let Some(namespace) = namespace {
            if object["metadata"]["namespace"].as_str() != Some(namespace) {
                return false;
            }
        }
        self.labels.matches(|k| label(object, k))
            && self
                .fields
                .matches(|k| field(object, &kind.kind, k).ok().flatten())
    }
}

/// The object as a list item or response: built-in kinds' list items carry no
/// `apiVersion`/`kind`.
fn typed(kind: &Kind, mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".to_owned(), json!(kind.api_version()));
        map.insert("kind".to_owned(), json!(kind.kind));
    }
    object
}

/// `GET` of a collection.
pub(crate) fn list(inner: &Inner, target: &Target, query: &ListQuery) -> Answer {
    let store = inner
        .store
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (revision, start) = match &query.continue_token {
        Some(token) => match decode_continue(token) {
            Some((rv, _)) if rv < store.floor => {
                let message = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";
                return (410, status(410, "Expired", message, None));
            }
            Some((rv, start)) => (rv, Some(start)),
            None => {
                return (
                    400,
                    status(400, "BadRequest", "invalid continue token", None),
                );
            }
        },
        None => (store.revision, None),
    };
    let prefix = target.kind.qualified();
    let mut items: Vec<(&Key, &Value)> = store
        .objects
        .iter()
        .filter(|(k, _)| k.0 == prefix)
        .filter(|(k, _)| {
            start
                .as_ref()
                .is_none_or(|s| format!("{}/{}", k.1, k.2) > *s)
        })
        .filter(|(_, o)| query.selects(&target.kind, target.namespace.as_deref(), o))
        .collect();
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if let Some(limit) = query.limit {
        if items.len() > limit {
            let remaining = items.len() - limit;
            items.truncate(limit);
            let last = items
                .last()
                .map(|(k, _)| format!("{}/{}", k.1, k.2))
                .unwrap_or_default();
            metadata["continue"] = json!(encode_continue(revision, &last));
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    let items: Vec<Value> = items
        .into_iter()
        .map(|(_, o)| {
            if target.kind.custom {
                typed(&target.kind, o.clone())
            } else {
                untyped(o.clone())
            }
        })
        .collect();
    (
        200,
        json!({
            "kind": format!("{}List", target.kind.kind),
            "apiVersion": target.kind.api_version(),
            "metadata": metadata,
            "items": items,
        }),
    )
}

fn untyped(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    object
}

fn encode_continue(revision: u64, start: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": format!("{start}\u{0}")});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> Option<(u64, String)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    let start = value["start"]
        .as_str()?
        .trim_end_matches('\u{0}')
        .to_owned();
    Some((value["rv"].as_u64()?, start))
}

/// `GET` of one object.
pub(crate) fn get(inner: &Inner, target: &Target, name: &str) -> Answer {
    let store = inner
        .store
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match store
        .objects
        .get(&key(&target.kind, target.namespace.as_deref(), name))
    {
        Some(object) => (200, typed(&target.kind, object.clone())),
        None => not_found(&target.kind, name),
    }
}

/// `POST` to a collection.
pub(crate) fn create(inner: &Inner, target: &Target, mut object: Value) -> Answer {
    let kind = &target.kind;
    let Some(name) = object["metadata"]["name"].as_str().map(str::to_owned) else {
        let message = format!(
            "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
            kind.qualified()
        );
        return (422, status(422, "Invalid", &message, None));
    };
    let namespace = if kind.namespaced {
        let ns = target
            .namespace
            .clone()
            .or_else(|| object["metadata"]["namespace"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "default".to_owned());
        Some(ns)
    } else {
        None
    };
    let mut store = inner
        .store
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(ns) = &namespace {
        if !store
            .objects
            .contains_key(&("namespaces".to_owned(), String::new(), ns.clone()))
        {
            let message = format!("namespaces \"{ns}\" not found");
            let details = json!({"name": ns, "kind": "namespaces"});
            return (404, status(404, "NotFound", &message, Some(details)));
        }
    }
    let k = key(kind, namespace.as_deref(), &name);
    if store.objects.contains_key(&k) {
        let message = format!("{} \"{name}\" already exists", kind.qualified());
        let details = json!({"name": name, "group": kind.group, "kind": kind.plural});
        return (409, status(409, "AlreadyExists", &message, Some(details)));
    }
    let revision = store.next_revision();
    let uid = store.next_uid();
    {
        let Some(map) = object.as_object_mut() else {
            return (
                400,
                status(400, "BadRequest", "the body is not an object", None),
            );
        };
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        let Some(metadata) = metadata else {
            return (
                400,
                status(400, "BadRequest", "metadata is not an object", None),
            );
        };
        metadata.insert("uid".to_owned(), json!(uid));
        metadata.insert("resourceVersion".to_owned(), json!(revision.to_string()));
        metadata.insert("generation".to_owned(), json!(1));
        metadata.insert("creationTimestamp".to_owned(), json!(crate::now()));
        if let Some(ns) = &namespace {
            metadata.insert("namespace".to_owned(), json!(ns));
        }
        if kind.namespaced && kind.kind == "Namespace" {
            // never: Namespaces are cluster-scoped
        }
        if kind.kind == "Namespace" {
            let labels = metadata.entry("labels").or_insert_with(|| json!({}));
            labels["kubernetes.io/metadata.name"] = json!(name);
        }
    }
    let object = typed(kind, object);
    store.objects.insert(k.clone(), object.clone());
    store.record("ADDED", k, object.clone(), None);
    drop(store);
    inner.notify();
    (201, object)
}

/// `PUT` of an object or its status, or a merge `PATCH` (`patch` set).
pub(crate) fn update(
    inner: &Inner,
    target: &Target,
    name: &str,
    body: Value,
    patch: bool,
) -> Answer {
    let kind = &target.kind;
    let k = key(kind, target.namespace.as_deref(), name);
    let mut store = inner
        .store
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(current) = store.objects.get(&k).cloned() else {
        return not_found(kind, name);
    };
    let wanted_rv = body["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned);
    let current_rv = current["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned);
    match &wanted_rv {
        Some(rv) if Some(rv) != current_rv.as_ref() => return conflict(kind, name),
        None if !patch && kind.custom => {
            let message = format!(
                "{} \"{name}\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update",
                kind.qualified()
            );
            return (422, status(422, "Invalid", &message, None));
        }
        _ => {}
    }
    let proposed = if patch {
        let mut merged = current.clone();
        merge_patch(&mut merged, &body);
        merged
    } else {
        body
    };
    let mut next = current.clone();
    let object = next.as_object_mut();
    let (Some(next_map), Some(proposed_map)) = (object, proposed.as_object()) else {
        return (
            400,
            status(400, "BadRequest", "the body is not an object", None),
        );
    };
    if target.status {
        // Only `.status` changes through the subresource.
        match proposed_map.get("status") {
            Some(s) => next_map.insert("status".to_owned(), s.clone()),
            None => next_map.remove("status"),
        };
    } else {
        let keep_status = kind.status;
        let old_status = next_map.get("status").cloned();
        let old_meta = next_map
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        *next_map = proposed_map.clone();
        match (keep_status, old_status) {
            (true, Some(s)) => {
                next_map.insert("status".to_owned(), s);
            }
            (true, None) => {
                next_map.remove("status");
            }
            _ => {}
        }
        // Server-owned metadata stays the server's.
        let meta = next_map.entry("metadata").or_insert_with(|| json!({}));
        for field in [
            "uid",
            "creationTimestamp",
            "generation",
            "name",
            "namespace",
        ] {
            if let Some(v) = old_meta.get(field) {
                meta[field] = v.clone();
            }
        }
    }
    let spec_changed = without_meta_and_status(&current) != without_meta_and_status(&next);
    let mut compare_old = current.clone();
    let mut compare_new = next.clone();
    for v in [&mut compare_old, &mut compare_new] {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
    }
    if compare_old == compare_new {
        // A no-op write: same resourceVersion, no event.
        return (200, typed(kind, current));
    }
    let revision = store.next_revision();
    if let Some(meta) = next.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".to_owned(), json!(revision.to_string()));
        if spec_changed {
            let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(1);
            meta.insert("generation".to_owned(), json!(generation + 1));
        }
    }
    let next = typed(kind, next);
    // Finalizers cleared on an object being deleted: it goes now.
    let deleting = next["metadata"]["deletionTimestamp"].is_string();
    let finalizers = next["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if deleting && !finalizers {
        store.objects.remove(&k);
        store.record("DELETED", k, next.clone(), Some(current));
    } else {
        store.objects.insert(k.clone(), next.clone());
        store.record("MODIFIED", k, next.clone(), Some(current));
    }
    drop(store);
    inner.notify();
    (200, next)
}

fn without_meta_and_status(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

/// RFC 7386 JSON merge patch.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(map) = target {
        for (k, v) in patch {
            if v.is_null() {
                map.remove(k);
            } else {
                merge_patch(map.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// `DELETE` of an object: gone at once, or marked when it has finalizers.
pub(crate) fn delete(inner: &Inner, target: &Target, name: &str) -> Answer {
    let kind = &target.kind;
    let k = key(kind, target.namespace.as_deref(), name);
    let mut store = inner
        .store
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(current) = store.objects.get(&k).cloned() else {
        return not_found(kind, name);
    };
    let revision = store.next_revision();
    let mut gone = current.clone();
    gone["metadata"]["resourceVersion"] = json!(revision.to_string());
    let finalizers = current["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if finalizers {
        gone["metadata"]["deletionTimestamp"] = json!(crate::now());
        store.objects.insert(k.clone(), gone.clone());
        store.record("MODIFIED", k, gone.clone(), Some(current));
    } else {
        store.objects.remove(&k);
        // Deleting a namespace deletes what is in it.
        if kind.kind == "Namespace" {
            let inside: Vec<Key> = store
                .objects
                .keys()
                .filter(|(_, ns, _)| ns == name)
                .cloned()
                .collect();
            for key in inside {
                if let Some(object) = store.objects.remove(&key) {
                    let rev = store.next_revision();
                    let mut object = object;
                    object["metadata"]["resourceVersion"] = json!(rev.to_string());
                    store.record("DELETED", key, object, None);
                }
            }
        }
        store.record("DELETED", k, gone.clone(), Some(current));
    }
    drop(store);
    inner.notify();
    (200, typed(kind, gone))
}

/// The watch event lines for `event` as a watch with `query` on `target` sees it:
/// an object that starts matching is ADDED, one that stops matching is DELETED
/// (the old object, the new resourceVersion).
pub(crate) fn watch_line(target: &Target, query: &ListQuery, event: &Event) -> Option<Value> {
    if event.key.0 != target.kind.qualified() {
        return None;
    }
    let namespace = target.namespace.as_deref();
    let now = query.selects(&target.kind, namespace, &event.object);
    let before = event
        .previous
        .as_ref()
        .is_some_and(|p| query.selects(&target.kind, namespace, p));
    let (kind, object) = match (event.kind, before, now) {
        ("DELETED", _, true) => ("DELETED", event.object.clone()),
        ("DELETED", true, false) => ("DELETED", event.object.clone()),
        ("DELETED", false, false) => return None,
        (_, false, true) => ("ADDED", event.object.clone()),
        (_, true, true) => ("MODIFIED", event.object.clone()),
        (_, true, false) => {
            let mut old = event.previous.clone().unwrap_or(Value::Null);
            old["metadata"]["resourceVersion"] =
                event.object["metadata"]["resourceVersion"].clone();
            ("DELETED", old)
        }
        (_, false, false) => return None,
    };
    Some(json!({"type": kind, "object": typed(&target.kind, object)}))
}
