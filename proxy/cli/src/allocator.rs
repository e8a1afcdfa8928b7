//! The global allocator: mimalloc, asked for alignment only when a layout needs
//! more than every mimalloc block has anyway.
//!
//! The `mimalloc` crate passes every request to mimalloc's aligned entry points,
//! which serve a block over 1 KiB (a request's future, a read buffer) only through
//! their generic slow path: several times the instructions of `mi_malloc`, once or
//! twice per proxied request. Every mimalloc block is word-aligned (block sizes are
//! whole words, pages start aligned), so a layout aligned to at most a word takes
//! the plain calls; anything else keeps the aligned ones. (The standard library's
//! `System` allocator splits the same way at what `malloc` guarantees.)
//!
//! The process also opts out of transparent huge pages ([`without_huge_pages`]):
//! mimalloc marks its arena `MADV_HUGEPAGE`, and a fault on such memory zeroes a
//! whole 2 MiB page at once, stalling the worker that touched it for milliseconds.
//! Measured (bench/README.md, "Current results"): with huge pages, 1-second wrk runs of
//! HTTP/1.1 with a new connection per request had a p99 above 3 ms (3.9-6.2 ms)
//! in 10 of 32 runs; without, none above 1.82 ms.
#![allow(
    unsafe_code,
    reason = "a global allocator is an unsafe trait to implement"
)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The alignment every mimalloc block has: a word (`MI_INTPTR_SIZE`). Not 16: a
/// 24-byte block is only 8-aligned.
const PLAIN_ALIGN: usize = size_of::<usize>();

/// mimalloc as the global allocator.
pub(crate) struct Mimalloc;

/// Opts the whole process out of transparent huge pages (`PR_SET_THP_DISABLE`,
/// which covers memory already mapped and is kept by child processes), so no
/// page fault has to zero 2 MiB on the request path. Called first thing in
/// `main`. Only a latency measure: where the kernel refuses, memory works as before.
#[cfg(target_os = "linux")]
pub(crate) fn without_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and touches no memory
    // of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

/// Elsewhere there is nothing to opt out of.
#[cfg(not(target_os = "linux"))]
pub(crate) fn without_huge_pages() {}

/// Whether a plain (unaligned) mimalloc call satisfies `align`.
fn plain(align: usize) -> bool {
    align <= PLAIN_ALIGN
}

// SAFETY: every pointer handed out comes from mimalloc with at least the layout's
// size and alignment (plain calls only up to a word's alignment); every
// pointer taken back came from this allocator, and mimalloc frees and reallocates
// blocks however they were allocated.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc takes any size; the alignment is a power of two.
        unsafe {
            if plain(layout.align()) {
                mi_malloc(layout.size()).cast()
            } else {
                mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if plain(layout.align()) {
                mi_zalloc(layout.size()).cast()
            } else {
                mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the trait's contract).
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; the new block keeps
        // the alignment.
        unsafe {
            if plain(layout.align()) {
                mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_is_opted_out_of_transparent_huge_pages() {
        // SAFETY: PR_GET_THP_DISABLE takes no pointers.
        let get = || unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        without_huge_pages();
        assert_eq!(get(), 1);
    }

    /// Every size and alignment mix gets a block with that alignment, which keeps its
    /// bytes through a reallocation and is freed again.
    #[test]
    fn blocks_have_the_alignment_their_layout_asks_for() {
        let allocator = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1, 7, 8, 15, 16, 24, 100, 1024, 1500, 3000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; the block is used within its layout and
                // freed with it.
                unsafe {
                    let block = allocator.alloc(layout);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "size {size} align {align}");
                    block.write_bytes(0xA5, size);
                    let grown = allocator.realloc(block, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "grown {size} align {align}");
                    assert!((0..size).all(|at| *grown.add(at) == 0xA5));
                    allocator.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                    let zeroed = allocator.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0);
                    assert!((0..size).all(|at| *zeroed.add(at) == 0));
                    allocator.dealloc(zeroed, layout);
                }
            }
        }
    }
}
