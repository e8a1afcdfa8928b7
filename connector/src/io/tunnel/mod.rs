//! The tunnel: configuration, HA connections, reconnects, drain and readiness
//! (PROTOCOL.md §6).
//!
//! [`Tunnel::new`] validates a [`TunnelConfig`] and builds the shared, `Send + Sync`
//! part (TLS config, address pool, status channel, drain signal). Each worker thread
//! then calls [`Tunnel::spawn_local`] for the connection indices it owns; every index
//! runs on that thread (connIndex 0 first, the others once anything registered,
//! `ha_stagger` apart), reconnecting with jittered exponential backoff. `EDUPCONN`
//! and idle timeouts move an index to another edge address; a permanent
//! registration error before anything registered stops the whole tunnel (except a
//! cause containing `Unauthorized`, which is retried). [`Tunnel::status`] is the
//! readiness source; [`Tunnel::drain`] starts the graceful shutdown.
//!
//! Each attempt uses one [`Transport`]: QUIC (`connection.rs`) or HTTP/2
//! (`http2/`). With [`Transport::Auto`] an index starts on QUIC and falls back to
//! HTTP/2 for good once QUIC failed `backoff.max_exponent` times in a row without
//! registering (cloudflared's `--retries`), or at once when QUIC looks broken (an
//! idle timeout, or "operation not permitted" from the socket), as cloudflared does.
//! Those rules are the protocol core's sans-IO state machine
//! ([`crate::proto::reconnect`]); `run_index` dials and waits as it says.
//!
//! Edge addresses come from [`TunnelConfig::edges`] (dealt alternately into two
//! regions, HA connections capped at their number) or, when it is empty, from
//! [`crate::discovery`]: the first connection to need an address resolves them, and
//! a connection that must move to another address resolves again once the answer's
//! TTL ran out. Connections prefer the regions in turn (connIndex `i` region
//! `i mod regions`); one address is never held by two connections, and a
//! discovered tunnel's connection that finds no free address waits and retries
//! rather than share one.

use std::net::SocketAddr;
use std::ops::Range;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::BackoffConfig;
use super::connection;
use super::handler::TunnelHandler;
use super::http2;
use super::tls::{self, EdgeRoots};
use crate::Error;
use crate::discovery::{self, DiscoveryConfig, EdgeRegions, MIN_TTL};
use crate::proto::backoff::Backoff;
use crate::proto::control::DEFAULT_RPC_TIMEOUT;
use crate::proto::reconnect::{self, Dial, Edge, Next, Reconnect};
use crate::proto::{ConnectionDetails, RegistrationError, TunnelToken, Uuid};

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

/// Which transport carries the tunnel (cloudflared's `--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// QUIC over UDP (`quic.cftunnel.com`, ALPN `argotunnel`).
    #[default]
    Quic,
    /// HTTP/2 over TLS over TCP (`h2.cftunnel.com`, no ALPN); the edge is the
    /// HTTP/2 client.
    Http2,
    /// QUIC first, HTTP/2 when QUIC cannot connect (see the module doc).
    Auto,
}

impl Transport {
    /// The `--protocol` spelling: `quic`, `http2` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Quic => "quic",
            Self::Http2 => "http2",
            Self::Auto => "auto",
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Transport {
    type Err = Error;

    /// `quic`, `http2` or `auto`; `h2mux` means `http2`, as in cloudflared.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "quic" => Ok(Self::Quic),
            "http2" | "h2mux" => Ok(Self::Http2),
            "auto" => Ok(Self::Auto),
            other => Err(Error::Config(format!(
                "unknown tunnel protocol {other:?}: expected quic, http2 or auto"
            ))),
        }
    }
}

/// Everything a tunnel needs. Build with [`TunnelConfig::new`], adjust the fields,
/// then hand it to [`Tunnel::new`], which validates it.
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
}

/// What one HA connection is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionState {
    /// Not run on any thread.
    Idle,
    /// Spawned, waiting for connIndex 0 to register (or for its stagger delay).
    Waiting,
    /// Dialling or registering.
    Connecting,
    /// Registered: the edge may send requests.
    Registered {
        /// The connection UUID the edge assigned.
        connection_id: Uuid,
        /// The edge's location name.
        location: String,
    },
    /// Unregistered (or unregistering); serving in-flight streams.
    Draining,
    /// Waiting before the next attempt.
    Backoff {
        /// How long.
        delay: Duration,
    },
    /// Finished: drained, shut down or stopped by a permanent error.
    Stopped,
}

