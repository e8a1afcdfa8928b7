//! The config API thread's own counters.
//!
//! Owns [`ConfigApiStats`]: config version, swaps, rejections and worker count. They
//! change a few times a minute at most, off the request path, so relaxed atomics are
//! fine and let the struct sit in an `Arc` shared by whoever starts the workers and
//! the config API thread. Never recorded into by a worker.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of the config API thread. All updates are `Relaxed`: each number stands on
/// its own and no other memory is published through them.
#[derive(Debug, Default)]
pub(crate) struct ConfigApiStats {
    config_version: AtomicU64,
    config_swaps: AtomicU64,
    config_rejected: AtomicU64,
    workers: AtomicU64,
}

/// The values of a [`ConfigApiStats`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ConfigApiValues {
    pub(super) config_version: u64,
    pub(super) config_swaps: u64,
    pub(super) config_rejected: u64,
    pub(super) workers: u64,
    pub(super) panics: u64,
}

impl ConfigApiStats {
    /// All zero: no config served yet (`culvert_config_version` reads 0 until then).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A config with `version` was swapped in: sets `culvert_config_version` and
    /// counts `culvert_config_swaps_total`.
    pub(crate) fn config_swapped(&self, version: u64) {
        self.config_version.store(version, Ordering::Relaxed);
        self.config_swaps.fetch_add(1, Ordering::Relaxed);
    }

    /// A pushed config was refused (unparsable, invalid or stale): counts
    /// `culvert_config_rejected_total`. The serving version does not change.
    pub(crate) fn config_rejected(&self) {
        self.config_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Sets `culvert_workers`, the number of worker threads running.
    pub(crate) fn set_workers(&self, workers: usize) {
        let workers = u64::try_from(workers).unwrap_or(u64::MAX);
        self.workers.store(workers, Ordering::Relaxed);
    }

    pub(super) fn values(&self) -> ConfigApiValues {
        ConfigApiValues {
            config_version: self.config_version.load(Ordering::Relaxed),
            config_swaps: self.config_swaps.load(Ordering::Relaxed),
            config_rejected: self.config_rejected.load(Ordering::Relaxed),
            workers: self.workers.load(Ordering::Relaxed),
            panics: crate::panics::count(),
        }
    }
}
