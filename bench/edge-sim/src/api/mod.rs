//! The simulated Cloudflare v4 API (the subset in `notes`' contract: tunnels, their
//! tokens and remote configurations, zones, DNS records, token verification), served
//! on its own plain HTTP listener under `/client/v4/`, backed by the same state as
//! the edge: a tunnel created here registers at the edge with its token, and its
//! DNS records route the front door.
//!
//! Every answer has the v4 envelope (`success`, `errors`, `messages`, `result`, and
//! `result_info` on lists). Lists really paginate (`page`, `per_page`, clamped to
//! the configured maximum). Requests need `Authorization: Bearer <api token>`
//! (`401`, code `10000`, otherwise); another account's ID is `403` (code `9109`).
//! `POST /_sim/api-faults` (no token) queues faults: the next requests answer `429`
//! with `Retry-After` (code `971`) or a 5xx, one fault per request.
//!
//! Layers, each importing only those below it: `error.rs` (the error answer) and
//! `time.rs` (timestamps) at the bottom; `dns.rs` (zones, records and their rules);
//! `state.rs` (the account: tunnels, zones, records, faults); `envelope.rs` (the
//! answer format and query parsing); this file's handlers on top.

mod dns;
mod envelope;
mod error;
pub(crate) mod state;
pub(crate) mod time;

use std::sync::Arc;

use http::header::{AUTHORIZATION, RETRY_AFTER};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{Value, json};

pub use state::ApiFault;

use crate::body::SimBody;
use crate::registry::{SimConnection, SimConnectionState};
use crate::shared::SimShared;
use dns::{Zone, record_not_found};
use envelope::{failure, page, param, query_pairs, read_json, success};
use error::{ApiError, route_not_found};
use state::{Cloud, TunnelEntry};

/// The API's path prefix.
pub const API_PREFIX: &str = "/client/v4";
/// The path of the fault knob (`POST`, body `{"status":429,"count":2,"retry_after":1}`).
pub const FAULTS_PATH: &str = "/_sim/api-faults";

/// A `POST /_sim/api-faults` body.
#[derive(Debug, serde::Deserialize)]
struct FaultRequest {
    status: u16,
    #[serde(default = "one")]
    count: u32,
    #[serde(default)]
    retry_after: u32,
}

fn one() -> u32 {
    1
}

/// Serves one API-listener request.
pub(crate) async fn handle(shared: Arc<SimShared>, req: Request<Incoming>) -> Response<SimBody> {
    let path = req.uri().path().to_owned();
    if path == FAULTS_PATH && req.method() == Method::POST {
        return match read_json::<FaultRequest>(req).await {
            Ok(f) if f.status == 429 || (500..600).contains(&f.status) => {
                let fault = ApiFault {
                    status: f.status,
                    retry_after: f.retry_after,
                };
                let count = f.count.min(1000);
                shared.add_api_faults(std::iter::repeat_n(fault, count as usize));
                success(json!({"queued": count}))
            }
            Ok(_) => failure(&ApiError::new(
                StatusCode::BAD_REQUEST,
                1001,
                "status must be 429 or 5xx",
            )),
            Err(e) => failure(&e),
        };
    }
    let Some(rest) = path.strip_prefix(API_PREFIX) else {
        return failure(&route_not_found(&path));
    };
    let fault = shared.cloud().faults.pop_front();
    if let Some(fault) = fault {
        shared.event(format!(
            "api: {} {path}: injected fault {}",
            req.method(),
            fault.status
        ));
        return fault_response(fault);
    }
    let authorized = {
        let cloud = shared.cloud();
        req.headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|token| token.trim() == cloud.api_token)
    };
    if !authorized {
        return failure(&ApiError::new(
            StatusCode::UNAUTHORIZED,
            10000,
            "Authentication error",
        ));
    }
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let method = req.method().clone();
    let result = dispatch(&shared, &method, &segments, &path, req).await;
    if let Err(e) = &result {
        shared.event(format!(
            "api: {method} {path}: {} code {}: {}",
            e.status.as_u16(),
            e.code,
            e.message
        ));
    }
    result.unwrap_or_else(|e| failure(&e))
}

fn fault_response(fault: ApiFault) -> Response<SimBody> {
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    if status == StatusCode::TOO_MANY_REQUESTS {
        let mut response = failure(&ApiError::new(
            status,
            971,
            "Please wait and consider throttling your request speed",
        ));
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(fault.retry_after));
        return response;
    }
    failure(&ApiError::new(
        status,
        10001,
        "service temporarily unavailable (simulated)",
    ))
}

fn forbidden() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        9109,
        "Unauthorized to access requested resource",
    )
}

