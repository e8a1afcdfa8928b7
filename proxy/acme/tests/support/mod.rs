//! A Pebble ACME server on loopback for the integration tests, and the two challenge
//! responders it validates against: a plain HTTP server answering HTTP-01 from an
//! `Http01Challenges` store, and a TLS server answering TLS-ALPN-01 from a
//! `TlsAlpnChallenges` store. Names resolve through `pebble-challtestsrv`'s DNS, which
//! answers 127.0.0.1 for every name, so tests can use names of their own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test harness: a failure here should stop the test loudly"
)]
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses a part of this"
)]

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use culvert_acme::{ACME_TLS_ALPN, Challenges, Clock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub use culvert_acme::testing::{Pebble, TempDir, pebble_installed, verify_chain};

/// The HTTP-01 responder: answers `GET /.well-known/acme-challenge/<token>` from the
/// store, except for hosts told to answer wrongly.
pub struct Http01Responder {
    pub port: u16,
    wrong_hosts: Arc<Mutex<HashSet<String>>>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Http01Responder {
    pub async fn start(challenges: Challenges) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let wrong_hosts = Arc::new(Mutex::new(HashSet::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (wrong, seen) = (Arc::clone(&wrong_hosts), Arc::clone(&requests));
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let (challenges, wrong, seen) =
                    (challenges.clone(), Arc::clone(&wrong), Arc::clone(&seen));
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                    let host = head
                        .lines()
                        .find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("host")
                                .then(|| value.trim().to_owned())
                        })
                        .unwrap_or_default();
                    let host = host.split(':').next().unwrap_or("").to_owned();
                    seen.lock().unwrap().push(format!("{host}{path}"));
                    let answer = challenges.http01().response_for_path(&path);
                    let answer = match answer {
                        Some(_) if wrong.lock().unwrap().contains(&host) => {
                            Some("not-the-key-authorization".to_owned())
                        }
                        other => other,
                    };
                    let response = match answer {
                        Some(body) => format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        ),
                        None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
                    };
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self {
            port,
            wrong_hosts,
            requests,
        }
    }

    /// Answers challenges for `host` with a wrong key authorization from now on.
    pub fn answer_wrongly_for(&self, host: &str) {
        self.wrong_hosts.lock().unwrap().insert(host.to_owned());
    }

    /// `host` + path of every request so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// The TLS-ALPN-01 responder: a TLS server offering only `acme-tls/1`, its certificate
/// chosen by the store's resolver.
pub struct TlsAlpnResponder {
    pub port: u16,
    handshakes: Arc<Mutex<Vec<String>>>,
}

impl TlsAlpnResponder {
    pub async fn start(challenges: Challenges) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut config =
            rustls::ServerConfig::builder_with_provider(culvert_tls::crypto_provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_cert_resolver(Arc::new(challenges.tls_alpn01().clone()));
        config.alpn_protocols = vec![ACME_TLS_ALPN.to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let handshakes = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&handshakes);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, seen) = (acceptor.clone(), Arc::clone(&seen));
                tokio::spawn(async move {
                    if let Ok(mut tls) = acceptor.accept(stream).await {
                        let (_, connection) = tls.get_ref();
                        let name = connection.server_name().unwrap_or("").to_owned();
                        let alpn = connection.alpn_protocol().map(<[u8]>::to_vec);
                        if alpn.as_deref() == Some(ACME_TLS_ALPN) {
                            seen.lock().unwrap().push(name);
                        }
                        let _ = tls.shutdown().await;
                    }
                });
            }
        });
        Self { port, handshakes }
    }

    /// The SNI of every completed `acme-tls/1` handshake so far.
    pub fn handshakes(&self) -> Vec<String> {
        self.handshakes.lock().unwrap().clone()
    }
}

/// A clock standing still at a chosen time.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub SystemTime);

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        self.0
    }
}

/// The permission bits of a file.
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
