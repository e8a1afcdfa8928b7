//! Cloudflare Tunnel connector for Culvert.
//!
//! This crate owns the tunnel protocol of `spec/tunnel-protocol.md`. What exists now is
//! the sans-IO protocol core, [`proto`]: bytes, events and time go in, bytes,
//! deadlines and events come out. It covers
//!
//! * the connector token ([`proto::TunnelToken`]: parse and encode),
//! * a hand-written Cap'n Proto codec (unpacked framing, segments, far pointers; no
//!   schema compiler) with the schemas in `connector/schema/`,
//! * the control stream's two-party RPC, both sides: [`proto::ControlClient`] for the
//!   connector (bootstrap, pipelined `registerConnection`, `updateLocalConfiguration`,
//!   `unregisterConnection`) and [`proto::ControlServer`] for the edge simulator,
//! * data streams: the preamble ([`proto::preamble`]), the
//!   [`proto::ConnectRequest`] / [`proto::ConnectResponse`] codec that consumes
//!   exactly one message, and the metadata conventions ([`proto::metadata`]).
//!
//! Still to come: the QUIC driver (`io`), which will only move bytes and timers, the
//! HTTP/2 transport and the edge simulator. Nothing here is wired into the binary yet.
//!
//! It must never route requests itself: requests arriving on tunnel streams are handed
//! to the data plane, which routes them with the same `culvert-router` table as its own
//! listeners. The protocol core must never touch sockets, a runtime or a clock.
#![forbid(unsafe_code)]

mod error;
pub mod proto;

pub use error::Error;
