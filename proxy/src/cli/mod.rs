//! Command-line interface of the `culvert` binary: one module per command.

mod route;

use clap::{Parser, Subcommand};

/// Culvert: an edge proxy for Kubernetes Gateway API and Cloudflare Tunnel.
#[derive(Debug, Parser)]
#[command(name = "culvert", version, about)]
pub(crate) struct Command {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Compile a DataPlaneConfig and print how one request would be routed.
    Route(route::RouteArgs),
}

impl Command {
    /// Runs the chosen command and returns what it prints.
    pub(crate) fn run(self) -> anyhow::Result<String> {
        match self.action {
            Action::Route(args) => route::run(&args),
        }
    }
}
