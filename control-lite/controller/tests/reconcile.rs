//! The reconcile loop of `culvert controller` against the fake API server on
//! loopback, fed by the real Kubernetes source: a Gateway asking for a dedicated
//! plane gets its Secrets and rendered objects, a hand edit is healed, a second
//! pass changes nothing that was right, and dropping the request removes the
//! objects (only those Culvert rendered and a Gateway still owns) and puts the
//! Gateway on its class's shared plane, which is rendered in the controller's
//! namespace, owned by the GatewayClass, with a copy of the class tunnel's token.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any error"
)]

mod support;

use support::{eventually, settings};

use std::sync::Arc;
use std::time::Duration;

use culvert_controller::cluster::{AUTHORITY_SECRET, Cluster, FIELD_MANAGER};
use culvert_controller::planes::{self, Wanted};
use culvert_controller::render::SECRETS_HASH_ANNOTATION;
use culvert_controller::run::{Desired, Memory, reconcile, run};
use culvert_fake_apiserver::{FakeApiServer, fixtures};
use culvert_kubernetes::{KubernetesSource, SourceConfig, TranslationHook};
use serde_json::{Value, json};
use tokio::sync::watch;

const CONTROLLER: &str = "culvert.dev/gateway-controller";
const GW: &str = "gateway.networking.k8s.io/v1";

/// Secret data of a connector token for the same tunnel as `edge-tunnel`'s, with
/// another secret.
const ROTATED_TOKEN: &str = "ZXlKaElqb2lNREV5TXpRMU5qYzRPV0ZpWTJSbFpqQXhNak0wTlRZM09EbGhZbU5rWldZaUxDSjBJam9pTm1abU5ESmhaVEl0TnpZMVpDMDBZV1JtTFRneE1USXRNekZqTlRWak1UVTFNV1ZtSWl3aWN5STZJbU50T1RCWldGSnNXa014ZWxwWFRubGFXRkYwWTIwNU1GbFlVbXhhUXpGNldsZE9lVnBZVVhSTlJFVTlJbjA9";

fn objects() -> Vec<Value> {
    let mut objects = fixtures::minimal_cluster(CONTROLLER, 8080, 9001);
    objects.push(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "culvert-system"}}),
    );
    objects.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}}));
    // The class's own tunnel (1d0c6a2e-...), in a namespace of the operator's.
    objects.push(json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "class-tunnel", "namespace": "ops",
                     "labels": {"culvert.dev/tunnel-token": "true"}},
        "data": {"token": "ZXlKaElqb2lNREV5TXpRMU5qYzRPV0ZpWTJSbFpqQXhNak0wTlRZM09EbGhZbU5rWldZaUxDSjBJam9pTVdRd1l6WmhNbVV0TTJJNFppMDBZelEzTFRsaE5URXROMlV5WmpBd1l6Qm1abVZsSWl3aWN5STZJbGt5ZUdoak0wMTBaRWhXZFdKdFZuTk1XRTVzV1ROS2JHUkRNSGROVkVsNlRrUlZNazU2WnpWWlYwcHFJbjA9"}}));
    objects.push(
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayClassConfig",
        "metadata": {"name": "class-policy"},
        "spec": {"sharedPlane": {"replicas": 3},
                 "tunnel": {"tokenRef": {"name": "class-tunnel", "namespace": "ops"}}}}),
    );
    for object in &mut objects {
        if object["kind"] == "GatewayClass" {
            object["spec"]["parametersRef"] = json!({"group": "culvert.dev",
                "kind": "GatewayClassConfig", "name": "class-policy"});
        }
    }
    objects.push(
        json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
        "metadata": {"name": "own", "namespace": "default"},
        "spec": {"replicas": 2, "tunnel": {"tokenRef": {"name": "edge-tunnel"}}}}),
    );
    // A connector token for tunnel 6ff42ae2-765d-4adf-8112-31c55c1551ef, labelled so
    // the source sees it.
    objects.push(json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "edge-tunnel", "namespace": "default",
                     "labels": {"culvert.dev/tunnel-token": "true"}},
        "data": {"token": "ZXlKaElqb2lNREV5TXpRMU5qYzRPV0ZpWTJSbFpqQXhNak0wTlRZM09EbGhZbU5rWldZaUxDSjBJam9pTm1abU5ESmhaVEl0TnpZMVpDMDBZV1JtTFRneE1USXRNekZqTlRWak1UVTFNV1ZtSWl3aWN5STZJbU15Vm1wamJWWXdURmhPYkZrelNteGtRekY2V2xkT2VWcFlVWFJqTWxacVkyMVdNRXhZVG14WmR6MDlJbjA9"}}));
    objects
}

