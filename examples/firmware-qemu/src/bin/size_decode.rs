//! The decode path alone, for its size: `size_decode` minus `size_baseline`
//! is the flash that decoding and validating a descriptor costs (every
//! layout and section the format has goes through this one call).
//!
//! Never run; built by `.ci/run` and measured with `llvm-size` (docs/perf.md).
#![no_std]
#![no_main]

#[path = "../cases.rs"]
#[allow(dead_code)]
mod cases;

use core::hint::black_box;

/// Bytes the decoder sees; `black_box` hides their value from the optimizer.
static INPUT: [u8; cases::MAX_FRAME] = [0; cases::MAX_FRAME];

#[cortex_m_rt::entry]
fn main() -> ! {
    let input: &[u8] = black_box(&INPUT);
    let _ = black_box(cases::decode(input));
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}
