//! End-to-end tests of the HTTP/2 transport over real loopback TCP + TLS: the
//! in-process edge simulator's `--h2` listeners, the connector's HTTP/2 driver, and
//! the test origin behind a `TunnelHandler`; plus `Transport::Auto` falling back
//! from QUIC to HTTP/2.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::collections::BTreeSet;
use std::net::{SocketAddr, UdpSocket};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use culvert_connector::io::{BackoffConfig, ConnectionState, Transport, Tunnel};
use culvert_connector::sim::{EdgeSim, SimConnectionState, SimTransport};
use http::{Request, StatusCode};
use support::*;

/// Starts an HTTP/2 tunnel for `sim` serving with `echo` and waits for four
/// registrations.
async fn up(sim: &EdgeSim, echo: &Rc<Echo>) -> Tunnel {
    let tunnel = Tunnel::new(tunnel_config_h2(sim)).unwrap();
    tunnel.spawn_all_local(handler(echo));
    tunnel.wait_registered(4).await.unwrap();
    wait_sim(sim, "4 registrations", |s| s.registered() == 4).await;
    tunnel
}

async fn down(tunnel: Tunnel, sim: EdgeSim) {
    tunnel.shutdown();
    tunnel.closed().await.unwrap();
    sim.shutdown().await;
}

