//! Culvert's data plane.
//!
//! This crate owns everything that touches a socket on the request path:
//!
//! - [`Server`] (`server/`): starts a whole data plane from a [`ServeConfig`] and
//!   stops it. Start reading here.
//! - [`Snapshot`] and [`SnapshotCell`] (`snapshot/`): the compiled
//!   `culvert_router::RouteTable` plus config version and content hash, swapped in
//!   with one `arc-swap` store; a refused config leaves the old one serving.
//! - `worker/`: thread-per-core workers, each a tokio current-thread runtime with
//!   its own SO_REUSEPORT listeners and upstream keep-alive pools; they serve
//!   HTTP/1.1, HTTP/2, h2c, gRPC, WebSocket and TLS, forward with streamed bodies,
//!   and reconcile their listeners when a snapshot changes the set.
//! - `pipeline/`: what to do with a request, decided without IO (route, answer
//!   locally or rewrite for the backend, attempts and retries, failures).
//! - `config_api/`: the config API (`PUT`/`GET /config`, `/healthz`, `/readyz`) on its
//!   own thread, with an optional bearer token; it also follows a [`ConfigSource`]
//!   (`source/`).
//!
//! Routing decisions are never made here: every request calls
//! `culvert_router::RouteTable::route` (through `pipeline::plan`) on the snapshot it
//! loaded once.
//!
//! Everything else is the caller's: the `culvert` binary (crate `culvert`, `proxy/cli/`)
//! parses the command line, translates Gateway API manifests and watches Kubernetes, and
//! hands this crate finished configs ([`ServeConfig::initial`], a [`ConfigSource`],
//! [`ServeConfig::published`]).
//!
//! No `unsafe` but one audited socket option (`worker::runtime::listen`), which socket2 does
//! not cover.
#![deny(unsafe_code)]

mod access_log;
mod acme;
mod config_api;
mod error;
mod fast_map;
mod limits;
mod metrics;
mod panics;
mod pipeline;
mod server;
mod snapshot;
mod source;
mod tls;
mod worker;

pub use access_log::AccessLog;
pub use acme::{AcmeCertificates, AcmeClock, AcmeSettings, ChallengeKind};
pub use config_api::{ConfigApiTlsFiles, MAX_CONFIG_BYTES};
pub(crate) use error::BoxError;
pub use error::{Error, TlsError};
pub use limits::ClientLimits;
pub use panics::install_panic_hook;
pub use server::{ServeConfig, Server};
pub use snapshot::{Applied, Snapshot, SnapshotCell};
pub use source::ConfigSource;
pub use tls::{CertificateStore, ClientAuth, ClientIdentity, Termination, TlsSettings};

/// The one TLS crypto provider Culvert uses, everywhere: aws-lc-rs (`culvert-tls`).
pub use culvert_tls::crypto_provider;
