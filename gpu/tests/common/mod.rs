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

/// Runs `f` on a helper thread and fails the test if it takes longer than
/// `secs` (a hang becomes a failure instead of a stuck test run).
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(e) => panic!("{what} did not finish within {secs} s ({e})"),
    }
}

/// Drives `fut` to completion the way an application's event loop would:
/// poll the future, and poll the device (without blocking) between polls.
pub fn drive<T>(device: &hurray_gpu::wgpu::Device, fut: impl std::future::Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let start = std::time::Instant::now();
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        let _ = device.poll(hurray_gpu::wgpu::PollType::Poll);
        assert!(
            start.elapsed().as_secs() < 20,
            "async transfer did not finish"
        );
        std::thread::yield_now();
    }
}
