//! TLS to backends through a real data plane on loopback: a backend that terminates
//! TLS itself (rustls, answering over HTTP/1.1 or HTTP/2 by ALPN) reports the SNI,
//! the ALPN and the client certificate it saw and how many connections it accepted.
//! Covered: the CA and hostname checks, `subjectAltNames` in place of the hostname,
//! a client certificate shown to the backend, HTTP/2 over TLS, pooled connections,
//! and settings that cannot load refused at push time.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use culvert_proxy::{ServeConfig, Server};
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use support::{TestCa, free_port, get, put_config};
use tokio::net::TcpListener;

const LIMIT: Duration = Duration::from_secs(60);

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A TLS backend; stops with the test's runtime.
struct TlsBackend {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl TlsBackend {
    /// Serves `certificate` (`(chain, key)` PEM); asks for client certificates
    /// signed by `client_ca` when given.
    async fn start(certificate: &(String, String), client_ca: Option<&TestCa>) -> Self {
        let provider = culvert_proxy::crypto_provider();
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match client_ca {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots
                    .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap())
                    .unwrap();
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let chain = CertificateDer::pem_slice_iter(certificate.0.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(certificate.1.as_bytes()).unwrap();
        let mut config = builder.with_single_cert(chain, key).unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(local(0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let session = tls.get_ref().1;
                    let seen = json!({
                        "sni": session.server_name(),
                        "alpn": session.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned()),
                        "clientCertificate": session.peer_certificates().is_some_and(|c| !c.is_empty()),
                    });
                    let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                        let body = Bytes::from(seen.to_string());
                        async move { Ok::<_, Infallible>(Response::new(Full::new(body))) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self { addr, connections }
    }
}

/// A plane routing every request on an HTTP listener to `backend`; returns it and
/// the listener's address.
async fn plane(backend: Value) -> (Server, SocketAddr) {
    let server = Server::start(ServeConfig::new(local(0)).with_workers(NonZeroUsize::MIN)).unwrap();
    let port = free_port();
    let reply = put_config(server.control_addr(), &config(port, backend), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    (server, local(port))
}

fn config(port: u16, backend: Value) -> Value {
    json!({
        "version": 1,
        "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
        "httpRoutes": [{"namespace": "ns", "name": "r", "listeners": ["http"],
            "rules": [{"backends": [backend]}]}]
    })
}

fn tls_backend(addr: SocketAddr, tls: Value) -> Value {
    json!({"name": "secure", "endpoints": [addr.to_string()], "tls": tls})
}

#[tokio::test]
async fn backends_are_reached_over_verified_tls_on_pooled_connections() {
    tokio::time::timeout(LIMIT, async {
        let ca = TestCa::new();
        let backend = TlsBackend::start(&ca.leaf(&["backend.example"]), None).await;
        let (server, addr) = plane(tls_backend(
            backend.addr,
            json!({"hostname": "backend.example", "caCertificatesPem": ca.pem}),
        ))
        .await;
        for _ in 0..3 {
            let reply = get(addr, "app.example", "/").await;
            assert_eq!(reply.status, StatusCode::OK);
            let seen = reply.json();
            assert_eq!(seen["sni"], "backend.example");
            assert_eq!(seen["alpn"], "http/1.1");
            assert_eq!(seen["clientCertificate"], false);
        }
        // The three requests shared one pooled TLS connection.
        assert_eq!(backend.connections.load(Ordering::SeqCst), 1);
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn certificates_that_do_not_verify_are_refused_and_alt_names_replace_the_hostname() {
    tokio::time::timeout(LIMIT, async {
        let ca = TestCa::new();
        let other = TestCa::new();
        let backend = TlsBackend::start(&ca.leaf(&["alt.example"]), None).await;
        let cases = [
            // Another CA: 502.
            (
                json!({"hostname": "alt.example", "caCertificatesPem": other.pem}),
                502,
            ),
            // The right CA, but the certificate does not name the hostname: 502.
            (
                json!({"hostname": "backend.example", "caCertificatesPem": ca.pem}),
                502,
            ),
            // The hostname (and SNI) stays, a subjectAltName the certificate has is
            // checked instead.
            (
                json!({"hostname": "backend.example", "caCertificatesPem": ca.pem,
                       "subjectAltNames": ["other.example", "alt.example"]}),
                200,
            ),
        ];
        for (tls, status) in cases {
            let (server, addr) = plane(tls_backend(backend.addr, tls.clone())).await;
            let reply = get(addr, "app.example", "/").await;
            assert_eq!(reply.status.as_u16(), status, "{tls}");
            if status == 200 {
                assert_eq!(reply.json()["sni"], "backend.example");
            }
            server.shutdown();
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_client_certificate_is_shown_to_backends_that_ask() {
    tokio::time::timeout(LIMIT, async {
        let ca = TestCa::new();
        let clients = TestCa::new();
        let backend = TlsBackend::start(&ca.leaf(&["backend.example"]), Some(&clients)).await;
        let (chain, key) = clients.leaf(&["gateway.example"]);
        let with = json!({"hostname": "backend.example", "caCertificatesPem": ca.pem,
            "clientCertificate": {"certificatePem": chain, "privateKeyPem": key}});
        let (server, addr) = plane(tls_backend(backend.addr, with)).await;
        let reply = get(addr, "app.example", "/").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["clientCertificate"], true);
        server.shutdown();

        let without = json!({"hostname": "backend.example", "caCertificatesPem": ca.pem});
        let (server, addr) = plane(tls_backend(backend.addr, without)).await;
        assert_eq!(
            get(addr, "app.example", "/").await.status,
            StatusCode::BAD_GATEWAY
        );
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn h2_backends_speak_http2_over_tls() {
    tokio::time::timeout(LIMIT, async {
        let ca = TestCa::new();
        let backend = TlsBackend::start(&ca.leaf(&["backend.example"]), None).await;
        let mut target = tls_backend(
            backend.addr,
            json!({"hostname": "backend.example", "caCertificatesPem": ca.pem}),
        );
        target["appProtocol"] = json!("kubernetes.io/h2c");
        let (server, addr) = plane(target).await;
        for _ in 0..2 {
            let reply = get(addr, "app.example", "/").await;
            assert_eq!(reply.status, StatusCode::OK);
            assert_eq!(reply.json()["alpn"], "h2");
        }
        assert_eq!(backend.connections.load(Ordering::SeqCst), 1);
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn settings_that_cannot_load_are_refused_at_push() {
    tokio::time::timeout(LIMIT, async {
        let server =
            Server::start(ServeConfig::new(local(0)).with_workers(NonZeroUsize::MIN)).unwrap();
        for tls in [
            json!({"hostname": "not a name", "caCertificatesPem": TestCa::new().pem}),
            json!({"hostname": "backend.example", "caCertificatesPem": "not PEM"}),
            json!({"hostname": "backend.example",
                   "clientCertificate": {"certificatePem": "x", "privateKeyPem": "y"}}),
        ] {
            let body = config(free_port(), tls_backend(local(1), tls.clone()));
            let reply = put_config(server.control_addr(), &body, None).await;
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{tls}");
            let text = String::from_utf8_lossy(&reply.body);
            assert!(text.contains("TLS to backend"), "{text}");
        }
        server.shutdown();
    })
    .await
    .unwrap();
}
