//! A scripted Cloudflare stand-in on loopback: every request is recorded (with the
//! runtime's time, so paused-clock tests can measure waits) and answered by a handler.

#![allow(dead_code, reason = "each test file uses part of the support module")]
#![allow(clippy::unwrap_used, reason = "test helpers")]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use culvert_cloudflare::{ApiToken, Client, RateLimit, RetryPolicy};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::time::Instant;

/// The API token the tests' clients use.
pub(crate) const TOKEN: &str = "test-token-Zq7Xw9";

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    /// Path and query as sent, the `/client/v4` prefix removed.
    pub(crate) target: String,
    pub(crate) authorization: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) body: String,
    pub(crate) at: Instant,
}

impl Seen {
    /// The value of a query parameter, percent-decoding left to the caller.
    pub(crate) fn query(&self, name: &str) -> Option<String> {
        let query = self.target.split_once('?')?.1;
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key == name).then(|| value.to_owned())
        })
    }

    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// What the server does with a request.
pub(crate) enum Reply {
    /// Answer with a status, extra header fields and a body.
    Answer {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Close the connection without answering.
    Close,
    /// Never answer.
    Hang,
}

impl Reply {
    pub(crate) fn ok(result: serde_json::Value) -> Self {
        Self::json(
            200,
            serde_json::json!({"success": true, "errors": [], "messages": [], "result": result}),
        )
    }

    pub(crate) fn page(
        result: serde_json::Value,
        page: u32,
        per_page: u32,
        total_count: u32,
    ) -> Self {
        let count = result.as_array().map_or(0, Vec::len);
        let total_pages = total_count.div_ceil(per_page.max(1));
        Self::json(
            200,
            serde_json::json!({
                "success": true, "errors": [], "messages": [], "result": result,
                "result_info": {"page": page, "per_page": per_page, "count": count,
                                "total_count": total_count, "total_pages": total_pages}
            }),
        )
    }

    pub(crate) fn error(status: u16, code: u32, message: &str) -> Self {
        Self::json(
            status,
            serde_json::json!({"success": false, "errors": [{"code": code, "message": message}],
                               "messages": [], "result": null}),
        )
    }

    pub(crate) fn json(status: u16, body: serde_json::Value) -> Self {
        Self::Answer {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    pub(crate) fn with_header(self, name: &'static str, value: &str) -> Self {
        match self {
            Self::Answer {
                status,
                mut headers,
                body,
            } => {
                headers.push((name, value.to_owned()));
                Self::Answer {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// The server: its address and what it saw.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Serves `handler` on a fresh loopback port.
    pub(crate) async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        tokio::spawn(accept(listener, None, handler, seen.clone()));
        Self { addr, seen }
    }

    /// Serves `handler` over TLS with `config`.
    pub(crate) async fn start_tls(
        config: Arc<rustls::ServerConfig>,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        tokio::spawn(accept(listener, Some(acceptor), handler, seen.clone()));
        Self { addr, seen }
    }

    /// Answers the scripted replies in order, then 500s.
    pub(crate) async fn scripted(replies: Vec<Reply>) -> Self {
        let script = Mutex::new(VecDeque::from(replies));
        Self::start(move |_| {
            script
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Reply::error(500, 0, "script exhausted"))
        })
        .await
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/client/v4", self.addr)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// A client of this server with test settings: a short backoff, the default budget.
    pub(crate) fn client(&self) -> Client {
        self.builder().build().unwrap()
    }

    pub(crate) fn builder(&self) -> culvert_cloudflare::ClientBuilder {
        Client::builder(ApiToken::new(TOKEN).unwrap())
            .base_url(self.base_url())
            .retry(fast_retries(4))
            .timeout(Duration::from_secs(600))
            .rate_limit(RateLimit::default())
    }
}

pub(crate) fn fast_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        max_retry_after: Duration::from_secs(60),
    }
}

async fn accept(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    handler: Handler,
    seen: Arc<Mutex<Vec<Seen>>>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let handler = handler.clone();
        let seen = seen.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let handler = handler.clone();
                let seen = seen.clone();
                async move { serve(request, &handler, &seen).await }
            });
            let http = hyper::server::conn::http1::Builder::new();
            match tls {
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                }
                None => {
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                }
            }
        });
    }
}

/// The error that makes hyper drop a connection without answering.
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

async fn serve(
    request: Request<Incoming>,
    handler: &Handler,
    seen: &Mutex<Vec<Seen>>,
) -> Result<Response<Full<Bytes>>, Dropped> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let header = |name: http::header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let request = Seen {
        method: parts.method.to_string(),
        target: target
            .strip_prefix("/client/v4")
            .unwrap_or(&target)
            .to_owned(),
        authorization: header(http::header::AUTHORIZATION),
        content_type: header(http::header::CONTENT_TYPE),
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
    };
    seen.lock().unwrap().push(request.clone());
    match handler(&request) {
        Reply::Answer {
            status,
            headers,
            body,
        } => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            *response.status_mut() = StatusCode::from_u16(status).unwrap();
            for (name, value) in headers {
                response
                    .headers_mut()
                    .insert(name, http::HeaderValue::from_str(&value).unwrap());
            }
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            Ok(response)
        }
        Reply::Close => Err(Dropped),
        Reply::Hang => std::future::pending().await,
    }
}

/// Every message a test can print about an error: its `Display`, its `Debug` and each
/// cause's `Display`.
pub(crate) fn printed(error: &culvert_cloudflare::Error) -> String {
    let mut out = format!("{error}\n{error:?}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        out.push('\n');
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
