//! The state one fake server shares between its handles, its listeners and its
//! watch streams: the registry, the store, the injected rules, the request log and
//! the channels that wake or end watches. Holds no logic beyond locking.

use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::sync::{broadcast, watch};

use crate::query::url_query;
use crate::registry::Registry;
use crate::rules::{Matcher, Rule};
use crate::store::Store;
use crate::tls::Material;

/// Which Kubernetes minor the fake answers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Profile {
    /// Kubernetes 1.35: streaming lists (`sendInitialEvents`) with the
    /// `k8s.io/initial-events-end` bookmark.
    #[default]
    Current,
    /// Kubernetes 1.20: a watch with `sendInitialEvents` or `resourceVersionMatch`
    /// is refused with 422.
    K8s1_20,
}

impl Profile {
    /// `/version` body fields: (minor, gitVersion).
    pub(crate) fn version(self) -> (&'static str, &'static str) {
        match self {
            Self::Current => ("35", "v1.35.0"),
            Self::K8s1_20 => ("20", "v1.20.2"),
        }
    }
}

/// A request the server answered, for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Query string, as sent (URL-encoded).
    pub query: String,
    /// `Content-Type`, if sent.
    pub content_type: Option<String>,
    /// Request body.
    pub body: Bytes,
    /// Status code answered (200 for a watch, whatever its stream then carried).
    pub status: u16,
    /// When the answer (or the watch's first byte) was sent.
    pub time: SystemTime,
}

impl LoggedRequest {
    /// The body as text (lossy UTF-8).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether this is a watch (`watch=true` or `watch=1`).
    pub fn is_watch(&self) -> bool {
        self.query
            .split('&')
            .any(|p| p == "watch=true" || p == "watch=1")
    }

    /// The decoded value of query parameter `name`, if present.
    pub fn query_param(&self, name: &str) -> Option<String> {
        url_query(&self.query).remove(name)
    }
}

/// A message to every open watch.
#[derive(Debug, Clone)]
pub(crate) enum Signal {
    /// End matching watches cleanly.
    End(Matcher),
    /// Abort matching watches mid-stream.
    Reset(Matcher),
    /// Send a bookmark now.
    Bookmark,
}

/// Shared state of a server.
pub(crate) struct Inner {
    pub(crate) registry: RwLock<Registry>,
    pub(crate) store: Mutex<Store>,
    /// Bumped after every write (and compaction): watches look at the log again.
    pub(crate) written: watch::Sender<u64>,
    pub(crate) signals: broadcast::Sender<Signal>,
    pub(crate) stalled: watch::Sender<bool>,
    pub(crate) bookmark_interval: watch::Sender<Option<Duration>>,
    pub(crate) rules: Mutex<Vec<Rule>>,
    pub(crate) requests: Mutex<Vec<LoggedRequest>>,
    pub(crate) profile: Mutex<Profile>,
    pub(crate) token: String,
    pub(crate) tls: OnceLock<Material>,
}

impl Inner {
    pub(crate) fn new() -> Self {
        Self {
            registry: RwLock::new(Registry::builtin()),
            store: Mutex::new(Store::default()),
            written: watch::channel(0).0,
            signals: broadcast::channel(64).0,
            stalled: watch::channel(false).0,
            bookmark_interval: watch::channel(None).0,
            rules: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            profile: Mutex::new(Profile::Current),
            token: random_hex(),
            tls: OnceLock::new(),
        }
    }

    /// Wakes every watch.
    pub(crate) fn notify(&self) {
        self.written.send_modify(|n| *n += 1);
    }

    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn registry(&self) -> RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn profile(&self) -> Profile {
        *self.profile.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn log(&self, request: LoggedRequest) {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
    }
}

/// 128 random bits as hex, from the OS-seeded keys of `RandomState` (no RNG crate
/// needed for a test token).
pub(crate) fn random_hex() -> String {
    let mut out = String::new();
    for _ in 0..2 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0);
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out
}

/// The current time as `metav1.Time` text (seconds, `Z`).
#[allow(
    clippy::disallowed_methods,
    reason = "the fake API server stamps objects on the real clock, as kube-apiserver does"
)]
pub(crate) fn now() -> String {
    culvert_time::format_rfc3339(SystemTime::now(), culvert_time::Precision::Seconds)
}
