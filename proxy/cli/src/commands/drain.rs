//! `culvert drain`: ask a running `culvert serve` to drain, through its config API
//! (`POST /drain` with the bearer token), over HTTP or HTTPS.
//!
//! The Kubernetes preStop hook runs it (the image has no shell and no curl), with
//! `--wait`: it then polls `/metrics` until no request is in flight and no client
//! connection is open, or until the API stops answering because the plane has
//! drained and exited. The kubelet's SIGTERM, which `culvert serve` would take as
//! a second signal and stop at once, then finds nothing left to finish.
//!
//! The address and the token come from the flags or from the environment the
//! DaemonSet sets (`CULVERT_CONTROL`, `CULVERT_TOKEN`). It prints the answer and
//! exits non-zero unless the plane accepted (and, with `--wait`, finished) the
//! drain. Start at [`run`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Outcome;
use anyhow::Context;
use bytes::Bytes;
use culvert_router::parse_duration;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// Config API address when neither `--control` nor `CULVERT_CONTROL` names one.
const DEFAULT_CONTROL: &str = "127.0.0.1:8081";

/// How often `--wait` looks at the plane.
const POLL: Duration = Duration::from_millis(250);

/// How long one request (connect, TLS, answer) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `culvert drain`.
#[derive(Debug, clap::Args)]
pub(crate) struct DrainArgs {
    /// The config API: `host:port`, `http://host:port` or `https://host:port`
    /// (default: env CULVERT_CONTROL, else 127.0.0.1:8081). A bare `host:port` is
    /// HTTPS when --ca-file is given.
    #[arg(long)]
    control: Option<String>,
    /// File holding the bearer token (trimmed; default: env CULVERT_TOKEN).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Trust only the certificates in this PEM file (the plane's own self-signed
    /// certificate will do).
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// Name the certificate must be valid for (default: the host of --control).
    #[arg(long)]
    server_name: Option<String>,
    /// Wait until the plane has drained: nothing in flight and no connection open,
    /// or the plane has exited.
    #[arg(long)]
    wait: bool,
    /// Give up after this long (`40s`, `500ms`).
    #[arg(long, default_value = "40s", value_parser = parse_timeout)]
    timeout: Duration,
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

/// Where the config API is and how to reach it.
struct Target {
    /// `host:port` to connect to.
    authority: String,
    /// `None` for plain HTTP.
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    /// The bearer token, if any.
    token: Option<String>,
}

pub(crate) fn run(args: &DrainArgs) -> anyhow::Result<Outcome> {
    let target = target(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the runtime")?;
    runtime.block_on(async {
        let deadline = Instant::now() + args.timeout;
        let (status, body) = tokio::time::timeout(args.timeout, request(&target, Method::POST))
            .await
            .context("the config API did not answer in time")?
            .with_context(|| format!("POST /drain to {}", target.authority))?;
        let mut out = format!(
            "POST /drain: {status} {}\n",
            String::from_utf8_lossy(&body).trim_end()
        );
        if !status.is_success() {
            return Ok(Outcome::judged(out, false));
        }
        if !args.wait {
            return Ok(Outcome::success(out));
        }
        let drained = wait_drained(&target, deadline).await;
        out.push_str(drained.message());
        out.push('\n');
        Ok(Outcome::judged(out, !matches!(drained, Drained::TimedOut)))
    })
}

/// How waiting for the drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Drained {
    /// The metrics showed no request in flight and no connection open, twice in a
    /// row.
    Idle,
    /// The config API stopped answering: the plane finished and exited.
    Exited,
    /// Neither before the deadline.
    TimedOut,
}

impl Drained {
    fn message(self) -> &'static str {
        match self {
            Self::Idle => "drained: nothing in flight, no connection open",
            Self::Exited => "drained: the plane has exited",
            Self::TimedOut => "still draining at the deadline",
        }
    }
}

/// Polls `/metrics` until the plane is idle (seen twice, so a connection accepted
/// just before the listeners closed is not missed) or gone.
async fn wait_drained(target: &Target, deadline: Instant) -> Drained {
    let mut idle_before = false;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Drained::TimedOut;
        }
        let left = deadline - now;
        match tokio::time::timeout(left, request(target, Method::GET)).await {
            Err(_) => return Drained::TimedOut,
            // Refused or reset: the plane has drained and exited.
            Ok(Err(_)) => return Drained::Exited,
            Ok(Ok((status, body))) => {
                let idle = status.is_success() && is_idle(&String::from_utf8_lossy(&body));
                if idle && idle_before {
                    return Drained::Idle;
                }
                idle_before = idle;
            }
        }
        tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
}