/// One HA connection's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionStatus {
    /// Its connIndex.
    pub conn_index: u8,
    /// What it is doing.
    pub state: ConnectionState,
    /// The edge address it uses (or last used).
    pub edge: Option<SocketAddr>,
    /// The transport of its current (or last) attempt: `Quic` or `Http2`.
    pub transport: Option<Transport>,
    /// Failed attempts since the last registration.
    pub attempts: u32,
    /// The last failure, for logs and status pages.
    pub last_error: Option<String>,
}

/// A permanent registration failure that stopped the tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelFailure {
    /// The connection that got it.
    pub conn_index: u8,
    /// The edge's answer.
    pub error: RegistrationError,
}

/// The tunnel's status, published on a watch channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelStatus {
    /// One entry per connIndex.
    pub connections: Vec<ConnectionStatus>,
    /// Whether any connection ever registered.
    pub ever_registered: bool,
    /// Whether a drain (or shutdown) was requested.
    pub draining: bool,
    /// Set when a permanent error stopped the tunnel.
    pub failure: Option<TunnelFailure>,
    /// The last permanent refusal a connection gave up on, also after the tunnel
    /// had registered (a tunnel deleted at the edge): one such refusal does not
    /// stop the other connections, but a tunnel whose connections all ended this
    /// way did not close cleanly.
    pub refusal: Option<TunnelFailure>,
}

impl TunnelStatus {
    /// How many connections are registered and not draining (for `/readyz`).
    pub fn registered(&self) -> usize {
        self.connections
            .iter()
            .filter(|c| matches!(c.state, ConnectionState::Registered { .. }))
            .count()
    }

    /// Whether every spawned connection has stopped.
    pub fn is_closed(&self) -> bool {
        self.connections
            .iter()
            .all(|c| matches!(c.state, ConnectionState::Idle | ConnectionState::Stopped))
    }
}

/// One edge address in a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    addr: SocketAddr,
    region: usize,
    owner: Option<u8>,
    /// Gone from the latest discovery but still held by `owner`: given to nobody
    /// else, dropped once released.
    retired: bool,
}

/// Which connection holds which edge address.
#[derive(Debug, Default)]
struct AddrPool {
    slots: Vec<Slot>,
    regions: usize,
}

impl AddrPool {
    /// Static addresses, dealt alternately into two regions.
    fn from_static(addrs: &[SocketAddr]) -> Self {
        Self {
            slots: addrs
                .iter()
                .enumerate()
                .map(|(i, &addr)| Slot {
                    addr,
                    region: i % 2,
                    owner: None,
                    retired: false,
                })
                .collect(),
            regions: addrs.len().clamp(1, 2),
        }
    }

    /// Discovered addresses, one list per region.
    fn from_regions(regions: &[Vec<SocketAddr>]) -> Self {
        let mut slots: Vec<Slot> = Vec::new();
        for (region, addrs) in regions.iter().enumerate() {
            for &addr in addrs {
                if !slots.iter().any(|s| s.addr == addr) {
                    slots.push(Slot {
                        addr,
                        region,
                        owner: None,
                        retired: false,
                    });
                }
            }
        }
        Self {
            slots,
            regions: regions.len().max(1),
        }
    }

    /// How many addresses may be handed out.
    fn live(&self) -> usize {
        self.slots.iter().filter(|s| !s.retired).count()
    }

    /// Replaces the addresses with a new discovery's, keeping who holds what.
    fn replace(&mut self, found: &EdgeRegions) {
        let mut next = Self::from_regions(&found.regions);
        for old in &self.slots {
            let Some(owner) = old.owner else { continue };
            match next.slots.iter_mut().find(|s| s.addr == old.addr) {
                Some(slot) if slot.owner.is_none() => slot.owner = Some(owner),
                _ => next.slots.push(Slot {
                    retired: true,
                    ..*old
                }),
            }
        }
        *self = next;
    }

