//! A typed client for the part of the Cloudflare v4 API Culvert uses: tunnels and their
//! remotely managed configuration, zones, DNS records, and the proof that a connector
//! token holds the tunnel it names.
//!
//! It owns every request Culvert sends to Cloudflare, and the pure planning of what to
//! write: [`dns`] (the zone of each hostname, the TXT ownership records that mark what
//! Culvert created, and [`dns::plan()`], which turns desired names and existing records
//! into creates, updates, deletes and conflicts) and [`ingress`] (a tunnel's ingress
//! rules from a Gateway's hostnames, and whether what Cloudflare holds differs). The
//! planners do no IO and refuse values with a [`PlanError`]. Nothing here serves a
//! socket or holds global state.
//!
//! # Using it
//!
//! ```no_run
//! # async fn demo() -> Result<(), culvert_cloudflare::Error> {
//! use culvert_cloudflare::{AccountId, ApiToken, Client, IngressRule};
//!
//! let token = ApiToken::new(std::env::var("CF_API_TOKEN").unwrap_or_default())?;
//! let client = Client::builder(token).build()?;
//! let account: AccountId = "0123456789abcdef0123456789abcdef".parse()?;
//! let tunnel = client.create_tunnel(&account, "edge", None).await?;
//! let catch_all = IngressRule {
//!     hostname: None,
//!     path: None,
//!     service: "http_status:404".to_owned(),
//!     origin_request: None,
//! };
//! client
//!     .put_tunnel_configuration(&account, &tunnel.id, &[catch_all])
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! - [`Client::builder`] takes the [`ApiToken`] and optionally another base URL
//!   (`http://` only on loopback, for the simulator), an extra CA, timeouts, a
//!   [`RetryPolicy`] and a [`RateLimit`]. [`Client::with_token`] gives a client for
//!   another credential sharing the pool and the budget.
//! - Endpoints: [`Client::verify_token`]; tunnels ([`Client::create_tunnel`],
//!   [`Client::list_tunnels`], [`Client::tunnel`], [`Client::delete_tunnel`],
//!   [`Client::tunnel_token`], [`Client::tunnel_configuration`],
//!   [`Client::put_tunnel_configuration`]); [`Client::zones`]; DNS records
//!   ([`Client::dns_records`], [`Client::create_dns_record`],
//!   [`Client::update_dns_record`], [`Client::delete_dns_record`]). Lists are walked
//!   to the end, at most [`MAX_PAGES`] pages.
//! - Failures are one [`Error`]; decide with [`Error::is_auth`], [`Error::is_not_found`],
//!   [`Error::is_conflict`] and [`Error::is_transient`], or read [`Error::status`] and
//!   [`Error::api_errors`].
//! - [`claims`]: [`ClaimProver`] checks connector tokens against Cloudflare and caches
//!   the verdicts ([`ClaimVerdicts`]) for a pure translator to read.
//!
//! # What it guarantees
//!
//! - The API token never prints: [`ApiToken`] formats as `<redacted>`, the header is
//!   marked sensitive, no error holds it, and server text and request paths in errors
//!   are scrubbed of it.
//! - Every request path is built from validated ids ([`AccountId`], [`ZoneId`],
//!   [`TunnelId`], [`RecordId`]); names only go into the percent-encoded query.
//! - Answers are untrusted: at most [`MAX_BODY`] bytes within the timeout, decoded
//!   without panics, error text shortened.
//! - Retries: connection failures before sending and 429 (after its `Retry-After`) for
//!   every method; 5xx, timeouts and lost connections for GET, PUT and DELETE only, so
//!   a POST the server may have acted on is never repeated.
//! - At most [`RateLimit::requests`] requests start in any [`RateLimit::per`] window per
//!   client family (default Cloudflare's 1200 per 5 minutes); callers wait, never exceed.
//!
//! Start reading at `client/mod.rs` (`Client::call`).

#![forbid(unsafe_code)]

mod api;
pub mod claims;
mod client;
pub mod dns;
mod envelope;
mod error;
mod ids;
pub mod ingress;
mod model;
mod pagination;
mod plan_error;
mod token;

pub use claims::{ClaimKey, ClaimProver, ClaimVerdicts, Proof};
pub use client::{Client, ClientBuilder, DEFAULT_BASE_URL, MAX_BODY, RateLimit, RetryPolicy};
pub use envelope::ResultInfo;
pub use error::{ApiMessage, Error};
pub use ids::{AccountId, RecordId, TunnelId, ZoneId};
pub use model::{
    DnsRecord, IngressRule, NewDnsRecord, TokenStatus, Tunnel, TunnelConfiguration,
    TunnelConnection, TunnelStatus, Zone, ZoneAccount,
};
pub use pagination::MAX_PAGES;
pub use plan_error::PlanError;
pub use token::{ApiToken, ConnectorToken};
