//! The `culvert` binary: parse the command line, then hand off to one command.
#![forbid(unsafe_code)]

mod cli;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let command = cli::Command::parse();
    match command.run() {
        Ok(output) => {
            print!("{output}");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("culvert: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
