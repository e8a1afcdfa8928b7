//! The Gateway API conformance vectors through the Kubernetes path: each state's
//! objects go into the fake API server, a Kubernetes source translates them and
//! writes status, and the checks judge the status read back from the server and
//! the config the source published (requests replayed statically against it).
//! The tally must equal the direct run's, with nothing failed.
#![allow(clippy::unwrap_used, reason = "tests fail on any error")]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use culvert_conformance::prepare::LoopbackAddresses;
use culvert_conformance::run::{CONTROLLER_NAME, Cluster, StaticJudge, run_dir_in, run_dir_with};
use culvert_control_lite::model::{
    GatewayClassStatus, GatewayStatus, ObjectKey, PolicyAncestorStatus, PolicyStatus, Resource,
    RouteParentStatus, RouteStatus,
};
use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{DataPlaneId, Options, Translation};
use culvert_fake_apiserver::{FakeApiServer, Serving, fixtures};
use culvert_kubernetes::addresses::SharedAssigner;
use culvert_kubernetes::kinds::{WATCHED, by_kind};
use culvert_kubernetes::{KubernetesSource, SourceConfig};
use serde_json::Value;

/// How long the source must be idle for a state to count as settled.
const QUIET: Duration = Duration::from_millis(250);
/// Longest a state may take to settle.
const SETTLE_LIMIT: Duration = Duration::from_secs(20);

struct KubernetesCluster {
    server: FakeApiServer,
    _serving: Serving,
    kubeconfig: PathBuf,
    /// Objects this run created, by apiVersion, kind, namespace and name.
    present: BTreeSet<(String, String, Option<String>, String)>,
    /// Keeps the fake server's runtime alive.
    _runtime: tokio::runtime::Runtime,
}

fn identity(object: &Value) -> (String, String, Option<String>, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        text(&object["apiVersion"]),
        text(&object["kind"]),
        object["metadata"]["namespace"].as_str().map(str::to_owned),
        text(&object["metadata"]["name"]),
    )
}

