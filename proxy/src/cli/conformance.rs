//! `culvert conformance <DIR> [--live]`: replay the Gateway API conformance vectors in
//! `DIR` and print the report. Without `--live`, through translation and the router
//! (no sockets); with it, over real sockets through a real data plane per file to
//! echo backends on loopback. Exits non-zero when any check fails.

use super::Outcome;
use std::path::PathBuf;

/// Arguments of `culvert conformance`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConformanceArgs {
    /// Directory of vector files (`*.json`).
    dir: PathBuf,
    /// Send every request over real sockets through `culvert serve` to echo backends
    /// (binds each Gateway's 127.0.N.1 address at the vectors' ports, a port below
    /// 1024 moved up by 20000, so no privilege is needed).
    #[arg(long)]
    live: bool,
}

/// Runs the replay; the report, successful when no check failed.
pub(crate) fn run(args: &ConformanceArgs) -> anyhow::Result<Outcome> {
    let (report, tally) = if args.live {
        culvert_proxy::live::run_dir_live(&args.dir)
    } else {
        culvert_control_lite::conformance::run::run_dir(&args.dir)
    }
    .map_err(anyhow::Error::msg)?;
    Ok(Outcome::judged(report, tally.failed == 0))
}
