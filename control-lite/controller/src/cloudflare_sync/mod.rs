//! Cloudflare's side of the tunnel planes: each tunnel's remote ingress
//! configuration and the DNS records that send its Gateways' hostnames to it.
//!
//! - [`inputs`] (pure, run in the translation hook): for every plane serving a
//!   tunnel (a dedicated Gateway's, or a class's shared plane with the class
//!   tunnel), the account and tunnel its token names, the Secret holding the API
//!   token that may write it (the GatewayConfig's `cloudflareCredentialsSecretRef`,
//!   else the class's), and the hostnames of the routes its Gateways accepted;
//! - [`apply`]: per account, writes each tunnel's ingress (every hostname to the
//!   plane, the catch-all `http_status:404` last) only when it differs, and plans
//!   and makes the DNS changes ([`culvert_cloudflare::dns::plan()`]): a proxied
//!   CNAME to `<tunnel-id>.cfargotunnel.com` per hostname with its TXT ownership
//!   record, owned records removed when their last route goes, a name someone
//!   else's record holds reported as `DNSRecordConflict`, never overwritten;
//! - [`task`]: the loop that runs it on every change of the inputs and at least
//!   every [`task::RESYNC`], reads the API tokens through the Kubernetes API, and
//!   restores a catch-all ingress on a tunnel no Gateway serves any more;
//! - [`status`]: what the last sync means for route and Gateway status.
//!
//! With `--cloudflare-dry-run` the changes are logged, not made.

pub mod apply;
pub mod status;
pub mod task;

use std::collections::{BTreeMap, BTreeSet};

use culvert_control_lite::model::{GatewayConfigSpec, ObjectKey, SecretKeyReference, TOKEN_KEY};
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{DataPlaneId, Translation, read_tunnel_token};
use culvert_router::DataPlaneConfig;

use crate::handover::Held;
use crate::planes::{DesiredPlane, Wanted};
use crate::render::{OwnerKind, SecretKey};

/// Where an API token is: a key of a Secret in a namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CredentialRef {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name and key.
    pub secret: SecretKey,
}

impl CredentialRef {
    /// Key `key` ([`TOKEN_KEY`] when `None`) of Secret `namespace/name`.
    pub fn new(namespace: &str, name: &str, key: Option<&str>) -> Self {
        Self {
            namespace: namespace.to_owned(),
            secret: SecretKey {
                name: name.to_owned(),
                key: key.unwrap_or(TOKEN_KEY).to_owned(),
            },
        }
    }

    /// The key a cluster-scoped object's reference names.
    pub fn of(reference: &SecretKeyReference) -> Self {
        Self::new(
            &reference.namespace,
            &reference.name,
            reference.key.as_deref(),
        )
    }
}

/// One route's hostnames on one Gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteNames {
    /// The route.
    pub route: ObjectKey,
    /// The Gateway it is attached to.
    pub gateway: NamespacedName,
    /// Its hostnames there, lowercase, sorted, distinct.
    pub hostnames: Vec<String>,
}

/// One tunnel to keep in sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelSync {
    /// The account the tunnel's token names.
    pub account: String,
    /// The tunnel.
    pub tunnel: String,
    /// The API token that writes it, when one is configured.
    pub credential: Option<CredentialRef>,
    /// Where its ingress rules send requests: the plane's first listener, on the
    /// pod itself (`http://localhost:<port>`), where a connector beside the proxy
    /// reaches it.
    pub service: String,
    /// The Gateways it serves.
    pub gateways: BTreeSet<NamespacedName>,
    /// Its routes' hostnames, by route and Gateway.
    pub routes: Vec<RouteNames>,
}

impl TunnelSync {
    /// Every hostname of its routes, sorted and distinct.
    pub fn hostnames(&self) -> Vec<String> {
        let names: BTreeSet<&String> = self.routes.iter().flat_map(|r| &r.hostnames).collect();
        names.into_iter().cloned().collect()
    }
}

/// What the Cloudflare side should look like after one translation, by tunnel id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncInputs {
    /// The tunnels, by tunnel id.
    pub tunnels: BTreeMap<String, TunnelSync>,
}

