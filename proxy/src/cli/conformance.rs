//! `culvert conformance <DIR>`: replay the Gateway API conformance vectors in `DIR`
//! through translation and the router, and print the report. Exits non-zero when any
//! check fails.

use std::path::PathBuf;

/// Arguments of `culvert conformance`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConformanceArgs {
    /// Directory of vector files (`*.json`).
    dir: PathBuf,
}

/// Runs the replay; `Ok((report, success))`.
pub(crate) fn run(args: &ConformanceArgs) -> anyhow::Result<(String, bool)> {
    let (report, tally) =
        culvert_control_lite::conformance::run::run_dir(&args.dir).map_err(anyhow::Error::msg)?;
    Ok((report, tally.failed == 0))
}
