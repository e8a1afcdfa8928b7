//! Edge discovery against a DNS server of the test's own on loopback
//! (`support::dns`): SRV and A/AAAA records, the region prefix, the region host
//! name fallback, truncation to TCP, refusals; then a tunnel that finds the edge
//! simulator through SRV records and spreads four connections over both regions.
#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

mod support;

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use culvert_connector::Error;
use culvert_connector::discovery::{
    DiscoveryConfig, EdgeRegions, IpVersion, Resolver, ResolverConfig, discover,
};
use culvert_connector::io::{ConnectionState, Transport, Tunnel};
use culvert_edge_sim::{EdgeSim, SimConfig};
use support::dns::{Data, DnsServer, Mode};
use support::*;

const SRV: &str = "_v2-origintunneld._tcp.argotunnel.com";

fn resolver_config(server: &DnsServer) -> ResolverConfig {
    ResolverConfig {
        nameservers: vec![server.addr],
        timeout: Duration::from_secs(2),
        attempts: 1,
    }
}

fn resolver(server: &DnsServer) -> Resolver {
    Resolver::new(resolver_config(server))
}

fn a(last: u8) -> Data {
    Data::A(Ipv4Addr::new(127, 0, 0, last))
}

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, last], port))
}

/// SRV for two targets on ports 7844 and 7845, two and one A records, one AAAA.
fn two_regions(srv: &'static str) -> Vec<(&'static str, Data)> {
    vec![
        (
            srv,
            Data::Srv {
                port: 7844,
                target: "region1.edge.test",
            },
        ),
        (
            srv,
            Data::Srv {
                port: 7845,
                target: "region2.edge.test",
            },
        ),
        ("region1.edge.test", a(1)),
        ("region1.edge.test", a(2)),
        ("region2.edge.test", a(3)),
        ("region2.edge.test", Data::Aaaa("::1".parse().unwrap())),
    ]
}

async fn discover_with(server: &DnsServer, region: Option<&str>, ip: IpVersion) -> EdgeRegions {
    discover(&resolver(server), region, ip).await.unwrap()
}

#[tokio::test]
async fn srv_and_address_records_give_two_regions() {
    let server = DnsServer::start(two_regions(SRV), Mode::Normal).await;
    let found = discover_with(&server, None, IpVersion::Auto).await;
    assert_eq!(
        found.regions,
        vec![
            vec![addr(1, 7844), addr(2, 7844)],
            vec![addr(3, 7845), "[::1]:7845".parse().unwrap()],
        ]
    );
    assert!(!found.fallback);
    assert_eq!(found.ttl, Duration::from_secs(60));
    let seen = server.seen();
    assert_eq!(seen[0].name, SRV.to_ascii_lowercase());
    assert_eq!(seen[0].rtype, 33);
    assert!(seen.iter().all(|s| !s.tcp), "{seen:?}");

    // Every query has its own random ID and source port.
    let ids: BTreeSet<u16> = seen.iter().map(|s| s.id).collect();
    let ports: BTreeSet<u16> = seen.iter().map(|s| s.port).collect();
    assert!(seen.len() >= 4, "{seen:?}");
    assert!(ids.len() > 1 && ports.len() > 1, "{seen:?}");

    let v4 = discover_with(&server, None, IpVersion::V4).await;
    assert_eq!(v4.regions[1], vec![addr(3, 7845)]);
    assert!(server.seen().iter().skip(seen.len()).all(|s| s.rtype != 28));
}

#[tokio::test]
async fn the_region_prefixes_the_srv_service() {
    let server = DnsServer::start(
        two_regions("_us-v2-origintunneld._tcp.argotunnel.com"),
        Mode::Normal,
    )
    .await;
    let found = discover_with(&server, Some("us"), IpVersion::V4).await;
    assert_eq!(found.regions.len(), 2);
    assert_eq!(
        server.seen()[0].name,
        "_us-v2-origintunneld._tcp.argotunnel.com"
    );
    // Without the region, the unprefixed name does not exist here: the fallback
    // host names are asked, and they do not exist either.
    let error = discover(&resolver(&server), None, IpVersion::V4)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("region1.v2.argotunnel.com"),
        "{error}"
    );
}

#[tokio::test]
async fn fewer_than_two_srv_records_is_a_clear_error() {
    let mut records = two_regions(SRV);
    records.remove(1);
    let server = DnsServer::start(records, Mode::Normal).await;
    let error = discover(&resolver(&server), None, IpVersion::Auto)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Discovery(_)), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("1 usable srv record") && text.contains("at least 2"),
        "{text}"
    );
}

