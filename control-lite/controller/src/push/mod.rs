//! Pushing each dedicated plane's `DataPlaneConfig` to every pod of the plane,
//! through the pod's config API (`PUT /config`, HTTPS, the plane's bearer token),
//! and keeping it there: a pod that restarts empty gets it back within the
//! re-check interval.
//!
//! Two layers, decide then do:
//!
//! - [`state`]: a pure state machine per plane (no IO, time passed in, jitter from
//!   a seed) deciding, per pod, whether to ask what it serves (`GET`), push
//!   (`PUT` under which version) or leave it be, with per-pod backoff, and the
//!   plane's [`PlaneSummary`] for status;
//! - [`driver`]: the [`Pusher`] the controller owns, one task per plane carrying
//!   those decisions out over hyper and rustls (aws-lc-rs), each request bounded in
//!   time and answer size, each failure classified as a [`Failure`].
//!
//! This module never talks to the API server: the caller gives each plane's
//! config, pod addresses (from its headless Service's EndpointSlices), token, CA
//! and server name, and reads the summaries back. Start at [`Pusher::set_plane`].

pub mod driver;
mod failure;
pub mod state;

pub use driver::{PlaneKey, PlaneTarget, PushSettings, Pusher, Summaries};
pub use failure::Failure;
pub use state::{PlaneSummary, PodFailure, Timing};
