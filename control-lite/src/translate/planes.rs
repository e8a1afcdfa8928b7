//! Routes of every kind, attached and translated, and their assembly into one
//! `DataPlaneConfig` per data plane.

use super::DataPlaneId;
use super::attach::{ParentOutcome, RouteView, attach, index};
use super::certificates::tls_pair;
use super::conditions::{Verdict, reason};
use super::gateways::GatewayState;
use super::listeners::Transport;
use super::redirect::Plan;
use super::routes::{self, Translated};
use crate::model::RouteObject;
use crate::store::{NamespacedName, Store};
use culvert_router::RouteTableBuilder;
use culvert_router::config::{
    AcmeListenerConfig, BackendClientCertificate, BackendConfig, CertificateConfig, CertificateRef,
    DataPlaneConfig, GrpcRouteConfig, GrpcRuleConfig, HttpRouteConfig, HttpRuleConfig,
    ListenerConfig, ListenerProtocol, ListenerTlsConfig, TlsMode, TlsRouteConfig,
};
use culvert_router::host::HostPattern;
use std::collections::{BTreeMap, BTreeSet};

/// The translated rules of a route, by kind.
pub(crate) enum RouteBody {
    Http(Vec<HttpRuleConfig>),
    Grpc(Vec<GrpcRuleConfig>),
    Tls(Vec<BackendConfig>),
}

/// A route of any kind after attachment and translation.
pub(crate) struct RouteState {
    pub(crate) kind: &'static str,
    pub(crate) key: NamespacedName,
    pub(crate) generation: i64,
    pub(crate) creation_timestamp: Option<String>,
    pub(crate) hostnames: Vec<String>,
    pub(crate) patterns: Vec<HostPattern>,
    pub(crate) parents: Vec<ParentOutcome>,
    pub(crate) resolved_refs: Verdict,
    /// The Services its backends resolved to.
    pub(crate) services: BTreeSet<NamespacedName>,
    pub(crate) body: RouteBody,
}

/// Attaches and translates every route.
pub(crate) fn attach_all(store: &Store, gateways: &[GatewayState]) -> Vec<RouteState> {
    let by_key = index(gateways);
    let mut out = Vec::new();
    let context = Context {
        store,
        gateways,
        by_key: &by_key,
    };
    context.attach_kind(&mut out, &store.http_routes, |route| {
        routes::http(store, route).map(RouteBody::Http)
    });
    context.attach_kind(&mut out, &store.grpc_routes, |route| {
        routes::grpc(store, route).map(RouteBody::Grpc)
    });
    context.attach_kind(&mut out, &store.tls_routes, |route| {
        routes::tls(store, route).map(RouteBody::Tls)
    });
    out
}

/// What attaching a route reads besides the route itself.
struct Context<'a> {
    store: &'a Store,
    gateways: &'a [GatewayState],
    by_key: &'a BTreeMap<NamespacedName, usize>,
}

impl Context<'_> {
    fn attach_kind<R: RouteObject>(
        &self,
        out: &mut Vec<RouteState>,
        routes: &BTreeMap<NamespacedName, R>,
        translate: impl Fn(&R) -> Translated<RouteBody>,
    ) {
        for (key, route) in routes {
            out.push(self.state(key, route, translate(route)));
        }
    }

    fn state<R: RouteObject>(
        &self,
        key: &NamespacedName,
        route: &R,
        translated: Translated<RouteBody>,
    ) -> RouteState {
        let mut unsupported = translated.unsupported;
        let mut patterns = Vec::new();
        for hostname in route.hostnames() {
            match HostPattern::parse(hostname) {
                Ok(pattern) => patterns.push(pattern),
                Err(why) => {
                    unsupported.get_or_insert(format!("spec.hostnames: {why}"));
                }
            }
        }
        let view = RouteView {
            kind: R::KIND,
            namespace: &key.0,
            parent_refs: route.parent_refs(),
            hostnames: &patterns,
        };
        let mut parents = attach(self.store, &view, self.gateways, self.by_key);
        if let Some(message) = unsupported {
            for parent in parents.iter_mut().filter(|p| p.accepted.status) {
                parent.accepted = Verdict::no(reason::UNSUPPORTED_VALUE, message.clone());
                parent.listeners.clear();
            }
        }
        RouteState {
            kind: R::KIND,
            key: key.clone(),
            generation: route.meta().generation(),
            creation_timestamp: route.meta().creation_timestamp.clone(),
            hostnames: route.hostnames().to_vec(),
            patterns,
            parents,
            resolved_refs: translated.resolved_refs,
            services: translated.services,
            body: translated.rules,
        }
    }
}

