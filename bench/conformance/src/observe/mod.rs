//! Judging what one exchange produced against its `expect`: shared by the static
//! replay (which computes an [`Observed`]) and a live harness (which sees one on real
//! sockets). Pure.

use super::vector::Expect;
use culvert_router::outcome::{grpc_code_name, grpc_status_for_http};
use http::HeaderMap;
use std::collections::BTreeMap;

/// What one request produced: computed by the static replay, or seen on real sockets
/// by a live harness.
#[derive(Debug, Default)]
pub struct Observed {
    /// Status the client received; `None` when no HTTP response came.
    pub status: Option<u16>,
    /// Why no HTTP response came (connection, handshake, timeout).
    pub failure: Option<String>,
    /// `namespace/service` that served the request, if a backend did.
    pub backend: Option<String>,
    /// `namespace/pod` of the endpoint that served it, when the endpoint names one.
    pub backend_pod: Option<String>,
    /// Path and query the backend received.
    pub backend_path: Option<String>,
    /// `Host` the backend received.
    pub backend_host: Option<String>,
    /// Method the backend received.
    pub backend_method: Option<String>,
    /// Headers the backend received.
    pub backend_headers: HeaderMap,
    /// Headers the client received.
    pub response_headers: HeaderMap,
    /// `Location` of the response.
    pub location: Option<String>,
    /// TLSRoute: whether the backend terminated the client's TLS.
    pub terminated_by_backend: Option<bool>,
    /// The SNI the backend's TLS server received (live only).
    pub backend_sni: Option<String>,
    /// The client certificate the backend's TLS server received, as the Secret
    /// that holds it (`Secret namespace/name`; live only).
    pub backend_client_certificate: Option<String>,
    /// The HTTP version of the response, as `HTTP/1.1` or `HTTP/2` (live only).
    pub protocol: Option<String>,
    /// The frame echoed after a WebSocket upgrade (live only).
    pub websocket_echo: Option<String>,
    /// The `grpc-status` the client read, from the trailers or a Trailers-Only
    /// head (live only; without it the HTTP status stands for one).
    pub grpc_status: Option<u32>,
}

fn joined(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// Whether `seen` has every property `expect` lists (for one request of a sample;
/// the sample's shares are [`check_distribution`]'s).
pub fn check(expect: &Expect, seen: &Observed) -> Result<(), String> {
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
    if let Some(wanted) = &expect.backend_pods {
        if !is_pod_of(seen.backend_pod.as_deref(), wanted) {
            return Err(format!(
                "served by pod {:?}, expected a pod of {wanted}",
                seen.backend_pod
            ));
        }
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
        // The static replay has no gRPC status to read: its simulated 200 is a
        // call the backend answered.
        let actual = match (seen.grpc_status, seen.status) {
            (Some(code), _) => grpc_code_name(code),
            (None, Some(200)) => "OK",
            (None, Some(status)) => grpc_code_name(grpc_status_for_http(status)),
            (None, None) => "Unavailable",
        };
        if actual != wanted {
            return Err(format!("gRPC status {actual}, expected {wanted}"));
        }
    }
    if let Some(wanted) = &expect.websocket_echo {
        if seen.websocket_echo.as_ref() != Some(wanted) {
            return Err(format!(
                "WebSocket echo {:?}, expected {wanted:?}",
                seen.websocket_echo
            ));
        }
    }
    if let Some(wanted) = &expect.response_protocol {
        if seen.protocol.as_ref() != Some(wanted) {
            return Err(format!("protocol {:?}, expected {wanted:?}", seen.protocol));
        }
    }
    if let Some(wanted) = &expect.backend_sees_sni {
        if seen.backend_sni.as_ref() != Some(wanted) {
            return Err(format!(
                "backend saw SNI {:?}, expected {wanted:?}",
                seen.backend_sni
            ));
        }
    }
    if let Some(wanted) = &expect.backend_sees_client_certificate {
        if seen.backend_client_certificate.as_ref() != Some(wanted) {
            return Err(format!(
                "backend saw client certificate {:?}, expected {wanted:?}",
                seen.backend_client_certificate
            ));
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

/// Whether `pod` (`namespace/name`) is one of Service `service`'s pods
/// (`namespace/name`): pods are named after what created them plus a suffix, as a
/// Deployment names its pods, and upstream matches that prefix.
fn is_pod_of(pod: Option<&str>, service: &str) -> bool {
    let Some((pod_namespace, pod)) = pod.and_then(|pod| pod.split_once('/')) else {
        return false;
    };
    let (namespace, name) = service.split_once('/').unwrap_or(("", service));
    pod_namespace == namespace
        && pod
            .strip_prefix(name)
            .is_some_and(|suffix| suffix.starts_with('-'))
}

/// Whether the share of a sample of `repeat` requests each Service served (`counts`)
/// is within the expected tolerance of `distribution`.
pub fn check_distribution(
    expect: &Expect,
    counts: &BTreeMap<String, u32>,
    repeat: u32,
) -> Result<(), String> {
    let tolerance = expect.distribution_tolerance.unwrap_or(0.05);
    for (service, share) in &expect.distribution {
        let got = f64::from(counts.get(service).copied().unwrap_or(0)) / f64::from(repeat);
        let off = if *share == 0.0 {
            got > 0.0
        } else {
            (got - share).abs() > tolerance
        };
        if off {
            return Err(format!(
                "{service} got {got:.3} of requests, expected {share} ± {tolerance}"
            ));
        }
    }
    Ok(())
}

/// Whether each `mirroredTo` Service received its copies: one per request without a
/// percentage, else a count within three binomial standard deviations of
/// `repeat * percent / 100`.
pub fn check_mirrors(
    expect: &Expect,
    copies: &BTreeMap<String, u32>,
    repeat: u32,
) -> Result<(), String> {
    for mirror in &expect.mirrored_to {
        let got = copies.get(&mirror.backend).copied().unwrap_or(0);
        let n = f64::from(repeat);
        match mirror.percent {
            None => {
                if got != repeat {
                    return Err(format!(
                        "{} received {got} mirrored copies of {repeat} requests",
                        mirror.backend
                    ));
                }
            }
            Some(percent) => {
                let p = percent / 100.0;
                let mean = n * p;
                let spread = 3.0 * (n * p * (1.0 - p)).sqrt();
                if (f64::from(got) - mean).abs() > spread {
                    return Err(format!(
                        "{} received {got} mirrored copies of {repeat} requests, expected {mean:.0} ± {spread:.1} ({percent}%)",
                        mirror.backend
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
