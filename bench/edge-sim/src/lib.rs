//! The edge simulator: plays Cloudflare's side of the tunnel on loopback, for tests,
//! benchmarks and unmodified cloudflared (the `culvert-edge-sim` binary), and the
//! part of the Cloudflare v4 API that manages tunnels and DNS. It drives the
//! connector's own protocol core (`culvert-tunnel-proto`, the edge side of its
//! control stream RPC) and shares the connector's stream bodies, TLS provider and
//! transport settings; it is never linked into the shipped `culvert`.
//!
//! Start at [`EdgeSim::start`] with a [`SimConfig`]. It binds QUIC listeners and
//! HTTP/2 (TLS over TCP) listeners, both with a certificate for
//! `quic.cftunnel.com`, `h2.cftunnel.com` and `probe.cftunnel.com` from its own CA,
//! [`SimCa`]; accepts registrations on either transport for every tunnel it knows:
//! the start-up one (its `TunnelToken`) and those created through the API, as long
//! as they are not deleted; forwards requests from a plain HTTP listener (the front
//! door) over new streams to registered connections of the tunnel the request's
//! `Host` routes to (`route.rs`: a proxied CNAME to `<tunnel-id>.cfargotunnel.com`,
//! then the tunnel's remote ingress; hosts without such a record go to the start-up
//! tunnel), and serves its status as JSON at `GET /_sim/status`.
//!
//! A second plain HTTP listener serves the API under [`API_PREFIX`] (`api/`): one
//! account ([`SimConfig::account_id`]), its zones ([`SimConfig::zones`]), DNS
//! records, tunnels and their configurations, a bearer API token, and a fault knob
//! ([`FAULTS_PATH`], [`EdgeSim::add_api_faults`]). API state lives in memory only:
//! a restart forgets tunnels, records and configurations created through it.
//!
//! With a state directory it writes `ca.pem`, `ca-key.pem`, `edge-addrs`,
//! `h2-addrs`, `http-addr`, `api-addr`, `api-token` and, last, `tunnel-token` once
//! it is listening, and reuses an existing CA, API token and start-up token there
//! on restart.
//!
//! Layers, each file importing only those below it (no circles):
//!
//! * bottom: `error.rs` ([`Error`]), `body.rs` (the response body every listener
//!   answers with), `random.rs`, `ca.rs`, `registry.rs` (connections and events),
//!   `api/state.rs` and what it stands on (`api/error.rs`, `api/time.rs`,
//!   `api/dns.rs`);
//! * `config.rs` ([`SimConfig`]) and `shared.rs` (what the tasks share, the status);
//! * `route.rs` (front-door routing), `forward.rs` (what forwarding shares over
//!   both transports), `edge.rs` (QUIC connections and the control stream, shared
//!   by both transports, and registration), `edge_h2.rs` (HTTP/2 connections and
//!   forwarding), `api/` (the API's envelope and handlers);
//! * `http.rs` (the front door and the API listener's loop);
//! * `sim.rs` ([`EdgeSim`]: start, state directory, shutdown).
//!
//! It must never be exposed beyond loopback: it trusts whoever holds a token and
//! logs freely.

#![forbid(unsafe_code)]

mod api;
mod body;
mod ca;
mod config;
mod edge;
mod edge_h2;
mod error;
mod forward;
mod http;
mod random;
mod registry;
mod route;
mod shared;
mod sim;

pub use api::{API_PREFIX, ApiFault, FAULTS_PATH};
pub use ca::SimCa;
pub use config::{DEFAULT_API_MAX_PER_PAGE, DEFAULT_UNREGISTER_TIMEOUT, SimConfig};
pub use error::Error;
pub use http::STATUS_PATH;
pub use random::generate_token;
pub use registry::{SimConnection, SimConnectionState, SimTransport};
pub use shared::SimStatus;
pub use sim::{EdgeSim, STARTUP_TUNNEL_NAME};
