//! A counting global allocator: how many heap allocations a closure makes
//! on the current thread.
//!
//! Shared by `tests/allocations.rs` and `examples/race.rs`; a program that
//! includes this module has it as its global allocator. Counting is off
//! until [`count`] first runs (then one relaxed load per allocation is all
//! it costs when off, a thread-local increment when on), so a benchmark can
//! time without it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// The system allocator, counting allocations (and reallocations) per
/// thread while [`ON`] is set.
pub struct Counting;

/// Whether allocations are being counted.
pub static ON: AtomicBool = AtomicBool::new(false);

thread_local! {
    // A const-initialised `Cell<u64>` has no destructor and no lazy
    // initialisation: touching it from inside the allocator cannot
    // allocate or recurse.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn tick() {
    if ON.load(Ordering::Relaxed) {
        // `try_with`: during thread teardown the slot may be gone; such
        // allocations are not counted.
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which
// implements `GlobalAlloc`'s contract; counting touches only a thread-local
// integer and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        tick();
        // SAFETY: the caller upholds `alloc`'s contract (`layout` has a
        // non-zero size), which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        tick();
        // SAFETY: as `alloc`: the caller's contract is `System`'s.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        tick();
        // SAFETY: the caller guarantees `ptr` came from this allocator
        // (hence from `System`, to which every call is forwarded) with
        // `layout`, and that `new_size` is valid for it.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from this allocator,
        // that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the number of heap allocations it
/// made on this thread.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, u64) {
    ON.store(true, Ordering::Relaxed);
    let before = ALLOCATIONS.with(Cell::get);
    let r = f();
    let after = ALLOCATIONS.with(Cell::get);
    (r, after - before)
}
