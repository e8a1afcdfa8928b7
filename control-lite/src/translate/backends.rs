//! Backend references: resolve a `backendRef` to a Service port, check the
//! ReferenceGrant, and collect ready endpoints from EndpointSlices. A reference that
//! cannot be used still becomes a backend, marked unavailable, so its share of
//! traffic fails closed (500) instead of falling through.

use super::backend_tls;
use super::conditions::{Verdict, reason};
use super::references::{Side, permitted};
use crate::model::{BackendObjectReference, Service, ServicePort};
use crate::store::{NamespacedName, Store};
use culvert_router::config::{AppProtocol, BackendConfig, Unavailable};
use std::net::{IpAddr, SocketAddr};

/// The route a reference comes from.
pub(crate) struct Referrer<'a> {
    pub(crate) kind: &'a str,
    pub(crate) namespace: &'a str,
}

/// A resolved backend, and why it is unusable when it is.
pub(crate) struct Resolved {
    pub(crate) backend: BackendConfig,
    pub(crate) problem: Option<Verdict>,
    /// The Service port it resolved to, when it did.
    pub(crate) service: Option<NamespacedName>,
}

/// Resolves one reference. `weight` is the reference's weight (1 when absent).
pub(crate) fn resolve(
    store: &Store,
    from: &Referrer<'_>,
    reference: &BackendObjectReference,
    weight: u32,
) -> Resolved {
    let namespace = reference.namespace.as_deref().unwrap_or(from.namespace);
    let port_text = reference.port.map(|p| format!(":{p}")).unwrap_or_default();
    let name = format!("{namespace}/{}{port_text}", reference.name);
    let unavailable = |why: Verdict| Resolved {
        backend: BackendConfig {
            name: name.clone(),
            weight,
            endpoints: Vec::new(),
            app_protocol: AppProtocol::Http1,
            filters: Vec::new(),
            unavailable: Some(Unavailable::InvalidReference),
            tls: None,
        },
        problem: Some(why),
        service: None,
    };
    let group = reference.group.as_deref().unwrap_or("");
    let kind = reference.kind.as_deref().unwrap_or("Service");
    if !group.is_empty() || kind != "Service" {
        return unavailable(Verdict::no(
            reason::INVALID_KIND,
            format!("backendRef kind {group:?}/{kind} is not supported"),
        ));
    }
    let target = Side {
        group: "",
        kind: "Service",
        namespace,
    };
    let source = Side {
        group: crate::model::GATEWAY_GROUP,
        kind: from.kind,
        namespace: from.namespace,
    };
    if !permitted(store, &source, &target, &reference.name) {
        return unavailable(Verdict::no(
            reason::REF_NOT_PERMITTED,
            format!(
                "no ReferenceGrant allows {} to use Service {namespace}/{}",
                from.kind, reference.name
            ),
        ));
    }
    let Some(service) = store
        .services
        .get(&(namespace.to_owned(), reference.name.clone()))
    else {
        return unavailable(Verdict::no(
            reason::BACKEND_NOT_FOUND,
            format!("Service {namespace}/{} not found", reference.name),
        ));
    };
    let Some(port) = reference.port else {
        return unavailable(Verdict::no(
            reason::BACKEND_NOT_FOUND,
            format!("backendRef to Service {name} needs a port"),
        ));
    };
    if service.spec.kind.as_deref() == Some("ExternalName") {
        return unavailable(Verdict::no(
            reason::BACKEND_NOT_FOUND,
            format!("Service {name} is ExternalName, which is not supported"),
        ));
    }
    let Some(service_port) = service.spec.ports.iter().find(|p| p.port == port) else {
        return unavailable(Verdict::no(
            reason::BACKEND_NOT_FOUND,
            format!("Service {namespace}/{} has no port {port}", reference.name),
        ));
    };
    let app_protocol = match service_port.app_protocol.as_deref() {
        None | Some("http" | "HTTP" | "kubernetes.io/http") => AppProtocol::Http1,
        Some("kubernetes.io/h2c") => AppProtocol::H2c,
        Some("kubernetes.io/ws") => AppProtocol::WebSocket,
        Some(other) => {
            return unavailable(Verdict::no(
                "UnsupportedProtocol",
                format!("Service {name} port appProtocol {other:?} is not supported"),
            ));
        }
    };
    let endpoints = ready_endpoints(store, service, service_port);
    let mut unavailable = endpoints.is_empty().then_some(Unavailable::NoEndpoints);
    let tls = match backend_tls::for_service_port(store, namespace, &reference.name, service_port) {
        None => None,
        Some(Ok(tls)) => Some(tls),
        // A policy that cannot be honoured still claims the backend: its traffic
        // fails closed rather than going out in clear text.
        Some(Err(_)) => {
            unavailable = Some(Unavailable::InvalidReference);
            None
        }
    };
    Resolved {
        backend: BackendConfig {
            unavailable,
            name,
            weight,
            endpoints,
            app_protocol,
            filters: Vec::new(),
            tls,
        },
        problem: None,
        service: Some((namespace.to_owned(), reference.name.clone())),
    }
}

/// Ready endpoint addresses of a Service port, from its EndpointSlices: the slice port
/// with the Service port's name gives the number.
fn ready_endpoints(
    store: &Store,
    service: &Service,
    service_port: &ServicePort,
) -> Vec<SocketAddr> {
    let wanted_name = service_port.name.as_deref().unwrap_or("");
    let mut out = Vec::new();
    for slice in store.slices_of(service.metadata.namespace(), &service.metadata.name) {
        let Some(port) = slice
            .ports
            .iter()
            .find(|p| p.name.as_deref().unwrap_or("") == wanted_name)
            .and_then(|p| p.port)
            .and_then(|p| u16::try_from(p).ok())
        else {
            continue;
        };
        for endpoint in &slice.endpoints {
            if endpoint.conditions.ready == Some(false) {
                continue;
            }
            for address in &endpoint.addresses {
                if let Ok(ip) = address.parse::<IpAddr>() {
                    let socket = SocketAddr::new(ip, port);
                    if !out.contains(&socket) {
                        out.push(socket);
                    }
                }
            }
        }
    }
    out
}
