//! Kubernetes Events for refusals, so `kubectl describe` says what is wrong: a
//! route not accepted, a conflict, a bad certificate, an object that does not
//! decode. Published through kube-runtime's recorder (which folds repeats into an
//! event series) behind two limits of Culvert's own: one event per object, reason
//! and message per [`REPEAT_AFTER`], and a token bucket of [`BURST`] events
//! refilled at [`PER_SECOND`] per second for the whole process, so a bad edit to a
//! thousand routes cannot flood the API server. Dropped events are counted.

#![allow(
    clippy::disallowed_methods,
    reason = "the cluster side owns its clock: event deduplication windows"
)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use culvert_control_lite::model::ObjectKey;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::kinds::by_kind;

/// The same event for the same object is not repeated within this.
pub const REPEAT_AFTER: Duration = Duration::from_secs(300);
/// Most events published at once.
pub const BURST: f64 = 25.0;
/// Events per second the bucket refills.
pub const PER_SECOND: f64 = 5.0;

/// A rate-limited event publisher.
pub struct Events {
    recorder: Option<Recorder>,
    recent: HashMap<(ObjectKey, String, String), Instant>,
    tokens: f64,
    refilled: Instant,
    dropped: u64,
    published: u64,
}

impl Events {
    /// Publishes as `controller` (instance `instance`); `None` publishes nothing
    /// (a plane that is not the leader).
    pub fn new(client: Option<Client>, controller: &str, instance: Option<String>) -> Self {
        let recorder = client.map(|client| {
            Recorder::new(
                client,
                Reporter {
                    controller: controller.to_owned(),
                    instance,
                },
            )
        });
        Self {
            recorder,
            recent: HashMap::new(),
            tokens: BURST,
            refilled: Instant::now(),
            dropped: 0,
            published: 0,
        }
    }

    /// Events published and dropped by the limits so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.published, self.dropped)
    }

    /// Publishes a Warning about `key`, unless a limit holds it back.
    pub async fn warn(&mut self, key: &ObjectKey, uid: Option<&str>, reason: &str, message: &str) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let now = Instant::now();
        let id = (key.clone(), reason.to_owned(), message.to_owned());
        if self
            .recent
            .get(&id)
            .is_some_and(|at| now.duration_since(*at) < REPEAT_AFTER)
        {
            return;
        }
        self.tokens =
            (self.tokens + now.duration_since(self.refilled).as_secs_f64() * PER_SECOND).min(BURST);
        self.refilled = now;
        if self.tokens < 1.0 {
            self.dropped += 1;
            return;
        }
        self.tokens -= 1.0;
        self.recent
            .retain(|_, at| now.duration_since(*at) < REPEAT_AFTER);
        self.recent.insert(id, now);
        let reference = ObjectReference {
            api_version: by_kind(&key.kind).map(|k| k.api_version()),
            kind: Some(key.kind.clone()),
            name: Some(key.name.clone()),
            namespace: (!key.namespace.is_empty()).then(|| key.namespace.clone()),
            uid: uid.map(str::to_owned),
            ..ObjectReference::default()
        };
        let event = Event {
            type_: EventType::Warning,
            reason: truncate(reason, 128),
            note: Some(truncate(message, 1024)),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        match recorder.publish(&event, &reference).await {
            Ok(()) => self.published += 1,
            Err(error) => tracing::warn!(object = %key, %error, "publishing an event failed"),
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}
