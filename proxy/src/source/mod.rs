//! Where a data plane's config comes from besides `PUT /config`: a [`ConfigSource`] the
//! config API thread follows (the `culvert` binary's Gateway API manifests on disk,
//! translated by its embedded control plane), or configs an embedded control plane
//! publishes on a watch channel (`ServeConfig::published`, the Kubernetes source).
//!
//! Sources never touch the snapshot themselves; the config API thread polls them and
//! applies what they produce, so there is one writer path. The data plane knows no
//! manifest or translation: a source hands it a finished `DataPlaneConfig`.

use std::error::Error;
use std::fmt::Debug;

use culvert_router::DataPlaneConfig;

/// A config the plane loads before anything is bound and re-loads whenever
/// [`ConfigSource::changed`] says so, on the config API thread (polled every second).
pub trait ConfigSource: Debug + Send {
    /// What the source reads (a path), as messages about it name it.
    fn describe(&self) -> String;

    /// Loads the config now. Its version is ignored: the plane gives it the next one.
    /// Also returns one message per object the source left out of the config (not
    /// accepted, but not reason to refuse the rest). An error refuses the whole load:
    /// at start-up the plane does not start, later the running config stays.
    fn load(&mut self) -> Result<(DataPlaneConfig, Vec<String>), Box<dyn Error + Send + Sync>>;

    /// Whether what the source reads changed since the last [`ConfigSource::load`].
    fn changed(&self) -> bool;
}
