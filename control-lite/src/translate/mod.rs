//! Translation: a pure function from the objects in a [`Store`] to one
//! `DataPlaneConfig` per data plane plus every status condition Culvert owns.
//! Start at [`translate`], the one place that runs the stages.
//!
//! Each stage reads and refines the state in `state` (one `Context`
//! handed from stage to stage) and imports only that layer, the helpers beside it
//! and the stages before it. In order:
//!
//! 1. `classes`: the GatewayClasses Culvert owns and their parameters;
//! 2. `gateways`: each Gateway validated on its own, with its `listeners`, oldest
//!    first; then, weighing Gateways against each other, the listener budgets of
//!    `budget`, `admission` of dedicated data planes (tunnel claims arbitrated,
//!    per-namespace caps kept), sockets shared on one plane, the listeners'
//!    verdict, and the plane budgets;
//! 3. `attach`: which listeners accept each `parentRef`;
//! 4. `routes`: every route's rules to router rules, with `backends` and their TLS
//!    from BackendTLSPolicy (`backend_tls`), attached;
//! 5. `conflicts`: cross-namespace hostname conflicts;
//! 6. `planes`: one config per data plane, where each route is also compiled
//!    alone by the router so a route the router refuses is reported, not served;
//! 7. `redirect`: the HTTPS redirects Gateways ask for, and which hostnames the
//!    routes keep on redirecting listeners;
//! 8. `status`: the output, then the objects Culvert reads but cannot honour,
//!    refused in their status rather than ignored: TCPRoutes and UDPRoutes
//!    (`l4_routes`), ListenerSets (`listener_sets`).
//!
//! Below every stage: `state`, `options` (what a translation is given),
//! `conditions` (condition types, reasons, verdicts), `references`
//! (ReferenceGrants), `certificates` (TLS Secrets), `client_validation` (CA
//! bundles of client validation) and `tunnels` (connector tokens).

mod admission;
mod attach;
mod backend_tls;
mod backends;
mod budget;
mod certificates;
mod classes;
mod client_validation;
mod conditions;
mod conflicts;
mod gateways;
mod l4_routes;
mod listener_sets;
mod listeners;
mod options;
mod planes;
mod redirect;
mod references;
mod routes;
mod state;
mod status;
mod tunnels;

pub use crate::model::HTTPS_REDIRECT_ANNOTATION;
pub use budget::{LISTENERS_PER_GATEWAY, LISTENERS_PER_PLANE};
pub use options::{
    AddressAssigner, AddressError, ClaimChecker, FixedAddresses, NoClaimChecks, Options, Proof,
};
pub use state::{DataPlaneId, PlaneRefusal};
pub use status::Translation;

use crate::Error;
use crate::model::GatewayAddress;
use crate::store::{NamespacedName, Store};
use culvert_tunnel_proto::TunnelToken;
use state::Context;

/// The connector token in key `key` of Secret `namespace/name`, parsed and
/// checked as admission checks it, or why it cannot be used (naming the Secret
/// and key, never any of the token).
pub fn read_tunnel_token(
    store: &Store,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<TunnelToken, Error> {
    tunnels::read_token(store, namespace, name, key)
}

/// The address Gateways on GatewayClass `class`'s shared plane are reached at
/// when the class has a tunnel whose token reads: `<tunnel-id>.cfargotunnel.com`.
pub fn class_tunnel_address(store: &Store, class: &str) -> Option<GatewayAddress> {
    let tunnel = store.gateway_class_config(class)?.spec.tunnel.as_ref()?;
    let token_ref = &tunnel.token_ref;
    let key = token_ref.key.as_deref().unwrap_or(crate::model::TOKEN_KEY);
    let token = tunnels::read_token(store, &token_ref.namespace, &token_ref.name, key).ok()?;
    Some(tunnels::tunnel_address(token.tunnel_id))
}

/// The connector token Gateway `key`'s GatewayConfig names, read and checked exactly
/// as tunnel-claim admission reads it (a Secret in the Gateway's own namespace, key
/// `token`, an account tag that is a Cloudflare account ID). `None` when the Gateway
/// asks for no GatewayConfig, its GatewayConfig has no tunnel, or the token does not
/// read.
pub fn gateway_tunnel_token(store: &Store, key: &NamespacedName) -> Option<TunnelToken> {
    let gateway = store.gateways.get(key)?;
    let config = store.gateway_config(&key.0, gateway)?;
    admission::config_token(store, key, config)?.ok()
}

/// Translates everything in `store`: runs the stages in order on one context.
pub fn translate(store: &Store, options: &Options) -> Translation {
    let mut cx = Context::new(store, options);
    classes::validate(&mut cx);
    gateways::validate(&mut cx);
    budget::refuse_oversized(&mut cx);
    admission::admit(&mut cx);
    gateways::resolve_shared_plane_conflicts(&mut cx);
    gateways::judge_listeners(&mut cx);
    budget::fit_planes(&mut cx);
    gateways::withdraw_unserved(&mut cx);
    admission::mark_shared(&mut cx);
    routes::translate(&mut cx);
    conflicts::resolve(&mut cx);
    let assembly = planes::assemble(&mut cx);
    let data_planes = redirect::add(&cx, assembly);
    let mut translation = status::build(&cx, data_planes);
    l4_routes::report(&cx, &mut translation);
    listener_sets::report(&cx, &mut translation);
    translation
}

#[cfg(test)]
mod tests;
