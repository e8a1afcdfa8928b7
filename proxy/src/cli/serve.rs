//! `culvert serve`: run the data plane until SIGINT or SIGTERM.
//!
//! With `--config FILE` (a `DataPlaneConfig` JSON document; Gateway API manifests
//! come later) the file is read, parsed and compiled before anything is bound, so a
//! bad file exits non-zero with the reason. Without it, the plane waits for
//! `PUT /config` on the control address. On a signal it stops at once and exits 0;
//! draining in-flight requests is a later step.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::Context;
use culvert_proxy::{ServeConfig, Server};
use culvert_router::DataPlaneConfig;

/// Arguments of `culvert serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// DataPlaneConfig JSON file to serve from the start.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address of the config API.
    #[arg(long, default_value = "127.0.0.1:8081")]
    control: SocketAddr,
    /// Worker threads (default: available parallelism).
    #[arg(long)]
    workers: Option<NonZeroUsize>,
    /// Bearer token the config API requires (default: env CULVERT_TOKEN).
    #[arg(long)]
    token: Option<String>,
    /// Allow a non-loopback control address without a token (the control port has
    /// no TLS yet).
    #[arg(long)]
    insecure_control: bool,
}

pub(crate) fn run(args: &ServeArgs) -> anyhow::Result<(String, bool)> {
    let mut config = ServeConfig::new(args.control).with_insecure_control(args.insecure_control);
    if let Some(workers) = args.workers {
        config = config.with_workers(workers);
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
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let document: DataPlaneConfig =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        config = config.with_initial(document);
    }
    let server = Server::start(config).context("starting the data plane")?;
    eprintln!(
        "culvert: serving; config API on http://{}",
        server.control_addr()
    );
    wait_for_signal()?;
    eprintln!("culvert: stopping");
    server.shutdown();
    Ok((String::new(), true))
}

/// Blocks until SIGINT or (on Unix) SIGTERM.
fn wait_for_signal() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the signal runtime")?;
    runtime.block_on(async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
            tokio::select! {
                result = tokio::signal::ctrl_c() => result.context("listening for SIGINT")?,
                _ = terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        tokio::signal::ctrl_c()
            .await
            .context("listening for Ctrl-C")?;
        Ok(())
    })
}
