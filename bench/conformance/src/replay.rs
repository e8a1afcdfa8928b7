//! Static replay of one request vector: the routing decision and every pure outcome
//! (which backend, gateway-made statuses, redirects, rewrites, header edits, CORS)
//! computed with the router exactly as the data plane computes them, without
//! sockets. Properties that only a live exchange can show are reported as skipped.

use super::checks::Verdict;
use super::observe::{Observed, check, check_distribution};
use super::prepare::EndpointOwners;
use super::vector::{Exchange, Expect, RequestSpec};
use culvert_control_lite::translate::{DataPlaneId, Translation};
use culvert_router::config::DataPlaneConfig;
use culvert_router::outcome::{
    RedirectRequest, apply_header_modifier, is_preflight, preflight_response, redirect_location,
    response_headers, rewrite_path,
};
use culvert_router::path::{normalize_path, split_query};
use culvert_router::{NoMatch, RequestView, RouteTable, RouteTableBuilder};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

/// Compiled tables of one translation, one per data plane.
pub struct Tables {
    translation: Translation,
    tables: BTreeMap<DataPlaneId, Result<RouteTable, String>>,
}

impl Tables {
    /// Compiles every data plane of `translation`.
    pub fn new(translation: Translation) -> Self {
        let builder = RouteTableBuilder::new();
        let tables = translation
            .data_planes
            .iter()
            .map(|(id, config)| (id.clone(), builder.build(config).map_err(|e| e.to_string())))
            .collect();
        Self {
            translation,
            tables,
        }
    }

    /// Any data plane whose config the router refused, with the reason.
    pub fn refused(&self) -> Vec<String> {
        self.tables
            .iter()
            .filter_map(|(id, t)| t.as_ref().err().map(|e| format!("{id:?}: {e}")))
            .collect()
    }
}

/// Why an exchange can only be judged live, if it can.
fn needs_live(request: &RequestSpec, expect: &Expect) -> Option<&'static str> {
    if request.backend_behavior.is_some() {
        Some("needs a live backend that delays or fails (timeouts, retries)")
    } else if request.websocket_message.is_some() || expect.websocket_echo.is_some() {
        Some("needs a live WebSocket exchange")
    } else if !expect.mirrored_to.is_empty() {
        Some("needs mirrored copies to arrive at live backends")
    } else if expect.backend_sees_sni.is_some() || expect.backend_sees_client_certificate.is_some()
    {
        Some("needs a live TLS connection to the backend")
    } else if request.client_certificate.is_some() {
        Some("needs a live TLS handshake with a client certificate")
    } else if expect.response_protocol.is_some() {
        Some("needs a live connection to observe the protocol")
    } else {
        None
    }
}

/// Replays and judges one exchange.
pub fn judge(tables: &Tables, owners: &EndpointOwners, exchange: &Exchange) -> Verdict {
    if let Some(why) = needs_live(&exchange.request, &exchange.expect) {
        return Verdict::Skip(why.to_owned());
    }
    let repeat = exchange.request.repeat.unwrap_or(1).max(1);
    let mut random = SplitMix(0x5EED ^ u64::from(repeat));
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for _ in 0..repeat {
        let observed = replay(tables, owners, &exchange.request, random.next());
        if let Err(problem) = check(&exchange.expect, &observed) {
            return Verdict::Fail(problem);
        }
        if let Some(backend) = &observed.backend {
            *counts.entry(backend.clone()).or_default() += 1;
        }
    }
    match check_distribution(&exchange.expect, &counts, repeat) {
        Ok(()) => Verdict::Pass,
        Err(why) => Verdict::Fail(why),
    }
}

