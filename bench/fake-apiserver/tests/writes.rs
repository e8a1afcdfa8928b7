//! Writes through kube-rs: optimistic concurrency, the `/status` subresource,
//! `generation`, no-op writes, every patch type, finalizers and preconditions,
//! namespace lifecycle, injected failures and the concurrent writer.
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]
#![allow(clippy::unwrap_used, reason = "tests fail on any error")]

mod support;

use culvert_fake_apiserver::{Matcher, Verb};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use support::{api_error, config_map, fake, serve, widget, widgets};

const CONFLICT: &str = "Operation cannot be fulfilled on widgets.example.test \"w\": the object has been modified; please apply your changes to the latest version and try again";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_resource_version_is_a_409_with_the_optimistic_lock_message() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(widget("w", "demo", json!({}))).unwrap(),
        )
        .await
        .unwrap();
    let mut stale = created.clone();
    stale.data["status"] = json!({"ready": true});
    api.replace_status("w", &PostParams::default(), &stale)
        .await
        .unwrap();
    stale.data["status"] = json!({"ready": false});
    let status = api_error(
        api.replace_status("w", &PostParams::default(), &stale)
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(status.message, CONFLICT);
    let details = status.details.unwrap();
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("w", "example.test", "widgets")
    );

    // A PUT without a resourceVersion is refused for custom resources.
    let mut unversioned = created.clone();
    unversioned.metadata.resource_version = None;
    let status = api_error(api.replace("w", &PostParams::default(), &unversioned).await);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "widgets.example.test \"w\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
    // A merge patch carrying a stale resourceVersion is a precondition.
    let status = api_error(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"resourceVersion": created.metadata.resource_version},
                                       "spec": {"size": 9}}),
            ),
        )
        .await,
    );
    assert_eq!(status.message, CONFLICT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_writes_touch_only_status_and_generation_follows_the_spec() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    server
        .create(widget("w", "demo", json!({"color": "red"})))
        .unwrap();
    let patched = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"color": "blue"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["status"], json!({"ready": true}));
    assert_eq!(
        patched.data["spec"]["color"], "red",
        "spec ignored through /status"
    );
    assert_eq!(patched.metadata.generation, Some(1));

    let labelled = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}, "status": {"ready": false}})),
        )
        .await
        .unwrap();
    assert_eq!(
        labelled.metadata.generation,
        Some(1),
        "labels do not bump generation"
    );
    assert_eq!(
        labelled.data["status"],
        json!({"ready": true}),
        "status ignored on the main resource"
    );

    let edited = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "green"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        edited.metadata.generation,
        Some(2),
        "a spec edit bumps generation"
    );
    assert_eq!(
        edited.data["spec"]["size"], 1,
        "the schema default was applied"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_op_write_keeps_the_revision_and_sends_no_event() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    server.create(widget("w", "demo", json!({}))).unwrap();
    let first = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    let from = first.metadata.resource_version.clone().unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(5), &from)
        .await
        .unwrap()
        .boxed();
    let again = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version.as_deref(),
        Some(from.as_str())
    );
    let replaced = api
        .replace_status("w", &PostParams::default(), &again)
        .await
        .unwrap();
    assert_eq!(
        replaced.metadata.resource_version.as_deref(),
        Some(from.as_str())
    );
    let real = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": false}})),
        )
        .await
        .unwrap();
    match events.try_next().await.unwrap().unwrap() {
        WatchEvent::Modified(w) => assert_eq!(
            w.metadata.resource_version, real.metadata.resource_version,
            "the first event is the real change"
        ),
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    let status_writes = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/w/status"))
        .count();
    assert_eq!(status_writes, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_types_behave_as_on_a_real_server() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    server
        .create(widget("w", "demo", json!({"color": "red"})))
        .unwrap();

    let status = api_error(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"color": "x"}})),
        )
        .await,
    );
    assert_eq!(status.code, 415);
    assert_eq!(
        status.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "demo");
    server.create(config_map("c", "demo", json!({}))).unwrap();
    let strategic = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"more": "yes"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        strategic.data.unwrap()["more"],
        "yes",
        "built-ins accept strategic merge"
    );

    let patch = json!([
        {"op": "test", "path": "/spec/color", "value": "red"},
        {"op": "replace", "path": "/spec/color", "value": "blue"},
        {"op": "add", "path": "/spec/extra", "value": 1}
    ]);
    let patched = client
        .request::<Value>(
            http::Request::patch("/apis/example.test/v1/namespaces/demo/widgets/w")
                .header("content-type", "application/json-patch+json")
                .body(serde_json::to_vec(&patch).unwrap())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(patched["spec"]["color"], "blue");
    assert_eq!(patched["spec"]["extra"], 1);
    let failed = client
        .request::<Value>(
            http::Request::patch("/apis/example.test/v1/namespaces/demo/widgets/w")
                .header("content-type", "application/json-patch+json")
                .body(br#"[{"op":"test","path":"/spec/color","value":"red"}]"#.to_vec())
                .unwrap(),
        )
        .await;
    assert_eq!(api_error(failed).code, 422);

    // Server-side apply.
    let applied = json!({"apiVersion": "example.test/v1", "kind": "Widget",
                         "metadata": {"name": "s", "namespace": "demo"}, "spec": {"size": 3}});
    let status = api_error(
        api.patch("s", &PatchParams::default(), &Patch::Apply(&applied))
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    api.patch("s", &PatchParams::apply("curl"), &Patch::Apply(&applied))
        .await
        .unwrap();
    let mut theirs = applied.clone();
    theirs["spec"]["size"] = json!(4);
    let status = api_error(
        api.patch("s", &PatchParams::apply("b"), &Patch::Apply(&theirs))
            .await,
    );
    assert_eq!(status.code, 409);
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"curl\" using example.test/v1: .spec.size"
    );
    let forced = api
        .patch(
            "s",
            &PatchParams::apply("b").force(),
            &Patch::Apply(&theirs),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["size"], 4);
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["b"], "forcing took the only field curl owned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_honour_finalizers_preconditions_and_namespaces() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    let mut held = widget("held", "demo", json!({}));
    held["metadata"]["finalizers"] = json!(["example.test/hold"]);
    server.create(held).unwrap();
    api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = api.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_error(api.get("held").await).code, 404);

    let created = server.create(widget("pre", "demo", json!({}))).unwrap();
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("nope".to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let status = api_error(api.delete("pre", &wrong).await);
    assert_eq!(status.code, 409);
    assert_eq!(
        status.message,
        format!(
            "Operation cannot be fulfilled on widgets.example.test \"pre\": Precondition failed: UID in precondition: nope, UID in object meta: {}",
            created["metadata"]["uid"].as_str().unwrap()
        )
    );
    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            uid: None,
            resource_version: Some("1".to_owned()),
        }),
        ..DeleteParams::default()
    };
    assert_eq!(api_error(api.delete("pre", &stale).await).code, 409);

    // Creating in a missing namespace, twice, and deleting a namespace.
    let missing = api_error(
        widgets(&client, "nowhere")
            .create(
                &PostParams::default(),
                &serde_json::from_value(widget("x", "nowhere", json!({}))).unwrap(),
            )
            .await,
    );
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "namespaces \"nowhere\" not found")
    );
    let again = api_error(
        api.create(
            &PostParams::default(),
            &serde_json::from_value(widget("pre", "demo", json!({}))).unwrap(),
        )
        .await,
    );
    assert_eq!((again.code, again.reason.as_str()), (409, "AlreadyExists"));
    server.delete("v1", "Namespace", None, "demo").unwrap();
    assert!(server.list("example.test/v1", "Widget").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_failures_and_a_concurrent_writer() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    server.create(widget("w", "demo", json!({}))).unwrap();
    let faults = server.faults();
    faults.fail(
        Matcher::any()
            .verb(Verb::Update)
            .subresource("status")
            .name("w"),
        409,
        "Conflict",
        1,
    );
    faults.fail(
        Matcher::any().verb(Verb::Get).resource("Widget"),
        429,
        "TooManyRequests",
        1,
    );
    faults.fail(
        Matcher::any().verb(Verb::List),
        503,
        "ServiceUnavailable",
        1,
    );

    // kube 5 retries 429 and 503 itself (Config::default_retry): the log shows
    // the failure and the retry.
    api.get("w").await.unwrap();
    let gets: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/widgets/w"))
        .map(|r| r.status)
        .collect();
    assert_eq!(gets, [429, 200]);
    let current = api.get("w").await.unwrap();
    let first = api_error(
        api.replace_status("w", &PostParams::default(), &current)
            .await,
    );
    assert_eq!((first.code, first.message.as_str()), (409, CONFLICT));
    api.replace_status("w", &PostParams::default(), &current)
        .await
        .unwrap();
    api.list(&Default::default()).await.unwrap();
    let lists: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/widgets"))
        .map(|r| r.status)
        .collect();
    assert_eq!(lists, [503, 200]);

    // Another writer changes the object between our read and our write.
    faults.concurrent_write(Matcher::any().resource("widgets").name("w"), 1);
    let read = api.get("w").await.unwrap();
    let mut edited = read.clone();
    edited.data["spec"]["color"] = json!("red");
    let lost = api_error(api.replace("w", &PostParams::default(), &edited).await);
    assert_eq!((lost.code, lost.message.as_str()), (409, CONFLICT));
    let reread = api.get("w").await.unwrap();
    assert_ne!(
        reread.metadata.resource_version,
        read.metadata.resource_version
    );
    let mut edited = reread.clone();
    edited.data["spec"]["color"] = json!("red");
    api.replace("w", &PostParams::default(), &edited)
        .await
        .unwrap();

    // Delays hold the answer back.
    faults.delay(
        Matcher::any().verb(Verb::Get).name("w"),
        std::time::Duration::from_millis(300),
    );
    let started = std::time::Instant::now();
    api.get("w").await.unwrap();
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
}
