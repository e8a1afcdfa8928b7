//! The `culvert serve` binary end to end: SIGTERM drains (requests in flight finish,
//! then exit 0), and Gateway API manifests are followed (a good edit is served, a
//! broken one is reported and the running config stays).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

// The data plane's test helpers, one copy for both crates' tests.
#[path = "../../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use culvert_bench::{EchoBackend, EchoConfig};
use http::StatusCode;
use serde_json::json;
use support::{free_port, get, temp_dir};

const LIMIT: Duration = Duration::from_secs(60);

/// Kills the process on drop, so a failing test does not leave `culvert serve`
/// running (after a clean exit the kill finds nothing).
struct Reaper(u32);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

async fn wait_until_listening(addr: SocketAddr) {
    let start = Instant::now();
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{addr} never listened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn sigterm_lets_requests_in_flight_finish_then_exits_zero() {
    drain_lets_requests_in_flight_finish(false).await;
}

/// A `preStop` hook posts `/drain`, then the kubelet sends SIGTERM: that signal
/// must not cut the drain short.
#[tokio::test]
async fn sigterm_after_post_drain_keeps_draining() {
    drain_lets_requests_in_flight_finish(true).await;
}

async fn drain_lets_requests_in_flight_finish(post_drain_first: bool) {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("slow")).await.unwrap();
        let port = free_port();
        let dir = temp_dir("drain");
        let config = dir.join("config.json");
        let document = json!({
            "version": 1,
            "listeners": [{"name": "web", "address": "127.0.0.1", "port": port, "protocol": "HTTP"}],
            "httpRoutes": [{"name": "r", "listeners": ["web"], "rules": [
                {"backends": [{"name": "slow", "endpoints": [echo.addr().to_string()]}]}]}]
        });
        std::fs::write(&config, document.to_string()).unwrap();
        let control = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let child = Command::new(env!("CARGO_BIN_EXE_culvert"))
            .args(["serve", "--workers", "2", "--no-access-log", "--control"])
            .arg(control.to_string())
            .args(["--drain-grace", "10s", "--config"])
            .arg(&config)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _reaper = Reaper(child.id());
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        wait_until_listening(addr).await;
        assert_workers_pinned(child.id());
        assert_huge_pages_off(child.id());
        let slow = || {
            http::Request::get("/?delay=700ms")
                .header("host", "x")
                .body(http_body_util::Full::new(bytes::Bytes::new()))
                .unwrap()
        };
        let in_flight: Vec<_> = (0..3)
            .map(|_| tokio::spawn(support::try_send(addr, slow())))
            .collect();
        let start = Instant::now();
        while echo.count() < 3 {
            assert!(start.elapsed() < Duration::from_secs(10), "requests never arrived");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if post_drain_first {
            let drain = http::Request::post("/drain")
                .header("host", "control")
                .body(http_body_util::Full::new(bytes::Bytes::new()))
                .unwrap();
            assert_eq!(support::send(control, drain).await.status, StatusCode::ACCEPTED);
        }
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let mut results = Vec::new();
        for request in in_flight {
            results.push(request.await.unwrap().map(|reply| reply.status));
        }
        let status = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let stderr = String::from_utf8_lossy(&status.stderr);
        for result in results {
            assert_eq!(result, Ok(StatusCode::OK), "{stderr}");
        }
        assert!(status.status.success(), "exit {:?}: {stderr}", status.status);
        assert!(stderr.contains("drained"), "{stderr}");
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    })
    .await
    .unwrap();
}

/// `pid` has opted out of transparent huge pages (`THP_enabled: 0` in its status;
/// Linux shows the field since 5.0).
fn assert_huge_pages_off(pid: u32) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let enabled = status
        .lines()
        .find_map(|line| line.strip_prefix("THP_enabled:"))
        .map(str::trim);
    assert_eq!(enabled, Some("0"), "{status}");
}

/// Each worker thread of `pid` may run on exactly one CPU, and two workers share
/// one only when this machine lets the process use a single CPU.
fn assert_workers_pinned(pid: u32) {
    let allowed = |status: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
            .map(|list| list.trim().to_owned())
            .unwrap()
    };
    let mine = allowed(&std::fs::read_to_string("/proc/self/status").unwrap());
    let mut workers = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap().path();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if comm.trim().starts_with("culvert-worker") {
            workers.push(allowed(
                &std::fs::read_to_string(task.join("status")).unwrap(),
            ));
        }
    }
    assert_eq!(workers.len(), 2, "{workers:?}");
    for cpus in &workers {
        assert!(cpus.parse::<usize>().is_ok(), "worker may run on {cpus}");
    }
    let single = mine.parse::<usize>().is_ok();
    assert_eq!(
        workers[0] == workers[1],
        single,
        "workers {workers:?}, process {mine}"
    );
}

