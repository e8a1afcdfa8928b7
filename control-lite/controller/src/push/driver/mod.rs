//! The push driver: the [`Pusher`] the controller owns and the task per plane
//! that carries out what [`PlaneState`] decides. It only moves requests, answers
//! and timers; every decision is the state machine's.
//!
//! Each plane runs on its own task, and each request on its own task under the
//! plane's, bounded by [`PushSettings::request_timeout`], so a pod or a plane that
//! hangs or refuses never holds up another. Planes are set and replaced with
//! [`Pusher::set_plane`] (cheap to call on every reconcile: the same content keeps
//! its version, the same TLS settings keep their session cache) and dropped with
//! [`Pusher::remove_plane`]; their [`PlaneSummary`]s are on a watch channel
//! ([`Pusher::subscribe`]). Nothing here panics on what a pod answers, and the
//! bearer token appears in no log line or failure message.

mod client;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use culvert_router::DataPlaneConfig;
use rustls::crypto::CryptoProvider;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};
use tracing::Instrument;

use super::Failure;
use super::state::{Action, PlaneState, PlaneSummary, Reported, Request, Timing};
use crate::Error;
use client::Client;

/// The summaries of every plane, by plane.
pub type Summaries = BTreeMap<PlaneKey, PlaneSummary>;

/// How the pusher behaves.
#[derive(Debug, Clone)]
pub struct PushSettings {
    /// Backoff, re-check and sustained-failure durations.
    pub timing: Timing,
    /// The longest one request (connect, TLS, answer) may take.
    pub request_timeout: Duration,
    /// Seeds the jitter of every plane's backoff.
    pub seed: u64,
    /// The TLS provider (aws-lc-rs, as everywhere in Culvert).
    pub crypto_provider: Arc<CryptoProvider>,
}

impl Default for PushSettings {
    /// The default timing, a 5 s request timeout, a seed from the process's
    /// random hasher keys, aws-lc-rs.
    fn default() -> Self {
        Self {
            timing: Timing::default(),
            request_timeout: Duration::from_secs(5),
            seed: RandomState::new().hash_one("culvert-push"),
            crypto_provider: culvert_tls::crypto_provider(),
        }
    }
}

/// Which plane: its Gateway's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlaneKey {
    /// The Gateway's namespace.
    pub namespace: String,
    /// The Gateway's name.
    pub name: String,
}

impl PlaneKey {
    /// The plane of Gateway `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for PlaneKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What to push to one plane, and how to reach it.
#[derive(Clone, PartialEq)]
pub struct PlaneTarget {
    /// The desired config; its `version` is ignored (the pusher chooses it).
    pub config: Arc<DataPlaneConfig>,
    /// The config API address of every pod to push to.
    pub pods: Vec<SocketAddr>,
    /// The plane's bearer token.
    pub token: String,
    /// The CA (PEM) the pods' config API certificates must chain to.
    pub ca_pem: String,
    /// The name those certificates must be valid for (the config Service's DNS
    /// name).
    pub server_name: String,
}

impl fmt::Debug for PlaneTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlaneTarget")
            .field("pods", &self.pods)
            .field("server_name", &self.server_name)
            .field("token", &"[redacted]")
            .finish_non_exhaustive()
    }
}

/// A target checked and prepared for the plane's task.
struct Prepared {
    config: Arc<DataPlaneConfig>,
    hash: String,
    pods: Vec<SocketAddr>,
    client: Arc<Client>,
}

/// The pusher's side of one plane's task.
struct PlaneHandle {
    targets: watch::Sender<Arc<Prepared>>,
    /// Cleared, under the summaries' lock, when the plane is removed, so a task
    /// still finishing cannot publish it again.
    alive: Arc<AtomicBool>,
    task: AbortHandle,
}

