//! Shared helpers of the GPU integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use hurray_gpu::GpuContext;

pub mod gate;

/// A fresh context, or `None` after `SKIPPED <test>: no GPU adapter (…)`
/// ([`gate::need`]: with `HURRAY_REQUIRE_GPU=1` a missing adapter fails).
pub fn ctx(test: &str) -> Option<GpuContext> {
    gate::need(test, GpuContext::new())
}

/// A fresh context whose device can export and import memory (Vulkan with
/// `VK_KHR_external_memory_fd`), or `None` after the `SKIPPED` line. Only
/// [`ShareError::Unsupported`](hurray_gpu::ShareError::Unsupported) counts
/// as missing: any other failure of the probe fails the test.
pub fn sharing_ctx(test: &str) -> Option<GpuContext> {
    let c = ctx(test)?;
    let probe = hurray_gpu::GpuBufferHandle::alloc_exportable(&c.device, &c.queue, 64);
    gate::need_if(test, probe, |e| {
        matches!(e, hurray_gpu::ShareError::Unsupported(_))
    })?;
    Some(c)
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

/// A fresh context whose device stages transfers through host memory the
/// GPU reaches by DMA (Vulkan with `VK_EXT_external_memory_host`, as
/// lavapipe and NVIDIA offer), or `None` after the `SKIPPED` line.
#[cfg(target_os = "linux")]
pub fn dma_ctx(test: &str) -> Option<GpuContext> {
    let c = ctx(test)?;
    let probe = if c.host_dma() {
        Ok(c)
    } else {
        Err("host memory for DMA unsupported (no VK_EXT_external_memory_host)")
    };
    gate::need(test, probe)
}

/// `len` bytes inside `store` starting on a 4 KiB boundary (`store` must be
/// at least `len + 4096` long).
pub fn page_aligned(store: &mut [u8], len: usize) -> &mut [u8] {
    let skip = store.as_ptr().align_offset(4096);
    &mut store[skip..skip + len]
}

/// A temporary path, removed on drop.
pub struct Temp(pub PathBuf);

impl Temp {
    pub fn new(name: &str) -> Self {
        // Cargo's scratch directory, or the system's where the test binary
        // runs away from its build tree (the GPU host).
        let built = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        let dir = if built.is_dir() {
            built.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        Self(dir.join(format!("{name}-{}.hrry", std::process::id())))
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
