//! Copies of worker counters that can cross threads and be added up.
//!
//! Owns [`StatsSnapshot`]: plain integers in ordered maps, `Send + Sync + Clone`, so a
//! worker can hand one to the config API thread and the config API thread can
//! [`merge`](StatsSnapshot::merge) them. Never refers back to a worker's cells and
//! never records anything itself. Ordered maps keep the exposition stable.

use std::collections::BTreeMap;

use super::{DURATION_BUCKETS, Refusal, STATUS_CLASSES, TlsRouteEnd};
use crate::pipeline::BackendFailure;

/// Every counter of one worker (from [`WorkerStats::snapshot`]) or the sum of several
/// (after [`merge`](Self::merge)). Gauges add up too: the merged
/// `culvert_requests_in_flight` and `culvert_open_connections` are totals over the
/// workers merged in.
///
/// [`WorkerStats::snapshot`]: super::WorkerStats::snapshot
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatsSnapshot {
    pub(super) in_flight: u64,
    pub(super) routes: BTreeMap<String, RouteSnapshot>,
    pub(super) listeners: BTreeMap<String, ListenerSnapshot>,
    /// Refusals indexed like `Refusal::ALL`.
    pub(super) refusals: [u64; Refusal::ALL.len()],
}

impl StatsSnapshot {
    /// An empty snapshot, the starting point for merging the workers' ones.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds `other` into `self`: counters and gauges are summed, series only one side
    /// has are kept. The result may hold more distinct routes than one worker's cap
    /// (at most the cap times the number of workers).
    pub(crate) fn merge(&mut self, other: &StatsSnapshot) {
        self.in_flight = self.in_flight.saturating_add(other.in_flight);
        for (name, route) in &other.routes {
            match self.routes.get_mut(name) {
                Some(mine) => mine.merge(route),
                None => {
                    self.routes.insert(name.clone(), route.clone());
                }
            }
        }
        for (label, listener) in &other.listeners {
            let mine = self.listeners.entry(label.clone()).or_default();
            mine.open = mine.open.saturating_add(listener.open);
            mine.total = mine.total.saturating_add(listener.total);
        }
        add_each(&mut self.refusals, &other.refusals);
    }

    /// Requests in flight when the snapshot was taken (summed over merged workers).
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight
    }
}

/// One route's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct RouteSnapshot {
    /// Answers by status class, indexed like `STATUS_CLASSES`.
    pub(super) responses: [u64; STATUS_CLASSES.len()],
    pub(super) duration: HistogramSnapshot,
    /// Failures indexed like `BackendFailure::ALL`.
    pub(super) backend_failures: [u64; BackendFailure::ALL.len()],
    pub(super) request_bytes: u64,
    pub(super) response_bytes: u64,
    /// TLSRoute connections indexed like `TlsRouteEnd::ALL`.
    pub(super) tls_route: [u64; TlsRouteEnd::ALL.len()],
}

impl RouteSnapshot {
    fn merge(&mut self, other: &RouteSnapshot) {
        add_each(&mut self.responses, &other.responses);
        add_each(&mut self.duration.buckets, &other.duration.buckets);
        self.duration.sum_nanos = self
            .duration
            .sum_nanos
            .saturating_add(other.duration.sum_nanos);
        add_each(&mut self.backend_failures, &other.backend_failures);
        self.request_bytes = self.request_bytes.saturating_add(other.request_bytes);
        self.response_bytes = self.response_bytes.saturating_add(other.response_bytes);
        add_each(&mut self.tls_route, &other.tls_route);
    }
}

/// A duration histogram with the fixed `DURATION_BOUNDS_NANOS` buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct HistogramSnapshot {
    /// Non-cumulative counts per bucket; the last one is `+Inf`.
    pub(super) buckets: [u64; DURATION_BUCKETS],
    /// Sum of all observations in nanoseconds.
    pub(super) sum_nanos: u64,
}

impl HistogramSnapshot {
    /// Number of observations.
    pub(super) fn count(&self) -> u64 {
        self.buckets
            .iter()
            .fold(0u64, |total, &n| total.saturating_add(n))
    }
}

/// One listener's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ListenerSnapshot {
    /// Connections open when the snapshot was taken.
    pub(super) open: u64,
    /// Connections accepted since start.
    pub(super) total: u64,
}

fn add_each<const N: usize>(into: &mut [u64; N], from: &[u64; N]) {
    for (mine, theirs) in into.iter_mut().zip(from) {
        *mine = mine.saturating_add(*theirs);
    }
}
