//! Cloudflare Tunnel connector for Culvert.
//!
//! This crate will own the tunnel protocol of `spec/tunnel-protocol.md`: a sans-IO
//! protocol core (`proto`, bytes and events in, bytes and deadlines out, time injected)
//! and a thin quinn driver (`io`) that only moves bytes and timers, plus the edge
//! simulator that plays Cloudflare's side in tests and benchmarks.
//!
//! It must never route requests itself: requests arriving on tunnel streams are handed
//! to the data plane, which routes them with the same `culvert-router` table as its own
//! listeners. The protocol core must never touch sockets, a runtime or a clock.
//!
//! Status: empty until the tunnel issue lands; nothing here is wired into the binary.
#![forbid(unsafe_code)]
