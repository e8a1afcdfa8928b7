//! End-to-end tests over real loopback transports: the in-process edge simulator,
//! the connector's QUIC driver (UDP) and HTTP/2 driver (TCP + TLS, the simulator's
//! `--h2` listeners), and a test origin behind a `TunnelHandler`. Each behaviour
//! both transports share is one test body run once per transport (`<name>::quic`,
//! `<name>::http2`); then the tests of one transport only, and `Transport::Auto`
//! falling back from QUIC to HTTP/2.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::collections::BTreeSet;
use std::future::Future;
use std::net::{SocketAddr, UdpSocket};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use culvert_connector::io::{BackoffConfig, ConnectionState, Transport, Tunnel, TunnelConfig};
use culvert_connector::proto::{RegistrationError, TunnelToken};
use culvert_edge_sim::{EdgeSim, SimConfig, SimConnectionState, SimTransport};
use http::{Request, StatusCode};
use support::*;

/// For each behaviour `name`, an `async fn name(transport: Transport)` in this file,
/// stamps out a module `name` with two tests: `quic` and `http2`.
macro_rules! on_both_transports {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            use culvert_connector::io::Transport;

            #[tokio::test]
            async fn quic() {
                super::$name(Transport::Quic).await;
            }

            #[tokio::test]
            async fn http2() {
                super::$name(Transport::Http2).await;
            }
        }
    )+};
}

on_both_transports!(
    registers_four_connections_on_four_addresses,
    get_and_post_go_through_the_tunnel,
    large_bodies_stream_both_ways,
    websocket_frames_are_echoed,
    concurrent_requests,
    handler_errors_become_connect_errors_and_late_errors_reset,
    drain_finishes_in_flight_requests_and_takes_no_new_ones,
    a_wrong_secret_stops_the_tunnel_with_a_clear_error,
    streams_past_the_limit_wait_for_a_free_one,
    the_front_door_adds_what_the_edge_adds,
);

async fn registers_four_connections_on_four_addresses(transport: Transport) {
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, transport).await;
        assert_eq!(tunnel.registered(), 4);
        let status = sim.status();
        let indices: BTreeSet<u8> = status
            .connections
            .iter()
            .filter_map(|c| c.conn_index)
            .collect();
        assert_eq!(indices, BTreeSet::from([0, 1, 2, 3]));
        let listeners: BTreeSet<_> = status.connections.iter().map(|c| c.listener).collect();
        assert_eq!(
            listeners.len(),
            4,
            "one connection per edge address: {:#?}",
            status.connections
        );
        let client = tunnel.client_id().to_string();
        for c in &status.connections {
            assert_eq!(c.transport, sim_transport(transport), "{c:?}");
            assert!(edge_addrs(&sim, transport).contains(&c.listener), "{c:?}");
            assert_eq!(c.state, SimConnectionState::Registered);
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
            assert_eq!(c.transport, Some(transport));
        }
        down(tunnel, sim).await;
    })
    .await;
}

async fn get_and_post_go_through_the_tunnel(transport: Transport) {
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, transport).await;
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
        // Response headers came back (over HTTP/2, through the serialized header).
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

async fn large_bodies_stream_both_ways(transport: Transport) {
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, transport).await;
        large_bodies_scenario(sim.http_addr()).await;
        down(tunnel, sim).await;
    })
    .await;
}

async fn websocket_frames_are_echoed(transport: Transport) {
    // The large frame spans many QUIC packets, or many HTTP/2 DATA frames.
    let large = match transport {
        Transport::Quic => 70_000,
        _ => 200_000,
    };
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, transport).await;
        websocket_echo_scenario(sim.http_addr(), large).await;
        down(tunnel, sim).await;
    })
    .await;
}

/// Two hundred concurrent requests over QUIC, a hundred over HTTP/2.
async fn concurrent_requests(transport: Transport) {
    let count: u32 = match transport {
        Transport::Quic => 200,
        _ => 100,
    };
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, transport).await;
        let addr = sim.http_addr();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..count {
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
        assert_eq!(done, count);
        let streams: u64 = sim.status().connections.iter().map(|c| c.streams).sum();
        assert_eq!(streams, u64::from(count));
        down(tunnel, sim).await;
    })
    .await;
}

