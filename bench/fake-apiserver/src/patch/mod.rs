//! Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and a
//! simplified server-side apply. Pure functions over `serde_json::Value`; the API
//! layer decides preconditions and which part of the object a patch may touch.
//!
//! Server-side apply here tracks ownership per *field path two levels deep* (for
//! example `.spec.rules` or `.data.key`) in `metadata.managedFields`, not the full
//! structured-merge-diff field sets: an applied field replaces the stored one whole,
//! a field another manager owns and whose value would change is a conflict unless
//! forced, and a field this manager applied before and no longer applies is removed
//! when nobody else owns it. Start at [`apply`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

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

/// RFC 6902 JSON patch (`add`, `remove`, `replace`, `move`, `copy`, `test`); `Err`
/// says which operation failed and why.
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), String> {
    let operations = patch
        .as_array()
        .ok_or("a JSON patch must be an array of operations")?;
    for operation in operations {
        let op = operation["op"].as_str().ok_or("operation without \"op\"")?;
        let path = operation["path"]
            .as_str()
            .ok_or("operation without \"path\"")?;
        match op {
            "add" => add(target, path, value_of(operation)?)?,
            "remove" => {
                remove(target, path)?;
            }
            "replace" => {
                remove(target, path)?;
                add(target, path, value_of(operation)?)?;
            }
            "move" => {
                let from = operation["from"].as_str().ok_or("move without \"from\"")?;
                let value = remove(target, from)?;
                add(target, path, value)?;
            }
            "copy" => {
                let from = operation["from"].as_str().ok_or("copy without \"from\"")?;
                let value = target
                    .pointer(from)
                    .cloned()
                    .ok_or_else(|| format!("copy from missing path {from}"))?;
                add(target, path, value)?;
            }
            "test" => {
                let expected = value_of(operation)?;
                if target.pointer(path) != Some(&expected) {
                    return Err(format!("testing value {path} failed: test failed"));
                }
            }
            other => return Err(format!("unexpected kind of patch operation: {other}")),
        }
    }
    Ok(())
}

fn value_of(operation: &Value) -> Result<Value, String> {
    operation
        .get("value")
        .cloned()
        .ok_or_else(|| "operation without \"value\"".to_owned())
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split(path: &str) -> Result<(&str, String), String> {
    let (parent, last) = path
        .rsplit_once('/')
        .ok_or_else(|| format!("invalid JSON pointer {path:?}"))?;
    Ok((parent, unescape(last)))
}

fn add(target: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *target = value;
        return Ok(());
    }
    let (parent, last) = split(path)?;
    match target.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(last, value);
            Ok(())
        }
        Some(Value::Array(items)) => {
            let index = if last == "-" {
                items.len()
            } else {
                last.parse::<usize>()
                    .ok()
                    .filter(|i| *i <= items.len())
                    .ok_or_else(|| format!("add operation: index {last} out of bounds"))?
            };
            items.insert(index, value);
            Ok(())
        }
        _ => Err(format!(
            "add operation does not apply: doc is missing path: \"{path}\""
        )),
    }
}

fn remove(target: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split(path)?;
    let missing = || format!("remove operation does not apply: doc is missing path: \"{path}\"");
    match target.pointer_mut(parent) {
        Some(Value::Object(map)) => map.remove(&last).ok_or_else(missing),
        Some(Value::Array(items)) => {
            let index = last
                .parse::<usize>()
                .ok()
                .filter(|i| *i < items.len())
                .ok_or_else(missing)?;
            Ok(items.remove(index))
        }
        _ => Err(missing()),
    }
}

/// A field path two levels deep, as `("spec", Some("size"))` for `.spec.size`.
pub(crate) type FieldPath = (String, Option<String>);

/// The text of a path as conflict messages write it.
pub(crate) fn path_text(path: &FieldPath) -> String {
    match &path.1 {
        Some(child) => format!(".{}.{child}", path.0),
        None => format!(".{}", path.0),
    }
}

/// The paths `object` sets: children of top-level objects (`.spec.size`), or the
/// top-level field itself when it is not an object. `status_only` limits the walk to
/// `.status`; otherwise `.status`, `metadata`, `apiVersion` and `kind` are skipped.
pub(crate) fn paths(object: &Value, status_only: bool) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    let Some(map) = object.as_object() else {
        return out;
    };
    for (top, value) in map {
        let is_status = top == "status";
        if status_only != is_status || ["metadata", "apiVersion", "kind"].contains(&top.as_str()) {
            continue;
        }
        match value.as_object() {
            Some(children) => {
                for child in children.keys() {
                    out.insert((top.clone(), Some(child.clone())));
                }
            }
            None => {
                out.insert((top.clone(), None));
            }
        }
    }
    out
}

