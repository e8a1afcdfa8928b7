//! `culvert serve --kubernetes` end to end: the real binary, a fake API server on
//! loopback and an echo backend. Objects in the API server become served routes,
//! status lands on them, and when the Lease holder is killed the other process
//! takes over writing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

// The data plane's test helpers, one copy for both crates' tests.
#[path = "../../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use culvert_bench::{EchoBackend, EchoConfig};
use culvert_fake_apiserver::{FakeApiServer, fixtures};
use http::StatusCode;
use serde_json::{Value, json};
use support::{Process, free_port, get, temp_dir, until};

const GW: &str = "gateway.networking.k8s.io/v1";
const CONTROLLER: &str = "culvert.dev/gateway-controller";

fn start_plane(kubeconfig: &Path, identity: &str) -> Process {
    Process(spawn_plane(kubeconfig, identity, Stdio::null()))
}

fn spawn_plane(kubeconfig: &Path, identity: &str, stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_culvert"))
        .args([
            "serve",
            "--kubernetes",
            "--control",
            "127.0.0.1:0",
            "--workers",
            "1",
            "--no-pin",
            "--no-access-log",
            "--lease-namespace",
            "default",
            "--lease-duration",
            "3s",
            "--identity",
            identity,
        ])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stderr(stderr)
        .spawn()
        .unwrap()
}

fn cluster(server: &FakeApiServer, port: u16, backend: u16) {
    fixtures::register_repository_crds(server).unwrap();
    let mut objects = fixtures::minimal_cluster(CONTROLLER, port, backend);
    objects.push(route("/"));
    for object in objects {
        server.create(object).unwrap();
    }
}

fn route(prefix: &str) -> Value {
    let mut route = fixtures::http_route("web", "www.example.com");
    route["spec"]["rules"][0]["matches"] =
        json!([{"path": {"type": "PathPrefix", "value": prefix}}]);
    route
}

