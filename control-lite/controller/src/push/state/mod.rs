//! What to ask each pod of one plane next, as a pure state machine: no sockets,
//! no runtime, no clock (every input carries `now`), randomness from a seed.
//! The driver (`push::driver`) carries the requests out and feeds the answers
//! back. Start at [`PlaneState`].
//!
//! The loop, per plane:
//!
//! - the caller sets the desired content ([`PlaneState::set_desired`], by its
//!   `DataPlaneConfig::content_hash`) and the pod addresses
//!   ([`PlaneState::set_pods`]);
//! - [`PlaneState::poll_request`] hands out, one at a time, each pod's request that
//!   is due: `Get` while what the pod serves is unknown (a new pod, or one not
//!   heard from since a transport failure), `Put { version }` once it is known to
//!   serve other content, nothing while it serves the desired hash (a pod already
//!   current is never pushed) but a `Get` every [`Timing::recheck`], so a pod
//!   restarted empty gets its config back within that interval ("replay");
//! - [`PlaneState::handle_response`] takes each answer; [`PlaneState::poll_timeout`]
//!   says when to poll again; [`PlaneState::summary`] is the status view.
//!
//! Versions: one per plane, raised only when the content changes, and never below
//! what a pod reports, so after a controller restart the version continues above
//! the highest version seen (a pod reporting the desired content at version `v`
//! lifts it to `v`, any other content at `v` to `v + 1`) and a pod is never sent a
//! version older than the one it serves. A 409 lifts the version above the
//! pod's `currentVersion` and the push is retried at once (the second 409 in a row
//! backs off). Failures back off exponentially per pod ([`Timing`]) with jitter
//! from the seed, and reset once the pod serves the desired hash.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Failure;

/// The clocks of the push loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The first retry delay after a failure; doubled per failure in a row.
    pub backoff_min: Duration,
    /// The longest retry delay.
    pub backoff_max: Duration,
    /// How often a pod serving the desired hash is asked again (`GET`), so one
    /// restarted empty is pushed again.
    pub recheck: Duration,
    /// How long a pod fails before its failure is [`PodFailure::sustained`].
    pub sustained_after: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            backoff_min: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            recheck: Duration::from_secs(10),
            sustained_after: Duration::from_secs(60),
        }
    }
}

/// What a pod says it serves (`GET /config`, or the answer to a `PUT`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reported {
    /// The version it serves; `None` before its first config.
    pub version: Option<u64>,
    /// The content hash of what it serves; `None` before its first config, or
    /// unknown (after a 409, which names only the version).
    pub hash: Option<String>,
    /// With a tunnel, how many of its tunnel connections are registered; `None`
    /// for a pod serving no tunnel (or not saying).
    pub tunnel_registered: Option<u32>,
}

impl Reported {
    /// A pod serving no config yet.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A pod serving `version` with content `hash`.
    pub fn serving(version: u64, hash: impl Into<String>) -> Self {
        Self {
            version: Some(version),
            hash: Some(hash.into()),
            tunnel_registered: None,
        }
    }

    /// The same, serving a tunnel with `registered` connections registered.
    pub fn with_tunnel(self, registered: u32) -> Self {
        Self {
            tunnel_registered: Some(registered),
            ..self
        }
    }
}

/// One request to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `GET /config`: learn what the pod serves.
    Get,
    /// `PUT /config` with the desired content under this version.
    Put {
        /// The version the document carries.
        version: u64,
    },
}

/// A request [`PlaneState::poll_request`] hands out: the pod and what to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The pod's config API address.
    pub pod: SocketAddr,
    /// What to ask.
    pub action: Action,
}

/// The status view of one plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneSummary {
    /// The version the desired content is pushed under.
    pub version: u64,
    /// The desired content hash.
    pub hash: String,
    /// How many pods the plane has.
    pub pods: usize,
    /// How many of them report the desired hash.
    pub current: usize,
    /// How many of them last reported serving some config (the desired one or an
    /// older one a push is about to replace).
    pub serving: usize,
    /// How many of them last said they serve a tunnel.
    pub tunnel_pods: usize,
    /// How many serve some config and, with a tunnel, have a registered
    /// connection: the pods clients can reach.
    pub reachable: usize,
    /// The pods whose last request failed, by address.
    pub failing: Vec<PodFailure>,
    /// Whether some pod has failed for longer than [`Timing::sustained_after`]:
    /// the moment to report the push as failed, without flapping on one error.
    pub sustained: bool,
}

