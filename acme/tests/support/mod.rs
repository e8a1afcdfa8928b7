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
use std::fs;
use std::net::{SocketAddr, TcpListener as StdListener, TcpStream as StdStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use culvert_acme::{ACME_TLS_ALPN, Challenges, Clock};
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The env variable that turns a missing `pebble` into a skipped test.
const SKIP_ENV: &str = "CULVERT_SKIP_PEBBLE";

/// Whether the Pebble binaries are installed. Without them a test fails with what to
/// install, unless `CULVERT_SKIP_PEBBLE=1`, when it says why it skips.
pub fn pebble_installed(test: &str) -> bool {
    let found = ["pebble", "pebble-challtestsrv"]
        .iter()
        .all(|binary| which(binary).is_some());
    if found {
        return true;
    }
    if std::env::var(SKIP_ENV).as_deref() == Ok("1") {
        eprintln!("{test}: skipped, `pebble` is not installed and {SKIP_ENV}=1");
        return false;
    }
    panic!(
        "`pebble` (Let's Encrypt's ACME test server) is not installed: run \
         `apt-get install pebble` (or ./scripts/test, which installs it), or set \
         {SKIP_ENV}=1 to skip the ACME integration tests"
    );
}

fn which(binary: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(binary))
        .find(|candidate| candidate.is_file())
}

/// A directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "culvert-acme-{name}-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running Pebble and its DNS server, killed on drop.
pub struct Pebble {
    /// The directory URL to configure.
    pub directory_url: String,
    /// The CA of Pebble's own HTTPS certificate (PEM), to trust for the directory.
    pub tls_ca_pem: String,
    management: SocketAddr,
    _dns: Killed,
    _pebble: Killed,
    _dir: TempDir,
}

impl Pebble {
    /// Starts Pebble validating HTTP-01 on `http_port` and TLS-ALPN-01 on `tls_port`.
    /// Validations really happen: `PEBBLE_VA_ALWAYS_VALID` is removed from its
    /// environment, and authorizations are never reused.
    pub fn start(http_port: u16, tls_port: u16) -> Self {
        let dir = TempDir::new("pebble");
        let (tls_ca_pem, cert_path, key_path) = pebble_tls(dir.path());
        let (listen, management, dns) = (free_port(), free_port(), free_port());
        let config = serde_json::json!({
            "pebble": {
                "listenAddress": format!("127.0.0.1:{listen}"),
                "managementListenAddress": format!("127.0.0.1:{management}"),
                "certificate": cert_path,
                "privateKey": key_path,
                "httpPort": http_port,
                "tlsPort": tls_port,
                "ocspResponderURL": "",
                "externalAccountBindingRequired": false,
            }
        });
        let config_path = dir.path().join("pebble-config.json");
        fs::write(&config_path, config.to_string()).unwrap();

        let dns_log = fs::File::create(dir.path().join("challtestsrv.log")).unwrap();
        let dns_child = Command::new("pebble-challtestsrv")
            .args(["-dns01", &format!("127.0.0.1:{dns}")])
            .args(["-management", &format!("127.0.0.1:{}", free_port())])
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""])
            .stdout(dns_log.try_clone().unwrap())
            .stderr(dns_log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start pebble-challtestsrv");
        let dns_child = Killed(dns_child);

        let log = fs::File::create(dir.path().join("pebble.log")).unwrap();
        let pebble = Command::new("pebble")
            .arg("-config")
            .arg(&config_path)
            .args(["-dnsserver", &format!("127.0.0.1:{dns}")])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0")
            .env_remove("PEBBLE_VA_ALWAYS_VALID")
            .current_dir(dir.path())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start pebble");
        let pebble = Killed(pebble);

        let management: SocketAddr = format!("127.0.0.1:{management}").parse().unwrap();
        let listen_addr: SocketAddr = format!("127.0.0.1:{listen}").parse().unwrap();
        for addr in [listen_addr, management] {
            wait_for_port(addr, &dir.path().join("pebble.log"));
        }
        Self {
            directory_url: format!("https://127.0.0.1:{listen}/dir"),
            tls_ca_pem,
            management,
            _dns: dns_child,
            _pebble: pebble,
            _dir: dir,
        }
    }

    /// The root Pebble issues under, from its management interface (`/roots/0`).
    pub async fn issuing_root(&self) -> CertificateDer<'static> {
        let (status, body) = https_get(self.management, "/roots/0", &self.tls_ca_pem).await;
        assert_eq!(
            status,
            200,
            "GET /roots/0: {}",
            String::from_utf8_lossy(&body)
        );
        CertificateDer::from_pem_slice(&body).expect("/roots/0 is a PEM certificate")
    }
}

fn wait_for_port(addr: SocketAddr, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while StdStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            Instant::now() < deadline,
            "pebble did not listen on {addr}; its log:\n{}",
            fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A CA and a certificate for 127.0.0.1 signed by it, for Pebble's HTTPS listeners.
fn pebble_tls(dir: &Path) -> (String, PathBuf, PathBuf) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "culvert test ca for pebble");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    fs::write(&cert_path, leaf.pem()).unwrap();
    fs::write(&key_path, leaf_key.serialize_pem()).unwrap();
    (ca_cert.pem(), cert_path, key_path)
}

fn client_config(roots_pem: &str) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(roots_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(
        rustls::crypto::aws_lc_rs::default_provider().into(),
    )
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth()
}

/// One HTTP/1.0 GET over TLS: the status and the body.
pub async fn https_get(addr: SocketAddr, path: &str, roots_pem: &str) -> (u16, Vec<u8>) {
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config(roots_pem)));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = ServerName::IpAddress(addr.ip().into());
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut response = Vec::new();
    let _ = tls.read_to_end(&mut response).await;
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, response[split + 4..].to_vec())
}

/// Verifies `chain_pem` (leaf first) for `name` against `root`, now, as a TLS client would.
pub fn verify_chain(chain_pem: &[u8], root: &CertificateDer<'static>, name: &str) {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        chain.len() >= 2,
        "Pebble sends the leaf and an intermediate"
    );
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
    let server_name = ServerName::try_from(name.to_owned()).unwrap();
    verifier
        .verify_server_cert(&chain[0], &chain[1..], &server_name, &[], UnixTime::now())
        .unwrap_or_else(|err| panic!("chain for {name} does not verify: {err}"));
}

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
        let mut config = rustls::ServerConfig::builder_with_provider(
            rustls::crypto::aws_lc_rs::default_provider().into(),
        )
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
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}