#[tokio::test]
async fn registers_four_connections_over_http2() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        let status = sim.status();
        let listeners: BTreeSet<SocketAddr> =
            status.connections.iter().map(|c| c.listener).collect();
        assert_eq!(listeners.len(), 4, "{:#?}", status.connections);
        for c in &status.connections {
            assert_eq!(c.transport, SimTransport::Http2, "{c:?}");
            assert!(sim.h2_addrs().contains(&c.listener));
            assert_eq!(c.state, SimConnectionState::Registered);
            assert!(c.features.iter().any(|f| f == "serialized_headers"));
        }
        let indices: BTreeSet<u8> = status
            .connections
            .iter()
            .filter_map(|c| c.conn_index)
            .collect();
        assert_eq!(indices, (0..4).collect());
        wait_sim(&sim, "local configuration of connIndex 0", |s| {
            s.connections
                .iter()
                .any(|c| c.conn_index == Some(0) && c.local_config.is_some())
        })
        .await;
        for c in &tunnel.status().borrow().connections {
            assert!(
                matches!(c.state, ConnectionState::Registered { .. }),
                "{c:?}"
            );
            assert_eq!(c.transport, Some(Transport::Http2));
        }
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn get_post_and_large_bodies_over_http2() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        let addr = sim.http_addr();

        let got = request(
            addr,
            Request::get("/hello?x=1")
                .header("host", "app.test")
                .header("x-greeting", "hi there")
                .body(http_body_util::Empty::<Bytes>::new())
                .unwrap(),
        )
        .await;
        assert_eq!(got.status, StatusCode::OK);
        let body = got.body.unwrap();
        let body = std::str::from_utf8(&body).unwrap();
        assert!(
            body.starts_with("hello GET host=app.test greeting=hi there conn="),
            "{body}"
        );
        // Response headers came back through the serialized header.
        assert!(got.headers.contains_key("x-conn-index"));
        assert_eq!(got.headers["content-length"], body.len().to_string());

        let got = request(
            addr,
            Request::post("/echo")
                .header("host", "app.test")
                .body(http_body_util::Full::new(Bytes::from_static(b"ping pong")))
                .unwrap(),
        )
        .await;
        assert_eq!(got.status, StatusCode::OK);
        assert_eq!(got.body.unwrap(), Bytes::from_static(b"ping pong"));

        // Round robin over the four HTTP/2 connections.
        let mut seen = BTreeSet::new();
        for _ in 0..4 {
            let got = get(addr, "/hello").await;
            seen.insert(got.headers["x-conn-index"].to_str().unwrap().to_owned());
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(get(addr, "/missing").await.status, StatusCode::NOT_FOUND);

        large_bodies_scenario(addr).await;
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn handler_errors_and_late_failures_over_http2() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        // The connector's own 502 (`{"src":"cloudflared"}`).
        let got = get(sim.http_addr(), "/fail").await;
        assert_eq!(got.status, StatusCode::BAD_GATEWAY);
        let body = got.body.unwrap();
        assert!(
            std::str::from_utf8(&body)
                .unwrap()
                .contains("connector error"),
            "{body:?}"
        );
        // A body failure after the head resets the stream.
        let got = get(sim.http_addr(), "/reset").await;
        assert_eq!(got.status, StatusCode::OK);
        assert!(got.body.is_err(), "{:?}", got.body);
        assert_eq!(get(sim.http_addr(), "/hello").await.status, StatusCode::OK);
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn websocket_frames_are_echoed_over_http2() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        websocket_echo_scenario(sim.http_addr(), 200_000).await;
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn a_hundred_concurrent_requests_over_http2() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        let addr = sim.http_addr();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..100u32 {
            tasks.spawn(async move {
                let payload = format!("request {i}");
                let got = request(
                    addr,
                    Request::post("/echo")
                        .header("host", "app.test")
                        .body(http_body_util::Full::new(Bytes::from(payload.clone())))
                        .unwrap(),
                )
                .await;
                (got.status, got.body.unwrap(), payload)
            });
        }
        let mut done = 0;
        while let Some(result) = tasks.join_next().await {
            let (status, body, payload) = result.unwrap();
            assert_eq!(status, StatusCode::OK);
            assert_eq!(body, Bytes::from(payload));
            done += 1;
        }
        assert_eq!(done, 100);
        let streams: u64 = sim.status().connections.iter().map(|c| c.streams).sum();
        assert_eq!(streams, 100);
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn drain_over_http2_finishes_in_flight_requests() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        let addr = sim.http_addr();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..8 {
            tasks.spawn(async move { get(addr, "/slow").await });
        }
        while echo.slow_started.get() < 8 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tunnel.drain();
        wait_sim(&sim, "all connections draining", |s| {
            s.connections
                .iter()
                .filter(|c| c.state == SimConnectionState::Draining)
                .count()
                == 4
        })
        .await;
        let mut status = tunnel.status();
        status.wait_for(|s| s.registered() == 0).await.unwrap();
        let refused = get(addr, "/hello").await;
        assert_eq!(refused.status, StatusCode::BAD_GATEWAY, "no new streams");
        assert!(
            !sim.status()
                .events
                .iter()
                .any(|e| e.contains("unregistered (in-flight"))
        );
        echo.release();
        let mut ok = 0;
        while let Some(got) = tasks.join_next().await {
            let got = got.unwrap();
            assert_eq!(got.status, StatusCode::OK);
            assert_eq!(got.body.unwrap(), Bytes::from_static(b"slow done"));
            ok += 1;
        }
        assert_eq!(ok, 8);
        tokio::time::timeout(Duration::from_secs(10), tunnel.closed())
            .await
            .expect("connections close once drained")
            .unwrap();
        let events = sim.status().events;
        assert_eq!(
            events
                .iter()
                .filter(|e| e.contains("unregistered (in-flight streams done)"))
                .count(),
            4,
            "{events:#?}"
        );
        wait_sim(&sim, "connections closed", |s| s.connections.is_empty()).await;
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn auto_falls_back_to_http2_when_quic_cannot_connect() {
    local(async {
        let sim = start_sim_h2().await;
        // UDP ports that are bound (so nobody else takes them) but never answer.
        let silent: Vec<UdpSocket> = (0..4)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut config = tunnel_config(&sim);
        config.edges = silent.iter().map(|s| s.local_addr().unwrap()).collect();
        config.h2_edges = Some(sim.h2_addrs().to_vec());
        config.transport = Transport::Auto;
        config.quic_handshake_timeout = Duration::from_millis(300);
        config.backoff = BackoffConfig {
            base: Duration::from_millis(100),
            max_exponent: 2,
        };
        let tunnel = Tunnel::new(config).unwrap();
        let echo = Rc::new(Echo::default());
        tunnel.spawn_all_local(handler(&echo));
        tunnel.wait_registered(4).await.unwrap();
        wait_sim(&sim, "4 http/2 registrations", |s| s.registered() == 4).await;
        for c in &tunnel.status().borrow().connections {
            assert_eq!(c.transport, Some(Transport::Http2), "{c:?}");
            assert!(sim.h2_addrs().contains(&c.edge.unwrap()), "{c:?}");
        }
        let status = sim.status();
        assert!(
            status
                .connections
                .iter()
                .all(|c| c.transport == SimTransport::Http2)
        );
        assert_eq!(get(sim.http_addr(), "/hello").await.status, StatusCode::OK);
        down(tunnel, sim).await;
        drop(silent);
    })
    .await;
}

#[tokio::test]
async fn auto_dials_http2_on_the_same_addresses_by_default() {
    local(async {
        // As at Cloudflare: one host:port per edge, UDP for QUIC and TCP for HTTP/2.
        // This edge only speaks HTTP/2, so QUIC to the same ports gets no answer.
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        let sim = EdgeSim::start(culvert_connector::sim::SimConfig {
            quic: Vec::new(),
            h2: vec![any; 4],
            ..culvert_connector::sim::SimConfig::loopback()
        })
        .await
        .unwrap();
        let mut config = tunnel_config(&sim);
        config.edges = sim.h2_addrs().to_vec();
        assert!(config.h2_edges.is_none());
        config.transport = Transport::Auto;
        config.quic_handshake_timeout = Duration::from_millis(300);
        config.backoff = BackoffConfig {
            base: Duration::from_millis(100),
            max_exponent: 1,
        };
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(handler(&Rc::new(Echo::default())));
        tunnel.wait_registered(4).await.unwrap();
        for c in &tunnel.status().borrow().connections {
            assert_eq!(c.transport, Some(Transport::Http2), "{c:?}");
        }
        assert_eq!(get(sim.http_addr(), "/hello").await.status, StatusCode::OK);
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn auto_stays_on_quic_when_quic_works() {
    local(async {
        let sim = start_sim_h2().await;
        let mut config = tunnel_config(&sim);
        config.h2_edges = Some(sim.h2_addrs().to_vec());
        config.transport = Transport::Auto;
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(handler(&Rc::new(Echo::default())));
        tunnel.wait_registered(4).await.unwrap();
        for c in &tunnel.status().borrow().connections {
            assert_eq!(c.transport, Some(Transport::Quic), "{c:?}");
        }
        wait_sim(&sim, "4 quic registrations", |s| {
            s.registered() == 4
                && s.connections
                    .iter()
                    .all(|c| c.transport == SimTransport::Quic)
        })
        .await;
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn a_wrong_secret_over_http2_stops_the_tunnel() {
    local(async {
        let sim = start_sim_h2().await;
        let mut config = tunnel_config_h2(&sim);
        config.token.tunnel_secret = b"not the secret".to_vec();
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(handler(&Rc::new(Echo::default())));
        let message = tunnel.closed().await.unwrap_err().to_string();
        assert!(
            message.contains("tunnel secret does not match"),
            "{message}"
        );
        assert_eq!(sim.status().registered(), 0);
        sim.shutdown().await;
    })
    .await;
}

#[test]
fn transport_names_parse_like_cloudflared() {
    assert_eq!("quic".parse::<Transport>().unwrap(), Transport::Quic);
    assert_eq!("http2".parse::<Transport>().unwrap(), Transport::Http2);
    assert_eq!("h2mux".parse::<Transport>().unwrap(), Transport::Http2);
    assert_eq!("auto".parse::<Transport>().unwrap(), Transport::Auto);
    assert!("udp".parse::<Transport>().is_err());
    assert_eq!(Transport::default(), Transport::Quic);
    assert_eq!(Transport::Http2.to_string(), "http2");
}

/// 64 clients x 40 requests with bodies on one HTTP/2 connection: every answer
/// arrives and the connection stays registered.
#[tokio::test]
async fn thousands_of_concurrent_requests_on_one_http2_connection() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let mut config = tunnel_config_h2(&sim);
        config.ha_connections = 1;
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(handler(&echo));
        tunnel.wait_registered(1).await.unwrap();
        let addr = sim.http_addr();
        let mut clients = tokio::task::JoinSet::new();
        for client in 0..64u32 {
            clients.spawn(async move {
                for i in 0..40u32 {
                    let payload = format!("client {client} request {i}");
                    let got = request(
                        addr,
                        Request::post("/echo")
                            .header("host", "app.test")
                            .body(http_body_util::Full::new(Bytes::from(payload.clone())))
                            .unwrap(),
                    )
                    .await;
                    assert_eq!(got.status, StatusCode::OK, "{payload}");
                    assert_eq!(got.body.unwrap(), Bytes::from(payload));
                }
            });
        }
        while let Some(result) = clients.join_next().await {
            result.unwrap();
        }
        let status = sim.status();
        assert_eq!(status.registered(), 1, "{status:#?}");
        let streams: u64 = status.connections.iter().map(|c| c.streams).sum();
        assert_eq!(streams, 64 * 40);
        down(tunnel, sim).await;
    })
    .await;
}

/// Responses with a Content-Length whose END_STREAM comes in a DATA frame of its
/// own, shortly after the last bytes (as when the connector relays a real
/// upstream's body), many on one connection to an edge some milliseconds away.
/// The simulator's front door (hyper) stops reading a body at its Content-Length;
/// if that dropped the HTTP/2 stream before END_STREAM, h2 reset it (CANCEL) and
/// soon forgot it, the END_STREAM already on its way arrived on a forgotten stream,
/// h2 answered with a library reset (STREAM_CLOSED), and after 1,024 of those the
/// simulator closed the connection with `too_many_internal_resets`: bench/tunnel's
/// failure under load, where the connector is slow to see the resets.
#[tokio::test]
async fn content_length_responses_with_a_late_end_stream_keep_the_connection() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let relay = delaying_relay(sim.h2_addrs()[0], Duration::from_millis(30)).await;
        let mut config = tunnel_config_h2(&sim);
        config.ha_connections = 1;
        config.h2_edges = Some(vec![relay]);
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(handler(&echo));
        tunnel.wait_registered(1).await.unwrap();
        let addr = sim.http_addr();
        const CLIENTS: u32 = 48;
        const REQUESTS: u32 = 48;
        let mut clients = tokio::task::JoinSet::new();
        for client in 0..CLIENTS {
            clients.spawn(async move {
                for i in 0..REQUESTS {
                    let n = 100 + (client * REQUESTS + i) % 400;
                    let got = get(addr, &format!("/late-end?n={n}")).await;
                    assert_eq!(
                        got.status,
                        StatusCode::OK,
                        "client {client} request {i}: {got:?}"
                    );
                    assert_eq!(got.body.unwrap().len(), n as usize);
                }
            });
        }
        while let Some(result) = clients.join_next().await {
            result.unwrap();
        }
        let status = sim.status();
        assert_eq!(status.registered(), 1, "{status:#?}");
        assert_eq!(status.connections.len(), 1, "{status:#?}");
        let streams: u64 = status.connections.iter().map(|c| c.streams).sum();
        assert_eq!(streams, u64::from(CLIENTS * REQUESTS), "{status:#?}");
        down(tunnel, sim).await;
    })
    .await;
}
