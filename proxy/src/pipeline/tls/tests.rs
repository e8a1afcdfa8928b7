//! Table-driven tests of where TLS connections go by their ClientHello's name.

use std::net::SocketAddr;

use culvert_router::config::DataPlaneConfig;
use culvert_router::{RouteTable, RouteTableBuilder};

use super::{TlsPlan, TlsRefusal, plan_tls};
use crate::pipeline::{BackendFailure, ConnectionInfo};

/// The client side of every planned connection (routing never looks at it).
fn client() -> SocketAddr {
    SocketAddr::from(([192, 0, 2, 7], 5000))
}

/// Port 443 shared by an `HTTPS` listener for `www.example`, a terminating `TLS`
/// listener for `mqtt.example` and a passthrough listener for `*.example` with an
/// exact and a wildcard route; port 8443 a
/// passthrough listener without a hostname whose only route has none either; port
/// 9443 routes whose backends cannot be used.
fn table() -> RouteTable {
    let config: DataPlaneConfig = serde_json::from_value(serde_json::json!({
        "version": 1,
        "listeners": [
            {"name": "web", "port": 443, "protocol": "HTTPS", "hostname": "www.example",
             "tls": {"certificateRefs": [{"namespace": "ns", "name": "www"}]}},
            {"name": "pass", "port": 443, "protocol": "TLS", "hostname": "*.example"},
            {"name": "stream", "port": 443, "protocol": "TLS", "hostname": "mqtt.example",
             "tls": {"mode": "Terminate",
                     "certificateRefs": [{"namespace": "ns", "name": "mqtt"}]}},
            {"name": "any", "port": 8443, "protocol": "TLS"},
            {"name": "broken", "port": 9443, "protocol": "TLS"}
        ],
        "tlsRoutes": [
            {"namespace": "ns", "name": "mqtt", "listeners": ["stream"],
             "backends": [{"name": "broker", "endpoints": ["10.0.0.9:1883"]}]},
            {"namespace": "ns", "name": "db", "listeners": ["pass"],
             "hostnames": ["db.example"],
             "backends": [{"name": "db", "endpoints": ["10.0.0.1:5432"]}]},
            {"namespace": "ns", "name": "apps", "listeners": ["pass"],
             "hostnames": ["*.apps.example"],
             "backends": [{"name": "apps", "endpoints": ["10.0.0.2:8443"]}]},
            {"namespace": "ns", "name": "default", "listeners": ["any"],
             "backends": [{"name": "fallback", "endpoints": ["10.0.0.3:8443"]}]},
            {"namespace": "ns", "name": "empty", "listeners": ["broken"],
             "hostnames": ["empty.example"],
             "backends": [{"name": "none", "endpoints": []}]},
            {"namespace": "ns", "name": "invalid", "listeners": ["broken"],
             "hostnames": ["invalid.example"],
             "backends": [{"name": "bad", "unavailable": "InvalidReference"}]}
        ]
    }))
    .unwrap();
    RouteTableBuilder::new().build(&config).unwrap()
}

/// What a plan comes to, with the route named.
#[derive(Debug, PartialEq, Eq)]
enum Expected {
    Http,
    /// Route, endpoint, whether TLS is terminated here.
    Forward(String, Result<String, BackendFailure>, bool),
    Refuse(TlsRefusal),
}

/// Passed through to `route`'s `endpoint`.
fn splice(route: &str, endpoint: Result<&str, BackendFailure>) -> Expected {
    Expected::Forward(route.to_owned(), endpoint.map(str::to_owned), false)
}

/// Terminated here, the stream to `route`'s `endpoint`.
fn terminated(route: &str, endpoint: &str) -> Expected {
    Expected::Forward(route.to_owned(), Ok(endpoint.to_owned()), true)
}

fn observed(table: &RouteTable, plan: TlsPlan) -> Expected {
    match plan {
        TlsPlan::Http => Expected::Http,
        TlsPlan::Refuse(why) => Expected::Refuse(why),
        TlsPlan::Forward(forward) => Expected::Forward(
            table.route_info(forward.route).unwrap().name.to_string(),
            forward.endpoint.map(|addr| addr.to_string()),
            forward.terminate,
        ),
    }
}

