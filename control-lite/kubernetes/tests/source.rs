//! The Kubernetes source against the fake API server over loopback: what it serves,
//! the status it writes, and the faults it survives.
#![allow(clippy::unwrap_used, reason = "tests fail on any error")]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use culvert_control_lite::store::NamespacedName;
use culvert_control_lite::translate::{ClaimChecker, Proof};
use culvert_fake_apiserver::{FakeApiServer, Fault, Serving, fixtures};
use culvert_kubernetes::{
    KubernetesSource, LeaseConfig, SharedClaims, SourceConfig, TranslationHook,
};
use culvert_router::DataPlaneConfig;
use culvert_tunnel_proto::TunnelToken;
use serde_json::{Value, json};

const CONTROLLER: &str = "culvert.dev/gateway-controller";
const GW: &str = "gateway.networking.k8s.io/v1";

/// A fake server with the Gateway API CRDs the repository ships.
fn fake() -> FakeApiServer {
    let server = FakeApiServer::new();
    fixtures::register_repository_crds(&server).unwrap();
    server
}

fn objects() -> Vec<Value> {
    let mut objects = fixtures::minimal_cluster(CONTROLLER, 8080, 9001);
    objects.push(route("web", "www.example.com"));
    objects
}

fn route(name: &str, host: &str) -> Value {
    let mut route = fixtures::http_route(name, host);
    route["spec"]["parentRefs"][0]["sectionName"] = json!("http");
    route
}

fn config_for(serving: &Serving, name: &str) -> SourceConfig {
    let path =
        std::env::temp_dir().join(format!("culvert-kube-{name}-{}.yaml", std::process::id()));
    serving.write_kubeconfig(&path).unwrap();
    let mut config = SourceConfig::new(CONTROLLER);
    config.kubeconfig = Some(path);
    config.addresses = vec!["192.0.2.1".to_owned()];
    config
}

/// Polls `check` every 50 ms until it holds or 15 s pass.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < Duration::from_secs(15), "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn published(source: &KubernetesSource) -> Option<Arc<DataPlaneConfig>> {
    source.configs().borrow().clone()
}

fn hostnames(source: &KubernetesSource) -> Vec<String> {
    published(source)
        .map(|c| {
            c.http_routes
                .iter()
                .flat_map(|r| r.hostnames.clone())
                .collect()
        })
        .unwrap_or_default()
}

fn route_status(server: &FakeApiServer, name: &str) -> Value {
    server
        .get(GW, "HTTPRoute", Some("default"), name)
        .map(|o| o["status"].clone())
        .unwrap_or(Value::Null)
}

