//! Route selection for Culvert. Compiles a [`DataPlaneConfig`] into an immutable
//! [`RouteTable`] and answers, for each request, which rule of which route handles
//! it, by the Gateway API matching and precedence rules.
//!
//! This crate is pure: no IO, no async, no clock, no global state. The data plane, the
//! control plane and the conformance harness all use it, so a routing decision is the
//! same wherever it is made. It must never panic on any config or request: a bad config
//! is an [`Error`] naming the object at fault, and a lookup always answers.
//!
//! Start at [`RouteTableBuilder::build`] and [`RouteTable::route`]. The pure request
//! outcomes that follow a match (header edits, redirects, rewrites, CORS, weighted
//! backend choice) are in [`outcome`].
#![forbid(unsafe_code)]

mod compact;
pub mod config;
mod duration;
mod error;
pub mod host;
pub mod outcome;
pub mod path;
mod regex;
pub mod rule;
pub mod uri_bytes;

pub use config::DataPlaneConfig;
pub use culvert_time::parse_rfc3339;
pub use duration::parse_duration;
pub use error::{Error, HostnameProblem, Origin};
pub use regex::RegexLimits;
mod table;

pub use table::{
    DEFAULT_MAX_ENTRIES, ListenerId, ListenerInfo, NoMatch, RequestView, RouteId, RouteInfo,
    RouteKind, RouteMatch, RouteTable, RouteTableBuilder, RuleId, TlsMatch,
};
