//! TLSRoutes through a real data plane on loopback: connections routed by the
//! ClientHello's server name to TLS echo backends that terminate the client's TLS
//! themselves (their certificate, their view of the SNI), sharing a port with an
//! `HTTPS` listener and a `TLS` listener that terminates here and forwards the
//! decrypted stream; half-closes carried through, unknown names and non-TLS bytes
//! reset, and a connection that outlives a config swap.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use culvert_bench::{EchoBackend, EchoConfig, TcpEchoBackend, TcpEchoConfig};
use culvert_proxy::{ClientLimits, ServeConfig, Server};
use http::StatusCode;
use serde_json::{Value, json};
use support::{TestCa, free_port, metric, put_config, tls_connect};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(60);

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Two TLS echo backends (`db` for `db.example`, `apps` for `*.apps.example`), an
/// HTTP echo behind a certificate of Culvert's own for `www.example`, and a clear
/// TCP echo (`broker`) behind one for `mqtt.example`.
struct Backends {
    ca: TestCa,
    db: TcpEchoBackend,
    apps: TcpEchoBackend,
    web: EchoBackend,
    broker: TcpEchoBackend,
}

impl Backends {
    async fn start() -> Self {
        let ca = TestCa::new();
        let tls_echo = |name: &str, names: &[&str]| TcpEchoConfig {
            name: name.to_owned(),
            tls: Some(ca.leaf(names)),
            ..TcpEchoConfig::default()
        };
        let db = TcpEchoBackend::start(tls_echo("db", &["db.example"]))
            .await
            .unwrap();
        let apps = TcpEchoBackend::start(tls_echo("apps", &["*.apps.example"]))
            .await
            .unwrap();
        let web = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
        let broker = TcpEchoBackend::start(TcpEchoConfig {
            name: "broker".to_owned(),
            ..TcpEchoConfig::default()
        })
        .await
        .unwrap();
        Self {
            ca,
            db,
            apps,
            web,
            broker,
        }
    }

    /// Port `port` shared by an `HTTPS` listener for `www.example`, a `TLS`
    /// listener terminating for `mqtt.example` and a passthrough listener for
    /// `*.example`.
    fn config(&self, version: u64, port: u16) -> Value {
        let (cert, key) = self.ca.leaf(&["www.example"]);
        let (mqtt_cert, mqtt_key) = self.ca.leaf(&["mqtt.example"]);
        json!({
            "version": version,
            "certificates": [
                {"namespace": "ns", "name": "www", "certificatePem": cert, "privateKeyPem": key},
                {"namespace": "ns", "name": "mqtt",
                 "certificatePem": mqtt_cert, "privateKeyPem": mqtt_key}
            ],
            "listeners": [
                {"name": "web", "port": port, "protocol": "HTTPS", "hostname": "www.example",
                 "tls": {"certificateRefs": [{"namespace": "ns", "name": "www"}]}},
                {"name": "pass", "port": port, "protocol": "TLS", "hostname": "*.example"},
                {"name": "mqtt", "port": port, "protocol": "TLS", "hostname": "mqtt.example",
                 "tls": {"mode": "Terminate",
                         "certificateRefs": [{"namespace": "ns", "name": "mqtt"}]}}
            ],
            "httpRoutes": [{"namespace": "ns", "name": "web", "listeners": ["web"],
                "rules": [{"backends": [{"name": "web",
                    "endpoints": [self.web.addr().to_string()]}]}]}],
            "tlsRoutes": [
                {"namespace": "ns", "name": "broker", "listeners": ["mqtt"],
                 "backends": [{"name": "broker",
                    "endpoints": [self.broker.addr().to_string()]}]},
                {"namespace": "ns", "name": "db", "listeners": ["pass"],
                 "hostnames": ["db.example"],
                 "backends": [{"name": "db", "endpoints": [self.db.addr().to_string()]}]},
                {"namespace": "ns", "name": "apps", "listeners": ["pass"],
                 "hostnames": ["*.apps.example"],
                 "backends": [{"name": "apps", "endpoints": [self.apps.addr().to_string()]}]}
            ]
        })
    }
}

fn start(limits: ClientLimits) -> Server {
    let config = ServeConfig::new(local(0))
        .with_workers(NonZeroUsize::new(2).unwrap())
        .with_client_limits(limits);
    Server::start(config).unwrap()
}