#[tokio::test]
async fn a_failed_srv_look_up_falls_back_to_the_region_host_names() {
    let server = DnsServer::start(
        vec![
            ("us-region1.v2.argotunnel.com", a(5)),
            ("us-region2.v2.argotunnel.com", a(6)),
        ],
        Mode::Normal,
    )
    .await;
    let found = discover_with(&server, Some("us"), IpVersion::V4).await;
    assert!(found.fallback);
    assert_eq!(
        found.regions,
        vec![vec![addr(5, 7844)], vec![addr(6, 7844)]]
    );
}

#[tokio::test]
async fn a_truncated_udp_answer_is_asked_again_over_tcp() {
    let server = DnsServer::start(two_regions(SRV), Mode::TruncateUdp).await;
    let found = discover_with(&server, None, IpVersion::V4).await;
    assert_eq!(found.regions[0], vec![addr(1, 7844), addr(2, 7844)]);
    let seen = server.seen();
    assert!(seen.iter().any(|s| s.tcp && s.rtype == 33), "{seen:?}");
    assert!(seen.iter().any(|s| !s.tcp && s.rtype == 33), "{seen:?}");
}

#[tokio::test]
async fn a_malformed_answer_is_an_error() {
    let server = DnsServer::start(two_regions(SRV), Mode::Malformed).await;
    let error = discover(&resolver(&server), None, IpVersion::V4)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("malformed dns message"),
        "{error}"
    );
}