fn lookup<'a>(object: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    let top = object.get(&path.0)?;
    match &path.1 {
        Some(child) => top.get(child),
        None => Some(top),
    }
}

fn set(object: &mut Value, path: &FieldPath, value: Value) {
    match &path.1 {
        Some(child) => {
            if !object[&path.0].is_object() {
                object[&path.0] = json!({});
            }
            object[&path.0][child] = value;
        }
        None => object[&path.0] = value,
    }
}

fn unset(object: &mut Value, path: &FieldPath) {
    match &path.1 {
        Some(child) => {
            if let Some(map) = object.get_mut(&path.0).and_then(Value::as_object_mut) {
                map.remove(child);
            }
        }
        None => {
            if let Some(map) = object.as_object_mut() {
                map.remove(&path.0);
            }
        }
    }
}

/// One `managedFields` entry, decoded to the paths it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    subresource: Option<String>,
    time: String,
    fields: BTreeSet<FieldPath>,
}

fn decode_entries(object: &Value) -> Vec<Entry> {
    let mut entries = Vec::new();
    for raw in object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mut fields = BTreeSet::new();
        for (top, children) in raw["fieldsV1"].as_object().into_iter().flatten() {
            let Some(top) = top.strip_prefix("f:") else {
                continue;
            };
            let named: Vec<&String> = children
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, _)| k.strip_prefix("f:").map(|_| k))
                .collect();
            if named.is_empty() {
                fields.insert((top.to_owned(), None));
            }
            for child in named {
                fields.insert((top.to_owned(), Some(child[2..].to_owned())));
            }
        }
        entries.push(Entry {
            manager: raw["manager"].as_str().unwrap_or_default().to_owned(),
            operation: raw["operation"].as_str().unwrap_or("Update").to_owned(),
            api_version: raw["apiVersion"].as_str().unwrap_or_default().to_owned(),
            subresource: raw["subresource"].as_str().map(str::to_owned),
            time: raw["time"].as_str().unwrap_or_default().to_owned(),
            fields,
        });
    }
    entries
}

fn encode_entries(object: &mut Value, entries: &[Entry]) {
    let encoded: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut fields = Map::new();
            for (top, child) in &e.fields {
                let slot = fields
                    .entry(format!("f:{top}"))
                    .or_insert_with(|| json!({}));
                if let Some(child) = child {
                    slot[format!("f:{child}")] = json!({});
                }
            }
            let mut entry = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields,
            });
            if let Some(sub) = &e.subresource {
                entry["subresource"] = json!(sub);
            }
            entry
        })
        .collect();
    if encoded.is_empty() {
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
    } else {
        object["metadata"]["managedFields"] = Value::Array(encoded);
    }
}

/// Who applies, and how.
#[derive(Debug, Clone)]
pub(crate) struct Applier<'a> {
    /// `fieldManager`.
    pub(crate) manager: &'a str,
    /// `force=true`.
    pub(crate) force: bool,
    /// `apiVersion` written into `managedFields`.
    pub(crate) api_version: &'a str,
    /// Applying through `/status`.
    pub(crate) status: bool,
    /// Timestamp for `managedFields`.
    pub(crate) time: &'a str,
}

/// A field another manager owns, with that manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The owner.
    pub(crate) manager: String,
    /// The owner's `apiVersion`.
    pub(crate) api_version: String,
    /// The field.
    pub(crate) path: FieldPath,
}

