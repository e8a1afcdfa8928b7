//! End-to-end tests over real loopback QUIC: the in-process edge simulator, the
//! connector's QUIC driver, and a test origin behind a `TunnelHandler`.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use culvert_connector::io::{ConnectionState, Tunnel};
use culvert_connector::proto::{RegistrationError, TunnelToken};
use culvert_connector::sim::{EdgeSim, SimConfig, SimConnectionState};
use http::{Request, StatusCode};
use support::*;

/// Starts a tunnel for `sim` serving with `echo`, all four indices on this thread,
/// and waits for four registrations.
async fn up(sim: &EdgeSim, echo: &Rc<Echo>) -> Tunnel {
    let tunnel = Tunnel::new(tunnel_config(sim)).unwrap();
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
async fn registers_four_connections_on_four_addresses() {
    local(async {
        let sim = start_sim().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        assert_eq!(tunnel.registered(), 4);
        let status = sim.status();
        let indices: BTreeSet<u8> = status
            .connections
            .iter()
            .filter_map(|c| c.conn_index)
            .collect();
        assert_eq!(indices, BTreeSet::from([0, 1, 2, 3]));
        let listeners: BTreeSet<_> = status.connections.iter().map(|c| c.listener).collect();
        assert_eq!(listeners.len(), 4, "one connection per edge address");
        let client = tunnel.client_id().to_string();
        for c in &status.connections {
            assert_eq!(c.client_id.as_deref(), Some(client.as_str()));
            assert!(c.features.iter().any(|f| f == "serialized_headers"));
            assert!(c.connection_id.is_some());
        }
        // connIndex 0 of a locally managed tunnel sends its configuration.
        wait_sim(&sim, "local config on connIndex 0", |s| {
            s.connections
                .iter()
                .any(|c| c.conn_index == Some(0) && c.local_config.is_some())
        })
        .await;
        assert!(
            status
                .events
                .iter()
                .any(|e| e.contains("registered connIndex 0"))
        );
        let tunnel_status = tunnel.status().borrow().clone();
        for c in &tunnel_status.connections {
            assert!(
                matches!(c.state, ConnectionState::Registered { .. }),
                "{c:?}"
            );
        }
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn get_and_post_go_through_the_tunnel() {
    local(async {
        let sim = start_sim().await;
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
        assert!(got.headers.contains_key("x-conn-index"));

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

        // Round robin: four GETs land on four different connections.
        let mut seen = BTreeSet::new();
        for _ in 0..4 {
            let got = get(addr, "/hello").await;
            seen.insert(got.headers["x-conn-index"].to_str().unwrap().to_owned());
        }
        assert_eq!(seen.len(), 4, "{seen:?}");

        let got = get(addr, "/missing").await;
        assert_eq!(got.status, StatusCode::NOT_FOUND);
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn large_bodies_stream_both_ways() {
    local(async {
        let sim = start_sim().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        let addr = sim.http_addr();
        large_bodies_scenario(addr).await;
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn websocket_frames_are_echoed() {
    local(async {
        let sim = start_sim().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        websocket_echo_scenario(sim.http_addr(), 70_000).await;
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn two_hundred_concurrent_requests() {
    local(async {
        let sim = start_sim().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        let addr = sim.http_addr();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..200u32 {
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
        assert_eq!(done, 200);
        let streams: u64 = sim.status().connections.iter().map(|c| c.streams).sum();
        assert_eq!(streams, 200);
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn handler_errors_become_connect_errors_and_late_errors_reset() {
    local(async {
        let sim = start_sim().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        let got = get(sim.http_addr(), "/fail").await;
        assert_eq!(got.status, StatusCode::BAD_GATEWAY);
        let body = got.body.unwrap();
        assert!(
            std::str::from_utf8(&body)
                .unwrap()
                .contains("connector error: origin unreachable (test)"),
            "{body:?}"
        );
        // After the head, a body failure resets the stream: the client sees a
        // 200 whose (chunked) body breaks off.
        let got = get(sim.http_addr(), "/reset").await;
        assert_eq!(got.status, StatusCode::OK);
        assert!(got.body.is_err(), "{:?}", got.body);
        // The tunnel keeps serving.
        assert_eq!(get(sim.http_addr(), "/hello").await.status, StatusCode::OK);
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn drain_finishes_in_flight_requests_and_takes_no_new_ones() {
    local(async {
        let sim = start_sim().await;
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
        // Every connection unregisters; the simulator stops using them at once.
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
        assert_eq!(
            refused.status,
            StatusCode::BAD_GATEWAY,
            "no new streams after unregister"
        );
        let streams_before: u64 = sim.status().connections.iter().map(|c| c.streams).sum();
        assert_eq!(streams_before, 8);
        // The unregister replies wait for the in-flight streams.
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
async fn reconnects_after_the_simulator_restarts() {
    local(async {
        let sim = start_sim().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo).await;
        assert_eq!(get(sim.http_addr(), "/hello").await.status, StatusCode::OK);
        let config = SimConfig {
            quic: sim.quic_addrs().to_vec(),
            http: sim.http_addr(),
            token: Some(sim.token().clone()),
            ca: Some(sim.ca().clone()),
            ..SimConfig::loopback()
        };
        sim.shutdown().await;
        let mut status = tunnel.status();
        status.wait_for(|s| s.registered() == 0).await.unwrap();
        let sim = EdgeSim::start(config).await.unwrap();
        tunnel.wait_registered(4).await.unwrap();
        wait_sim(&sim, "4 registrations after restart", |s| {
            s.registered() == 4
        })
        .await;
        let got = get(sim.http_addr(), "/hello").await;
        assert_eq!(got.status, StatusCode::OK);
        // Each reconnect came after at least one backoff delay: the connector reports
        // its retries in `numPreviousAttempts`.
        let status = sim.status();
        assert!(
            status
                .connections
                .iter()
                .all(|c| c.num_previous_attempts >= Some(1)),
            "{:#?}",
            status.connections
        );
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn a_wrong_secret_stops_the_tunnel_with_a_clear_error() {
    local(async {
        let sim = start_sim().await;
        let mut config = tunnel_config(&sim);
        config.token.tunnel_secret = b"not the secret".to_vec();
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(handler(&Rc::new(Echo::default())));
        let error = tunnel.closed().await.unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("connection 0 could not register"),
            "{message}"
        );
        assert!(
            message.contains("tunnel secret does not match"),
            "{message}"
        );
        match error {
            culvert_connector::Error::Registration {
                conn_index: 0,
                error: RegistrationError::Permanent { .. },
            } => {}
            other => panic!("unexpected {other:?}"),
        }
        // Nothing else was started, nothing registered.
        assert!(tunnel.status().borrow().failure.is_some());
        assert_eq!(sim.status().registered(), 0);
        sim.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_malformed_token_is_refused_with_a_clear_error() {
    let error = TunnelToken::parse("this is not a token").unwrap_err();
    assert_eq!(error.to_string(), "tunnel token is not valid base64");
    let error = TunnelToken::parse("e30=").unwrap_err(); // base64 of "{}"
    assert_eq!(error.to_string(), "tunnel token is missing field `a`");
}

#[tokio::test]
async fn a_duplicate_connection_moves_to_another_address() {
    local(async {
        let sim = start_sim().await;
        // The first connector holds connIndex 0 on the first address.
        let mut first = tunnel_config(&sim);
        first.ha_connections = 1;
        first.edges = vec![sim.quic_addrs()[0]];
        let first = Tunnel::new(first).unwrap();
        first.spawn_all_local(handler(&Rc::new(Echo::default())));
        first.wait_registered(1).await.unwrap();
        // A second one with the same client ID and index starts there too: EDUPCONN,
        // then it moves to the other address and registers.
        let mut second = tunnel_config(&sim);
        second.ha_connections = 1;
        second.client_id = Some(first.client_id());
        second.edges = vec![sim.quic_addrs()[0], sim.quic_addrs()[1]];
        let second = Tunnel::new(second).unwrap();
        second.spawn_all_local(handler(&Rc::new(Echo::default())));
        second.wait_registered(1).await.unwrap();
        let status = second.status().borrow().clone();
        assert_eq!(status.connections[0].edge, Some(sim.quic_addrs()[1]));
        let events = sim.status().events;
        assert!(
            events
                .iter()
                .any(|e| e.contains("refused connIndex 0: EDUPCONN")),
            "{events:#?}"
        );
        first.shutdown();
        second.shutdown();
        first.closed().await.unwrap();
        second.closed().await.unwrap();
        sim.shutdown().await;
    })
    .await;
}
