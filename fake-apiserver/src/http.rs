//! The HTTP front end: plain HTTP/1.1 on loopback with bearer-token auth, the
//! request log, injected faults, and watch streams (one JSON event per line,
//! chunked, ended by `timeoutSeconds`, by [`crate::FakeApiServer::end_watches`] or
//! when the server stops).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::api::{self, Answer, ListQuery, Target};
use crate::store::status;
use crate::{Inner, LoggedRequest, Serving};

type Body = BoxBody<Bytes, Infallible>;

pub(crate) async fn serve(inner: Arc<Inner>, addr: SocketAddr) -> std::io::Result<Serving> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let token = inner.token.clone();
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let inner = Arc::clone(&inner);
                    connections.spawn(async move {
                        let service = service_fn(move |request| {
                            let inner = Arc::clone(&inner);
                            async move { Ok::<_, Infallible>(handle(&inner, request).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
        // Going down cuts every connection, watches included.
        connections.abort_all();
    });
    Ok(Serving {
        addr,
        token,
        stop: Some(stop),
    })
}

fn full(status_code: u16, body: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() =
        StatusCode::from_u16(status_code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn page_not_found() -> Response<Body> {
    let mut response =
        Response::new(Full::new(Bytes::from_static(b"404 page not found\n")).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn reason_of(code: u16) -> &'static str {
    match code {
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "BadRequest",
    }
}

async fn handle(inner: &Arc<Inner>, request: Request<Incoming>) -> Response<Body> {
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query_text = request.uri().query().unwrap_or_default().to_owned();
    let query: BTreeMap<String, String> = url_query(&query_text);
    let watching = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    let authorized = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(format!("Bearer {}", inner.token).as_str());
    let content_type = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let response = if authorized {
        match injected(inner, &method, &path, watching) {
            Some(code) => {
                let mut response =
                    full(code, &status(code, reason_of(code), "injected fault", None));
                if code == 429 {
                    response.headers_mut().insert(
                        http::header::RETRY_AFTER,
                        http::HeaderValue::from_static("1"),
                    );
                }
                response
            }
            None => route(
                inner,
                &method,
                &path,
                &query,
                watching,
                &content_type,
                &body,
            ),
        }
    } else {
        full(401, &status(401, "Unauthorized", "Unauthorized", None))
    };
    inner
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(LoggedRequest {
            method,
            path,
            query: query_text,
            status: response.status().as_u16(),
        });
    response
}

/// The code of the first injected fault matching the request, consuming one use.
fn injected(inner: &Inner, method: &str, path: &str, watching: bool) -> Option<u16> {
    let mut faults = inner.faults.lock().unwrap_or_else(PoisonError::into_inner);
    let fault = faults.iter_mut().find(|f| {
        f.times > 0
            && f.method.as_deref().is_none_or(|m| m == method)
            && f.path_contains.as_deref().is_none_or(|p| path.contains(p))
            && f.watch.is_none_or(|w| w == watching)
    })?;
    fault.times -= 1;
    Some(fault.code)
}

fn route(
    inner: &Arc<Inner>,
    method: &str,
    path: &str,
    query: &BTreeMap<String, String>,
    watching: bool,
    content_type: &str,
    body: &[u8],
) -> Response<Body> {
    if path == "/version" {
        return full(
            200,
            &json!({"major": "1", "minor": "35", "gitVersion": "v1.35.0-culvert-fake"}),
        );
    }
    let Some(target) = api::target(&inner.kinds(), path) else {
        return page_not_found();
    };
    let answer: Answer = match (method, &target.name) {
        ("GET", None) => {
            let query = match ListQuery::parse(query, &target.kind) {
                Ok(query) => query,
                Err(answer) => return full(answer.0, &answer.1),
            };
            if watching {
                return watch(inner, target, query);
            }
            api::list(inner, &target, &query)
        }
        ("GET", Some(name)) => api::get(inner, &target, name),
        ("POST", None) => match serde_json::from_slice(body) {
            Ok(object) => api::create(inner, &target, object),
            Err(e) => (400, status(400, "BadRequest", &e.to_string(), None)),
        },
        ("PUT", Some(name)) => match serde_json::from_slice(body) {
            Ok(object) => api::update(inner, &target, name, object, false),
            Err(e) => (400, status(400, "BadRequest", &e.to_string(), None)),
        },
        ("PATCH", Some(name)) => {
            let media = content_type.split(';').next().unwrap_or_default().trim();
            match media {
                "application/merge-patch+json" => match serde_json::from_slice(body) {
                    Ok(patch) => api::update(inner, &target, name, patch, true),
                    Err(e) => (400, status(400, "BadRequest", &e.to_string(), None)),
                },
                "application/strategic-merge-patch+json" if !target.kind.custom => {
                    match serde_json::from_slice(body) {
                        Ok(patch) => api::update(inner, &target, name, patch, true),
                        Err(e) => (400, status(400, "BadRequest", &e.to_string(), None)),
                    }
                }
                _ => (
                    415,
                    status(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json",
                        None,
                    ),
                ),
            }
        }
        ("DELETE", Some(name)) => api::delete(inner, &target, name),
        _ => (
            405,
            status(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                None,
            ),
        ),
    };
    full(answer.0, &answer.1)
}

/// A watch: 200 at once, then events as lines.
fn watch(inner: &Arc<Inner>, target: Target, query: ListQuery) -> Response<Body> {
    let (lines, receiver) = mpsc::channel::<Bytes>(64);
    let inner = Arc::clone(inner);
    tokio::spawn(async move {
        let _ = stream_events(&inner, &target, &query, &lines).await;
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|line| (Ok::<_, Infallible>(Frame::data(line)), receiver))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

async fn stream_events(
    inner: &Inner,
    target: &Target,
    query: &ListQuery,
    lines: &mpsc::Sender<Bytes>,
) -> Result<(), mpsc::error::SendError<Bytes>> {
    let send = |value: Value| Bytes::from(value.to_string() + "\n");
    let mut written = inner.written.subscribe();
    let mut end = inner.end_watches.subscribe();
    let timeout = tokio::time::sleep(Duration::from_secs(query.timeout_seconds.unwrap_or(1800)));
    tokio::pin!(timeout);
    // Decided under the lock, sent after it: (first lines, resume revision, ended).
    let (first, mut from, ended) = {
        let store = inner.store.lock().unwrap_or_else(PoisonError::into_inner);
        match query.resource_version.filter(|rv| *rv > 0) {
            Some(rv) if rv < store.floor => {
                let message = format!("too old resource version: {rv} ({})", store.floor);
                let line =
                    json!({"type": "ERROR", "object": status(410, "Expired", &message, None)});
                (vec![line], rv, true)
            }
            Some(rv) => (Vec::new(), rv, false),
            None => {
                // No version: the current state first, as ADDED events.
                let prefix = target.kind.qualified();
                let current: Vec<Value> = store
                    .objects
                    .iter()
                    .filter(|(k, o)| {
                        k.0 == prefix && query.selects(&target.kind, target.namespace.as_deref(), o)
                    })
                    .map(|(_, o)| json!({"type": "ADDED", "object": o}))
                    .collect();
                (current, store.revision, false)
            }
        }
    };
    for line in first {
        lines.send(send(line)).await?;
    }
    if ended {
        return Ok(());
    }
    loop {
        let pending: Vec<Value> = {
            let store = inner.store.lock().unwrap_or_else(PoisonError::into_inner);
            if from < store.floor {
                let message = format!("too old resource version: {from} ({})", store.floor);
                vec![json!({"type": "ERROR", "object": status(410, "Expired", &message, None)})]
            } else {
                let events: Vec<Value> = store
                    .log
                    .iter()
                    .filter(|e| e.revision > from)
                    .filter_map(|e| api::watch_line(target, query, e))
                    .collect();
                from = store.revision;
                events
            }
        };
        for line in pending {
            let expired = line["type"] == "ERROR";
            lines.send(send(line)).await?;
            if expired {
                return Ok(());
            }
        }
        tokio::select! {
            changed = written.changed() => if changed.is_err() { return Ok(()) },
            _ = end.changed() => return Ok(()),
            () = &mut timeout => return Ok(()),
            () = lines.closed() => return Ok(()),
        }
    }
}

fn url_query(text: &str) -> BTreeMap<String, String> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