fn status_writes(server: &FakeApiServer, name: &str) -> usize {
    let path = format!("/httproutes/{name}/status");
    server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with(&path) && r.status == 200)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_cluster_and_writes_status_next_to_other_controllers() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    // Another controller already reports on the route; its entry must survive.
    let mut theirs = server.get(GW, "HTTPRoute", Some("default"), "web").unwrap();
    theirs["status"] = json!({"parents": [{"parentRef": {"name": "other-gw"},
        "controllerName": "example.com/other", "conditions": []}]});
    server.write_status(theirs).unwrap();
    let serving = server.serve().await.unwrap();
    let source = KubernetesSource::start(config_for(&serving, "serve")).unwrap();

    eventually("the route is served", || async {
        hostnames(&source) == ["www.example.com"]
    })
    .await;
    let config = published(&source).unwrap();
    assert_eq!(config.listeners.len(), 1);
    assert_eq!(config.listeners[0].port, 8080);
    assert_eq!(
        config.listeners[0].address, None,
        "published addresses are not bound"
    );

    eventually("the route's status is written", || async {
        route_status(&server, "web")["parents"]
            .as_array()
            .is_some_and(|p| p.len() == 2)
    })
    .await;
    let status = route_status(&server, "web");
    assert_eq!(status["parents"][0]["controllerName"], "example.com/other");
    let ours = &status["parents"][1];
    assert_eq!(ours["controllerName"], CONTROLLER);
    // The parentRef is the spec's as stored (with the CRD's defaults applied).
    let stored = server.get(GW, "HTTPRoute", Some("default"), "web").unwrap();
    assert_eq!(ours["parentRef"], stored["spec"]["parentRefs"][0]);
    assert_eq!(ours["parentRef"]["sectionName"], "http");
    let accepted = &ours["conditions"][0];
    assert_eq!(
        (accepted["type"].as_str(), accepted["status"].as_str()),
        (Some("Accepted"), Some("True"))
    );
    assert_eq!(accepted["observedGeneration"], 1);
    eventually("the Gateway's status is written", || async {
        server.get(GW, "Gateway", Some("default"), "edge").unwrap()["status"]["addresses"]
            == json!([{"type": "IPAddress", "value": "192.0.2.1"}])
    })
    .await;

    // A spec edit is served and observed at the new generation.
    let writes = status_writes(&server, "web");
    server
        .apply_object(route("web", "api.example.com"))
        .unwrap();
    eventually("the edit is served", || async {
        hostnames(&source) == ["api.example.com"]
    })
    .await;
    eventually("the new generation is observed", || async {
        route_status(&server, "web")["parents"][1]["conditions"][0]["observedGeneration"] == 2
    })
    .await;
    assert_eq!(status_writes(&server, "web"), writes + 1);

    // An unrelated change re-translates but writes nothing for the route.
    let writes = status_writes(&server, "web");
    server
        .create(json!({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "unrelated", "namespace": "default"}}))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(status_writes(&server, "web"), writes, "no status flapping");

    // Deleted: no longer served.
    server
        .delete(GW, "HTTPRoute", Some("default"), "web")
        .unwrap();
    eventually("the deletion is served", || async {
        hostnames(&source).is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_published_before_every_kind_is_listed() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    // Lists of Services fail for a while: the plane must not serve a cluster
    // without its Services (the route would answer 500).
    server.inject(Fault {
        method: Some("GET".to_owned()),
        path_contains: Some("/services".to_owned()),
        watch: Some(false),
        code: 503,
        times: 3,
    });
    let serving = server.serve().await.unwrap();
    let source = KubernetesSource::start(config_for(&serving, "ready")).unwrap();
    eventually("the failing list is retried", || async {
        server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/services") && r.status == 503)
            .count()
            >= 1
    })
    .await;
    assert!(
        published(&source).is_none(),
        "published before Services were listed"
    );
    eventually("served once listed", || async {
        hostnames(&source) == ["www.example.com"]
    })
    .await;
    let config = published(&source).unwrap();
    let backends = &config.http_routes[0].rules[0].backends;
    let endpoints: Vec<String> = backends[0]
        .endpoints
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(endpoints, ["127.0.0.1:9001"], "{backends:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_compaction_ended_watches_and_an_outage() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    server.create(route("gone", "gone.example.com")).unwrap();
    let serving = server.serve().await.unwrap();
    let addr = serving.addr();
    let source = KubernetesSource::start(config_for(&serving, "faults")).unwrap();
    eventually("both routes served", || async {
        hostnames(&source).len() == 2
    })
    .await;

    // Watch streams end (server timeout): resumed from the last version, no relist.
    let lists = |server: &FakeApiServer| {
        server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/httproutes") && !r.query.contains("watch"))
            .count()
    };
    let before = lists(&server);
    server.end_watches();
    server.create(route("late", "late.example.com")).unwrap();
    eventually("a change after the end is seen", || async {
        hostnames(&source).len() == 3
    })
    .await;
    assert_eq!(
        lists(&server),
        before,
        "an ended watch resumes without a relist"
    );

    // The API server goes away; meanwhile a route is deleted, one is created and
    // the history is compacted past what the watches saw. It comes back on the same
    // port: the resumed watches get 410 in the stream and relist.
    serving.stop();
    server
        .delete(GW, "HTTPRoute", Some("default"), "gone")
        .unwrap();
    server.create(route("after", "after.example.com")).unwrap();
    server.compact_all();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        hostnames(&source).len(),
        3,
        "API trouble never takes the served config away"
    );
    let _back = server.serve_at(addr).await.unwrap();
    eventually("the changes made while away are seen", || async {
        let mut names = hostnames(&source);
        names.sort();
        names == ["after.example.com", "late.example.com", "www.example.com"]
    })
    .await;
    let relists = lists(&server) - before;
    assert!(
        (1..=3).contains(&relists),
        "{relists} relists after one 410: no hot loop"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/httproutes")
                && r.query.contains("watch")
                && r.status == 200),
        "watches resumed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_object_is_reported_and_the_rest_keeps_serving() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    let mut bad = route("bad", "bad.example.com");
    bad["spec"]["parentRefs"] = json!("not a list");
    server.create(bad).unwrap();
    // A well-formed route the Gateway refuses: a Warning event says why.
    let mut refused = route("refused", "refused.example.com");
    refused["spec"]["parentRefs"][0]["sectionName"] = json!("no-such-listener");
    server.create(refused).unwrap();
    let serving = server.serve().await.unwrap();
    let source = KubernetesSource::start(config_for(&serving, "malformed")).unwrap();
    eventually("the good route is served", || async {
        hostnames(&source) == ["www.example.com"]
    })
    .await;
    let event_for = |name: &str| {
        server
            .list("events.k8s.io/v1", "Event")
            .into_iter()
            .find(|e| e["regarding"]["name"] == name)
    };
    eventually("events name the bad and the refused route", || async {
        event_for("bad").is_some() && event_for("refused").is_some()
    })
    .await;
    let bad = event_for("bad").unwrap();
    assert_eq!(
        (bad["type"].as_str(), bad["reason"].as_str()),
        (Some("Warning"), Some("InvalidObject"))
    );
    assert_eq!(bad["regarding"]["kind"], "HTTPRoute");
    let refused = event_for("refused").unwrap();
    assert_eq!(refused["type"], "Warning");
    let status = route_status(&server, "refused");
    assert_eq!(
        refused["reason"], status["parents"][0]["conditions"][0]["reason"],
        "the event carries the refusal's reason"
    );
    assert_eq!(event_for("web"), None, "no event for an accepted route");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_conflict_is_reread_and_retried() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    server.inject(Fault {
        method: Some("PATCH".to_owned()),
        path_contains: Some("/httproutes/web/status".to_owned()),
        watch: None,
        code: 409,
        times: 2,
    });
    let serving = server.serve().await.unwrap();
    let _source = KubernetesSource::start(config_for(&serving, "conflict")).unwrap();
    eventually("the status lands after the conflicts", || async {
        route_status(&server, "web")["parents"][0]["controllerName"] == CONTROLLER
    })
    .await;
    let codes: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/httproutes/web/status"))
        .map(|r| r.status)
        .collect();
    assert_eq!(codes, [409, 409, 200]);
    let rereads = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/httproutes/web"))
        .count();
    assert_eq!(rereads, 2, "each conflict re-reads the object");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_writes_and_a_successor_takes_over() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    let serving = server.serve().await.unwrap();
    let start = |identity: &str| {
        let mut config = config_for(&serving, identity);
        let mut lease = LeaseConfig::new("default", "culvert-test", identity);
        lease.duration = Duration::from_secs(2);
        lease.retry = Duration::from_millis(200);
        config.lease = Some(lease);
        KubernetesSource::start(config).unwrap()
    };
    let first = start("first");
    eventually("the first leads", || async { *first.leader().borrow() }).await;
    let second = start("second");
    eventually("the second serves too", || async {
        hostnames(&second) == ["www.example.com"]
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        *first.leader().borrow() && !*second.leader().borrow(),
        "one leader at a time"
    );

    // The leader stops and hands the Lease on: the successor takes over and writes.
    drop(first);
    eventually("the second leads", || async { *second.leader().borrow() }).await;
    server
        .apply_object(route("web", "next.example.com"))
        .unwrap();
    eventually("the successor writes status", || async {
        route_status(&server, "web")["parents"][0]["conditions"][0]["observedGeneration"] == 2
    })
    .await;
    let lease = server
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            Some("default"),
            "culvert-test",
        )
        .unwrap();
    assert_eq!(lease["spec"]["holderIdentity"], "second");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_updates_costs_a_few_translations_and_ends_on_the_last() {
    use std::sync::atomic::Ordering;
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    let serving = server.serve().await.unwrap();
    let source = KubernetesSource::start(config_for(&serving, "flood")).unwrap();
    eventually("served", || async {
        hostnames(&source) == ["www.example.com"]
    })
    .await;
    let before = source.stats().translations.load(Ordering::Relaxed);
    // 2,000 edits as fast as the server takes them (more than the watch channel
    // holds): the watches wait on the loop instead of queueing without bound.
    const EDITS: usize = 2000;
    for i in 0..EDITS {
        server
            .apply_object(route("web", &format!("v{i}.example.com")))
            .unwrap();
    }
    let last = format!("v{}.example.com", EDITS - 1);
    eventually("the last edit is served", || async {
        hostnames(&source) == [last.clone()]
    })
    .await;
    let stats = source.stats();
    let translations = stats.translations.load(Ordering::Relaxed) - before;
    assert!(
        stats.changes.load(Ordering::Relaxed) >= EDITS as u64,
        "every event was taken"
    );
    assert!(
        translations < (EDITS / 20) as u64,
        "{translations} translations for {EDITS} edits: bursts are coalesced"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_does_not_wait_for_an_api_server_that_never_answers() {
    use culvert_fake_apiserver::{Matcher, Verb};
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    server
        .faults()
        .hang(Matcher::any().verb(Verb::Patch).subresource("status"));
    let serving = server.serve().await.unwrap();
    let source = KubernetesSource::start(config_for(&serving, "hang")).unwrap();
    eventually("served", || async {
        hostnames(&source) == ["www.example.com"]
    })
    .await;
    // Status writes are now stuck in the server; the source must still stop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopping = tokio::task::spawn_blocking(move || drop(source));
    tokio::time::timeout(Duration::from_secs(5), stopping)
        .await
        .expect("stopping waited for the hung status write")
        .unwrap();
}

/// A connector token for tunnel `6ff42ae2-765d-4adf-8112-31c55c1551ef` (base64
/// JSON), and that token as a Secret's `data` value.
const CONNECTOR_TOKEN: &str = "eyJhIjoiMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYiLCJ0IjoiNmZmNDJhZTItNzY1ZC00YWRmLTgxMTItMzFjNTVjMTU1MWVmIiwicyI6ImMyVmpjbVYwTFhObFkzSmxkQzF6WldOeVpYUXRjMlZqY21WMExYTmxZdz09In0=";
const CONNECTOR_TOKEN_DATA: &str = "ZXlKaElqb2lNREV5TXpRMU5qYzRPV0ZpWTJSbFpqQXhNak0wTlRZM09EbGhZbU5rWldZaUxDSjBJam9pTm1abU5ESmhaVEl0TnpZMVpDMDBZV1JtTFRneE1USXRNekZqTlRWak1UVTFNV1ZtSWl3aWN5STZJbU15Vm1wamJWWXdURmhPYkZrelNteGtRekY2V2xkT2VWcFlVWFJqTWxacVkyMVdNRXhZVG14WmR6MDlJbjA9";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_labelled_token_secret_gives_a_tunnel_gateway_its_tunnel() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    // The token Secret, first without the label Culvert watches.
    server
        .create(
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "edge-tunnel", "namespace": "default"},
            "data": {"token": CONNECTOR_TOKEN_DATA}}),
        )
        .unwrap();
    server
        .create(
            json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
            "metadata": {"name": "own", "namespace": "default"},
            "spec": {"tunnel": {"tokenRef": {"name": "edge-tunnel"}}}}),
        )
        .unwrap();
    let mut gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
    gateway["spec"]["infrastructure"] =
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    server.apply_object(gateway).unwrap();
    let serving = server.serve().await.unwrap();
    let _source = KubernetesSource::start(config_for(&serving, "tunnel-token")).unwrap();
    let accepted = || {
        let status = server.get(GW, "Gateway", Some("default"), "edge").unwrap()["status"].clone();
        let condition = status["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Accepted").cloned())
            .unwrap_or(Value::Null);
        (condition, status["addresses"].clone())
    };
    eventually("the unlabelled Secret is not seen", || async {
        let (condition, _) = accepted();
        condition["status"] == "False"
            && condition["message"]
                .as_str()
                .is_some_and(|m| m.contains("not found") && m.contains("culvert.dev/tunnel-token"))
    })
    .await;
    let mut secret = server
        .get("v1", "Secret", Some("default"), "edge-tunnel")
        .unwrap();
    secret["metadata"]["labels"] = json!({"culvert.dev/tunnel-token": "true"});
    server.apply_object(secret).unwrap();
    eventually("the labelled Secret admits the tunnel Gateway", || async {
        let (condition, addresses) = accepted();
        condition["status"] == "True"
            && addresses
                == json!([{"type": "Hostname",
                           "value": "6ff42ae2-765d-4adf-8112-31c55c1551ef.cfargotunnel.com"}])
    })
    .await;
    let (condition, _) = accepted();
    assert!(
        !condition.to_string().contains(CONNECTOR_TOKEN),
        "the token never appears in status"
    );
}

