//! Test support shared by this crate's integration tests and the proxy's: a Pebble ACME
//! server on loopback (with `pebble-challtestsrv` as its DNS server, answering
//! 127.0.0.1 for every name), its issuing root, chain verification, temporary
//! directories. Behind the `test-support` feature; never in a shipped build.
//!
//! Everything here panics on failure: it is a test harness.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    reason = "test harness: a failure here should stop the test loudly, and it waits on the real clock"
)]

use std::fs;
use std::net::{SocketAddr, TcpListener as StdListener, TcpStream as StdStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
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

/// A client config trusting the PEM certificates `roots_pem`.
pub fn client_config(roots_pem: &str) -> rustls::ClientConfig {
    culvert_tls::client_config(culvert_tls::pem_roots(roots_pem.as_bytes()).unwrap()).unwrap()
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
    let provider = culvert_tls::crypto_provider();
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
    let server_name = ServerName::try_from(name.to_owned()).unwrap();
    verifier
        .verify_server_cert(&chain[0], &chain[1..], &server_name, &[], UnixTime::now())
        .unwrap_or_else(|err| panic!("chain for {name} does not verify: {err}"));
}
