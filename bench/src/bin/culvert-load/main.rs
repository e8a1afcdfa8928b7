//! `culvert-load`: a load generator for runs with a new connection per request, over
//! TCP or TLS with session resumption.
//!
//! Open loop (`--rate`): connections start at a fixed rate however fast the answers
//! come, so a server that falls behind shows as latency instead of slowing the load
//! down (wrk's closed loop lets a slow server, or a load generator short of CPU, set
//! the pace). Closed loop (`--connections`): wrk's model, a fixed number of
//! connections each followed by the next. Each connection sends one `GET` with
//! `Connection: close` and reads the whole response; its latency runs from the
//! connect call to the response's last byte, so the TCP and TLS handshakes are inside
//! it. wrk starts its clock after them, when the request goes out; that latency is
//! reported too, for comparing with wrk's.
//!
//! ```text
//! culvert-load --url URL (--rate N | --connections N) --duration SECS
//!              [--warmup SECS] [--ca PEM] [--server-name NAME] [--timeout SECS]
//! ```
//!
//! Prints a summary, then one `result` line of `key=value` pairs for scripts.
#![forbid(unsafe_code)]

mod exchange;
mod options;
mod run;
mod stats;
mod tickets;

fn main() {
    let options = match options::Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("culvert-load: {message}\n{}", options::USAGE);
            std::process::exit(2)
        }
    };
    match run::run(&options) {
        Ok(report) => {
            println!("{}", report.summary(&options));
            println!("{}", report.result_line());
        }
        Err(message) => {
            eprintln!("culvert-load: {message}");
            std::process::exit(1)
        }
    }
}
