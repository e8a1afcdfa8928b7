//! Command-line interface of the `culvert` binary: one module per command.

mod controller;
mod drain;
mod install;
mod logging;
mod render_planes;
mod route;
mod serve;
mod validate;

use clap::{Parser, Subcommand};

/// Culvert: an edge proxy for Kubernetes Gateway API and Cloudflare Tunnel.
#[derive(Debug, Parser)]
#[command(name = "culvert", version, about)]
pub(crate) struct Command {
    /// Diagnostics on stderr: a `tracing` filter such as `info` or
    /// `warn,culvert_kubernetes=debug` (default: env RUST_LOG, else warnings, and
    /// lifecycle messages of Culvert's own parts).
    #[arg(long, global = true)]
    log_level: Option<String>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Compile a DataPlaneConfig and print how one request would be routed.
    Route(route::RouteArgs),
    /// Translate Gateway API manifests and print the conditions every object gets.
    Validate(validate::ValidateArgs),
    /// Run the data plane until SIGINT or SIGTERM.
    Serve(Box<serve::ServeArgs>),
    /// Run the control plane alone: watch, write status, and run the dedicated
    /// data planes Gateways ask for.
    Controller(controller::ControllerArgs),
    /// Print the Kubernetes manifests that install Culvert (for `kubectl apply -f -`).
    Install(install::InstallArgs),
    /// Ask a running `culvert serve` to drain, through its config API.
    Drain(drain::DrainArgs),
}

/// What a command that ran to its end leaves: the text it prints on stdout, and
/// whether it succeeded (the exit status), which a report can deny (an invalid
/// manifest, a drain that timed out).
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) output: String,
    pub(crate) success: bool,
}

impl Outcome {
    /// `output`, and success.
    pub(crate) fn success(output: String) -> Self {
        Self {
            output,
            success: true,
        }
    }

    /// `output`, and success only when `success` says so.
    pub(crate) fn judged(output: String, success: bool) -> Self {
        Self { output, success }
    }
}

impl Command {
    /// Runs the chosen command.
    pub(crate) fn run(self) -> anyhow::Result<Outcome> {
        logging::install(self.log_level.as_deref())?;
        match self.action {
            Action::Route(args) => route::run(&args).map(Outcome::success),
            Action::Validate(args) => validate::run(&args),
            Action::Serve(args) => serve::run(&args),
            Action::Controller(args) => controller::run(&args),
            Action::Install(args) => install::run(&args),
            Action::Drain(args) => drain::run(&args),
        }
    }
}

/// The namespace given, else the pod's own (the downward API's POD_NAMESPACE),
/// else `fallback`.
fn pod_namespace(given: Option<&str>, fallback: &str) -> String {
    given
        .map(str::to_owned)
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .unwrap_or_else(|| fallback.to_owned())
}

/// The Lease `namespace/name` held for `duration` (renewed every seventh of it),
/// as `identity`, else the pod's name (POD_NAME), else the host name and process id.
fn lease_config(
    namespace: &str,
    name: &str,
    identity: Option<&str>,
    duration: std::time::Duration,
) -> culvert_kubernetes::LeaseConfig {
    let identity = identity
        .map(str::to_owned)
        .or_else(|| std::env::var("POD_NAME").ok())
        .unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            format!("{}-{}", host.trim(), std::process::id())
        });
    let mut lease = culvert_kubernetes::LeaseConfig::new(namespace, name, &identity);
    lease.duration = duration;
    lease.retry = (duration / 7).max(std::time::Duration::from_millis(200));
    lease
}
