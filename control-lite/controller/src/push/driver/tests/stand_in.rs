//! A config API stand-in on loopback: HTTPS (hyper + tokio-rustls) with a
//! certificate from a test CA (rcgen), answering `GET`/`PUT /config` as a plane
//! does (version and hash kept, 409 on an older version or the serving version
//! with other content, 401 on a wrong token) and recording every request. Also a
//! pod that accepts connections and never answers.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use culvert_router::DataPlaneConfig;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// A test CA.
pub(super) struct Pki {
    pub(super) ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    pub(super) fn new(name: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = params.self_signed(&key).unwrap();
        Self {
            ca_pem: ca.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server config with a certificate for `name` signed by this CA.
    pub(super) fn server_config(&self, name: &str) -> Arc<ServerConfig> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_owned()]).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let certificate = params.signed_by(&key, &self.issuer).unwrap();
        let provider = culvert_tls::crypto_provider();
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![certificate.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        Arc::new(config)
    }
}

/// One request as the stand-in saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) authorization: Option<String>,
    /// The `version` of a `PUT` body that parsed.
    pub(super) version: Option<u64>,
}

#[derive(Default)]
struct Inner {
    /// Version and content hash served.
    serving: Option<(u64, String)>,
    seen: Vec<Seen>,
}

/// A pod's config API.
pub(super) struct StandIn {
    pub(super) addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    task: JoinHandle<()>,
}

impl StandIn {
    /// Serves on a fresh loopback port with `tls`, accepting `token` only.
    pub(super) async fn start(tls: Arc<ServerConfig>, token: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let inner = Arc::new(Mutex::new(Inner::default()));
        let acceptor = TlsAcceptor::from(tls);
        let expected = format!("Bearer {token}");
        let shared = Arc::clone(&inner);
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let inner = Arc::clone(&shared);
                let expected = expected.clone();
                tokio::spawn(async move {
                    // A client refusing the certificate ends here.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |request| {
                        let inner = Arc::clone(&inner);
                        let expected = expected.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                answer(&inner, &expected, request).await,
                            )
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self { addr, inner, task }
    }

    /// What it serves.
    pub(super) fn serving(&self) -> Option<(u64, String)> {
        self.inner.lock().unwrap().serving.clone()
    }

    /// As if the pod had served `version` with content `hash` before.
    pub(super) fn serve(&self, version: u64, hash: &str) {
        self.inner.lock().unwrap().serving = Some((version, hash.to_owned()));
    }

    /// As if the pod had restarted: nothing served.
    pub(super) fn restart_empty(&self) {
        self.inner.lock().unwrap().serving = None;
    }

    /// Every request so far.
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.inner.lock().unwrap().seen.clone()
    }

    /// The `PUT`s so far.
    pub(super) fn puts(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|seen| seen.method == Method::PUT)
            .collect()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    inner: &Mutex<Inner>,
    expected: &str,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| value.to_str().unwrap().to_owned());
    let authorized = authorization.as_deref() == Some(expected);
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value == "application/json");
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let config = serde_json::from_slice::<DataPlaneConfig>(&body).ok();
    let mut inner = inner.lock().unwrap();
    inner.seen.push(Seen {
        method: method.clone(),
        path: path.clone(),
        authorization,
        version: config.as_ref().map(|config| config.version),
    });
    if path != "/config" {
        return json(
            StatusCode::NOT_FOUND,
            serde_json::json!({"error": "no such endpoint"}),
        );
    }
    if !authorized {
        return json(
            StatusCode::UNAUTHORIZED,
            serde_json::json!({"error": "missing or wrong bearer token"}),
        );
    }
    match method {
        Method::GET => match &inner.serving {
            Some((version, hash)) => json(
                StatusCode::OK,
                serde_json::json!({"version": version, "hash": hash, "ready": true}),
            ),
            None => json(
                StatusCode::OK,
                serde_json::json!({"version": null, "hash": null, "ready": false}),
            ),
        },
        Method::PUT if !is_json => json(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            serde_json::json!({"error": "Content-Type must be application/json"}),
        ),
        Method::PUT => {
            let Some(config) = config else {
                return json(
                    StatusCode::BAD_REQUEST,
                    serde_json::json!({"error": "not a config"}),
                );
            };
            let hash = config.content_hash().unwrap();
            if let Some((current, serving)) = &inner.serving {
                let conflict =
                    config.version < *current || (config.version == *current && hash != *serving);
                if conflict {
                    return json(
                        StatusCode::CONFLICT,
                        serde_json::json!({"error": "conflict", "currentVersion": current}),
                    );
                }
            }
            inner.serving = Some((config.version, hash.clone()));
            json(
                StatusCode::OK,
                serde_json::json!({"version": config.version, "hash": hash}),
            )
        }
        _ => json(
            StatusCode::METHOD_NOT_ALLOWED,
            serde_json::json!({"error": "no"}),
        ),
    }
}

fn json(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
}

/// A pod that takes connections and never says a word.
pub(super) struct Silent {
    pub(super) addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Silent {
    pub(super) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((tcp, _)) = listener.accept().await {
                held.push(tcp);
            }
        });
        Self { addr, task }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A pod answering every request with the same raw bytes after the TLS
/// handshake, whatever it was asked.
pub(super) struct Raw {
    pub(super) addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Raw {
    pub(super) async fn start(tls: Arc<ServerConfig>, answer: Vec<u8>) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = TlsAcceptor::from(tls);
        let answer = Arc::new(answer);
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let answer = Arc::clone(&answer);
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut head = Vec::new();
                    let mut buf = [0; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = tls.write_all(&answer).await;
                    let _ = tls.flush().await;
                });
            }
        });
        Self { addr, task }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.task.abort();
    }
}
