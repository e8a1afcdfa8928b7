//! The edge simulator: plays Cloudflare's side of the tunnel on loopback, for tests,
//! benchmarks and unmodified cloudflared (`culvert-edge-sim`).
//!
//! Start at [`EdgeSim::start`] with a [`SimConfig`]. It binds QUIC listeners and
//! HTTP/2 (TLS over TCP) listeners, both with a certificate for
//! `quic.cftunnel.com` and `h2.cftunnel.com` from its own CA, [`SimCa`]; accepts
//! registrations for one tunnel (its [`TunnelToken`]) on either transport;
//! forwards requests from a plain HTTP listener over new streams to registered
//! connections, and serves its status as JSON at `GET /_sim/status`. With a state
//! directory it writes `ca.pem`, `ca-key.pem`, `edge-addrs`, `h2-addrs`,
//! `http-addr` and, last, `tunnel-token` once it is listening, and reuses an
//! existing CA and token there on restart.
//!
//! Files: `edge.rs` (QUIC connections and the control stream, shared by both
//! transports), `edge_h2.rs` (HTTP/2 connections and forwarding), `http.rs` (the
//! eyeball listener), `registry.rs` (connections and events), `ca.rs`.
//!
//! It must never be exposed beyond loopback: it trusts whoever holds the token and
//! logs freely.

mod ca;
mod edge;
mod edge_h2;
mod http;
mod registry;

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use ca::SimCa;
pub use http::STATUS_PATH;
pub use registry::{SimConnection, SimConnectionState, SimTransport};

use crate::Error;
use crate::io::{random_bytes, random_uuid};
use crate::proto::TunnelToken;
use registry::Registry;

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
    /// The plain HTTP listener.
    pub http: SocketAddr,
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
    /// `ConnectionDetails.locationName`.
    pub location: String,
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
            state_dir: None,
            token: None,
            ca: None,
            log: false,
            unregister_timeout: DEFAULT_UNREGISTER_TIMEOUT,
            location: "SIM".to_owned(),
        }
    }
}

/// The simulator's status, as `GET /_sim/status` serves it.
#[derive(Debug, Clone, Serialize)]
pub struct SimStatus {
    /// The tunnel it accepts.
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
    token: TunnelToken,
    location: String,
    unregister_timeout: Duration,
    registry: Mutex<Registry>,
}

impl SimShared {
    /// The registry; never hold the guard across an `.await`.
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        let token = match (&config.token, dir) {
            (Some(token), _) => token.clone(),
            (None, Some(dir)) => match read_optional(&dir.join("tunnel-token"))? {
                Some(text) => TunnelToken::parse(&text)?,
                None => generate_token()?,
            },
            (None, None) => generate_token()?,
        };
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
        let shared = Arc::new(SimShared {
            token,
            location: config.location.clone(),
            unregister_timeout: config.unregister_timeout,
            registry: Mutex::new(Registry::new(config.log)),
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
            shutdown.subscribe(),
        )));
        let sim = Self {
            quic_addrs,
            h2_addrs,
            http_addr,
            ca,
            shared,
            shutdown,
            endpoints,
            tasks,
        };
        sim.shared.event(format!(
            "listening: quic {:?}, http/2 {:?}, http {}, tunnel {}",
            sim.quic_addrs, sim.h2_addrs, sim.http_addr, sim.shared.token.tunnel_id
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

    /// The token this simulator accepts.
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