fn holder(server: &FakeApiServer) -> Option<String> {
    server
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            Some("default"),
            "culvert-status-writer",
        )
        .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn objects_become_routes_and_status_and_a_killed_leader_is_replaced() {
    let echo = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
    let port = free_port();
    let server = FakeApiServer::new();
    cluster(&server, port, echo.addr().port());
    let serving = server.serve().await.unwrap();
    let dir = temp_dir("kubernetes-binary");
    let kubeconfig = dir.join("kubeconfig");
    serving.write_kubeconfig(&kubeconfig).unwrap();
    let gateway = SocketAddr::from(([127, 0, 0, 1], port));

    let first = start_plane(&kubeconfig, "plane-a");
    until("the route serves", Duration::from_secs(30), async || {
        tokio::net::TcpStream::connect(gateway).await.is_ok()
            && get(gateway, "www.example.com", "/hello").await.status == StatusCode::OK
    })
    .await;
    let reply = get(gateway, "www.example.com", "/hello").await;
    assert_eq!(
        reply.json()["path"],
        "/hello",
        "the echo backend saw the request"
    );
    until(
        "plane-a writes status",
        Duration::from_secs(15),
        async || {
            let status =
                server.get(GW, "HTTPRoute", Some("default"), "web").unwrap()["status"].clone();
            status["parents"][0]["controllerName"] == CONTROLLER
        },
    )
    .await;
    assert_eq!(holder(&server).as_deref(), Some("plane-a"));

    // A second plane serves too but does not write.
    let _second = start_plane(&kubeconfig, "plane-b");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(holder(&server).as_deref(), Some("plane-a"));

    // The holder is killed (no release): plane-b takes over once the Lease expires,
    // and a route change is both served and reported by it.
    drop(first);
    until(
        "plane-b takes the Lease",
        Duration::from_secs(15),
        async || holder(&server).as_deref() == Some("plane-b"),
    )
    .await;
    server.apply_object(route("/api")).unwrap();
    until("the edit is served", Duration::from_secs(15), async || {
        get(gateway, "www.example.com", "/other").await.status == StatusCode::NOT_FOUND
    })
    .await;
    assert_eq!(
        get(gateway, "www.example.com", "/api/x").await.status,
        StatusCode::OK
    );
    until(
        "plane-b reports the new generation",
        Duration::from_secs(15),
        async || {
            let status =
                server.get(GW, "HTTPRoute", Some("default"), "web").unwrap()["status"].clone();
            status["parents"][0]["conditions"][0]["observedGeneration"] == 2
        },
    )
    .await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An API server that cannot be reached is reported on stderr (one JSON object
/// per line when stderr is not a terminal), not just an unready plane.
#[tokio::test]
async fn an_unreachable_api_server_is_reported_on_stderr() {
    use std::io::{BufRead, BufReader};
    let server = FakeApiServer::new();
    let serving = server.serve().await.unwrap();
    let dir = temp_dir("kubernetes-unreachable");
    let kubeconfig = dir.join("kubeconfig");
    // The kubeconfig names a port where nothing listens.
    let nowhere = format!("127.0.0.1:{}", free_port());
    let text = serving
        .kubeconfig()
        .replace(&serving.addr().to_string(), &nowhere);
    std::fs::write(&kubeconfig, text).unwrap();
    let mut child = spawn_plane(&kubeconfig, "unreachable", Stdio::piped());
    let stderr = child.stderr.take().unwrap();
    let _plane = Process(child);
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let warning = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = received.recv_timeout(left).expect("no warning on stderr");
        if let Ok(event) = serde_json::from_str::<Value>(&line) {
            if event["level"] == "WARN" {
                break event;
            }
        }
    };
    assert!(
        warning["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("failed")),
        "{warning}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_controller_renders_a_dedicated_plane_and_stops_on_sigterm() {
    let server = FakeApiServer::new();
    cluster(&server, free_port(), free_port());
    server
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "culvert-system"}}))
        .unwrap();
    server
        .create(
            json!({"apiVersion": "culvert.dev/v1alpha1", "kind": "GatewayConfig",
            "metadata": {"name": "own", "namespace": "default"}, "spec": {}}),
        )
        .unwrap();
    let mut gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
    gateway["spec"]["infrastructure"] =
        json!({"parametersRef": {"group": "culvert.dev", "kind": "GatewayConfig", "name": "own"}});
    server.apply_object(gateway).unwrap();
    let serving = server.serve().await.unwrap();
    let dir = temp_dir("controller-binary");
    let kubeconfig = dir.join("kubeconfig");
    serving.write_kubeconfig(&kubeconfig).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_culvert"))
        .args([
            "controller",
            "--namespace",
            "culvert-system",
            "--image",
            "culvert:test",
        ])
        .args([
            "--lease-duration",
            "3s",
            "--identity",
            "controller-1",
            "--resync",
            "1s",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut controller = Process(child);
    until(
        "the plane is rendered",
        Duration::from_secs(20),
        async || {
            server
                .get("apps/v1", "Deployment", Some("default"), "culvert-edge")
                .is_some()
        },
    )
    .await;
    let deployment = server
        .get("apps/v1", "Deployment", Some("default"), "culvert-edge")
        .unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "culvert:test");
    assert_eq!(container["args"][0], "serve");
    until(
        "the Gateway's status is written",
        Duration::from_secs(20),
        async || {
            server.get(GW, "Gateway", Some("default"), "edge").unwrap()["status"]["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        },
    )
    .await;
    // A GatewayConfig the plane cannot be rendered from: the Gateway says why.
    let mut config = server
        .get(
            "culvert.dev/v1alpha1",
            "GatewayConfig",
            Some("default"),
            "own",
        )
        .unwrap();
    config["spec"] = json!({"replicas": 3_000_000_000_u64});
    config["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    server.apply_object(config).unwrap();
    until(
        "the Gateway reports the render refusal",
        Duration::from_secs(20),
        async || {
            let gateway = server.get(GW, "Gateway", Some("default"), "edge").unwrap();
            gateway["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| {
                    c["type"] == "Accepted"
                        && c["status"] == "False"
                        && c["reason"] == "InvalidParameters"
                        && c["message"].as_str().is_some_and(|m| {
                            m.contains("replicas 3000000000 is more than a Deployment takes")
                        })
                })
        },
    )
    .await;
    // SIGTERM: the process stops on its own, with status 0.
    let killed = Command::new("kill")
        .args(["-TERM", &controller.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = controller.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the controller did not stop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
    std::fs::remove_dir_all(&dir).unwrap();
}