impl PlaneSummary {
    /// Whether every pod (and at least one) serves the desired content.
    pub fn all_current(&self) -> bool {
        self.pods > 0 && self.current == self.pods
    }
}

/// One pod whose requests are failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFailure {
    /// The pod's config API address.
    pub pod: SocketAddr,
    /// The last failure.
    pub error: Failure,
    /// When the failures in a row began.
    pub since: Instant,
    /// How many failures in a row.
    pub attempts: u32,
    /// Whether they have lasted [`Timing::sustained_after`].
    pub sustained: bool,
}

/// What is known about a pod's config.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Observed {
    /// Nothing yet, or not since a transport failure.
    Unknown,
    /// What it reported, and when.
    Reported { reported: Reported, at: Instant },
}

/// A request out to a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
enum InFlight {
    Get,
    Put { hash: String },
}

/// One pod's state.
#[derive(Debug, Clone)]
struct Pod {
    observed: Observed,
    in_flight: Option<InFlight>,
    /// No request before this (backoff; the time the pod was added otherwise).
    retry_at: Instant,
    /// Failures in a row, 409s that lifted the version excepted.
    failures: u32,
    /// When those failures began.
    failing_since: Option<Instant>,
    last_error: Option<Failure>,
    /// 409s in a row: the first is retried at once, later ones back off.
    conflicts: u32,
}

impl Pod {
    fn new(now: Instant) -> Self {
        Self {
            observed: Observed::Unknown,
            in_flight: None,
            retry_at: now,
            failures: 0,
            failing_since: None,
            last_error: None,
            conflicts: 0,
        }
    }

    fn is_current(&self, hash: &str) -> bool {
        matches!(&self.observed, Observed::Reported { reported, .. } if reported.hash.as_deref() == Some(hash))
    }

    fn is_serving(&self) -> bool {
        matches!(&self.observed, Observed::Reported { reported, .. } if reported.hash.is_some())
    }

    /// Whether it last said it serves a tunnel.
    fn has_tunnel(&self) -> bool {
        matches!(&self.observed, Observed::Reported { reported, .. } if reported.tunnel_registered.is_some())
    }

    /// Whether it serves a config and, if it serves a tunnel, has a registered
    /// connection: whether clients can reach what it serves.
    fn is_reachable(&self) -> bool {
        matches!(&self.observed, Observed::Reported { reported, .. }
            if reported.hash.is_some() && reported.tunnel_registered.is_none_or(|n| n > 0))
    }

    fn is_sustained(&self, now: Instant, timing: &Timing) -> bool {
        self.failing_since
            .is_some_and(|since| now.saturating_duration_since(since) >= timing.sustained_after)
    }
}

/// The push state of one plane: the desired content, its version, every pod.
#[derive(Debug, Clone)]
pub struct PlaneState {
    hash: String,
    version: u64,
    pods: BTreeMap<SocketAddr, Pod>,
    timing: Timing,
    rng: SplitMix64,
}

impl PlaneState {
    /// A plane whose desired content hashes to `hash`, with no pods yet. Its
    /// version starts at 1 and rises to what the pods report.
    pub fn new(hash: impl Into<String>, timing: Timing, seed: u64) -> Self {
        Self {
            hash: hash.into(),
            version: 1,
            pods: BTreeMap::new(),
            timing,
            rng: SplitMix64(seed),
        }
    }

    /// The version the desired content is pushed under.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The desired content hash.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Sets the desired content; other content than before takes the next
    /// version (once, whatever the pods), the same content changes nothing.
    pub fn set_desired(&mut self, hash: &str) {
        if hash != self.hash {
            self.hash = hash.to_owned();
            self.version = self.version.saturating_add(1);
        }
    }

