//! `culvert-echo [--listen ADDR] [--name NAME] [--protocol http1|h2c|auto]`: the echo
//! backend of the conformance contract as a process, for the demo, load runs and
//! manual testing. Prints the address it listens on and serves until SIGINT or
//! SIGTERM.
#![forbid(unsafe_code)]

use std::net::SocketAddr;

use culvert_bench::{EchoBackend, EchoConfig, EchoProtocol};

fn usage() -> ! {
    eprintln!("usage: culvert-echo [--listen ADDR] [--name NAME] [--protocol http1|h2c|auto]");
    std::process::exit(2)
}

fn main() {
    let mut config = EchoConfig::new("echo");
    config.bind = SocketAddr::from(([127, 0, 0, 1], 9001));
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else { usage() };
        match flag.as_str() {
            "--listen" => config.bind = value.parse().unwrap_or_else(|_| usage()),
            "--name" => config.name = value,
            "--protocol" => {
                config.protocol = match value.as_str() {
                    "http1" => EchoProtocol::Http1,
                    "h2c" => EchoProtocol::H2c,
                    "auto" => EchoProtocol::Auto,
                    _ => usage(),
                }
            }
            _ => usage(),
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("culvert-echo: {err}");
            std::process::exit(1)
        }
    };
    runtime.block_on(async {
        let backend = match EchoBackend::start(config).await {
            Ok(backend) => backend,
            Err(err) => {
                eprintln!("culvert-echo: {err}");
                std::process::exit(1)
            }
        };
        eprintln!(
            "culvert-echo: {} listening on http://{}",
            backend.name(),
            backend.addr()
        );
        wait_for_signal().await;
        backend.shutdown().await;
    });
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
