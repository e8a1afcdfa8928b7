//! The binary's diagnostics: every `tracing` event of every crate (the tunnel
//! connector, the Kubernetes source, kube-rs) goes to stderr, as human-readable
//! lines on a terminal and as one JSON object per line otherwise (a container's
//! log). The level comes from `--log-level`, else `RUST_LOG`, else [`DEFAULT`].
//! Request access logs are separate (stdout, `access_log`). Panics are logged here
//! too, as errors (`culvert_proxy::install_panic_hook`).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// Warnings from everything, lifecycle (`info`) from Culvert's own crates.
pub(crate) const DEFAULT: &str =
    "warn,culvert_kubernetes=info,culvert_connector=info,culvert_proxy=info,culvert_acme=info";

/// Installs the process-wide subscriber. A filter that does not parse is an error
/// (so a typo is not silently "log nothing").
pub(crate) fn install(level: Option<&str>) -> anyhow::Result<()> {
    let filter =
        match level {
            Some(level) => EnvFilter::try_new(level)
                .map_err(|e| anyhow::anyhow!("--log-level {level:?}: {e}"))?,
            None => match std::env::var("RUST_LOG") {
                Ok(env) if !env.is_empty() => EnvFilter::try_new(&env)
                    .map_err(|e| anyhow::anyhow!("RUST_LOG {env:?}: {e}"))?,
                _ => EnvFilter::new(DEFAULT),
            },
        };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = if std::io::stderr().is_terminal() {
        builder.try_init()
    } else {
        builder.json().try_init()
    };
    installed.map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))?;
    culvert_proxy::install_panic_hook();
    Ok(())
}