    /// Sets the plane's pods: new addresses start unknown (asked at once), absent
    /// ones are forgotten with everything known about them, an answer still on its
    /// way included.
    pub fn set_pods(&mut self, pods: impl IntoIterator<Item = SocketAddr>, now: Instant) {
        let mut kept = BTreeMap::new();
        for addr in pods {
            let pod = self.pods.remove(&addr).unwrap_or_else(|| Pod::new(now));
            kept.insert(addr, pod);
        }
        self.pods = kept;
    }

    /// The pods, in address order.
    pub fn pods(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.pods.keys().copied()
    }

    /// The request due for `pod` at `now`, if any: none while one is out, while
    /// backing off, or while the pod serves the desired hash and is not due for a
    /// re-check.
    pub fn next_action(&self, pod: SocketAddr, now: Instant) -> Option<Action> {
        let state = self.pods.get(&pod)?;
        if state.in_flight.is_some() || self.due(state)? > now {
            return None;
        }
        Some(match &state.observed {
            Observed::Unknown => Action::Get,
            Observed::Reported { .. } if state.is_current(&self.hash) => Action::Get,
            Observed::Reported { .. } => Action::Put {
                version: self.version,
            },
        })
    }

    /// The next due request, marked as out until its answer is handled; `None`
    /// when nothing is due at `now`.
    pub fn poll_request(&mut self, now: Instant) -> Option<Request> {
        let (pod, action) = self
            .pods
            .keys()
            .find_map(|&pod| Some((pod, self.next_action(pod, now)?)))?;
        let in_flight = match action {
            Action::Get => InFlight::Get,
            Action::Put { .. } => InFlight::Put {
                hash: self.hash.clone(),
            },
        };
        if let Some(state) = self.pods.get_mut(&pod) {
            state.in_flight = Some(in_flight);
        }
        Some(Request { pod, action })
    }

    /// Takes the answer to the request out to `pod`: what it reports (a `GET`, or a
    /// `PUT` taken), or why the request failed. An answer from a pod no longer in
    /// the plane, or with no request out, is ignored.
    pub fn handle_response(
        &mut self,
        pod: SocketAddr,
        result: Result<Reported, Failure>,
        now: Instant,
    ) {
        let Some(state) = self.pods.get(&pod) else {
            return;
        };
        let Some(in_flight) = state.in_flight.clone() else {
            return;
        };
        match result {
            Ok(reported) => self.handle_reported(pod, in_flight, reported, now),
            Err(Failure::Conflict { current_version }) => {
                self.handle_conflict(pod, current_version, now);
            }
            Err(failure) => self.fail(pod, failure, now),
        }
    }

    fn handle_reported(
        &mut self,
        pod: SocketAddr,
        in_flight: InFlight,
        reported: Reported,
        now: Instant,
    ) {
        self.observe_version(&reported);
        let mismatch = match (&in_flight, &reported.hash) {
            (InFlight::Put { hash: sent }, Some(got)) if got != sent => {
                Some(Failure::HashMismatch {
                    sent: sent.clone(),
                    reported: got.clone(),
                })
            }
            _ => None,
        };
        let current = reported.hash.as_deref() == Some(self.hash.as_str());
        let Some(state) = self.pods.get_mut(&pod) else {
            return;
        };
        state.in_flight = None;
        state.observed = Observed::Reported { reported, at: now };
        state.conflicts = 0;
        if current && mismatch.is_none() {
            state.failures = 0;
            state.failing_since = None;
            state.last_error = None;
            state.retry_at = now;
        }
        if let Some(failure) = mismatch {
            self.fail(pod, failure, now);
        }
    }

    /// A 409: the version is lifted above the pod's, and the push retried at once
    /// unless the previous answer was a 409 too, or the version could not rise.
    fn handle_conflict(&mut self, pod: SocketAddr, current_version: Option<u64>, now: Instant) {
        if let Some(current) = current_version {
            self.version = self.version.max(current.saturating_add(1));
        }
        // Above the pod's version now, unless that was `u64::MAX`.
        let lifted = current_version.is_some_and(|current| current < self.version);
        let Some(state) = self.pods.get_mut(&pod) else {
            return;
        };
        if let Some(current) = current_version {
            state.observed = Observed::Reported {
                reported: Reported {
                    version: Some(current),
                    hash: None,
                    tunnel_registered: None,
                },
                at: now,
            };
        }
        let first = state.conflicts == 0;
        state.conflicts = state.conflicts.saturating_add(1);
        if lifted && first {
            state.in_flight = None;
            state.retry_at = now;
        } else {
            self.fail(pod, Failure::Conflict { current_version }, now);
        }
    }

