//! Watch streams: from a revision, every later write to the watched collection in
//! revision order, one JSON event per line; the current state as `ADDED` first when
//! no revision is given; selector transitions (`ADDED` when an object starts
//! matching, `DELETED` with the old object and the new revision when it stops);
//! bookmarks on request; the streaming-list end bookmark; and the in-stream 410 when
//! the revision is below the compaction floor. The stream ends at `timeoutSeconds`,
//! on an injected end or reset, or when the client goes. Start at [`start`].

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::api::{Target, partial, typed};
use crate::error::Status;
use crate::list::ListQuery;
use crate::rules::RequestFacts;
use crate::state::{Inner, Profile, Signal};
use crate::store::{Change, Event};

/// One chunk of a watch body, or the error that cuts the connection.
pub(crate) type Chunk = Result<Bytes, std::io::Error>;

/// Refuses what the server profile does not support (1.20: no streaming lists).
pub(crate) fn check(inner: &Inner, query: &ListQuery) -> Result<(), Status> {
    if inner.profile() == Profile::K8s1_20
        && (query.send_initial_events || query.version_match.is_some())
    {
        return Err(Status::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
        )
        .with_details(json!({"causes": [{"reason": "FieldValueForbidden",
            "message": "Forbidden: resourceVersionMatch is forbidden for watch",
            "field": "resourceVersionMatch"}]})));
    }
    if query.send_initial_events && !query.bookmarks {
        return Err(Status::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: allowWatchBookmarks: Required value: allowWatchBookmarks must be set to true when sendInitialEvents is set to true",
        ));
    }
    Ok(())
}

/// Starts the stream; the receiver yields the body's chunks.
pub(crate) fn start(
    inner: Arc<Inner>,
    target: Target,
    query: ListQuery,
    facts: RequestFacts,
) -> mpsc::Receiver<Chunk> {
    let (tx, rx) = mpsc::channel::<Chunk>(256);
    tokio::spawn(async move {
        let _ = run(&inner, &target, &query, &facts, &tx).await;
    });
    rx
}

/// The client went away.
struct Gone;

fn line(value: &Value) -> Chunk {
    Ok(Bytes::from(value.to_string() + "\n"))
}

async fn send(tx: &mpsc::Sender<Chunk>, value: &Value) -> Result<(), Gone> {
    tx.send(line(value)).await.map_err(|_| Gone)
}

fn expired(from: u64, floor: u64) -> Value {
    let status = Status::new(
        410,
        "Expired",
        format!("too old resource version: {from} ({floor})"),
    );
    json!({"type": "ERROR", "object": status.to_json()})
}

fn bookmark(target: &Target, revision: u64, initial_end: bool) -> Value {
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"type": "BOOKMARK", "object": {
        "apiVersion": target.kind.api_version(),
        "kind": target.kind.kind,
        "metadata": metadata,
    }})
}

fn shown(target: &Target, query: &ListQuery, object: Value) -> Value {
    let object = typed(&target.kind, object);
    if query.partial {
        partial(&object)
    } else {
        object
    }
}

