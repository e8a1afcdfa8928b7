//! The serving snapshot: everything a request reads, compiled off the request path and
//! swapped in with one atomic store.
//!
//! [`Snapshot`] pairs a compiled [`RouteTable`] and the TLS settings of its `HTTPS`
//! listeners with the version and content hash of the config it came from. [`SnapshotCell`] holds the current one behind `arc-swap`:
//! a request costs one atomic load ([`SnapshotCell::load`], or
//! [`SnapshotCell::load_full`] when the snapshot must live across an `.await`, since a
//! load guard must never be held across one). [`SnapshotCell::apply`] compiles and
//! swaps; a refused config leaves the current snapshot serving.
//!
//! This module never touches a socket; it is shared by the workers and the control
//! thread.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwapOption;
use arc_swap::Guard;
use culvert_router::config::ListenerProtocol;
use culvert_router::{DataPlaneConfig, RouteId, RouteTable, RouteTableBuilder};

use crate::Error;
use crate::acme::AcmeCertificates;
use crate::tls::{Termination, TlsSettings, listen_addr};
use culvert_acme::Http01Challenges;

/// One compiled config: what a request reads.
#[derive(Debug)]
pub struct Snapshot {
    /// The compiled route table (shared with the TLS certificate resolvers).
    pub table: Arc<RouteTable>,
    /// Server configs of the addresses that terminate TLS.
    pub tls: TlsSettings,
    /// The config this snapshot was compiled from.
    pub config: Arc<DataPlaneConfig>,
    /// `namespace/name` of each route, by `RouteId`: the metrics and log label.
    route_labels: Vec<Arc<str>>,
    /// `version` of the config.
    pub config_version: u64,
    /// `DataPlaneConfig::content_hash`: what the config says, its version left out
    /// (the document re-serialized, so formatting and field order of the pushed
    /// text do not count).
    pub content_hash: String,
    /// The addresses with `TLS` (passthrough) listeners, where a connection's
    /// ClientHello is read before anything else is decided.
    by_server_name: BTreeSet<SocketAddr>,
    /// The HTTP-01 answers clear-text listeners give, when the process does ACME.
    acme_http01: Option<Http01Challenges>,
}

/// What a connection accepted on an address gets first.
#[derive(Debug, Clone)]
pub(crate) enum Accept {
    /// Clear-text HTTP.
    Http,
    /// A TLS handshake with this termination, then HTTP.
    Terminate(Termination),
    /// Its ClientHello is read first; the name in it decides (see
    /// `pipeline::plan_tls`).
    ByServerName,
}

impl Snapshot {
    /// Compiles `config` into a snapshot. Never touches a socket. A listener with
    /// `tls.acme` is refused: this process has no ACME settings.
    pub fn compile(config: &DataPlaneConfig) -> Result<Self, Error> {
        Self::compile_with(config, None)
    }

    /// Compiles `config`, its ACME listeners served from `acme` (see
    /// [`AcmeCertificates`]).
    pub fn compile_with(
        config: &DataPlaneConfig,
        acme: Option<&AcmeCertificates>,
    ) -> Result<Self, Error> {
        let table = Arc::new(
            RouteTableBuilder::new()
                .build(config)
                .map_err(Error::ConfigRefused)?,
        );
        let tls = TlsSettings::build(config, &table, acme)?;
        crate::tls::upstream::check_backends(config)?;
        let route_labels = (0u32..)
            .map_while(|id| table.route_info(RouteId(id)))
            .map(|info| Arc::from(format!("{}/{}", info.namespace, info.name)))
            .collect();
        let by_server_name = table
            .listeners()
            .iter()
            .filter(|listener| listener.protocol == ListenerProtocol::Tls)
            .map(|listener| listen_addr(listener.address, listener.port))
            .collect();
        Ok(Self {
            table,
            tls,
            config: Arc::new(config.clone()),
            route_labels,
            config_version: config.version,
            content_hash: config.content_hash().map_err(Error::ConfigJson)?,
            by_server_name,
            acme_http01: acme.map(|acme| acme.http01().clone()),
        })
    }

    /// The lower-case hostnames of the config's ACME listeners.
    pub fn acme_names(&self) -> BTreeSet<String> {
        self.config
            .listeners
            .iter()
            .filter_map(|listener| listener.acme_name())
            .map(str::to_ascii_lowercase)
            .collect()
    }

    /// The HTTP-01 answer for a request path, if the process does ACME and the path
    /// is `/.well-known/acme-challenge/<token>` for a token being validated.
    pub(crate) fn acme_http01_answer(&self, path: &str) -> Option<String> {
        // The store's lock is taken only for a path under the challenge prefix, never
        // for ordinary requests.
        self.acme_http01.as_ref()?.response_for_path(path)
    }

