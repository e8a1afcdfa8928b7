//! [`Mirror`]: the cluster's objects as the watches last reported them, held as a
//! control-lite [`Store`] (what translation reads) plus, for the kinds whose status
//! Culvert writes, the `resourceVersion` and `status` each object carries now (what
//! the status writer compares against and writes over).
//!
//! It follows kube-runtime's watcher events: `Init` starts a relist, `InitApply`
//! buffers, `InitDone` replaces the kind as a whole (so an object deleted while the
//! watch was away disappears), `Apply`/`Delete` change one object. Nothing here does
//! IO; the watch tasks feed it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash as _, Hasher as _};

use culvert_control_lite::model::{ObjectKey, Resource};
use culvert_control_lite::store::Store;
use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

use crate::kinds::{WATCHED, WatchedKind};

/// What the API server last said about an object whose status Culvert writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// `metadata.resourceVersion`: the precondition of a status write.
    pub resource_version: String,
    /// `metadata.generation`.
    pub generation: i64,
    /// `status` as stored (`null` when absent).
    pub status: Value,
    /// `metadata.uid`, for events about the object.
    pub uid: Option<String>,
}

/// The cluster as the watches see it.
#[derive(Debug, Default)]
pub struct Mirror {
    store: Store,
    observed: BTreeMap<ObjectKey, Observed>,
    /// Objects of each watch seen since its relist began, by watch id.
    relisting: BTreeMap<&'static str, Vec<Value>>,
    /// Watches whose first full list has arrived (or whose API is not installed).
    listed: BTreeSet<&'static str>,
    /// The objects each watch holds, by watch id: a kind watched twice (Secrets)
    /// loses an object only when no watch holds it any more.
    members: BTreeMap<&'static str, BTreeSet<ObjectKey>>,
    /// Objects that do not fit their kind's schema, and why; left out of the store.
    malformed: BTreeMap<ObjectKey, String>,
    /// A digest of each object without its `status` (but a Gateway's advertised
    /// addresses) and `resourceVersion`: an update that changes neither anything
    /// else (a status write, Culvert's own included) leaves the store as it is and
    /// costs no translation.
    contents: HashMap<ObjectKey, u64>,
}

impl Mirror {
    /// An empty mirror.
    pub fn new() -> Self {
        Self::default()
    }

    /// The objects translation reads.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Status-bearing objects as the server holds them.
    pub fn observed(&self) -> &BTreeMap<ObjectKey, Observed> {
        &self.observed
    }

    /// Records `key` as a status write left it (the server's answer), until its
    /// watch reports the write: a status written in between compares with what
    /// is stored, not with what was.
    pub fn note_written(&mut self, key: ObjectKey, stored: Observed) {
        if let Some(observed) = self.observed.get_mut(&key) {
            *observed = stored;
        }
    }

    /// Objects left out because they do not decode, with the reason.
    pub fn malformed(&self) -> &BTreeMap<ObjectKey, String> {
        &self.malformed
    }

    /// Whether every watched kind has been listed once: before that a translation
    /// would see a partial cluster (routes without their Services, say).
    pub fn ready(&self) -> bool {
        self.listed.len() == WATCHED.len()
    }