async fn run(
    inner: &Inner,
    target: &Target,
    query: &ListQuery,
    facts: &RequestFacts,
    tx: &mpsc::Sender<Chunk>,
) -> Result<(), Gone> {
    let mut written = inner.written.subscribe();
    let mut signals = inner.signals.subscribe();
    let mut stalled = inner.stalled.subscribe();
    let interval = *inner.bookmark_interval.borrow();
    let timeout = tokio::time::sleep(Duration::from_secs(query.timeout_seconds.unwrap_or(1800)));
    tokio::pin!(timeout);
    let mut ticker =
        interval.map(|every| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
    let namespace = target.namespace.as_deref();

    // Decided under the lock, sent after it.
    let (first, mut from, ended) = {
        let store = inner.store();
        let from_rv = query.resource_version.filter(|rv| *rv > 0);
        match from_rv {
            Some(rv) if rv < store.floor && !query.send_initial_events => {
                (vec![expired(rv, store.floor)], rv, true)
            }
            Some(rv) if !query.send_initial_events => (Vec::new(), rv, false),
            _ => {
                let resource = target.kind.qualified();
                let mut current: Vec<Value> = store
                    .objects
                    .iter()
                    .filter(|(k, o)| k.0 == resource && query.selects(&target.kind, namespace, o))
                    .map(|(_, o)| json!({"type": "ADDED", "object": shown(target, query, o.clone())}))
                    .collect();
                if query.send_initial_events {
                    current.push(bookmark(target, store.revision, true));
                }
                (current, store.revision, false)
            }
        }
    };
    wait_unstalled(&mut stalled).await;
    for value in &first {
        send(tx, value).await?;
    }
    if ended {
        return Ok(());
    }
    let mut bookmark_due = false;
    loop {
        if !*stalled.borrow_and_update() {
            let (pending, floor_passed) = {
                let store = inner.store();
                if from < store.floor {
                    (vec![expired(from, store.floor)], true)
                } else {
                    let lines: Vec<Value> = store
                        .log
                        .iter()
                        .filter(|e| e.revision > from)
                        .filter_map(|e| event_line(target, query, e))
                        .collect();
                    from = store.revision;
                    (lines, false)
                }
            };
            for value in &pending {
                send(tx, value).await?;
            }
            if floor_passed {
                return Ok(());
            }
            if bookmark_due && query.bookmarks {
                send(tx, &bookmark(target, from, false)).await?;
            }
            bookmark_due = false;
        }
        tokio::select! {
            changed = written.changed() => if changed.is_err() { return Ok(()) },
            _ = stalled.changed() => {}
            signal = signals.recv() => match signal {
                Ok(Signal::End(m)) if m.matches(facts) => return Ok(()),
                Ok(Signal::Reset(m)) if m.matches(facts) => {
                    let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "watch reset by fault injection");
                    let _ = tx.send(Err(cut)).await;
                    return Ok(());
                }
                Ok(Signal::Bookmark) => bookmark_due = true,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            _ = async {
                match ticker.as_mut() {
                    Some(t) => { t.tick().await; }
                    None => std::future::pending::<()>().await,
                }
            } => bookmark_due = true,
            () = &mut timeout => return Ok(()),
            () = tx.closed() => return Ok(()),
        }
    }
}

async fn wait_unstalled(stalled: &mut tokio::sync::watch::Receiver<bool>) {
    while *stalled.borrow_and_update() {
        if stalled.changed().await.is_err() {
            return;
        }
    }
}

/// The watch line for `event` as a watch with `query` on `target` sees it: an
/// object that starts matching is ADDED, one that stops matching is DELETED (the
/// old object, the new resourceVersion).
pub(crate) fn event_line(target: &Target, query: &ListQuery, event: &Event) -> Option<Value> {
    if event.key.0 != target.kind.qualified() {
        return None;
    }
    let namespace = target.namespace.as_deref();
    let now = query.selects(&target.kind, namespace, &event.object);
    let before = event
        .previous
        .as_ref()
        .is_some_and(|p| query.selects(&target.kind, namespace, p));
    let (kind, object) = match (event.change, before, now) {
        (Change::Deleted, true, _) | (Change::Deleted, _, true) => {
            ("DELETED", event.object.clone())
        }
        (Change::Deleted, false, false) | (_, false, false) => return None,
        (_, false, true) => ("ADDED", event.object.clone()),
        (_, true, true) => ("MODIFIED", event.object.clone()),
        (_, true, false) => {
            let mut old = event.previous.clone().unwrap_or(Value::Null);
            old["metadata"]["resourceVersion"] =
                event.object["metadata"]["resourceVersion"].clone();
            ("DELETED", old)
        }
    };
    Some(json!({"type": kind, "object": shown(target, query, object)}))
}