/// Pushes every plane's config to its pods; one task per plane. Dropping it
/// stops them all.
pub struct Pusher {
    settings: PushSettings,
    runtime: Handle,
    planes: Mutex<HashMap<PlaneKey, PlaneHandle>>,
    summaries: Arc<watch::Sender<Summaries>>,
    seeds: AtomicU64,
}

impl fmt::Debug for Pusher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pusher")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Pusher {
    /// A pusher running its tasks on the current Tokio runtime.
    pub fn new(settings: PushSettings) -> Result<Self, Error> {
        let runtime = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let seeds = AtomicU64::new(settings.seed);
        Ok(Self {
            settings,
            runtime,
            planes: Mutex::new(HashMap::new()),
            summaries: Arc::new(watch::Sender::new(Summaries::new())),
            seeds,
        })
    }

    /// Sets what `key`'s plane should serve and where its pods are, starting its
    /// task if it has none. Refused (and the plane left as it was) when the
    /// config cannot be hashed or the token, CA or server name cannot be used.
    pub fn set_plane(&self, key: PlaneKey, target: PlaneTarget) -> Result<(), Error> {
        let hash = target
            .config
            .content_hash()
            .map_err(|err| Error::Serialize {
                kind: "DataPlaneConfig",
                message: err.to_string(),
            })?;
        let mut planes = lock(&self.planes);
        let existing = planes.get(&key);
        let client = match existing.map(|plane| Arc::clone(&plane.targets.borrow().client)) {
            Some(client) if client.serves(&target) => client,
            _ => Arc::new(Client::new(&target, &self.settings.crypto_provider)?),
        };
        let prepared = Arc::new(Prepared {
            config: target.config,
            hash,
            pods: target.pods,
            client,
        });
        if let Some(plane) = existing {
            plane.targets.send_replace(prepared);
            return Ok(());
        }
        let now = now();
        let seed = self
            .seeds
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
        let mut state = PlaneState::new(prepared.hash.clone(), self.settings.timing, seed);
        state.set_pods(prepared.pods.iter().copied(), now);
        let alive = Arc::new(AtomicBool::new(true));
        publish(&self.summaries, &key, &alive, state.summary(now));
        let (targets, receiver) = watch::channel(prepared);
        let span = tracing::info_span!("push", plane = %key);
        tracing::info!(parent: &span, pods = state.pods().count(), "pushing to a new plane");
        let task = PlaneTask {
            key: key.clone(),
            state,
            targets: receiver,
            summaries: Arc::clone(&self.summaries),
            alive: Arc::clone(&alive),
            request_timeout: self.settings.request_timeout,
            body: None,
        };
        let task = self
            .runtime
            .spawn(task.run().instrument(span))
            .abort_handle();
        planes.insert(
            key,
            PlaneHandle {
                targets,
                alive,
                task,
            },
        );
        Ok(())
    }

    /// Stops pushing to `key`'s plane and drops its summary; whether it had one.
    pub fn remove_plane(&self, key: &PlaneKey) -> bool {
        let Some(plane) = lock(&self.planes).remove(key) else {
            return false;
        };
        plane.task.abort();
        self.summaries.send_if_modified(|summaries| {
            plane.alive.store(false, Ordering::Release);
            summaries.remove(key).is_some()
        });
        tracing::info!(plane = %key, "stopped pushing to a plane");
        true
    }

    /// The current summary of `key`'s plane.
    pub fn summary(&self, key: &PlaneKey) -> Option<PlaneSummary> {
        self.summaries.borrow().get(key).cloned()
    }

    /// Every plane's summary, marked changed whenever one changes.
    pub fn subscribe(&self) -> watch::Receiver<Summaries> {
        self.summaries.subscribe()
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        for plane in lock(&self.planes).values() {
            plane.task.abort();
        }
    }
}

/// One plane's task: polls the state machine, runs the requests it hands out,
/// feeds their answers and the targets' changes back, publishes the summary.
struct PlaneTask {
    key: PlaneKey,
    state: PlaneState,
    targets: watch::Receiver<Arc<Prepared>>,
    summaries: Arc<watch::Sender<Summaries>>,
    alive: Arc<AtomicBool>,
    request_timeout: Duration,
    /// The last `PUT` body: (version, hash, JSON).
    body: Option<(u64, String, Bytes)>,
}

