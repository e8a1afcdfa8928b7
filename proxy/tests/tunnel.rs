//! Requests through a Cloudflare Tunnel into the data plane: the edge simulator on
//! loopback (real QUIC), `Server` with a tunnel and an HTTP listener, echo backends.
//! Tunnel requests take the same routes, filters and metrics as listener traffic.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use bytes::Bytes;
use culvert_bench::{EchoBackend, EchoConfig};
use culvert_connector::io::{EdgeRoots, Transport, TunnelConfig};
use culvert_edge_sim::{EdgeSim, SimConfig, SimTransport};
use culvert_proxy::{ServeConfig, Server};
use http::{Request, StatusCode};
use http_body_util::Full;
use serde_json::json;
use support::{free_port, put_config, send};

const LIMIT: Duration = Duration::from_secs(60);

async fn readyz(server: &Server) -> StatusCode {
    let request = Request::get("/readyz")
        .header("host", "c")
        .body(Full::new(Bytes::new()))
        .unwrap();
    send(server.control_addr(), request).await.status
}

#[tokio::test]
async fn tunnel_requests_over_quic_take_the_same_routes_as_listener_traffic() {
    tunnel_requests_take_the_same_routes(Transport::Quic).await;
}

#[tokio::test]
async fn tunnel_requests_over_http2_take_the_same_routes_as_listener_traffic() {
    tunnel_requests_take_the_same_routes(Transport::Http2).await;
}

async fn tunnel_requests_take_the_same_routes(transport: Transport) {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("api")).await.unwrap();
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        let sim = EdgeSim::start(SimConfig {
            h2: vec![any; 4],
            ..SimConfig::loopback()
        })
        .await
        .unwrap();
        let mut tunnel = TunnelConfig::new(sim.token().clone(), sim.quic_addrs().to_vec());
        tunnel.transport = transport;
        tunnel.h2_edges = Some(sim.h2_addrs().to_vec());
        tunnel.roots = EdgeRoots::Pem(sim.ca().cert_pem.clone().into_bytes());
        tunnel.ha_stagger = Duration::from_millis(20);
        tunnel.grace_period = Duration::from_secs(10);
        let server = Server::start(
            ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)))
                .with_workers(NonZeroUsize::new(2).unwrap())
                .with_tunnel(tunnel),
        )
        .unwrap();
        // No config yet: not ready, whatever the tunnel does.
        assert_eq!(readyz(&server).await, StatusCode::SERVICE_UNAVAILABLE);
        let port = free_port();
        let config = json!({
            "version": 1,
            "listeners": [{"name": "web", "address": "127.0.0.1", "port": port, "protocol": "HTTP"}],
            "httpRoutes": [{"namespace": "shop", "name": "api", "listeners": ["web"],
                "hostnames": ["app.example.com"],
                "rules": [{
                    "filters": [{"type": "RequestHeaderModifier",
                                 "requestHeaderModifier": {"set": [{"name": "x-via", "value": "culvert"}]}}],
                    "backends": [{"name": "api", "endpoints": [echo.addr().to_string()]}]}]}]
        });
        let taken = put_config(server.control_addr(), &config, None).await;
        assert_eq!(taken.status, StatusCode::OK);
        assert!(
            taken.json()["tunnel"]["registered"].is_u64(),
            "a tunnel plane says how many connections are registered: {:?}",
            taken.body
        );
        let start = Instant::now();
        while readyz(&server).await != StatusCode::OK {
            assert!(start.elapsed() < Duration::from_secs(20), "tunnel never registered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let start = Instant::now();
        while sim.status().registered() < 4 {
            assert!(start.elapsed() < Duration::from_secs(20), "{:#?}", sim.status());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let request = Request::get("/config")
            .header("host", "c")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let current = send(server.control_addr(), request).await.json();
        assert_eq!(current["tunnel"]["registered"], 4, "{current}");
        let expected = match transport {
            Transport::Http2 => SimTransport::Http2,
            _ => SimTransport::Quic,
        };
        let status = sim.status();
        assert!(
            status.connections.iter().all(|c| c.transport == expected),
            "{status:#?}"
        );

        // GET through the edge: routed by Host, filtered, forwarded.
        let edge = sim.http_addr();
        let reply = support::get(edge, "app.example.com", "/hello?x=1").await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        let seen = echo.requests().pop().unwrap();
        assert_eq!(seen.path, "/hello?x=1");
        assert_eq!(seen.header("x-via"), ["culvert"]);
        assert_eq!(seen.header("x-forwarded-proto"), ["https"]);
        // A Host no route owns: 404 from the proxy, as on a listener.
        assert_eq!(support::get(edge, "other.example.com", "/").await.status, StatusCode::NOT_FOUND);

        // POST with a 512 KiB body arrives whole.
        let body = Bytes::from(vec![b'z'; 512 << 10]);
        let post = Request::post("/upload")
            .header("host", "app.example.com")
            .header("content-length", body.len())
            .body(Full::new(body.clone()))
            .unwrap();
        assert_eq!(send(edge, post).await.status, StatusCode::OK);
        assert_eq!(echo.requests().pop().unwrap().body, body);

        // WebSocket through the tunnel to the echo backend.
        let mut ws = tokio::net::TcpStream::connect(edge).await.unwrap();
        let head = support::websocket_upgrade(&mut ws, "app.example.com", "/ws").await;
        assert!(head.starts_with("http/1.1 101"), "{head}");
        assert_eq!(support::websocket_echo(&mut ws, "tunnl").await, b"\x81\x05tunnl");
        drop(ws);

        // The same route is counted whichever entry the requests used.
        let listener_reply = support::get(SocketAddr::from(([127, 0, 0, 1], port)), "app.example.com", "/").await;
        assert_eq!(listener_reply.status, StatusCode::OK);
        let metrics = send(
            server.control_addr(),
            Request::get("/metrics").header("host", "c").body(Full::new(Bytes::new())).unwrap(),
        )
        .await;
        let text = String::from_utf8(metrics.body.to_vec()).unwrap();
        let line = "culvert_requests_total{route=\"shop/api\",status_class=\"2xx\"} 3";
        assert!(text.contains(line), "{text}");
        assert!(text.contains("culvert_tunnel_connections{state=\"registered\"} 4"), "{text}");

        // Drain: the tunnel unregisters every connection and the plane drains.
        server.start_drain();
        tokio::time::timeout(Duration::from_secs(20), server.wait_drained())
            .await
            .expect("drained");
        assert_eq!(sim.status().registered(), 0, "{:#?}", sim.status());
        server.shutdown();
        sim.shutdown().await;
    })
    .await
    .unwrap();
}
