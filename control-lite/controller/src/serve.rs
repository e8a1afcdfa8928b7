//! `culvert controller` assembled: the Kubernetes source (its watches, Lease and
//! status writes), the translation hook that yields the [`Wanted`] planes, the
//! reconcile loop, the [`Pusher`] fed by each pass, and the status overlay that
//! puts the pushes into Gateway and route status (written again only when what it
//! says changes), and the Gateways whose planes cannot be rendered
//! ([`render_status`]), and the tunnel-claim checks ([`claims`](crate::claims)) the
//! translation asks. [`start`] connects and starts the source; [`Controller::run`]
//! drives the rest on the caller's runtime until a stop.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use culvert_control_lite::store::NamespacedName;
use culvert_kubernetes::addresses::SharedAssigner;
use culvert_kubernetes::{KubernetesSource, SourceConfig, StatusOverlay, TranslationHook};
use tokio::sync::watch;

use crate::addresses::PlaneAddresses;
use crate::claims::{ClaimTask, Claims};
use crate::cloudflare_sync::status::SyncStatus;
use crate::cloudflare_sync::{self, SyncInputs};
use crate::cluster::Cluster;
use crate::handover::{Handover, Held};
use crate::planes::{self, Wanted};
use crate::push::{PushSettings, Pusher, Summaries};
use crate::run::{Desired, Feeder, Settings, run};
use crate::{push_status, render_status};

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The cluster could not be reached, or the source not started.
    #[error("connecting to Kubernetes: {0}")]
    Kubernetes(#[from] culvert_kubernetes::Error),
    /// The pusher could not start (outside a Tokio runtime).
    #[error("starting the config pushes: {0}")]
    Push(#[from] crate::Error),
    /// The Cloudflare API settings do not make a client for the claim checks.
    #[error("setting up tunnel claim checks: {0}")]
    Claims(#[source] culvert_cloudflare::Error),
}

/// A started controller: watching, not yet reconciling.
pub struct Controller {
    source: KubernetesSource,
    cluster: Cluster,
    settings: Settings,
    pusher: Pusher,
    desired: watch::Receiver<Desired>,
    wake: Arc<watch::Sender<u64>>,
    refused: Arc<watch::Sender<BTreeMap<NamespacedName, String>>>,
    sync_inputs: watch::Receiver<Option<Arc<SyncInputs>>>,
    sync_status: Arc<watch::Sender<SyncStatus>>,
    claims: ClaimTask,
}

/// Connects with `source` (its `on_translation`, `status_overlay` and
/// `status_wake` are the controller's own) and starts the watches. Call inside a
/// Tokio runtime: the pushes run on it.
#[allow(
    clippy::disallowed_methods,
    reason = "the controller's runtime starts its state machines on the real clock"
)]
pub async fn start(settings: Settings, mut source: SourceConfig) -> Result<Controller, StartError> {
    let pusher = Pusher::new(PushSettings::default())?;
    let summaries = pusher.subscribe();
    let (desired_tx, desired) = watch::channel::<Desired>(None);
    let (wake, wake_rx) = watch::channel(0_u64);
    let (sync_inputs_tx, sync_inputs) = watch::channel::<Option<Arc<SyncInputs>>>(None);
    let shared_in = settings.namespace.clone();
    let handover = Mutex::new(Handover::default());
    let held = Arc::new(Mutex::new(Held::new()));
    let held_now = Arc::clone(&held);
    let served = pusher.subscribe();
    let claims = Claims::new(&settings.cloudflare).map_err(StartError::Claims)?;
    source.claims = Some(claims.checker());
    source.retranslate = Some(claims.retranslate());
    let retranslate = claims.retranslate_sender();
    let feed_claims = claims.feeder();
    source.on_translation = Some(TranslationHook(Arc::new(move |store, translation| {
        let mut wanted = planes::wanted(store, translation, Some(&shared_in));
        let moving = handover.lock().map_or_else(
            |_| Held::new(),
            |mut handover| {
                handover.adjust(
                    &mut wanted,
                    translation,
                    &served.borrow(),
                    &shared_in,
                    Instant::now(),
                )
            },
        );
        let tunnels = cloudflare_sync::inputs(store, translation, &wanted, &moving);
        if let Ok(mut held) = held_now.lock() {
            *held = moving;
        }
        desired_tx.send_replace(Some(Arc::new(wanted)));
        sync_inputs_tx.send_if_modified(|current| {
            if current.as_deref() == Some(&tunnels) {
                return false;
            }
            *current = Some(Arc::new(tunnels));
            true
        });
        feed_claims(store, translation);
    })));
    tokio::spawn(retranslate_while_held(
        pusher.subscribe(),
        Arc::clone(&held),
        retranslate,
    ));
    source.assigner = Some(SharedAssigner(Arc::new(PlaneAddresses {
        shared_in: settings.namespace.clone(),
        held,
    })));
    let shared_in = settings.namespace.clone();
    let refused = Arc::new(watch::Sender::new(BTreeMap::new()));
    let refusals = refused.subscribe();
    let sync_status = Arc::new(watch::Sender::new(SyncStatus::default()));
    let synced = sync_status.subscribe();
    source.status_overlay = Some(StatusOverlay(Arc::new(move |translation| {
        push_status::overlay(translation, &summaries.borrow(), Some(&shared_in));
        render_status::overlay(translation, &refusals.borrow());
        cloudflare_sync::status::overlay(translation, &synced.borrow());
    })));
    source.status_wake = Some(wake_rx);
    let kubeconfig = source.kubeconfig.clone();
    let source = tokio::task::spawn_blocking(move || KubernetesSource::start(source))
        .await
        .map_err(|error| {
            culvert_kubernetes::Error::Runtime(std::io::Error::other(error.to_string()))
        })??;
    let client = culvert_kubernetes::client::connect(kubeconfig.as_deref()).await?;
    let cluster = Cluster::new(client);
    Ok(Controller {
        source,
        claims: claims.task(cluster.clone()),
        cluster,
        settings,
        pusher,
        desired,
        wake: Arc::new(wake),
        refused,
        sync_inputs,
        sync_status,
    })
}

