//! What the backend does with one request.
//!
//! Records it, then routes like upstream `echo-basic`: gRPC calls to `grpc`, then
//! `/health`, `/status/NNN`, `/retry/…` and, for everything else, the JSON echo
//! with `?delay=` and `X-Echo-Set-Header`. A WebSocket upgrade on any path is
//! accepted and handed to `ws`. Bad input gets a 4xx; only a `/retry/` attempt
//! without `responseCode` fails the connection (HTTP/1) or the stream (HTTP/2) on
//! purpose.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use base64::Engine as _;
use bytes::Bytes;
use culvert_tunnel_proto::metadata::canonical_header_name;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Version};
use http_body_util::{BodyExt as _, Limited};
use hyper::body::Incoming;
use serde::Serialize;
use sha1::{Digest as _, Sha1};

use super::reply::{Reply, ReplyBody};
use super::{Connection, SeenRequest, Shared, duration, grpc, ws};

/// The largest request body the backend reads; larger ones get 413.
pub(super) const MAX_BODY: usize = 1024 * 1024;

/// How many distinct `/retry/` uuids are remembered; beyond that new ones get 503 so a
/// long run cannot grow the table without bound.
const MAX_RETRY_IDS: usize = 65_536;

/// Appended to a WebSocket key before hashing (RFC 6455, section 1.3).
const WS_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The service's error: makes hyper drop the HTTP/1 connection without an answer,
/// or reset the HTTP/2 stream.
#[derive(Debug, thiserror::Error)]
#[error("retry attempt failed on purpose")]
pub(super) struct DeliberateReset;

/// Upstream `echo-basic`'s `RequestAssertions`, same field names.
#[derive(Debug, Serialize)]
struct Echo<'a> {
    path: &'a str,
    host: &'a str,
    method: &'a str,
    proto: &'a str,
    headers: BTreeMap<String, Vec<String>>,
    namespace: &'a str,
    ingress: &'a str,
    service: &'a str,
    pod: &'a str,
    sni: &'a str,
}

/// Answers one request.
#[allow(
    clippy::disallowed_methods,
    reason = "the echo backend stamps what it received on the real clock"
)]
pub(super) async fn handle(
    mut req: Request<Incoming>,
    shared: Arc<Shared>,
    conn: Arc<Connection>,
) -> Result<Reply, DeliberateReset> {
    let websocket_key = websocket_key(&req);
    let upgrade = websocket_key.as_ref().map(|_| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let body = if upgrade.is_some() {
        Bytes::new()
    } else {
        match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(err) if err.is::<http_body_util::LengthLimitError>() => {
                return Ok(message(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "request body too large",
                ));
            }
            Err(_) => {
                return Ok(message(
                    StatusCode::BAD_REQUEST,
                    "failed to read request body",
                ));
            }
        }
    };
    let seen = SeenRequest {
        connection: conn.id,
        method: parts.method.clone(),
        path: request_uri(&parts.uri, parts.version),
        host: host(&parts.uri, &parts.headers),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        proto: parts.version,
        body,
        received_at: Instant::now(),
        tls: conn.tls.clone(),
    };
    shared.record(seen.clone());

    if let (Some(key), Some(upgrade)) = (websocket_key, upgrade) {
        let stopped = conn.stopped.clone();
        tokio::spawn(async move {
            if let Ok(upgraded) = upgrade.await {
                ws::echo(hyper_util::rt::TokioIo::new(upgraded), stopped).await;
            }
        });
        return Ok(switching_protocols(&key));
    }

    if grpc::is_grpc(&seen) {
        return Ok(grpc::answer(&seen, &shared.config));
    }
    let path = parts.uri.path();
    if path == "/health" {
        return Ok(Response::new(ReplyBody::new(Bytes::from_static(b"OK"))));
    }
    if let Some(code) = path.strip_prefix("/status/") {
        return Ok(status(code));
    }
    if path.starts_with("/retry/") {
        if let Some(failure) = retry(&parts.uri, &seen, &shared, &conn)? {
            return Ok(failure);
        }
    }
    Ok(echo(&seen, &parts.uri, &shared).await)
}