fn dedicated(server: &FakeApiServer, on: bool) {
    let mut gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
    gateway["spec"]["infrastructure"] = if on {
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"},
               "labels": {"team": "blue"}, "annotations": {"cost-center": "42"}})
    } else {
        json!(null)
    };
    if !on {
        gateway["spec"]
            .as_object_mut()
            .unwrap()
            .remove("infrastructure");
    }
    server.apply_object(gateway).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dedicated_gateway_gets_its_plane_healed_and_removed() {
    let server = FakeApiServer::new();
    fixtures::register_repository_crds(&server).unwrap();
    for object in objects() {
        server.create(object).unwrap();
    }
    dedicated(&server, true);
    let serving = server.serve().await.unwrap();
    let kubeconfig =
        std::env::temp_dir().join(format!("culvert-controller-{}.yaml", std::process::id()));
    serving.write_kubeconfig(&kubeconfig).unwrap();

    let (desired_tx, desired) = watch::channel::<Desired>(None);
    let desired_tx = Arc::new(desired_tx);
    let hook_tx = Arc::clone(&desired_tx);
    let mut config = SourceConfig::new(CONTROLLER);
    config.kubeconfig = Some(kubeconfig.clone());
    config.addresses = vec!["192.0.2.1".to_owned()];
    config.on_translation = Some(TranslationHook(Arc::new(move |store, translation| {
        hook_tx.send_replace(Some(Arc::new(planes::wanted(
            store,
            translation,
            Some("culvert-system"),
        ))));
    })));
    let _source = KubernetesSource::start(config).unwrap();
    let client = culvert_kubernetes::client::connect(Some(&kubeconfig))
        .await
        .unwrap();
    let cluster = Cluster::new(client);
    let (_leader_tx, leader) = watch::channel(true);
    let (stop_tx, stop) = watch::channel(false);
    let (passes_tx, mut passes) = tokio::sync::mpsc::unbounded_channel();
    let loop_task = tokio::spawn(run(
        cluster.clone(),
        settings(None),
        desired,
        leader,
        stop,
        move |applied, pass| {
            let _ = passes_tx.send((applied.len(), pass.clone()));
        },
    ));

    let deployment = || server.get("apps/v1", "Deployment", Some("default"), "culvert-edge");
    let shared = || {
        server.get(
            "apps/v1",
            "Deployment",
            Some("culvert-system"),
            "culvert-class-culvert",
        )
    };
    eventually("the plane's Deployment is applied", || {
        deployment().is_some()
    })
    .await;
    let rendered = deployment().unwrap();
    assert_eq!(rendered["spec"]["replicas"], 2);
    assert!(shared().is_none(), "no Gateway is on the shared plane");
    assert_eq!(
        rendered["metadata"]["labels"]["team"], "blue",
        "infrastructure labels propagate"
    );
    assert_eq!(
        rendered["spec"]["template"]["metadata"]["annotations"]["cost-center"],
        "42"
    );
    let owner = &rendered["metadata"]["ownerReferences"][0];
    let gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
    assert_eq!(
        (owner["kind"].as_str(), owner["uid"].as_str()),
        (Some("Gateway"), gateway["metadata"]["uid"].as_str())
    );
    assert_eq!(owner["controller"], true);
    let managers: Vec<&str> = rendered["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, [FIELD_MANAGER]);
    for (api_version, kind, name) in [
        ("v1", "Service", "culvert-edge-config"),
        ("networking.k8s.io/v1", "NetworkPolicy", "culvert-edge"),
        ("policy/v1", "PodDisruptionBudget", "culvert-edge"),
    ] {
        assert!(
            server
                .get(api_version, kind, Some("default"), name)
                .is_some(),
            "{kind} {name}"
        );
    }
    assert!(
        server
            .get(
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                Some("default"),
                "culvert-edge"
            )
            .is_none()
    );
    // Credentials: the CA in the controller's namespace, the token and the
    // certificate beside the plane, the hash of what they hold on the pod template.
    assert!(
        server
            .get("v1", "Secret", Some("culvert-system"), AUTHORITY_SECRET)
            .is_some()
    );
    let token = server
        .get("v1", "Secret", Some("default"), "culvert-edge-token")
        .unwrap();
    assert!(
        token["data"]["token"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    let tls = server
        .get("v1", "Secret", Some("default"), "culvert-edge-config-tls")
        .unwrap();
    for key in ["tls.crt", "tls.key", "ca.crt"] {
        assert!(
            tls["data"][key].as_str().is_some_and(|v| !v.is_empty()),
            "{key}"
        );
    }
    let hash =
        rendered["spec"]["template"]["metadata"]["annotations"][SECRETS_HASH_ANNOTATION].clone();
    assert!(hash.as_str().is_some_and(|h| h.len() == 16), "{hash}");

    // A hand edit of a field Culvert sets is healed on a later pass.
    let mut edited = deployment().unwrap();
    edited["spec"]["replicas"] = json!(7);
    edited["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    server.apply_object(edited).unwrap();
    assert_eq!(deployment().unwrap()["spec"]["replicas"], 7);
    eventually("the edit is healed", || {
        deployment().is_some_and(|d| d["spec"]["replicas"] == 2)
    })
    .await;
    // Later passes keep the token and certificate (so the pods are not rolled).
    let again = deployment().unwrap();
    assert_eq!(
        again["spec"]["template"]["metadata"]["annotations"][SECRETS_HASH_ANNOTATION],
        hash
    );
    assert_eq!(
        server
            .get("v1", "Secret", Some("default"), "culvert-edge-token")
            .unwrap()["data"],
        token["data"]
    );

    // Rotating the tunnel token (a new secret for the same tunnel) changes the
    // hash on the pod template, which rolls the pods.
    let mut tunnel = server
        .get("v1", "Secret", Some("default"), "edge-tunnel")
        .unwrap();
    tunnel["data"]["token"] = json!(ROTATED_TOKEN);
    tunnel["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    server.apply_object(tunnel).unwrap();
    eventually("the rotation changes the pod template's hash", || {
        deployment().is_some_and(|d| {
            d["spec"]["template"]["metadata"]["annotations"][SECRETS_HASH_ANNOTATION] != hash
        })
    })
    .await;

    // An object Culvert did not render, or one whose owner reference was
    // stripped, is never removed.
    server
        .create(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "culvert-other", "namespace": "default",
                         "labels": {"app.kubernetes.io/managed-by": "culvert-controller"}},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}},
                                  "spec": {"containers": [{"name": "x", "image": "x"}]}}}}))
        .unwrap();

    // The token Secret deleted: the Gateway is refused for its own parameters,
    // and its running plane is held as it is, not removed.
    server
        .delete("v1", "Secret", Some("default"), "edge-tunnel")
        .unwrap();
    let held = loop {
        let (_, pass) = tokio::time::timeout(Duration::from_secs(15), passes.recv())
            .await
            .expect("no pass held the plane")
            .unwrap();
        if !pass.held.is_empty() {
            break pass;
        }
    };
    assert!(
        held.held
            .contains(&("default".to_owned(), "edge".to_owned()))
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(deployment().is_some(), "a held plane keeps running");

    // Back to the shared plane: the rendered objects go, the Secrets stay, and the
    // class's shared plane is rendered beside the controller, owned by the class.
    dedicated(&server, false);
    eventually("the Deployment is removed", || deployment().is_none()).await;
    eventually("the shared plane is applied", || shared().is_some()).await;
    let plane = shared().unwrap();
    assert_eq!(plane["spec"]["replicas"], 3, "sized by sharedPlane");
    let owner = &plane["metadata"]["ownerReferences"][0];
    let class = server.get(GW, "GatewayClass", None, "culvert").unwrap();
    assert_eq!(
        (owner["kind"].as_str(), owner["uid"].as_str()),
        (Some("GatewayClass"), class["metadata"]["uid"].as_str())
    );
    let labels = &plane["metadata"]["labels"];
    assert_eq!(
        labels["gateway.networking.k8s.io/gateway-class-name"],
        "culvert"
    );
    assert!(
        labels
            .get("gateway.networking.k8s.io/gateway-name")
            .is_none()
    );
    let copy = server
        .get(
            "v1",
            "Secret",
            Some("culvert-system"),
            "culvert-class-culvert-tunnel",
        )
        .expect("the class tunnel's token is copied beside the plane");
    let original = server
        .get("v1", "Secret", Some("ops"), "class-tunnel")
        .unwrap();
    assert_eq!(copy["data"]["token"], original["data"]["token"]);
    let args = plane["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--tunnel-token-file"), "{args}");
    for (api_version, kind, name) in [
        ("v1", "Service", "culvert-class-culvert-config"),
        (
            "networking.k8s.io/v1",
            "NetworkPolicy",
            "culvert-class-culvert",
        ),
        ("policy/v1", "PodDisruptionBudget", "culvert-class-culvert"),
    ] {
        assert!(
            server
                .get(api_version, kind, Some("culvert-system"), name)
                .is_some(),
            "{kind} {name}"
        );
    }
    for (api_version, kind, name) in [
        ("v1", "Service", "culvert-edge-config"),
        ("networking.k8s.io/v1", "NetworkPolicy", "culvert-edge"),
        ("policy/v1", "PodDisruptionBudget", "culvert-edge"),
    ] {
        assert!(
            server
                .get(api_version, kind, Some("default"), name)
                .is_none(),
            "{kind} {name}"
        );
    }
    assert!(
        server
            .get("apps/v1", "Deployment", Some("default"), "culvert-other")
            .is_some()
    );
    assert!(
        server
            .get("v1", "Secret", Some("default"), "culvert-edge-token")
            .is_some()
    );
    let mut failures = 0;
    while let Ok((_, pass)) = passes.try_recv() {
        failures += pass.failed.len();
    }
    assert_eq!(failures, 0, "no pass failed");

    // One pass by hand over the same desired state writes what it must and
    // fails nothing.
    let mut memory = Memory::default();
    let (_, pass) = reconcile(
        &cluster,
        &settings(None),
        &Wanted::default(),
        &mut memory,
        true,
    )
    .await;
    assert!(pass.failed.is_empty());
    stop_tx.send_replace(true);
    loop_task.await.unwrap();
}
