//! The reconcile loop of `culvert controller`: whenever the translation's
//! dedicated planes change, and at least every [`Settings::resync`] (so a hand
//! edit or deletion of a rendered object is healed, and certificates are renewed
//! in time), it makes each plane's credentials, renders its objects, applies them
//! and removes the objects of planes no longer wanted. Only while this process
//! leads: a follower watches and waits.
//!
//! Between full passes (every resync, and on becoming leader), a pass touches the
//! API server only for planes whose Gateway or GatewayConfig changed, or whose
//! set changed: a route change, which alters only what a plane serves, costs no
//! API request, only the push ([`Memory`]).
//!
//! One plane that fails (a Secret missing, a render refusal, an API error) is
//! logged and retried on the next pass; it never stops the others. Start at
//! [`run`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use culvert_control_lite::store::NamespacedName;
use tokio::sync::watch;

use crate::cluster::{Cluster, ClusterError, Keep, PlaneCredentials};
use crate::credentials::Authority;
use crate::planes::{DesiredPlane, Wanted};
use crate::push::{PlaneKey, PlaneTarget, Pusher};
use crate::render::{self, Image, PlaneNames, PlaneSecrets, PlaneSpec, PodPeer};

/// The dedicated planes of the latest translation (`None` before the first).
pub type Desired = Option<Arc<Wanted>>;

/// What the controller knows about itself.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The controller's namespace (where its CA Secret lives).
    pub namespace: String,
    /// The image planes run.
    pub image: Image,
    /// The controller's own pods, the only ones a plane's config API admits.
    pub controller_pods: PodPeer,
    /// Tunnel edge addresses planes with a tunnel dial.
    pub tunnel_edges: Vec<String>,
    /// Longest time between two passes.
    pub resync: Duration,
    /// How the controller talks to Cloudflare.
    pub cloudflare: CloudflareSettings,
}

/// Where the Cloudflare API is, and how the controller marks what it writes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudflareSettings {
    /// The v4 API's base URL (`http://` only on loopback, for the simulator).
    pub api_url: String,
    /// The ID the DNS ownership records name, so several clusters can share a
    /// zone without touching each other's records.
    pub owner_id: String,
    /// Print the DNS and ingress changes instead of making them.
    pub dry_run: bool,
}

impl Default for CloudflareSettings {
    fn default() -> Self {
        Self {
            api_url: culvert_cloudflare::DEFAULT_BASE_URL.to_owned(),
            owner_id: DEFAULT_OWNER_ID.to_owned(),
            dry_run: false,
        }
    }
}

/// The DNS owner ID when none is configured.
pub const DEFAULT_OWNER_ID: &str = "culvert";

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    /// Planes whose objects were applied.
    pub applied: usize,
    /// Planes that failed, with why.
    pub failed: BTreeMap<NamespacedName, String>,
    /// Of those, the ones that failed because of what their Gateway, its
    /// GatewayConfig or the controller's settings say (a render refusal, a
    /// Secret a reference names that is missing), not because of the API
    /// server: their Gateways report it (`Accepted=False`, `InvalidParameters`).
    pub refused: BTreeMap<NamespacedName, String>,
    /// Objects of unwanted planes deleted.
    pub deleted: usize,
    /// Planes held as they are (their configuration stopped resolving).
    pub held: BTreeSet<NamespacedName>,
}

/// A plane whose objects were applied, with what its pushes need.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The plane.
    pub plane: DesiredPlane,
    /// Its credentials.
    pub credentials: PlaneCredentials,
    /// The CA its serving certificate chains to.
    pub ca_pem: String,
    /// The name that certificate holds.
    pub server_name: String,
}

/// Keeps a [`Pusher`] pointed at the planes the passes apply.
pub struct Feeder {
    pusher: Pusher,
    pushing: BTreeSet<PlaneKey>,
    /// The target each plane was last given, so a pass that changes nothing for a
    /// plane costs it no hashing and its task no wake-up.
    fed: BTreeMap<PlaneKey, PlaneTarget>,
}

impl Feeder {
    /// Feeds `pusher`.
    pub fn new(pusher: Pusher) -> Self {
        Self {
            pusher,
            pushing: BTreeSet::new(),
            fed: BTreeMap::new(),
        }
    }

    /// The pusher fed.
    pub fn pusher(&self) -> &Pusher {
        &self.pusher
    }