impl Controller {
    /// The planes the latest translation wants.
    pub fn wanted(&self) -> Option<Arc<Wanted>> {
        self.desired.borrow().clone()
    }

    /// The push summaries, as they change.
    pub fn summaries(&self) -> watch::Receiver<Summaries> {
        self.pusher.subscribe()
    }

    /// Reconciles and pushes until `stop` turns true, then stops the watches and
    /// hands the Lease on.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let Self {
            source,
            cluster,
            settings,
            pusher,
            desired,
            wake,
            refused,
            sync_inputs,
            sync_status,
            claims,
        } = self;
        let waker = tokio::spawn(wake_on_status_change(pusher.subscribe(), Arc::clone(&wake)));
        let checks = tokio::spawn(claims.run(stop.clone()));
        let syncer = tokio::spawn(cloudflare_sync::task::run(
            cluster.clone(),
            settings.cloudflare.clone(),
            sync_inputs,
            source.leader(),
            stop.clone(),
            sync_status,
            Arc::clone(&wake),
        ));
        let mut feeder = Feeder::new(pusher);
        run(
            cluster,
            settings,
            desired,
            source.leader(),
            stop,
            move |applied, pass| {
                tracing::debug!(
                    planes = applied.len(),
                    deleted = pass.deleted,
                    failed = pass.failed.len(),
                    "reconciled"
                );
                for (plane, error) in feeder.feed(applied, pass) {
                    tracing::warn!(%plane, %error, "plane not pushed to");
                }
                // The refusals of this pass; a plane the API server kept this pass
                // from deciding keeps what was known about it.
                let mut known = refused.borrow().clone();
                known.retain(|key, _| pass.failed.contains_key(key));
                known.extend(pass.refused.iter().map(|(k, v)| (k.clone(), v.clone())));
                if refused.send_if_modified(|current| {
                    let changed = *current != known;
                    *current = known;
                    changed
                }) {
                    wake.send_modify(|n| *n += 1);
                }
            },
        )
        .await;
        waker.abort();
        syncer.abort();
        checks.abort();
        // Dropping the source joins its thread: off the runtime's thread.
        let _ = tokio::task::spawn_blocking(move || drop(source)).await;
    }
}

/// While a Gateway is held on its old plane ([`crate::handover`]), asks for a
/// translation whenever the pushes report something new, so the move completes as
/// soon as its new plane serves. Ends when the pusher does.
async fn retranslate_while_held(
    mut summaries: watch::Receiver<Summaries>,
    held: Arc<Mutex<Held>>,
    retranslate: Arc<watch::Sender<u64>>,
) {
    while summaries.changed().await.is_ok() {
        let holding = held.lock().is_ok_and(|held| !held.is_empty());
        if holding {
            retranslate.send_modify(|n| *n += 1);
        }
    }
}

/// Bumps `wake` whenever what status says about the pushes changes (not on every
/// push attempt), so the source writes it.
async fn wake_on_status_change(
    mut summaries: watch::Receiver<Summaries>,
    wake: Arc<watch::Sender<u64>>,
) {
    let mut last = push_status::view(&summaries.borrow_and_update());
    while summaries.changed().await.is_ok() {
        let view = push_status::view(&summaries.borrow_and_update());
        if view != last {
            last = view;
            wake.send_modify(|n| *n += 1);
        }
    }
}