/// The JSON echo, after any `?delay=`.
async fn echo(seen: &SeenRequest, uri: &http::Uri, shared: &Shared) -> Reply {
    if let Some(delay) = query_param(uri, "delay") {
        match duration::parse(&delay) {
            Ok(delay) => tokio::time::sleep(delay).await,
            Err(err) => return message(StatusCode::INTERNAL_SERVER_ERROR, &err.to_string()),
        }
    }
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in &seen.headers {
        // Go moves Host out of the header map into `host`.
        if name == "host" {
            continue;
        }
        headers
            .entry(canonical_header_name(name))
            .or_default()
            .push(value.clone());
    }
    let config = &shared.config;
    let echo = Echo {
        path: &seen.path,
        host: &seen.host,
        method: seen.method.as_str(),
        proto: proto_name(seen.proto),
        headers,
        namespace: &config.namespace,
        ingress: "",
        service: &config.name,
        pod: config.pod(),
        sni: seen
            .tls
            .as_ref()
            .and_then(|tls| tls.server_name.as_deref())
            .unwrap_or(""),
    };
    let body = match serde_json::to_vec_pretty(&echo) {
        Ok(body) => body,
        Err(err) => return message(StatusCode::INTERNAL_SERVER_ERROR, &err.to_string()),
    };
    let mut response = Response::new(ReplyBody::new(body));
    let out = response.headers_mut();
    for value in seen.header("x-echo-set-header") {
        add_echo_headers(out, value);
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Applies one `X-Echo-Set-Header` value: comma-separated `Name: value` entries; a
/// name given twice gets its values joined with `,` into one header, as upstream does.
/// Entries whose name or value is not a valid header are skipped.
pub(super) fn add_echo_headers(out: &mut HeaderMap, list: &str) {
    for entry in list.split(',') {
        let (name, value) = entry.trim().split_once(':').unwrap_or((entry.trim(), ""));
        let Ok(name) = HeaderName::from_bytes(name.trim().as_bytes()) else {
            continue;
        };
        let value = value.trim();
        let joined = match out.get(&name) {
            Some(existing) => {
                let mut joined = existing.as_bytes().to_vec();
                joined.push(b',');
                joined.extend_from_slice(value.as_bytes());
                HeaderValue::from_bytes(&joined)
            }
            None => HeaderValue::from_str(value),
        };
        if let Ok(joined) = joined {
            out.insert(name, joined);
        }
    }
}

/// The `/retry/` contract: the first `succeedAfter` attempts sharing `uuid` fail with
/// `responseCode`, or by a reset when it is absent. `Ok(None)` means echo normally.
fn retry(
    uri: &http::Uri,
    seen: &SeenRequest,
    shared: &Shared,
    conn: &Connection,
) -> Result<Option<Reply>, DeliberateReset> {
    let Some(uuid) = query_param(uri, "uuid").filter(|u| !u.is_empty()) else {
        return Ok(Some(message(StatusCode::BAD_REQUEST, "missing uuid")));
    };
    let Some(succeed_after) = query_param(uri, "succeedAfter").and_then(|n| n.parse::<u64>().ok())
    else {
        return Ok(Some(message(
            StatusCode::BAD_REQUEST,
            "missing or invalid succeedAfter",
        )));
    };
    let code = match query_param(uri, "responseCode") {
        None => None,
        Some(code) => match code
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
        {
            Some(code) => Some(code),
            None => {
                return Ok(Some(message(
                    StatusCode::BAD_REQUEST,
                    "invalid responseCode",
                )));
            }
        },
    };
    let attempt = {
        let mut retries = shared
            .retries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if retries.len() >= MAX_RETRY_IDS && !retries.contains_key(&uuid) {
            return Ok(Some(message(
                StatusCode::SERVICE_UNAVAILABLE,
                "retry table full",
            )));
        }
        let attempts = retries.entry(uuid).or_insert(0);
        *attempts += 1;
        *attempts
    };
    if attempt > succeed_after {
        return Ok(None);
    }
    match code {
        Some(code) => Ok(Some(message(code, "failing on purpose"))),
        None => {
            if seen.proto != Version::HTTP_2 {
                if let Some(socket) = &conn.socket {
                    // Best effort: without it the close is a FIN, which the client
                    // still sees as the connection closing before a response.
                    let _ = socket.set_linger(Some(std::time::Duration::ZERO));
                }
            }
            Err(DeliberateReset)
        }
    }
}

/// Upstream's `/status/NNN`: that status, or 400 if `NNN` is not three digits.
fn status(code: &str) -> Reply {
    let code = Some(code)
        .filter(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|c| c.parse::<u16>().ok())
        .and_then(|c| StatusCode::from_u16(c).ok())
        .unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = Response::new(ReplyBody::default());
    *response.status_mut() = code;
    response
}

/// A JSON `{"message": …}` answer, as upstream's `processError` writes.
fn message(code: StatusCode, text: &str) -> Reply {
    let body = serde_json::json!({ "message": text }).to_string();
    let mut response = Response::new(ReplyBody::new(body));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The `Sec-WebSocket-Key` of an HTTP/1.1 WebSocket upgrade request, if it is one.
fn websocket_key(req: &Request<Incoming>) -> Option<HeaderValue> {
    let headers = req.headers();
    let has_token = |name: HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    let is_upgrade = req.version() == Version::HTTP_11
        && has_token(header::CONNECTION, "upgrade")
        && has_token(header::UPGRADE, "websocket");
    if !is_upgrade {
        return None;
    }
    headers.get(header::SEC_WEBSOCKET_KEY).cloned()
}

fn switching_protocols(key: &HeaderValue) -> Reply {
    let mut hasher = Sha1::new();
    hasher.update(key.as_bytes());
    hasher.update(WS_GUID.as_bytes());
    let accept = base64::engine::general_purpose::STANDARD.encode(hasher.finalize());
    let mut response = Response::new(ReplyBody::default());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    response
}

/// Go's `RequestURI`: the request target as received. HTTP/2 has no request line, so
/// it is `:path`.
fn request_uri(uri: &http::Uri, version: Version) -> String {
    if version == Version::HTTP_2 {
        return uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), ToString::to_string);
    }
    uri.to_string()
}

/// Go's `Request.Host`: the URI's authority if the target had one (always for
/// HTTP/2), else the `Host` header.
fn host(uri: &http::Uri, headers: &HeaderMap) -> String {
    if let Some(authority) = uri.authority() {
        return authority.as_str().to_owned();
    }
    headers
        .get(header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        .unwrap_or_default()
}

/// Go's `Request.Proto`.
fn proto_name(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2.0",
        Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

/// The first value of query parameter `name`, percent-decoded (`+` is a space, as Go's
/// `FormValue` reads it).
pub(super) fn query_param(uri: &http::Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(key) == name).then(|| percent_decode(value))
    })
}

fn percent_decode(input: &str) -> String {
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(byte) = hex {
                    out.push(byte);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