#[tokio::test]
async fn a_server_failure_names_the_nameserver() {
    let server = DnsServer::start(two_regions(SRV), Mode::ServFail).await;
    let error = discover(&resolver(&server), None, IpVersion::V4)
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("server failure") && text.contains(&server.addr.to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn a_silent_nameserver_times_out_after_every_attempt() {
    // A socket that never answers.
    let silent = tokio::net::UdpSocket::bind(addr(1, 0)).await.unwrap();
    let resolver = Resolver::new(ResolverConfig {
        nameservers: vec![silent.local_addr().unwrap()],
        timeout: Duration::from_millis(100),
        attempts: 2,
    });
    let error = discover(&resolver, None, IpVersion::V4).await.unwrap_err();
    assert!(error.to_string().contains("no answer within"), "{error}");
    // Two attempts of the SRV query and of each fallback A query.
    let mut buf = [0u8; 512];
    let mut queries = 0;
    while let Ok((_, _)) = silent.try_recv_from(&mut buf) {
        queries += 1;
    }
    assert_eq!(queries, 4, "{error}");
}

/// A simulator listening on 127.0.0.1 and 127.0.0.2 at two ports, for QUIC (UDP)
/// and HTTP/2 (TCP) on the same addresses, as the edge does: `(sim, [port1, port2])`.
async fn start_sim_on_two_ports() -> (EdgeSim, [u16; 2]) {
    for _ in 0..10 {
        let Some(ports) = two_free_ports() else {
            continue;
        };
        let addrs: Vec<SocketAddr> = ports
            .iter()
            .flat_map(|&port| [addr(1, port), addr(2, port)])
            .collect();
        if let Ok(sim) = EdgeSim::start(SimConfig {
            quic: addrs.clone(),
            h2: addrs,
            ..SimConfig::loopback()
        })
        .await
        {
            return (sim, ports);
        }
    }
    panic!("no free udp ports on 127.0.0.1 and 127.0.0.2");
}

/// Two ports free for UDP and TCP on both 127.0.0.1 and 127.0.0.2 (for the moment).
fn two_free_ports() -> Option<[u16; 2]> {
    let mut held = Vec::new();
    let mut ports = [0u16; 2];
    for port in &mut ports {
        let first = std::net::UdpSocket::bind(addr(1, 0)).ok()?;
        let p = first.local_addr().ok()?.port();
        let second = std::net::UdpSocket::bind(addr(2, p)).ok()?;
        let tcp1 = std::net::TcpListener::bind(addr(1, p)).ok()?;
        let tcp2 = std::net::TcpListener::bind(addr(2, p)).ok()?;
        held.push((first, second, tcp1, tcp2));
        *port = p;
    }
    Some(ports)
}

/// SRV records for two regions, `port1` and `port2`, each target with the
/// addresses 127.0.0.1 and 127.0.0.2.
fn edge_records(port1: u16, port2: u16) -> Vec<(&'static str, Data)> {
    vec![
        (
            SRV,
            Data::Srv {
                port: port1,
                target: "region1.edge.test",
            },
        ),
        (
            SRV,
            Data::Srv {
                port: port2,
                target: "region2.edge.test",
            },
        ),
        ("region1.edge.test", a(1)),
        ("region1.edge.test", a(2)),
        ("region2.edge.test", a(1)),
        ("region2.edge.test", a(2)),
    ]
}

mod a_discovered_tunnel_spreads_four_connections_over_both_regions {
    use culvert_connector::io::Transport;

    #[tokio::test]
    async fn quic() {
        super::a_discovered_tunnel_spreads_four_connections_over_both_regions(Transport::Quic)
            .await;
    }

    #[tokio::test]
    async fn http2() {
        super::a_discovered_tunnel_spreads_four_connections_over_both_regions(Transport::Http2)
            .await;
    }

    /// `Auto` starts on QUIC; this checks a discovered tunnel accepts it.
    #[tokio::test]
    async fn auto() {
        super::a_discovered_tunnel_spreads_four_connections_over_both_regions(Transport::Auto)
            .await;
    }
}

async fn a_discovered_tunnel_spreads_four_connections_over_both_regions(transport: Transport) {
    local(async {
        let (sim, [port1, port2]) = start_sim_on_two_ports().await;
        let server = DnsServer::start(edge_records(port1, port2), Mode::Normal).await;
        let mut config = tunnel_config(&sim);
        config.edges = Vec::new();
        config.transport = transport;
        config.discovery = DiscoveryConfig {
            ip_version: IpVersion::V4,
            resolver: Some(resolver_config(&server)),
            ..DiscoveryConfig::default()
        };
        let tunnel = Tunnel::new(config).unwrap();
        assert_eq!(tunnel.connection_indices(), 0..4);
        let echo = Rc::new(Echo::default());
        tunnel.spawn_all_local(handler(&echo));
        tunnel.wait_registered(4).await.unwrap();
        wait_sim(&sim, "4 registrations", |s| s.registered() == 4).await;

        let status = tunnel.status().borrow().clone();
        let mut edges = BTreeSet::new();
        for c in &status.connections {
            assert!(
                matches!(c.state, ConnectionState::Registered { .. }),
                "{c:?}"
            );
            let edge = c.edge.unwrap();
            // connIndex i prefers region i mod 2: region 1 is port1, region 2 port2.
            let want = if c.conn_index % 2 == 0 { port1 } else { port2 };
            assert_eq!(edge.port(), want, "{c:?}");
            edges.insert(edge);
        }
        assert_eq!(edges.len(), 4, "one address per connection: {edges:?}");
        let listeners: BTreeSet<_> = sim
            .status()
            .connections
            .iter()
            .map(|c| c.listener)
            .collect();
        assert_eq!(listeners, edges);
        // One SRV look-up: the addresses were fresh for every later connection.
        let srv_queries = server.seen().iter().filter(|s| s.rtype == 33).count();
        assert_eq!(srv_queries, 1);

        let got = get(sim.http_addr(), "/hello").await;
        assert_eq!(got.status, http::StatusCode::OK);
        down(tunnel, sim).await;
    })
    .await;
}

#[tokio::test]
async fn a_region_and_a_token_endpoint_together_are_refused() {
    let sim = start_sim().await;
    let mut config = tunnel_config(&sim);
    config.edges = Vec::new();
    config.token.endpoint = Some("fed".into());
    config.discovery.region = Some("us".into());
    let error = Tunnel::new(config).unwrap_err();
    assert!(
        error.to_string().contains("token already names one"),
        "{error}"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn a_connection_that_must_move_resolves_again() {
    local(async {
        let (sim, [port1, port2]) = start_sim_on_two_ports().await;
        // First the records name a port where nothing listens.
        let closed = {
            let listener = std::net::TcpListener::bind(addr(1, 0)).unwrap();
            listener.local_addr().unwrap().port()
        };
        let server = DnsServer::start(edge_records(closed, closed), Mode::Normal).await;
        let mut config = tunnel_config(&sim);
        config.edges = Vec::new();
        config.transport = Transport::Http2;
        config.discovery = DiscoveryConfig {
            ip_version: IpVersion::V4,
            resolver: Some(resolver_config(&server)),
            refresh_after: Duration::ZERO,
            ..DiscoveryConfig::default()
        };
        let tunnel = Tunnel::new(config).unwrap();
        let echo = Rc::new(Echo::default());
        tunnel.spawn_all_local(handler(&echo));
        let mut status = tunnel.status();
        status
            .wait_for(|s| s.connections[0].attempts >= 1)
            .await
            .unwrap();
        let failed_edge = status.borrow().connections[0].edge.unwrap();
        assert_eq!(failed_edge.port(), closed);
        let before = server.seen().iter().filter(|s| s.rtype == 33).count();

        // Then they name the simulator: the next address comes from a new look-up.
        server.set_records(edge_records(port1, port2));
        tunnel.wait_registered(4).await.unwrap();
        let after = server.seen().iter().filter(|s| s.rtype == 33).count();
        assert!(after > before, "{before} srv look-ups, then {after}");
        let edges: BTreeSet<_> = tunnel
            .status()
            .borrow()
            .connections
            .iter()
            .map(|c| c.edge.unwrap())
            .collect();
        assert_eq!(edges.len(), 4);
        assert!(edges.iter().all(|e| e.port() != closed), "{edges:?}");
        down(tunnel, sim).await;
    })
    .await;
}