fn replay(
    tables: &Tables,
    owners: &EndpointOwners,
    request: &RequestSpec,
    random: u64,
) -> Observed {
    let failed = |why: String| Observed {
        failure: Some(why),
        ..Observed::default()
    };
    let Some((namespace, name)) = request.gateway.split_once('/') else {
        return failed(format!("bad gateway {:?}", request.gateway));
    };
    let gateway_key = (namespace.to_owned(), name.to_owned());
    let Some(plane) = tables.translation.gateway_planes.get(&gateway_key) else {
        return failed("gateway is not served".to_owned());
    };
    let (Some(Ok(table)), Some(config)) = (
        tables.tables.get(plane),
        tables.translation.data_planes.get(plane),
    ) else {
        return failed("data plane config was refused".to_owned());
    };
    let ip: Option<IpAddr> = tables
        .translation
        .gateways
        .get(&gateway_key)
        .and_then(|s| s.addresses.first())
        .and_then(|a| a.value.as_deref())
        .and_then(|v| v.parse().ok());
    let Some(ip) = ip else {
        return failed("gateway has no address".to_owned());
    };
    let default_port = if request.scheme == "http" { 80 } else { 443 };
    let host = request.host.clone().unwrap_or_else(|| {
        if request.port == default_port {
            ip.to_string()
        } else {
            format!("{ip}:{}", request.port)
        }
    });
    let sni = request
        .sni
        .clone()
        .unwrap_or_else(|| culvert_router::host::normalize_request_host(&host).into_owned());
    if !table
        .listeners()
        .iter()
        .any(|l| l.port == request.port && l.address.is_none_or(|a| a == ip))
    {
        return failed(format!("nothing listens on port {}", request.port));
    }
    if request.scheme == "tls" {
        let terminated_here = table
            .listener(request.port, Some(ip), &sni)
            .and_then(|id| table.listener_info(id))
            .is_some_and(|info| info.terminates_tls);
        if terminated_here {
            if let Err(why) = handshake(table, config, request.port, ip, &sni) {
                return failed(why);
            }
        }
        return match table.route_tls(request.port, Some(ip), &sni) {
            None => failed(format!("no TLS route for SNI {sni:?}")),
            Some(found) => match found.backends.pick(random) {
                None => failed("TLS route has no backend with weight".to_owned()),
                Some(backend) if backend.failure_status().is_some() => {
                    failed(format!("backend {} is unavailable", backend.name))
                }
                Some(backend) => Observed {
                    backend: backend
                        .endpoints
                        .first()
                        .and_then(|e| owners.owner(e.ip()))
                        .map(str::to_owned),
                    terminated_by_backend: Some(!terminated_here),
                    ..Observed::default()
                },
            },
        };
    }
    if request.scheme == "https" {
        if let Err(why) = handshake(table, config, request.port, ip, &sni) {
            return failed(why);
        }
        let by_sni = table.listener(request.port, Some(ip), &sni);
        let by_host = table.listener(request.port, Some(ip), &host);
        if by_host.is_some() && by_host != by_sni {
            return Observed {
                status: Some(421),
                ..Observed::default()
            };
        }
    }
    http_exchange(table, owners, request, ip, &host, random)
}

/// Whether a TLS handshake for `sni` completes: an HTTPS listener owns the name and
/// has a certificate.
fn handshake(
    table: &RouteTable,
    config: &DataPlaneConfig,
    port: u16,
    ip: IpAddr,
    sni: &str,
) -> Result<(), String> {
    let listener = table
        .listener(port, Some(ip), sni)
        .ok_or_else(|| format!("no listener for SNI {sni:?}"))?;
    let spec = config
        .listeners
        .get(listener.0 as usize)
        .ok_or("listener vanished")?;
    if !spec.terminates_tls() {
        return Err(format!("listener {} does not terminate TLS", spec.name));
    }
    match &spec.tls {
        Some(tls) if !tls.certificate_refs.is_empty() => Ok(()),
        _ => Err(format!("listener {} has no valid certificate", spec.name)),
    }
}

fn request_headers(request: &RequestSpec) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let grpc = request.protocol.as_deref() == Some("gRPC");
    let pairs = request.headers.iter().chain(request.metadata.iter());
    for (name, value) in pairs {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    if grpc {
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
    }
    headers
}

