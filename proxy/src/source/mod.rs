//! Where a data plane's config comes from besides `PUT /config`: today Gateway API
//! manifests on disk ([`ManifestSource`]), translated by the embedded control plane.
//! The Kubernetes watch is the next source and plugs in the same way: produce a
//! `DataPlaneConfig`, and the config API thread applies it like a push.
//!
//! Sources never touch the snapshot themselves; the config API thread polls them and
//! applies what they produce, so there is one writer path.

mod manifests;

pub use manifests::{ManifestSource, SourceError};

#[cfg(test)]
mod tests;