    /// Counts a failure and backs off.
    fn fail(&mut self, pod: SocketAddr, failure: Failure, now: Instant) {
        let Some(state) = self.pods.get_mut(&pod) else {
            return;
        };
        if !matches!(failure, Failure::Conflict { .. }) {
            state.conflicts = 0;
        }
        if failure.leaves_pod_unknown() {
            state.observed = Observed::Unknown;
        }
        state.in_flight = None;
        state.failures = state.failures.saturating_add(1);
        state.failing_since.get_or_insert(now);
        state.last_error = Some(failure);
        let failures = state.failures;
        let delay = self.backoff(failures);
        if let Some(state) = self.pods.get_mut(&pod) {
            state.retry_at = now + delay;
        }
    }

    /// The delay after `failures` failures in a row: `backoff_min` doubled per
    /// failure after the first, at most `backoff_max`, then shortened by up to a
    /// quarter at random so pods that failed together do not retry together.
    fn backoff(&mut self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(32);
        let full = self
            .timing
            .backoff_min
            .saturating_mul(1 << doublings)
            .min(self.timing.backoff_max);
        let jitter = full.as_nanos() / 4 * u128::from(self.rng.next() % 1024) / 1024;
        full.saturating_sub(Duration::from_nanos(
            u64::try_from(jitter).unwrap_or(u64::MAX),
        ))
    }

    /// Keeps the version at or above what a pod reports: its version for the
    /// desired content, one more for any other.
    fn observe_version(&mut self, reported: &Reported) {
        let Some(version) = reported.version else {
            return;
        };
        let floor = if reported.hash.as_deref() == Some(self.hash.as_str()) {
            version
        } else {
            version.saturating_add(1)
        };
        self.version = self.version.max(floor);
    }

    /// When a pod's next request becomes due, `None` while one is out.
    fn due(&self, pod: &Pod) -> Option<Instant> {
        if pod.in_flight.is_some() {
            return None;
        }
        Some(match &pod.observed {
            Observed::Reported { at, .. } if pod.is_current(&self.hash) => {
                pod.retry_at.max(*at + self.timing.recheck)
            }
            _ => pod.retry_at,
        })
    }

    /// When to poll again after `now`: the next request due, or the next failure
    /// to become sustained (the summary changes then). `None` when only answers
    /// can change anything.
    pub fn poll_timeout(&self, now: Instant) -> Option<Instant> {
        self.pods
            .values()
            .flat_map(|pod| {
                let sustained = pod
                    .failing_since
                    .map(|since| since + self.timing.sustained_after)
                    .filter(|at| *at > now);
                [self.due(pod), sustained]
            })
            .flatten()
            .min()
    }

    /// The plane's status at `now`.
    pub fn summary(&self, now: Instant) -> PlaneSummary {
        let failing: Vec<PodFailure> = self
            .pods
            .iter()
            .filter_map(|(addr, pod)| {
                Some(PodFailure {
                    pod: *addr,
                    error: pod.last_error.clone()?,
                    since: pod.failing_since?,
                    attempts: pod.failures,
                    sustained: pod.is_sustained(now, &self.timing),
                })
            })
            .collect();
        PlaneSummary {
            version: self.version,
            hash: self.hash.clone(),
            pods: self.pods.len(),
            current: self
                .pods
                .values()
                .filter(|pod| pod.is_current(&self.hash))
                .count(),
            serving: self.pods.values().filter(|pod| pod.is_serving()).count(),
            tunnel_pods: self.pods.values().filter(|pod| pod.has_tunnel()).count(),
            reachable: self.pods.values().filter(|pod| pod.is_reachable()).count(),
            sustained: failing.iter().any(|failure| failure.sustained),
            failing,
        }
    }
}

/// SplitMix64: a tiny seeded generator for jitter (no cryptographic use).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests;
