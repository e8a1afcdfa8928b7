//! The seventh stage, the HTTPS redirect a Gateway asks for with the annotation
//! [`HTTPS_REDIRECT_ANNOTATION`](crate::translate::HTTPS_REDIRECT_ANNOTATION) (`"301"`
//! or `"308"`, read with the Gateway's other parameters by the gateways stage): on
//! each of its plain `HTTP`
//! listeners, every hostname one of its `HTTPS` listeners serves is answered with a
//! redirect to `https://` on that listener's port, unless a route that names the
//! HTTP listener in its parentRef (by `sectionName` or `port`) claims the hostname.
//!
//! It is built from what the router already has: one HTTPRoute per HTTP listener
//! and target port, hostnames from the HTTPS listeners, a single `PathPrefix /` rule
//! with a `RequestRedirect` filter (scheme `https`). Its name, `<gateway>:https-redirect:
//! <listener>:<port>`, holds a `:`, which no Kubernetes object name may, so it cannot
//! be mistaken for a route of the cluster.
//!
//! It never competes with a route rule by rule. Routes that reach the HTTP listener
//! only because their parentRef names the whole Gateway serve those hostnames over
//! HTTPS alone: on the HTTP listener they keep only the hostnames the redirect does not
//! cover (their config is split per listener when that differs). A route that names
//! the HTTP listener takes a hostname it covers out of the redirect altogether; one
//! that claims a narrower name (an ACME HTTP-01 solver's exact host under a wildcard
//! listener) owns that name and leaves the rest redirected, since the router picks the
//! most specific hostname first. Start at [`add`] and [`Plan::new`].

use super::planes::{self, Assembly};
use super::state::{Context, DataPlaneId, GatewayState, RouteState, Transport};
use culvert_router::config::{
    DataPlaneConfig, HttpFilterConfig, HttpRouteConfig, HttpRuleConfig, RequestRedirectConfig,
};
use culvert_router::host::HostPattern;
use std::collections::BTreeMap;

/// Pushes the routes `planes` admitted, each with the hostnames it keeps on each of
/// its listeners, and adds the redirect routes: the finished data-plane configs.
pub(crate) fn add(cx: &Context<'_>, assembly: Assembly) -> BTreeMap<DataPlaneId, DataPlaneConfig> {
    let Assembly {
        mut planes,
        admitted,
    } = assembly;
    let plan = Plan::new(&cx.gateways, &cx.routes);
    for admitted in admitted {
        let Some(config) = planes.get_mut(&admitted.plane) else {
            continue;
        };
        let route = &cx.routes[admitted.route];
        for (listeners, hostnames) in plan.split(route, &cx.gateways, admitted.listeners) {
            planes::push_route(
                config,
                route,
                listeners,
                hostnames,
                admitted.client_certificate.as_ref(),
            );
        }
    }
    plan.push_routes(&mut planes);
    planes
}

/// A hostname pattern; `None` is every hostname.
type Host = Option<HostPattern>;

/// Whether every hostname `inner` matches is matched by `outer`.
fn covers(outer: &Host, inner: &Host) -> bool {
    match (outer, inner) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(outer), Some(inner)) => outer.intersect(inner).as_ref() == Some(inner),
    }
}

/// The hostnames a route with `patterns` serves on a listener with `host`.
fn effective(host: &Host, patterns: &[HostPattern]) -> Vec<Host> {
    if patterns.is_empty() {
        return vec![host.clone()];
    }
    patterns
        .iter()
        .filter_map(|p| match host {
            None => Some(Some(p.clone())),
            Some(own) => own.intersect(p).map(Some),
        })
        .collect()
}

/// The redirect on one HTTP listener.
struct Redirect {
    plane: DataPlaneId,
    /// Index of the Gateway among the translation's, and of the listener in it.
    at: (usize, usize),
    /// `namespace` and `name` of the Gateway.
    gateway: (String, String),
    /// The listener's name in the Gateway, and in the data plane's config.
    listener: (String, String),
    /// The listener's own hostname.
    host: Host,
    status: u16,
    /// Hostnames redirected, with the HTTPS port each goes to.
    targets: Vec<(Host, u16)>,
    /// Hostnames claimed by routes that name this listener.
    claims: Vec<Host>,
}

impl Redirect {
    /// Whether a route's hostname `effective` on this listener is the redirect's.
    fn takes(&self, effective: &Host) -> bool {
        self.targets.iter().any(|(host, _)| covers(host, effective))
            && !self.claims.iter().any(|claim| covers(claim, effective))
    }
}

/// Every redirect of a translation, by the data-plane name of its HTTP listener.
struct Plan {
    redirects: BTreeMap<String, Redirect>,
}

impl Plan {
    /// The redirects of the served Gateways that ask for one, given the routes as
    /// attached (after conflicts and the router's probe).
    fn new(gateways: &[GatewayState], routes: &[RouteState]) -> Self {
        let mut redirects = BTreeMap::new();
        for (index, gateway) in gateways.iter().enumerate() {
            let (Some(plane), Some(status)) = (&gateway.plane, gateway.https_redirect) else {
                continue;
            };
            let https: Vec<(Host, u16)> = gateway
                .listeners
                .iter()
                .filter(|l| l.transport == Transport::Https && l.programmed().status)
                .map(|l| (l.hostname.clone(), l.port))
                .collect();
            for (position, listener) in gateway.listeners.iter().enumerate() {
                if listener.transport != Transport::Http || !listener.served() {
                    continue;
                }
                let host = listener.hostname.clone();
                let claims: Vec<Host> = routes
                    .iter()
                    .filter(|route| names(route, gateway, (index, position)))
                    .flat_map(|route| effective(&host, &route.patterns))
                    .collect();
                let targets: Vec<(Host, u16)> = targets(&host, &https)
                    .into_iter()
                    .filter(|(target, _)| !claims.iter().any(|claim| covers(claim, target)))
                    .collect();
                if targets.is_empty() {
                    continue;
                }
                let id = gateway.listener_id(listener);
                redirects.insert(
                    id.clone(),
                    Redirect {
                        plane: plane.clone(),
                        at: (index, position),
                        gateway: gateway.key.clone(),
                        listener: (listener.name.clone(), id),
                        host,
                        status,
                        targets,
                        claims,
                    },
                );
            }
        }
        Self { redirects }
    }

