//! Culvert's cross-crate benchmarks and load tooling.
//!
//! This crate will hold the load generator, the echo backend shared by integration
//! tests and load runs, and the side-by-side comparisons against nginx and HAProxy.
//! Router micro-benchmarks live with the router in `router/benches/`.
//!
//! It must never be a dependency of the shipped binary.
//!
//! Status: empty until the data-plane issue lands.
#![forbid(unsafe_code)]