    /// Watches not listed yet, for diagnostics.
    pub fn unlisted(&self) -> Vec<&'static str> {
        WATCHED
            .iter()
            .map(|w| w.id)
            .filter(|id| !self.listed.contains(id))
            .collect()
    }

    /// Applies one watcher event of `kind`; returns whether the store changed.
    pub fn handle(&mut self, kind: &'static WatchedKind, event: Event<DynamicObject>) -> bool {
        match event {
            Event::Init => {
                self.relisting.insert(kind.id, Vec::new());
                false
            }
            Event::InitApply(object) => {
                let value = raw(kind, object);
                self.relisting.entry(kind.id).or_default().push(value);
                false
            }
            Event::InitDone => {
                let objects = self.relisting.remove(kind.id).unwrap_or_default();
                self.replace_kind(kind, objects);
                true
            }
            Event::Apply(object) => self.upsert(kind, raw(kind, object)),
            Event::Delete(object) => {
                let key = key_of(kind, &raw(kind, object));
                self.release(kind, &key)
            }
        }
    }

    /// `kind`'s watch no longer holds `key`: the object goes unless another watch
    /// holds it. Returns whether it went.
    fn release(&mut self, kind: &'static WatchedKind, key: &ObjectKey) -> bool {
        if let Some(members) = self.members.get_mut(kind.id) {
            members.remove(key);
        }
        if self.members.values().any(|members| members.contains(key)) {
            return false;
        }
        self.store.delete(key);
        self.observed.remove(key);
        self.malformed.remove(key);
        self.contents.remove(key);
        true
    }

    /// Records that `kind`'s API is not served (its CRD is not installed): the kind
    /// counts as listed and empty until a watch of it succeeds.
    pub fn absent(&mut self, kind: &'static WatchedKind) -> bool {
        if self.listed.contains(kind.id) {
            return false;
        }
        self.replace_kind(kind, Vec::new());
        true
    }

    /// A relist of `kind`'s watch: its objects become exactly `objects`.
    fn replace_kind(&mut self, kind: &'static WatchedKind, objects: Vec<Value>) {
        let listed: BTreeSet<ObjectKey> = objects.iter().map(|o| key_of(kind, o)).collect();
        let before = self.members.get(kind.id).cloned().unwrap_or_default();
        for key in before.difference(&listed) {
            self.release(kind, key);
        }
        for value in objects {
            self.upsert(kind, value);
        }
        self.listed.insert(kind.id);
    }

    /// Creates or replaces an object; returns whether what translation reads changed.
    fn upsert(&mut self, kind: &'static WatchedKind, mut value: Value) -> bool {
        let key = key_of(kind, &value);
        self.members.entry(kind.id).or_default().insert(key.clone());
        let status = value
            .as_object_mut()
            .and_then(|map| map.remove("status"))
            .unwrap_or(Value::Null);
        let resource_version = value["metadata"]
            .as_object_mut()
            .and_then(|meta| meta.remove("resourceVersion"));
        // A tunnel Gateway's advertised address is how it holds its tunnel, and a
        // Service's load balancer is the address of the plane it fronts, so
        // translation reads them; the rest of any status is only the writer's.
        let kept = match kind.kind {
            "Gateway" => status
                .get("addresses")
                .map(|addresses| json!({"addresses": addresses})),
            "Service" => status
                .get("loadBalancer")
                .map(|balancer| json!({"loadBalancer": balancer})),
            _ => None,
        };
        if let (Some(kept), Some(map)) = (kept, value.as_object_mut()) {
            map.insert("status".to_owned(), kept);
        }
        let digest = digest(&value);
        let unchanged = self.contents.insert(key.clone(), digest) == Some(digest);
        if kind.has_status {
            let metadata = &value["metadata"];
            self.observed.insert(
                key.clone(),
                Observed {
                    resource_version: resource_version
                        .as_ref()
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    generation: metadata["generation"].as_i64().unwrap_or(1),
                    status,
                    uid: metadata["uid"].as_str().map(str::to_owned),
                },
            );
        }
        if unchanged {
            return false;
        }
        match Resource::from_value(value) {
            Ok(resource) => {
                self.malformed.remove(&key);
                self.store.apply(resource);
            }
            Err(error) => {
                // Serving the previous version would hide the edit; serving none
                // of it is what the operator can see and fix.
                self.store.delete(&key);
                self.malformed.insert(key, error.to_string());
            }
        }
        true
    }
}

fn digest(value: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    hasher.finish()
}

/// The object as JSON with `apiVersion` and `kind` set: list items of built-in
/// kinds arrive without them.
fn raw(kind: &WatchedKind, object: DynamicObject) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".to_owned(), Value::String(kind.api_version()));
        map.insert("kind".to_owned(), Value::String(kind.kind.to_owned()));
    }
    value
}

fn key_of(kind: &WatchedKind, value: &Value) -> ObjectKey {
    let metadata = &value["metadata"];
    ObjectKey::new(
        kind.kind,
        metadata["namespace"].as_str().unwrap_or_default(),
        metadata["name"].as_str().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests;