    /// Where tunnel requests enter: the listening address of the first `HTTP`
    /// listener, else of the first `HTTPS` one. A tunnel request is routed exactly as
    /// a request arriving there (same listeners by hostname, same routes).
    pub fn tunnel_entry(&self) -> Option<SocketAddr> {
        let listeners = self.table.listeners();
        [ListenerProtocol::Http, ListenerProtocol::Https]
            .iter()
            .find_map(|protocol| listeners.iter().find(|l| l.protocol == *protocol))
            .map(|listener| listen_addr(listener.address, listener.port))
    }

    /// The metrics and access-log label of a route: `namespace/name`.
    pub fn route_label(&self, id: RouteId) -> Option<Arc<str>> {
        self.route_labels.get(id.0 as usize).cloned()
    }

    /// The addresses to listen on: each listener's `(address or 0.0.0.0, port)`,
    /// without duplicates.
    pub fn listen_addrs(&self) -> BTreeSet<SocketAddr> {
        self.table
            .listeners()
            .iter()
            .map(|listener| listen_addr(listener.address, listener.port))
            .collect()
    }

    /// What a connection accepted through the socket bound to `bound` gets first.
    pub(crate) fn accept(&self, bound: SocketAddr) -> Accept {
        if self.by_server_name.contains(&bound) {
            return Accept::ByServerName;
        }
        match self.tls.server_config(bound) {
            Some(termination) => Accept::Terminate(termination.clone()),
            None => Accept::Http,
        }
    }
}

/// What [`SnapshotCell::apply`] did.
#[derive(Debug, Clone)]
pub enum Applied {
    /// The config was compiled and now serves.
    Swapped(Arc<Snapshot>),
    /// The serving config already has this version and content; nothing changed.
    AlreadyServing(Arc<Snapshot>),
}

impl Applied {
    /// The snapshot serving now.
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        match self {
            Self::Swapped(snapshot) | Self::AlreadyServing(snapshot) => snapshot,
        }
    }
}

/// The current snapshot, if any, shared by every worker and the config API thread.
#[derive(Debug, Default)]
pub struct SnapshotCell {
    current: ArcSwapOption<Snapshot>,
    /// Serializes writers so the version check and the store are one step. Writers
    /// are off the request path; readers never take it.
    writer: Mutex<()>,
    /// Where ACME listeners' certificates come from, when the process does ACME.
    acme: Option<Arc<AcmeCertificates>>,
}

impl SnapshotCell {
    /// An empty cell: nothing is served until a config is applied.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cell whose snapshots serve ACME listeners from `acme`.
    pub fn with_acme(acme: Arc<AcmeCertificates>) -> Self {
        Self {
            acme: Some(acme),
            ..Self::default()
        }
    }

    /// The current snapshot. Cheap; do not hold the guard across an `.await`.
    pub fn load(&self) -> Guard<Option<Arc<Snapshot>>> {
        self.current.load()
    }

    /// The current snapshot as an owned `Arc`, for use across `.await`s.
    pub fn load_full(&self) -> Option<Arc<Snapshot>> {
        self.current.load_full()
    }

    /// Compiles `config` and swaps it in, unless it is older than the serving one
    /// (`StaleVersion`), has its version with other content (`VersionConflict`),
    /// has its version and content (nothing to do: `AlreadyServing`), or is
    /// refused. On error the current snapshot keeps serving.
    pub fn apply(&self, config: &DataPlaneConfig) -> Result<Applied, Error> {
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(current) = self.current.load_full() {
            if config.version < current.config_version {
                return Err(Error::StaleVersion {
                    offered: config.version,
                    current: current.config_version,
                });
            }
            if config.version == current.config_version {
                let offered = config.content_hash().map_err(Error::ConfigJson)?;
                if offered == current.content_hash {
                    return Ok(Applied::AlreadyServing(current));
                }
                return Err(Error::VersionConflict {
                    version: config.version,
                    serving: current.content_hash.clone(),
                    offered,
                });
            }
        }
        let snapshot = Arc::new(Snapshot::compile_with(config, self.acme.as_deref())?);
        self.current.store(Some(Arc::clone(&snapshot)));
        Ok(Applied::Swapped(snapshot))
    }

    /// Recompiles the serving config when a certificate file it names has changed,
    /// so renewed certificates are served without a push. Returns whether it swapped;
    /// a file that no longer loads is the error, and the current snapshot stays.
    pub fn reload_changed_files(&self) -> Result<bool, Error> {
        let _writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(current) = self.current.load_full() else {
            return Ok(false);
        };
        if !current.tls.store().files_changed() {
            return Ok(false);
        }
        let snapshot = Arc::new(Snapshot::compile_with(
            &current.config,
            self.acme.as_deref(),
        )?);
        self.current.store(Some(snapshot));
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
