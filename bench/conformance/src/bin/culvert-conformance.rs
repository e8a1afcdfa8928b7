//! `culvert-conformance <DIR> [--live]`: replay the Gateway API conformance vectors
//! in `DIR` and print the report. Without `--live`, through translation and the
//! router (no sockets); with it, over real sockets through a real data plane per
//! file to echo backends on loopback. Exits non-zero when any check fails, 2 when
//! the vectors cannot be read.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Replay Gateway API conformance vectors against Culvert.
#[derive(Debug, Parser)]
#[command(name = "culvert-conformance", version, about)]
struct Args {
    /// Directory of vector files (`*.json`).
    dir: PathBuf,
    /// Send every request over real sockets through `culvert serve` to echo backends
    /// (binds each Gateway's 127.0.N.1 address at the vectors' ports, a port below
    /// 1024 moved up by 20000, so no privilege is needed).
    #[arg(long)]
    live: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let ran = if args.live {
        culvert_conformance::live::run_dir_live(&args.dir)
    } else {
        culvert_conformance::run::run_dir(&args.dir)
    };
    match ran {
        Ok((report, tally)) => {
            print!("{report}");
            if tally.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("culvert-conformance: {error}");
            ExitCode::from(2)
        }
    }
}
