//! `culvert serve`: run the data plane until SIGINT or SIGTERM, then drain.
//!
//! `--config PATH` serves either a `DataPlaneConfig` JSON document (a `.json` file
//! whose top level has `version` and no `kind`) or Gateway API manifests (a file or a
//! directory), translated by the embedded control plane and re-read when they change.
//! Either is loaded and compiled before anything is bound, so a bad one exits non-zero
//! with the reason. Without `--config`, the plane waits for `PUT /config`.
//!
//! With a tunnel token (`--tunnel-token-file`, `--tunnel-token` or `TUNNEL_TOKEN`),
//! it also dials the Cloudflare Tunnel edge, found by SRV discovery (in
//! `--tunnel-region`) or given with `--tunnel-edge` (the simulator, with
//! `--tunnel-ca-file`), and serves tunnel requests through the same routes;
//! `/readyz` then also waits for a registered connection.
//!
//! `--kubernetes` watches a cluster instead (see `culvert_kubernetes`): the plane
//! is not ready until every watched kind has been listed, then serves what the
//! objects say and, while it holds the Lease, writes their status.
//!
//! `--acme-directory URL` lets `HTTPS` listeners with `tls.acme` get their certificates
//! from that ACME server (HTTP-01 answered on the clear-text listeners, or TLS-ALPN-01
//! on the listener's own port), kept under `--acme-state-dir` and renewed at two thirds
//! of their lifetime.
//!
//! On the first SIGINT/SIGTERM (or `POST /drain`) it drains: readiness goes false,
//! listeners close, in-flight requests finish within `--drain-grace` (default 30 s),
//! then it exits 0. A second signal exits at once (after `POST /drain`, the first
//! signal is expected and only a second one exits).

use std::net::{SocketAddr, ToSocketAddrs};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Outcome;
use crate::manifests::ManifestSource;
use anyhow::Context;
use culvert_connector::io::{EdgeRoots, Transport, TunnelConfig};
use culvert_connector::proto::TunnelToken;
use culvert_kubernetes::{KubernetesSource, SourceConfig};
use culvert_proxy::{
    AcmeSettings, ChallengeKind, ClientLimits, ConfigApiTlsFiles, ServeConfig, Server,
};
use culvert_router::{DataPlaneConfig, parse_duration};
use culvert_wire::HeadLimits;

