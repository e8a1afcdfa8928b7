//! From an HTTPRoute change in the API server to every pod of its dedicated plane
//! serving it, through `culvert controller`: a fake API server holding `--planes`
//! Gateways (default 2), each with its own GatewayConfig, namespace, route and
//! `--pods` plane pods (default 2: in-process `culvert serve` data planes, each on
//! its own loopback address, running with the token and certificate the
//! controller made), and the controller (`culvert_controller::serve`) in the same
//! process. Each of `--changes` edits (default 100) gives one plane's route a new
//! hostname; the clock runs from the write to the moment every pod of that plane
//! serves a snapshot with the new hostname (polled every millisecond). Prints the
//! median, p99 and largest latency, and the requests the controller and its
//! source made to the API server per change (by method, resource and answer;
//! counted from a quiet second after the first sync, 200 ms settled after each
//! change, watches excluded). Full reconcile passes (every 30 s) fall into the
//! window too and show as writes of the plane objects.
//!
//! `cargo bench -p culvert --bench controller_push -- --planes 50`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmark harness"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks measure the real clock"
)]

#[path = "support/args.rs"]
mod args;

use args::arg;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use culvert_bench::{EchoBackend, EchoConfig};
use culvert_controller::render::{Image, PodPeer, PullPolicy};
use culvert_controller::run::Settings;
use culvert_controller::serve;
use culvert_fake_apiserver::{FakeApiServer, fixtures};
use culvert_kubernetes::SourceConfig;
use culvert_proxy::{ConfigApiTlsFiles, ServeConfig, Server};
use serde_json::{Value, json};
use tokio::sync::watch;

const CONTROLLER: &str = "culvert.dev/gateway-controller";
const GW: &str = "gateway.networking.k8s.io/v1";

fn namespace(plane: usize) -> String {
    format!("team-{plane}")
}

/// The loopback address of pod `pod` of plane `plane`.
fn pod_ip(plane: usize, pod: usize) -> Ipv4Addr {
    let index = plane * 8 + pod + 1;
    Ipv4Addr::new(
        127,
        61,
        u8::try_from(index / 250).unwrap(),
        u8::try_from(index % 250 + 1).unwrap(),
    )
}

fn objects(planes: usize, pods: usize, echo: SocketAddr) -> Vec<Value> {
    let mut objects = vec![
        json!({"apiVersion": GW, "kind": "GatewayClass", "metadata": {"name": "culvert"},
               "spec": {"controllerName": CONTROLLER}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "culvert-system"}}),
    ];
    for plane in 0..planes {
        let ns = namespace(plane);
        let addresses: Vec<String> = (0..pods)
            .map(|pod| pod_ip(plane, pod).to_string())
            .collect();
        objects.extend([
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
                   "metadata": {"name": "own", "namespace": ns}, "spec": {"replicas": pods}}),
            json!({"apiVersion": GW, "kind": "Gateway", "metadata": {"name": "edge", "namespace": ns},
                   "spec": {"gatewayClassName": "culvert",
                            "infrastructure": {"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}},
                            "listeners": [{"name": "http", "port": 20_000 + plane, "protocol": "HTTP"}]}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
                   "spec": {"ports": [{"port": 80}]}}),
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "web-1", "namespace": ns, "labels": {"kubernetes.io/service-name": "web"}},
                   "addressType": "IPv4", "ports": [{"port": echo.port()}],
                   "endpoints": [{"addresses": [echo.ip().to_string()], "conditions": {"ready": true}}]}),
            json!({"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": "web", "namespace": ns},
                   "spec": {"parentRefs": [{"name": "edge"}], "hostnames": [format!("h0.{ns}.example")],
                            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}),
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "culvert-edge-config-1", "namespace": ns,
                                "labels": {"kubernetes.io/service-name": "culvert-edge-config"}},
                   "addressType": "IPv4", "ports": [{"name": "control", "port": 8081}],
                   "endpoints": addresses.iter().map(|a| json!({"addresses": [a]})).collect::<Vec<_>>()}),
        ]);
    }
    objects
}