/// The tunnels of `wanted`'s planes, with their routes' hostnames. A Gateway
/// `held` on its old shared plane while its dedicated one starts counts for the
/// shared plane's tunnel, so its DNS records move only once the new plane serves.
pub fn inputs(
    store: &Store,
    translation: &Translation,
    wanted: &Wanted,
    held: &Held,
) -> SyncInputs {
    let mut out = SyncInputs::default();
    for plane in wanted.planes.values() {
        let Some((token_ref, credential)) = tunnel_of(store, plane) else {
            continue;
        };
        let Ok(token) = read_tunnel_token(
            store,
            &token_ref.namespace,
            &token_ref.secret.name,
            &token_ref.secret.key,
        ) else {
            continue;
        };
        let plane_key = plane.key();
        let gateways: BTreeSet<&NamespacedName> = match plane.gateway.owner {
            OwnerKind::Gateway => translation
                .gateway_planes
                .iter()
                .filter(|(key, id)| {
                    matches!(id, DataPlaneId::Dedicated(k) if *k == plane_key)
                        && !held.contains_key(*key)
                })
                .map(|(key, _)| key)
                .collect(),
            OwnerKind::GatewayClass => translation
                .gateway_planes
                .iter()
                .filter(|(_, id)| matches!(id, DataPlaneId::Shared(class) if *class == plane.gateway.name))
                .map(|(key, _)| key)
                .chain(
                    held.iter()
                        .filter(|(_, old)| **old == plane_key)
                        .map(|(gateway, _)| gateway),
                )
                .collect(),
        };
        let routes = route_names(&plane.data_plane, &gateways);
        let service = plane
            .data_plane
            .listeners
            .iter()
            .map(|l| l.port)
            .min()
            .map_or_else(
                || "http_status:503".to_owned(),
                |port| format!("http://localhost:{port}"),
            );
        let tunnel = token.tunnel_id.to_string();
        let entry = out.tunnels.entry(tunnel.clone()).or_insert(TunnelSync {
            account: token.account_tag.clone(),
            tunnel,
            credential: credential.clone(),
            service,
            gateways: BTreeSet::new(),
            routes: Vec::new(),
        });
        entry.credential = entry.credential.clone().or(credential);
        entry.gateways.extend(gateways.into_iter().cloned());
        entry.routes.extend(routes);
    }
    out
}

/// The tunnel token's Secret and the API credential of `plane`, if it serves a
/// tunnel.
fn tunnel_of(
    store: &Store,
    plane: &DesiredPlane,
) -> Option<(CredentialRef, Option<CredentialRef>)> {
    let class = &plane.gateway.class_name;
    if let Some(tunnel) = &plane.config.tunnel {
        let namespace = &plane.gateway.namespace;
        return Some((
            CredentialRef::new(namespace, &tunnel.token_ref.name, None),
            gateway_credential(store, namespace, class, &plane.config),
        ));
    }
    let class_tunnel = plane.class_tunnel.as_ref()?;
    Some((
        CredentialRef::of(class_tunnel),
        class_credential(store, class),
    ))
}

/// The Cloudflare API credential of a Gateway in `namespace` of class `class`
/// whose GatewayConfig is `config`: the GatewayConfig's
/// `cloudflareCredentialsSecretRef`, always in the Gateway's own namespace with key
/// `token` (a tenant can only point at its own credentials), else the class's.
pub fn gateway_credential(
    store: &Store,
    namespace: &str,
    class: &str,
    config: &GatewayConfigSpec,
) -> Option<CredentialRef> {
    match &config.cloudflare_credentials_secret_ref {
        Some(reference) => Some(CredentialRef::new(namespace, &reference.name, None)),
        None => class_credential(store, class),
    }
}

/// The Cloudflare API credential GatewayClass `class`'s GatewayClassConfig names.
pub fn class_credential(store: &Store, class: &str) -> Option<CredentialRef> {
    store
        .gateway_class_config(class)?
        .spec
        .cloudflare_credentials_secret_ref
        .as_ref()
        .map(CredentialRef::of)
}

/// The hostnames each route of `config` has on each of `gateways`: the route's
/// own hostnames, else its listener's; a route matching any host has none a DNS
/// record could hold.
fn route_names(config: &DataPlaneConfig, gateways: &BTreeSet<&NamespacedName>) -> Vec<RouteNames> {
    let listener_hostname: BTreeMap<&str, Option<&str>> = config
        .listeners
        .iter()
        .map(|l| (l.name.as_str(), l.hostname.as_deref()))
        .collect();
    let routes = config
        .http_routes
        .iter()
        .map(|r| {
            (
                "HTTPRoute",
                &r.namespace,
                &r.name,
                &r.listeners,
                &r.hostnames,
            )
        })
        .chain(config.grpc_routes.iter().map(|r| {
            (
                "GRPCRoute",
                &r.namespace,
                &r.name,
                &r.listeners,
                &r.hostnames,
            )
        }));
    let mut out: BTreeMap<(ObjectKey, NamespacedName), BTreeSet<String>> = BTreeMap::new();
    for (kind, namespace, name, listeners, hostnames) in routes {
        for listener in listeners {
            let mut parts = listener.splitn(3, '/');
            let (Some(gw_namespace), Some(gw_name)) = (parts.next(), parts.next()) else {
                continue;
            };
            let gateway = (gw_namespace.to_owned(), gw_name.to_owned());
            if !gateways.contains(&gateway) {
                continue;
            }
            let names: Vec<String> = if hostnames.is_empty() {
                listener_hostname
                    .get(listener.as_str())
                    .copied()
                    .flatten()
                    .map(str::to_owned)
                    .into_iter()
                    .collect()
            } else {
                hostnames.clone()
            };
            out.entry((ObjectKey::new(kind, namespace, name), gateway))
                .or_default()
                .extend(names.into_iter().map(|n| n.to_ascii_lowercase()));
        }
    }
    out.into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|((route, gateway), hostnames)| RouteNames {
            route,
            gateway,
            hostnames: hostnames.into_iter().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
