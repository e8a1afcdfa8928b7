//! What to start: [`SimConfig`], with [`SimConfig::loopback`] as the base of every
//! test's and the binary's configuration.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use culvert_tunnel_proto::TunnelToken;

use crate::api::state::ApiFault;
use crate::ca::SimCa;

/// The largest `per_page` the simulator honours by default (smaller than
/// Cloudflare's, so clients exercise pagination).
pub const DEFAULT_API_MAX_PER_PAGE: u32 = 5;
/// How long an unregister reply may wait for in-flight streams by default.
pub const DEFAULT_UNREGISTER_TIMEOUT: Duration = Duration::from_secs(30);

/// What to start.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// QUIC listener addresses (port 0 picks a free port).
    pub quic: Vec<SocketAddr>,
    /// HTTP/2 (TLS over TCP) listener addresses; none by default.
    pub h2: Vec<SocketAddr>,
    /// The plain HTTP listener (the front door).
    pub http: SocketAddr,
    /// The API listener (`/client/v4/...`).
    pub api: SocketAddr,
    /// Where to write (and find) `ca.pem`, `ca-key.pem`, `tunnel-token`, ...
    pub state_dir: Option<PathBuf>,
    /// The token to accept; else the state directory's, else a new one.
    pub token: Option<TunnelToken>,
    /// The CA to use; else the state directory's, else a new one.
    pub ca: Option<SimCa>,
    /// Print events to stderr.
    pub log: bool,
    /// Bound on how long an unregister reply waits for in-flight streams.
    pub unregister_timeout: Duration,
    /// `ConnectionDetails.locationName` (and the API's `colo_name`).
    pub location: String,
    /// The account ID (32 lowercase hex); else the start-up token's account tag. A
    /// start-up token generated here belongs to it.
    pub account_id: Option<String>,
    /// The API token to accept; else the state directory's `api-token`, else a new one.
    pub api_token: Option<String>,
    /// The account's zones (`example.com`); their IDs are generated.
    pub zones: Vec<String>,
    /// Faults the first API requests answer with, in order.
    pub api_faults: Vec<ApiFault>,
    /// The largest `per_page` of API lists.
    pub api_max_per_page: u32,
}

impl SimConfig {
    /// Four QUIC listeners and the HTTP listener on free loopback ports (set `h2`
    /// for HTTP/2 listeners).
    pub fn loopback() -> Self {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        Self {
            quic: vec![any; 4],
            h2: Vec::new(),
            http: any,
            api: any,
            state_dir: None,
            token: None,
            ca: None,
            log: false,
            unregister_timeout: DEFAULT_UNREGISTER_TIMEOUT,
            location: "SIM".to_owned(),
            account_id: None,
            api_token: None,
            zones: Vec::new(),
            api_faults: Vec::new(),
            api_max_per_page: DEFAULT_API_MAX_PER_PAGE,
        }
    }
}