async fn push(server: &Server, config: &Value) {
    let reply = put_config(server.control_addr(), config, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
}

/// Reads the echo backend's greeting line.
async fn greeting<S: AsyncRead + Unpin>(stream: &mut BufReader<S>) -> Value {
    let mut line = String::new();
    stream.read_line(&mut line).await.unwrap();
    serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a greeting: {line:?}"))
}

/// Sends `data`, closes the sending half, and reads the echo to its end.
async fn echo_to_end<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut BufReader<S>,
    data: &[u8],
) -> Vec<u8> {
    stream.get_mut().write_all(data).await.unwrap();
    stream.get_mut().shutdown().await.unwrap();
    let mut echoed = Vec::new();
    stream.read_to_end(&mut echoed).await.unwrap();
    echoed
}

#[tokio::test]
async fn connections_go_by_server_name_to_passthrough_terminated_and_https_listeners() {
    tokio::time::timeout(LIMIT, async {
        let backends = Backends::start().await;
        let server = start(ClientLimits::default());
        let port = free_port();
        push(&server, &backends.config(1, port)).await;
        let client = backends.ca.client_config(&[b"h2", b"http/1.1"]);

        for (name, service) in [("db.example", "db"), ("x.apps.example", "apps")] {
            // The handshake checks the backend's own certificate for `name`, so
            // the backend, not Culvert, terminated TLS.
            let (stream, alpn) = tls_connect(local(port), name, Arc::clone(&client)).await;
            assert_eq!(alpn, None, "the echo backend offers no ALPN");
            let mut stream = BufReader::new(stream);
            let seen = greeting(&mut stream).await;
            assert_eq!(seen["service"], service);
            assert_eq!(seen["tls"], true);
            assert_eq!(seen["serverName"], name);
            let data = vec![b'x'; 100_000];
            assert_eq!(echo_to_end(&mut stream, &data).await, data);
        }

        // The terminating TLS listener: Culvert's certificate (the handshake checks
        // it for the name), no ALPN, the decrypted stream to a clear echo.
        let (stream, alpn) = tls_connect(local(port), "mqtt.example", Arc::clone(&client)).await;
        assert_eq!(alpn, None, "a TLS stream listener offers no ALPN");
        let mut stream = BufReader::new(stream);
        let seen = greeting(&mut stream).await;
        assert_eq!(seen["service"], "broker");
        assert_eq!(seen["tls"], false);
        assert_eq!(echo_to_end(&mut stream, b"publish").await, b"publish");
        let series = "culvert_tls_route_connections_total{route=\"ns/broker\",end=\"closed\"}";
        assert_eq!(metric(server.control_addr(), series).await, Some(1));

        // The HTTPS listener on the same port: Culvert's certificate, HTTP.
        let (stream, alpn) = tls_connect(local(port), "www.example", Arc::clone(&client)).await;
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
        let request = http::Request::get("https://www.example/x")
            .version(http::Version::HTTP_2)
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let reply = support::send_h2(stream, request).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["service"], "web");

        let control = server.control_addr();
        for route in ["ns/db", "ns/apps"] {
            let series =
                format!("culvert_tls_route_connections_total{{route=\"{route}\",end=\"closed\"}}");
            assert_eq!(metric(control, &series).await, Some(1), "{series}");
        }
        // Every byte of the spliced stream is counted: at least the hello and the
        // 100 kB sent (plus the TLS overhead) each way.
        let sent = metric(control, "culvert_request_bytes_total{route=\"ns/db\"}").await;
        assert!(sent.unwrap() > 100_000, "{sent:?}");
        let received = metric(control, "culvert_response_bytes_total{route=\"ns/db\"}").await;
        assert!(received.unwrap() > 100_000, "{received:?}");
        server.shutdown();
    })
    .await
    .unwrap();
}

/// Whether a TLS handshake to `port` asking for `name` fails.
async fn handshake_fails(port: u16, name: &str, client: &Arc<rustls::ClientConfig>) -> bool {
    let tcp = TcpStream::connect(local(port)).await.unwrap();
    let server_name = rustls_pki_types::ServerName::try_from(name.to_owned()).unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(client));
    connector.connect(server_name, tcp).await.is_err()
}

