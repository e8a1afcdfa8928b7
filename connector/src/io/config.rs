//! What a tunnel is configured with: [`TunnelConfig`] (cloudflared's defaults in
//! [`TunnelConfig::new`]) and the limits it is checked against. Validation happens
//! once, when [`Tunnel::new`](super::Tunnel::new) builds the shared state; nothing
//! here binds or resolves.

use std::net::SocketAddr;
use std::time::Duration;

use super::tls::{self, EdgeRoots};
use super::transport::Transport;
use crate::Error;
use crate::discovery::DiscoveryConfig;
use crate::proto::backoff::BackoffConfig;
use crate::proto::control::DEFAULT_RPC_TIMEOUT;
use crate::proto::{TunnelToken, Uuid};

/// The most HA connections cloudflared opens by default.
pub const DEFAULT_HA_CONNECTIONS: u8 = 4;
/// cloudflared's default `--grace-period`.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30);
/// cloudflared refuses a longer `--grace-period`.
pub const MAX_GRACE_PERIOD: Duration = Duration::from_secs(180);
/// The default bound on concurrent edge-opened streams per connection.
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 1000;

/// The features every connection announces (PROTOCOL.md §3.4): only what the
/// connector implements. Not announced: `allow_remote_config` (configuration pushes
/// are refused), `support_datagram_v2`/`v3_2` (no UDP sessions), `management_logs`
/// (no log streaming), `postquantum`.
pub const DEFAULT_FEATURES: &[&str] = &["serialized_headers", "support_quic_eof"];

/// Everything a tunnel needs. Build with [`TunnelConfig::new`], adjust the fields,
/// then hand it to [`Tunnel::new`](super::Tunnel::new), which validates it.
#[derive(Debug, Clone)]
pub struct TunnelConfig {
    /// The connector token (`--token`).
    pub token: TunnelToken,
    /// Static edge addresses (`--edge`); HA connections are capped at their number.
    /// Empty (with `h2_edges` `None`): the edge is discovered with `discovery`.
    pub edges: Vec<SocketAddr>,
    /// How to discover the edge when `edges` is empty: region, address families,
    /// nameservers (default: no region, both families, `/etc/resolv.conf`).
    pub discovery: DiscoveryConfig,
    /// Which CAs are trusted for the edge certificate.
    pub roots: EdgeRoots,
    /// QUIC, HTTP/2 or QUIC with HTTP/2 fallback; default QUIC.
    pub transport: Transport,
    /// HTTP/2 edge addresses, when they differ from `edges`. Cloudflare serves
    /// both transports on the same `host:port` (UDP for QUIC, TCP for HTTP/2), so
    /// `None`, the default, dials `edges` over TCP. The simulator listens for
    /// HTTP/2 on separate ports (`--h2`, its `h2-addrs` file): pass those here.
    pub h2_edges: Option<Vec<SocketAddr>>,
    /// How long a QUIC handshake may take (cloudflared: 5 s); `Auto` falls back
    /// sooner with a shorter one.
    pub quic_handshake_timeout: Duration,
    /// How many HA connections (connIndex `0..n`); default 4.
    pub ha_connections: u8,
    /// Delay between starting consecutive HA connections (cloudflared: 1 s).
    pub ha_stagger: Duration,
    /// How long in-flight streams are served after unregistering; at most 3 min.
    pub grace_period: Duration,
    /// Timeout of each control-stream RPC (cloudflared's `--rpc-timeout`, 5 s).
    pub rpc_timeout: Duration,
    /// Reconnect backoff.
    pub backoff: BackoffConfig,
    /// Bound on concurrent request streams the edge may open on one connection
    /// (the control stream not counted); the edge's further requests wait for one
    /// to end.
    pub max_concurrent_streams: u32,
    /// The connector UUID sent as `ClientInfo.clientId`; random when `None`.
    pub client_id: Option<Uuid>,
    /// `ClientInfo.version`.
    pub version: String,
    /// `ClientInfo.arch`, `GOOS_GOARCH` style.
    pub arch: String,
    /// `ClientInfo.features`.
    pub features: Vec<String>,
    /// The JSON sent with `updateLocalConfiguration` on connIndex 0.
    pub local_config: Vec<u8>,
    /// Seed of the backoff jitter; random when `None` (tests pin it).
    pub seed: Option<u64>,
}

impl TunnelConfig {
    /// A configuration with cloudflared's defaults and the system trust store.
    pub fn new(token: TunnelToken, edges: Vec<SocketAddr>) -> Self {
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        };
        Self {
            token,
            edges,
            discovery: DiscoveryConfig::default(),
            roots: EdgeRoots::default(),
            transport: Transport::Quic,
            h2_edges: None,
            quic_handshake_timeout: tls::IDLE_TIMEOUT,
            ha_connections: DEFAULT_HA_CONNECTIONS,
            ha_stagger: Duration::from_secs(1),
            grace_period: DEFAULT_GRACE_PERIOD,
            rpc_timeout: DEFAULT_RPC_TIMEOUT,
            backoff: BackoffConfig::default(),
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
            client_id: None,
            version: format!("culvert-{}", env!("CARGO_PKG_VERSION")),
            arch: format!("{}_{arch}", std::env::consts::OS),
            features: DEFAULT_FEATURES.iter().map(|f| (*f).to_owned()).collect(),
            local_config:
                br#"{"ingress":[],"warp-routing":{"enabled":false},"__configuration_flags":{}}"#
                    .to_vec(),
            seed: None,
        }
    }

    /// Checks the configuration; `discovers` when the edge is to be discovered
    /// (no static addresses). Caps the HA connections at the number of static
    /// addresses of the transport the tunnel starts with, as cloudflared does.
    pub(crate) fn validate(&mut self, discovers: bool) -> Result<(), Error> {
        let h2_edges = self.h2_edges.as_ref().unwrap_or(&self.edges);
        // With discovery the addresses come later, for both transports.
        if !discovers {
            if self.transport != Transport::Http2 && self.edges.is_empty() {
                return Err(Error::Config("no edge addresses".into()));
            }
            if self.transport != Transport::Quic && h2_edges.is_empty() {
                return Err(Error::Config("no http/2 edge addresses".into()));
            }
        }
        if self.ha_connections == 0 {
            return Err(Error::Config("ha_connections must be at least 1".into()));
        }
        if self.grace_period > MAX_GRACE_PERIOD {
            return Err(Error::Config(format!(
                "grace period {:?} exceeds the maximum of {MAX_GRACE_PERIOD:?}",
                self.grace_period
            )));
        }
        if self.max_concurrent_streams == 0 {
            return Err(Error::Config(
                "max_concurrent_streams must be at least 1".into(),
            ));
        }
        if self.quic_handshake_timeout.is_zero() {
            return Err(Error::Config(
                "quic_handshake_timeout must be positive".into(),
            ));
        }
        let first = match self.transport {
            Transport::Http2 => h2_edges.len(),
            Transport::Quic | Transport::Auto => self.edges.len(),
        };
        if !discovers {
            let cap = u8::try_from(first).unwrap_or(u8::MAX);
            self.ha_connections = self.ha_connections.min(cap);
        }
        Ok(())
    }
}
