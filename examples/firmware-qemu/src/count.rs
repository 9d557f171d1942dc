//! Deterministic instruction counts from SysTick under QEMU's `-icount`.
//!
//! With `-icount shift=S`, QEMU advances its virtual clock by exactly 2^S ns
//! per guest instruction, and the timers it models, SysTick included, read
//! that clock; an MMIO read ends the translation block, so the value read is
//! exact at that instruction. SysTick on `mps2-an386` counts the 25 MHz
//! processor clock (40 ns), so with `shift=10` one instruction is 25.6 ticks
//! and a count of ticks converts back to instructions without rounding error.
//!
//! [`Counter::calibrate`] does not trust those constants: it times an empty
//! bracket and brackets of exactly 1000 and 2000 `nop`s, takes the tick rate
//! from them, and refuses (`None`) unless the two agree to one tick, which
//! only happens under `-icount`. (QEMU models no DWT cycle counter on this
//! board: `DWT.CYCCNT` stays 0, see docs/perf.md.)

use core::hint::black_box;

use cortex_m::peripheral::{SYST, syst::SystClkSource};

/// SysTick's reload value: the counter's full 24-bit range.
const RELOAD: u32 = 0x00FF_FFFF;

/// The shape of everything bracketed: the decode path and the calibration
/// functions alike, so every bracket runs the same instructions around the call.
pub type Probe = fn(&'static [u8]) -> bool;

/// Ticks between two SysTick reads around `f(input)` (the counter counts
/// down). One function for every probe: the bracket's own instructions are
/// the same each time and cancel out.
#[inline(never)]
fn bracket(f: Probe, input: &'static [u8]) -> (bool, u32) {
    let before = SYST::get_current();
    let r = f(input);
    let after = SYST::get_current();
    (r, before.wrapping_sub(after) & RELOAD)
}

/// No instructions of its own beyond a function's entry and return.
#[inline(never)]
fn nops_0(_: &'static [u8]) -> bool {
    // SAFETY: an empty block has no effect.
    unsafe { core::arch::asm!("", options(nomem, nostack, preserves_flags)) }
    false
}

/// `nops_0` plus exactly 1000 `nop`s.
#[inline(never)]
fn nops_1000(_: &'static [u8]) -> bool {
    // SAFETY: `nop` has no effect on memory, registers or flags.
    unsafe {
        core::arch::asm!(
            ".rept 1000",
            "nop",
            ".endr",
            options(nomem, nostack, preserves_flags)
        )
    }
    false
}

/// `nops_0` plus exactly 2000 `nop`s.
#[inline(never)]
fn nops_2000(_: &'static [u8]) -> bool {
    // SAFETY: `nop` has no effect on memory, registers or flags.
    unsafe {
        core::arch::asm!(
            ".rept 2000",
            "nop",
            ".endr",
            options(nomem, nostack, preserves_flags)
        )
    }
    false
}

/// Converts SysTick ticks into instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// Ticks of a bracket around a call to an empty function.
    empty: u32,
    /// Ticks of 1000 instructions.
    per_1000: u32,
}

impl Counter {
    /// Starts SysTick on the processor clock and calibrates it; `None` when
    /// the ticks are not an exact, linear image of the instruction count.
    pub fn calibrate(syst: &mut SYST) -> Option<Self> {
        syst.disable_interrupt();
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_counter();
        // The first reads after starting the counter are a phase off: warm up.
        let _ = bracket(nops_0, &[]);
        let (_, empty) = bracket(nops_0, &[]);
        let (_, t1) = bracket(nops_1000, &[]);
        let (_, t2) = bracket(nops_2000, &[]);
        defmt::info!(
            "count: calibration ticks: empty {}, 1000 nops {}, 2000 nops {}",
            empty,
            t1,
            t2
        );
        let per_1000 = t1.checked_sub(empty)?;
        let per_2000 = t2.checked_sub(empty)?;
        // One tick of slack: the two reads each land somewhere inside a tick.
        let linear = per_2000.abs_diff(2 * per_1000) <= 1;
        (linear && per_1000 >= 1000).then_some(Self { empty, per_1000 })
    }

    /// Ticks per 1000 instructions (25 600 on `mps2-an386` with `shift=10`).
    #[must_use]
    pub fn ticks_per_1000(&self) -> u32 {
        self.per_1000
    }

    /// Runs `f(input)` and returns its result with the instructions it took
    /// beyond those of an empty function (whose entry, `false` and return
    /// are 4 instructions with frame pointers).
    pub fn count(&self, f: Probe, input: &'static [u8]) -> (bool, u32) {
        let (r, t) = bracket(f, black_box(input));
        let net = u64::from(t.saturating_sub(self.empty));
        let per = u64::from(self.per_1000);
        let insns = (net * 1000 + per / 2) / per;
        (r, u32::try_from(insns).unwrap_or(u32::MAX))
    }
}
