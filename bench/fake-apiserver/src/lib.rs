//! An in-process fake Kubernetes API server for Culvert's tests; never part of the
//! shipped binary. It serves the REST semantics kube-rs 5 relies on over a real
//! loopback socket with HTTPS and a bearer token, so a `kube::Client` (or the
//! `culvert` binary, through a kubeconfig file) talks to it as to a cluster:
//! paginated lists at one revision, watches from a `resourceVersion` with the
//! in-stream 410 a real server sends once that version is compacted away, label and
//! field selectors, the `/status` subresource with optimistic concurrency,
//! `generation` bumps for spec changes only, no-op writes without events, merge,
//! JSON and (simplified) server-side-apply patches, finalizers, CRD schema defaults.
//! Faults a real server or network can cause are injectable through [`Faults`].
//! `BEHAVIOUR.md` is the behaviour table: what is implemented, what it mirrors, which
//! test covers it, and what is not implemented.
//!
//! It must never be a dependency of a shipped crate, and it never panics on what a
//! client sends.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use culvert_fake_apiserver::{FakeApiServer, Matcher, Verb};
//! let server = FakeApiServer::new();
//! server.register_crds(&std::fs::read_to_string("httproutes.yaml")?)?;
//! server.create(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
//!                                  "metadata": {"name": "default"}}))?;
//! let serving = server.serve().await?;
//! let client = serving.client().await?; // or serving.write_kubeconfig(path)
//! server.faults().fail(Matcher::any().verb(Verb::Update).subresource("status"), 409, "Conflict", 1);
//! server.faults().compact_all();
//! # drop(client); Ok(()) }
//! ```
//!
//! Start at [`FakeApiServer::new`], then [`FakeApiServer::serve`] and [`Faults`].
//! Modules: `state` (shared state), `registry` (kinds), `store` (MVCC and history),
//! `api` (object semantics), `list`, `watch`, `selector`, `patch`, `schema` (CRD
//! defaults), `rules` (which requests a fault selects, what it does), `faults` (the
//! handle adding them), `query` (URL queries), `http` (front end), `tls`
//! (certificates and kubeconfig), `serving` (a running listener).
#![forbid(unsafe_code)]
#![allow(
    clippy::result_large_err,
    reason = "Status mirrors the wire body; a test fake favours that over a smaller Err"
)]

mod api;
mod error;
mod faults;
pub mod fixtures;
mod http;
mod list;
mod patch;
mod query;
mod registry;
mod rules;
mod schema;
mod selector;
mod serving;
mod state;
mod store;
mod tls;
mod watch;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, PoisonError};

use serde_json::Value;

pub use error::{Error, Status};
pub use faults::Faults;
pub use rules::{Fault, Matcher, Verb};
pub use serving::Serving;
pub use state::{LoggedRequest, Profile};

use api::Target;
use state::Inner;

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

impl std::fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApiServer")
            .field("revision", &self.revision())
            .finish_non_exhaustive()
    }
}

fn unserved(api_version: &str, kind: &str) -> Status {
    Status::new(
        404,
        "NotFound",
        format!("the server could not find the requested resource ({kind} {api_version})"),
    )
}

