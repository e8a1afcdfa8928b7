//! Writes the statuses [`crate::status`] decides, with optimistic concurrency: each
//! write is a merge patch of `/status` that names the `resourceVersion` it was
//! computed from, so it never lands on a newer object. A conflict re-reads the
//! object (a plain GET: RBAC grants `get` on the kinds, `update`/`patch` on their
//! status), recomputes and retries with backoff; other failures leave the object for
//! the next sync, which the caller schedules.

use std::time::Duration;

use culvert_control_lite::model::ObjectKey;
use culvert_control_lite::translate::Translation;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::events::Events;
use crate::kinds::by_kind;
use crate::mirror::{Mirror, Observed};
use crate::status;

/// Attempts per object when the server keeps answering 409.
const CONFLICT_ATTEMPTS: u32 = 5;
/// First wait after a conflict; doubles per attempt.
const CONFLICT_BACKOFF: Duration = Duration::from_millis(50);

/// How a round of status writes went.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// Statuses written.
    pub written: usize,
    /// Objects whose write failed for a reason other than their deletion; the
    /// round should be retried.
    pub failed: usize,
    /// Each written object as the server answered the write: the caller records
    /// it, so a round before the watch reports the write does not write again.
    pub stored: Vec<(ObjectKey, Observed)>,
}

/// Writes every status that differs from the stored one.
pub async fn write_all(
    client: &Client,
    translation: &Translation,
    mirror: &Mirror,
    controller_name: &str,
    events: &mut Events,
) -> Outcome {
    let mut outcome = Outcome::default();
    let keys = status::candidates(translation, mirror.observed().iter(), controller_name);
    for key in keys {
        let Some(observed) = mirror.observed().get(&key) else {
            continue;
        };
        let now = now();
        let Some(wanted) = status::desired(translation, &key, observed, controller_name, &now)
        else {
            continue;
        };
        match write_one(
            client,
            translation,
            &key,
            observed.clone(),
            wanted,
            controller_name,
        )
        .await
        {
            Ok(Some((written, stored))) => {
                outcome.written += 1;
                outcome.stored.push((key.clone(), stored));
                for (reason, message) in
                    status::refusals(translation, &key, &written, controller_name)
                {
                    events
                        .warn(&key, observed.uid.as_deref(), &reason, &message)
                        .await;
                }
            }
            Ok(None) => {}
            Err(error) => {
                outcome.failed += 1;
                tracing::warn!(object = %key, %error, "status write failed");
            }
        }
    }
    outcome
}

/// Writes one status; on 409 re-reads the object and tries again. Returns the
/// status written and the object as stored after the write, or `None` when nothing
/// needed writing after all (the object is gone, or a re-read showed the status
/// already right).
async fn write_one(
    client: &Client,
    translation: &Translation,
    key: &ObjectKey,
    mut observed: Observed,
    mut wanted: Value,
    controller_name: &str,
) -> Result<Option<(Value, Observed)>, kube::Error> {
    let Some(kind) = by_kind(&key.kind) else {
        return Ok(None);
    };
    let resource = kind.api_resource();
    let api: Api<DynamicObject> = if key.namespace.is_empty() {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), &key.namespace, &resource)
    };
    let mut backoff = CONFLICT_BACKOFF;
    for attempt in 1..=CONFLICT_ATTEMPTS {
        let patch = json!({
            "metadata": {"resourceVersion": observed.resource_version},
            "status": wanted,
        });
        match api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(object) => {
                let stored = Observed {
                    resource_version: object.metadata.resource_version.clone().unwrap_or_default(),
                    generation: object.metadata.generation.unwrap_or(observed.generation),
                    status: object.data.get("status").cloned().unwrap_or(Value::Null),
                    uid: object.metadata.uid.clone().or(observed.uid),
                };
                return Ok(Some((wanted, stored)));
            }
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < CONFLICT_ATTEMPTS => {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
                let fresh = match api.get(&key.name).await {
                    Ok(object) => object,
                    Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
                    Err(error) => return Err(error),
                };
                observed = Observed {
                    resource_version: fresh.metadata.resource_version.clone().unwrap_or_default(),
                    generation: fresh.metadata.generation.unwrap_or(1),
                    status: fresh.data.get("status").cloned().unwrap_or(Value::Null),
                    uid: fresh.metadata.uid.clone(),
                };
                match status::desired(translation, key, &observed, controller_name, &now()) {
                    Some(again) => wanted = again,
                    None => return Ok(None),
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(None)
}

/// The current time as Kubernetes writes `metav1.Time` (RFC 3339, seconds).
pub fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    let seconds = now.as_second();
    k8s_openapi::jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| now.to_string())
}
