//! What a Gateway served through a Cloudflare Tunnel needs on Cloudflare's side, planned
//! from Gateway API state: the DNS records that point its hostnames at the tunnel and the
//! tunnel's remote ingress configuration.
//!
//! The planning here is pure: no IO, no async, no clock. It takes what the caller read
//! from the API (zones, records, the current configuration) and says what to write.
//!
//! - [`dns`]: the zone of each hostname, the TXT ownership records that mark what Culvert
//!   created, and [`dns::plan()`], which turns desired names and existing records into
//!   creates, updates, deletes and conflicts;
//! - [`ingress`]: a tunnel's ingress rules from a Gateway's hostnames, and whether the
//!   configuration Cloudflare holds differs from them.
//!
//! Start at [`dns::plan()`].
#![forbid(unsafe_code)]

pub mod dns;
mod error;
pub mod ingress;

pub use error::Error;
