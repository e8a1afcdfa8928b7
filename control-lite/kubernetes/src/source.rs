//! [`KubernetesSource`]: the watches, the mirror and the sync loop on a thread of
//! their own, publishing one merged `DataPlaneConfig` for the process that serves it
//! and, while this process holds the Lease, writing status and events.
//!
//! The sync loop: a change wakes it; it keeps taking changes until none has come
//! for [`SourceConfig::debounce`] (at most [`SourceConfig::max_delay`] after the
//! first), then translates. Nothing is published until every kind has been listed
//! once; a config equal to the one last published is not published again. API
//! trouble only delays changes: the last published config stays until a complete
//! mirror says otherwise.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use culvert_control_lite::model::ObjectKey;
use culvert_control_lite::store::{NamespacedName, Store};
use culvert_control_lite::translate::{
    AddressAssigner, ClaimChecker, FixedAddresses, NoClaimChecks, Options, Proof, Translation,
    translate,
};
use culvert_router::DataPlaneConfig;
use culvert_tunnel_proto::TunnelToken;
use kube::Client;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::addresses::{PodAddresses, Published, SharedAssigner};
use crate::events::Events;
use crate::kinds::WATCHED;
use crate::leader::{self, LeaseConfig};
use crate::mirror::Mirror;
use crate::watch::{CHANNEL_DEPTH, Change, watch_kind, watch_pods};
use crate::{Error, writer};

/// How the source connects and what it publishes.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// A kubeconfig file; `None` infers (`KUBECONFIG`, `~/.kube/config`, in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// `controllerName` of the GatewayClasses served.
    pub controller_name: String,
    /// Addresses Gateways report when no pod addresses are known.
    pub addresses: Vec<String>,
    /// Publish the host IPs of the pods matching this label selector in this
    /// namespace as Gateway addresses: `(namespace, selector)`.
    pub publish_pods: Option<(String, String)>,
    /// Assign Gateway addresses with this instead (and bind them): a harness that
    /// owns the addresses, such as the conformance run.
    pub assigner: Option<SharedAssigner>,
    /// The Lease deciding which process writes status; `None` writes always (one
    /// process only).
    pub lease: Option<LeaseConfig>,
    /// Quiet time that ends a burst of changes.
    pub debounce: Duration,
    /// Longest a change waits for a burst to end.
    pub max_delay: Duration,
    /// Called with the mirror and each new translation, on the source's thread:
    /// `culvert controller` takes the dedicated planes from here.
    pub on_translation: Option<TranslationHook>,
    /// Applied to a copy of the translation before each status write: what the
    /// translation cannot know (`culvert controller`'s pushes) added to status.
    pub status_overlay: Option<StatusOverlay>,
    /// Writes status again (with the overlay) whenever this changes.
    pub status_wake: Option<watch::Receiver<u64>>,
    /// What is known about tunnel claims; none checked ([`NoClaimChecks`]) when
    /// absent.
    pub claims: Option<SharedClaims>,
    /// Translates again (and writes status) whenever this changes, though no object
    /// did: what [`SourceConfig::claims`] knows has changed.
    pub retranslate: Option<watch::Receiver<u64>>,
}

/// A claim checker shared with the thread that translates.
#[derive(Clone)]
pub struct SharedClaims(pub Arc<dyn ClaimChecker + Send + std::marker::Sync>);

impl std::fmt::Debug for SharedClaims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedClaims")
    }
}

impl ClaimChecker for SharedClaims {
    fn available(&self) -> bool {
        self.0.available()
    }

    fn proof(&self, gateway: &NamespacedName, token: &TunnelToken) -> Proof {
        self.0.proof(gateway, token)
    }
}

/// An edit of the translation's status before it is written.
#[derive(Clone)]
pub struct StatusOverlay(pub Arc<EditTranslation>);

/// What a [`StatusOverlay`] calls.
pub type EditTranslation = dyn Fn(&mut Translation) + Send + std::marker::Sync;

impl std::fmt::Debug for StatusOverlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StatusOverlay")
    }
}

