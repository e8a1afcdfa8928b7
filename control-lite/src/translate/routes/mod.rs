//! The fourth stage: every HTTPRoute, GRPCRoute and TLSRoute, its rules translated
//! (`rules`, with backends from `backends` and their TLS from `backend_tls`) and
//! its parentRefs attached (`attach`). A route asking for something Culvert cannot
//! honour, a malformed hostname among them, is refused by every parent that would
//! accept it (`UnsupportedValue`), never served in part. Start at [`translate`].

mod rules;

use super::attach::{RouteView, attach};
use super::conditions::{Verdict, reason};
use super::state::{Context, GatewayState, RouteBody, RouteState};
use crate::model::RouteObject;
use crate::store::{NamespacedName, Store};
use culvert_router::host::HostPattern;
use rules::Translated;
use std::collections::BTreeMap;

/// Attaches and translates every route.
pub(crate) fn translate(cx: &mut Context<'_>) {
    let store = cx.store;
    let by_key = cx.gateway_index();
    let mut out = Vec::new();
    let context = Attaching {
        store,
        gateways: &cx.gateways,
        by_key: &by_key,
    };
    context.attach_kind(&mut out, &store.http_routes, |route| {
        rules::http(store, route).map(RouteBody::Http)
    });
    context.attach_kind(&mut out, &store.grpc_routes, |route| {
        rules::grpc(store, route).map(RouteBody::Grpc)
    });
    context.attach_kind(&mut out, &store.tls_routes, |route| {
        rules::tls(store, route).map(RouteBody::Tls)
    });
    cx.routes = out;
}

/// What attaching a route reads besides the route itself.
struct Attaching<'a> {
    store: &'a Store,
    gateways: &'a [GatewayState],
    by_key: &'a BTreeMap<NamespacedName, usize>,
}

impl Attaching<'_> {
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