    /// An address for `index`, preferring its region (`index mod regions`) and a
    /// free one other than `avoid`. With no free address, `share` gives a taken
    /// one (static edges); otherwise `None`.
    fn take(&mut self, index: u8, avoid: Option<SocketAddr>, share: bool) -> Option<SocketAddr> {
        self.release(index);
        let live: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots.get(i).is_some_and(|s| !s.retired))
            .collect();
        let n = live.len();
        if n == 0 {
            return None;
        }
        let start = usize::from(index) % n;
        let order: Vec<usize> = (0..n)
            .filter_map(|i| live.get((start + i) % n).copied())
            .collect();
        let slot = |pos: &usize| self.slots.get(*pos);
        let free = |pos: &usize| slot(pos).is_some_and(|s| s.owner.is_none());
        let not_avoided = |pos: &usize| slot(pos).is_some_and(|s| Some(s.addr) != avoid);
        let region = usize::from(index) % self.regions.max(1);
        let in_region = |pos: &usize| slot(pos).is_some_and(|s| s.region == region);
        let pick = order
            .iter()
            .copied()
            .find(|p| free(p) && not_avoided(p) && in_region(p))
            .or_else(|| order.iter().copied().find(|p| free(p) && not_avoided(p)))
            .or_else(|| order.iter().copied().find(free))
            .or_else(|| share.then(|| order.first().copied()).flatten())?;
        let slot = self.slots.get_mut(pick)?;
        slot.owner = Some(index);
        Some(slot.addr)
    }

    fn release(&mut self, index: u8) {
        for slot in &mut self.slots {
            if slot.owner == Some(index) {
                slot.owner = None;
            }
        }
        self.slots.retain(|s| !s.retired || s.owner.is_some());
    }
}

/// The discovery side of a tunnel without static edges.
#[derive(Debug)]
struct Discovery {
    config: DiscoveryConfig,
    /// The region asked for: the configured one or the token's endpoint.
    region: Option<String>,
    /// Held while one connection resolves; the others wait and reuse its answer.
    running: tokio::sync::Mutex<()>,
    /// Until when the pool's addresses are fresh.
    fresh_until: Mutex<Option<Instant>>,
}

impl Discovery {
    fn stale(&self) -> bool {
        let until = match self.fresh_until.lock() {
            Ok(until) => *until,
            Err(poisoned) => *poisoned.into_inner(),
        };
        until.is_none_or(|until| Instant::now() >= until)
    }

    fn set_fresh_for(&self, ttl: Duration) {
        let until = Instant::now() + ttl;
        match self.fresh_until.lock() {
            Ok(mut fresh) => *fresh = Some(until),
            Err(poisoned) => *poisoned.into_inner() = Some(until),
        }
    }
}

/// The part of a tunnel shared by every thread.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: TunnelConfig,
    pub(crate) quic: quinn::ClientConfig,
    pub(crate) h2_tls: Arc<rustls::ClientConfig>,
    pub(crate) client_id: Uuid,
    status: watch::Sender<TunnelStatus>,
    drain: watch::Sender<Option<Instant>>,
    addrs: Mutex<AddrPool>,
    /// HTTP/2 addresses when they differ from the QUIC ones.
    h2_addrs: Option<Mutex<AddrPool>>,
    /// Set when the edge is discovered rather than given.
    discovery: Option<Discovery>,
    seed: u64,
}

impl Shared {
    pub(crate) fn set_state(&self, index: u8, state: ConnectionState) {
        self.status.send_modify(|s| {
            if let Some(c) = s.connections.get_mut(usize::from(index)) {
                c.state = state;
            }
        });
    }

    pub(crate) fn mark_registered(&self, index: u8, details: &ConnectionDetails) {
        let connection_id = details.connection_id().unwrap_or_default();
        self.status.send_modify(|s| {
            s.ever_registered = true;
            if let Some(c) = s.connections.get_mut(usize::from(index)) {
                c.state = ConnectionState::Registered {
                    connection_id,
                    location: details.location_name.clone(),
                };
                c.attempts = 0;
                c.last_error = None;
            }
        });
    }

