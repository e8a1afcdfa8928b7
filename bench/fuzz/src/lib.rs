//! Coverage-guided fuzz targets for Culvert's parsers. Each target is one function
//! that takes any bytes, feeds them to a parser and checks properties that must hold
//! whatever the input. A violated property panics, and a panic is what a fuzzer
//! reports as a crash; an error the parser returns is an answer, not a finding.
//!
//! - [`request_head`], [`response_head`], [`body`] and [`head_round_trip`]: the
//!   HTTP/1.1 codec of `culvert-wire`, and [`client_hello`] its TLS ClientHello reader;
//! - [`capnp`] and [`tunnel_token`]: the tunnel protocol of `culvert-connector`,
//!   and [`dns_reply`] the DNS replies (and `resolv.conf`) its edge discovery reads;
//! - [`manifests`]: loading and translating Gateway API manifests
//!   (`culvert-control-lite`);
//! - [`data_plane_config`]: a `DataPlaneConfig`, its route table and lookups in it
//!   (`culvert-router`).
//!
//! The same functions run under AFL++ (`bench/fuzz/afl`, one binary per target, driven by
//! `scripts/fuzz`) and in the smoke test (`tests/smoke.rs`), which replays the seed
//! corpora in `bench/fuzz/corpus/<target>/` and a few thousand mutations of them. Every
//! target is listed in [`TARGETS`].
#![forbid(unsafe_code)]

mod body;
mod capnp;
mod client_hello;
mod data_plane_config;
mod dns_reply;
mod head_round_trip;
mod input;
mod manifests;
mod request_head;
mod response_head;
mod tunnel_token;

pub use body::body;
pub use capnp::capnp;
pub use client_hello::client_hello;
pub use data_plane_config::data_plane_config;
pub use dns_reply::dns_reply;
pub use head_round_trip::head_round_trip;
pub use manifests::manifests;
pub use request_head::request_head;
pub use response_head::response_head;
pub use tunnel_token::tunnel_token;

/// A fuzz target: takes any bytes, panics only on a violated property.
pub type Target = fn(&[u8]);

/// Every target by name: the name of its AFL binary and of its seed corpus.
pub const TARGETS: &[(&str, Target)] = &[
    ("request_head", request_head),
    ("response_head", response_head),
    ("body", body),
    ("head_round_trip", head_round_trip),
    ("capnp", capnp),
    ("tunnel_token", tunnel_token),
    ("client_hello", client_hello),
    ("manifests", manifests),
    ("data_plane_config", data_plane_config),
    ("dns_reply", dns_reply),
];
