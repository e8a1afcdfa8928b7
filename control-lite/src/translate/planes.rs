//! The sixth stage: one `DataPlaneConfig` per data plane, from the served listeners
//! and the accepted attachments. Every route is compiled alone by the router first:
//! a route the router refuses is reported `UnsupportedValue` and left out, so it
//! cannot cost the routes already serving. The routes it takes wait in an
//! [`Assembly`] for `redirect`, which decides which hostnames they keep on HTTP
//! listeners that redirect to HTTPS, and pushes them with [`push_route`]. Start at
//! [`assemble`].

use super::certificates::tls_pair;
use super::conditions::{Verdict, reason};
use super::state::{
    Context, DataPlaneId, GatewayState, ListenerState, RouteBody, RouteState, Transport,
};
use crate::store::Store;
use culvert_router::RouteTableBuilder;
use culvert_router::config::{
    AcmeListenerConfig, BackendClientCertificate, BackendConfig, CertificateConfig, CertificateRef,
    DataPlaneConfig, GrpcRouteConfig, HttpRouteConfig, ListenerConfig, ListenerProtocol,
    ListenerTlsConfig, TlsMode, TlsRouteConfig,
};
use std::collections::BTreeMap;

/// The data planes with their listeners and certificates, and the routes the router
/// takes, not yet pushed.
pub(crate) struct Assembly {
    pub(crate) planes: BTreeMap<DataPlaneId, DataPlaneConfig>,
    pub(crate) admitted: Vec<Admitted>,
}

/// A route the router takes on one plane, for one client certificate.
pub(crate) struct Admitted {
    /// Index of the route among the translation's.
    pub(crate) route: usize,
    pub(crate) plane: DataPlaneId,
    /// The client certificate its backends that speak TLS show.
    pub(crate) client_certificate: ClientCertificate,
    /// The data-plane names of the listeners it is on.
    pub(crate) listeners: Vec<String>,
}

/// The client certificate a Gateway shows backends over TLS, if any.
type ClientCertificate = Option<BackendClientCertificate>;

/// Builds each plane's listeners, then probes every route on each plane it reaches
/// and counts the routes attached to each listener.
pub(crate) fn assemble(cx: &mut Context<'_>) -> Assembly {
    let planes = plane_listeners(cx.store, &cx.gateways);
    let builder = RouteTableBuilder::new();
    let mut admitted = Vec::new();
    let Context {
        routes, gateways, ..
    } = cx;
    for (index, route) in routes.iter_mut().enumerate() {
        for ((plane, client_certificate), listeners) in route_listeners(route, gateways) {
            if listeners.is_empty() {
                continue;
            }
            let Some(config) = planes.get(&plane) else {
                continue;
            };
            if let Err(error) = probe(&builder, config, route, &listeners) {
                refuse_on(route, gateways, &plane, error.to_string());
                continue;
            }
            admitted.push(Admitted {
                route: index,
                plane,
                client_certificate,
                listeners,
            });
        }
        count_attached(route, gateways);
    }
    Assembly { planes, admitted }
}

/// Every served listener of every served Gateway, on its Gateway's plane, with the
/// certificates of those that terminate TLS.
fn plane_listeners(
    store: &Store,
    gateways: &[GatewayState],
) -> BTreeMap<DataPlaneId, DataPlaneConfig> {
    let mut planes: BTreeMap<DataPlaneId, DataPlaneConfig> = BTreeMap::new();
    for gateway in gateways {
        let Some(plane) = &gateway.plane else {
            continue;
        };
        let config = planes.entry(plane.clone()).or_default();
        for listener in gateway.listeners.iter().filter(|l| l.served()) {
            config.listeners.push(listener_config(gateway, listener));
            if listener.transport.terminates() {
                add_certificates(store, &listener.certificates, &mut config.certificates);
            }
        }
    }
    planes
}

/// A served listener as the data plane gets it.
fn listener_config(gateway: &GatewayState, listener: &ListenerState) -> ListenerConfig {
    ListenerConfig {
        name: gateway.listener_id(listener),
        address: gateway.local_ip,
        port: listener.port,
        protocol: match listener.transport {
            Transport::Http => ListenerProtocol::Http,
            Transport::Https => ListenerProtocol::Https,
            _ => ListenerProtocol::Tls,
        },
        hostname: listener.hostname.as_ref().map(ToString::to_string),
        tls: listener.transport.terminates().then(|| ListenerTlsConfig {
            certificate_refs: listener.certificates.clone(),
            mode: match listener.transport {
                Transport::TlsTerminate => TlsMode::Terminate,
                _ => TlsMode::Passthrough,
            },
            client_validation: listener.client_validation.clone(),
            acme: listener.acme.then(AcmeListenerConfig::default),
        }),
    }
}

