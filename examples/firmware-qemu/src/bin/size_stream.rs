//! The stream decode path alone, for its size: `size_stream` minus
//! `size_baseline` is the flash that decoding a stream costs (the sans-I/O
//! decoder, every descriptor check, the composite rules).
//!
//! Never run; built by `.ci/run` and measured with `llvm-size` (docs/perf.md).
#![no_std]
#![no_main]

use core::hint::black_box;

use hurray_core::stream::{Event, StreamDecoder};

/// The same input as `size_baseline`, so both have the same `.rodata` for it.
static INPUT: [u8; 256] = [0; 256];

#[cortex_m_rt::entry]
fn main() -> ! {
    let mut input: &[u8] = black_box(&INPUT);
    let mut dec = StreamDecoder::new([0u8; 256], [0u8; 64]);
    while let Ok((used, event)) = dec.decode(input) {
        input = input.get(used..).unwrap_or_default();
        if let Event::NeedMore = event {
            break;
        }
        let _ = black_box(event);
    }
    let _ = black_box(dec.finish());
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
