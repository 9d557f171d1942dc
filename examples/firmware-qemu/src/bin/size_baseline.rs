//! `size_decode` without the decode call: the runtime, vector table and
//! input that the difference between the two takes off.
#![no_std]
#![no_main]

use core::hint::black_box;

/// The same input as `size_decode`, so both have the same `.rodata` for it.
static INPUT: [u8; 256] = [0; 256];

#[cortex_m_rt::entry]
fn main() -> ! {
    let input: &[u8] = black_box(&INPUT);
    let _ = black_box(input.len());
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
