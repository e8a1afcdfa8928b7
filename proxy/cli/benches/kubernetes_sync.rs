//! From an HTTPRoute change in the API server to the new route serving: a fake API
//! server holding `--routes` HTTPRoutes (default 1,000), the Kubernetes source, and
//! a data plane serving what it publishes, in one process on loopback. Each of
//! `--changes` edits (default 1,000) gives one route a new hostname; the clock runs
//! from the write to the first `200` for that hostname through the plane (polled
//! every millisecond, each probe a new connection). Prints the median, p99 and
//! largest latency, and the live heap of the source's mirror of that cluster
//! (objects and stored statuses) and of its translation, per 1,000 routes.
//!
//! `cargo bench -p culvert --bench kubernetes_sync -- --routes 10000`
#![allow(
    missing_docs,
    unsafe_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmark harness with a counting allocator"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks measure the real clock"
)]

#[path = "../../../router/benches/support/counting.rs"]
mod counting;

#[path = "support/args.rs"]
mod args;

use args::arg;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use culvert_bench::{EchoBackend, EchoConfig};
use culvert_control_lite::translate::{FixedAddresses, Options, translate};
use culvert_fake_apiserver::{FakeApiServer, fixtures};
use culvert_kubernetes::kinds::WATCHED;
use culvert_kubernetes::mirror::Mirror;
use culvert_kubernetes::{KubernetesSource, SourceConfig};
use culvert_proxy::{ServeConfig, Server};
use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CONTROLLER: &str = "culvert.dev/gateway-controller";

fn route(index: usize, host: &str) -> Value {
    fixtures::http_route(&format!("route-{index}"), host)
}

/// The status line's code of `GET /` for `host`, on a new connection.
async fn probe(addr: SocketAddr, host: &str) -> Option<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

async fn until_served(addr: SocketAddr, host: &str) {
    while probe(addr, host).await != Some(200) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Live heap bytes of a mirror holding every object `server` holds, and of the
/// translation of it.
fn footprint(server: &FakeApiServer) -> (isize, isize) {
    let live = || counting::LIVE.load(Ordering::Relaxed);
    let objects: Vec<_> = WATCHED
        .iter()
        .map(|kind| (kind, server.list(&kind.api_version(), kind.kind)))
        .collect();
    let mut mirror = Mirror::new();
    for (kind, items) in objects {
        mirror.handle(kind, Event::Init);
        for item in items {
            let object: DynamicObject = serde_json::from_value(item).unwrap();
            mirror.handle(kind, Event::InitApply(object));
        }
        mirror.handle(kind, Event::InitDone);
    }
    let options = Options {
        controller_name: CONTROLLER.to_owned(),
        privileged_namespace_prefixes: Vec::new(),
        addresses: Box::new(FixedAddresses(vec!["192.0.2.1".to_owned()])),
        claims: Box::new(culvert_control_lite::translate::NoClaimChecks),
    };
    let translation = translate(mirror.store(), &options);
    // What each holds is what its drop gives back.
    let with_both = live();
    drop(translation);
    let with_mirror = live();
    drop(mirror);
    (with_mirror - live(), with_both - with_mirror)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    // `cargo test --benches` runs this too: keep that run short.
    let full = std::env::args().any(|a| a == "--bench");
    let routes = arg("--routes", if full { 1_000 } else { 20 });
    let changes = arg("--changes", if full { 1_000 } else { 5 });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(routes, changes));
}

async fn run(routes: usize, changes: usize) {
    let echo = EchoBackend::start(EchoConfig::new("web")).await.unwrap();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let server = FakeApiServer::new();
    fixtures::register_repository_crds(&server).unwrap();
    for object in fixtures::minimal_cluster(CONTROLLER, port, echo.addr().port()) {
        server.create(object).unwrap();
    }
    for i in 0..routes {
        server
            .create(route(i, &format!("r{i}.example.com")))
            .unwrap();
    }
    let serving = server.serve().await.unwrap();
    let kubeconfig =
        std::env::temp_dir().join(format!("culvert-sync-bench-{}", std::process::id()));
    serving.write_kubeconfig(&kubeconfig).unwrap();
    let mut config = SourceConfig::new(CONTROLLER);
    config.kubeconfig = Some(kubeconfig.clone());

    let source = KubernetesSource::start(config).unwrap();
    let mut configs = source.configs();
    let started = Instant::now();
    while configs.borrow_and_update().is_none() {
        configs.changed().await.unwrap();
    }
    let first_sync = started.elapsed();

    let plane = Server::start(
        ServeConfig::new("127.0.0.1:0".parse().unwrap())
            .with_workers(std::num::NonZeroUsize::MIN)
            .with_access_log(None)
            .with_published(source.configs()),
    )
    .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    until_served(addr, "r0.example.com").await;

    let mut latencies = Vec::with_capacity(changes);
    for change in 0..changes {
        let host = format!("c{change}.example.com");
        let start = Instant::now();
        server.apply_object(route(change % routes, &host)).unwrap();
        until_served(addr, &host).await;
        latencies.push(start.elapsed());
    }
    latencies.sort();
    let stats = source.stats();
    println!("routes {routes}, changes {changes}");
    println!(
        "change to serving: median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
    println!(
        "first sync {:.0} ms; translations {}, configs published {}",
        first_sync.as_secs_f64() * 1e3,
        stats.translations.load(Ordering::Relaxed),
        stats.published.load(Ordering::Relaxed),
    );

    plane.shutdown();
    drop(source);
    drop(serving);
    // Measured with everything else idle (the counter is process-wide): a mirror
    // holding every object the server holds (statuses included), and its
    // translation, as the source keeps them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mirror_bytes, translation_bytes) = footprint(&server);
    let per_thousand = |bytes: isize| bytes * 1000 / routes.max(1) as isize;
    println!(
        "mirror (the store and stored statuses): {mirror_bytes} bytes, {} per 1,000 routes; \
         its translation: {translation_bytes} bytes, {} per 1,000 routes",
        per_thousand(mirror_bytes),
        per_thousand(translation_bytes),
    );
    let _ = std::fs::remove_file(kubeconfig);
}
