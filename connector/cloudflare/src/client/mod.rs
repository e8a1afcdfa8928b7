//! [`Client`]: one authenticated connection pool to the API, and the call loop every
//! endpoint goes through.
//!
//! A call waits for the shared [`RateLimit`] budget before each attempt, sends with the
//! bearer token (marked sensitive so no header dump shows it), reads at most
//! [`MAX_BODY`] bytes within the request timeout, and retries as [`RetryPolicy`] says.
//! What Cloudflare answers is decoded by [`envelope`](crate::envelope); errors carry the
//! method and the path, never a header, and anything the server sent back has the token
//! scrubbed out before it lands in an [`Error`].

mod budget;
mod retry;
mod transport;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::rand::SecureRandom as _;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::envelope::{self, Decoded, Refusal};
use crate::{ApiToken, Error};
use budget::Budget;
pub use budget::RateLimit;
use retry::Failed;
pub use retry::RetryPolicy;
use transport::{BaseUrl, Http};

/// The real API's base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.cloudflare.com/client/v4";

/// The largest answer body read. Pages of a few hundred records are far below it.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

const USER_AGENT_VALUE: &str = concat!("culvert/", env!("CARGO_PKG_VERSION"));

/// Settings of a [`Client`]; start at [`Client::builder`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    token: ApiToken,
    base_url: String,
    timeout: Duration,
    connect_timeout: Duration,
    extra_ca_pem: Option<String>,
    system_roots: bool,
    rate_limit: RateLimit,
    retry: RetryPolicy,
}

impl ClientBuilder {
    /// The API's base URL (default [`DEFAULT_BASE_URL`]). `http://` only on a loopback
    /// host.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// How long one attempt may take, answer body included (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long connecting may take (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Also trust the CA certificates in this PEM text (tests, a TLS-inspecting proxy).
    pub fn extra_ca_pem(mut self, pem: impl Into<String>) -> Self {
        self.extra_ca_pem = Some(pem.into());
        self
    }

    /// Whether to trust the platform's root certificates (default yes).
    pub fn system_roots(mut self, on: bool) -> Self {
        self.system_roots = on;
        self
    }

    /// The request budget shared by every copy of the client (default Cloudflare's
    /// global limit, 1200 per 5 minutes).
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = limit;
        self
    }

    /// How failed attempts are repeated.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Checks the settings and builds the client. Nothing is sent yet.
    pub fn build(self) -> Result<Client, Error> {
        let base = BaseUrl::parse(&self.base_url)?;
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(Error::Config("timeouts must be above zero".to_owned()));
        }
        if self.rate_limit.requests == 0
            || self.rate_limit.requests > budget::MAX_REQUESTS
            || self.rate_limit.per.is_zero()
        {
            return Err(Error::Config(format!(
                "rate limit must allow 1 to {} requests per non-zero window",
                budget::MAX_REQUESTS
            )));
        }
        if self.retry.max_attempts == 0 {
            return Err(Error::Config(
                "retries need at least one attempt".to_owned(),
            ));
        }
        let http = transport::http(
            &base,
            self.extra_ca_pem.as_deref(),
            self.system_roots,
            self.connect_timeout,
        )?;
        let shared = Shared {
            http,
            base,
            timeout: self.timeout,
            retry: self.retry,
            budget: Budget::new(self.rate_limit),
            random: aws_lc_rs::rand::SystemRandom::new(),
        };
        Ok(Client::from_parts(Arc::new(shared), self.token))
    }
}

/// What every copy of a client shares: the pool, the settings and the budget.
struct Shared {
    http: Http,
    base: BaseUrl,
    timeout: Duration,
    retry: RetryPolicy,
    budget: Budget,
    random: aws_lc_rs::rand::SystemRandom,
}