/// Confirms every claim once `confirmed` is set; proof is available throughout.
struct Flip {
    confirmed: std::sync::atomic::AtomicBool,
}

impl ClaimChecker for Flip {
    fn available(&self) -> bool {
        true
    }

    fn proof(&self, _gateway: &NamespacedName, _token: &TunnelToken) -> Proof {
        if self.confirmed.load(Ordering::SeqCst) {
            Proof::Confirmed
        } else {
            Proof::Unchecked
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_that_changes_is_translated_though_no_object_did() {
    let server = fake();
    for object in objects() {
        server.create(object).unwrap();
    }
    server
        .create(
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "edge-tunnel", "namespace": "default",
                         "labels": {"culvert.dev/tunnel-token": "true"}},
            "data": {"token": CONNECTOR_TOKEN_DATA}}),
        )
        .unwrap();
    server
        .create(
            json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
            "metadata": {"name": "own", "namespace": "default"},
            "spec": {"tunnel": {"tokenRef": {"name": "edge-tunnel"}}}}),
        )
        .unwrap();
    let mut gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
    gateway["spec"]["infrastructure"] =
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    server.apply_object(gateway).unwrap();
    // Another process leads, so this one writes no status: nothing it does comes
    // back through a watch, and only the signal can make it translate again.
    server
        .create(
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "culvert-test", "namespace": "default"},
            "spec": {"holderIdentity": "other", "leaseDurationSeconds": 3600,
                     "acquireTime": "2999-01-01T00:00:00.000000Z",
                     "renewTime": "2999-01-01T00:00:00.000000Z"}}),
        )
        .unwrap();
    let serving = server.serve().await.unwrap();
    let checker = Arc::new(Flip {
        confirmed: std::sync::atomic::AtomicBool::new(false),
    });
    let (retranslate, retranslate_rx) = tokio::sync::watch::channel(0_u64);
    let (accepted_tx, accepted) = tokio::sync::watch::channel(None::<(String, String)>);
    let mut config = config_for(&serving, "retranslate");
    config.lease = Some(LeaseConfig::new("default", "culvert-test", "this"));
    config.claims = Some(SharedClaims(checker.clone()));
    config.retranslate = Some(retranslate_rx);
    config.on_translation = Some(TranslationHook(Arc::new(move |_, translation| {
        let condition = translation
            .gateways
            .get(&("default".to_owned(), "edge".to_owned()))
            .and_then(|status| status.conditions.iter().find(|c| c.kind == "Accepted"))
            .map(|c| (c.status.clone(), c.message.clone()));
        accepted_tx.send_replace(condition);
    })));
    let source = KubernetesSource::start(config).unwrap();
    eventually("the unchecked claim waits", || async {
        accepted.borrow().as_ref().is_some_and(|(status, message)| {
            status == "False" && message.contains("not confirmed by Cloudflare yet")
        })
    })
    .await;
    assert!(!*source.leader().borrow());
    let translations = source.stats().translations.load(Ordering::SeqCst);
    checker.confirmed.store(true, Ordering::SeqCst);
    retranslate.send_modify(|n| *n += 1);
    eventually("the confirmed claim is accepted", || async {
        accepted
            .borrow()
            .as_ref()
            .is_some_and(|(status, _)| status == "True")
    })
    .await;
    assert!(source.stats().translations.load(Ordering::SeqCst) > translations);
}