/// A tunnel object with its status and live connections.
fn tunnel_json(tunnel: &TunnelEntry, connections: &[SimConnection], colo: &str) -> Value {
    let id = tunnel.id.to_string();
    let mine: Vec<&SimConnection> = connections
        .iter()
        .filter(|c| c.tunnel_id.as_deref() == Some(id.as_str()))
        .filter(|c| c.state != SimConnectionState::Connected)
        .collect();
    let healthy = mine
        .iter()
        .any(|c| c.state == SimConnectionState::Registered);
    let status = if healthy {
        "healthy"
    } else if tunnel.ever_registered {
        "down"
    } else {
        "inactive"
    };
    let conns: Vec<Value> = mine
        .iter()
        .map(|c| {
            json!({
                "colo_name": colo,
                "id": c.connection_id,
                "is_pending_reconnect": c.state == SimConnectionState::Draining,
                "opened_at": c.registered_at,
                "origin_ip": c.peer.ip().to_string(),
                "client_id": c.client_id,
                "client_version": c.version,
            })
        })
        .collect();
    json!({
        "id": id,
        "account_tag": tunnel.account_tag,
        "name": tunnel.name,
        "created_at": tunnel.created_at,
        "deleted_at": tunnel.deleted_at,
        "config_src": tunnel.config_src,
        "remote_config": tunnel.config_src == "cloudflare",
        "status": status,
        "connections": conns,
        "tun_type": "cfd_tunnel",
    })
}

/// Serves an authorised API request by its method and path segments.
async fn dispatch(
    shared: &SimShared,
    method: &Method,
    segments: &[String],
    path: &str,
    req: Request<Incoming>,
) -> Result<Response<SimBody>, ApiError> {
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let query = query_pairs(&req);
    let max = shared.api_max_per_page;
    match (method, parts.as_slice()) {
        (&Method::GET, ["user", "tokens", "verify"]) => {
            let id = shared.cloud().api_token_id.clone();
            Ok(success(json!({"id": id, "status": "active"})))
        }
        (_, ["accounts", account, rest @ ..]) if !rest.is_empty() => {
            let mine = *account == shared.cloud().account_id;
            if !mine {
                return Err(forbidden());
            }
            tunnels(shared, method, rest, path, &query, req).await
        }
        (&Method::GET, ["zones"]) => {
            let cloud = shared.cloud();
            let items: Vec<Value> = cloud
                .zones
                .iter()
                .filter(|z| param(&query, "name").is_none_or(|n| n.eq_ignore_ascii_case(&z.name)))
                .filter(|_| param(&query, "status").is_none_or(|s| s == "active"))
                .filter(|_| param(&query, "account.id").is_none_or(|a| a == cloud.account_id))
                .map(|z| zone_json(&cloud, z))
                .collect();
            page(items, &query, 20, max)
        }
        (&Method::GET, ["zones", zone]) => {
            let cloud = shared.cloud();
            let zone = cloud.zone(zone, path)?;
            Ok(success(zone_json(&cloud, zone)))
        }
        (_, ["zones", zone, "dns_records", rest @ ..]) => {
            let zone = shared.cloud().zone(zone, path)?.clone();
            records(shared, method, &zone, rest, path, &query, req).await
        }
        _ => Err(route_not_found(path)),
    }
}

fn zone_json(cloud: &Cloud, zone: &Zone) -> Value {
    json!({
        "id": zone.id,
        "name": zone.name,
        "status": "active",
        "paused": false,
        "type": "full",
        "account": {"id": cloud.account_id, "name": cloud.account_name},
    })
}

