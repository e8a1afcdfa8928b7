//! The REST semantics of single objects: paths to targets, get, create, replace,
//! patch and delete, with the server's rules for each (server-owned metadata,
//! optimistic concurrency, the `/status` subresource, `generation`, no-op writes,
//! finalizers, namespace lifecycle, CRD defaults), answered with the `Status`
//! failures a real API server gives. Lists live in `list`, watches in `watch`.
//! Start at [`write`], the one place a stored object changes.

use serde_json::{Value, json};

use crate::error::Status;
use crate::patch::{self, Applier};
use crate::registry::{CRD_GROUP, Kind, Registry, crd_kinds};
use crate::schema;
use crate::state::{Inner, now, random_hex};
use crate::store::{Change, Key, Store};

/// What a request path addresses.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The kind addressed.
    pub(crate) kind: Kind,
    /// Namespace in the path, if any.
    pub(crate) namespace: Option<String>,
    /// Object name, if any.
    pub(crate) name: Option<String>,
    /// The `/status` subresource is addressed.
    pub(crate) status: bool,
}

/// Parses `/api/v1/...` and `/apis/G/V/...` resource paths; `None` is the plain
/// `404 page not found`.
pub(crate) fn target(registry: &Registry, path: &str) -> Option<Target> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let find = |plural: &str| registry.by_plural(group, version, plural).cloned();
    let (namespace, plural, name, sub) = match rest {
        ["namespaces", ns, plural, tail @ ..] if find(plural).is_some_and(|k| k.namespaced) => {
            match tail {
                [] => (Some(*ns), *plural, None, None),
                [name] => (Some(*ns), *plural, Some(*name), None),
                [name, sub] => (Some(*ns), *plural, Some(*name), Some(*sub)),
                _ => return None,
            }
        }
        [plural] => (None, *plural, None, None),
        [plural, name] => (None, *plural, Some(*name), None),
        [plural, name, sub] => (None, *plural, Some(*name), Some(*sub)),
        _ => return None,
    };
    let kind = find(plural)?;
    // A namespaced kind is only addressed by name inside its namespace.
    if kind.namespaced && namespace.is_none() && name.is_some() {
        return None;
    }
    let status = match sub {
        None => false,
        Some("status") if kind.status => true,
        Some(_) => return None,
    };
    Some(Target {
        kind,
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
        status,
    })
}

/// `details` naming an object.
pub(crate) fn details(kind: &Kind, name: &str) -> Value {
    json!({"name": name, "group": kind.group, "kind": kind.plural})
}

/// 404 NotFound for an object.
pub(crate) fn not_found(kind: &Kind, name: &str) -> Status {
    Status::new(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", kind.qualified()),
    )
    .with_details(details(kind, name))
}

/// 409 Conflict with the optimistic-lock message (`OptimisticLockErrorMsg`).
pub(crate) fn conflict(kind: &Kind, name: &str) -> Status {
    let message = format!(
        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
        kind.qualified()
    );
    Status::new(409, "Conflict", message).with_details(details(kind, name))
}

/// The storage key of an object.
pub(crate) fn key(kind: &Kind, namespace: Option<&str>, name: &str) -> Key {
    (
        kind.qualified(),
        if kind.namespaced {
            namespace.unwrap_or_default().to_owned()
        } else {
            String::new()
        },
        name.to_owned(),
    )
}

/// The object with this kind's `apiVersion`/`kind` (objects of every version of a
/// resource share storage).
pub(crate) fn typed(kind: &Kind, mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".to_owned(), json!(kind.api_version()));
        map.insert("kind".to_owned(), json!(kind.kind));
    }
    object
}

/// The metadata-only view (`PartialObjectMetadata`) of an object.
pub(crate) fn partial(object: &Value) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": object["metadata"].clone(),
    })
}

fn object_name(target: &Target) -> Result<&str, Status> {
    target
        .name
        .as_deref()
        .ok_or_else(|| Status::new(405, "MethodNotAllowed", "a name is required"))
}

