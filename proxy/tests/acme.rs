//! Built-in ACME through a real data plane and a real Pebble on loopback: an `HTTPS`
//! listener with `tls.acme` gets its certificate by HTTP-01 (answered by the plane's own
//! clear-text listener, ahead of a catch-all route) or TLS-ALPN-01 (answered by the
//! `HTTPS` listener itself); a renewal is served to new connections while a connection
//! opened before it keeps working. Configs the plane cannot serve by ACME are refused.
//!
//! Without `pebble` installed the Pebble tests fail with what to install, or skip with
//! `CULVERT_SKIP_PEBBLE=1`, as the `culvert-acme` tests do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use culvert_acme::Clock;
use culvert_acme::testing::{Pebble, TempDir, free_port, pebble_installed};
use culvert_bench::{EchoBackend, EchoConfig};
use culvert_proxy::{AcmeSettings, ChallengeKind, Error, ServeConfig, Server, TlsError};
use culvert_router::DataPlaneConfig;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::json;
use tokio::net::TcpStream;

/// The name the ACME listener gets its certificate for; Pebble's DNS resolves every
/// name to 127.0.0.1.
const NAME: &str = "acme.culvert.test";

/// How long an order (or a renewal) may take to show on the listener.
const ISSUE_LIMIT: Duration = Duration::from_secs(90);

/// The system clock, moved forward by a number of seconds a test sets.
#[derive(Debug, Default)]
struct MovableClock {
    ahead_secs: AtomicU64,
}

impl MovableClock {
    fn set_ahead(&self, ahead: Duration) {
        self.ahead_secs.store(ahead.as_secs(), Ordering::SeqCst);
    }
}

impl Clock for MovableClock {
    fn now(&self) -> SystemTime {
        SystemTime::now() + Duration::from_secs(self.ahead_secs.load(Ordering::SeqCst))
    }
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A plane serving `config`, its ACME listeners' certificates from `pebble`.
fn plane(
    config: serde_json::Value,
    pebble: &Pebble,
    state: &TempDir,
    challenge: ChallengeKind,
    clock: Option<Arc<MovableClock>>,
) -> Server {
    let config: DataPlaneConfig = serde_json::from_value(config).unwrap();
    let mut acme = AcmeSettings::new(&pebble.directory_url, state.path(), challenge);
    acme.trust_pem = Some(pebble.tls_ca_pem.clone());
    acme.contacts = vec!["ops@culvert.test".to_owned()];
    acme.clock = clock.map(|clock| clock as Arc<dyn Clock>);
    let serve = ServeConfig::new(local(0))
        .with_workers(NonZeroUsize::new(2).unwrap())
        .with_initial(config)
        .with_acme(acme);
    Server::start(serve).unwrap()
}

/// A client trusting only `root`, offering HTTP/1.1.
fn client(root: &CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root.clone()).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(culvert_proxy::crypto_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// A TLS connection to `addr` for [`NAME`] that verifies with `client`, or why not.
async fn connect(
    addr: SocketAddr,
    client: &Arc<rustls::ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from(NAME.to_owned()).unwrap();
    tokio_rustls::TlsConnector::from(Arc::clone(client))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())
}

fn leaf(stream: &tokio_rustls::client::TlsStream<TcpStream>) -> CertificateDer<'static> {
    stream.get_ref().1.peer_certificates().unwrap()[0].clone()
}