async fn tunnels(
    shared: &SimShared,
    method: &Method,
    rest: &[&str],
    path: &str,
    query: &[(String, String)],
    req: Request<Incoming>,
) -> Result<Response<SimBody>, ApiError> {
    let connections = shared.registry().snapshot().0;
    let colo = shared.location.as_str();
    match (method, rest) {
        (&Method::GET, ["cfd_tunnel"]) => {
            let cloud = shared.cloud();
            let deleted = match param(query, "is_deleted") {
                Some("true") => Some(true),
                Some("false") => Some(false),
                _ => None,
            };
            let items: Vec<Value> = cloud
                .tunnels
                .iter()
                .filter(|t| t.account_tag == cloud.account_id)
                .filter(|t| param(query, "name").is_none_or(|n| n == t.name))
                .filter(|t| deleted.is_none_or(|d| d == t.deleted_at.is_some()))
                .filter(|t| {
                    param(query, "uuid").is_none_or(|u| u.eq_ignore_ascii_case(&t.id.to_string()))
                })
                .map(|t| tunnel_json(t, &connections, colo))
                .collect();
            page(items, query, 20, shared.api_max_per_page)
        }
        (&Method::POST, ["cfd_tunnel"]) => {
            let body = read_json(req).await?;
            let tunnel = shared.cloud().create_tunnel(body)?;
            shared.event(format!(
                "api: created tunnel {} ({})",
                tunnel.id, tunnel.name
            ));
            let mut json = tunnel_json(&tunnel, &connections, colo);
            json["token"] = Value::String(tunnel.token().encode());
            Ok(success(json))
        }
        (&Method::GET, ["cfd_tunnel", id]) => {
            let cloud = shared.cloud();
            Ok(success(tunnel_json(
                cloud.account_tunnel(id)?,
                &connections,
                colo,
            )))
        }
        (&Method::DELETE, ["cfd_tunnel", id]) => {
            let canonical = shared.cloud().account_tunnel(id)?.id.to_string();
            let active = connections.iter().any(|c| {
                c.state == SimConnectionState::Registered
                    && c.tunnel_id.as_deref() == Some(canonical.as_str())
            });
            // As Cloudflare: a connected tunnel goes only with `cascade=true`,
            // which also closes its connections.
            let cascade = param(query, "cascade") == Some("true");
            if active && !cascade {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    1022,
                    "Cannot delete tunnel because it has active connections",
                ));
            }
            let tunnel = shared.cloud().delete_tunnel(id)?;
            let evicted = shared.registry().evict_tunnel(&canonical);
            shared.event(format!(
                "api: deleted tunnel {} ({}), closing {evicted} connections",
                tunnel.id, tunnel.name
            ));
            let connections = shared.registry().snapshot().0;
            Ok(success(tunnel_json(&tunnel, &connections, colo)))
        }
        (&Method::GET, ["cfd_tunnel", id, "token"]) => {
            let token = shared.cloud().live_tunnel(id)?.token().encode();
            Ok(success(Value::String(token)))
        }
        (&Method::GET, ["cfd_tunnel", id, "configurations"]) => {
            let config = shared.cloud().live_tunnel(id)?.configuration_json();
            Ok(success(config))
        }
        (&Method::PUT, ["cfd_tunnel", id, "configurations"]) => {
            let body = read_json(req).await?;
            let config = shared.cloud().put_configuration(id, body)?;
            shared.event(format!(
                "api: tunnel {id}: configuration version {}",
                config["version"]
            ));
            Ok(success(config))
        }
        _ => Err(route_not_found(path)),
    }
}

async fn records(
    shared: &SimShared,
    method: &Method,
    zone: &Zone,
    rest: &[&str],
    path: &str,
    query: &[(String, String)],
    req: Request<Incoming>,
) -> Result<Response<SimBody>, ApiError> {
    match (method, rest) {
        (&Method::GET, []) => {
            let cloud = shared.cloud();
            let name = param(query, "name")
                .or_else(|| param(query, "name.exact"))
                .map(|n| n.trim_end_matches('.').to_ascii_lowercase());
            let content = param(query, "content").or_else(|| param(query, "content.exact"));
            let items: Vec<Value> = cloud
                .records
                .iter()
                .filter(|r| r.zone_id == zone.id)
                .filter(|r| param(query, "type").is_none_or(|t| t.eq_ignore_ascii_case(&r.kind)))
                .filter(|r| name.as_ref().is_none_or(|n| *n == r.name))
                .filter(|r| content.is_none_or(|c| c == r.content))
                .map(|r| r.to_json(&zone.name))
                .collect();
            page(items, query, 100, shared.api_max_per_page)
        }
        (&Method::POST, []) => {
            let body = read_json(req).await?;
            let record = shared.cloud().records.create(zone, body)?;
            shared.event(format!(
                "api: created {} {} -> {}",
                record.kind, record.name, record.content
            ));
            Ok(success(record.to_json(&zone.name)))
        }
        (&Method::GET, [id]) => {
            let cloud = shared.cloud();
            cloud
                .records
                .iter()
                .find(|r| r.zone_id == zone.id && r.id == *id)
                .map(|r| success(r.to_json(&zone.name)))
                .ok_or_else(record_not_found)
        }
        (&Method::PUT, [id]) => {
            let body = read_json(req).await?;
            let record = shared.cloud().records.replace(zone, id, body)?;
            shared.event(format!(
                "api: replaced {} {} -> {}",
                record.kind, record.name, record.content
            ));
            Ok(success(record.to_json(&zone.name)))
        }
        (&Method::DELETE, [id]) => {
            let result = shared.cloud().records.delete(zone, id)?;
            shared.event(format!("api: deleted record {id} in {}", zone.name));
            Ok(success(result))
        }
        _ => Err(route_not_found(path)),
    }
}
