//! Culvert's data plane.
//!
//! This crate will own everything that touches a socket on the request path:
//! thread-per-core workers with SO_REUSEPORT listeners, TLS termination and
//! passthrough, HTTP/1.1, HTTP/2, gRPC and WebSocket serving, upstream pools, the
//! config API, metrics and drain. Routing decisions are never made here: they come
//! from `culvert_router::RouteTable`, which this crate holds in an `arc-swap`
//! snapshot.
//!
//! Status: the serving half arrives with the data-plane issue. Today the crate builds
//! the `culvert` binary, whose `route` command prints the routing decision for one
//! request (see `src/cli/route.rs`).
#![forbid(unsafe_code)]
