//! Stack: the MPU guard below it, and high-water marks by painting.
//!
//! `memory.x` puts the stack at the bottom of RAM: `[_stack_end,
//! _stack_start)`, growing down towards `_stack_end`. The reset handler of
//! cortex-m-rt (`paint-stack`) fills it with [`PAINT`] before `main`.
//!
//! * [`guard_on`] makes the lowest [`GUARD_LEN`] bytes of the stack an MPU
//!   region with no access: a push into it faults (MemManage, escalated to
//!   HardFault) instead of silently running on. The HardFault handler runs
//!   with the MPU off (`HFNMIENA` = 0) on the 1 KiB headroom below the guard,
//!   reports, and exits.
//! * [`measure`] repaints the free stack below the caller, runs a closure and
//!   returns how deep it went: the lowest word no longer holding the paint.
//!   A frame that reserves stack without writing it is not seen (the usual
//!   limit of painting), so the figure is a lower bound on what was reserved
//!   and exact for what was written.
//! * [`program_peak`] is the deepest the whole program has gone since reset,
//!   across every [`measure`], and [`GUARD_MARGIN`] the closest it may come
//!   to the guard before the run counts as a failure.

use core::sync::atomic::{AtomicUsize, Ordering};

use cortex_m::peripheral::{MPU, scb};

/// The value the reset handler paints the stack with.
pub const PAINT: u32 = cortex_m_rt::STACK_PAINT_VALUE;
/// Size of the MPU guard region at the bottom of the stack.
pub const GUARD_LEN: usize = 32;
/// A run whose stack came closer than this to the guard fails the check.
pub const GUARD_MARGIN: usize = 256;

unsafe extern "C" {
    /// Lowest address of the stack (from `memory.x`).
    static _stack_end: u32;
    /// Highest address of the stack, the initial SP (from `memory.x`).
    static _stack_start: u32;
}

/// `[bottom, top)` of the stack.
#[must_use]
pub fn bounds() -> (usize, usize) {
    // Only the symbols' addresses are taken; nothing is read through them.
    (
        (&raw const _stack_end) as usize,
        (&raw const _stack_start) as usize,
    )
}

/// `[start, end)` of the guard region.
#[must_use]
pub fn guard() -> (usize, usize) {
    let (bottom, _) = bounds();
    (bottom, bottom + GUARD_LEN)
}

/// The lowest address the program has dirtied so far (tracked across repaints).
static LOWEST: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Makes the guard region inaccessible and turns the MPU on.
///
/// # Panics
/// If `memory.x` does not align the guard to its size (a build error, not an
/// input).
pub fn guard_on(mpu: &mut MPU) {
    let (start, _) = guard();
    assert!(start % GUARD_LEN == 0, "the MPU guard must be size-aligned");
    // RASR: SIZE = log2(32) - 1 = 4 (bits 1..5), ENABLE (bit 0), AP = 0b000
    // (no access, bits 24..26), XN (bit 28).
    let rasr = (1 << 28) | (4 << 1) | 1;
    // SAFETY: region 0 is written while the MPU is off, with a base aligned
    // to its size (asserted above) inside our own RAM; it only takes access
    // away from the 32 bytes below the deepest stack the program may use, so
    // no live data becomes unreachable. PRIVDEFENA keeps the default memory
    // map everywhere else, and HFNMIENA = 0 lets the HardFault handler run
    // on the headroom below the guard.
    unsafe {
        mpu.ctrl.write(0);
        mpu.rnr.write(0);
        mpu.rbar.write(start as u32);
        mpu.rasr.write(rasr);
        mpu.ctrl.write(0b101); // ENABLE | PRIVDEFENA
    }
    cortex_m::asm::dsb();
    cortex_m::asm::isb();
}

/// The lowest stack address that no longer holds the paint (the stack top
/// when none was touched).
#[must_use]
fn lowest_dirty() -> usize {
    let (_, top) = bounds();
    let (_, guard_end) = guard();
    let mut at = guard_end;
    while at < top {
        // SAFETY: `at` is a word-aligned address in `[guard_end, top)`, stack
        // memory that is mapped, readable and outside the guard; a volatile
        // read of a `u32` there cannot fault, and a stale value only moves the
        // reported mark.
        let word = unsafe { core::ptr::read_volatile(at as *const u32) };
        if word != PAINT {
            return at;
        }
        at += 4;
    }
    top
}

/// Records the deepest point reached so far, then repaints the free stack
/// below this function's own frame.
#[inline(never)]
fn repaint() {
    LOWEST.fetch_min(lowest_dirty(), Ordering::Relaxed);
    let (_, guard_end) = guard();
    // Everything below the current SP is free: no interrupt is enabled, and
    // this leaf function writes below SP only through these stores.
    let sp = cortex_m::register::msp::read() as usize & !3;
    let mut at = guard_end;
    while at < sp {
        // SAFETY: `at` is word-aligned in `[guard_end, sp)`: stack memory below
        // the live stack pointer, outside the guard. Nothing live is stored
        // there (no interrupt can run, and callers' frames are above SP).
        unsafe { core::ptr::write_volatile(at as *mut u32, PAINT) };
        at += 4;
    }
}

/// Runs `f` and returns its result with the bytes of stack it used below the
/// caller's stack pointer.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
    repaint();
    let sp = cortex_m::register::msp::read() as usize;
    let r = core::hint::black_box(f());
    let low = lowest_dirty();
    LOWEST.fetch_min(low, Ordering::Relaxed);
    (r, sp.saturating_sub(low))
}

/// Bytes of stack the whole program has used since reset, and the stack's size.
#[must_use]
pub fn program_peak() -> (usize, usize) {
    let now = lowest_dirty();
    let low = LOWEST.fetch_min(now, Ordering::Relaxed).min(now);
    let (bottom, top) = bounds();
    (top - low, top - bottom)
}

/// Whether the deepest point stayed [`GUARD_MARGIN`] bytes above the guard.
#[must_use]
pub fn clear_of_guard() -> bool {
    let (bottom, top) = bounds();
    let (used, _) = program_peak();
    top - used >= bottom + GUARD_LEN + GUARD_MARGIN
}

/// Whether a HardFault is a stack overflow into the guard: the MPU fault
/// address lies in the guard, or the fault happened while stacking.
#[must_use]
pub fn fault_is_overflow(scb: &scb::RegisterBlock) -> (bool, u32) {
    let cfsr = scb.cfsr.read();
    let mmfar = scb.mmfar.read();
    let (start, end) = guard();
    let mmarvalid = cfsr & (1 << 7) != 0;
    let mstkerr = cfsr & (1 << 4) != 0;
    let in_guard = (start..end).contains(&(mmfar as usize));
    (mstkerr || (mmarvalid && in_guard), mmfar)
}

/// Recurses with 256-byte frames, far deeper than the stack allows: the guard
/// stops it (the bound only keeps the recursion from being unconditional).
#[inline(never)]
pub fn overflow(depth: u32) -> u32 {
    if depth > 1_000_000 {
        return depth;
    }
    let mut frame = [0u8; 256];
    frame[0] = depth as u8;
    let frame = core::hint::black_box(frame);
    overflow(depth + 1).wrapping_add(u32::from(frame[255]))
}