/// Whether a Prometheus exposition shows no request in flight, no client
/// connection and no tunnel connection.
fn is_idle(metrics: &str) -> bool {
    const GAUGES: [&str; 3] = [
        "culvert_requests_in_flight",
        "culvert_open_connections",
        "culvert_tunnel_connections",
    ];
    let mut seen = false;
    for line in metrics.lines() {
        let Some(gauge) = GAUGES.iter().find(|name| {
            line.strip_prefix(**name)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        }) else {
            continue;
        };
        seen |= *gauge == "culvert_requests_in_flight";
        let value = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
        if value != Some(0.0) {
            return false;
        }
    }
    seen
}

/// `POST /drain` or `GET /metrics` on a fresh connection; the status and body.
async fn request(target: &Target, method: Method) -> anyhow::Result<(StatusCode, Bytes)> {
    let path = if method == Method::POST {
        "/drain"
    } else {
        "/metrics"
    };
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, &target.authority);
    if let Some(token) = &target.token {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = builder
        .body(Full::new(Bytes::new()))
        .context("building the request")?;
    let exchange = async {
        let tcp = TcpStream::connect(&target.authority)
            .await
            .with_context(|| format!("connecting to {}", target.authority))?;
        match &target.tls {
            None => send(tcp, request).await,
            Some((connector, name)) => {
                let tls = connector
                    .connect(name.clone(), tcp)
                    .await
                    .context("TLS handshake")?;
                send(tls, request).await
            }
        }
    };
    tokio::time::timeout(REQUEST_TIMEOUT, exchange)
        .await
        .context("no answer in time")?
}

async fn send<S>(io: S, request: Request<Full<Bytes>>) -> anyhow::Result<(StatusCode, Bytes)>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .context("HTTP handshake")?;
    let driver = tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .context("sending the request")?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .context("reading the answer")?
        .to_bytes();
    driver.abort();
    Ok((status, body))
}

/// The address, TLS settings and token from the flags and the environment.
fn target(args: &DrainArgs) -> anyhow::Result<Target> {
    let control = args
        .control
        .clone()
        .or_else(|| std::env::var("CULVERT_CONTROL").ok())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| DEFAULT_CONTROL.to_owned());
    let verifying = args.ca_file.is_some();
    let (https, authority) = if let Some(rest) = control.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = control.strip_prefix("http://") {
        anyhow::ensure!(!verifying, "--ca-file needs HTTPS, not {control}");
        (false, rest)
    } else {
        (verifying, control.as_str())
    };
    let authority = authority.trim_end_matches('/').to_owned();
    anyhow::ensure!(
        !authority.is_empty() && !authority.contains('/'),
        "--control {control:?} is not host:port"
    );

    let tls = if https {
        let host = args
            .server_name
            .clone()
            .unwrap_or_else(|| host_of(&authority));
        let name = ServerName::try_from(host.clone())
            .with_context(|| format!("{host:?} is not a TLS server name"))?;
        Some((tokio_rustls::TlsConnector::from(client_config(args)?), name))
    } else {
        None
    };

    let token = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None => std::env::var("CULVERT_TOKEN").ok(),
    };
    let token = token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    Ok(Target {
        authority,
        tls,
        token,
    })
}

/// The host part of `host:port` (`[::1]:8081` → `::1`).
fn host_of(authority: &str) -> String {
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _port)| host);
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned()
}

fn client_config(args: &DrainArgs) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let provider = culvert_proxy::crypto_provider();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .context("TLS versions")?;
    let config = {
        let mut roots = rustls::RootCertStore::empty();
        if let Some(path) = &args.ca_file {
            let certificates = CertificateDer::pem_file_iter(path)
                .with_context(|| format!("reading {}", path.display()))?;
            for certificate in certificates {
                let certificate =
                    certificate.with_context(|| format!("parsing {}", path.display()))?;
                roots
                    .add(certificate)
                    .with_context(|| format!("a certificate in {}", path.display()))?;
            }
            anyhow::ensure!(!roots.is_empty(), "{} holds no certificate", path.display());
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Ok(Arc::new(config))
}
