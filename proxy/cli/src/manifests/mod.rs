//! Gateway API manifests on disk (a file or a directory of YAML/JSON), translated
//! into one `DataPlaneConfig` by control-lite, and re-translated when a file changes:
//! `culvert serve --config DIR`'s [`culvert_proxy::ConfigSource`]. The data plane polls
//! it and applies what it loads; this module never touches a snapshot.
//!
//! A load with any broken document is refused as a whole: serving the objects that
//! did parse would silently drop the broken ones' routes, so the running config
//! stays and the problems are reported. Every data plane the translation produces
//! (shared per GatewayClass, dedicated per Gateway) is served by this one process.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use culvert_control_lite::store::Store;
use culvert_control_lite::translate::{FixedAddresses, Options, Translation, translate};
use culvert_proxy::ConfigSource;
use culvert_router::DataPlaneConfig;

/// Why manifests could not become a config.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SourceError {
    /// Documents failed to load or parse; each entry names file#document and why.
    #[error("{} broken document(s): {}", .0.len(), .0.join("; "))]
    Broken(Vec<String>),
    /// Nothing in the manifests is served by this controller.
    #[error("no Gateway of a GatewayClass with controllerName {0:?} was accepted")]
    NothingToServe(String),
}

/// Manifests on disk and the fingerprint of their last load.
#[derive(Debug, Clone)]
pub(crate) struct ManifestSource {
    path: PathBuf,
    controller_name: String,
    address: String,
    fingerprint: Vec<(PathBuf, Option<SystemTime>, u64)>,
}

impl ManifestSource {
    /// Manifests at `path`, for GatewayClasses with `controller_name`, whose Gateways
    /// get `address` (the host's address on bare metal; `0.0.0.0` binds every one).
    pub(crate) fn new(path: impl Into<PathBuf>, controller_name: &str, address: &str) -> Self {
        Self {
            path: path.into(),
            controller_name: controller_name.to_owned(),
            address: address.to_owned(),
            fingerprint: Vec::new(),
        }
    }

    /// Loads and translates the manifests now. The version of the result is 0; the
    /// caller assigns one. Also returns the messages of objects the translation did
    /// not accept (they are left out of the config, as a controller would).
    pub(crate) fn load(&mut self) -> Result<(DataPlaneConfig, Vec<String>), SourceError> {
        self.fingerprint = fingerprint(&self.path);
        let (store, problems) = Store::load(&self.path);
        if !problems.is_empty() {
            return Err(SourceError::Broken(problems));
        }
        let options = Options {
            controller_name: self.controller_name.clone(),
            privileged_namespace_prefixes: Vec::new(),
            addresses: Box::new(FixedAddresses(vec![self.address.clone()])),
            claims: Box::new(culvert_control_lite::translate::NoClaimChecks),
        };
        let translation = translate(&store, &options);
        let refusals = refusals(&translation);
        let config = translation
            .merged_config()
            .ok_or_else(|| SourceError::NothingToServe(self.controller_name.clone()))?;
        Ok((config, refusals))
    }

    /// Whether a file under the path was added, removed or changed since the last
    /// [`ManifestSource::load`].
    pub(crate) fn changed(&self) -> bool {
        fingerprint(&self.path) != self.fingerprint
    }
}

impl ConfigSource for ManifestSource {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn load(&mut self) -> Result<(DataPlaneConfig, Vec<String>), Box<dyn Error + Send + Sync>> {
        Ok(ManifestSource::load(self)?)
    }

    fn changed(&self) -> bool {
        ManifestSource::changed(self)
    }
}

/// One line per Gateway, listener or route parent that was not accepted.
fn refusals(translation: &Translation) -> Vec<String> {
    let mut out = Vec::new();
    let refused = |conditions: &[culvert_control_lite::model::Condition]| {
        conditions
            .iter()
            .find(|c| (c.kind == "Accepted" || c.kind == "ResolvedRefs") && !c.is_true())
            .map(|c| format!("{} ({})", c.reason, c.message))
    };
    for ((namespace, name), gateway) in &translation.gateways {
        if let Some(why) = refused(&gateway.conditions) {
            out.push(format!("Gateway {namespace}/{name}: {why}"));
        }
        for listener in &gateway.listeners {
            if let Some(why) = refused(&listener.conditions) {
                out.push(format!(
                    "Gateway {namespace}/{name} listener {}: {why}",
                    listener.name
                ));
            }
        }
    }
    for (key, status) in &translation.routes {
        for parent in &status.parents {
            if let Some(why) = refused(&parent.conditions) {
                out.push(format!("{key} -> {}: {why}", parent.parent_ref.name));
            }
        }
    }
    out
}

/// Path, modification time and length of every file under `path` (walked the way
/// the loader walks it: recursively, skipping names that start with `.`, at most
/// [`MAX_DEPTH`] levels), sorted.
fn fingerprint(path: &Path) -> Vec<(PathBuf, Option<SystemTime>, u64)> {
    let mut files = Vec::new();
    walk(path, 0, &mut files);
    files.sort();
    files
}

/// How deep [`fingerprint`] follows directories (symbolic links can make loops).
const MAX_DEPTH: usize = 16;

fn walk(path: &Path, depth: usize, files: &mut Vec<(PathBuf, Option<SystemTime>, u64)>) {
    let meta = std::fs::metadata(path).ok();
    if meta.as_ref().is_some_and(std::fs::Metadata::is_dir) {
        if depth >= MAX_DEPTH {
            return;
        }
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            if !entry.file_name().to_string_lossy().starts_with('.') {
                walk(&entry.path(), depth + 1, files);
            }
        }
        return;
    }
    let modified = meta.as_ref().and_then(|m| m.modified().ok());
    let len = meta.map_or(0, |m| m.len());
    files.push((path.to_owned(), modified, len));
}

#[cfg(test)]
mod tests;
