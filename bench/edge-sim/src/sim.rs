//! [`EdgeSim`]: binds every listener, loads or creates the CA and the tokens,
//! spawns the listeners' loops, writes the state directory, and shuts it all down.
//! The one place that knows every part of the simulator; nothing imports it.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use culvert_tunnel_proto::TunnelToken;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api::state::{Cloud, TunnelEntry};
use crate::api::{API_PREFIX, ApiFault};
use crate::ca::SimCa;
use crate::config::SimConfig;
use crate::error::Error;
use crate::random::{generate_token, random_hex};
use crate::shared::{SimShared, SimStatus};
use crate::{edge, edge_h2, http};

/// The name of the start-up tunnel in the API.
pub const STARTUP_TUNNEL_NAME: &str = "culvert-edge-sim";
/// How long binding a busy address is retried (a restarted simulator may find its
/// previous sockets not yet released).
const BIND_RETRY: Duration = Duration::from_secs(3);

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
            return Err(Error::NoEdgeListener);
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
                Some(text) => TunnelToken::parse(&text).map_err(Error::Token)?,
                None => new_token()?,
            },
            (None, None) => new_token()?,
        };
        let api_token = match (&config.api_token, dir) {
            (Some(token), _) => token.trim().to_owned(),
            (None, Some(dir)) => match read_optional(&dir.join("api-token"))? {
                Some(text) if !text.trim().is_empty() => text.trim().to_owned(),
                _ => random_hex::<20>()?,
            },
            (None, None) => random_hex::<20>()?,
        };
        if api_token.is_empty() || !api_token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::InvalidApiToken);
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
            return Err(Error::InvalidAccountId(account_id));
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
        let shared = Arc::new(SimShared::new(&config, token, cloud));
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
