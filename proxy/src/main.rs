//! The `culvert` binary: parse the command line, then hand off to one command.
#![deny(unsafe_code)]

mod allocator;
#[allow(
    clippy::disallowed_methods,
    reason = "commands wait and date certificates on the real clock"
)]
mod cli;

use clap::Parser;

/// mimalloc: fast thread-local allocation suits one runtime per core.
#[global_allocator]
static ALLOCATOR: allocator::Mimalloc = allocator::Mimalloc;

fn main() -> std::process::ExitCode {
    allocator::without_huge_pages();
    let command = cli::Command::parse();
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