const MANIFESTS: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: culvert}
spec: {controllerName: culvert.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: default}
spec:
  gatewayClassName: culvert
  listeners: [{name: http, port: PORT, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: default}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: api-1, namespace: default, labels: {kubernetes.io/service-name: api}}
addressType: IPv4
endpoints: [{addresses: ["127.0.0.1"]}]
ports: [{name: http, port: BACKEND}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [www.example.com]
  rules:
    - filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: {set: [{name: x-edition, value: EDITION}]}
      backendRefs: [{name: api, port: 80}]
"#;

#[tokio::test]
async fn manifests_are_followed_and_a_broken_edit_keeps_the_running_config() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("api")).await.unwrap();
        let port = free_port();
        let dir = temp_dir("manifests");
        let file = dir.join("gateway.yaml");
        let render = |edition: &str| {
            MANIFESTS
                .replace("PORT", &port.to_string())
                .replace("BACKEND", &echo.addr().port().to_string())
                .replace("EDITION", edition)
        };
        std::fs::write(&file, render("first")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_culvert"))
            .args([
                "serve",
                "--control",
                "127.0.0.1:0",
                "--workers",
                "1",
                "--no-access-log",
            ])
            .arg("--config")
            .arg(&dir)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _reaper = Reaper(child.id());
        let stderr = child.stderr.take().unwrap();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        wait_until_listening(addr).await;
        let edition = || async {
            let reply = get(addr, "www.example.com", "/").await;
            assert_eq!(reply.status, StatusCode::OK);
            reply.json()["headers"]["X-Edition"][0]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(edition().await, "first");

        std::fs::write(&file, render("second")).unwrap();
        let start = Instant::now();
        while edition().await != "second" {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "edit never served"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        std::fs::write(&file, "kind: HTTPRoute\nspec: [broken").unwrap();
        let start = Instant::now();
        while !log.lock().unwrap().contains("refused") {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "broken edit never reported"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(edition().await, "second", "the running config stays");
        child.kill().unwrap();
        let _ = child.wait();
        std::fs::remove_dir_all(&dir).unwrap();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn access_log_lines_carry_the_grpc_status() {
    use http_body_util::BodyExt as _;
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("grpc")).await.unwrap();
        let port = free_port();
        let dir = temp_dir("grpc-log");
        let config = dir.join("config.json");
        let service = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho";
        let document = json!({
            "version": 1,
            "listeners": [{"name": "web", "address": "127.0.0.1", "port": port, "protocol": "HTTP"}],
            "grpcRoutes": [{"name": "g", "listeners": ["web"], "rules": [
                {"matches": [{"method": {"type": "Exact", "service": service}}],
                 "backends": [{"name": "grpc", "endpoints": [echo.addr().to_string()]}]}]}]
        });
        std::fs::write(&config, document.to_string()).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_culvert"))
            .args(["serve", "--control", "127.0.0.1:0", "--workers", "1"])
            .args(["--access-log-sample", "1"])
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let _reaper = Reaper(child.id());
        let stdout = child.stdout.take().unwrap();
        let (lines, mut logged) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        wait_until_listening(addr).await;
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(stream),
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        // (path, where the status comes from, the status)
        let calls = [
            (format!("/{service}/Echo"), "the backend's trailers", 0),
            (format!("/{service}/EchoThree"), "the backend's head", 12),
            ("/other.Service/Call".to_owned(), "the proxy's own answer", 12),
        ];
        for (path, _, _) in &calls {
            let request = http::Request::post(format!("http://grpc.example{path}"))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .body(http_body_util::Full::new(bytes::Bytes::from_static(&[0; 5])))
                .unwrap();
            let response = sender.send_request(request).await.unwrap();
            response.into_body().collect().await.unwrap();
        }
        let mut seen = std::collections::HashMap::new();
        while seen.len() < calls.len() {
            let line = logged.recv().await.expect("the log ended early");
            let line: serde_json::Value = serde_json::from_str(&line).unwrap();
            seen.insert(line["target"].as_str().unwrap().to_owned(), line);
        }
        for (path, from, code) in &calls {
            assert_eq!(seen[path]["grpcStatus"], *code, "{path}: from {from}");
        }
        let no_route = &seen["/other.Service/Call"];
        assert_eq!(no_route["status"], 404, "the log keeps the HTTP status");
        child.kill().unwrap();
        let _ = child.wait();
        std::fs::remove_dir_all(&dir).unwrap();
    })
    .await
    .unwrap();
}