/// Arguments of `culvert serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Gateway API manifests (file or directory), or a DataPlaneConfig JSON file.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address of the config API.
    #[arg(long, default_value = "127.0.0.1:8081")]
    control: SocketAddr,
    /// Worker threads (default: available parallelism).
    #[arg(long)]
    workers: Option<NonZeroUsize>,
    /// Do not pin worker threads to cores (pinned by default: worker i on the i-th
    /// core this process may use).
    #[arg(long)]
    no_pin: bool,
    /// Bearer token the config API requires (default: env CULVERT_TOKEN).
    #[arg(long)]
    token: Option<String>,
    /// PEM certificate chain of the config API (HTTPS); re-read when it changes.
    #[arg(long, requires = "control_tls_key")]
    control_tls_cert: Option<PathBuf>,
    /// PEM private key of the config API.
    #[arg(long, requires = "control_tls_cert")]
    control_tls_key: Option<PathBuf>,
    /// Allow a non-loopback control address without both a token and TLS.
    #[arg(long)]
    insecure_control: bool,
    /// `controllerName` of the GatewayClasses this plane serves from manifests.
    #[arg(long, default_value = "culvert.dev/gateway-controller")]
    controller_name: String,
    /// Address Gateways get: from manifests, the address listeners bind (default
    /// `0.0.0.0`, every address); with `--kubernetes`, the address published in
    /// Gateway status when `--publish-pods` finds no pod.
    #[arg(long)]
    address: Option<String>,
    /// Watch Gateway API objects in a Kubernetes cluster, serve what they say, and
    /// write their status (while holding the Lease).
    #[arg(long, conflicts_with = "config")]
    kubernetes: bool,
    /// Kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, requires = "kubernetes")]
    kubeconfig: Option<PathBuf>,
    /// Namespace of the Lease that elects the status writer (default: env
    /// POD_NAMESPACE, else `default`).
    #[arg(long, requires = "kubernetes")]
    lease_namespace: Option<String>,
    /// Name of that Lease.
    #[arg(long, default_value = "culvert-status-writer", requires = "kubernetes")]
    lease_name: String,
    /// How long the Lease holds without renewal (`15s`).
    #[arg(long, default_value = "15s", value_parser = parse_grace, requires = "kubernetes")]
    lease_duration: Duration,
    /// This process's identity in the Lease (default: env POD_NAME, else the host
    /// name and process id).
    #[arg(long, requires = "kubernetes")]
    identity: Option<String>,
    /// Publish the host IPs of the running pods matching this label selector (in
    /// the Lease namespace) as Gateway addresses, as a DaemonSet on host ports is
    /// reached.
    #[arg(long, requires = "kubernetes")]
    publish_pods: Option<String>,
    /// Proxies in front of Culvert whose X-Forwarded-* and Forwarded headers are
    /// believed.
    #[arg(long, default_value_t = 0)]
    trusted_hops: u32,
    /// Fraction of successful requests written to the access log on stdout (one
    /// JSON line each); failures are always written.
    #[arg(long, default_value_t = 1.0)]
    access_log_sample: f64,
    /// Write no access log.
    #[arg(long)]
    no_access_log: bool,
    /// File holding a Cloudflare Tunnel token (trimmed); serves that tunnel.
    #[arg(long, conflicts_with = "tunnel_token")]
    tunnel_token_file: Option<PathBuf>,
    /// A Cloudflare Tunnel token (default: env TUNNEL_TOKEN).
    #[arg(long)]
    tunnel_token: Option<String>,
    /// Edge address `host:port` to dial (repeatable); skips discovery. Without
    /// it the edge is found as cloudflared does (SRV records of argotunnel.com,
    /// through /etc/resolv.conf's nameservers).
    #[arg(long = "tunnel-edge")]
    tunnel_edges: Vec<String>,
    /// Region of the edge to discover (cloudflared's `--region`, e.g. `us`); a
    /// token that names an endpoint already sets it.
    #[arg(long, conflicts_with = "tunnel_edges")]
    tunnel_region: Option<String>,
    /// Trust only the CAs in this PEM file for the edge (the simulator's `ca.pem`).
    #[arg(long)]
    tunnel_ca_file: Option<PathBuf>,
    /// Tunnel transport: `quic`, `http2` or `auto` (QUIC, falling back to HTTP/2
    /// over TCP to the same edge addresses when QUIC cannot connect).
    #[arg(long, default_value = "auto")]
    tunnel_protocol: String,
    /// How long in-flight requests may take to finish once draining (`30s`, `500ms`).
    #[arg(long, default_value = "30s", value_parser = parse_grace)]
    drain_grace: Duration,
    /// How long a client may take to send a request head, from the connection's
    /// start or the next request's first byte (nginx's `client_header_timeout`);
    /// a partial head then gets 408.
    #[arg(long, default_value = "30s", value_parser = parse_grace)]
    header_read_timeout: Duration,
    /// How long a connection may wait idle for its next request before it is
    /// closed (nginx's `keepalive_timeout`).
    #[arg(long, default_value = "75s", value_parser = parse_grace)]
    keepalive_timeout: Duration,
    /// Largest request head accepted, in bytes (a larger one gets 431, or 414 when
    /// the request line alone is that long); also the HTTP/2 header list size.
    #[arg(long, default_value_t = HeadLimits::DEFAULT.max_bytes())]
    max_request_head_bytes: usize,
    /// Most header fields a request head may have (more get 431).
    #[arg(long, default_value_t = HeadLimits::DEFAULT.max_fields())]
    max_request_fields: usize,
    /// Client connections one worker holds open at most (nginx's
    /// `worker_connections`); past it new connections are closed at once.
    #[arg(long, default_value_t = ClientLimits::MAX_CONNECTIONS_PER_WORKER)]
    max_connections_per_worker: usize,
    /// Longest wait between two reads of a request body (nginx's
    /// `client_body_timeout`); a body that stalls longer gets 408.
    #[arg(long, default_value = "60s", value_parser = parse_grace)]
    body_read_timeout: Duration,
    /// How long an upgraded connection (WebSocket) or a TLS passthrough connection
    /// may carry nothing either way before it is closed (HAProxy's `timeout tunnel`).
    #[arg(long, default_value = "1h", value_parser = parse_grace)]
    upgraded_idle_timeout: Duration,
    /// ACME directory URL (Let's Encrypt: `https://acme-v02.api.letsencrypt.org/directory`) that
    /// certificates of listeners with `tls.acme` come from.
    #[arg(long)]
    acme_directory: Option<String>,
    /// Contact e-mail for the ACME account (repeatable).
    #[arg(long = "acme-email", requires = "acme_directory")]
    acme_emails: Vec<String>,
    /// Where the ACME account and certificates are kept.
    #[arg(
        long,
        default_value = "/var/lib/culvert/acme",
        requires = "acme_directory"
    )]
    acme_state_dir: PathBuf,
    /// How the ACME server validates names: `http-01` (answered on the clear-text
    /// listeners, which must include port 80) or `tls-alpn-01` (on port 443).
    #[arg(long, default_value = "http-01", value_parser = parse_challenge, requires = "acme_directory")]
    acme_challenge: ChallengeKind,
    /// Extra root certificates (PEM file) trusted for the ACME directory's TLS.
    #[arg(long, requires = "acme_directory")]
    acme_ca_file: Option<PathBuf>,
}

