//! An ACME "server" that answers badly: a directory whose URLs are not URLs, a body far
//! larger than any ACME object, no answer at all. Each round must end with an error, in
//! bounded time, without a panic and without writing anything.
#![allow(clippy::unwrap_used, reason = "tests")]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]

use std::error::Error as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use culvert_acme::{AcmeConfig, ChallengeKind, Challenges, Error, Manager};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the fake server does with each request.
#[derive(Clone)]
enum Behaviour {
    /// Answers 200 with this JSON body.
    Json(Vec<u8>),
    /// Reads the request and never answers.
    Silent,
}

/// Serves HTTPS on loopback with a fresh self-signed certificate; returns the directory
/// URL and the certificate (PEM) to trust.
async fn serve(behaviour: Behaviour) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let private = rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(culvert_tls::crypto_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certificate.der().clone()], private)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, behaviour) = (acceptor.clone(), behaviour.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                match behaviour {
                    Behaviour::Json(body) => {
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = tls.write_all(head.as_bytes()).await;
                        let _ = tls.write_all(&body).await;
                        let _ = tls.shutdown().await;
                    }
                    Behaviour::Silent => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                }
            });
        }
    });
    (format!("https://127.0.0.1:{port}/dir"), certificate.pem())
}

/// Runs one round against the fake server: its error, with causes, and how long it took.
async fn round(behaviour: Behaviour, name: &str) -> (Error, String, Duration) {
    let (directory_url, trust) = serve(behaviour).await;
    let state = std::env::temp_dir().join(format!(
        "culvert-acme-hostile-{name}-{}",
        std::process::id()
    ));
    let mut config = AcmeConfig::new(
        directory_url,
        &state,
        vec!["hostile.example".to_owned()],
        ChallengeKind::Http01,
    );
    config.trust = Some(trust);
    config.system_roots = false;
    config.request_timeout = Duration::from_secs(2);
    config.order_timeout = Duration::from_secs(5);
    let manager = Manager::new(config, Challenges::new()).unwrap();
    let started = Instant::now();
    let err = manager.renew_if_due().await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(!manager.paths().certificate.exists());
    let _ = std::fs::remove_dir_all(&state);
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    (err, text, elapsed)
}

#[tokio::test]
async fn a_directory_with_a_url_that_is_not_one_is_refused() {
    let directory = br#"{"newNonce":"not a url","newAccount":"https://127.0.0.1/a","newOrder":"https://127.0.0.1/o"}"#;
    let (err, text, _) = round(Behaviour::Json(directory.to_vec()), "bad-url").await;
    assert!(matches!(err, Error::Acme(_)), "{err:?}");
    assert!(
        text.contains("newNonce") && text.contains("not a URL"),
        "{text}"
    );
}

#[tokio::test]
async fn an_oversized_body_is_refused_not_buffered() {
    let mut body = b"{\"pad\":\"".to_vec();
    body.resize(3 * 1024 * 1024, b'x');
    body.extend_from_slice(b"\"}");
    let (err, text, _) = round(Behaviour::Json(body), "huge").await;
    assert!(matches!(err, Error::Acme(_)), "{err:?}");
    assert!(text.contains("length limit"), "{text}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let (err, text, elapsed) = round(Behaviour::Silent, "silent").await;
    assert!(matches!(err, Error::Acme(_)), "{err:?}");
    assert!(text.contains("no answer within 2 s"), "{text}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}