/// The served listeners a route's accepted parents give it, per plane and per client
/// certificate their Gateway shows backends: Gateways of one plane that show
/// different ones get copies of the route.
fn route_listeners(
    route: &RouteState,
    gateways: &[GatewayState],
) -> BTreeMap<(DataPlaneId, ClientCertificate), Vec<String>> {
    let mut per_plane: BTreeMap<(DataPlaneId, ClientCertificate), Vec<String>> = BTreeMap::new();
    for parent in route.parents.iter().filter(|p| p.accepted.status) {
        let gateway = &gateways[parent.gateway];
        let Some(plane) = &gateway.plane else {
            continue;
        };
        let key = (plane.clone(), gateway.backend_client_certificate.clone());
        let names = per_plane.entry(key).or_default();
        for &listener in &parent.listeners {
            let listener = &gateway.listeners[listener];
            if !listener.served() {
                continue;
            }
            let name = gateway.listener_id(listener);
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    per_plane
}

/// Compiles `route` alone on `listeners` of a plane (`config`'s listeners, no other
/// route): whether the router takes it.
fn probe(
    builder: &RouteTableBuilder,
    config: &DataPlaneConfig,
    route: &RouteState,
    listeners: &[String],
) -> Result<(), culvert_router::Error> {
    let mut probe = DataPlaneConfig {
        version: 0,
        listeners: config.listeners.clone(),
        ..Default::default()
    };
    let hostnames = route.hostnames.clone();
    push_route(&mut probe, route, listeners.to_vec(), hostnames, None);
    builder.build(&probe).map(drop)
}

/// Refuses `route` on every parent on `plane`: the router refused it there.
fn refuse_on(route: &mut RouteState, gateways: &[GatewayState], plane: &DataPlaneId, why: String) {
    for parent in route
        .parents
        .iter_mut()
        .filter(|p| gateways[p.gateway].plane.as_ref() == Some(plane))
    {
        parent.accepted = Verdict::no(reason::UNSUPPORTED_VALUE, why.clone());
        parent.listeners.clear();
    }
}

/// Counts `route` on every listener its accepted parents attach it to.
fn count_attached(route: &RouteState, gateways: &mut [GatewayState]) {
    for parent in route.parents.iter().filter(|p| p.accepted.status) {
        for &listener in &parent.listeners {
            gateways[parent.gateway].listeners[listener].attached_routes += 1;
        }
    }
}

/// Copies the key pairs of `refs` inline into `out`, once each. The listener's
/// references were checked when it was accepted, so a Secret that no longer reads
/// is simply left out (the data plane then refuses the listener's handshakes).
fn add_certificates(store: &Store, refs: &[CertificateRef], out: &mut Vec<CertificateConfig>) {
    for reference in refs {
        let known = out
            .iter()
            .any(|c| c.namespace == reference.namespace && c.name == reference.name);
        if known {
            continue;
        }
        let key = (reference.namespace.clone(), reference.name.clone());
        let Some(Ok(pair)) = store.secrets.get(&key).map(tls_pair) else {
            continue;
        };
        out.push(CertificateConfig {
            namespace: reference.namespace.clone(),
            name: reference.name.clone(),
            certificate_pem: Some(pair.chain),
            private_key_pem: Some(pair.key),
            certificate_file: None,
            private_key_file: None,
        });
    }
}

/// Adds `route` on `listeners` for `hostnames`; its backends that speak TLS show
/// `client_certificate`.
pub(crate) fn push_route(
    config: &mut DataPlaneConfig,
    route: &RouteState,
    listeners: Vec<String>,
    hostnames: Vec<String>,
    client_certificate: Option<&BackendClientCertificate>,
) {
    let show = |backend: &mut BackendConfig| {
        if let Some(tls) = &mut backend.tls {
            tls.client_certificate = client_certificate.cloned();
        }
    };
    let (namespace, name) = route.key.clone();
    let creation_timestamp = route.creation_timestamp.clone();
    match &route.body {
        RouteBody::Http(rules) => {
            let mut pushed = HttpRouteConfig {
                namespace,
                name,
                creation_timestamp,
                listeners,
                hostnames,
                rules: rules.clone(),
            };
            pushed.for_each_backend_mut(show);
            config.http_routes.push(pushed);
        }
        RouteBody::Grpc(rules) => {
            let mut pushed = GrpcRouteConfig {
                namespace,
                name,
                creation_timestamp,
                listeners,
                hostnames,
                rules: rules.clone(),
            };
            pushed.for_each_backend_mut(show);
            config.grpc_routes.push(pushed);
        }
        RouteBody::Tls(backends) => config.tls_routes.push(TlsRouteConfig {
            namespace,
            name,
            creation_timestamp,
            listeners,
            hostnames,
            backends: backends.clone(),
        }),
    }
}
