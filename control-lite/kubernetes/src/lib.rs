//! Culvert's Kubernetes source: watches the Gateway API objects (and the Services,
//! EndpointSlices, TLS Secrets, Namespaces and `culvert.dev` kinds they refer to),
//! feeds them to control-lite's pure translation, publishes the resulting
//! `DataPlaneConfig`, and writes status and events back while it holds the Lease.
//!
//! The flow: [`watch`] tasks (kube-runtime watchers) → [`mirror::Mirror`] (a
//! control-lite `Store` plus the stored status of status-bearing objects) →
//! translation in [`source`]'s sync loop → the published config, and
//! [`status`] (pure merge) → [`writer`] (optimistic-concurrency writes) with
//! [`events`]; [`leader`] decides who writes. Start at [`KubernetesSource::start`].
//!
//! Translation stays in control-lite and stays pure: this crate owns every request
//! to the API server and nothing about what the objects mean.
#![forbid(unsafe_code)]

pub mod addresses;
pub mod client;
mod error;
pub mod events;
pub mod kinds;
pub mod leader;
pub mod mirror;
pub mod source;
pub mod status;
pub mod watch;
pub mod writer;

pub use error::Error;
pub use leader::LeaseConfig;
pub use source::{
    EditTranslation, KubernetesSource, OnTranslation, SharedClaims, SourceConfig, StatusOverlay,
    SyncStats, TranslationHook,
};
