//! Cloudflare Tunnel connector for Culvert.
//!
//! This crate drives the tunnel protocol of `connector/PROTOCOL.md`. At its base is
//! the sans-IO protocol core, [`proto`] (the `culvert-tunnel-proto` crate, which
//! Cargo keeps free of runtimes, sockets and clocks): bytes, events and time go in,
//! bytes, deadlines and events come out. It covers
//!
//! * the connector token ([`proto::TunnelToken`]: parse and encode),
//! * the Cap'n Proto messages, through the `capnp` crate with code generated from the
//!   schemas in `connector/proto/schema/` (committed: no schema compiler to build),
//! * the control stream's two-party RPC, both sides: [`proto::ControlClient`] for the
//!   connector (bootstrap, pipelined `registerConnection`, `updateLocalConfiguration`,
//!   `unregisterConnection`) and [`proto::ControlServer`] for the edge simulator,
//! * data streams: the preamble ([`proto::preamble`]), the
//!   [`proto::ConnectRequest`] / [`proto::ConnectResponse`] codec that consumes
//!   exactly one message, and the metadata conventions ([`proto::metadata`]),
//! * the HTTP/2 transport's header conventions ([`proto::http2`]: stream marking,
//!   serialized response headers).
//!
//! On top of it:
//!
//! * [`io`], the driver (tokio, rustls with aws-lc-rs): QUIC with quinn, HTTP/2
//!   with h2 over TLS, or QUIC falling back to HTTP/2 ([`io::Transport`]); HA
//!   connections, registration, request streams handed to a [`io::TunnelHandler`],
//!   reconnects, drain and readiness. It only moves bytes and timers.
//! * [`discovery`], edge discovery as cloudflared does it (SRV, then A/AAAA, one
//!   region per SRV target) over a small DNS stub resolver of its own: a sans-IO
//!   message parser and a thin UDP/TCP layer.
//!
//! Cloudflare's side of the tunnel, for tests, benchmarks and unmodified cloudflared, is
//! the edge simulator in its own crate, `culvert-edge-sim`.
//!
//! It must never route requests itself: requests arriving on tunnel streams are handed
//! to the data plane, which routes them with the same `culvert-router` table as its own
//! listeners.
#![forbid(unsafe_code)]

pub mod discovery;
mod error;
pub mod io;

/// The sans-IO protocol core ([`culvert_tunnel_proto`]).
pub use culvert_tunnel_proto as proto;
pub use error::Error;