/// A callback for each translation, with the objects it was made from. It runs on
/// the source's thread between translations, so it should hand work off quickly.
#[derive(Clone)]
pub struct TranslationHook(pub Arc<OnTranslation>);

/// What a [`TranslationHook`] calls.
pub type OnTranslation = dyn Fn(&Store, &Translation) + Send + std::marker::Sync;

impl std::fmt::Debug for TranslationHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TranslationHook")
    }
}

impl SourceConfig {
    /// Defaults: infer the cluster, 50 ms debounce, 500 ms at most, no Lease.
    pub fn new(controller_name: &str) -> Self {
        Self {
            kubeconfig: None,
            controller_name: controller_name.to_owned(),
            addresses: Vec::new(),
            publish_pods: None,
            assigner: None,
            lease: None,
            debounce: Duration::from_millis(50),
            max_delay: Duration::from_millis(500),
            on_translation: None,
            status_overlay: None,
            status_wake: None,
            claims: None,
            retranslate: None,
        }
    }
}

/// Counts of the sync loop's work, readable while it runs.
#[derive(Debug, Default)]
pub struct SyncStats {
    /// Translations made (one per burst of changes once every kind is listed).
    pub translations: AtomicU64,
    /// Configs published (translations whose config differed from the last).
    pub published: AtomicU64,
    /// Watch events taken from the channel.
    pub changes: AtomicU64,
}

/// A running Kubernetes source. Dropping it stops the watches and releases the
/// Lease.
pub struct KubernetesSource {
    stats: Arc<SyncStats>,
    configs: watch::Receiver<Option<Arc<DataPlaneConfig>>>,
    leader: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KubernetesSource {
    /// Connects (a bad kubeconfig fails here, before anything is served) and starts
    /// the watches on a thread named `culvert-kubernetes`.
    pub fn start(config: SourceConfig) -> Result<Self, Error> {
        let (configs_tx, configs) = watch::channel(None);
        let (leader_tx, leader) = watch::channel(config.lease.is_none());
        let (stop, stop_rx) = watch::channel(false);
        let (connected_tx, connected) = std::sync::mpsc::channel();
        let stats = Arc::new(SyncStats::default());
        let sync_stats = Arc::clone(&stats);
        // The runtime is built and entered on the new thread only, so `start` may be
        // called from inside another runtime (a test's, say).
        let thread = std::thread::Builder::new()
            .name("culvert-kubernetes".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = connected_tx.send(Err(Error::Runtime(error)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let kubeconfig = config.kubeconfig.clone();
                    match crate::client::connect(kubeconfig.as_deref()).await {
                        Ok(client) => {
                            let _ = connected_tx.send(Ok(()));
                            let channels = Channels {
                                configs: configs_tx,
                                leader: leader_tx,
                                stop: stop_rx,
                                stats: sync_stats,
                            };
                            run(client, config, channels).await;
                        }
                        Err(error) => {
                            let _ = connected_tx.send(Err(error));
                        }
                    }
                });
            })
            .map_err(Error::Runtime)?;
        let connected = connected.recv().unwrap_or_else(|_| {
            Err(Error::Runtime(std::io::Error::other(
                "the Kubernetes thread stopped",
            )))
        });
        if let Err(error) = connected {
            let _ = thread.join();
            return Err(error);
        }
        Ok(Self {
            stats,
            configs,
            leader,
            stop,
            thread: Some(thread),
        })
    }

    /// The latest translated config; `None` until every kind has been listed.
    pub fn configs(&self) -> watch::Receiver<Option<Arc<DataPlaneConfig>>> {
        self.configs.clone()
    }

    /// What the sync loop has done so far.
    pub fn stats(&self) -> &SyncStats {
        &self.stats
    }

    /// Whether this process writes status now.
    pub fn leader(&self) -> watch::Receiver<bool> {
        self.leader.clone()
    }
}

