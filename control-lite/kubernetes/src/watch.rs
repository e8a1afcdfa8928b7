//! One task per watched kind, each running kube-runtime's watcher (paginated list,
//! then watch from the list's resourceVersion, relist on `410 Gone`, resume after a
//! stream ends, backoff on errors) and handing its events to the sync loop through
//! one bounded channel. When the loop falls behind, the tasks wait on the channel
//! and stop reading their streams: a flood of updates costs bounded memory.

use futures_util::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;

use crate::kinds::WatchedKind;

/// What the watch tasks report.
#[derive(Debug)]
pub enum Change {
    /// An event of a watched kind.
    Object(&'static WatchedKind, Event<DynamicObject>),
    /// The kind's API is not served (its CRD is not installed): empty until it is.
    Absent(&'static WatchedKind),
    /// An event of the pods whose host IPs are published as Gateway addresses.
    Pod(Event<DynamicObject>),
}

/// How many events may wait for the sync loop.
pub const CHANNEL_DEPTH: usize = 1024;

/// Watches `kind` cluster-wide until the receiver is gone.
pub async fn watch_kind(client: Client, kind: &'static WatchedKind, changes: mpsc::Sender<Change>) {
    let api: Api<DynamicObject> = Api::all_with(client, &kind.api_resource());
    let mut config = watcher::Config::default();
    if let Some(selector) = kind.field_selector {
        config = config.fields(selector);
    }
    if let Some(selector) = kind.label_selector {
        config = config.labels(selector);
    }
    let mut stream = std::pin::pin!(watcher::watcher(api, config).default_backoff());
    while let Some(item) = stream.next().await {
        let change = match item {
            Ok(event) => Change::Object(kind, event),
            Err(error) => {
                if not_served(&error) {
                    Change::Absent(kind)
                } else {
                    tracing::warn!(kind = kind.kind, %error, "watch failed; retrying");
                    continue;
                }
            }
        };
        if changes.send(change).await.is_err() {
            return;
        }
    }
}

/// Watches the pods matching `selector` in `namespace`.
pub async fn watch_pods(
    client: Client,
    namespace: String,
    selector: String,
    changes: mpsc::Sender<Change>,
) {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client,
        &namespace,
        &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()),
    );
    let config = watcher::Config::default().labels(&selector);
    let mut stream = std::pin::pin!(watcher::watcher(api, config).default_backoff());
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => {
                if changes.send(Change::Pod(event)).await.is_err() {
                    return;
                }
            }
            Err(error) => tracing::warn!(%namespace, %error, "pod watch failed; retrying"),
        }
    }
}

/// A 404 on the initial list: the group/version or resource does not exist.
fn not_served(error: &watcher::Error) -> bool {
    matches!(error, watcher::Error::InitialListFailed(kube::Error::Api(status)) if status.code == 404)
}