/// Server-side apply of `applied` onto `current` (an empty object when creating).
/// Returns the merged object, or every conflict.
pub(crate) fn apply(
    current: &Value,
    applied: &Value,
    who: &Applier<'_>,
) -> Result<Value, Vec<Conflict>> {
    let subresource = who.status.then(|| "status".to_owned());
    let mut entries = decode_entries(current);
    let wanted = paths(applied, who.status);
    let mut conflicts = Vec::new();
    for path in &wanted {
        if lookup(current, path) == lookup(applied, path) {
            continue;
        }
        for entry in entries.iter().filter(|e| e.manager != who.manager) {
            if entry.fields.contains(path) {
                conflicts.push(Conflict {
                    manager: entry.manager.clone(),
                    api_version: entry.api_version.clone(),
                    path: path.clone(),
                });
            }
        }
    }
    if !conflicts.is_empty() && !who.force {
        return Err(conflicts);
    }
    let mut merged = current.clone();
    // Forced (or unchanged shared) fields: a changed field moves to the applier.
    for path in &wanted {
        if lookup(current, path) != lookup(applied, path) {
            for entry in entries.iter_mut().filter(|e| e.manager != who.manager) {
                entry.fields.remove(path);
            }
        }
        if let Some(value) = lookup(applied, path) {
            set(&mut merged, path, value.clone());
        }
    }
    let mine = entries
        .iter()
        .position(|e| e.manager == who.manager && e.operation == "Apply");
    let before: BTreeSet<FieldPath> = mine.map(|i| entries[i].fields.clone()).unwrap_or_default();
    for path in before.difference(&wanted) {
        let shared = entries
            .iter()
            .any(|e| e.manager != who.manager && e.fields.contains(path));
        if !shared {
            unset(&mut merged, path);
        }
    }
    let entry = Entry {
        manager: who.manager.to_owned(),
        operation: "Apply".to_owned(),
        api_version: who.api_version.to_owned(),
        subresource,
        time: who.time.to_owned(),
        fields: wanted,
    };
    match mine {
        Some(i) if entries[i].fields == entry.fields => {}
        Some(i) => entries[i] = entry,
        None => entries.push(entry),
    }
    for meta in ["labels", "annotations"] {
        if let Some(values) = applied["metadata"][meta].as_object() {
            for (k, v) in values {
                merged["metadata"][meta][k] = v.clone();
            }
        }
    }
    encode_entries(&mut merged, &entries);
    Ok(merged)
}

/// Records that `manager` changed the fields that differ between `before` and
/// `after` through an `Update` (PUT or non-apply PATCH): they become its own.
pub(crate) fn record_update(before: &Value, after: &mut Value, who: &Applier<'_>) {
    let changed: BTreeSet<FieldPath> = paths(before, who.status)
        .union(&paths(after, who.status))
        .filter(|p| lookup(before, p) != lookup(after, p))
        .cloned()
        .collect();
    if changed.is_empty() {
        return;
    }
    let mut entries = decode_entries(before);
    for entry in entries.iter_mut().filter(|e| e.manager != who.manager) {
        entry.fields.retain(|p| !changed.contains(p));
    }
    let present: BTreeSet<FieldPath> = changed
        .into_iter()
        .filter(|p| lookup(after, p).is_some())
        .collect();
    match entries
        .iter_mut()
        .find(|e| e.manager == who.manager && e.operation == "Update")
    {
        Some(entry) => {
            entry.fields.extend(present);
            entry.time = who.time.to_owned();
        }
        None => entries.push(Entry {
            manager: who.manager.to_owned(),
            operation: "Update".to_owned(),
            api_version: who.api_version.to_owned(),
            subresource: who.status.then(|| "status".to_owned()),
            time: who.time.to_owned(),
            fields: present,
        }),
    }
    encode_entries(after, &entries);
}

/// The message of a 409 for `conflicts`, worded as structured-merge-diff words it.
pub(crate) fn conflict_message(conflicts: &[Conflict]) -> String {
    let mut by_manager: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for c in conflicts {
        by_manager
            .entry((c.manager.as_str(), c.api_version.as_str()))
            .or_default()
            .push(path_text(&c.path));
    }
    let parts: Vec<String> = by_manager
        .into_iter()
        .map(|((manager, api_version), paths)| {
            if paths.len() == 1 {
                format!(
                    "conflict with \"{manager}\" using {api_version}: {}",
                    paths[0]
                )
            } else {
                let list: Vec<String> = paths.iter().map(|p| format!("- {p}")).collect();
                format!(
                    "conflicts with \"{manager}\" using {api_version}:\n{}",
                    list.join("\n")
                )
            }
        })
        .collect();
    let n = conflicts.len();
    format!(
        "Apply failed with {n} conflict{}: {}",
        if n == 1 { "" } else { "s" },
        parts.join("\n")
    )
}

#[cfg(test)]
mod tests;