impl Drop for KubernetesSource {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The source thread's ends of its channels.
struct Channels {
    configs: watch::Sender<Option<Arc<DataPlaneConfig>>>,
    leader: watch::Sender<bool>,
    stop: watch::Receiver<bool>,
    stats: Arc<SyncStats>,
}

async fn run(client: Client, config: SourceConfig, channels: Channels) {
    let Channels {
        configs,
        leader: leader_tx,
        stop,
        stats,
    } = channels;
    let (changes_tx, changes) = mpsc::channel(CHANNEL_DEPTH);
    let mut tasks = tokio::task::JoinSet::new();
    for kind in WATCHED {
        tasks.spawn(watch_kind(client.clone(), kind, changes_tx.clone()));
    }
    if let Some((namespace, selector)) = config.publish_pods.clone() {
        tasks.spawn(watch_pods(
            client.clone(),
            namespace,
            selector,
            changes_tx.clone(),
        ));
    }
    drop(changes_tx);
    let leader = leader_tx.subscribe();
    let campaign = config
        .lease
        .clone()
        .map(|lease| tokio::spawn(leader::run(client.clone(), lease, leader_tx, stop.clone())));
    let instance = config.lease.as_ref().map(|l| l.identity.clone());
    let mut sync = Sync {
        events: Events::new(Some(client.clone()), "culvert", instance),
        client,
        config,
        mirror: Mirror::new(),
        pods: PodAddresses::default(),
        configs,
        last: None,
        reported: Default::default(),
        stats,
    };
    sync.run(changes, leader, stop).await;
    tasks.abort_all();
    // The campaign saw the stop too: give it a moment to release the Lease.
    if let Some(campaign) = campaign {
        let _ = tokio::time::timeout(Duration::from_secs(2), campaign).await;
    }
}

/// The sync loop's state.
struct Sync {
    client: Client,
    config: SourceConfig,
    mirror: Mirror,
    pods: PodAddresses,
    configs: watch::Sender<Option<Arc<DataPlaneConfig>>>,
    /// The last translation, for status writes after a leadership change.
    last: Option<Translation>,
    /// Malformed objects already reported, with the message reported.
    reported: BTreeMap<ObjectKey, String>,
    events: Events,
    stats: Arc<SyncStats>,
}

/// First wait before retrying failed status writes; doubles up to a minute.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(60);

impl Sync {
    async fn run(
        &mut self,
        mut changes: mpsc::Receiver<Change>,
        mut leader: watch::Receiver<bool>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut dirty = false;
        let mut status_due = false;
        let mut retry: Option<(Instant, Duration)> = None;
        let mut again = false;
        let mut wake = self.config.status_wake.clone();
        let mut retranslate = self.config.retranslate.clone();
        loop {
            let retry_at = retry.map(|(at, _)| at);
            tokio::select! {
                Ok(()) = changed(wake.as_mut()) => status_due = true,
                Ok(()) = changed(retranslate.as_mut()) => again = true,
                change = changes.recv() => match change {
                    Some(change) => dirty |= self.apply(change),
                    None => return,
                },
                Ok(()) = leader.changed() => status_due |= *leader.borrow_and_update(),
                () = sleep_until(retry_at), if retry_at.is_some() => status_due = true,
                _ = stop.changed() => return,
            }
            if dirty {
                let deadline = Instant::now() + self.config.max_delay;
                loop {
                    let quiet = (Instant::now() + self.config.debounce).min(deadline);
                    match tokio::time::timeout_at(quiet, changes.recv()).await {
                        Ok(Some(change)) => dirty |= self.apply(change),
                        Ok(None) => return,
                        Err(_) => break,
                    }
                }
            }
            if !self.mirror.ready() {
                continue;
            }
            if dirty || again {
                dirty = false;
                again = false;
                self.translate();
                status_due = true;
            }
            if status_due && *leader.borrow() {
                status_due = false;
                // A stop interrupts writes in flight: an API server that does not
                // answer must not hold up the process's exit.
                let failed = tokio::select! {
                    failed = self.write_status() => failed,
                    _ = stop.changed() => return,
                };
                retry = if failed {
                    let wait = retry.map_or(RETRY_FIRST, |(_, wait)| (wait * 2).min(RETRY_MAX));
                    Some((Instant::now() + wait, wait))
                } else {
                    None
                };
            }
        }
    }