fn secret_value(server: &FakeApiServer, namespace: &str, name: &str, key: &str) -> Option<String> {
    let secret = server.get("v1", "Secret", Some(namespace), name)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(secret["data"][key].as_str()?)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// Starts the pods of `plane` with the credentials the controller made for it.
fn start_pods(server: &FakeApiServer, plane: usize, pods: usize, dir: &Path) -> Vec<Server> {
    let ns = namespace(plane);
    let token = secret_value(server, &ns, "culvert-edge-token", "token").unwrap();
    let certificate = dir.join(format!("{ns}.crt"));
    let key = dir.join(format!("{ns}.key"));
    std::fs::write(
        &certificate,
        secret_value(server, &ns, "culvert-edge-config-tls", "tls.crt").unwrap(),
    )
    .unwrap();
    std::fs::write(
        &key,
        secret_value(server, &ns, "culvert-edge-config-tls", "tls.key").unwrap(),
    )
    .unwrap();
    (0..pods)
        .map(|pod| {
            let control = SocketAddr::new(IpAddr::V4(pod_ip(plane, pod)), 8081);
            let config = ServeConfig::new(control)
                .with_workers(NonZeroUsize::MIN)
                .with_pinned_workers(false)
                .with_access_log(None)
                .with_token(token.clone())
                .with_control_tls(ConfigApiTlsFiles {
                    certificate: certificate.clone(),
                    private_key: key.clone(),
                });
            Server::start(config).unwrap()
        })
        .collect()
}

/// Whether every one of `pods` serves a config naming `host`.
fn serving(pods: &[Server], host: &str) -> bool {
    pods.iter().all(|pod| {
        pod.snapshot().load().as_ref().is_some_and(|snapshot| {
            snapshot
                .config
                .http_routes
                .iter()
                .any(|route| route.hostnames.iter().any(|h| h == host))
        })
    })
}

/// Requests to the API server other than watches, counted by method and resource
/// and answer (`PATCH gateways/status 200`).
fn requests(server: &FakeApiServer) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for request in server.requests() {
        if request.method == "GET" && request.query.contains("watch=true") {
            continue;
        }
        // .../namespaces/<ns>/<plural>[/<name>[/<subresource>]]
        let parts: Vec<&str> = request.path.split('/').collect();
        let resource = match parts.iter().position(|p| *p == "namespaces") {
            Some(i) if parts.len() > i + 2 => {
                let plural = parts[i + 2];
                match parts.get(i + 4) {
                    Some(sub) => format!("{plural}/{sub}"),
                    None => plural.to_owned(),
                }
            }
            _ => parts.last().copied().unwrap_or("").to_owned(),
        };
        *counts
            .entry(format!("{} {resource} {}", request.method, request.status))
            .or_insert(0) += 1;
    }
    counts
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    let planes = arg("--planes", 2);
    let pods = arg("--pods", 2);
    let changes = arg("--changes", 100);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let echo = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
        let server = FakeApiServer::new();
        fixtures::register_repository_crds(&server).unwrap();
        for object in objects(planes, pods, echo.addr()) {
            server.create(object).unwrap();
        }
        let serving_api = server.serve().await.unwrap();
        let dir = std::env::temp_dir().join(format!("culvert-controller-push-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        serving_api.write_kubeconfig(&kubeconfig).unwrap();
        let mut source = SourceConfig::new(CONTROLLER);
        source.kubeconfig = Some(kubeconfig);
        let settings = Settings {
            namespace: "culvert-system".to_owned(),
            image: Image {
                name: "culvert:bench".to_owned(),
                pull_policy: PullPolicy::IfNotPresent,
            },
            controller_pods: PodPeer {
                namespace: "culvert-system".to_owned(),
                labels: BTreeMap::from([("app.kubernetes.io/name".to_owned(), "culvert-controller".to_owned())]),
            },
            tunnel_edges: Vec::new(),
            resync: Duration::from_secs(30),
            cloudflare: Default::default(),
        };
        let started = Instant::now();
        let controller = serve::start(settings, source).await.unwrap();
        let (stop_tx, stop) = watch::channel(false);
        let running = tokio::spawn(controller.run(stop));

        // Wait for every plane's Secrets, then start its pods with them.
        let mut fleet: Vec<Vec<Server>> = Vec::new();
        for plane in 0..planes {
            let ns = namespace(plane);
            while secret_value(&server, &ns, "culvert-edge-config-tls", "tls.crt").is_none()
                || secret_value(&server, &ns, "culvert-edge-token", "token").is_none()
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            fleet.push(start_pods(&server, plane, pods, &dir));
        }
        for (plane, pods) in fleet.iter().enumerate() {
            let host = format!("h0.{}.example", namespace(plane));
            while !serving(pods, &host) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let first_sync = started.elapsed();
        // Let the first statuses and events land: measure from a quiet second.
        let quiet_since = Instant::now();
        loop {
            server.clear_requests();
            tokio::time::sleep(Duration::from_secs(1)).await;
            if requests(&server).is_empty() {
                break;
            }
            assert!(quiet_since.elapsed() < Duration::from_secs(60), "the API server never went quiet");
        }

        let mut latencies = Vec::with_capacity(changes);
        for change in 1..=changes {
            let plane = change % planes;
            let ns = namespace(plane);
            let host = format!("h{change}.{ns}.example");
            let mut route = server.get(GW, "HTTPRoute", Some(&ns), "web").unwrap();
            route["spec"]["hostnames"] = json!([host]);
            route["metadata"].as_object_mut().unwrap().remove("managedFields");
            let start = Instant::now();
            server.apply_object(route).unwrap();
            while !serving(&fleet[plane], &host) {
                assert!(start.elapsed() < Duration::from_secs(30), "change {change} never served");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            latencies.push(start.elapsed());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let counts = requests(&server);
        let writes: usize = counts.iter().filter(|(k, _)| !k.starts_with("GET")).map(|(_, n)| n).sum();
        let reads: usize = counts.iter().filter(|(k, _)| k.starts_with("GET")).map(|(_, n)| n).sum();
        latencies.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "planes {planes}, pods per plane {pods}, changes {changes}: median {:.1} ms, p99 {:.1} ms, max {:.1} ms; \
             first sync {:.0} ms; API requests per change: {:.2} writes, {:.2} reads",
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99)),
            ms(*latencies.last().unwrap()),
            ms(first_sync),
            writes as f64 / changes as f64,
            reads as f64 / changes as f64,
        );
        for (request, count) in &counts {
            println!("  {request}: {:.2} per change", *count as f64 / changes as f64);
        }
        stop_tx.send_replace(true);
        running.await.unwrap();
        for pods in fleet {
            for pod in pods {
                pod.shutdown();
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
