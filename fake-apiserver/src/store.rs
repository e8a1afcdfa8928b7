//! The fake's storage, modelled on etcd's MVCC as the API server uses it: one
//! revision counter shared by every kind, each write stamped with the next revision
//! as the object's `resourceVersion`, and an event log (what watches replay) with a
//! compaction floor below which history is gone.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Where a kind lives in the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kind {
    /// API group (`""` for core).
    pub(crate) group: String,
    /// Served version.
    pub(crate) version: String,
    /// Kind.
    pub(crate) kind: String,
    /// Plural resource name.
    pub(crate) plural: String,
    /// Namespaced or cluster-scoped.
    pub(crate) namespaced: bool,
    /// Whether `/status` is a subresource (main writes then ignore `status`).
    pub(crate) status: bool,
    /// Custom resource: list items carry `apiVersion` and `kind`, updates need a
    /// `resourceVersion`, strategic merge patches are refused.
    pub(crate) custom: bool,
}

impl Kind {
    /// `apiVersion` of the kind's objects.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` as error messages name it.
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Storage key: plural.group, namespace, name.
pub(crate) type Key = (String, String, String);

/// A watch event as stored.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// Revision of the write.
    pub(crate) revision: u64,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub(crate) kind: &'static str,
    /// Which object.
    pub(crate) key: Key,
    /// The object after the write (before it, for deletes, with the new RV).
    pub(crate) object: Value,
    /// The object before the write, if any (for selector transitions).
    pub(crate) previous: Option<Value>,
}

/// The objects and their history.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// Last revision handed out.
    pub(crate) revision: u64,
    /// Revisions at or below this are compacted away.
    pub(crate) floor: u64,
    /// Current objects.
    pub(crate) objects: BTreeMap<Key, Value>,
    /// Every write above the floor, oldest first.
    pub(crate) log: Vec<Event>,
    uid: u64,
}

impl Store {
    /// The next revision.
    pub(crate) fn next_revision(&mut self) -> u64 {
        self.revision += 1;
        self.revision
    }

    /// A new unique id.
    pub(crate) fn next_uid(&mut self) -> String {
        self.uid += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uid)
    }

    /// Records a write and returns its revision.
    pub(crate) fn record(
        &mut self,
        kind: &'static str,
        key: Key,
        object: Value,
        previous: Option<Value>,
    ) {
        let revision = self.revision;
        self.log.push(Event {
            revision,
            kind,
            key,
            object,
            previous,
        });
    }

    /// Forgets history up to the current revision.
    pub(crate) fn compact_all(&mut self) {
        self.floor = self.revision;
        self.log.clear();
    }
}

/// A `Status` failure body.
pub(crate) fn status(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(details) = details {
        body["details"] = details;
    }
    body
}
