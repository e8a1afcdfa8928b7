//! Helpers shared by the integration tests: a raw HTTP/1.1 client and free ports. The
//! `culvert` binary's tests (`proxy/cli/tests/`) include this file too, by path.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail the test on any error"
)]
#![allow(clippy::disallowed_methods, reason = "tests run on the real clock")]
#![allow(dead_code, unreachable_pub, reason = "each test binary uses a subset")]

use std::net::SocketAddr;
use std::num::NonZeroUsize;

use bytes::Bytes;
use culvert_proxy::{ServeConfig, Server};
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One answer, body read to the end.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "body is not JSON ({err}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Sends one request on a new connection.
pub async fn send(addr: SocketAddr, request: Request<Full<Bytes>>) -> Reply {
    try_send(addr, request).await.unwrap()
}

/// Sends one request on a new connection; `Err` says what failed.
pub async fn try_send(addr: SocketAddr, request: Request<Full<Bytes>>) -> Result<Reply, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|err| format!("connect: {err}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| format!("handshake: {err}"))?;
    tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|err| format!("request: {err:?}"))?;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|err| format!("body: {err:?}"))?
        .to_bytes();
    Ok(Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

/// A GET of `path` with `Host: host`.
pub async fn get(addr: SocketAddr, host: &str, path: &str) -> Reply {
    let request = Request::get(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    send(addr, request).await
}

/// `PUT /config` with a JSON body and an optional bearer token.
pub async fn put_config(addr: SocketAddr, body: &serde_json::Value, token: Option<&str>) -> Reply {
    let mut request = Request::put("/config")
        .header("host", "control")
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    send(
        addr,
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap(),
    )
    .await
}

/// The value of one `/metrics` series (`name{labels}` exactly as exposed) on the
/// config API at `control`, if it is there.
pub async fn metric(control: SocketAddr, series: &str) -> Option<u64> {
    let reply = get(control, "control", "/metrics").await;
    let text = String::from_utf8(reply.body.to_vec()).unwrap();
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|value| value.parse().ok())
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A CA and a function issuing leaf certificates signed by it, as PEM.
pub struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    /// The CA certificate, PEM.
    pub pem: String,
}

impl TestCa {
    pub fn new() -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "culvert test CA");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Self {
            pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// `(certificate PEM, key PEM)` for `names`.
    pub fn leaf(&self, names: &[&str]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let params = rcgen::CertificateParams::new(names).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A client config trusting this CA, offering `alpn`.
    pub fn client_config(&self, alpn: &[&[u8]]) -> std::sync::Arc<rustls::ClientConfig> {
        self.client_config_with(alpn, None)
    }

    /// [`Self::client_config`], showing `certificate` (`(chain PEM, key PEM)`)
    /// when the server asks for one.
    pub fn client_config_with(
        &self,
        alpn: &[&[u8]],
        certificate: Option<&(String, String)>,
    ) -> std::sync::Arc<rustls::ClientConfig> {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(self.pem.as_bytes()).unwrap())
            .unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(culvert_proxy::crypto_provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let mut config = match certificate {
            Some((chain, key)) => builder
                .with_client_auth_cert(
                    CertificateDer::pem_slice_iter(chain.as_bytes())
                        .collect::<Result<Vec<_>, _>>()
                        .unwrap(),
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        std::sync::Arc::new(config)
    }
}

/// A TLS connection to `addr` with SNI `sni`; returns the stream and the ALPN
/// protocol agreed.
pub async fn tls_connect(
    addr: SocketAddr,
    sni: &str,
    config: std::sync::Arc<rustls::ClientConfig>,
) -> (tokio_rustls::client::TlsStream<TcpStream>, Option<Vec<u8>>) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from(sni.to_owned()).unwrap();
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .unwrap();
    let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    (stream, alpn)
}

/// Sends one request over HTTP/2 on `io` (TLS with ALPN h2, or h2c prior knowledge).
pub async fn send_h2<I>(io: I, request: Request<Full<Bytes>>) -> Reply
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        TokioIo::new(io),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

/// Sends one HTTP/1.1 request on `io`.
pub async fn send_h1_on<I>(io: I, request: Request<Full<Bytes>>) -> Reply
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(connection);
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

/// A fresh, empty temporary directory for this test process.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("culvert-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens a WebSocket on `stream` (GET `path` with `Host: host`) and returns the
/// answer's head, lowercased.
pub async fn websocket_upgrade<S>(stream: &mut S, host: &str, path: &str) -> String
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\n\
         Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap().to_ascii_lowercase()
}

/// Sends `text` as one masked client text frame (RFC 6455 §5.2) and returns the
/// frame that comes back.
pub async fn websocket_echo<S>(stream: &mut S, text: &str) -> Vec<u8>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    assert!(text.len() < 126);
    let mask = [0x11, 0x22, 0x33, 0x44];
    let mut frame = vec![0x81, 0x80 | text.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(text.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    stream.write_all(&frame).await.unwrap();
    let mut reply = vec![0u8; 2 + text.len()];
    stream.read_exact(&mut reply).await.unwrap();
    reply
}

/// A data plane with one worker (so every request shares one pool) routing requests
/// for `hostnames` (every request, when empty) to `backend`; returns it and its
/// HTTP address.
pub async fn proxy_to(backend: SocketAddr, hostnames: &[&str]) -> (Server, SocketAddr) {
    let config =
        ServeConfig::new(SocketAddr::from(([127, 0, 0, 1], 0))).with_workers(NonZeroUsize::MIN);
    proxy_with(config, backend, hostnames).await
}

/// [`proxy_to`], the data plane started from `config`.
pub async fn proxy_with(
    config: ServeConfig,
    backend: SocketAddr,
    hostnames: &[&str],
) -> (Server, SocketAddr) {
    let server = Server::start(config).unwrap();
    let port = free_port();
    let reply = put_config(
        server.control_addr(),
        &serde_json::json!({
            "version": 1,
            "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}],
            "httpRoutes": [{"name": "route", "listeners": ["http"], "hostnames": hostnames,
                "rules": [{"backends": [{"name": "b", "endpoints": [backend.to_string()]}]}]}]
        }),
        None,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    (server, SocketAddr::from(([127, 0, 0, 1], port)))
}

/// A child process, killed (and reaped) when dropped.
pub struct Process(pub std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `check` every 100 ms until it holds; fails the test after `limit`.
pub async fn until(what: &str, limit: std::time::Duration, mut check: impl AsyncFnMut() -> bool) {
    let start = std::time::Instant::now();
    while !check().await {
        assert!(start.elapsed() < limit, "never: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
