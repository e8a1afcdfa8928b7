//! Failure shapes and the rest of the surface through kube-rs: the plain-text 404
//! of an unserved group, `Status` bodies, unsupported field selectors, 401, the
//! 410s of expired reads, `/version`, discovery, and the Gateway API defaults.
#![allow(clippy::unwrap_used, reason = "tests fail on any error")]

mod support;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::discovery::Discovery;
use serde_json::json;
use support::{api_error, fake, serve, widget, widgets};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unserved_group_is_a_plain_text_404_and_a_missing_object_a_status() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let response = client
        .send(
            http::Request::get("/apis/gateway.networking.k8s.io/v1/httproutes")
                .body(kube::client::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&body[..], b"404 page not found\n");

    let status = api_error(widgets(&client, "demo").get("nope").await);
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, "NotFound");
    assert_eq!(status.message, "widgets.example.test \"nope\" not found");
    let details = status.details.unwrap();
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("nope", "example.test", "widgets")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_selectors_support_names_namespaces_and_secret_type_only() {
    let server = fake();
    server.create(widget("w1", "demo", json!({}))).unwrap();
    server.create(widget("w2", "demo", json!({}))).unwrap();
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    let status = api_error(api.list(&ListParams::default().fields("spec.size=1")).await);
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    assert_eq!(status.message, "field label not supported: spec.size");
    let named = api
        .list(&ListParams::default().fields("metadata.name=w2"))
        .await
        .unwrap();
    assert_eq!(named.items.len(), 1);
    assert_eq!(named.items[0].metadata.name.as_deref(), Some("w2"));
    assert_eq!(
        named.items[0].types.as_ref().unwrap().kind,
        "Widget",
        "CR list items are typed"
    );

    for (name, kind) in [("tls", "kubernetes.io/tls"), ("opaque", "Opaque")] {
        server
            .create(json!({"apiVersion": "v1", "kind": "Secret", "type": kind,
                             "metadata": {"name": name, "namespace": "demo"}}))
            .unwrap();
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "demo");
    let tls = secrets
        .list(&ListParams::default().fields("type=kubernetes.io/tls"))
        .await
        .unwrap();
    assert_eq!(tls.items.len(), 1);
    assert_eq!(
        api_error(
            widgets(&client, "demo")
                .list(&ListParams::default().fields("type=x"))
                .await
        )
        .code,
        400
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_401() {
    let server = fake();
    let serving = server.serve().await.unwrap();
    let config = serving.kubeconfig().replace(&server.token(), "wrong");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&config).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let status = api_error(widgets(&client, "demo").list(&ListParams::default()).await);
    assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_continue_tokens_and_exact_reads_below_the_floor_are_410() {
    let server = fake();
    for i in 0..3 {
        server
            .create(widget(&format!("w{i}"), "demo", json!({})))
            .unwrap();
    }
    let (_serving, client) = serve(&server).await;
    let api = widgets(&client, "demo");
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    let revision = first.metadata.resource_version.clone().unwrap();
    // Exact at an old revision works before compaction, with the old state.
    server.create(widget("later", "demo", json!({}))).unwrap();
    let exact = ListParams::default()
        .at(&revision)
        .matching(kube::api::VersionMatch::Exact);
    assert_eq!(api.list(&exact).await.unwrap().items.len(), 3);

    server.faults().compact_all();
    let token = first.metadata.continue_.unwrap();
    let status = api_error(
        api.list(&ListParams::default().limit(1).continue_token(&token))
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(
        status
            .message
            .starts_with("The provided continue parameter is too old")
    );
    let status = api_error(api.list(&exact).await);
    assert_eq!(
        (status.code, status.message.as_str()),
        (410, "The resourceVersion for the provided list is too old.")
    );
    // NotOlderThan and "any" still answer.
    let any = ListParams::default()
        .at("0")
        .matching(kube::api::VersionMatch::NotOlderThan);
    assert_eq!(api.list(&any).await.unwrap().items.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_and_discovery_describe_the_served_kinds() {
    let server = fake();
    let (_serving, client) = serve(&server).await;
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.git_version, "v1.35.0");
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (resource, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("example.test", "v1", "Widget"))
        .unwrap();
    assert_eq!(resource.plural, "widgets");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(discovery.has_group("coordination.k8s.io"));
    assert!(!discovery.has_group("gateway.networking.k8s.io"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_httproute_gets_the_gateway_api_schema_defaults() {
    let server = fake();
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/crds/gateway-api/v1.6.1"
    );
    server.register_crd_dir(std::path::Path::new(dir)).unwrap();
    let (_serving, client) = serve(&server).await;
    let routes: Api<DynamicObject> = Api::namespaced_with(
        client,
        "demo",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "HTTPRoute"),
            "httproutes",
        ),
    );
    let route = serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "demo"},
        "spec": {"parentRefs": [{"name": "gw"}],
                 "rules": [{"backendRefs": [{"name": "svc", "port": 80}]}]}}))
    .unwrap();
    let created = routes.create(&PostParams::default(), &route).await.unwrap();
    assert_eq!(
        created.data["spec"],
        json!({"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}],
               "rules": [{"backendRefs": [{"group": "", "kind": "Service", "name": "svc", "port": 80, "weight": 1}],
                          "matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}]})
    );
}
