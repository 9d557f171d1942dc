//! Process-wide resources: the worker pool's threads and the staging cap.
//! Alone in their binary (and run one after the other) because they count
//! process-wide things that other tests would disturb.

mod common;

use std::sync::Mutex;

use common::{ctx, random_bytes};
use hurray_gpu::wgpu::BufferUsages;
use hurray_gpu::{GpuBufferHandle, set_staging_cap, staging_stats, worker_threads};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[cfg(target_os = "linux")]
fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
}

/// Written against the code before issue 11: every long read spawned up to
/// three reader threads and every large chunk's host copy up to three more,
/// so 16 concurrent readers added dozens of threads. Now host copies run on
/// one pool: the process gains exactly the 16 reader threads.
#[cfg(target_os = "linux")]
#[test]
fn sixteen_concurrent_readers_keep_the_thread_count_bounded() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(c) = ctx("sixteen_concurrent_readers_keep_the_thread_count_bounded") else {
        return;
    };
    // 2 MiB each: host copies large enough to be split over the pool.
    let data: Vec<Vec<u8>> = (0..16u8)
        .map(|i| (0..2u32 << 20).map(|j| (j >> 9) as u8 ^ i).collect())
        .collect();
    let handles: Vec<GpuBufferHandle> = data
        .iter()
        .map(|d| GpuBufferHandle::upload(&c.device, &c.queue, d, BufferUsages::COPY_SRC).unwrap())
        .collect();
    // Warm up: the pool starts on first use.
    let mut out = Vec::new();
    handles[0].readback(&c.device, &c.queue, &mut out).unwrap();
    let base = thread_count();
    let done = std::sync::atomic::AtomicBool::new(false);
    let peak = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                peak = peak.max(thread_count());
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            peak
        });
        let readers: Vec<_> = handles
            .iter()
            .zip(&data)
            .map(|(h, d)| {
                let c = &c;
                s.spawn(move || {
                    let mut out = Vec::new();
                    for _ in 0..3 {
                        h.readback(&c.device, &c.queue, &mut out).unwrap();
                        assert!(out == *d);
                    }
                })
            })
            .collect();
        for r in readers {
            r.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        sampler.join().unwrap()
    });
    // The sampler and the 16 readers are the only new threads.
    assert!(
        peak <= base + 17,
        "{peak} threads at peak, {base} before the readers (pool of {})",
        worker_threads()
    );
}

/// Written against the code before issue 11: each buffer kept up to 64 MiB
/// plus its own size (rounded to a power of two) of idle staging, so 100
/// large buffers read once kept tens of GiB. Now one cap bounds all idle
/// staging, and the pools report what they hold.
#[test]
fn idle_staging_stays_under_the_process_wide_cap() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(c) = ctx("idle_staging_stays_under_the_process_wide_cap") else {
        return;
    };
    let cap = 3 << 20;
    set_staging_cap(cap);
    let data = random_bytes(2 << 20, 5);
    let mut out = Vec::new();
    for i in 0..40 {
        let h =
            GpuBufferHandle::upload(&c.device, &c.queue, &data, BufferUsages::COPY_SRC).unwrap();
        h.readback(&c.device, &c.queue, &mut out).unwrap();
        let _ = h
            .read_mapped(&c.device, &c.queue, 0, 2 << 20, |b| b[0])
            .unwrap();
        let s = staging_stats();
        assert!(s.pooled_bytes <= cap, "read {i}: {s:?}");
        assert!(s.dma_pooled_bytes <= cap, "read {i}: {s:?}");
        assert_eq!(s.cap_bytes, cap);
        // Mapped staging buffers, or (Vulkan with VK_EXT_external_memory_host)
        // DMA staging: either way reused.
        assert!(
            s.pooled_buffers > 0 || s.dma_pooled_bytes > 0,
            "read {i}: staging is still reused: {s:?}"
        );
        assert!(h.pooled_staging_bytes() <= cap);
    }
    assert!(out == data);
    // A cap of 0 keeps nothing; trimming frees what a device keeps.
    set_staging_cap(0);
    let h = GpuBufferHandle::upload(&c.device, &c.queue, &data, BufferUsages::COPY_SRC).unwrap();
    h.trim_staging();
    h.readback(&c.device, &c.queue, &mut out).unwrap();
    assert_eq!(h.pooled_staging_bytes(), 0);
    assert_eq!(staging_stats().pooled_bytes, 0);
    assert_eq!(staging_stats().dma_pooled_bytes, 0);
    set_staging_cap(hurray_gpu::DEFAULT_STAGING_CAP);
}