impl KubernetesCluster {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = FakeApiServer::new();
        fixtures::register_repository_crds(&server).unwrap();
        let serving = runtime.block_on(server.serve()).unwrap();
        let kubeconfig = std::env::temp_dir().join(format!(
            "culvert-conformance-kubeconfig-{}",
            std::process::id()
        ));
        serving.write_kubeconfig(&kubeconfig).unwrap();
        Self {
            server,
            _serving: serving,
            kubeconfig,
            present: BTreeSet::new(),
            _runtime: runtime,
        }
    }

    /// Makes the server hold exactly `objects` (namespaces they need included),
    /// each new one created at its own `creationTimestamp`.
    fn load(&mut self, objects: &[Value]) -> Result<(), String> {
        // Kinds Culvert does not watch (a test's own Deployments) cannot change
        // what it sees, and the fake serves only what it has schemas for.
        let objects: Vec<Value> = objects
            .iter()
            .filter(|o| o["kind"].as_str().and_then(by_kind).is_some())
            .cloned()
            .collect();
        let objects = &objects[..];
        let mut wanted: BTreeSet<_> = objects.iter().map(identity).collect();
        let namespaces: BTreeSet<String> = objects
            .iter()
            .filter_map(|o| o["metadata"]["namespace"].as_str().map(str::to_owned))
            .collect();
        for namespace in namespaces {
            let key = (
                "v1".to_owned(),
                "Namespace".to_owned(),
                None,
                namespace.clone(),
            );
            if !wanted.contains(&key) {
                if !self.present.contains(&key) {
                    self.server.set_clock(Some("2025-01-01T00:00:00Z"));
                    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": namespace}});
                    self.server.apply_object(ns).map_err(|e| e.to_string())?;
                }
                wanted.insert(key);
            }
        }
        let gone: Vec<_> = self.present.difference(&wanted).cloned().collect();
        for (api_version, kind, namespace, name) in gone {
            if kind != "Namespace" {
                let _ = self
                    .server
                    .delete(&api_version, &kind, namespace.as_deref(), &name);
            }
        }
        // Namespaces first: everything else needs its namespace to exist.
        let ordered = objects
            .iter()
            .filter(|o| o["kind"] == "Namespace")
            .chain(objects.iter().filter(|o| o["kind"] != "Namespace"));
        for object in ordered {
            let created = object["metadata"]["creationTimestamp"].as_str();
            self.server.set_clock(created);
            let mut object = object.clone();
            if let Some(meta) = object["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
            let id = identity(&object);
            self.server
                .apply_object(object)
                .map_err(|e| format!("loading {id:?}: {e}"))?;
        }
        self.server.set_clock(None);
        self.present = wanted;
        Ok(())
    }

    /// Every object the server holds, as control-lite reads them.
    fn store(&self) -> Store {
        let mut resources = Vec::new();
        for kind in WATCHED {
            for object in self.server.list(&kind.api_version(), kind.kind) {
                if let Ok(resource) = Resource::from_value(object) {
                    resources.push(resource);
                }
            }
        }
        Store::from_resources(resources)
    }

    /// The status the source wrote, as a translation, with the config it published.
    fn written(&self, store: &Store, published: DataPlaneConfigArc) -> Translation {
        let mut translation = Translation::default();
        let ours: BTreeSet<String> = store
            .gateway_classes
            .iter()
            .filter(|(_, c)| c.spec.controller_name == CONTROLLER_NAME)
            .map(|(name, _)| name.clone())
            .collect();
        let status_of = |api_version: &str, kind: &str, namespace: Option<&str>, name: &str| {
            self.server
                .get(api_version, kind, namespace, name)
                .map(|o| o["status"].clone())
                .unwrap_or(Value::Null)
        };
        const GW: &str = "gateway.networking.k8s.io/v1";
        for name in &ours {
            let status = status_of(GW, "GatewayClass", None, name);
            if let Ok(status) = serde_json::from_value::<GatewayClassStatus>(status) {
                translation.gateway_classes.insert(name.clone(), status);
            }
        }
        let plane = DataPlaneId::Shared("kubernetes".to_owned());
        for ((namespace, name), gateway) in &store.gateways {
            if !ours.contains(&gateway.spec.gateway_class_name) {
                continue;
            }
            let status = status_of(GW, "Gateway", Some(namespace), name);
            if let Ok(status) = serde_json::from_value::<GatewayStatus>(status) {
                let key = (namespace.clone(), name.clone());
                translation.gateways.insert(key.clone(), status);
                translation.gateway_planes.insert(key, plane.clone());
            }
        }
        let routes = [
            (
                "HTTPRoute",
                store.http_routes.keys().cloned().collect::<Vec<_>>(),
            ),
            ("GRPCRoute", store.grpc_routes.keys().cloned().collect()),
            ("TLSRoute", store.tls_routes.keys().cloned().collect()),
        ];
        for (kind, keys) in routes {
            for (namespace, name) in keys {
                let status = status_of(GW, kind, Some(&namespace), &name);
                let parents: Vec<RouteParentStatus> = status["parents"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["controllerName"] == CONTROLLER_NAME)
                    .filter_map(|p| serde_json::from_value(p.clone()).ok())
                    .collect();
                if !parents.is_empty() {
                    translation.routes.insert(
                        ObjectKey::new(kind, &namespace, &name),
                        RouteStatus { parents },
                    );
                }
            }
        }
        for (namespace, name) in store.backend_tls_policies.keys() {
            let status = status_of(GW, "BackendTLSPolicy", Some(namespace), name);
            let ancestors: Vec<PolicyAncestorStatus> = status["ancestors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| a["controllerName"] == CONTROLLER_NAME)
                .filter_map(|a| serde_json::from_value(a.clone()).ok())
                .collect();
            if !ancestors.is_empty() {
                translation.backend_tls_policies.insert(
                    (namespace.clone(), name.clone()),
                    PolicyStatus { ancestors },
                );
            }
        }
        translation
            .data_planes
            .insert(plane, culvert_router::DataPlaneConfig::clone(&published));
        translation
    }
}

type DataPlaneConfigArc = Arc<culvert_router::DataPlaneConfig>;

impl Cluster for KubernetesCluster {
    fn settle(
        &mut self,
        objects: Vec<Value>,
        _options: Options,
    ) -> Result<(Store, Translation), String> {
        self.load(&objects)?;
        let resources: Vec<Resource> = objects
            .iter()
            .filter_map(|o| Resource::from_value(o.clone()).ok())
            .collect();
        let mut config = SourceConfig::new(CONTROLLER_NAME);
        config.kubeconfig = Some(self.kubeconfig.clone());
        config.assigner = Some(SharedAssigner(Arc::new(LoopbackAddresses::new(&resources))));
        config.debounce = Duration::from_millis(10);
        let source = KubernetesSource::start(config).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut last = (u64::MAX, u64::MAX);
        let mut quiet_since = Instant::now();
        let published = loop {
            if start.elapsed() > SETTLE_LIMIT {
                return Err("the source did not settle".to_owned());
            }
            std::thread::sleep(Duration::from_millis(25));
            let stats = source.stats();
            let now = (
                stats.changes.load(Ordering::Relaxed),
                stats.translations.load(Ordering::Relaxed),
            );
            if now != last {
                last = now;
                quiet_since = Instant::now();
                continue;
            }
            let published = source.configs().borrow().clone();
            if let Some(published) = published {
                if quiet_since.elapsed() >= QUIET && now.1 > 0 {
                    break published;
                }
            }
        };
        drop(source);
        let store = self.store();
        let translation = self.written(&store, published);
        Ok((store, translation))
    }
}

fn tally_line(report: &str) -> &str {
    report.lines().last().unwrap_or_default()
}

#[test]
fn the_vectors_pass_through_the_kubernetes_path_as_they_do_directly() {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/conformance/vectors"
    ));
    let (direct, direct_tally) =
        run_dir_with(dir, &mut || Box::new(StaticJudge::default())).unwrap();
    let mut cluster = KubernetesCluster::new();
    let (through, tally) =
        run_dir_in(dir, &mut || Box::new(StaticJudge::default()), &mut cluster).unwrap();
    println!("direct: {}", tally_line(&direct));
    println!("through Kubernetes: {}", tally_line(&through));
    let failures: BTreeMap<usize, &str> = through
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("FAIL"))
        .take(40)
        .collect();
    assert_eq!(tally.failed, 0, "{failures:#?}\n{}", tally_line(&through));
    assert_eq!(
        (tally.passed, tally.skipped),
        (direct_tally.passed, direct_tally.skipped),
        "direct: {}; through Kubernetes: {}",
        tally_line(&direct),
        tally_line(&through)
    );
}
