//! Shared helpers of the GPU integration tests.
#![allow(dead_code, unreachable_pub)]

use std::io::Write;

use hurray_gpu::GpuContext;

/// A fresh context, or `None` (printed past the test harness's capture, so it
/// is visible) when there is no adapter. With `HURRAY_REQUIRE_GPU=1` a missing
/// adapter fails the test instead.
pub fn ctx(test: &str) -> Option<GpuContext> {
    match GpuContext::new() {
        Ok(c) => Some(c),
        Err(e) => {
            if std::env::var_os("HURRAY_REQUIRE_GPU").is_some_and(|v| v == "1") {
                panic!("HURRAY_REQUIRE_GPU=1 but no GPU adapter is available: {e}");
            }
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: no GPU adapter ({e})");
            None
        }
    }
}

/// Deterministic pseudo-random bytes (xorshift64*).
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}