fn http_exchange(
    table: &RouteTable,
    owners: &EndpointOwners,
    request: &RequestSpec,
    ip: IpAddr,
    host: &str,
    random: u64,
) -> Observed {
    let grpc = request.protocol.as_deref() == Some("gRPC");
    let method_text = if grpc {
        "POST".to_owned()
    } else {
        request.method.clone().unwrap_or_else(|| "GET".to_owned())
    };
    let target = request.path.clone().unwrap_or_else(|| "/".to_owned());
    let (raw_path, query) = split_query(&target);
    let Ok(path) = normalize_path(raw_path) else {
        return Observed {
            status: Some(400),
            ..Observed::default()
        };
    };
    let normalized_target = match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    let headers = request_headers(request);
    let view = RequestView {
        port: request.port,
        local_ip: Some(ip),
        host,
        path: &normalized_target,
        method: &method_text,
        headers: &headers,
    };
    let found = match table.route(&view) {
        Ok(found) => found,
        Err(NoMatch::NoListener | NoMatch::NoRoute) => {
            return Observed {
                status: Some(404),
                ..Observed::default()
            };
        }
    };
    let filters = found.rule.filters();
    let prefix_len = found.matched_prefix_len.unwrap_or(0);
    let method = Method::from_bytes(method_text.as_bytes()).unwrap_or(Method::GET);
    if let Some(cors) = &filters.cors {
        if is_preflight(&method, &headers) {
            return Observed {
                status: Some(204),
                response_headers: preflight_response(cors, &headers),
                ..Observed::default()
            };
        }
    }
    if let Some(redirect) = &filters.redirect {
        let scheme = if request.scheme == "https" {
            "https"
        } else {
            "http"
        };
        let redirect_request = RedirectRequest {
            scheme,
            host,
            listener_port: request.port,
            path: &path,
            query,
            matched_prefix_len: prefix_len,
        };
        return Observed {
            status: Some(redirect.status),
            location: Some(redirect_location(redirect, &redirect_request)),
            ..Observed::default()
        };
    }
    let Some(backend) = found.rule.backends().pick(random) else {
        return Observed {
            status: Some(500),
            ..Observed::default()
        };
    };
    if let Some(status) = backend.failure_status() {
        return Observed {
            status: Some(status),
            ..Observed::default()
        };
    }
    let mut backend_headers = headers.clone();
    if let Some(modifier) = &filters.request_headers {
        apply_header_modifier(modifier, &mut backend_headers);
    }
    if let Some(modifier) = &backend.request_headers {
        apply_header_modifier(modifier, &mut backend_headers);
    }
    let mut backend_host = host.to_owned();
    let mut backend_path = path.to_string();
    if let Some(rewrite) = &filters.rewrite {
        if let Some(hostname) = &rewrite.hostname {
            backend_host = hostname.to_string();
        }
        if let Some(modifier) = &rewrite.path {
            backend_path = rewrite_path(modifier, &path, prefix_len);
        }
    }
    if let Some(q) = query {
        backend_path = format!("{backend_path}?{q}");
    }
    let mut response = HeaderMap::new();
    for (name, value) in &request.backend_response_headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.append(name, value);
        }
    }
    if let Some(modifier) = &filters.response_headers {
        apply_header_modifier(modifier, &mut response);
    }
    if let Some(modifier) = &backend.response_headers {
        apply_header_modifier(modifier, &mut response);
    }
    if let Some(cors) = &filters.cors {
        for (name, value) in &response_headers(cors, &headers) {
            response.append(name.clone(), value.clone());
        }
    }
    let endpoint = backend.endpoints.first().map(SocketAddr::ip);
    Observed {
        status: Some(200),
        failure: None,
        backend: endpoint.and_then(|ip| owners.owner(ip)).map(str::to_owned),
        backend_pod: endpoint.and_then(|ip| owners.pod(ip)).map(str::to_owned),
        backend_path: Some(backend_path),
        backend_host: Some(backend_host),
        backend_method: Some(method_text),
        backend_headers,
        response_headers: response,
        location: None,
        terminated_by_backend: None,
        backend_sni: None,
        backend_client_certificate: None,
        protocol: None,
        websocket_echo: None,
        grpc_status: None,
    }
}

/// A small deterministic generator (SplitMix64) for weighted choices, so a replay is
/// repeatable.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