/// Builds each data plane's config from the accepted attachments, compiling every
/// route alone first: a route the router refuses is reported `UnsupportedValue` and
/// left out, so it cannot cost the routes already serving. Counts attached routes.
/// Then adds the HTTPS redirects Gateways ask for (`redirect`), which decide which
/// hostnames routes keep on redirecting HTTP listeners.
pub(crate) fn assemble(
    store: &Store,
    routes: &mut [RouteState],
    gateways: &mut [GatewayState],
) -> BTreeMap<DataPlaneId, DataPlaneConfig> {
    let mut planes: BTreeMap<DataPlaneId, DataPlaneConfig> = BTreeMap::new();
    for gateway in gateways.iter() {
        let Some(plane) = &gateway.plane else {
            continue;
        };
        let config = planes.entry(plane.clone()).or_default();
        for listener in gateway.listeners.iter().filter(|l| l.served()) {
            config.listeners.push(ListenerConfig {
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
            });
            if listener.transport.terminates() {
                add_certificates(store, &listener.certificates, &mut config.certificates);
            }
        }
    }
    let builder = RouteTableBuilder::new();
    // (route, plane, client certificate, listeners) of every route the router
    // takes, pushed once the redirects are known.
    let mut admitted: Vec<(usize, DataPlaneId, ClientCertificate, Vec<String>)> = Vec::new();
    for (index, route) in routes.iter_mut().enumerate() {
        // Listeners per plane and per client certificate their Gateway shows
        // backends: Gateways of one plane that show different ones get copies.
        let mut per_plane: BTreeMap<(DataPlaneId, ClientCertificate), Vec<String>> =
            BTreeMap::new();
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
        for ((plane, client_certificate), listeners) in per_plane {
            if listeners.is_empty() {
                continue;
            }
            let Some(config) = planes.get(&plane) else {
                continue;
            };
            let mut probe = DataPlaneConfig {
                version: 0,
                listeners: config.listeners.clone(),
                ..Default::default()
            };
            let hostnames = route.hostnames.clone();
            push_route(&mut probe, route, listeners.clone(), hostnames, None);
            if let Err(error) = builder.build(&probe) {
                for parent in route
                    .parents
                    .iter_mut()
                    .filter(|p| gateways[p.gateway].plane.as_ref() == Some(&plane))
                {
                    parent.accepted = Verdict::no(reason::UNSUPPORTED_VALUE, error.to_string());
                    parent.listeners.clear();
                }
                continue;
            }
            admitted.push((index, plane, client_certificate, listeners));
        }
        for parent in route.parents.iter().filter(|p| p.accepted.status) {
            for &listener in &parent.listeners {
                gateways[parent.gateway].listeners[listener].attached_routes += 1;
            }
        }
    }
    let redirects = Plan::new(gateways, routes);
    for (index, plane, client_certificate, listeners) in admitted {
        let Some(config) = planes.get_mut(&plane) else {
            continue;
        };
        let route = &routes[index];
        for (listeners, hostnames) in redirects.split(route, gateways, listeners) {
            push_route(
                config,
                route,
                listeners,
                hostnames,
                client_certificate.as_ref(),
            );
        }
    }
    redirects.push_routes(&mut planes);
    planes
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

/// The client certificate a Gateway shows backends over TLS, if any.
type ClientCertificate = Option<BackendClientCertificate>;

/// Adds `route` on `listeners` for `hostnames`; its backends that speak TLS show
/// `client_certificate`.
fn push_route(
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
