//! The edge simulator: plays Cloudflare's side of the tunnel on loopback, for tests,
//! benchmarks and unmodified cloudflared (`culvert-edge-sim`), and the part of the
//! Cloudflare v4 API that manages tunnels and DNS.
//!
//! Start at [`EdgeSim::start`] with a [`SimConfig`]. It binds QUIC listeners and
//! HTTP/2 (TLS over TCP) listeners, both with a certificate for
//! `quic.cftunnel.com`, `h2.cftunnel.com` and `probe.cftunnel.com` from its own CA,
//! [`SimCa`]; accepts registrations on either transport for every tunnel it knows:
//! the start-up one (its [`TunnelToken`]) and those created through the API, as long
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
//! Files: `edge.rs` (QUIC connections and the control stream, shared by both
//! transports, and registration), `edge_h2.rs` (HTTP/2 connections and
//! forwarding), `http.rs` (the front door and the API listener's loop), `route.rs`
//! (front-door routing), `api/` (the API and the account state), `registry.rs`
//! (connections and events), `ca.rs`.
//!
//! It must never be exposed beyond loopback: it trusts whoever holds a token and
//! logs freely.

mod api;
mod ca;
mod edge;
mod edge_h2;
mod http;
mod registry;
mod route;

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use api::{API_PREFIX, ApiFault, DEFAULT_API_MAX_PER_PAGE, FAULTS_PATH};
pub use ca::SimCa;
pub use http::STATUS_PATH;
pub use registry::{SimConnection, SimConnectionState, SimTransport};

use crate::Error;
use crate::io::{random_bytes, random_uuid};
use crate::proto::TunnelToken;
use api::{Cloud, TunnelEntry};
use registry::Registry;

/// The name of the start-up tunnel in the API.
pub const STARTUP_TUNNEL_NAME: &str = "culvert-edge-sim";
/// How long an unregister reply may wait for in-flight streams by default.
pub const DEFAULT_UNREGISTER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long binding a busy address is retried (a restarted simulator may find its
/// previous sockets not yet released).
const BIND_RETRY: Duration = Duration::from_secs(3);

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

/// The simulator's status, as `GET /_sim/status` serves it.
#[derive(Debug, Clone, Serialize)]
pub struct SimStatus {
    /// The start-up tunnel (more may be created through the API).
    pub tunnel_id: String,
    /// Its account tag.
    pub account_tag: String,
    /// Every connection, registered or not.
    pub connections: Vec<SimConnection>,
    /// The event log (registrations, refusals, unregisters, closes), oldest first.
    pub events: Vec<String>,
}

impl SimStatus {
    /// Connections currently registered (not draining).
    pub fn registered(&self) -> usize {
        self.connections
            .iter()
            .filter(|c| c.state == SimConnectionState::Registered)
            .count()
    }
}

/// State shared by the simulator's tasks.
pub(crate) struct SimShared {
    /// The start-up tunnel's token (the default route of the front door).
    token: TunnelToken,
    location: String,
    unregister_timeout: Duration,
    api_max_per_page: u32,
    registry: Mutex<Registry>,
    /// The account: tunnels, zones, records. Never held across an `.await`; when
    /// both are needed, this one is taken after the registry's guard was dropped.
    cloud: Mutex<Cloud>,
}

impl SimShared {
    /// The registry; never hold the guard across an `.await`.
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The account; never hold the guard across an `.await`.
    fn cloud(&self) -> MutexGuard<'_, Cloud> {
        self.cloud
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add_api_faults(&self, faults: impl IntoIterator<Item = ApiFault>) {
        self.cloud().faults.extend(faults);
    }

    fn event(&self, line: String) {
        self.registry().event(line);
    }

    fn status(&self) -> SimStatus {
        let (connections, events) = self.registry().snapshot();
        SimStatus {
            tunnel_id: self.token.tunnel_id.to_string(),
            account_tag: self.token.account_tag.clone(),
            connections,
            events,
        }
    }
}

/// A running simulator. Stop it with [`EdgeSim::shutdown`].
pub struct EdgeSim {
    quic_addrs: Vec<SocketAddr>,
    h2_addrs: Vec<SocketAddr>,
    http_addr: SocketAddr,
    api_addr: SocketAddr,
    ca: SimCa,
    shared: Arc<SimShared>,
    shutdown: watch::Sender<bool>,
    endpoints: Vec<quinn::Endpoint>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for EdgeSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeSim")
            .field("quic", &self.quic_addrs)
            .field("h2", &self.h2_addrs)
            .field("http", &self.http_addr)
            .field("api", &self.api_addr)
            .finish_non_exhaustive()
    }
}

/// A new token: random account tag, 32-byte secret and tunnel ID.
pub fn generate_token() -> Result<TunnelToken, Error> {
    let account: String = random_bytes::<16>()?
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(TunnelToken {
        account_tag: account,
        tunnel_secret: random_bytes::<32>()?.to_vec(),
        tunnel_id: random_uuid()?,
        endpoint: None,
    })
}

fn io_error(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

fn read_optional(path: &Path) -> Result<Option<String>, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(format!("reading {}", path.display()))(e)),
    }
}