    fn apply(&mut self, change: Change) -> bool {
        self.stats.changes.fetch_add(1, Ordering::Relaxed);
        match change {
            Change::Object(kind, event) => self.mirror.handle(kind, event),
            Change::Absent(kind) => {
                if self.mirror.absent(kind) {
                    tracing::info!(kind = kind.kind, "API not served; treated as empty");
                    true
                } else {
                    false
                }
            }
            Change::Pod(event) => self.pods.handle(event),
        }
    }

    fn translate(&mut self) {
        let mut addresses = self.pods.addresses();
        if addresses.is_empty() {
            addresses.clone_from(&self.config.addresses);
        }
        let assigner: Box<dyn AddressAssigner> = match &self.config.assigner {
            Some(shared) => Box::new(shared.clone()),
            None => Box::new(Published(FixedAddresses(addresses))),
        };
        let options = Options {
            controller_name: self.config.controller_name.clone(),
            privileged_namespace_prefixes: Vec::new(),
            addresses: assigner,
            claims: match &self.config.claims {
                Some(shared) => Box::new(shared.clone()),
                None => Box::new(NoClaimChecks),
            },
        };
        let translation = translate(self.mirror.store(), &options);
        self.stats.translations.fetch_add(1, Ordering::Relaxed);
        let config = translation.merged_config().unwrap_or_default();
        let published = self.configs.send_if_modified(|current| {
            if current.as_deref() == Some(&config) {
                return false;
            }
            *current = Some(Arc::new(config));
            true
        });
        if published {
            self.stats.published.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(hook) = &self.config.on_translation {
            (hook.0)(self.mirror.store(), &translation);
        }
        self.last = Some(translation);
    }

    /// Writes statuses and reports malformed objects; returns whether a write
    /// failed and should be retried.
    async fn write_status(&mut self) -> bool {
        let Some(last) = &self.last else {
            return false;
        };
        let overlaid;
        let translation = match &self.config.status_overlay {
            Some(overlay) => {
                // Status only: the data-plane configs are not the writer's and can be
                // large, so they are not copied.
                let mut copy = Translation {
                    data_planes: BTreeMap::new(),
                    gateway_classes: last.gateway_classes.clone(),
                    gateways: last.gateways.clone(),
                    routes: last.routes.clone(),
                    listener_sets: last.listener_sets.clone(),
                    backend_tls_policies: last.backend_tls_policies.clone(),
                    gateway_planes: last.gateway_planes.clone(),
                    refused_planes: last.refused_planes.clone(),
                };
                (overlay.0)(&mut copy);
                overlaid = copy;
                &overlaid
            }
            None => last,
        };
        let outcome = writer::write_all(
            &self.client,
            translation,
            &self.mirror,
            &self.config.controller_name,
            &mut self.events,
        )
        .await;
        if outcome.written > 0 {
            tracing::debug!(written = outcome.written, "status written");
        }
        for (key, stored) in outcome.stored {
            self.mirror.note_written(key, stored);
        }
        let malformed: Vec<(ObjectKey, String)> = self
            .mirror
            .malformed()
            .iter()
            .filter(|(key, message)| self.reported.get(*key) != Some(*message))
            .map(|(key, message)| (key.clone(), message.clone()))
            .collect();
        self.reported
            .retain(|key, _| self.mirror.malformed().contains_key(key));
        for (key, message) in malformed {
            tracing::warn!(object = %key, %message, "object does not decode; left out");
            let uid = self.mirror.observed().get(&key).and_then(|o| o.uid.clone());
            self.events
                .warn(&key, uid.as_deref(), "InvalidObject", &message)
                .await;
            self.reported.insert(key, message);
        }
        outcome.failed > 0
    }
}

/// The next change of `wake`; never, without one (or once its sender is gone).
async fn changed(wake: Option<&mut watch::Receiver<u64>>) -> Result<(), watch::error::RecvError> {
    match wake {
        Some(wake) => wake.changed().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
