//! One plane's HTTPS client for its pods' config API: the rustls settings
//! trusting only the plane's CA, for the plane's Service name, with the plane's
//! bearer token; one request per fresh connection, its answer read into at most
//! [`MAX_ANSWER`] bytes and classified into a [`Reported`] or a [`Failure`]. The
//! token is sent as a sensitive header and cut out of anything the pod answers,
//! so no failure message carries it. Start at [`Client::request`].

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::rt::TokioIo;
use rustls::crypto::CryptoProvider;
use rustls_pki_types::ServerName;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::PlaneTarget;
use crate::Error;
use crate::push::Failure;
use crate::push::state::{Action, Reported};

/// The largest answer read from a pod; the config API's answers are a few
/// dozen bytes.
pub(super) const MAX_ANSWER: usize = 64 * 1024;

/// The longest reason kept from an error answer.
const MAX_REASON: usize = 512;

/// How the TLS settings were made, to tell whether a new target needs new ones.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    ca_pem: String,
    server_name: String,
    token: String,
}

/// The config API client of one plane.
pub(super) struct Client {
    connector: TlsConnector,
    server_name: ServerName<'static>,
    authorization: HeaderValue,
    origin: Origin,
}

impl Client {
    /// Settings for `target`'s CA, server name and token; refused when one of
    /// them cannot be used.
    pub(super) fn new(target: &PlaneTarget, provider: &Arc<CryptoProvider>) -> Result<Self, Error> {
        if target.token.is_empty() {
            return Err(Error::ConfigApiToken);
        }
        let mut authorization = HeaderValue::from_str(&format!("Bearer {}", target.token))
            .map_err(|_| Error::ConfigApiToken)?;
        authorization.set_sensitive(true);
        let server_name = ServerName::try_from(target.server_name.clone())
            .map_err(|_| Error::ConfigApiServerName(target.server_name.clone()))?;
        let roots = culvert_tls::pem_roots(target.ca_pem.as_bytes())
            .map_err(|err| Error::ConfigApiCa(with_causes(&err)))?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(provider))
            .with_safe_default_protocol_versions()
            .map_err(|err| Error::ConfigApiCa(err.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            server_name,
            authorization,
            origin: Origin {
                ca_pem: target.ca_pem.clone(),
                server_name: target.server_name.clone(),
                token: target.token.clone(),
            },
        })
    }

    /// Whether these settings are what `target` asks for (so its TLS session cache
    /// is kept).
    pub(super) fn serves(&self, target: &PlaneTarget) -> bool {
        self.origin.ca_pem == target.ca_pem
            && self.origin.server_name == target.server_name
            && self.origin.token == target.token
    }

    /// `GET /config`, or `PUT /config` with `body`, to `pod` on a fresh
    /// connection. Unbounded in time: the caller puts the timeout around it.
    pub(super) async fn request(
        &self,
        pod: SocketAddr,
        action: &Action,
        body: Bytes,
    ) -> Result<Reported, Failure> {
        let tcp = TcpStream::connect(pod)
            .await
            .map_err(|err| Failure::Connect(err.to_string()))?;
        // Best effort: the request is one small write either way.
        let _ = tcp.set_nodelay(true);
        let tls = self
            .connector
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(|err| Failure::Tls(self.redact(&err.to_string())))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|err| Failure::Response(err.to_string()))?;
        let driver = AbortOnDrop(tokio::spawn(async move {
            // The connection ends with this exchange; how it ended shows in the
            // request's own result.
            let _ = connection.await;
        }));
        let request = self.build(pod, action, body)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|err| Failure::Response(err.to_string()))?;
        let status = response.status();
        let answer = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|err| {
                if err.downcast_ref::<LengthLimitError>().is_some() {
                    Failure::Response(format!("answer larger than {MAX_ANSWER} bytes"))
                } else {
                    Failure::Response(err.to_string())
                }
            })?
            .to_bytes();
        drop(driver);
        self.classify(status, &answer)
    }

    fn build(
        &self,
        pod: SocketAddr,
        action: &Action,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, Failure> {
        let host = format!("{}:{}", self.origin.server_name, pod.port());
        let builder = Request::builder()
            .uri("/config")
            .header(header::HOST, host)
            .header(header::AUTHORIZATION, self.authorization.clone());
        let builder = match action {
            Action::Get => builder.method(Method::GET),
            Action::Put { .. } => builder
                .method(Method::PUT)
                .header(header::CONTENT_TYPE, "application/json"),
        };
        builder
            .body(Full::new(body))
            .map_err(|err| Failure::Response(format!("building the request: {err}")))
    }

    /// The answer as what the pod serves, or the failure its status means.
    pub(super) fn classify(&self, status: StatusCode, answer: &[u8]) -> Result<Reported, Failure> {
        match status {
            StatusCode::OK => {
                let state: ServingBody = serde_json::from_slice(answer).map_err(|err| {
                    Failure::Response(format!("not the config API's JSON: {err}"))
                })?;
                Ok(Reported {
                    version: state.version,
                    hash: state.hash,
                    tunnel_registered: state.tunnel.map(|t| t.registered),
                })
            }
            StatusCode::UNAUTHORIZED => Err(Failure::Unauthorized),
            StatusCode::CONFLICT => Err(Failure::Conflict {
                current_version: serde_json::from_slice::<ErrorBody>(answer)
                    .ok()
                    .and_then(|body| body.current_version),
            }),
            status if status.is_client_error() => Err(Failure::Refused {
                status: status.as_u16(),
                reason: self.reason(answer),
            }),
            status if status.is_server_error() => Err(Failure::Server {
                status: status.as_u16(),
                reason: self.reason(answer),
            }),
            status => Err(Failure::Response(format!("unexpected status {status}"))),
        }
    }

    /// The `error` of a JSON error answer, or the answer's start; bounded, the
    /// token cut out.
    fn reason(&self, answer: &[u8]) -> String {
        let text = match serde_json::from_slice::<ErrorBody>(answer) {
            Ok(ErrorBody {
                error: Some(error), ..
            }) => error,
            _ => String::from_utf8_lossy(answer).into_owned(),
        };
        let mut text = self.redact(text.trim());
        if text.len() > MAX_REASON {
            let mut end = MAX_REASON;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push('…');
        }
        text
    }

    /// `text` without the token, should a pod echo it back.
    fn redact(&self, text: &str) -> String {
        text.replace(self.origin.token.as_str(), "[token]")
    }
}

/// `error` and its causes on one line: the refusal is a message (it goes into the
/// plane's status), so the cause's text is all of it that is kept.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `GET /config` and a taken `PUT /config`: `version` and `hash`, `null` before
/// the first config; `tunnel` on a plane serving one.
#[derive(Deserialize)]
struct ServingBody {
    version: Option<u64>,
    hash: Option<String>,
    #[serde(default)]
    tunnel: Option<TunnelBody>,
}

/// `"tunnel": {"registered": N}`.
#[derive(Deserialize)]
struct TunnelBody {
    registered: u32,
}

/// An error answer: `{"error"}`, and `currentVersion` with a 409.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody {
    error: Option<String>,
    current_version: Option<u64>,
}

/// Aborts the connection task when the exchange ends, however it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