/// The leaf served to a new connection once it verifies against `client`'s root
/// and `accept` takes it; panics with the last reason after [`ISSUE_LIMIT`].
async fn wait_for_leaf(
    addr: SocketAddr,
    client: &Arc<rustls::ClientConfig>,
    accept: impl Fn(&CertificateDer<'static>) -> bool,
) -> CertificateDer<'static> {
    let deadline = Instant::now() + ISSUE_LIMIT;
    let mut last = String::from("nothing tried");
    while Instant::now() < deadline {
        match connect(addr, client).await {
            Ok(stream) if accept(&leaf(&stream)) => return leaf(&stream),
            Ok(_) => last = "the same certificate as before".to_owned(),
            Err(err) => last = err,
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("no certificate from Pebble on {addr} within {ISSUE_LIMIT:?}: {last}");
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// An HTTP/1.1 client on `stream`, kept open between requests.
async fn http1(stream: tokio_rustls::client::TlsStream<TcpStream>) -> Sender {
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

async fn get_on(sender: &mut Sender, host: &str, path: &str) -> (StatusCode, Bytes) {
    let request = Request::get(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    (
        status,
        response.into_body().collect().await.unwrap().to_bytes(),
    )
}

fn echo_rule(echo: &EchoBackend) -> serde_json::Value {
    json!([{"backends": [{"name": "echo", "endpoints": [echo.addr().to_string()]}]}])
}

#[tokio::test]
async fn http01_certificate_is_served_and_renewed_while_a_connection_stays_open() {
    if !pebble_installed("http01_certificate_is_served_and_renewed_while_a_connection_stays_open") {
        return;
    }
    let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
    let (http_port, https_port) = (free_port(), free_port());
    let pebble = Pebble::start(http_port, https_port);
    let root = pebble.issuing_root().await;
    let state = TempDir::new("proxy-http01");
    let clock = Arc::new(MovableClock::default());
    // A catch-all route on the clear-text listener: the challenge is answered before
    // routing, so it cannot shadow it.
    let server = plane(
        json!({
            "version": 1,
            "listeners": [
                {"name": "http", "address": "127.0.0.1", "port": http_port, "protocol": "HTTP"},
                {"name": "https", "address": "127.0.0.1", "port": https_port, "protocol": "HTTPS",
                 "hostname": NAME, "tls": {"acme": {}}}
            ],
            "httpRoutes": [
                {"name": "plain", "namespace": "ns", "listeners": ["http"], "rules": echo_rule(&echo)},
                {"name": "secure", "namespace": "ns", "listeners": ["https"], "rules": echo_rule(&echo)}
            ]
        }),
        &pebble,
        &state,
        ChallengeKind::Http01,
        Some(Arc::clone(&clock)),
    );
    let https = local(https_port);
    let client = client(&root);

    let first = wait_for_leaf(https, &client, |_| true).await;
    assert_eq!(server.acme_names(), vec![NAME.to_owned()]);
    assert!(state.path().join(NAME).join("tls.crt").is_file());

    // A connection opened on the first certificate, kept alive.
    let held = connect(https, &client).await.unwrap();
    assert_eq!(leaf(&held), first);
    let mut held = http1(held).await;
    let (status, body) = get_on(&mut held, NAME, "/before").await;
    assert_eq!(status, StatusCode::OK, "{body:?}");

    // An unknown token is no challenge: it is routed like any request.
    let plain = TcpStream::connect(local(http_port)).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(plain))
        .await
        .unwrap();
    tokio::spawn(connection);
    let (status, body) = get_on(&mut sender, NAME, "/.well-known/acme-challenge/unknown").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        String::from_utf8_lossy(&body).contains("acme-challenge/unknown"),
        "the echo backend answered: {body:?}"
    );

    // Ten years on, the certificate is past two thirds of its life: renewed.
    clock.set_ahead(Duration::from_secs(10 * 365 * 24 * 60 * 60));
    server.acme_recheck_now();
    let renewed = wait_for_leaf(https, &client, |leaf| *leaf != first).await;
    clock.set_ahead(Duration::ZERO);
    assert_ne!(renewed, first);

    // The connection opened before the renewal still serves requests.
    let (status, body) = get_on(&mut held, NAME, "/after").await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert!(String::from_utf8_lossy(&body).contains("/after"));
    // And a new connection gets the renewed certificate and a response.
    let fresh = connect(https, &client).await.unwrap();
    assert_eq!(leaf(&fresh), renewed);
    let (status, _) = get_on(&mut http1(fresh).await, NAME, "/new").await;
    assert_eq!(status, StatusCode::OK);
    server.shutdown();
}

#[tokio::test]
async fn tls_alpn01_is_answered_by_the_https_listener_itself() {
    if !pebble_installed("tls_alpn01_is_answered_by_the_https_listener_itself") {
        return;
    }
    let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
    // Nothing listens on the HTTP-01 port: only TLS-ALPN-01 can succeed.
    let (unused_http_port, https_port) = (free_port(), free_port());
    let pebble = Pebble::start(unused_http_port, https_port);
    let root = pebble.issuing_root().await;
    let state = TempDir::new("proxy-tls-alpn01");
    let server = plane(
        json!({
            "version": 1,
            "listeners": [
                {"name": "https", "address": "127.0.0.1", "port": https_port, "protocol": "HTTPS",
                 "hostname": NAME, "tls": {"acme": {}}}
            ],
            "httpRoutes": [
                {"name": "secure", "namespace": "ns", "listeners": ["https"], "rules": echo_rule(&echo)}
            ]
        }),
        &pebble,
        &state,
        ChallengeKind::TlsAlpn01,
        None,
    );
    let https = local(https_port);
    let client = client(&root);
    wait_for_leaf(https, &client, |_| true).await;
    let stream = connect(https, &client).await.unwrap();
    let (status, _) = get_on(&mut http1(stream).await, NAME, "/").await;
    assert_eq!(status, StatusCode::OK);

    // A handshake offering acme-tls/1 when no validation is under way gets no
    // certificate at all: the challenge answer is never a stand-in for the real one.
    let mut acme_client = (*client).clone();
    acme_client.alpn_protocols = vec![culvert_acme::ACME_TLS_ALPN.to_vec()];
    assert!(connect(https, &Arc::new(acme_client)).await.is_err());
    server.shutdown();
}

fn acme_listener(hostname: Option<&str>) -> DataPlaneConfig {
    let mut listener = json!({"name": "https", "address": "127.0.0.1", "port": free_port(),
                              "protocol": "HTTPS", "tls": {"acme": {}}});
    if let Some(hostname) = hostname {
        listener["hostname"] = json!(hostname);
    }
    serde_json::from_value(json!({"version": 1, "listeners": [listener]})).unwrap()
}

#[test]
fn an_acme_listener_without_acme_settings_is_refused() {
    let serve = ServeConfig::new(local(0)).with_initial(acme_listener(Some(NAME)));
    let err = Server::start(serve).unwrap_err();
    assert!(
        matches!(err, Error::Tls(TlsError::AcmeNotConfigured { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("--acme-directory"), "{err}");
}

/// An error and its causes, as one line.
fn causes(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}

#[test]
fn acme_listeners_need_one_exact_hostname() {
    let state = TempDir::new("proxy-refused");
    for (hostname, expected) in [(Some("*.culvert.test"), "wildcard"), (None, "hostname")] {
        let acme = AcmeSettings::new(
            "https://127.0.0.1:1/dir",
            state.path(),
            ChallengeKind::Http01,
        );
        let serve = ServeConfig::new(local(0))
            .with_initial(acme_listener(hostname))
            .with_acme(acme);
        let err = Server::start(serve).unwrap_err();
        let message = causes(&err);
        assert!(message.contains(expected), "{hostname:?}: {message}");
    }
}