/// A Cloudflare v4 API client authenticated by one [`ApiToken`]. Cloning is cheap;
/// clones and [`Client::with_token`] copies share the connection pool and the request
/// budget.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    token: ApiToken,
    authorization: HeaderValue,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.shared.base)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Settings for a client authenticating with `token`.
    pub fn builder(token: ApiToken) -> ClientBuilder {
        ClientBuilder {
            token,
            base_url: DEFAULT_BASE_URL.to_owned(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            extra_ca_pem: None,
            system_roots: true,
            rate_limit: RateLimit::default(),
            retry: RetryPolicy::default(),
        }
    }

    /// The same client authenticating with another token, sharing this one's pool and
    /// request budget.
    pub fn with_token(&self, token: ApiToken) -> Client {
        Self::from_parts(self.shared.clone(), token)
    }

    fn from_parts(shared: Arc<Shared>, token: ApiToken) -> Self {
        // `ApiToken::new` admits only visible ASCII, which is a valid header value.
        let mut authorization = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        authorization.set_sensitive(true);
        Self {
            shared,
            token,
            authorization,
        }
    }

    /// Makes one API call: budget, attempts, retries, decoding.
    pub(crate) async fn call<T: DeserializeOwned>(&self, call: &Call) -> Result<Decoded<T>, Error> {
        let uri = self.shared.base.join(&call.path_and_query())?;
        // What errors and logs show: the path with the token taken out, should a caller
        // ever pass it as a name.
        let target = self.scrub(&call.path_and_query());
        let mut attempt = 1;
        loop {
            self.shared.budget.acquire().await;
            let (failed, error) = match self.attempt(call, &uri, &target).await {
                Ok(answer) => {
                    let failed = if answer.status == StatusCode::TOO_MANY_REQUESTS {
                        Some(Failed::Throttled(answer.retry_after))
                    } else if answer.status.is_server_error() {
                        Some(Failed::ServerError)
                    } else {
                        None
                    };
                    let decoded = self.decode(call, &target, answer);
                    match (failed, decoded) {
                        (Some(failed), Err(error)) => (Some(failed), error),
                        (_, decoded) => return decoded,
                    }
                }
                Err((failed, error)) => (failed, error),
            };
            let delay = failed.and_then(|failed| {
                let random = self.random();
                retry::next_delay(&self.shared.retry, &call.method, attempt, failed, random)
            });
            let Some(delay) = delay else {
                return Err(error);
            };
            tracing::debug!(
                method = %call.method,
                path = %target,
                attempt,
                delay_ms = delay.as_millis() as u64,
                error = %error,
                "cloudflare request failed; retrying"
            );
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// One exchange within the timeout.
    async fn attempt(
        &self,
        call: &Call,
        uri: &http::Uri,
        target: &str,
    ) -> Result<Answer, (Option<Failed>, Error)> {
        let mut request = Request::builder()
            .method(call.method.clone())
            .uri(uri.clone())
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, USER_AGENT_VALUE);
        if call.body.is_some() {
            request = request.header(CONTENT_TYPE, "application/json");
        }
        let mut request = request
            .body(Full::new(call.body.clone().unwrap_or_default()))
            .map_err(|err| {
                let error = Error::Config(format!("request {target:?}: {err}"));
                (None, error)
            })?;
        request
            .headers_mut()
            .insert(AUTHORIZATION, self.authorization.clone());
        let method = || call.method.clone();
        let path = || target.to_owned();
        let exchange = async {
            let response = self.shared.http.request(request).await.map_err(|err| {
                let connect = err.is_connect();
                let error = Error::Transport {
                    method: method(),
                    path: path(),
                    connect,
                    source: Box::new(err),
                };
                let failed = if connect {
                    Failed::NotSent
                } else {
                    Failed::Lost
                };
                (Some(failed), error)
            })?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_BODY)
                .collect()
                .await
                .map_err(|err| {
                    if err.downcast_ref::<LengthLimitError>().is_some() {
                        // Not retried: the same answer would come back.
                        let error = Error::TooLarge {
                            method: method(),
                            path: path(),
                            limit: MAX_BODY,
                        };
                        (None, error)
                    } else {
                        let error = Error::Transport {
                            method: method(),
                            path: path(),
                            connect: false,
                            source: err,
                        };
                        (Some(Failed::Lost), error)
                    }
                })?
                .to_bytes();
            Ok(Answer {
                status: parts.status,
                retry_after: retry::parse_retry_after(parts.headers.get(RETRY_AFTER)),
                body,
            })
        };
        match tokio::time::timeout(self.shared.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err((
                Some(Failed::Lost),
                Error::Timeout {
                    method: method(),
                    path: path(),
                    after: self.shared.timeout,
                },
            )),
        }
    }

    fn decode<T: DeserializeOwned>(
        &self,
        call: &Call,
        target: &str,
        answer: Answer,
    ) -> Result<Decoded<T>, Error> {
        envelope::decode(answer.status, &answer.body).map_err(|refusal| match refusal {
            Refusal::Api {
                mut errors,
                mut messages,
            } => {
                for entry in errors.iter_mut().chain(messages.iter_mut()) {
                    entry.message = self.scrub(&entry.message);
                }
                Error::Api {
                    method: call.method.clone(),
                    path: target.to_owned(),
                    status: answer.status,
                    errors,
                    messages,
                    retry_after: answer.retry_after,
                }
            }
            Refusal::Malformed(detail) => Error::Decode {
                method: call.method.clone(),
                path: target.to_owned(),
                status: answer.status,
                detail: self.scrub(&detail),
            },
        })
    }

    /// Server text with this client's token taken out, in case a server echoes it.
    pub(crate) fn scrub(&self, text: &str) -> String {
        text.replace(self.token.expose(), "<redacted>")
    }

    fn random(&self) -> u64 {
        let mut bytes = [0u8; 8];
        // Without randomness the backoff keeps its lower bound; nothing else depends on it.
        if self.shared.random.fill(&mut bytes).is_err() {
            return 0;
        }
        u64::from_le_bytes(bytes)
    }
}

/// One exchange's answer.
struct Answer {
    status: StatusCode,
    retry_after: Option<Duration>,
    body: Bytes,
}

/// One API call: method, path below the base, query, JSON body.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) query: Vec<(&'static str, String)>,
    pub(crate) body: Option<Bytes>,
}

impl Call {
    pub(crate) fn new(method: Method, path: String) -> Self {
        Self {
            method,
            path,
            query: Vec::new(),
            body: None,
        }
    }

    /// Adds a query parameter (encoded when sent).
    pub(crate) fn query(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.query.push((name, value.into()));
        self
    }

    /// Sets a JSON body.
    pub(crate) fn json(mut self, body: &impl Serialize) -> Result<Self, Error> {
        let bytes = serde_json::to_vec(body).map_err(|err| Error::Invalid {
            kind: "request body",
            reason: err.to_string(),
        })?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }

    /// The path with its query, percent-encoded.
    pub(crate) fn path_and_query(&self) -> String {
        let mut out = self.path.clone();
        for (i, (name, value)) in self.query.iter().enumerate() {
            out.push(if i == 0 { '?' } else { '&' });
            out.push_str(name);
            out.push('=');
            encode_into(&mut out, value);
        }
        out
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn encode_into(out: &mut String, value: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &byte in value.as_bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
}

#[cfg(test)]
mod tests;