    /// How a route is pushed to `listeners` (data-plane names): groups of listeners
    /// and the hostnames the route has on them. Listeners without a redirect share
    /// the route's own hostnames; on a redirecting listener the route keeps only the
    /// hostnames the redirect does not take, or leaves it when none is left. A route
    /// that names that listener in its parentRef keeps everything: its hostnames are
    /// claims, already taken out of the redirect.
    fn split(
        &self,
        route: &RouteState,
        gateways: &[GatewayState],
        listeners: Vec<String>,
    ) -> Vec<(Vec<String>, Vec<String>)> {
        let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        let mut add = |listener: String, hostnames: Vec<String>| match groups
            .iter_mut()
            .find(|(_, h)| *h == hostnames)
        {
            Some((names, _)) => names.push(listener),
            None => groups.push((vec![listener], hostnames)),
        };
        for listener in listeners {
            let Some(redirect) = self.redirects.get(&listener) else {
                add(listener, route.hostnames.clone());
                continue;
            };
            if names(route, &gateways[redirect.at.0], redirect.at) {
                add(listener, route.hostnames.clone());
                continue;
            }
            let kept = if route.hostnames.is_empty() {
                let everything = effective(&redirect.host, &[]);
                if everything.iter().any(|e| redirect.takes(e)) {
                    continue;
                }
                Vec::new()
            } else {
                let kept: Vec<String> = route
                    .hostnames
                    .iter()
                    .filter(|name| match HostPattern::parse(name) {
                        Ok(pattern) => match effective(&redirect.host, &[pattern]).first() {
                            Some(served) => !redirect.takes(served),
                            // Not served on this listener anyway.
                            None => true,
                        },
                        Err(_) => true,
                    })
                    .cloned()
                    .collect();
                if kept.is_empty() {
                    continue;
                }
                kept
            };
            add(listener, kept);
        }
        groups
    }

    /// Adds the redirect routes to their planes.
    fn push_routes(&self, planes: &mut BTreeMap<DataPlaneId, DataPlaneConfig>) {
        for redirect in self.redirects.values() {
            let Some(config) = planes.get_mut(&redirect.plane) else {
                continue;
            };
            let mut by_port: BTreeMap<u16, Vec<String>> = BTreeMap::new();
            for (host, port) in &redirect.targets {
                // A hostname a broader one of the same port covers adds nothing.
                let subsumed = redirect
                    .targets
                    .iter()
                    .any(|(other, p)| p == port && other != host && covers(other, host));
                if !subsumed {
                    by_port
                        .entry(*port)
                        .or_default()
                        .extend(host.as_ref().map(ToString::to_string));
                }
            }
            for (port, hostnames) in by_port {
                config.http_routes.push(route(redirect, port, hostnames));
            }
        }
    }
}

/// The hostnames `https` listeners serve within a listener's `host`, each with the
/// port of the listener serving it: 443 when one does, else the lowest.
fn targets(host: &Host, https: &[(Host, u16)]) -> Vec<(Host, u16)> {
    let mut out: Vec<(Host, u16)> = Vec::new();
    for (other, port) in https {
        let shared = match (host, other) {
            (None, other) => other.clone(),
            (own, None) => own.clone(),
            (Some(own), Some(other)) => match own.intersect(other) {
                Some(shared) => Some(shared),
                None => continue,
            },
        };
        match out.iter_mut().find(|(h, _)| *h == shared) {
            Some((_, best)) if *best != 443 && (*port == 443 || *port < *best) => *best = *port,
            Some(_) => {}
            None => out.push((shared, *port)),
        }
    }
    out
}

/// Whether one of the route's accepted parentRefs attaches it to the listener `at`
/// (Gateway index, listener index) by naming that listener: its `sectionName` or
/// its `port`.
fn names(route: &RouteState, gateway: &GatewayState, at: (usize, usize)) -> bool {
    let listener = &gateway.listeners[at.1];
    route.parents.iter().any(|parent| {
        parent.gateway == at.0
            && parent.accepted.status
            && parent.listeners.contains(&at.1)
            && (parent.parent_ref.section_name.as_deref() == Some(listener.name.as_str())
                || parent.parent_ref.port == Some(i64::from(listener.port)))
    })
}

/// The redirect route of one HTTP listener to one HTTPS port.
fn route(redirect: &Redirect, port: u16, hostnames: Vec<String>) -> HttpRouteConfig {
    let (namespace, gateway) = &redirect.gateway;
    let (listener, id) = &redirect.listener;
    HttpRouteConfig {
        namespace: namespace.clone(),
        name: format!("{gateway}:https-redirect:{listener}:{port}"),
        creation_timestamp: None,
        listeners: vec![id.clone()],
        hostnames,
        rules: vec![HttpRuleConfig {
            name: Some("https-redirect".to_owned()),
            filters: vec![HttpFilterConfig::RequestRedirect {
                request_redirect: RequestRedirectConfig {
                    scheme: Some("https".to_owned()),
                    hostname: None,
                    path: None,
                    port: Some(port),
                    status_code: Some(redirect.status),
                },
            }],
            ..Default::default()
        }],
    }
}
