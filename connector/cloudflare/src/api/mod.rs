//! The typed endpoints, one module per resource, each a set of [`Client`](crate::Client)
//! methods. Every path is built from validated ids only; names go into the query,
//! percent-encoded.

mod dns;
mod tunnels;
mod user;
mod zones;

/// Page size for tunnel and zone lists (Cloudflare's zone maximum is 50).
const LIST_PAGE: u32 = 50;

/// Page size for DNS record lists.
const RECORD_PAGE: u32 = 100;