impl PlaneTask {
    async fn run(mut self) {
        let mut requests = JoinSet::new();
        let mut out = HashMap::new();
        loop {
            let now = now();
            let target = Arc::clone(&self.targets.borrow());
            while let Some(request) = self.state.poll_request(now) {
                let pod = request.pod;
                let exchange = self.exchange(&target, request);
                out.insert(requests.spawn(exchange).id(), pod);
            }
            publish(
                &self.summaries,
                &self.key,
                &self.alive,
                self.state.summary(now),
            );
            let wake = self.state.poll_timeout(now);
            tokio::select! {
                changed = self.targets.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let target = Arc::clone(&self.targets.borrow_and_update());
                    self.state.set_desired(&target.hash);
                    self.state.set_pods(target.pods.iter().copied(), self::now());
                }
                Some(joined) = requests.join_next_with_id() => {
                    let (id, result) = match joined {
                        Ok((id, result)) => (id, result),
                        // Only a panic in hyper or rustls gets here.
                        Err(err) => (err.id(), Err(Failure::Response("the request task ended".to_owned()))),
                    };
                    if let Some(pod) = out.remove(&id) {
                        self.handle(pod, result);
                    }
                }
                () = sleep_until(wake) => {}
            }
        }
    }

    fn handle(&mut self, pod: SocketAddr, result: Result<Reported, Failure>) {
        match &result {
            Ok(reported) => {
                tracing::debug!(%pod, version = ?reported.version, hash = ?reported.hash, "pod answered");
            }
            Err(failure) => {
                tracing::debug!(%pod, kind = failure.label(), error = %failure, "request failed");
            }
        }
        self.state.handle_response(pod, result, now());
    }

    /// The request as a future for its own task, bounded by the request timeout.
    fn exchange(
        &mut self,
        target: &Prepared,
        request: Request,
    ) -> impl Future<Output = Result<Reported, Failure>> + Send + 'static {
        let client = Arc::clone(&target.client);
        let timeout = self.request_timeout;
        let body = match request.action {
            Action::Get => Ok(Bytes::new()),
            Action::Put { version } => self.body(target, version),
        };
        let Request { pod, action } = request;
        tracing::debug!(%pod, ?action, "request");
        async move {
            let body = body?;
            tokio::time::timeout(timeout, client.request(pod, &action, body))
                .await
                .unwrap_or(Err(Failure::Timeout(timeout)))
        }
    }

    /// The target's config as JSON under `version`, kept while neither changes.
    fn body(&mut self, target: &Prepared, version: u64) -> Result<Bytes, Failure> {
        if let Some((cached, hash, body)) = &self.body
            && *cached == version
            && *hash == target.hash
        {
            return Ok(body.clone());
        }
        let mut config = DataPlaneConfig::clone(&target.config);
        config.version = version;
        // It was hashed, so serialised, when the target was set; this cannot fail.
        let body = Bytes::from(
            serde_json::to_vec(&config)
                .map_err(|err| Failure::Response(format!("serialising the config: {err}")))?,
        );
        self.body = Some((version, target.hash.clone(), body.clone()));
        Ok(body)
    }
}

/// Replaces `key`'s summary if it changed and the plane is still there.
fn publish(
    summaries: &watch::Sender<Summaries>,
    key: &PlaneKey,
    alive: &AtomicBool,
    summary: PlaneSummary,
) {
    summaries.send_if_modified(|all| {
        if !alive.load(Ordering::Acquire) || all.get(key) == Some(&summary) {
            return false;
        }
        all.insert(key.clone(), summary);
        true
    });
}

/// The state machine's clock: Tokio's, so paused-time tests drive it.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

async fn sleep_until(wake: Option<Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