#[test]
fn connections_go_where_their_server_name_says() {
    let table = table();
    let cases: &[(u16, Option<&str>, Expected)] = &[
        // The terminating listener's own name on the shared port.
        (443, Some("www.example"), Expected::Http),
        (443, Some("WWW.Example"), Expected::Http),
        // The terminating TLS listener's name: its stream to the route's backend.
        (
            443,
            Some("mqtt.example"),
            terminated("mqtt", "10.0.0.9:1883"),
        ),
        // Exact, then wildcard routes of the passthrough listener.
        (443, Some("db.example"), splice("db", Ok("10.0.0.1:5432"))),
        (
            443,
            Some("x.apps.example"),
            splice("apps", Ok("10.0.0.2:8443")),
        ),
        // The listener owns the name but no route does.
        (
            443,
            Some("other.example"),
            Expected::Refuse(TlsRefusal::NoRoute),
        ),
        // No listener owns the name, or no name was sent on a port whose
        // listeners all have hostnames.
        (
            443,
            Some("elsewhere.test"),
            Expected::Refuse(TlsRefusal::NoListener),
        ),
        (443, None, Expected::Refuse(TlsRefusal::NoListener)),
        // Without a name, the listener and route without hostnames take it.
        (8443, None, splice("default", Ok("10.0.0.3:8443"))),
        (
            8443,
            Some("anything.test"),
            splice("default", Ok("10.0.0.3:8443")),
        ),
        // Unusable backends fail closed, named for the metrics.
        (
            9443,
            Some("empty.example"),
            splice("empty", Err(BackendFailure::NoEndpoints)),
        ),
        (
            9443,
            Some("invalid.example"),
            splice("invalid", Err(BackendFailure::InvalidBackend)),
        ),
        // Nothing listens on the port.
        (
            9999,
            Some("db.example"),
            Expected::Refuse(TlsRefusal::NoListener),
        ),
    ];
    for (port, name, expected) in cases {
        let local = SocketAddr::from(([127, 0, 0, 1], *port));
        let bound = SocketAddr::from(([0, 0, 0, 0], *port));
        let connection = ConnectionInfo::new(client(), local, bound);
        let plan = plan_tls(&table, &connection, *name, 7);
        assert_eq!(
            &observed(&table, plan),
            expected,
            "port {port}, name {name:?}"
        );
    }
}

#[test]
fn weighted_backends_share_passthrough_connections() {
    let config: DataPlaneConfig = serde_json::from_value(serde_json::json!({
        "version": 1,
        "listeners": [{"name": "pass", "port": 443, "protocol": "TLS"}],
        "tlsRoutes": [{"namespace": "ns", "name": "split", "listeners": ["pass"],
            "backends": [
                {"name": "a", "weight": 3, "endpoints": ["10.0.0.1:443"]},
                {"name": "b", "weight": 1, "endpoints": ["10.0.0.2:443", "10.0.0.3:443"]}
            ]}]
    }))
    .unwrap();
    let table = RouteTableBuilder::new().build(&config).unwrap();
    let local = SocketAddr::from(([127, 0, 0, 1], 443));
    let connection = ConnectionInfo::new(client(), local, local);
    let mut seen = std::collections::BTreeMap::<String, u32>::new();
    let mut random = 1u64;
    for _ in 0..4000 {
        // xorshift64: spread enough for a weight check.
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        let TlsPlan::Forward(splice) = plan_tls(&table, &connection, Some("x.test"), random) else {
            panic!("not spliced");
        };
        *seen
            .entry(splice.endpoint.unwrap().to_string())
            .or_default() += 1;
    }
    let a = seen["10.0.0.1:443"];
    let (b2, b3) = (seen["10.0.0.2:443"], seen["10.0.0.3:443"]);
    // 3:1 between the backends, and b's two endpoints share its part.
    assert!((2800..3200).contains(&a), "{seen:?}");
    assert!(
        (350..650).contains(&b2) && (350..650).contains(&b3),
        "{seen:?}"
    );
}