/// Writes `contents` to `dir/name` through a temporary file and a rename, so a
/// reader polling for the file never sees it half written.
fn write_atomic(dir: &Path, name: &str, contents: &str) -> Result<(), Error> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    std::fs::write(&tmp, contents).map_err(io_error(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, &path).map_err(io_error(format!("renaming to {}", path.display())))
}

async fn bind_quic(
    config: quinn::ServerConfig,
    addr: SocketAddr,
) -> Result<quinn::Endpoint, Error> {
    let deadline = tokio::time::Instant::now() + BIND_RETRY;
    loop {
        match quinn::Endpoint::server(config.clone(), addr) {
            Ok(endpoint) => return Ok(endpoint),
            Err(e)
                if e.kind() == ErrorKind::AddrInUse && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(io_error(format!("binding quic listener {addr}"))(e)),
        }
    }
}

async fn bind_tcp(addr: SocketAddr, what: &str) -> Result<TcpListener, Error> {
    let deadline = tokio::time::Instant::now() + BIND_RETRY;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(e)
                if e.kind() == ErrorKind::AddrInUse && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(io_error(format!("binding {what} listener {addr}"))(e)),
        }
    }
}

impl EdgeSim {
    /// Binds every listener, then writes the state directory (if any) and returns.
    pub async fn start(config: SimConfig) -> Result<Self, Error> {
        if config.quic.is_empty() && config.h2.is_empty() {
            return Err(Error::Config(
                "the simulator needs at least one quic or http/2 address".into(),
            ));
        }
        let dir = config.state_dir.as_deref();
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir)
                .map_err(io_error(format!("creating {}", dir.display())))?;
        }
        let ca = match (&config.ca, dir) {
            (Some(ca), _) => ca.clone(),
            (None, Some(dir)) => match (
                read_optional(&dir.join("ca.pem"))?,
                read_optional(&dir.join("ca-key.pem"))?,
            ) {
                (Some(cert_pem), Some(key_pem)) => SimCa { cert_pem, key_pem },
                _ => SimCa::generate()?,
            },
            (None, None) => SimCa::generate()?,
        };
        let new_token = || -> Result<TunnelToken, Error> {
            // A new start-up tunnel belongs to the configured account.
            let mut token = generate_token()?;
            if let Some(account) = &config.account_id {
                token.account_tag.clone_from(account);
            }
            Ok(token)
        };
        let token = match (&config.token, dir) {
            (Some(token), _) => token.clone(),
            (None, Some(dir)) => match read_optional(&dir.join("tunnel-token"))? {
                Some(text) => TunnelToken::parse(&text)?,
                None => new_token()?,
            },
            (None, None) => new_token()?,
        };
        let api_token = match (&config.api_token, dir) {
            (Some(token), _) => token.trim().to_owned(),
            (None, Some(dir)) => match read_optional(&dir.join("api-token"))? {
                Some(text) if !text.trim().is_empty() => text.trim().to_owned(),
                _ => api::random_hex::<20>()?,
            },
            (None, None) => api::random_hex::<20>()?,
        };
        if api_token.is_empty() || !api_token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::Config(
                "the api token must be printable ascii without spaces".into(),
            ));
        }
        let account_id = config
            .account_id
            .clone()
            .unwrap_or_else(|| token.account_tag.clone());
        if config.account_id.is_some()
            && !(account_id.len() == 32
                && account_id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        {
            return Err(Error::Config(format!(
                "account id {account_id:?} is not 32 lowercase hex characters"
            )));
        }
        let startup = TunnelEntry::new(&token, STARTUP_TUNNEL_NAME, "cloudflare");
        let mut cloud = Cloud::new(account_id, api_token, &config.zones, startup)?;
        cloud.faults.extend(config.api_faults.iter().copied());
        let server_config = ca.server_config()?;
        let mut endpoints = Vec::new();
        let mut quic_addrs = Vec::new();
        for addr in &config.quic {
            let endpoint = bind_quic(server_config.clone(), *addr).await?;
            let local = endpoint
                .local_addr()
                .map_err(io_error(format!("quic listener {addr}")))?;
            quic_addrs.push(local);
            endpoints.push(endpoint);
        }
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.h2_server_config()?);
        let mut h2_listeners = Vec::new();
        let mut h2_addrs = Vec::new();
        for addr in &config.h2 {
            let listener = bind_tcp(*addr, "http/2").await?;
            let local = listener
                .local_addr()
                .map_err(io_error(format!("http/2 listener {addr}")))?;
            h2_addrs.push(local);
            h2_listeners.push(listener);
        }
        let http_listener = bind_tcp(config.http, "http").await?;
        let http_addr = http_listener
            .local_addr()
            .map_err(io_error(format!("http listener {}", config.http)))?;
        let api_listener = bind_tcp(config.api, "api").await?;
        let api_addr = api_listener
            .local_addr()
            .map_err(io_error(format!("api listener {}", config.api)))?;
        let shared = Arc::new(SimShared {
            token,
            location: config.location.clone(),
            unregister_timeout: config.unregister_timeout,
            api_max_per_page: config.api_max_per_page,
            registry: Mutex::new(Registry::new(config.log)),
            cloud: Mutex::new(cloud),
        });
        let (shutdown, _) = watch::channel(false);
        let mut tasks = Vec::new();
        for (endpoint, addr) in endpoints.iter().zip(&quic_addrs) {
            tasks.push(tokio::spawn(edge::accept_loop(
                Arc::clone(&shared),
                endpoint.clone(),
                *addr,
                shutdown.subscribe(),
            )));
        }
        for (listener, addr) in h2_listeners.into_iter().zip(&h2_addrs) {
            tasks.push(tokio::spawn(edge_h2::accept_loop(
                Arc::clone(&shared),
                listener,
                acceptor.clone(),
                *addr,
                shutdown.subscribe(),
            )));
        }
        tasks.push(tokio::spawn(http::accept_loop(
            Arc::clone(&shared),
            http_listener,
            http::Listener::FrontDoor,
            shutdown.subscribe(),
        )));
        tasks.push(tokio::spawn(http::accept_loop(
            Arc::clone(&shared),
            api_listener,
            http::Listener::Api,
            shutdown.subscribe(),
        )));
        let sim = Self {
            quic_addrs,
            h2_addrs,
            http_addr,
            api_addr,
            ca,
            shared,
            shutdown,
            endpoints,
            tasks,
        };
        sim.shared.event(format!(
            "listening: quic {:?}, http/2 {:?}, http {}, api {}, tunnel {}",
            sim.quic_addrs, sim.h2_addrs, sim.http_addr, sim.api_addr, sim.shared.token.tunnel_id
        ));
        if let Some(dir) = dir {
            sim.write_state(dir)?;
        }
        Ok(sim)
    }

    fn write_state(&self, dir: &Path) -> Result<(), Error> {
        let addrs: String = self.quic_addrs.iter().map(|a| format!("{a}\n")).collect();
        write_atomic(dir, "edge-addrs", &addrs)?;
        let h2: String = self.h2_addrs.iter().map(|a| format!("{a}\n")).collect();
        write_atomic(dir, "h2-addrs", &h2)?;
        write_atomic(dir, "http-addr", &format!("{}\n", self.http_addr))?;
        write_atomic(dir, "api-addr", &format!("{}\n", self.api_addr))?;
        write_atomic(dir, "api-token", &format!("{}\n", self.api_token()))?;
        write_atomic(dir, "ca-key.pem", &self.ca.key_pem)?;
        write_atomic(dir, "ca.pem", &self.ca.cert_pem)?;
        // Last: its presence means everything else is in place.
        write_atomic(
            dir,
            "tunnel-token",
            &format!("{}\n", self.shared.token.encode()),
        )
    }

    /// The bound QUIC listener addresses (pass them as `--edge`).
    pub fn quic_addrs(&self) -> &[SocketAddr] {
        &self.quic_addrs
    }

    /// The bound HTTP/2 listener addresses (a connector's `h2_edges`).
    pub fn h2_addrs(&self) -> &[SocketAddr] {
        &self.h2_addrs
    }

    /// The bound HTTP listener address.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// The bound API listener address.
    pub fn api_addr(&self) -> SocketAddr {
        self.api_addr
    }

    /// The API's base URL, `http://<api addr>/client/v4`.
    pub fn api_base(&self) -> String {
        format!("http://{}{API_PREFIX}", self.api_addr)
    }

    /// The API token the simulated API accepts (`Authorization: Bearer ...`).
    pub fn api_token(&self) -> String {
        self.shared.cloud().api_token.clone()
    }

    /// The simulated account's ID.
    pub fn account_id(&self) -> String {
        self.shared.cloud().account_id.clone()
    }

    /// The account's zones: `(id, name)`.
    pub fn zones(&self) -> Vec<(String, String)> {
        self.shared
            .cloud()
            .zones
            .iter()
            .map(|z| (z.id.clone(), z.name.clone()))
            .collect()
    }

    /// Queues faults that the next API requests answer with, one each.
    pub fn add_api_faults(&self, faults: impl IntoIterator<Item = ApiFault>) {
        self.shared.add_api_faults(faults);
    }

    /// The start-up token: the tunnel the front door serves by default.
    pub fn token(&self) -> &TunnelToken {
        &self.shared.token
    }

    /// The CA (trust its `cert_pem`; reuse it to restart with the same identity).
    pub fn ca(&self) -> &SimCa {
        &self.ca
    }

    /// A snapshot of the status endpoint's data.
    pub fn status(&self) -> SimStatus {
        self.shared.status()
    }

    /// Closes every connection with code 0, stops the listeners and waits (bounded)
    /// for the sockets to be released.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let connections = self.shared.registry().quic_connections();
        for conn in connections {
            conn.close(quinn::VarInt::from_u32(0), b"");
        }
        for task in self.tasks {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(3), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        for endpoint in &self.endpoints {
            endpoint.close(quinn::VarInt::from_u32(0), b"");
        }
        for endpoint in &self.endpoints {
            let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
        }
    }
}