    /// Points the pusher at the planes a pass applied, each with its config, pods,
    /// token, CA and server name, and stops pushing to planes no longer wanted. A
    /// plane that failed this pass, or is held, keeps its last target, so a passing
    /// API error does not stop its pushes and a held plane keeps its last config. Returns the planes whose target was refused.
    pub fn feed(&mut self, applied: &[Applied], pass: &Pass) -> Vec<(PlaneKey, String)> {
        let mut refused = Vec::new();
        let mut wanted = BTreeSet::new();
        for plane in applied {
            let (namespace, name) = plane.plane.key();
            let key = PlaneKey::new(&namespace, &name);
            wanted.insert(key.clone());
            let target = PlaneTarget {
                config: Arc::clone(&plane.plane.data_plane),
                pods: plane.plane.pods.clone(),
                token: plane.credentials.token_value.clone(),
                ca_pem: plane.ca_pem.clone(),
                server_name: plane.server_name.clone(),
            };
            if self.fed.get(&key) == Some(&target) {
                continue;
            }
            match self.pusher.set_plane(key.clone(), target.clone()) {
                Ok(()) => {
                    self.fed.insert(key, target);
                }
                Err(error) => {
                    self.fed.remove(&key);
                    refused.push((key, error.to_string()));
                }
            }
        }
        for (namespace, name) in pass.failed.keys().chain(&pass.held) {
            let key = PlaneKey::new(namespace, name);
            if self.pushing.contains(&key) {
                wanted.insert(key);
            }
        }
        for key in self.pushing.difference(&wanted) {
            self.pusher.remove_plane(key);
            self.fed.remove(key);
        }
        self.pushing = wanted;
        refused
    }
}

/// What earlier passes applied: enough to hand the pushes a plane whose Gateway
/// and GatewayConfig have not changed without asking the API server again.
#[derive(Debug, Default)]
pub struct Memory {
    authority: Option<Authority>,
    planes: BTreeMap<NamespacedName, (DesiredPlane, PlaneCredentials)>,
    held: BTreeSet<NamespacedName>,
}

impl Memory {
    /// The credentials applied for `plane` when its Gateway, GatewayConfig, class
    /// tunnel and listener ports (its data Service's) are as they were.
    fn unchanged(&self, key: &NamespacedName, plane: &DesiredPlane) -> Option<&PlaneCredentials> {
        let (before, credentials) = self.planes.get(key)?;
        (before.gateway == plane.gateway
            && before.config == plane.config
            && before.class_tunnel == plane.class_tunnel
            && before.listener_ports() == plane.listener_ports())
        .then_some(credentials)
    }
}

/// Runs passes until `stop` turns true; `on_pass` sees each pass's applied planes
/// (the pushes start from there) and what it did.
pub async fn run(
    cluster: Cluster,
    settings: Settings,
    mut desired: watch::Receiver<Desired>,
    mut leader: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
    mut on_pass: impl FnMut(&[Applied], &Pass),
) {
    let mut memory = Memory::default();
    // When the last full pass ran; `None` forces one (first pass, new leader).
    let mut last_full: Option<tokio::time::Instant> = None;
    loop {
        if *stop.borrow() {
            return;
        }
        let current = desired.borrow_and_update().clone();
        let leading = *leader.borrow_and_update();
        if !leading {
            last_full = None;
        }
        if let (Some(planes), true) = (current, leading) {
            let full = last_full.is_none_or(|at| at.elapsed() >= settings.resync);
            if full && last_full.is_some() {
                // A full pass takes a request per object of every plane: first
                // hand the pushes what changed, so no route change waits for it.
                let (applied, pass) =
                    Box::pin(reconcile(&cluster, &settings, &planes, &mut memory, false)).await;
                on_pass(&applied, &pass);
            }
            let (applied, pass) =
                Box::pin(reconcile(&cluster, &settings, &planes, &mut memory, full)).await;
            if full {
                last_full = Some(tokio::time::Instant::now());
            }
            for (plane, why) in &pass.failed {
                tracing::warn!(gateway = %format!("{}/{}", plane.0, plane.1), error = %why, "dedicated plane not reconciled");
            }
            on_pass(&applied, &pass);
        }
        let next_full = last_full.map_or(settings.resync, |at| {
            settings.resync.saturating_sub(at.elapsed())
        });
        tokio::select! {
            _ = desired.changed() => {}
            _ = leader.changed() => {}
            _ = stop.changed() => {}
            () = tokio::time::sleep(next_full) => {}
        }
    }
}

