//! An in-process fake Kubernetes API server for Culvert's tests; never part of the
//! shipped binary. It serves the REST semantics kube-rs relies on over a real
//! loopback socket (so the `culvert` binary talks to it through a kubeconfig, as to a
//! cluster): paginated lists, watches from a `resourceVersion` with the in-stream
//! `410 Gone` a real server sends when that version is compacted away, label and
//! field selectors, the `/status` subresource with optimistic concurrency (409 on a
//! stale `resourceVersion`), generation bumps for spec changes only, no-op writes
//! without events, finalizers. Faults a real server or network can cause are
//! injectable: compaction, watch streams ending, failed requests, the server going
//! down and coming back on the same port. `BEHAVIOUR.md` lists what is implemented
//! and what is not.
//!
//! Start at [`FakeApiServer::new`], then [`FakeApiServer::serve`].
#![forbid(unsafe_code)]

mod api;
mod http;
mod selector;
mod store;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::watch;

pub(crate) use store::Kind;

/// A request the server answered, for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Query string.
    pub query: String,
    /// Status code answered.
    pub status: u16,
}

/// A failure to inject into matching requests.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Only this method (`GET`, `PATCH`, ...), or any.
    pub method: Option<String>,
    /// Only paths containing this, or any.
    pub path_contains: Option<String>,
    /// Only watches (`true`), only non-watches (`false`), or both.
    pub watch: Option<bool>,
    /// The status code answered (a `Status` body with a matching reason).
    pub code: u16,
    /// How many matching requests fail.
    pub times: usize,
}

/// Shared state of a server.
pub(crate) struct Inner {
    pub(crate) kinds: Mutex<Vec<Kind>>,
    pub(crate) store: Mutex<store::Store>,
    /// Bumped after every write: watches look at the log again.
    pub(crate) written: watch::Sender<u64>,
    /// Bumped to end every open watch.
    pub(crate) end_watches: watch::Sender<u64>,
    pub(crate) faults: Mutex<Vec<Fault>>,
    pub(crate) requests: Mutex<Vec<LoggedRequest>>,
    pub(crate) token: String,
}

impl Inner {
    pub(crate) fn notify(&self) {
        self.written.send_modify(|n| *n += 1);
    }

    pub(crate) fn kinds(&self) -> Vec<Kind> {
        self.kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The fake server. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct FakeApiServer {
    inner: Arc<Inner>,
}

impl Default for FakeApiServer {
    fn default() -> Self {
        Self::new()
    }
}

fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Kind {
    Kind {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
        namespaced,
        status: false,
        custom: false,
    }
}

impl FakeApiServer {
    /// A server with the built-in kinds Culvert reads or writes registered:
    /// Namespace, Service, Secret, ConfigMap, Pod, Event (core and
    /// `events.k8s.io/v1`), EndpointSlice and Lease. Custom kinds come from
    /// [`FakeApiServer::register_crds`].
    pub fn new() -> Self {
        let kinds = vec![
            builtin("", "v1", "Namespace", "namespaces", false),
            builtin("", "v1", "Service", "services", true),
            builtin("", "v1", "Secret", "secrets", true),
            builtin("", "v1", "ConfigMap", "configmaps", true),
            builtin("", "v1", "Pod", "pods", true),
            builtin("", "v1", "Event", "events", true),
            builtin("events.k8s.io", "v1", "Event", "events", true),
            builtin(
                "discovery.k8s.io",
                "v1",
                "EndpointSlice",
                "endpointslices",
                true,
            ),
            builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
        ];
        let mut token = [0u8; 16];
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, b) in token.iter_mut().enumerate() {
            *b = (seed >> ((i % 8) * 8)) as u8 ^ (i as u8).wrapping_mul(37);
        }
        Self {
            inner: Arc::new(Inner {
                kinds: Mutex::new(kinds),
                store: Mutex::new(store::Store::default()),
                written: watch::channel(0).0,
                end_watches: watch::channel(0).0,
                faults: Mutex::new(Vec::new()),
                requests: Mutex::new(Vec::new()),
                token: token.iter().map(|b| format!("{b:02x}")).collect(),
            }),
        }
    }

    /// Registers every served version of the CustomResourceDefinitions in `yaml`
    /// (multi-document; other documents are ignored). Returns the kinds added.
    pub fn register_crds(&self, yaml: &str) -> Result<Vec<String>, String> {
        let mut added = Vec::new();
        for document in serde_yaml_ng::Deserializer::from_str(yaml) {
            let value: Value =
                serde::Deserialize::deserialize(document).map_err(|e| format!("CRD YAML: {e}"))?;
            if value["kind"] != "CustomResourceDefinition" {
                continue;
            }
            let spec = &value["spec"];
            let group = spec["group"].as_str().ok_or("CRD without spec.group")?;
            let kind = spec["names"]["kind"].as_str().ok_or("CRD without kind")?;
            let plural = spec["names"]["plural"]
                .as_str()
                .ok_or("CRD without plural")?;
            let namespaced = spec["scope"] == "Namespaced";
            for version in spec["versions"].as_array().into_iter().flatten() {
                if version["served"] != Value::Bool(true) {
                    continue;
                }
                let name = version["name"].as_str().ok_or("CRD version without name")?;
                self.inner
                    .kinds
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Kind {
                        group: group.to_owned(),
                        version: name.to_owned(),
                        kind: kind.to_owned(),
                        plural: plural.to_owned(),
                        namespaced,
                        status: version["subresources"]["status"].is_object(),
                        custom: true,
                    });
                added.push(format!("{kind} {group}/{name}"));
            }
        }
        Ok(added)
    }