/// `GET` of one object.
pub(crate) fn get(inner: &Inner, target: &Target) -> Result<Value, Status> {
    let name = object_name(target)?;
    let store = inner.store();
    store
        .objects
        .get(&key(&target.kind, target.namespace.as_deref(), name))
        .map(|o| typed(&target.kind, o.clone()))
        .ok_or_else(|| not_found(&target.kind, name))
}

/// Options of a write request.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOptions {
    /// `fieldManager`.
    pub(crate) field_manager: Option<String>,
    /// `force` (apply only).
    pub(crate) force: bool,
}

/// `POST` to a collection.
pub(crate) fn create(inner: &Inner, target: &Target, object: Value) -> Result<Value, Status> {
    let created = {
        let mut store = inner.store();
        create_locked(&mut store, target, object)?
    };
    after_write(inner, &target.kind, Some(&created), None);
    inner.notify();
    Ok(created)
}

fn create_locked(store: &mut Store, target: &Target, mut object: Value) -> Result<Value, Status> {
    let kind = &target.kind;
    if !object.is_object() {
        return Err(Status::bad_request("the body is not a JSON object"));
    }
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let name = match (
        object["metadata"]["name"].as_str(),
        object["metadata"]["generateName"].as_str(),
    ) {
        (Some(name), _) if !name.is_empty() => name.to_owned(),
        (_, Some(prefix)) if !prefix.is_empty() => format!("{prefix}{}", &random_hex()[..5]),
        _ => {
            return Err(Status::invalid(
                &kind.qualified(),
                "",
                "metadata.name: Required value: name or generateName is required",
            ));
        }
    };
    let namespace = if kind.namespaced {
        let in_body = object["metadata"]["namespace"].as_str();
        match (&target.namespace, in_body) {
            (Some(path), Some(body)) if path != body => {
                return Err(Status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            (Some(path), _) => Some(path.clone()),
            (None, Some(body)) => Some(body.to_owned()),
            (None, None) => Some("default".to_owned()),
        }
    } else {
        None
    };
    if let Some(ns) = &namespace {
        match store
            .objects
            .get(&("namespaces".to_owned(), String::new(), ns.clone()))
        {
            None => {
                return Err(
                    Status::new(404, "NotFound", format!("namespaces \"{ns}\" not found"))
                        .with_details(json!({"name": ns, "kind": "namespaces"})),
                );
            }
            Some(n) if n["metadata"]["deletionTimestamp"].is_string() => {
                return Err(Status::new(
                    403,
                    "Forbidden",
                    format!(
                        "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                        kind.qualified()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    let k = key(kind, namespace.as_deref(), &name);
    if store.objects.contains_key(&k) {
        return Err(Status::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", kind.qualified()),
        )
        .with_details(details(kind, &name)));
    }
    if kind.group == CRD_GROUP {
        crd_kinds(&object)
            .map_err(|e| Status::invalid(&kind.qualified(), &name, &e.to_string()))?;
    }
    let uid = store.next_uid();
    let meta = &mut object["metadata"];
    meta["name"] = json!(name);
    meta["uid"] = json!(uid);
    meta["generation"] = json!(1);
    meta["creationTimestamp"] = json!(store.clock.clone().unwrap_or_else(now));
    if let Some(map) = meta.as_object_mut() {
        map.remove("deletionTimestamp");
        map.remove("generateName");
    }
    if let Some(ns) = &namespace {
        meta["namespace"] = json!(ns);
    }
    if kind.kind == "Namespace" && kind.group.is_empty() {
        meta["labels"]["kubernetes.io/metadata.name"] = json!(name);
        object["status"] = json!({"phase": "Active"});
    }
    if let Some(schema) = &kind.schema {
        schema::apply_defaults(&mut object, schema);
    }
    let object = typed(kind, object);
    Ok(store.commit(Change::Added, k, object))
}

/// Metadata only the server writes: a client's copy is ignored.
const SERVER_OWNED: [&str; 7] = [
    "uid",
    "creationTimestamp",
    "generation",
    "name",
    "namespace",
    "deletionTimestamp",
    "managedFields",
];

/// The one place a stored object changes: applies the server's rules to a
/// `proposed` full object replacing `current` and commits it (or not, for a no-op).
/// `managed` is the `managedFields` an apply computed; otherwise the stored ones are
/// kept (and `manager`, if any, takes the fields it changed).
fn write(
    store: &mut Store,
    target: &Target,
    name: &str,
    current: &Value,
    proposed: Value,
    managed: Option<Value>,
    manager: Option<&str>,
) -> Result<Value, Status> {
    let kind = &target.kind;
    let Some(proposed_map) = proposed.as_object() else {
        return Err(Status::bad_request("the body is not a JSON object"));
    };
    let mut next = current.clone();
    if target.status {
        // Only `.status` changes through the subresource.
        match proposed_map.get("status") {
            Some(s) => next["status"] = s.clone(),
            None => {
                if let Some(map) = next.as_object_mut() {
                    map.remove("status");
                }
            }
        }
    } else {
        next = proposed.clone();
        if kind.status {
            match current.get("status") {
                Some(s) => next["status"] = s.clone(),
                None => {
                    if let Some(map) = next.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
        }
        if !next["metadata"].is_object() {
            next["metadata"] = json!({});
        }
        for field in SERVER_OWNED {
            match current["metadata"].get(field) {
                Some(v) => next["metadata"][field] = v.clone(),
                None => {
                    if let Some(meta) = next["metadata"].as_object_mut() {
                        meta.remove(field);
                    }
                }
            }
        }
    }
    next["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    match managed {
        Some(Value::Null) | None => {}
        Some(fields) => next["metadata"]["managedFields"] = fields,
    }
    if let Some(schema) = &kind.schema {
        schema::apply_defaults(&mut next, schema);
    }
    next = typed(kind, next);
    if let Some(manager) = manager {
        let time = now();
        let who = Applier {
            manager,
            force: false,
            api_version: &kind.api_version(),
            status: target.status,
            time: &time,
        };
        patch::record_update(current, &mut next, &who);
    }
    if next == *current {
        // A no-op write: same resourceVersion, no event.
        return Ok(next);
    }
    if kind.group == CRD_GROUP {
        crd_kinds(&next).map_err(|e| Status::invalid(&kind.qualified(), name, &e.to_string()))?;
    }
    if without_meta_and_status(current) != without_meta_and_status(&next) {
        let generation = current["metadata"]["generation"].as_i64().unwrap_or(1);
        next["metadata"]["generation"] = json!(generation + 1);
    }
    let k = key(kind, target.namespace.as_deref(), name);
    let deleting = next["metadata"]["deletionTimestamp"].is_string();
    let finalizers = next["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    // Finalizers cleared on an object being deleted: it goes now.
    let change = if deleting && !finalizers {
        Change::Deleted
    } else {
        Change::Modified
    };
    Ok(store.commit(change, k, next))
}

fn without_meta_and_status(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
        map.remove("apiVersion");
        map.remove("kind");
    }
    copy
}

fn current_of(store: &Store, target: &Target, name: &str) -> Result<Value, Status> {
    store
        .objects
        .get(&key(&target.kind, target.namespace.as_deref(), name))
        .cloned()
        .ok_or_else(|| not_found(&target.kind, name))
}

fn check_precondition(
    target: &Target,
    name: &str,
    current: &Value,
    wanted: &Value,
) -> Result<(), Status> {
    match wanted["metadata"]["resourceVersion"].as_str() {
        Some(rv)
            if !rv.is_empty() && Some(rv) != current["metadata"]["resourceVersion"].as_str() =>
        {
            Err(conflict(&target.kind, name))
        }
        _ => Ok(()),
    }
}

/// `PUT` of an object or its status.
pub(crate) fn update(
    inner: &Inner,
    target: &Target,
    body: Value,
    options: &WriteOptions,
) -> Result<Value, Status> {
    let name = object_name(target)?.to_owned();
    let kind = &target.kind;
    if let Some(in_body) = body["metadata"]["name"].as_str() {
        if in_body != name {
            return Err(Status::bad_request(format!(
                "the name of the object ({in_body}) does not match the name on the URL ({name})"
            )));
        }
    }
    let (before, after) = {
        let mut store = inner.store();
        let current = current_of(&store, target, &name)?;
        check_precondition(target, &name, &current, &body)?;
        let has_rv = body["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| !rv.is_empty());
        if !has_rv && kind.custom {
            return Err(Status::invalid(
                &kind.qualified(),
                &name,
                "metadata.resourceVersion: Invalid value: 0: must be specified for an update",
            ));
        }
        let after = write(
            &mut store,
            target,
            &name,
            &current,
            body,
            None,
            options.field_manager.as_deref(),
        )?;
        (current, after)
    };
    finish(inner, target, &before, after)
}

/// Wakes watches and keeps the registry in step with CRD objects after a write.
fn finish(inner: &Inner, target: &Target, before: &Value, after: Value) -> Result<Value, Status> {
    if after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"] {
        let gone = after["metadata"]["deletionTimestamp"].is_string()
            && after["metadata"]["finalizers"]
                .as_array()
                .is_none_or(Vec::is_empty);
        if gone {
            after_write(inner, &target.kind, None, Some(&after));
        } else {
            after_write(inner, &target.kind, Some(&after), None);
        }
        inner.notify();
    }
    Ok(after)
}

/// A PATCH body by media type.
#[derive(Debug, Clone)]
pub(crate) enum Patch {
    /// `application/merge-patch+json`.
    Merge(Value),
    /// `application/strategic-merge-patch+json` (treated as a merge patch).
    Strategic(Value),
    /// `application/json-patch+json`.
    Json(Value),
    /// `application/apply-patch+yaml`.
    Apply(Value),
}

/// `PATCH` of an object or its status; the code is 201 when an apply created it.
pub(crate) fn patch(
    inner: &Inner,
    target: &Target,
    body: Patch,
    options: &WriteOptions,
) -> Result<(u16, Value), Status> {
    let name = object_name(target)?.to_owned();
    let kind = &target.kind;
    let accepted = if kind.custom {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
    };
    if matches!(body, Patch::Strategic(_)) && kind.custom {
        return Err(Status::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {accepted}"
            ),
        ));
    }
    if let Patch::Apply(applied) = &body {
        return apply(inner, target, &name, applied, options);
    }
    let (before, after) = {
        let mut store = inner.store();
        let current = current_of(&store, target, &name)?;
        let mut patched = current.clone();
        match &body {
            Patch::Merge(p) | Patch::Strategic(p) => patch::merge_patch(&mut patched, p),
            Patch::Json(p) => patch::json_patch(&mut patched, p)
                .map_err(|e| Status::invalid(&kind.qualified(), &name, &e))?,
            Patch::Apply(_) => {}
        }
        check_precondition(target, &name, &current, &patched)?;
        let after = write(
            &mut store,
            target,
            &name,
            &current,
            patched,
            None,
            options.field_manager.as_deref(),
        )?;
        (current, after)
    };
    finish(inner, target, &before, after).map(|v| (200, v))
}

fn apply(
    inner: &Inner,
    target: &Target,
    name: &str,
    applied: &Value,
    options: &WriteOptions,
) -> Result<(u16, Value), Status> {
    let kind = &target.kind;
    let Some(manager) = options.field_manager.as_deref().filter(|m| !m.is_empty()) else {
        return Err(Status::new(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    };
    let time = now();
    let who = Applier {
        manager,
        force: options.force,
        api_version: &kind.api_version(),
        status: target.status,
        time: &time,
    };
    let conflicted = |conflicts: Vec<patch::Conflict>| {
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|c| {
                json!({"reason": "FieldManagerConflict",
                       "message": format!("conflict with \"{}\" using {}", c.manager, c.api_version),
                       "field": patch::path_text(&c.path)})
            })
            .collect();
        let mut d = details(kind, name);
        d["causes"] = json!(causes);
        Status::new(409, "Conflict", patch::conflict_message(&conflicts)).with_details(d)
    };
    let mut store = inner.store();
    let k = key(kind, target.namespace.as_deref(), name);
    let Some(current) = store.objects.get(&k).cloned() else {
        let base = json!({"metadata": applied["metadata"].clone()});
        let mut object = patch::apply(&base, applied, &who).map_err(conflicted)?;
        object["metadata"]["name"] = json!(name);
        let created = create_locked(&mut store, target, object)?;
        drop(store);
        after_write(inner, kind, Some(&created), None);
        inner.notify();
        return Ok((201, created));
    };
    check_precondition(target, name, &current, applied)?;
    let merged = patch::apply(&current, applied, &who).map_err(conflicted)?;
    let managed = merged["metadata"]["managedFields"].clone();
    let managed = if managed.is_null() {
        json!([])
    } else {
        managed
    };
    let after = write(
        &mut store,
        target,
        name,
        &current,
        merged,
        Some(managed),
        None,
    )?;
    drop(store);
    finish(inner, target, &current, after).map(|v| (200, v))
}

/// `DELETE` of an object: gone at once (200), or marked while finalizers remain
/// (202). A Namespace takes the objects in it along.
pub(crate) fn delete(
    inner: &Inner,
    target: &Target,
    options: Option<&Value>,
) -> Result<(u16, Value), Status> {
    let name = object_name(target)?.to_owned();
    let kind = &target.kind;
    let mut store = inner.store();
    let current = current_of(&store, target, &name)?;
    if let Some(preconditions) = options.map(|o| &o["preconditions"]) {
        for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            if let Some(wanted) = preconditions[field].as_str() {
                let actual = current["metadata"][field].as_str().unwrap_or_default();
                if wanted != actual {
                    return Err(Status::new(
                        409,
                        "Conflict",
                        format!(
                            "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {label} in precondition: {wanted}, {label} in object meta: {actual}",
                            kind.qualified()
                        ),
                    )
                    .with_details(details(kind, &name)));
                }
            }
        }
    }
    let k = key(kind, target.namespace.as_deref(), &name);
    let finalizers = current["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if finalizers {
        if current["metadata"]["deletionTimestamp"].is_string() {
            return Ok((202, typed(kind, current)));
        }
        let mut marked = current.clone();
        marked["metadata"]["deletionTimestamp"] = json!(now());
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        let marked = store.commit(Change::Modified, k, marked);
        drop(store);
        inner.notify();
        return Ok((202, marked));
    }
    if kind.kind == "Namespace" && kind.group.is_empty() {
        let inside: Vec<Key> = store
            .objects
            .keys()
            .filter(|(_, ns, _)| *ns == name)
            .cloned()
            .collect();
        for key in inside {
            if let Some(object) = store.objects.get(&key).cloned() {
                store.commit(Change::Deleted, key, object);
            }
        }
    }
    let gone = store.commit(Change::Deleted, k, current);
    drop(store);
    after_write(inner, kind, None, Some(&gone));
    inner.notify();
    Ok((200, gone))
}

/// Keeps the registry in step with CustomResourceDefinition objects.
fn after_write(inner: &Inner, kind: &Kind, written: Option<&Value>, deleted: Option<&Value>) {
    if kind.group != CRD_GROUP {
        return;
    }
    let mut registry = inner
        .registry
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(crd) = written {
        // Validated before it was stored.
        let _ = registry.register_crd(crd);
    }
    if let Some(crd) = deleted {
        registry.unregister_crd(crd);
    }
}

/// Another writer changes the object: an annotation bump at a new revision.
pub(crate) fn concurrent_write(inner: &Inner, target: &Target) {
    let Some(name) = target.name.as_deref() else {
        return;
    };
    let mut store = inner.store();
    let k = key(&target.kind, target.namespace.as_deref(), name);
    let Some(mut object) = store.objects.get(&k).cloned() else {
        return;
    };
    let n = object["metadata"]["annotations"]["fake-apiserver.culvert.dev/concurrent-writes"]
        .as_str()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    object["metadata"]["annotations"]["fake-apiserver.culvert.dev/concurrent-writes"] =
        json!((n + 1).to_string());
    store.commit(Change::Modified, k, object);
    drop(store);
    inner.notify();
}

#[cfg(test)]
mod tests;