impl FakeApiServer {
    /// A server with the built-in kinds registered: core v1 Namespace, Node,
    /// Service, Secret, ConfigMap, Pod, Event; `events.k8s.io/v1` Event;
    /// `discovery.k8s.io/v1` EndpointSlice; `coordination.k8s.io/v1` Lease;
    /// `apiextensions.k8s.io/v1` CustomResourceDefinition. No objects exist, not
    /// even the `default` Namespace.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner::new()),
        }
    }

    /// Registers every served version of the CustomResourceDefinitions in `yaml`
    /// (multi-document; other documents are ignored) and stores the CRD objects, as
    /// `kubectl apply -f` would. Each version keeps its `openAPIV3Schema`, whose
    /// defaults are applied on every write.
    pub fn register_crds(&self, yaml: &str) -> Result<(), Error> {
        for document in serde_yaml_ng::Deserializer::from_str(yaml) {
            let value: Value = serde::Deserialize::deserialize(document).map_err(Error::Yaml)?;
            if value["kind"] != "CustomResourceDefinition" {
                continue;
            }
            registry::crd_kinds(&value)?;
            let mut crd = value;
            if let Some(meta) = crd["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
            self.apply_object(crd).map_err(Error::Store)?;
        }
        Ok(())
    }

    /// Registers the CRDs of every `.yaml` file in `dir` (see
    /// [`FakeApiServer::register_crds`]).
    pub fn register_crd_dir(&self, dir: &Path) -> Result<(), Error> {
        let io = |source| Error::Io {
            path: dir.display().to_string(),
            source,
        };
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(io)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io)?;
        paths.sort();
        for path in paths {
            if path.extension().is_some_and(|e| e == "yaml") {
                let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                    path: path.display().to_string(),
                    source,
                })?;
                self.register_crds(&text)?;
            }
        }
        Ok(())
    }

    /// Which Kubernetes minor the server answers as (default [`Profile::Current`]).
    pub fn set_profile(&self, profile: Profile) {
        *self
            .inner
            .profile
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = profile;
    }

    fn target(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Result<Target, Status> {
        let found = self
            .inner
            .registry()
            .by_kind(api_version, kind)
            .cloned()
            .ok_or_else(|| unserved(api_version, kind))?;
        Ok(Target {
            namespace: found
                .namespaced
                .then(|| namespace.unwrap_or("default").to_owned()),
            kind: found,
            name: name.map(str::to_owned),
            status: false,
        })
    }

    fn target_of(&self, object: &Value) -> Result<Target, Status> {
        let meta = &object["metadata"];
        self.target(
            object["apiVersion"].as_str().unwrap_or_default(),
            object["kind"].as_str().unwrap_or_default(),
            meta["namespace"].as_str(),
            meta["name"].as_str(),
        )
    }

    /// Sets the time new objects are created at (`metadata.creationTimestamp`, RFC
    /// 3339), as a test replaying objects created in a known order needs;
    /// `None` returns to the wall clock.
    pub fn set_clock(&self, now: Option<&str>) {
        self.inner.store().clock = now.map(str::to_owned);
    }

    /// Creates `object` as a `POST` would (same rules, same watch events).
    pub fn create(&self, object: Value) -> Result<Value, Status> {
        let mut target = self.target_of(&object)?;
        target.name = None;
        api::create(&self.inner, &target, object)
    }

    /// Creates `object`, or replaces its spec and metadata (not its status) whatever
    /// its `resourceVersion`, as `kubectl apply` ends up doing.
    pub fn apply_object(&self, mut object: Value) -> Result<Value, Status> {
        let target = self.target_of(&object)?;
        match api::get(&self.inner, &target) {
            Err(status) if status.code == 404 => self.create(object),
            Err(status) => Err(status),
            Ok(current) => {
                object["metadata"]["resourceVersion"] =
                    current["metadata"]["resourceVersion"].clone();
                api::update(&self.inner, &target, object, &api::WriteOptions::default())
            }
        }
    }

    /// Replaces the status of an object as another controller would (the `status`
    /// of `object`; a precondition on its `resourceVersion` if it has one).
    pub fn write_status(&self, mut object: Value) -> Result<Value, Status> {
        let mut target = self.target_of(&object)?;
        if !target.kind.status {
            return Err(unserved(&target.kind.api_version(), "status"));
        }
        target.status = true;
        if object["metadata"]["resourceVersion"].is_null() {
            let current = api::get(&self.inner, &target)?;
            object["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
        }
        api::update(&self.inner, &target, object, &api::WriteOptions::default())
    }

    /// The object, if it exists.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let target = self.target(api_version, kind, namespace, Some(name)).ok()?;
        api::get(&self.inner, &target).ok()
    }

    /// Deletes the object as a `DELETE` would (finalizers hold it back).
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), Status> {
        let target = self.target(api_version, kind, namespace, Some(name))?;
        api::delete(&self.inner, &target, None).map(|_| ())
    }

    /// Every current object of the kind, in every namespace, sorted by namespace
    /// and name, with `apiVersion` and `kind`.
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let Ok(target) = self.target(api_version, kind, None, None) else {
            return Vec::new();
        };
        let resource = target.kind.qualified();
        self.inner
            .store()
            .objects
            .iter()
            .filter(|(k, _)| k.0 == resource)
            .map(|(_, o)| api::typed(&target.kind, o.clone()))
            .collect()
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> Faults {
        Faults {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Moves the compaction floor to the current revision (see
    /// [`Faults::compact_all`]).
    pub fn compact_all(&self) {
        self.faults().compact_all();
    }

    /// Ends every open watch cleanly (see [`Faults::end_watches`]).
    pub fn end_watches(&self) {
        self.faults().end_watches();
    }

    /// Fails matching requests (see [`Faults::inject`]).
    pub fn inject(&self, fault: Fault) {
        self.faults().inject(fault);
    }

    /// Every request answered so far, oldest first.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the request log.
    pub fn clear_requests(&self) {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The current revision (the `resourceVersion` of the latest write).
    pub fn revision(&self) -> u64 {
        self.inner.store().revision
    }

    /// The compaction floor: reads and watches at older revisions get 410.
    pub fn compacted_revision(&self) -> u64 {
        self.inner.store().floor
    }

    /// The bearer token clients must send.
    pub fn token(&self) -> String {
        self.inner.token.clone()
    }

    /// Serves on a fresh loopback port (`127.0.0.1:0`).
    pub async fn serve(&self) -> std::io::Result<Serving> {
        self.serve_at(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Serves on `addr`: the address of an earlier, stopped [`Serving`] brings the
    /// server back where its clients expect it, with the same state and CA.
    pub async fn serve_at(&self, addr: SocketAddr) -> std::io::Result<Serving> {
        let listener = http::serve(Arc::clone(&self.inner), addr).await?;
        Ok(Serving::new(listener, self.inner.token.clone()))
    }
}
