//! The `culvert` binary: parse the command line, then hand off to one command.
//!
//! A thin crate over the libraries that do the work: the data plane
//! (`culvert_proxy::Server`), the manifests' translation (`culvert_control_lite`), the
//! Kubernetes source (`culvert_kubernetes`), the controller (`culvert_controller`).
//! It owns what only a process has: the command line (`commands/`, one module per
//! command; start at `commands::Command`), the global allocator (`allocator.rs`),
//! the `tracing` subscriber (`commands/logging.rs`), and the wiring of one library into
//! another, such as Gateway API manifests on disk as the data plane's config source
//! (`manifests/`).
//!
//! No `unsafe` but the allocator's.
#![deny(unsafe_code)]

mod allocator;
#[allow(
    clippy::disallowed_methods,
    reason = "commands wait and date certificates on the real clock"
)]
mod commands;
mod manifests;

use clap::Parser;

/// mimalloc: fast thread-local allocation suits one runtime per core.
#[global_allocator]
static ALLOCATOR: allocator::Mimalloc = allocator::Mimalloc;

fn main() -> std::process::ExitCode {
    allocator::without_huge_pages();
    let command = commands::Command::parse();
    match command.run() {
        Ok(outcome) => {
            print!("{}", outcome.output);
            if outcome.success {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("culvert: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