/// One pass over what `wanted` says. A `full` pass reads and applies everything;
/// otherwise planes `memory` holds unchanged are handed on as they were.
#[allow(
    clippy::disallowed_methods,
    reason = "the reconcile loop owns the wall clock credentials are dated by"
)]
pub async fn reconcile(
    cluster: &Cluster,
    settings: &Settings,
    wanted: &Wanted,
    memory: &mut Memory,
    full: bool,
) -> (Vec<Applied>, Pass) {
    let planes = &wanted.planes;
    let mut pass = Pass {
        held: wanted.held.clone(),
        ..Pass::default()
    };
    let mut applied = Vec::new();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let cached = memory.authority.clone().filter(|_| !full);
    let authority = match cached {
        Some(authority) => authority,
        None => match Box::pin(cluster.authority(&settings.namespace, now)).await {
            Ok(authority) => {
                memory.authority = Some(authority.clone());
                authority
            }
            Err(error) => {
                for key in planes.keys() {
                    pass.failed.insert(key.clone(), error.to_string());
                }
                return (applied, pass);
            }
        },
    };
    let same_set = memory.held == wanted.held
        && memory.planes.len() == planes.len()
        && planes.keys().all(|key| memory.planes.contains_key(key));
    let mut keep = Keep::default();
    // A held plane keeps every object it has, untouched.
    for key in &wanted.held {
        let names = PlaneNames::new(&key.1);
        let stem = (key.0.clone(), names.workload.clone());
        keep.workloads.insert(stem.clone());
        keep.services.insert(stem.clone());
        keep.services
            .insert((key.0.clone(), names.config_service.clone()));
        keep.autoscalers.insert(stem);
    }
    for (key, plane) in planes {
        let names = plane.gateway.names();
        // Whatever happens to it this pass, a wanted plane's objects stay.
        let stem = (key.0.clone(), names.workload.clone());
        keep.workloads.insert(stem.clone());
        keep.services
            .insert((key.0.clone(), names.config_service.clone()));
        if plane.has_data_service() {
            keep.services.insert(stem.clone());
        }
        if plane.config.autoscaling.is_some() {
            keep.autoscalers.insert(stem);
        }
        let remembered = memory.unchanged(key, plane).filter(|_| !full).cloned();
        let outcome = match remembered {
            Some(credentials) => Ok(credentials),
            None => Box::pin(apply_plane(cluster, settings, plane, &authority, now)).await,
        };
        if let Err(PlaneFailure::Parameters(why)) = &outcome {
            pass.refused.insert(key.clone(), why.clone());
        }
        match outcome {
            Ok(credentials) => {
                pass.applied += 1;
                memory
                    .planes
                    .insert(key.clone(), (plane.clone(), credentials.clone()));
                applied.push(Applied {
                    server_name: names.config_server_name(&key.0),
                    ca_pem: authority.certificate_pem.clone(),
                    plane: plane.clone(),
                    credentials,
                });
            }
            Err(failure) => {
                memory.planes.remove(key);
                pass.failed.insert(key.clone(), failure.to_string());
            }
        }
    }
    memory.planes.retain(|key, _| planes.contains_key(key));
    memory.held.clone_from(&wanted.held);
    if full || !same_set {
        match Box::pin(cluster.prune(&keep)).await {
            Ok(deleted) => pass.deleted = deleted,
            Err(error) => tracing::warn!(%error, "removing unwanted plane objects failed"),
        }
    }
    (applied, pass)
}

/// Why a plane was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaneFailure {
    /// What the Gateway, its GatewayConfig or the controller's settings say
    /// cannot be rendered, or a Secret they name is missing: nothing changes
    /// until someone fixes it.
    #[error("{0}")]
    Parameters(String),
    /// The API server refused or could not be reached: tried again next pass.
    #[error("{0}")]
    Cluster(String),
}

impl From<ClusterError> for PlaneFailure {
    fn from(error: ClusterError) -> Self {
        match error {
            ClusterError::MissingSecret(_) => Self::Parameters(error.to_string()),
            _ => Self::Cluster(error.to_string()),
        }
    }
}

async fn apply_plane(
    cluster: &Cluster,
    settings: &Settings,
    plane: &DesiredPlane,
    authority: &Authority,
    now: u64,
) -> Result<PlaneCredentials, PlaneFailure> {
    let credentials = Box::pin(cluster.credentials(plane, authority, now)).await?;
    let spec = plane_spec(settings, plane, credentials.secrets.clone());
    let rendered = render::render(&spec).map_err(|e| PlaneFailure::Parameters(e.to_string()))?;
    let documents = rendered
        .apply_documents()
        .map_err(|e| PlaneFailure::Cluster(e.to_string()))?;
    for document in &documents {
        Box::pin(cluster.apply(document)).await?;
    }
    Ok(credentials)
}

/// What rendering `plane` needs: the plane, the controller's `settings` and the
/// plane's `secrets`.
pub fn plane_spec(settings: &Settings, plane: &DesiredPlane, secrets: PlaneSecrets) -> PlaneSpec {
    PlaneSpec {
        gateway: plane.gateway.clone(),
        config: plane.config.clone(),
        image: settings.image.clone(),
        controller: settings.controller_pods.clone(),
        metrics_scrapers: Vec::new(),
        secrets,
        tunnel_edges: settings.tunnel_edges.clone(),
        listener_ports: plane.listener_ports(),
    }
}
