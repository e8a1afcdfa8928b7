//! The `culvert-edge-sim` binary: state directory contract, a connector registering
//! against it with the files it wrote, over QUIC and over HTTP/2 (`--h2`).
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use culvert_connector::io::{EdgeRoots, Transport, Tunnel, TunnelConfig};
use culvert_connector::proto::TunnelToken;
use http::StatusCode;
use support::*;

/// Kills the child when dropped, so a failing test leaves nothing running.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn state_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("culvert-sim-{name}-{}-{nanos}", std::process::id()))
}

async fn wait_for_file(path: &Path) {
    for _ in 0..300 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test]
async fn the_binary_writes_its_state_and_a_connector_registers() {
    local(async {
        let dir = state_dir("bin");
        let child = Command::new(env!("CARGO_BIN_EXE_culvert-edge-sim"))
            .args([
                "--quic",
                "127.0.0.1:0",
                "127.0.0.1:0",
                "127.0.0.1:0",
                "127.0.0.1:0",
            ])
            .args(["--http", "127.0.0.1:0", "--quiet", "--state-dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let _child = Kill(child);
        wait_for_file(&dir.join("tunnel-token")).await;
        let token = TunnelToken::parse(&std::fs::read_to_string(dir.join("tunnel-token")).unwrap())
            .unwrap();
        let edges: Vec<std::net::SocketAddr> = std::fs::read_to_string(dir.join("edge-addrs"))
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(edges.len(), 4);
        let http: std::net::SocketAddr = std::fs::read_to_string(dir.join("http-addr"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            std::fs::read_to_string(dir.join("ca.pem"))
                .unwrap()
                .contains("BEGIN CERTIFICATE")
        );

        let mut config = TunnelConfig::new(token, edges);
        config.roots = EdgeRoots::CaFile(dir.join("ca.pem"));
        config.ha_stagger = Duration::from_millis(20);
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(hello_handler());
        tunnel.wait_registered(4).await.unwrap();

        let status = get(http, culvert_edge_sim::STATUS_PATH).await;
        assert_eq!(status.status, StatusCode::OK);
        let json: serde_json::Value = serde_json::from_slice(&status.body.unwrap()).unwrap();
        let registered = json["connections"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["state"] == "registered")
            .count();
        assert_eq!(registered, 4, "{json:#}");
        assert_eq!(json["tunnel_id"], tunnel_id_of(&dir));

        let got = get(http, "/hello").await;
        assert_eq!(got.status, StatusCode::OK);
        tunnel.shutdown();
        tunnel.closed().await.unwrap();
        drop(_child);
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

fn tunnel_id_of(dir: &Path) -> String {
    let token =
        TunnelToken::parse(&std::fs::read_to_string(dir.join("tunnel-token")).unwrap()).unwrap();
    token.tunnel_id.to_string()
}

#[tokio::test]
async fn the_binary_serves_http2_and_records_its_addresses() {
    local(async {
        let dir = state_dir("h2");
        let child = Command::new(env!("CARGO_BIN_EXE_culvert-edge-sim"))
            .args([
                "--h2",
                "127.0.0.1:0",
                "127.0.0.1:0",
                "127.0.0.1:0",
                "127.0.0.1:0",
            ])
            .args(["--http", "127.0.0.1:0", "--quiet", "--state-dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let _child = Kill(child);
        wait_for_file(&dir.join("tunnel-token")).await;
        let token = TunnelToken::parse(&std::fs::read_to_string(dir.join("tunnel-token")).unwrap())
            .unwrap();
        let read_addrs = |name: &str| -> Vec<std::net::SocketAddr> {
            std::fs::read_to_string(dir.join(name))
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect()
        };
        assert!(read_addrs("edge-addrs").is_empty());
        let h2 = read_addrs("h2-addrs");
        assert_eq!(h2.len(), 4);
        let http: std::net::SocketAddr = std::fs::read_to_string(dir.join("http-addr"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut config = TunnelConfig::new(token, Vec::new());
        config.transport = Transport::Http2;
        config.h2_edges = Some(h2);
        config.roots = EdgeRoots::CaFile(dir.join("ca.pem"));
        config.ha_stagger = Duration::from_millis(20);
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(hello_handler());
        tunnel.wait_registered(4).await.unwrap();
        let status = get(http, culvert_edge_sim::STATUS_PATH).await;
        let json: serde_json::Value = serde_json::from_slice(&status.body.unwrap()).unwrap();
        let http2 = json["connections"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["state"] == "registered" && c["transport"] == "http2")
            .count();
        assert_eq!(http2, 4, "{json:#}");
        assert_eq!(get(http, "/hello").await.status, StatusCode::OK);
        tunnel.shutdown();
        tunnel.closed().await.unwrap();
        drop(_child);
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

#[test]
fn the_binary_needs_a_quic_or_h2_listener() {
    let dir = state_dir("none");
    let output = Command::new(env!("CARGO_BIN_EXE_culvert-edge-sim"))
        .args(["--http", "127.0.0.1:0", "--state-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(!dir.join("tunnel-token").exists());
}

/// `GET <path>` on the binary's API with `token` as bearer: status and JSON.
async fn api_get(
    addr: std::net::SocketAddr,
    path: &str,
    token: &str,
) -> (StatusCode, serde_json::Value) {
    let got = request(
        addr,
        http::Request::get(format!("/client/v4{path}"))
            .header("host", addr.to_string())
            .header("authorization", format!("Bearer {token}"))
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap(),
    )
    .await;
    (
        got.status,
        serde_json::from_slice(&got.body.unwrap()).unwrap(),
    )
}

fn spawn_with_api(dir: &Path) -> Kill {
    let child = Command::new(env!("CARGO_BIN_EXE_culvert-edge-sim"))
        .args(["--quic", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .args(["--api", "127.0.0.1:0", "--zone", "example.com"])
        .args(["--zone", "Example.ORG.", "--quiet", "--state-dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    Kill(child)
}

#[tokio::test]
async fn the_binary_serves_the_api_and_keeps_its_token_across_restarts() {
    local(async {
        let dir = state_dir("api");
        let mut tokens = Vec::new();
        for _ in 0..2 {
            let child = spawn_with_api(&dir);
            wait_for_file(&dir.join("tunnel-token")).await;
            let api: std::net::SocketAddr = std::fs::read_to_string(dir.join("api-addr"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let token = std::fs::read_to_string(dir.join("api-token"))
                .unwrap()
                .trim()
                .to_owned();
            let (status, json) = api_get(api, "/zones", &token).await;
            assert_eq!(status, StatusCode::OK, "{json:#}");
            let names: Vec<&str> = json["result"]
                .as_array()
                .unwrap()
                .iter()
                .map(|z| z["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["example.com", "example.org"]);
            let (status, json) = api_get(api, "/zones", "not-the-token").await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{json:#}");
            tokens.push(token);
            drop(child);
            std::fs::remove_file(dir.join("tunnel-token")).unwrap();
        }
        assert_eq!(tokens[0], tokens[1]);
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