    fn update(&self, index: u8, f: impl FnOnce(&mut ConnectionStatus)) {
        self.status.send_modify(|s| {
            if let Some(c) = s.connections.get_mut(usize::from(index)) {
                f(c);
            }
        });
    }

    fn pool(&self, transport: Transport) -> &Mutex<AddrPool> {
        match (transport, &self.h2_addrs) {
            (Transport::Http2, Some(pool)) => pool,
            _ => &self.addrs,
        }
    }

    /// Runs `f` on a pool. The pools are only touched in these short, non-async
    /// sections.
    fn with_pool<T>(pool: &Mutex<AddrPool>, f: impl FnOnce(&mut AddrPool) -> T) -> T {
        match pool.lock() {
            Ok(mut pool) => f(&mut pool),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// An address for `index` (see [`AddrPool::take`]), discovering the edge first
    /// when its addresses are missing or stale.
    async fn acquire(
        &self,
        index: u8,
        avoid: Option<SocketAddr>,
        transport: Transport,
    ) -> Result<SocketAddr, Error> {
        if let Some(discovery) = &self.discovery {
            self.refresh(discovery).await?;
        }
        let share = self.discovery.is_none();
        Self::with_pool(self.pool(transport), |pool| {
            let live = pool.live();
            pool.take(index, avoid, share).ok_or_else(|| {
                Error::Discovery(format!(
                    "no free edge address for connection {index} ({live} addresses known)"
                ))
            })
        })
    }

    /// Discovers the edge if the known addresses are stale. A failure keeps the
    /// old addresses when there are some (and tries again after [`MIN_TTL`]).
    async fn refresh(&self, discovery: &Discovery) -> Result<(), Error> {
        if !discovery.stale() {
            return Ok(());
        }
        let _running = discovery.running.lock().await;
        if !discovery.stale() {
            return Ok(());
        }
        let found = match discovery.config.resolver() {
            Ok(resolver) => {
                discovery::discover(
                    &resolver,
                    discovery.region.as_deref(),
                    discovery.config.ip_version,
                )
                .await
            }
            Err(error) => Err(error),
        };
        match found {
            Ok(found) => {
                tracing::info!(
                    regions = found.regions.len(),
                    addrs = found.addrs().count(),
                    ttl = ?found.ttl,
                    fallback = found.fallback,
                    "edge discovered"
                );
                Self::with_pool(&self.addrs, |pool| pool.replace(&found));
                discovery.set_fresh_for(found.ttl.min(discovery.config.refresh_after));
                Ok(())
            }
            Err(error) if Self::with_pool(&self.addrs, |pool| pool.live()) > 0 => {
                tracing::warn!(%error, "edge discovery failed; keeping the known addresses");
                discovery.set_fresh_for(MIN_TTL.min(discovery.config.refresh_after));
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    fn release_addr(&self, index: u8) {
        for pool in std::iter::once(&self.addrs).chain(self.h2_addrs.as_ref()) {
            Self::with_pool(pool, |pool| pool.release(index));
        }
    }
}

/// A Cloudflare Tunnel: cheap to clone, `Send + Sync`; connections run on the
/// threads that call [`Tunnel::spawn_local`].
#[derive(Debug, Clone)]
pub struct Tunnel {
    shared: Arc<Shared>,
}

/// `n` random bytes from the operating system (through aws-lc-rs).
pub fn random_bytes<const N: usize>() -> Result<[u8; N], Error> {
    let mut out = [0u8; N];
    tls::crypto_provider()
        .secure_random
        .fill(&mut out)
        .map_err(|e| Error::Tls(format!("random source: {e:?}")))?;
    Ok(out)
}

/// A random (version 4) UUID.
pub fn random_uuid() -> Result<Uuid, Error> {
    let mut bytes = random_bytes::<16>()?;
    if let Some(b) = bytes.get_mut(6) {
        *b = (*b & 0x0f) | 0x40;
    }
    if let Some(b) = bytes.get_mut(8) {
        *b = (*b & 0x3f) | 0x80;
    }
    Ok(Uuid::from_bytes(bytes))
}

impl Tunnel {
    /// Validates `config` and prepares the TLS configuration. Binds nothing and
    /// resolves nothing: without static edges, the first connection discovers them.
    pub fn new(mut config: TunnelConfig) -> Result<Self, Error> {
        let discovery = if config.edges.is_empty() && config.h2_edges.is_none() {
            let region = config
                .discovery
                .region(config.token.endpoint.as_deref())?
                .map(str::to_owned);
            Some(Discovery {
                config: config.discovery.clone(),
                region,
                running: tokio::sync::Mutex::new(()),
                fresh_until: Mutex::new(None),
            })
        } else {
            None
        };
        let h2_edges = config.h2_edges.as_ref().unwrap_or(&config.edges);
        // With discovery the addresses come later, for both transports.
        if discovery.is_none() {
            if config.transport != Transport::Http2 && config.edges.is_empty() {
                return Err(Error::Config("no edge addresses".into()));
            }
            if config.transport != Transport::Quic && h2_edges.is_empty() {
                return Err(Error::Config("no http/2 edge addresses".into()));
            }
        }
        if config.ha_connections == 0 {
            return Err(Error::Config("ha_connections must be at least 1".into()));
        }
        if config.grace_period > MAX_GRACE_PERIOD {
            return Err(Error::Config(format!(
                "grace period {:?} exceeds the maximum of {MAX_GRACE_PERIOD:?}",
                config.grace_period
            )));
        }
        if config.max_concurrent_streams == 0 {
            return Err(Error::Config(
                "max_concurrent_streams must be at least 1".into(),
            ));
        }
        if config.quic_handshake_timeout.is_zero() {
            return Err(Error::Config(
                "quic_handshake_timeout must be positive".into(),
            ));
        }
        // cloudflared caps HA connections at the number of edge addresses (of the
        // transport it starts with).
        let first = match config.transport {
            Transport::Http2 => h2_edges.len(),
            Transport::Quic | Transport::Auto => config.edges.len(),
        };
        if discovery.is_none() {
            let cap = u8::try_from(first).unwrap_or(u8::MAX);
            config.ha_connections = config.ha_connections.min(cap);
        }
        let quic = tls::client_config(&config.roots, config.max_concurrent_streams)?;
        let h2_tls = tls::h2_client_config(&config.roots)?;
        let client_id = match config.client_id {
            Some(id) => id,
            None => random_uuid()?,
        };
        let seed = match config.seed {
            Some(seed) => seed,
            None => u64::from_le_bytes(random_bytes::<8>()?),
        };
        let connections = (0..config.ha_connections)
            .map(|conn_index| ConnectionStatus {
                conn_index,
                state: ConnectionState::Idle,
                edge: None,
                transport: None,
                attempts: 0,
                last_error: None,
            })
            .collect();
        let (status, _) = watch::channel(TunnelStatus {
            connections,
            ever_registered: false,
            draining: false,
            failure: None,
            refusal: None,
        });
        let (drain, _) = watch::channel(None);
        let pool = |addrs: &[SocketAddr]| Mutex::new(AddrPool::from_static(addrs));
        let addrs = pool(&config.edges);
        let h2_addrs = config.h2_edges.as_deref().map(pool);
        Ok(Self {
            shared: Arc::new(Shared {
                config,
                quic,
                h2_tls,
                client_id,
                status,
                drain,
                addrs,
                h2_addrs,
                discovery,
                seed,
            }),
        })
    }

    /// The connector UUID sent on every connection.
    pub fn client_id(&self) -> Uuid {
        self.shared.client_id
    }

    /// The connIndex values this tunnel runs (`0..ha_connections`, capped at the
    /// number of static edge addresses). Split them over worker threads as you like.
    pub fn connection_indices(&self) -> Range<u8> {
        0..self.shared.config.ha_connections
    }

    /// Runs the given connection indices on the current thread, one local task each,
    /// serving their streams with `handler`. Must be called on a
    /// `tokio::runtime::LocalRuntime` or inside a `tokio::task::LocalSet` (it uses
    /// `spawn_local`). Indices outside
    /// [`Tunnel::connection_indices`], or already running, are ignored.
    pub fn spawn_local(
        &self,
        indices: impl IntoIterator<Item = u8>,
        handler: Rc<dyn TunnelHandler>,
    ) -> Vec<JoinHandle<()>> {
        let mut handles = Vec::new();
        for index in indices {
            let mut claimed = false;
            self.shared.status.send_if_modified(|s| {
                match s.connections.get_mut(usize::from(index)) {
                    Some(c) if c.state == ConnectionState::Idle => {
                        c.state = ConnectionState::Waiting;
                        claimed = true;
                        true
                    }
                    _ => false,
                }
            });
            if claimed {
                let shared = Arc::clone(&self.shared);
                let handler = Rc::clone(&handler);
                handles.push(tokio::task::spawn_local(run_index(shared, index, handler)));
            }
        }
        handles
    }

    /// Runs every connection index on the current thread (see [`Tunnel::spawn_local`]).
    pub fn spawn_all_local(&self, handler: Rc<dyn TunnelHandler>) -> Vec<JoinHandle<()>> {
        self.spawn_local(self.connection_indices(), handler)
    }

    /// The status channel; [`TunnelStatus::registered`] is the readiness signal.
    pub fn status(&self) -> watch::Receiver<TunnelStatus> {
        self.shared.status.subscribe()
    }

    /// How many connections are registered right now.
    pub fn registered(&self) -> usize {
        self.shared.status.borrow().registered()
    }

    /// Starts a graceful drain with the configured grace period.
    pub fn drain(&self) {
        self.drain_with_grace(self.shared.config.grace_period);
    }

    /// Starts a graceful drain: `unregisterConnection` on every registered
    /// connection, in-flight streams served until done or until `grace` ends, then
    /// close with code 0. No connection reconnects afterwards. A second call can only
    /// shorten the deadline.
    pub fn drain_with_grace(&self, grace: Duration) {
        let deadline = Instant::now() + grace.min(MAX_GRACE_PERIOD);
        self.shared.drain.send_if_modified(|d| match d {
            Some(current) if *current <= deadline => false,
            _ => {
                *d = Some(deadline);
                true
            }
        });
        self.shared.status.send_modify(|s| s.draining = true);
    }

    /// Stops at once: a drain with no grace period.
    pub fn shutdown(&self) {
        self.drain_with_grace(Duration::ZERO);
    }

    /// Resolves when every spawned connection has stopped. `Err` if a permanent
    /// registration error stopped the tunnel, or, unasked to drain, its
    /// connections ended on permanent refusals (a tunnel deleted at the edge).
    pub async fn closed(&self) -> Result<(), Error> {
        let mut status = self.status();
        let status = status
            .wait_for(TunnelStatus::is_closed)
            .await
            .map(|s| s.clone());
        match status {
            Ok(TunnelStatus {
                failure: Some(failure),
                ..
            })
            | Ok(TunnelStatus {
                refusal: Some(failure),
                draining: false,
                ..
            }) => Err(Error::Registration {
                conn_index: failure.conn_index,
                error: failure.error,
            }),
            _ => Ok(()),
        }
    }

    /// Resolves when the tunnel stopped for good because of a permanent error, or
    /// when `registered` connections are up; the error names the refusal.
    pub async fn wait_registered(&self, registered: usize) -> Result<(), Error> {
        let mut status = self.status();
        let status = status
            .wait_for(|s| s.registered() >= registered || s.failure.is_some())
            .await
            .map(|s| s.failure.clone());
        match status {
            Ok(Some(failure)) => Err(Error::Registration {
                conn_index: failure.conn_index,
                error: failure.error,
            }),
            _ => Ok(()),
        }
    }
}

fn should_stop(status: &TunnelStatus) -> bool {
    status.draining || status.failure.is_some()
}

/// One connection index: wait for its turn, then connect, serve and reconnect.
async fn run_index(shared: Arc<Shared>, index: u8, handler: Rc<dyn TunnelHandler>) {
    let mut status = shared.status.subscribe();
    let mut drain = shared.drain.subscribe();
    if index > 0 {
        let ready = status
            .wait_for(|s| s.ever_registered || should_stop(s))
            .await
            .map(|s| should_stop(&s));
        if !matches!(ready, Ok(false)) {
            shared.set_state(index, ConnectionState::Stopped);
            return;
        }
        let stagger = shared.config.ha_stagger.saturating_mul(u32::from(index));
        tokio::select! {
            () = tokio::time::sleep(stagger) => {}
            _ = drain.changed() => {}
        }
    }
    let seed = shared.seed ^ u64::from(index + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let start = match shared.config.transport {
        Transport::Quic => reconnect::Start::Quic,
        Transport::Http2 => reconnect::Start::Http2,
        Transport::Auto => reconnect::Start::Auto,
    };
    let mut reconnect = Reconnect::new(start, shared.config.backoff, seed);
    let mut transport = transport_of(reconnect.dial());
    // Waits when no address can be had (discovery failed, none free).
    let mut no_addr = Backoff::new(shared.config.backoff, seed.rotate_left(17));
    // The address held; `None` when the next attempt needs a new one.
    let mut held: Option<SocketAddr> = None;
    let mut avoid: Option<SocketAddr> = None;
    loop {
        if should_stop(&shared.status.borrow()) {
            break;
        }
        let addr = match held {
            Some(addr) => addr,
            None => {
                shared.set_state(index, ConnectionState::Connecting);
                let acquired = tokio::select! {
                    acquired = shared.acquire(index, avoid, transport) => acquired,
                    _ = drain.changed() => continue,
                };
                match acquired {
                    Ok(addr) => {
                        no_addr.reset();
                        held = Some(addr);
                        addr
                    }
                    Err(error) => {
                        let delay = no_addr.next_delay();
                        tracing::warn!(conn_index = index, %error, ?delay, "no edge address; retrying");
                        shared.update(index, |c| {
                            c.state = ConnectionState::Backoff { delay };
                            c.last_error = Some(error.to_string());
                        });
                        tokio::select! {
                            () = tokio::time::sleep(delay) => {}
                            _ = drain.changed() => {}
                        }
                        continue;
                    }
                }
            }
        };
        shared.update(index, |c| {
            c.state = ConnectionState::Connecting;
            c.edge = Some(addr);
            c.transport = Some(transport);
        });
        let attempts = reconnect.attempts();
        let outcome = match transport {
            Transport::Http2 => {
                http2::run(&shared, index, addr, attempts, &handler, &mut drain).await
            }
            Transport::Quic | Transport::Auto => {
                connection::run(&shared, index, addr, attempts, &handler, &mut drain).await
            }
        };
        let (ended, error) = outcome.ended();
        let (edge, delay) = match reconnect.after(ended) {
            Next::Stop => break,
            Next::GiveUp(error) => {
                tracing::error!(conn_index = index, %error, "registration refused for good");
                shared.status.send_modify(|s| {
                    let failure = TunnelFailure {
                        conn_index: index,
                        error: error.clone(),
                    };
                    if !s.ever_registered && s.failure.is_none() {
                        s.failure = Some(failure.clone());
                    }
                    s.refusal = Some(failure);
                    if let Some(c) = s.connections.get_mut(usize::from(index)) {
                        c.last_error = Some(error.to_string());
                    }
                });
                break;
            }
            Next::Retry {
                dial,
                edge,
                delay,
                fell_back,
            } => {
                if fell_back {
                    tracing::info!(conn_index = index, %error, "quic cannot connect; falling back to http/2");
                }
                transport = transport_of(dial);
                (edge, delay)
            }
        };
        if should_stop(&shared.status.borrow()) {
            break;
        }
        match edge {
            Edge::Same => {}
            Edge::Another => {
                avoid = Some(addr);
                held = None;
            }
            Edge::Fresh => {
                shared.release_addr(index);
                avoid = None;
                held = None;
            }
        }
        tracing::info!(conn_index = index, %error, ?delay, "connection failed; retrying");
        shared.update(index, |c| {
            c.state = ConnectionState::Backoff { delay };
            c.attempts = reconnect.attempts();
            c.last_error = Some(error);
        });
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = drain.changed() => {}
        }
    }
    shared.release_addr(index);
    shared.set_state(index, ConnectionState::Stopped);
}

/// The driver's transport for what the reconnect state says to dial.
fn transport_of(dial: Dial) -> Transport {
    match dial {
        Dial::Quic => Transport::Quic,
        Dial::Http2 => Transport::Http2,
    }
}

#[cfg(test)]
mod tests;
