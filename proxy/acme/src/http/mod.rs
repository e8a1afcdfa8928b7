//! The HTTPS client the ACME protocol runs over. `instant-acme` signs and parses; this
//! moves the bytes, and stands between it and the server:
//!
//! - TLS is `culvert-tls`'s client (rustls on aws-lc-rs), trusting the configured roots (and the system's unless
//!   turned off), HTTPS only.
//! - Every exchange, body included, ends within the request timeout, and a body larger
//!   than [`MAX_BODY`] is refused rather than buffered.
//! - A `Retry-After` field is clamped to a day and one that cannot be read is dropped, and
//!   the directory's URLs must parse, so no value the server picks can overflow a time
//!   computation or a request builder downstream.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use culvert_tls::HttpsClient;
use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderValue, Method, Request};
use http_body_util::{BodyExt, Limited};
use instant_acme::{BodyWrapper, BytesResponse, HttpClient};
use rustls::RootCertStore;

use crate::Error;
use crate::config::Settings;

/// The largest response body accepted. Directories, orders and certificate chains are a
/// few kilobytes.
pub(crate) const MAX_BODY: usize = 1024 * 1024;

/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// Why an exchange with the ACME server failed below the protocol.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    #[error("no answer within {} s", .0.as_secs())]
    TimedOut(Duration),
    #[error("the directory lists {field} as {value:?}, which is not a URL")]
    BadDirectory { field: String, value: String },
    #[error("the directory is not a JSON object")]
    DirectoryNotObject,
}

/// The [`HttpClient`] handed to `instant-acme`.
pub(crate) struct AcmeHttp {
    client: HttpsClient<BodyWrapper<Bytes>>,
    directory_url: String,
    timeout: Duration,
}

impl AcmeHttp {
    pub(crate) fn new(settings: &Settings) -> Result<Self, Error> {
        let roots = roots(settings.trust.as_deref(), settings.system_roots)?;
        let tls = culvert_tls::client_config(roots).map_err(Error::Tls)?;
        let client = culvert_tls::https_client(
            tls,
            culvert_tls::HttpsOptions::new(settings.request_timeout),
        );
        Ok(Self {
            client,
            directory_url: settings.directory_url.clone(),
            timeout: settings.request_timeout,
        })
    }
}

impl HttpClient for AcmeHttp {
    #[allow(
        clippy::disallowed_methods,
        reason = "the HTTP client is IO: a Retry-After date is measured from now"
    )]
    fn request(
        &self,
        request: Request<BodyWrapper<Bytes>>,
    ) -> Pin<Box<dyn Future<Output = Result<BytesResponse, instant_acme::Error>> + Send>> {
        let is_directory =
            request.method() == Method::GET && request.uri() == self.directory_url.as_str();
        let response = self.client.request(request);
        let timeout = self.timeout;
        Box::pin(async move {
            let exchange = async {
                let (mut parts, body) = response.await.map_err(other)?.into_parts();
                let body = Limited::new(body, MAX_BODY)
                    .collect()
                    .await
                    .map_err(instant_acme::Error::Other)?
                    .to_bytes();
                sanitize_retry_after(&mut parts.headers, SystemTime::now());
                if is_directory && parts.status.is_success() {
                    check_directory(&body).map_err(other)?;
                }
                Ok(BytesResponse {
                    parts,
                    body: Box::new(body),
                })
            };
            match tokio::time::timeout(timeout, exchange).await {
                Ok(result) => result,
                Err(_) => Err(other(Failure::TimedOut(timeout))),
            }
        })
    }
}

fn other(error: impl std::error::Error + Send + Sync + 'static) -> instant_acme::Error {
    instant_acme::Error::Other(Box::new(error))
}

/// The roots to check the directory's certificate against: the configured ones, and
/// the system's unless turned off. Empty only when neither is asked for.
fn roots(extra_pem: Option<&str>, system: bool) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    if let Some(pem) = extra_pem {
        culvert_tls::add_pem_roots(&mut roots, pem.as_bytes()).map_err(Error::Tls)?;
    }
    if system {
        let found = culvert_tls::add_system_roots(&mut roots);
        if found.added == 0 && roots.is_empty() {
            return Err(Error::Trust(format!(
                "no system root certificates found ({})",
                found.errors_text()
            )));
        }
    }
    Ok(roots)
}

/// Rewrites `Retry-After` as a number of seconds no larger than a day, or removes it.
fn sanitize_retry_after(headers: &mut HeaderMap, now: SystemTime) {
    let Some(value) = headers.get(RETRY_AFTER) else {
        return;
    };
    let text = value.to_str().unwrap_or_default().trim();
    let delay = if let Ok(seconds) = text.parse::<u64>() {
        Some(Duration::from_secs(seconds))
    } else if let Ok(date) = httpdate::parse_http_date(text) {
        Some(date.duration_since(now).unwrap_or(Duration::ZERO))
    } else {
        None
    };
    match delay {
        Some(delay) => {
            let seconds = delay.min(MAX_RETRY_AFTER).as_secs();
            headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        None => {
            headers.remove(RETRY_AFTER);
        }
    }
}

/// Every string in the directory object (except the `meta` object) must be a URL that
/// an HTTP request can be built with.
fn check_directory(body: &[u8]) -> Result<(), Failure> {
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice(body) else {
        return Err(Failure::DirectoryNotObject);
    };
    for (field, value) in fields {
        if let serde_json::Value::String(url) = value {
            if url.parse::<http::Uri>().is_err() {
                return Err(Failure::BadDirectory { field, value: url });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
