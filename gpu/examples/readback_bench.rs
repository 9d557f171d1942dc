//! Readback benchmark: hurray against raw wgpu, in one run, on the same buffers.
//!
//! Run: `cargo run --release -p hurray-rs-gpu --example readback_bench [max_size_mib]`
//!
//! For 4 B, 4 KiB, 1 MiB, 16 MiB and 256 MiB (up to `max_size_mib`, default
//! 256) it measures, on one uploaded buffer per size:
//! * `hurray`   — `GpuBufferHandle::readback` into a reused `Vec`;
//! * `zerocopy` — `GpuBufferHandle::read_mapped`, touching the first and last byte;
//! * `fresh`    — raw wgpu with a new staging buffer per read (what
//!   `wgpu::util::DownloadBuffer` does), copied into a reused `Vec`;
//! * `reuse`    — raw wgpu with one staging buffer kept across reads, copied
//!   into a reused `Vec`.
//!
//! Each method runs interleaved with the others; the median time is kept. One
//! line per size:
//! `readback size=<bytes> hurray_gbps=<x> zerocopy_gbps=<x> fresh_gbps=<x> reuse_gbps=<x> hurray_us=<median µs>`

use std::hint::black_box;
use std::time::{Duration, Instant};

use hurray_gpu::wgpu::{self, BufferUsages};
use hurray_gpu::{GpuBufferHandle, GpuContext};

fn raw_read(
    ctx: &GpuContext,
    src: &wgpu::Buffer,
    len: u64,
    staging: &wgpu::Buffer,
    out: &mut Vec<u8>,
) {
    let padded = len.next_multiple_of(4);
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    encoder.copy_buffer_to_buffer(src, 0, staging, 0, padded);
    let index = ctx.queue.submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, 0..padded, |r| r.expect("map"));
    ctx.device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        })
        .expect("poll");
    {
        let view = staging.get_mapped_range(0..padded).expect("mapped");
        out.clear();
        out.extend_from_slice(&view[..len as usize]);
    }
    staging.unmap();
}

fn staging(ctx: &GpuContext, len: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bench staging"),
        size: len.next_multiple_of(4),
        usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn gbps(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

fn main() {
    let max_mib: u64 = std::env::args()
        .nth(1)
        .map_or(256, |s| s.parse().expect("max size in MiB"));
    let ctx = GpuContext::new().expect("a GPU adapter");
    let info = ctx.adapter_info();
    println!(
        "adapter: {} ({:?}, {:?}, driver {})",
        info.name, info.backend, info.device_type, info.driver_info
    );
    let sizes = [4u64, 4 << 10, 1 << 20, 16 << 20, 256 << 20];
    for &size in sizes.iter().filter(|&&s| s <= max_mib << 20) {
        let data: Vec<u8> = (0..size)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let h = GpuBufferHandle::upload(&ctx.device, &ctx.queue, &data, BufferUsages::COPY_SRC)
            .expect("upload");
        let iters = match size {
            s if s <= 4096 => 300,
            s if s <= 1 << 20 => 100,
            s if s <= 16 << 20 => 20,
            _ => 7,
        };
        let reused = staging(&ctx, size);
        let mut out = Vec::new();
        // Warm-up, and a correctness check of every method.
        h.readback(&ctx.device, &ctx.queue, &mut out)
            .expect("readback");
        assert!(out == data);
        raw_read(&ctx, h.buffer(), size, &reused, &mut out);
        assert!(out == data);
        raw_read(&ctx, h.buffer(), size, &staging(&ctx, size), &mut out);
        assert!(out == data);
        let last = h
            .read_mapped(&ctx.device, &ctx.queue, 0, size, |b| b[b.len() - 1])
            .expect("read_mapped");
        assert_eq!(last, data[data.len() - 1]);

        let (mut th, mut tz, mut tf, mut tr) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..iters {
            let t = Instant::now();
            h.readback(&ctx.device, &ctx.queue, &mut out)
                .expect("readback");
            th.push(t.elapsed());
            black_box(&out);

            let t = Instant::now();
            h.read_mapped(&ctx.device, &ctx.queue, 0, size, |b| {
                black_box((b[0], b[b.len() - 1]))
            })
            .expect("read_mapped");
            tz.push(t.elapsed());

            let t = Instant::now();
            let fresh = staging(&ctx, size);
            raw_read(&ctx, h.buffer(), size, &fresh, &mut out);
            drop(fresh);
            tf.push(t.elapsed());
            black_box(&out);

            let t = Instant::now();
            raw_read(&ctx, h.buffer(), size, &reused, &mut out);
            tr.push(t.elapsed());
            black_box(&out);
        }
        let (h_t, z_t, f_t, r_t) = (median(th), median(tz), median(tf), median(tr));
        println!(
            "readback size={size} hurray_gbps={:.3} zerocopy_gbps={:.3} fresh_gbps={:.3} reuse_gbps={:.3} hurray_us={:.1}",
            gbps(size, h_t),
            gbps(size, z_t),
            gbps(size, f_t),
            gbps(size, r_t),
            h_t.as_secs_f64() * 1e6
        );
    }
}