/// An `--acme-challenge` value.
fn parse_challenge(text: &str) -> Result<ChallengeKind, String> {
    match text {
        "http-01" => Ok(ChallengeKind::Http01),
        "tls-alpn-01" => Ok(ChallengeKind::TlsAlpn01),
        other => Err(format!("{other:?} is not http-01 or tls-alpn-01")),
    }
}

/// The ACME settings, when `--acme-directory` is given.
fn acme_settings(args: &ServeArgs) -> anyhow::Result<Option<AcmeSettings>> {
    let Some(directory) = &args.acme_directory else {
        return Ok(None);
    };
    let mut settings = AcmeSettings::new(directory, &args.acme_state_dir, args.acme_challenge);
    settings.contacts.clone_from(&args.acme_emails);
    if let Some(path) = &args.acme_ca_file {
        let pem = std::fs::read_to_string(path)
            .with_context(|| format!("reading --acme-ca-file {}", path.display()))?;
        settings.trust_pem = Some(pem);
    }
    Ok(Some(settings))
}

/// A duration flag: `30s`, `500ms`, `1m`.
fn parse_grace(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

pub(crate) fn run(args: &ServeArgs) -> anyhow::Result<Outcome> {
    let mut config = ServeConfig::new(args.control)
        .with_insecure_control(args.insecure_control)
        .with_trusted_hops(args.trusted_hops)
        .with_client_limits(ClientLimits {
            header_read_timeout: args.header_read_timeout,
            keepalive_timeout: args.keepalive_timeout,
            request_head: HeadLimits::new(args.max_request_head_bytes, args.max_request_fields)?,
            max_connections_per_worker: args.max_connections_per_worker,
            body_read_timeout: args.body_read_timeout,
            upgraded_idle_timeout: args.upgraded_idle_timeout,
        })
        .with_pinned_workers(!args.no_pin)
        .with_access_log((!args.no_access_log).then_some(args.access_log_sample));
    if let (Some(certificate), Some(private_key)) = (&args.control_tls_cert, &args.control_tls_key)
    {
        config = config.with_control_tls(ConfigApiTlsFiles {
            certificate: certificate.clone(),
            private_key: private_key.clone(),
        });
    }
    if let Some(workers) = args.workers {
        config = config.with_workers(workers);
    }
    if let Some(acme) = acme_settings(args)? {
        config = config.with_acme(acme);
    }
    let token = args
        .token
        .clone()
        .or_else(|| std::env::var("CULVERT_TOKEN").ok())
        .filter(|token| !token.is_empty());
    if let Some(token) = token {
        config = config.with_token(token);
    }
    if let Some(path) = &args.config {
        config = match read_data_plane_config(path)? {
            Some(document) => config.with_initial(document),
            None => config.with_source(ManifestSource::new(
                path,
                &args.controller_name,
                args.address.as_deref().unwrap_or("0.0.0.0"),
            )),
        };
    }
    let kubernetes = if args.kubernetes {
        let source =
            KubernetesSource::start(kubernetes_config(args)).context("connecting to Kubernetes")?;
        config = config.with_published(source.configs());
        eprintln!("culvert: watching Kubernetes; ready once every kind is listed");
        Some(source)
    } else {
        None
    };
    if let Some(tunnel) = tunnel_config(args)? {
        config = config.with_tunnel(tunnel);
    }
    // Signal handlers first: a SIGTERM that arrives while the workers already serve
    // must drain, not kill the process with the default disposition.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the signal runtime")?;
    let signals = runtime.block_on(async { Signals::new() })?;
    let server = Server::start(config).context("starting the data plane")?;
    if let Some(snapshot) = server.snapshot().load_full() {
        let addrs: Vec<String> = snapshot
            .listen_addrs()
            .iter()
            .map(ToString::to_string)
            .collect();
        eprintln!(
            "culvert: serving config version {} on {}",
            snapshot.config_version,
            addrs.join(", ")
        );
    }
    eprintln!("culvert: config API on http://{}", server.control_addr());
    let drained = runtime.block_on(drain_on_signal(&server, signals, args.drain_grace));
    if !drained {
        eprintln!("culvert: stopping with requests still in flight");
    }
    server.shutdown();
    // Stops the watches and hands the Lease on.
    drop(kubernetes);
    Ok(Outcome::success(String::new()))
}

/// The Kubernetes source's settings from the command line and the pod's
/// environment (the downward API sets POD_NAME and POD_NAMESPACE).
fn kubernetes_config(args: &ServeArgs) -> SourceConfig {
    let mut config = SourceConfig::new(&args.controller_name);
    config.kubeconfig.clone_from(&args.kubeconfig);
    config.addresses = args.address.iter().cloned().collect();
    let namespace = super::pod_namespace(args.lease_namespace.as_deref(), "default");
    let lease = super::lease_config(
        &namespace,
        &args.lease_name,
        args.identity.as_deref(),
        args.lease_duration,
    );
    config.publish_pods = args
        .publish_pods
        .clone()
        .map(|selector| (namespace.clone(), selector));
    config.lease = Some(lease);
    config
}

/// The tunnel to serve, from `--tunnel-token-file`, `--tunnel-token` or
/// `TUNNEL_TOKEN`; `None` without a token.
fn tunnel_config(args: &ServeArgs) -> anyhow::Result<Option<TunnelConfig>> {
    let token = match &args.tunnel_token_file {
        Some(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None => args
            .tunnel_token
            .clone()
            .or_else(|| std::env::var("TUNNEL_TOKEN").ok()),
    };
    let Some(token) = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let transport: Transport = args.tunnel_protocol.parse().context("--tunnel-protocol")?;
    let token = TunnelToken::parse(&token).context("the tunnel token")?;
    let mut edges = Vec::new();
    for edge in &args.tunnel_edges {
        let resolved = edge
            .to_socket_addrs()
            .with_context(|| format!("resolving --tunnel-edge {edge}"))?;
        edges.extend(resolved);
    }
    let mut config = TunnelConfig::new(token, edges);
    config.discovery.region.clone_from(&args.tunnel_region);
    if let Some(ca) = &args.tunnel_ca_file {
        config.roots = EdgeRoots::CaFile(ca.clone());
    }
    config.grace_period = args.drain_grace;
    config.transport = transport;
    Ok(Some(config))
}

/// A `.json` file whose top level has `version` and no `kind`: a DataPlaneConfig.
fn read_data_plane_config(path: &Path) -> anyhow::Result<Option<DataPlaneConfig>> {
    let is_json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    if !is_json || path.is_dir() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if value.get("kind").is_some() || value.get("version").is_none() {
        return Ok(None);
    }
    let document = serde_json::from_value(value)
        .with_context(|| format!("{} is not a DataPlaneConfig", path.display()))?;
    Ok(Some(document))
}

/// Waits for a signal or `POST /drain`, drains within `grace`, and returns whether
/// every worker drained in time. A signal during the drain gives up at once, unless
/// the drain began with `POST /drain`: then the first signal is the one Kubernetes
/// sends after a `preStop` hook that asked for the drain, and only a second one
/// gives up.
async fn drain_on_signal(server: &Server, mut signals: Signals, grace: Duration) -> bool {
    let mut signals_to_give_up = tokio::select! {
        () = signals.next() => {
            eprintln!("culvert: signal received; draining (grace {grace:?})");
            1
        }
        () = server.drain_requested() => {
            eprintln!("culvert: drain requested; draining (grace {grace:?})");
            2
        }
    };
    server.start_drain();
    let deadline = tokio::time::sleep(grace);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = server.wait_drained() => {
                eprintln!("culvert: drained");
                return true;
            }
            () = &mut deadline => return false,
            () = signals.next() => {
                signals_to_give_up -= 1;
                if signals_to_give_up == 0 {
                    return false;
                }
                eprintln!("culvert: signal received; still draining");
            }
        }
    }
}

/// SIGINT and SIGTERM as one stream; the handlers are installed on creation (which
/// must happen inside a tokio runtime).
pub(super) struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub(super) fn new() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
        })
    }

    pub(super) async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