    /// Registers the CRDs of every `.yaml` file in `dir` (see
    /// [`FakeApiServer::register_crds`]).
    pub fn register_crd_dir(&self, dir: &Path) -> Result<Vec<String>, String> {
        let mut added = Vec::new();
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.extension().is_some_and(|e| e == "yaml") {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                added.extend(self.register_crds(&text)?);
            }
        }
        Ok(added)
    }

    fn target_of(&self, object: &Value) -> Result<api::Target, String> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        self.target(api_version, kind, object["metadata"]["namespace"].as_str())
    }

    fn target(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<api::Target, String> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let found = self
            .inner
            .kinds()
            .into_iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
            .ok_or_else(|| format!("{api_version} {kind} is not served"))?;
        Ok(api::Target {
            namespace: found
                .namespaced
                .then(|| namespace.unwrap_or("default").to_owned()),
            kind: found,
            name: None,
            status: false,
        })
    }

    /// Creates `object` as a `POST` would. `Err` is the `Status` body.
    pub fn create(&self, object: Value) -> Result<Value, Value> {
        let target = self
            .target_of(&object)
            .map_err(|e| store::status(404, "NotFound", &e, None))?;
        match api::create(&self.inner, &target, object) {
            (201, created) => Ok(created),
            (_, failure) => Err(failure),
        }
    }

    /// Creates `object`, or replaces its spec and metadata (not its status) whatever
    /// its `resourceVersion`, as `kubectl apply` ends up doing.
    pub fn apply_object(&self, mut object: Value) -> Result<Value, Value> {
        let target = self
            .target_of(&object)
            .map_err(|e| store::status(404, "NotFound", &e, None))?;
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let current = api::get(&self.inner, &target, &name);
        if current.0 == 404 {
            return self.create(object);
        }
        object["metadata"]["resourceVersion"] = current.1["metadata"]["resourceVersion"].clone();
        match api::update(&self.inner, &target, &name, object, false) {
            (200, updated) => Ok(updated),
            (_, failure) => Err(failure),
        }
    }

    /// Replaces the status of an object as another controller would (`status` of
    /// `object`, precondition on its `resourceVersion` if it has one).
    pub fn write_status(&self, object: Value) -> Result<Value, Value> {
        let mut target = self
            .target_of(&object)
            .map_err(|e| store::status(404, "NotFound", &e, None))?;
        target.status = true;
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match api::update(&self.inner, &target, &name, object, true) {
            (200, updated) => Ok(updated),
            (_, failure) => Err(failure),
        }
    }

    /// The object, if it exists.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let target = self.target(api_version, kind, namespace).ok()?;
        match api::get(&self.inner, &target, name) {
            (200, object) => Some(object),
            _ => None,
        }
    }

    /// Deletes the object as a `DELETE` would.
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), Value> {
        let target = self
            .target(api_version, kind, namespace)
            .map_err(|e| store::status(404, "NotFound", &e, None))?;
        match api::delete(&self.inner, &target, name) {
            (200, _) => Ok(()),
            (_, failure) => Err(failure),
        }
    }

    /// Moves the compaction floor to the current revision: watches and `continue`
    /// tokens from older versions get `410 Gone`.
    pub fn compact_all(&self) {
        self.inner
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .compact_all();
    }

    /// Ends every open watch cleanly, as the server does at `timeoutSeconds`.
    pub fn end_watches(&self) {
        self.inner.end_watches.send_modify(|n| *n += 1);
    }

    /// Fails matching requests from now on (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.inner
            .faults
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(fault);
    }

    /// Every request answered so far.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.inner
            .store
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .revision
    }

    /// Serves on a fresh loopback port.
    pub async fn serve(&self) -> std::io::Result<Serving> {
        self.serve_at(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Serves on `addr` (the port of an earlier [`Serving`] brings the server back
    /// where its clients expect it).
    pub async fn serve_at(&self, addr: SocketAddr) -> std::io::Result<Serving> {
        http::serve(Arc::clone(&self.inner), addr).await
    }
}

/// A listening server; dropping it (or [`Serving::stop`]) closes the listener and
/// every connection, as a server going down does.
pub struct Serving {
    addr: SocketAddr,
    token: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Serving {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A kubeconfig pointing at this server with its bearer token.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{addr}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: {token}\n",
            addr = self.addr,
            token = self.token,
        )
    }

    /// Writes [`Serving::kubeconfig`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())
    }

    /// Stops serving: the listener closes and open connections are cut.
    pub fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The current time as `metav1.Time` text.
pub(crate) fn now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = seconds / 86_400;
    let rem = seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
