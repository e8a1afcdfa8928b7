//! Pushing each dedicated plane's `DataPlaneConfig` to every pod of the plane,
//! through the pod's config API (`PUT /config`, HTTPS, the plane's bearer token),
//! and keeping it there: a pod that restarts empty gets it back within the
//! re-check interval.
//!
//! So far the decisions only: [`state`] is a pure state machine per plane (no IO,
//! time passed in, jitter from a seed) deciding, per pod, whether to ask what it
//! serves (`GET`), push (`PUT` under which version) or leave it be, with per-pod
//! backoff, and the plane's [`PlaneSummary`] for status. Failures come in as a
//! [`Failure`]. Start at [`state::PlaneState`].

mod failure;
pub mod state;

pub use failure::Failure;
pub use state::{PlaneSummary, PodFailure, Timing};
