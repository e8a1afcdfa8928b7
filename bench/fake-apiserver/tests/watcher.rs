//! kube-runtime's real `watcher` and `reflector` against the fake over HTTPS:
//! readiness after the initial list, following writes, pagination at one revision,
//! the in-stream 410 and its single relist, ended and reset streams, an outage on
//! the same port, selectors, bookmarks and streaming lists.
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]
#![allow(clippy::unwrap_used, reason = "tests fail on any error")]

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use culvert_fake_apiserver::{FakeApiServer, Matcher, Profile};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use support::{config_map, eventually, fake, lists, serve, watches};

/// Runs a reflector over ConfigMaps in `demo` and waits until it is ready.
async fn reflect(client: &kube::Client, config: watcher::Config) -> Store<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "demo");
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
    tokio::spawn(stream.for_each(|_| std::future::ready(())));
    tokio::time::timeout(Duration::from_secs(15), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    reader
}

fn names(store: &Store<ConfigMap>) -> BTreeSet<String> {
    store
        .state()
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect()
}

fn server_names(server: &FakeApiServer) -> BTreeSet<String> {
    server
        .list("v1", "ConfigMap")
        .iter()
        .filter(|c| c["metadata"]["namespace"] == "demo")
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_is_ready_after_the_initial_list_and_follows_writes() {
    let server = fake();
    server.create(config_map("a", "demo", json!({}))).unwrap();
    server
        .create(config_map("elsewhere", "default", json!({})))
        .unwrap();
    let (_serving, client) = serve(&server).await;
    let store = reflect(&client, watcher::Config::default()).await;
    assert_eq!(names(&store), BTreeSet::from(["a".to_owned()]));

    server.create(config_map("b", "demo", json!({}))).unwrap();
    let mut changed = server.get("v1", "ConfigMap", Some("demo"), "a").unwrap();
    changed["data"]["k"] = json!("edited");
    server.apply_object(changed).unwrap();
    server.delete("v1", "ConfigMap", Some("demo"), "b").unwrap();
    server.create(config_map("c", "demo", json!({}))).unwrap();
    eventually("the store follows", || async {
        names(&store) == BTreeSet::from(["a".to_owned(), "c".to_owned()])
            && store
                .state()
                .iter()
                .any(|c| c.data.as_ref().unwrap()["k"] == "edited")
    })
    .await;
    // Exactly the one initial list, then watches.
    assert_eq!(lists(&server, "/configmaps"), 1);
    let watch = &watches(&server, "/configmaps")[0];
    assert_eq!(
        watch.query_param("allowWatchBookmarks").as_deref(),
        Some("true")
    );
    assert!(watch.query_param("resourceVersion").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_pages_at_500_and_every_page_has_the_first_pages_revision() {
    let server = fake();
    for i in 0..1200 {
        server
            .create(config_map(&format!("cm-{i:04}"), "demo", json!({})))
            .unwrap();
    }
    let (_serving, client) = serve(&server).await;
    let store = reflect(&client, watcher::Config::default()).await;
    assert_eq!(store.state().len(), 1200);
    let pages: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/configmaps") && !r.is_watch())
        .collect();
    assert_eq!(pages.len(), 3, "1200 objects at 500 a page");
    assert!(
        pages
            .iter()
            .all(|p| p.query_param("limit").as_deref() == Some("500"))
    );
    assert!(pages[0].query_param("continue").is_none());
    assert!(pages[1].query_param("continue").is_some());
    assert!(pages[2].query_param("continue").is_some());

    // Later pages are the state at the first page's revision, whatever happens
    // in between.
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "demo");
    let first = api.list(&ListParams::default().limit(500)).await.unwrap();
    let revision = first.metadata.resource_version.clone().unwrap();
    assert_eq!(first.metadata.remaining_item_count, Some(700));
    server
        .delete("v1", "ConfigMap", Some("demo"), "cm-0600")
        .unwrap();
    server
        .create(config_map("cm-0600a", "demo", json!({})))
        .unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    let second = api
        .list(&ListParams::default().limit(500).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(
        second.metadata.resource_version.as_deref(),
        Some(revision.as_str())
    );
    let second_names: Vec<String> = second
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(second_names.len(), 500);
    assert!(
        second_names.contains(&"cm-0600".to_owned()),
        "deleted later, still in the snapshot"
    );
    assert!(
        !second_names.contains(&"cm-0600a".to_owned()),
        "created later, not in the snapshot"
    );
    assert_eq!(second.metadata.remaining_item_count, Some(200));
    // Built-in list items carry no apiVersion/kind on the wire (kube fills them
    // in for typed lists, so look at the raw answer).
    let raw = client
        .request_text(
            http::Request::get("/api/v1/namespaces/demo/configmaps?limit=1")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let raw: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(raw["kind"], "ConfigMapList");
    assert!(raw["items"][0].get("kind").is_none());
    assert!(raw["items"][0].get("apiVersion").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_gives_an_in_stream_410_and_exactly_one_relist() {
    let server = fake();
    for name in ["keep", "gone"] {
        server.create(config_map(name, "demo", json!({}))).unwrap();
    }
    let (_serving, client) = serve(&server).await;
    let store = reflect(&client, watcher::Config::default()).await;
    eventually("a watch is open", || async {
        !watches(&server, "/configmaps").is_empty()
    })
    .await;
    let before = lists(&server, "/configmaps");

    // The watch falls behind (stalled), the history it needs is compacted away.
    server.faults().stall_watches(true);
    server
        .delete("v1", "ConfigMap", Some("demo"), "gone")
        .unwrap();
    server.create(config_map("new", "demo", json!({}))).unwrap();
    server.faults().compact_all();
    server.faults().stall_watches(false);

    eventually("the store equals the server", || async {
        names(&store) == server_names(&server)
    })
    .await;
    assert_eq!(
        names(&store),
        BTreeSet::from(["keep".to_owned(), "new".to_owned()])
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        lists(&server, "/configmaps"),
        before + 1,
        "exactly one relist"
    );
    assert!(
        server.requests().iter().all(|r| r.status != 410),
        "the 410 travels inside a 200 watch stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_below_the_floor_gets_the_real_error_line_and_ends() {
    let server = fake();
    server.create(config_map("a", "demo", json!({}))).unwrap();
    let old = server.revision();
    server.create(config_map("b", "demo", json!({}))).unwrap();
    server.faults().compact_all();
    let floor = server.compacted_revision();
    let (_serving, client) = serve(&server).await;
    let body = client
        .request_text(
            http::Request::get(format!(
                "/api/v1/namespaces/demo/configmaps?watch=1&resourceVersion={old}"
            ))
            .body(Vec::new())
            .unwrap(),
        )
        .await
        .unwrap();
    let expected = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
        "metadata": {}, "status": "Failure",
        "message": format!("too old resource version: {old} ({floor})"),
        "reason": "Expired", "code": 410}});
    assert_eq!(body, format!("{expected}\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_and_reset_watches_resume_from_the_last_revision_without_a_relist() {
    let server = fake();
    server.create(config_map("a", "demo", json!({}))).unwrap();
    let (_serving, client) = serve(&server).await;
    let store = reflect(&client, watcher::Config::default()).await;
    eventually("a watch is open", || async {
        watches(&server, "/configmaps").len() == 1
    })
    .await;

    let seen = server.revision();
    server.faults().end_watches();
    eventually("the watch is reopened", || async {
        watches(&server, "/configmaps").len() == 2
    })
    .await;
    server.create(config_map("b", "demo", json!({}))).unwrap();
    eventually("b arrives", || async { names(&store).contains("b") }).await;
    let resumed = watches(&server, "/configmaps");
    assert_eq!(resumed.len(), 2);
    assert_eq!(
        resumed[1].query_param("resourceVersion"),
        Some(seen.to_string()),
        "the new watch starts where the ended one stopped"
    );

    server.faults().reset_watches();
    server.create(config_map("c", "demo", json!({}))).unwrap();
    eventually("c arrives", || async { names(&store).contains("c") }).await;
    assert!(watches(&server, "/configmaps").len() >= 3);
    assert_eq!(
        lists(&server, "/configmaps"),
        1,
        "no relist for ended or reset streams"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_recovers_when_the_server_comes_back_on_the_same_port() {
    let server = fake();
    server.create(config_map("a", "demo", json!({}))).unwrap();
    let (serving, client) = serve(&server).await;
    let addr = serving.addr;
    let store = reflect(&client, watcher::Config::default()).await;
    serving.stop();
    // Stopping is asynchronous: let the listener task cut the connections first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server
        .create(config_map("while-down", "demo", json!({})))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!names(&store).contains("while-down"));
    let _back = server.serve_at(addr).await.unwrap();
    eventually("the change made while down arrives", || async {
        names(&store).contains("while-down")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_selector_watch_sees_objects_start_and_stop_matching() {
    let server = fake();
    server.create(config_map("w", "demo", json!({}))).unwrap();
    let (_serving, client) = serve(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "demo");
    let from = server.revision().to_string();
    let mut events = api
        .watch(
            &WatchParams::default().labels("tier=gold").timeout(10),
            &from,
        )
        .await
        .unwrap()
        .boxed();
    let label = |value: serde_json::Value| {
        let mut object = server.get("v1", "ConfigMap", Some("demo"), "w").unwrap();
        object["metadata"]["labels"] = json!({"tier": value});
        server.apply_object(object).unwrap()
    };
    let gold = label(json!("gold"));
    let mut still = server.get("v1", "ConfigMap", Some("demo"), "w").unwrap();
    still["data"]["k"] = json!("x");
    server.apply_object(still).unwrap();
    let silver = label(json!("silver"));

    match events.try_next().await.unwrap().unwrap() {
        WatchEvent::Added(cm) => assert_eq!(
            cm.metadata.resource_version.as_deref(),
            gold["metadata"]["resourceVersion"].as_str()
        ),
        other => panic!("expected ADDED, got {other:?}"),
    }
    assert!(matches!(
        events.try_next().await.unwrap().unwrap(),
        WatchEvent::Modified(_)
    ));
    match events.try_next().await.unwrap().unwrap() {
        WatchEvent::Deleted(cm) => {
            assert_eq!(
                cm.metadata.labels.unwrap()["tier"],
                "gold",
                "the previous object"
            );
            assert_eq!(
                cm.metadata.resource_version.as_deref(),
                silver["metadata"]["resourceVersion"].as_str(),
                "with the new revision"
            );
        }
        other => panic!("expected DELETED, got {other:?}"),
    }

    // The watcher with the selector drops the object from its store.
    let (reader, writer) = reflector::store();
    label(json!("gold"));
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default().labels("tier=gold")),
    );
    tokio::spawn(
        stream
            .default_backoff()
            .for_each(|_| std::future::ready(())),
    );
    reader.wait_until_ready().await.unwrap();
    assert_eq!(reader.state().len(), 1);
    label(json!("bronze"));
    eventually("it stops matching", || async { reader.state().is_empty() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_come_on_demand_only_to_watches_that_asked() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "demo");
    let from = server.revision().to_string();
    let mut with = api
        .watch(&WatchParams::default().timeout(3), &from)
        .await
        .unwrap()
        .boxed();
    let mut without = api
        .watch(
            &WatchParams::default().disable_bookmarks().timeout(3),
            &from,
        )
        .await
        .unwrap()
        .boxed();
    eventually("both watches open", || async {
        watches(&server, "/configmaps").len() == 2
    })
    .await;
    server
        .create(config_map("x", "default", json!({})))
        .unwrap();
    server.faults().bookmark_now();
    match with.try_next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(b) => {
            assert_eq!(b.metadata.resource_version, server.revision().to_string());
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
    assert!(
        without.try_next().await.unwrap().is_none(),
        "no bookmark without allowWatchBookmarks: the stream just times out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_end_with_the_initial_events_bookmark() {
    let server = fake();
    for name in ["a", "b"] {
        server.create(config_map(name, "demo", json!({}))).unwrap();
    }
    let (_serving, client) = serve(&server).await;
    let store = reflect(&client, watcher::Config::default().streaming_lists()).await;
    assert_eq!(names(&store).len(), 2);
    assert_eq!(lists(&server, "/configmaps"), 0, "no list request at all");
    let first = &watches(&server, "/configmaps")[0];
    assert_eq!(
        first.query_param("sendInitialEvents").as_deref(),
        Some("true")
    );

    // A 1.20 server refuses it.
    server.set_profile(Profile::K8s1_20);
    let api: Api<ConfigMap> = Api::namespaced(client, "demo");
    let refused = api
        .watch(&WatchParams::default().initial_events(), "0")
        .await
        .map(|_| ());
    let status = support::api_error(refused);
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_end_at_timeout_seconds_and_by_matcher() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "demo");
    let started = std::time::Instant::now();
    let mut short = api
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    assert!(short.try_next().await.unwrap().is_none());
    assert!(started.elapsed() >= Duration::from_millis(900));

    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "demo");
    let mut cms = api
        .watch(&WatchParams::default().timeout(5), "0")
        .await
        .unwrap()
        .boxed();
    let mut other = secrets
        .watch(&WatchParams::default().timeout(5), "0")
        .await
        .unwrap()
        .boxed();
    eventually("both watches open", || async {
        server.requests().iter().filter(|r| r.is_watch()).count() == 3
    })
    .await;
    server
        .faults()
        .end_watches_matching(Matcher::any().resource("configmaps"));
    let ended = tokio::time::timeout(Duration::from_secs(2), cms.try_next()).await;
    assert!(
        matches!(ended, Ok(Ok(None))),
        "the configmaps watch ends at once"
    );
    let open = tokio::time::timeout(Duration::from_millis(500), other.try_next()).await;
    assert!(open.is_err(), "the secrets watch stays open");
}