async fn handler_errors_become_connect_errors_and_late_errors_reset(transport: Transport) {
    // QUIC's connect response carries the handler's error; over HTTP/2 the edge
    // only learns that the 502 is the connector's own (`{"src":"cloudflared"}`).
    let error = match transport {
        Transport::Quic => "connector error: origin unreachable (test)",
        _ => "connector error",
    };
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, transport).await;
        let got = get(sim.http_addr(), "/fail").await;
        assert_eq!(got.status, StatusCode::BAD_GATEWAY);
        let body = got.body.unwrap();
        assert!(
            std::str::from_utf8(&body).unwrap().contains(error),
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

async fn drain_finishes_in_flight_requests_and_takes_no_new_ones(transport: Transport) {
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, transport).await;
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

/// A connection takes at most `max_concurrent_streams` request streams at once
/// (QUIC's stream credit, HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS less the control
/// stream): the edge's further
/// requests wait for a stream to end instead of reaching the origin, and are
/// served once they do.
async fn streams_past_the_limit_wait_for_a_free_one(transport: Transport) {
    local(async {
        let sim = start_sim_for(transport).await;
        let echo = Rc::new(Echo::default());
        let mut config = tunnel_config_for(&sim, transport);
        config.ha_connections = 1;
        config.max_concurrent_streams = 4;
        let tunnel = Tunnel::new(config).unwrap();
        tunnel.spawn_all_local(handler(&echo));
        tunnel.wait_registered(1).await.unwrap();
        let addr = sim.http_addr();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..10 {
            tasks.spawn(async move { get(addr, "/slow").await });
        }
        while echo.slow_started.get() < 4 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The other six are sent and wait at the edge, not at the origin.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(echo.slow_started.get(), 4);
        echo.release();
        let mut ok = 0;
        while let Some(got) = tasks.join_next().await {
            let got = got.unwrap();
            assert_eq!(got.status, StatusCode::OK, "{:?}", got.body);
            ok += 1;
        }
        assert_eq!(ok, 10);
        assert_eq!(echo.slow_started.get(), 10);
        assert_eq!(tunnel.registered(), 1);
        down(tunnel, sim).await;
    })
    .await;
}

async fn a_wrong_secret_stops_the_tunnel_with_a_clear_error(transport: Transport) {
    local(async {
        let sim = start_sim_for(transport).await;
        let mut config = tunnel_config_for(&sim, transport);
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

// QUIC only.

#[tokio::test]
async fn quic_reconnects_after_the_simulator_restarts() {
    local(async {
        let sim = start_sim().await;
        let echo = Rc::new(Echo::default());
        let tunnel = up(&sim, &echo, Transport::Quic).await;
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
async fn quic_duplicate_connection_moves_to_another_address() {
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

// HTTP/2 only.

/// Runs `clients` concurrent clients, each sending `requests` requests built by
/// `send` (given client and request numbers) through `front`, and waits for all.
async fn concurrent_clients<F, Fut>(front: SocketAddr, clients: u32, requests: u32, send: F)
where
    F: Fn(SocketAddr, u32, u32) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        tasks.spawn(async move {
            for i in 0..requests {
                send(front, client, i).await;
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap();
    }
}

/// A tunnel of one HTTP/2 connection to `edge` (default: the simulator's first
/// `--h2` listener), registered.
async fn one_http2_connection(sim: &EdgeSim, echo: &Rc<Echo>, edge: Option<SocketAddr>) -> Tunnel {
    let mut config = tunnel_config_h2(sim);
    config.ha_connections = 1;
    if let Some(edge) = edge {
        config.h2_edges = Some(vec![edge]);
    }
    let tunnel = Tunnel::new(config).unwrap();
    tunnel.spawn_all_local(handler(echo));
    tunnel.wait_registered(1).await.unwrap();
    tunnel
}

/// 64 clients x 40 requests with bodies on one HTTP/2 connection: every answer
/// arrives and the connection stays registered.
#[tokio::test]
async fn http2_thousands_of_concurrent_requests_on_one_connection() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let tunnel = one_http2_connection(&sim, &echo, None).await;
        concurrent_clients(sim.http_addr(), 64, 40, |addr, client, i| async move {
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
        })
        .await;
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
async fn http2_content_length_responses_with_a_late_end_stream_keep_the_connection() {
    local(async {
        let sim = start_sim_h2().await;
        let echo = Rc::new(Echo::default());
        let relay = delaying_relay(sim.h2_addrs()[0], Duration::from_millis(30)).await;
        let tunnel = one_http2_connection(&sim, &echo, Some(relay)).await;
        const CLIENTS: u32 = 48;
        const REQUESTS: u32 = 48;
        concurrent_clients(
            sim.http_addr(),
            CLIENTS,
            REQUESTS,
            |addr, client, i| async move {
                let n = 100 + (client * REQUESTS + i) % 400;
                let got = get(addr, &format!("/late-end?n={n}")).await;
                assert_eq!(
                    got.status,
                    StatusCode::OK,
                    "client {client} request {i}: {got:?}"
                );
                assert_eq!(got.body.unwrap().len(), n as usize);
            },
        )
        .await;
        let status = sim.status();
        assert_eq!(status.registered(), 1, "{status:#?}");
        assert_eq!(status.connections.len(), 1, "{status:#?}");
        let streams: u64 = status.connections.iter().map(|c| c.streams).sum();
        assert_eq!(streams, u64::from(CLIENTS * REQUESTS), "{status:#?}");
        down(tunnel, sim).await;
    })
    .await;
}

// `Transport::Auto`.

/// Starts a `Transport::Auto` tunnel from `config` and waits for four
/// registrations.
async fn auto_up(mut config: TunnelConfig) -> Tunnel {
    config.transport = Transport::Auto;
    let tunnel = Tunnel::new(config).unwrap();
    tunnel.spawn_all_local(handler(&Rc::new(Echo::default())));
    tunnel.wait_registered(4).await.unwrap();
    tunnel
}

/// Asserts every connection of `tunnel` uses `transport`.
fn assert_all_on(tunnel: &Tunnel, transport: Transport) {
    for c in &tunnel.status().borrow().connections {
        assert_eq!(c.transport, Some(transport), "{c:?}");
    }
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
        config.quic_handshake_timeout = Duration::from_millis(300);
        config.backoff = BackoffConfig {
            base: Duration::from_millis(100),
            max_exponent: 2,
        };
        let tunnel = auto_up(config).await;
        wait_sim(&sim, "4 http/2 registrations", |s| s.registered() == 4).await;
        assert_all_on(&tunnel, Transport::Http2);
        for c in &tunnel.status().borrow().connections {
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
        let sim = EdgeSim::start(SimConfig {
            quic: Vec::new(),
            h2: vec![any; 4],
            ..SimConfig::loopback()
        })
        .await
        .unwrap();
        let mut config = tunnel_config(&sim);
        config.edges = sim.h2_addrs().to_vec();
        assert!(config.h2_edges.is_none());
        config.quic_handshake_timeout = Duration::from_millis(300);
        config.backoff = BackoffConfig {
            base: Duration::from_millis(100),
            max_exponent: 1,
        };
        let tunnel = auto_up(config).await;
        assert_all_on(&tunnel, Transport::Http2);
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
        let tunnel = auto_up(config).await;
        assert_all_on(&tunnel, Transport::Quic);
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

async fn the_front_door_adds_what_the_edge_adds(transport: Transport) {
    local(async {
        let sim = start_sim_for(transport).await;
        let tunnel = Tunnel::new(tunnel_config_for(&sim, transport)).unwrap();
        tunnel.spawn_all_local(Rc::new(Tagged("edge")));
        tunnel.wait_registered(4).await.unwrap();
        let mut rays = BTreeSet::new();
        for _ in 0..2 {
            let got = request(
                sim.http_addr(),
                Request::get("/")
                    .header("host", "app.test")
                    .header("x-forwarded-for", "203.0.113.9")
                    .header("cf-connecting-ip", "192.0.2.66")
                    .body(http_body_util::Empty::<Bytes>::new())
                    .unwrap(),
            )
            .await;
            assert_eq!(got.status, StatusCode::OK);
            let json: serde_json::Value = serde_json::from_slice(&got.body.unwrap()).unwrap();
            let headers = &json["headers"];
            // The client's own Cf-Connecting-IP is replaced, X-Forwarded-For appended to.
            assert_eq!(headers["cf-connecting-ip"], "127.0.0.1", "{json:#}");
            assert_eq!(headers["x-forwarded-for"], "203.0.113.9, 127.0.0.1");
            assert_eq!(headers["cf-visitor"], r#"{"scheme":"http"}"#);
            assert_eq!(headers["x-forwarded-proto"], "http");
            let ray = headers["cf-ray"].as_str().unwrap().to_owned();
            let hex = ray.strip_suffix("-SIM").unwrap();
            assert!(
                hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                "{ray}"
            );
            rays.insert(ray);
        }
        assert_eq!(rays.len(), 2, "each request gets its own ray ID");
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn the_edge_certificate_covers_the_probe_name() {
    let sim = start_sim_h2().await;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(sim.ca().cert_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = culvert_tls::crypto_provider();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    for name in ["probe.cftunnel.com", "h2.cftunnel.com", "quic.cftunnel.com"] {
        let tcp = tokio::net::TcpStream::connect(sim.h2_addrs()[0])
            .await
            .unwrap();
        let server_name = rustls_pki_types::ServerName::try_from(name).unwrap();
        connector
            .connect(server_name, tcp)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let tcp = tokio::net::TcpStream::connect(sim.h2_addrs()[0])
        .await
        .unwrap();
    let other = rustls_pki_types::ServerName::try_from("other.cftunnel.com").unwrap();
    assert!(connector.connect(other, tcp).await.is_err());
    sim.shutdown().await;
}
