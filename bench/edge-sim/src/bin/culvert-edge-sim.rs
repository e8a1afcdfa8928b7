//! `culvert-edge-sim`: the edge simulator as a program (see `culvert_edge_sim`).
//!
//! Parses the command line, starts the simulator, prints where it listens and runs
//! until SIGINT or SIGTERM. Everything else lives in the library.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;
use culvert_connector::proto::TunnelToken;
use culvert_edge_sim::{EdgeSim, STATUS_PATH, SimConfig};

/// Plays Cloudflare's edge for Cloudflare Tunnel connectors, on loopback.
#[derive(Debug, Parser)]
#[command(name = "culvert-edge-sim", version)]
struct Args {
    /// QUIC listener addresses (one per HA connection; port 0 picks a free port).
    #[arg(long = "quic", value_name = "ADDR", num_args = 1.., required_unless_present = "h2")]
    quic: Vec<SocketAddr>,
    /// HTTP/2 (TLS over TCP) listener addresses, one per HA connection.
    #[arg(long = "h2", value_name = "ADDR", num_args = 1..)]
    h2: Vec<SocketAddr>,
    /// Plain HTTP listener that forwards requests through the tunnel.
    #[arg(long, value_name = "ADDR")]
    http: SocketAddr,
    /// Listener of the simulated Cloudflare v4 API (`/client/v4/...`); port 0 picks one.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    api: SocketAddr,
    /// A zone of the simulated account (repeatable); its ID is generated.
    #[arg(long = "zone", value_name = "NAME")]
    zones: Vec<String>,
    /// The simulated account's ID (32 lowercase hex); default: the start-up token's
    /// account tag.
    #[arg(long = "account-id", value_name = "ID")]
    account_id: Option<String>,
    /// Accept the API token in this file instead of the state directory's (or a new one).
    #[arg(long = "api-token-file", value_name = "FILE")]
    api_token_file: Option<PathBuf>,
    /// Directory for ca.pem, ca-key.pem, edge-addrs, h2-addrs, http-addr, api-addr,
    /// api-token and tunnel-token.
    #[arg(long = "state-dir", value_name = "DIR")]
    state_dir: PathBuf,
    /// Accept the token in this file instead of the state directory's (or a new one).
    #[arg(long = "token-file", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Do not log events to stderr.
    #[arg(long)]
    quiet: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let token = match &args.token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Some(TunnelToken::parse(&text).with_context(|| format!("parsing {}", path.display()))?)
        }
        None => None,
    };
    let api_token = match &args.api_token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let config = SimConfig {
        quic: args.quic,
        h2: args.h2,
        http: args.http,
        api: args.api,
        zones: args.zones,
        account_id: args.account_id,
        api_token,
        state_dir: Some(args.state_dir.clone()),
        token,
        log: !args.quiet,
        ..SimConfig::loopback()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let sim = EdgeSim::start(config).await?;
        for addr in sim.quic_addrs() {
            println!("quic {addr}");
        }
        for addr in sim.h2_addrs() {
            println!("h2 {addr}");
        }
        println!("http {}", sim.http_addr());
        println!("status http://{}{STATUS_PATH}", sim.http_addr());
        println!("api {}", sim.api_base());
        println!("account {}", sim.account_id());
        for (id, name) in sim.zones() {
            println!("zone {name} {id}");
        }
        println!("state {}", args.state_dir.display());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        sim.shutdown().await;
        Ok(())
    })
}
