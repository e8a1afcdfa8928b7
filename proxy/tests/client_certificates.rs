//! Client certificates (Gateway `spec.tls.frontend`) through a real data plane on
//! loopback: a listener that allows valid certificates only refuses clients without
//! one or with one from another CA, and sends the verified certificate's hash to
//! backends in `X-Forwarded-Client-Cert` (replacing what a client sent); a listener
//! with the insecure fallback serves every client and forwards only what verified.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail on any unexpected error"
)]

mod support;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use bytes::Bytes;
use culvert_bench::{EchoBackend, EchoConfig};
use culvert_proxy::{ServeConfig, Server};
use http::StatusCode;
use http_body_util::Full;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::json;
use support::{Reply, TestCa, free_port, put_config, send_h1_on};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(60);

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Lower-case hex SHA-256 of a PEM certificate's DER, as the proxy forwards it.
fn fingerprint(pem: &str) -> String {
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &der);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// `GET /` over TLS to `port` with SNI `app.example`, showing `certificate`;
/// `Err` when the handshake or the request fails.
async fn get(
    ca: &TestCa,
    port: u16,
    certificate: Option<&(String, String)>,
    forged: Option<&str>,
) -> Result<Reply, String> {
    let tcp = TcpStream::connect(local(port)).await.unwrap();
    let config = ca.client_config_with(&[b"http/1.1"], certificate);
    let name = rustls_pki_types::ServerName::try_from("app.example").unwrap();
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|error| error.to_string())?;
    let mut request = http::Request::get("/").header("host", "app.example");
    if let Some(forged) = forged {
        request = request.header("x-forwarded-client-cert", forged);
    }
    let request = request.body(Full::new(Bytes::new())).unwrap();
    // A refused certificate surfaces after the handshake in TLS 1.3: as an alert
    // on the first read, which the HTTP client reports as a failed request.
    let reply = tokio::spawn(async move { send_h1_on(stream, request).await });
    reply.await.map_err(|error| error.to_string())
}

/// The `X-Forwarded-Client-Cert` values the backend saw.
fn forwarded(reply: &Reply) -> serde_json::Value {
    reply.json()["headers"]["X-Forwarded-Client-Cert"].clone()
}

#[tokio::test]
async fn client_certificates_are_checked_and_their_identity_forwarded() {
    tokio::time::timeout(LIMIT, async {
        let echo = EchoBackend::start(EchoConfig::new("echo")).await.unwrap();
        let server_ca = TestCa::new();
        let client_ca = TestCa::new();
        let other_ca = TestCa::new();
        let valid = client_ca.leaf(&["client.example"]);
        let foreign = other_ca.leaf(&["client.example"]);
        let (cert, key) = server_ca.leaf(&["app.example"]);
        let (strict, fallback) = (free_port(), free_port());
        let validation = |mode: &str| {
            json!({"caCertificatesPem": client_ca.pem, "mode": mode, "forwardIdentity": true})
        };
        let config = json!({
            "version": 1,
            "certificates": [{"namespace": "ns", "name": "app",
                "certificatePem": cert, "privateKeyPem": key}],
            "listeners": [
                {"name": "strict", "port": strict, "protocol": "HTTPS",
                 "tls": {"certificateRefs": [{"namespace": "ns", "name": "app"}],
                         "clientValidation": validation("AllowValidOnly")}},
                {"name": "fallback", "port": fallback, "protocol": "HTTPS",
                 "tls": {"certificateRefs": [{"namespace": "ns", "name": "app"}],
                         "clientValidation": validation("AllowInsecureFallback")}}
            ],
            "httpRoutes": [{"namespace": "ns", "name": "app",
                "listeners": ["strict", "fallback"],
                "rules": [{"backends": [{"name": "echo",
                    "endpoints": [echo.addr().to_string()]}]}]}]
        });
        let server = Server::start(
            ServeConfig::new(local(0)).with_workers(NonZeroUsize::new(2).unwrap()),
        )
        .unwrap();
        let reply = put_config(server.control_addr(), &config, None).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        let hash = format!("Hash={}", fingerprint(&valid.0));

        // Valid only: the CA's client gets through, its identity forwarded in place
        // of the one it tried to forge.
        let reply = get(&server_ca, strict, Some(&valid), Some("Hash=forged"))
            .await
            .unwrap();
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(forwarded(&reply), json!([hash]));
        // Another CA's certificate, or none: no request is served.
        let refused = get(&server_ca, strict, Some(&foreign), None).await;
        assert!(refused.is_err(), "{refused:?}");
        let refused = get(&server_ca, strict, None, None).await;
        assert!(refused.is_err(), "{refused:?}");

        // Insecure fallback: everyone is served; only a verified identity goes on,
        // and nothing a client forges does.
        let reply = get(&server_ca, fallback, Some(&valid), None).await.unwrap();
        assert_eq!(forwarded(&reply), json!([hash]));
        for certificate in [Some(&foreign), None] {
            let reply = get(&server_ca, fallback, certificate, Some("Hash=forged"))
                .await
                .unwrap();
            assert_eq!(reply.status, StatusCode::OK);
            assert_eq!(forwarded(&reply), serde_json::Value::Null);
        }
        server.shutdown();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn listeners_of_one_address_must_validate_alike() {
    tokio::time::timeout(LIMIT, async {
        let ca = TestCa::new();
        let (cert, key) = ca.leaf(&["a.example", "b.example"]);
        let port = free_port();
        let config = json!({
            "version": 1,
            "certificates": [{"namespace": "ns", "name": "c",
                "certificatePem": cert, "privateKeyPem": key}],
            "listeners": [
                {"name": "a", "port": port, "protocol": "HTTPS", "hostname": "a.example",
                 "tls": {"certificateRefs": [{"namespace": "ns", "name": "c"}],
                         "clientValidation": {"caCertificatesPem": ca.pem}}},
                {"name": "b", "port": port, "protocol": "HTTPS", "hostname": "b.example",
                 "tls": {"certificateRefs": [{"namespace": "ns", "name": "c"}]}}
            ]
        });
        let server = Server::start(ServeConfig::new(local(0))).unwrap();
        let reply = put_config(server.control_addr(), &config, None).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST);
        let body = String::from_utf8_lossy(&reply.body);
        assert!(body.contains("client certificate validation"), "{body}");
        server.shutdown();
    })
    .await
    .unwrap();
}
