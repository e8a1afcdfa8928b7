//! Culvert's slim control plane.
//!
//! This crate will own the translation of Gateway API objects (from manifest files or a
//! Kubernetes API server) into `culvert_router::DataPlaneConfig` documents and status
//! conditions, the sources that feed it and the sinks that deliver its output
//! (in-process swap, config-API push, dedicated data planes).
//!
//! Translation must stay a pure function of the objects it is given: no IO, no clock,
//! no hidden state, so the conformance vectors can replay it without a cluster.
//!
//! Status: empty until the translation issue lands; nothing here is wired in yet.
#![forbid(unsafe_code)]
