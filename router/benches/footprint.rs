//! Memory per route: builds each benchmark family at each size under a counting
//! allocator and prints the bytes the compiled table keeps alive, divided by the
//! number of routes. Run with `cargo bench -p culvert-router --bench footprint`.
#![allow(
    missing_docs,
    unsafe_code,
    clippy::unwrap_used,
    reason = "benchmark harness with a counting allocator"
)]

mod support;

use culvert_router::RouteTableBuilder;
use std::sync::atomic::Ordering;

#[path = "support/counting.rs"]
mod counting;

use counting::LIVE;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing useful here.
    let sizes: &[usize] = if std::env::args().any(|a| a == "--bench") {
        &[10, 1_000, 10_000, 100_000]
    } else {
        &[10, 1_000]
    };
    println!(
        "{:<14} {:>8} {:>14} {:>10}",
        "family", "routes", "table bytes", "bytes/route"
    );
    for family in support::Family::ALL {
        for &n in sizes {
            let config = support::config(family, n);
            let before = LIVE.load(Ordering::Relaxed);
            let table = RouteTableBuilder::new().build(&config).unwrap();
            let bytes = LIVE.load(Ordering::Relaxed) - before;
            println!(
                "{:<14} {:>8} {:>14} {:>10}",
                family.name(),
                n,
                bytes,
                bytes / n as isize
            );
            drop(table);
        }
    }
}
