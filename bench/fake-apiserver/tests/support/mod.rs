//! Shared helpers: a fake with a `Widget` CRD and two namespaces, served over
//! loopback with a kube-rs client, and polling.
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]
#![allow(
    clippy::unwrap_used,
    dead_code,
    unreachable_pub,
    reason = "test helpers fail on any error; not every test file uses every helper"
)]

use std::future::Future;
use std::time::{Duration, Instant};

use culvert_fake_apiserver::{FakeApiServer, Serving};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

/// A namespaced CRD with a status subresource and a defaulted `spec.size`.
pub const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.test
spec:
  group: example.test
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 1}
              color: {type: string}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

pub const WIDGETS: &str = "example.test/v1";

/// A fake with namespaces `default` and `demo` and the Widget CRD.
pub fn fake() -> FakeApiServer {
    let server = FakeApiServer::new();
    for ns in ["default", "demo"] {
        server
            .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .unwrap();
    }
    server.register_crds(WIDGET_CRD).unwrap();
    server
}

/// Serves `server` and returns a client for it.
pub async fn serve(server: &FakeApiServer) -> (Serving, kube::Client) {
    let serving = server.serve().await.unwrap();
    let client = serving.client().await.unwrap();
    (serving, client)
}

pub fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.test", "v1", "Widget"),
        "widgets",
    )
}

pub fn widgets(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &widget_resource())
}

pub fn widget(name: &str, ns: &str, spec: Value) -> Value {
    json!({"apiVersion": WIDGETS, "kind": "Widget",
           "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

pub fn config_map(name: &str, ns: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": ns, "labels": labels},
           "data": {"k": name}})
}

/// The `Status` of a kube API error.
pub fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Polls `check` every 20 ms until it holds, or panics after 15 s.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// List (not watch) requests for `plural` the server answered.
pub fn lists(server: &FakeApiServer, plural: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(plural) && !r.is_watch())
        .count()
}

/// Watch requests for `plural` the server answered.
pub fn watches(server: &FakeApiServer, plural: &str) -> Vec<culvert_fake_apiserver::LoggedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(plural) && r.is_watch())
        .collect()
}
