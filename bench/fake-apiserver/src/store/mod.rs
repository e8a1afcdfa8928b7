//! The fake's storage, modelled on etcd's MVCC as the API server uses it: one
//! revision counter shared by every kind, each write stamped with the next revision
//! as the object's `resourceVersion`, and an event log (what watches replay and what
//! old snapshots are rebuilt from) with a compaction floor below which history is
//! gone. Never decides API semantics; start at [`Store::commit`].

use std::collections::{BTreeMap, VecDeque};

use serde_json::{Value, json};

/// Storage key: `plural.group`, namespace (`""` when cluster-scoped), name. Sorted
/// as etcd sorts `/registry/<resource>/<namespace>/<name>`.
pub(crate) type Key = (String, String, String);

/// What a write did, as a watch reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

/// One write, as stored.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// Revision of the write.
    pub(crate) revision: u64,
    /// What happened.
    pub(crate) change: Change,
    /// Which object.
    pub(crate) key: Key,
    /// The object after the write (for deletes: the last state, with the new RV).
    pub(crate) object: Value,
    /// The object before the write (`None` for creates).
    pub(crate) previous: Option<Value>,
}

/// The objects and their history.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// Last revision handed out.
    pub(crate) revision: u64,
    /// Revisions below this are compacted away; a read or watch "at" an older
    /// revision is answered with 410 Expired.
    pub(crate) floor: u64,
    /// Current objects.
    pub(crate) objects: BTreeMap<Key, Value>,
    /// Every write above the floor, oldest first.
    pub(crate) log: VecDeque<Event>,
    uid: u64,
    /// A fixed time for `creationTimestamp`, set by tests that replay objects
    /// created in a known order; the wall clock when `None`.
    pub(crate) clock: Option<String>,
}

impl Store {
    /// A new unique id.
    pub(crate) fn next_uid(&mut self) -> String {
        self.uid += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uid)
    }

    /// Stores `object` under `key` (or removes it for [`Change::Deleted`]) at the next
    /// revision, which becomes its `resourceVersion`; returns the object as stored.
    pub(crate) fn commit(&mut self, change: Change, key: Key, mut object: Value) -> Value {
        self.revision += 1;
        object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
        let previous = if change == Change::Deleted {
            self.objects.remove(&key)
        } else {
            self.objects.insert(key.clone(), object.clone())
        };
        self.log.push_back(Event {
            revision: self.revision,
            change,
            key,
            object: object.clone(),
            previous,
        });
        object
    }

    /// Moves the floor up to `to` (at most the current revision) and forgets the
    /// history below it.
    pub(crate) fn compact(&mut self, to: u64) {
        self.floor = self.floor.max(to.min(self.revision));
        while self.log.front().is_some_and(|e| e.revision <= self.floor) {
            self.log.pop_front();
        }
    }

    /// The objects of `resource` as they were at `revision` (at or above the floor):
    /// the current objects with every later write undone.
    pub(crate) fn snapshot(&self, resource: &str, revision: u64) -> BTreeMap<Key, Value> {
        let mut objects: BTreeMap<Key, Value> = self
            .objects
            .iter()
            .filter(|(k, _)| k.0 == resource)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for event in self.log.iter().rev() {
            if event.revision <= revision {
                break;
            }
            if event.key.0 != resource {
                continue;
            }
            match &event.previous {
                Some(previous) => objects.insert(event.key.clone(), previous.clone()),
                None => objects.remove(&event.key),
            };
        }
        objects
    }
}

#[cfg(test)]
mod tests;
