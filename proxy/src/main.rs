//! The `culvert` binary: parse the command line, then hand off to one command.
#![forbid(unsafe_code)]

mod cli;

use clap::Parser;

/// mimalloc: fast thread-local allocation suits one runtime per core.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let command = cli::Command::parse();
    match command.run() {
        Ok((output, success)) => {
            print!("{output}");
            if success {
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
