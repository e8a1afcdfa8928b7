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
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Live heap bytes, counted on every allocation and free.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged,
// so `System`'s guarantees carry over; the counter never affects allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as our caller's, forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with this layout (see `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: `ptr` and `layout` come from `System` (see `alloc`); forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