/// Whether the server ended `stream` without sending a byte.
async fn closed_without_data(mut stream: TcpStream) -> bool {
    let mut buf = [0u8; 64];
    matches!(stream.read(&mut buf).await, Ok(0) | Err(_))
}

#[tokio::test]
async fn unknown_names_and_bytes_that_are_not_tls_are_reset() {
    tokio::time::timeout(LIMIT, async {
        let backends = Backends::start().await;
        let server = start(ClientLimits::default());
        let port = free_port();
        push(&server, &backends.config(1, port)).await;
        let client = backends.ca.client_config(&[]);
        let control = server.control_addr();

        // A name the passthrough listener owns but no route serves, and one no
        // listener owns: the handshake fails, nothing reached a backend.
        for name in ["other.example", "elsewhere.test"] {
            assert!(handshake_fails(port, name, &client).await, "{name}");
        }
        let unrouted = "culvert_refused_total{reason=\"tls_unrouted\"}";
        assert_eq!(metric(control, unrouted).await, Some(2));

        // Clear-text HTTP to the TLS port.
        let mut stream = TcpStream::connect(local(port)).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: db.example\r\n\r\n")
            .await
            .unwrap();
        assert!(closed_without_data(stream).await);
        let malformed = "culvert_refused_total{reason=\"tls_malformed\"}";
        assert_eq!(metric(control, malformed).await, Some(1));

        // A route whose backend is down: the client is reset, the failure counted.
        let mut config = backends.config(2, port);
        config["tlsRoutes"][1]["backends"][0]["endpoints"] = json!([local(free_port())]);
        push(&server, &config).await;
        assert!(handshake_fails(port, "db.example", &client).await);
        let connect = "culvert_backend_errors_total{route=\"ns/db\",reason=\"connect\"}";
        assert_eq!(metric(control, connect).await, Some(1));
        let failed = "culvert_tls_route_connections_total{route=\"ns/db\",end=\"backend_failed\"}";
        assert_eq!(metric(control, failed).await, Some(1));
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_passthrough_connection_outlives_a_config_swap_that_keeps_its_route() {
    tokio::time::timeout(LIMIT, async {
        let backends = Backends::start().await;
        let server = start(ClientLimits::default());
        let port = free_port();
        push(&server, &backends.config(1, port)).await;
        let client = backends.ca.client_config(&[]);
        let (stream, _) = tls_connect(local(port), "db.example", Arc::clone(&client)).await;
        let mut stream = BufReader::new(stream);
        assert_eq!(greeting(&mut stream).await["service"], "db");
        stream.get_mut().write_all(b"before ").await.unwrap();

        // A new version (the apps route gone, a listener added on another port).
        let mut config = backends.config(2, port);
        config["tlsRoutes"].as_array_mut().unwrap().truncate(2);
        config["listeners"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "more", "port": free_port(), "protocol": "TLS"}));
        push(&server, &config).await;

        assert_eq!(echo_to_end(&mut stream, b"after").await, b"before after");
        // New connections see the new table.
        assert!(handshake_fails(port, "x.apps.example", &client).await);
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn idle_passthrough_connections_are_closed() {
    tokio::time::timeout(LIMIT, async {
        let backends = Backends::start().await;
        let limits = ClientLimits {
            upgraded_idle_timeout: Duration::from_millis(300),
            ..ClientLimits::default()
        };
        let server = start(limits);
        let port = free_port();
        push(&server, &backends.config(1, port)).await;
        let client = backends.ca.client_config(&[]);
        let (stream, _) = tls_connect(local(port), "db.example", Arc::clone(&client)).await;
        let mut stream = BufReader::new(stream);
        assert_eq!(greeting(&mut stream).await["service"], "db");
        // Nothing moves: the pair is closed within two idle periods.
        let mut rest = Vec::new();
        let ended = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest));
        assert!(ended.await.is_ok(), "an idle connection stayed open");
        let idle = "culvert_tls_route_connections_total{route=\"ns/db\",end=\"idle\"}";
        assert_eq!(metric(server.control_addr(), idle).await, Some(1));
        server.shutdown();
    })
    .await
    .unwrap();
}
