//! The file open path alone, for its size: `size_file` minus
//! `size_baseline` is the flash that opening a file costs (`FileView`:
//! header, trailer, CRC-32C table, KV, index, every descriptor, composites).
//!
//! Never run; built by `.ci/run` and measured with `llvm-size` (docs/perf.md).
#![no_std]
#![no_main]

use core::hint::black_box;

use hurray_core::file::FileView;

/// The same input as `size_baseline`, so both have the same `.rodata` for it.
static INPUT: [u8; 256] = [0; 256];

#[cortex_m_rt::entry]
fn main() -> ! {
    let input: &[u8] = black_box(&INPUT);
    let _ = black_box(FileView::parse(input).map(|v| v.len()));
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
