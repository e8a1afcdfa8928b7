//! Static replay of one request vector: the routing decision and every pure outcome
//! (which backend, gateway-made statuses, redirects, rewrites, header edits, CORS)
//! computed with the router exactly as the data plane computes them, without
//! sockets. Properties that only a live exchange can show are reported as skipped.

use super::checks::Verdict;
use super::prepare::EndpointOwners;
use super::vector::{Exchange, Expect, RequestSpec};
use crate::translate::{DataPlaneId, Translation};
use culvert_router::config::{DataPlaneConfig, ListenerProtocol};
use culvert_router::outcome::{
    RedirectRequest, apply_header_modifier, is_preflight, preflight_response, redirect_location,
    response_headers, rewrite_path,
};
use culvert_router::path::{normalize_path, split_query};
use culvert_router::{NoMatch, RequestView, RouteTable, RouteTableBuilder};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Compiled tables of one translation, one per data plane.
pub struct Tables<'t> {
    translation: &'t Translation,
    tables: BTreeMap<DataPlaneId, Result<RouteTable, String>>,
}

impl<'t> Tables<'t> {
    /// Compiles every data plane of `translation`.
    pub fn new(translation: &'t Translation) -> Self {
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

/// What one request produced, as far as the static replay can tell.
#[derive(Debug, Default)]
struct Observed {
    /// `None`: no HTTP response (connection or handshake failed), with the reason.
    status: Option<u16>,
    failure: Option<String>,
    backend: Option<String>,
    backend_path: Option<String>,
    backend_host: Option<String>,
    backend_method: Option<String>,
    backend_headers: HeaderMap,
    response_headers: HeaderMap,
    location: Option<String>,
    terminated_by_backend: Option<bool>,
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
    } else if expect.backend_pods.is_some() {
        Some("needs live pods to tell which pods served the request")
    } else {
        None
    }
}

/// Replays and judges one exchange.
pub fn judge(tables: &Tables<'_>, owners: &EndpointOwners, exchange: &Exchange) -> Verdict {
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
    let tolerance = exchange.expect.distribution_tolerance.unwrap_or(0.05);
    for (service, share) in &exchange.expect.distribution {
        let got = f64::from(counts.get(service).copied().unwrap_or(0)) / f64::from(repeat);
        let off = if *share == 0.0 {
            got > 0.0
        } else {
            (got - share).abs() > tolerance
        };
        if off {
            return Verdict::Fail(format!(
                "{service} got {got:.3} of requests, expected {share} ± {tolerance}"
            ));
        }
    }
    Verdict::Pass
}

fn replay(
    tables: &Tables<'_>,
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
                    terminated_by_backend: Some(true),
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
    if spec.protocol != ListenerProtocol::Https {
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
    Observed {
        status: Some(200),
        failure: None,
        backend: backend
            .endpoints
            .first()
            .and_then(|e| owners.owner(e.ip()))
            .map(str::to_owned),
        backend_path: Some(backend_path),
        backend_host: Some(backend_host),
        backend_method: Some(method_text),
        backend_headers,
        response_headers: response,
        location: None,
        terminated_by_backend: None,
    }
}

fn joined(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

fn check(expect: &Expect, seen: &Observed) -> Result<(), String> {
    let transport_ok = seen.failure.is_none();
    if expect.connection_rejected || expect.request_fails {
        return if transport_ok {
            Err(format!(
                "expected a failed connection, got status {:?}",
                seen.status
            ))
        } else {
            Ok(())
        };
    }
    if let Some(why) = &seen.failure {
        if seen.terminated_by_backend.is_none() {
            return Err(format!("request failed: {why}"));
        }
    }
    if !expect.status.is_empty()
        && !seen.status.is_some_and(|s| expect.status.contains(&s))
        && seen.terminated_by_backend.is_none()
    {
        return Err(format!(
            "status {:?}, expected one of {:?}",
            seen.status, expect.status
        ));
    }
    if seen.status.is_some_and(|s| expect.status_not.contains(&s)) {
        return Err(format!("status {:?} is forbidden", seen.status));
    }
    match &expect.backend {
        Some(None) if seen.backend.is_some() => {
            return Err(format!(
                "backend {:?} received it, expected none",
                seen.backend
            ));
        }
        Some(Some(wanted)) if seen.backend.as_deref() != Some(wanted.as_str()) => {
            return Err(format!("backend {:?}, expected {wanted}", seen.backend));
        }
        _ => {}
    }
    if let Some(namespace) = &expect.backend_namespace {
        if seen
            .backend
            .as_deref()
            .is_none_or(|b| b.split('/').next() != Some(namespace.as_str()))
        {
            return Err(format!(
                "backend {:?}, expected namespace {namespace}",
                seen.backend
            ));
        }
    }
    if !expect.backend_one_of.is_empty()
        && !seen
            .backend
            .as_ref()
            .is_some_and(|b| expect.backend_one_of.contains(b))
    {
        return Err(format!(
            "backend {:?}, expected one of {:?}",
            seen.backend, expect.backend_one_of
        ));
    }
    // With `backend: null` the Gateway answers alone; what a backend "sees" then has
    // no meaning, so those properties are not judged.
    let gateway_answers = matches!(expect.backend, Some(None));
    let compare =
        |what: &str, actual: &Option<String>, wanted: &Option<String>| -> Result<(), String> {
            match wanted {
                Some(wanted) if !gateway_answers && actual.as_ref() != Some(wanted) => {
                    Err(format!("{what} {actual:?}, expected {wanted:?}"))
                }
                _ => Ok(()),
            }
        };
    compare(
        "backend saw path",
        &seen.backend_path,
        &expect.backend_sees_path,
    )?;
    compare(
        "backend saw method",
        &seen.backend_method,
        &expect.backend_sees_method,
    )?;
    compare(
        "backend saw host",
        &seen.backend_host,
        &expect.backend_sees_host,
    )?;
    for (name, wanted) in &expect.backend_sees_headers {
        let actual = joined(&seen.backend_headers, &name.to_ascii_lowercase());
        if actual.as_deref() != Some(wanted.as_str()) {
            return Err(format!(
                "backend saw header {name}: {actual:?}, expected {wanted:?}"
            ));
        }
    }
    for name in &expect.absent_backend_headers {
        if seen
            .backend_headers
            .contains_key(name.to_ascii_lowercase().as_str())
        {
            return Err(format!("backend saw header {name}, expected none"));
        }
    }
    if let Some(service) = &seen.backend {
        let short = service.rsplit('/').next().unwrap_or(service);
        let per_backend = expect
            .backend_sees_headers_per_backend
            .get(service)
            .or_else(|| expect.backend_sees_headers_per_backend.get(short));
        for (name, wanted) in per_backend.into_iter().flatten() {
            let actual = joined(&seen.backend_headers, &name.to_ascii_lowercase());
            if actual.as_deref() != Some(wanted.as_str()) {
                return Err(format!(
                    "{service} saw header {name}: {actual:?}, expected {wanted:?}"
                ));
            }
        }
    }
    let squash = |text: &str| {
        if expect.ignore_whitespace_in_header_values {
            text.replace(' ', "")
        } else {
            text.to_owned()
        }
    };
    for (name, wanted) in &expect.response_headers {
        let actual = joined(&seen.response_headers, &name.to_ascii_lowercase()).map(|v| squash(&v));
        if actual != Some(squash(wanted)) {
            return Err(format!(
                "response header {name}: {actual:?}, expected {wanted:?}"
            ));
        }
    }
    for (name, choices) in &expect.response_header_one_of {
        let actual = joined(&seen.response_headers, &name.to_ascii_lowercase()).map(|v| squash(&v));
        if !actual
            .as_ref()
            .is_some_and(|a| choices.iter().any(|c| squash(c) == *a))
        {
            return Err(format!(
                "response header {name}: {actual:?}, expected one of {choices:?}"
            ));
        }
    }
    for name in &expect.absent_response_headers {
        if seen
            .response_headers
            .contains_key(name.to_ascii_lowercase().as_str())
        {
            return Err(format!("response header {name} present, expected none"));
        }
    }
    if let Some(wanted) = &expect.redirect {
        let Some(location) = &seen.location else {
            return Err("no Location header".to_owned());
        };
        let (scheme, rest) = location
            .split_once("://")
            .ok_or_else(|| format!("Location {location:?} is not absolute"))?;
        let (authority, path) = rest
            .find('/')
            .map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
        let path = path.split('?').next().unwrap_or(path);
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                (h, p.parse::<u16>().ok())
            }
            _ => (authority, None),
        };
        if wanted.scheme.as_deref().is_some_and(|s| s != scheme) {
            return Err(format!(
                "Location {location:?}: scheme, expected {:?}",
                wanted.scheme
            ));
        }
        if wanted.host.as_deref().is_some_and(|h| h != host) {
            return Err(format!(
                "Location {location:?}: host, expected {:?}",
                wanted.host
            ));
        }
        let default_port = if scheme == "https" { 443 } else { 80 };
        let port_ok = match wanted.port {
            Some(p) => port == Some(p),
            None => port.is_none_or(|p| p == default_port),
        };
        if !port_ok {
            return Err(format!(
                "Location {location:?}: port, expected {:?}",
                wanted.port
            ));
        }
        if wanted.path.as_deref().is_some_and(|p| p != path) {
            return Err(format!(
                "Location {location:?}: path, expected {:?}",
                wanted.path
            ));
        }
    }
    if let Some(wanted) = &expect.redirect_location {
        if seen.location.as_ref() != Some(wanted) {
            return Err(format!("Location {:?}, expected {wanted:?}", seen.location));
        }
    }
    if let Some(wanted) = &expect.grpc_status {
        let actual = match seen.status {
            Some(200) => "OK",
            Some(404) => "Unimplemented",
            Some(503) => "Unavailable",
            _ => "Internal",
        };
        if actual != wanted {
            return Err(format!("gRPC status {actual}, expected {wanted}"));
        }
    }
    if let Some(wanted) = expect.backend_terminates_tls {
        if seen.terminated_by_backend != Some(wanted) {
            return Err(format!(
                "backend terminated TLS: {:?}, expected {wanted}",
                seen.terminated_by_backend
            ));
        }
    }
    Ok(())
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
