//! Transfer benchmark: hurray's reads and writes next to raw wgpu, in one run,
//! on the same buffers.
//!
//! Run: `cargo run --release -p hurray-rs-gpu --example transfer_bench [max_size_mib] [--quick]
//! [--threads N] [--cuda FILE] [--svg PATH] [--replot FILE]`
//!
//! For 4 B, 4 KiB, 1 MiB, 16 MiB and 256 MiB (up to `max_size_mib`, default
//! 256; `--quick` runs a tenth of the iterations) it prints two lines per
//! size, medians over interleaved runs, every time measured until the data
//! has arrived (a read: in host memory; a write: on the GPU):
//!
//! `read size=<B> hurray_us= hurray_gbps= raw_wait_us= raw_spin_us= raw_spin_gbps= zerocopy_us= zerocopy_gbps= mapped_us=`
//! * `hurray`   — `GpuBufferHandle::readback` into a reused `Vec`;
//! * `raw_wait` — raw wgpu: copy to a kept staging buffer, map, `poll(Wait)`, copy out;
//! * `raw_spin` — the same, spinning on `poll(Poll)` instead of waiting (the floor);
//! * `zerocopy` — `read_mapped`, touching the first and last byte;
//! * `mapped`   — `readback` of a `MAP_READ | STORAGE` buffer, mapped directly
//!   (only where the device has `MAPPABLE_PRIMARY_BUFFERS`; 0 otherwise).
//!
//! `write size=<B> hurray_us= hurray_gbps= upload_us= upload_gbps= raw_wait_us= raw_spin_us= raw_spin_gbps= zerocopy_us= zerocopy_gbps= zerocopy_fill_gbps= host_copy_gbps=`
//! * `hurray`   — in-place `write` into a resident buffer, then `wait_for`;
//! * `upload`   — `upload` into a new buffer, then a wait for the queue;
//! * `raw_wait` — raw `Queue::write_buffer` + submit + `poll(Wait)`;
//! * `raw_spin` — the same, spinning until the submission is done;
//! * `zerocopy` — `write_mapped`, the closure copying from host memory;
//! * `zerocopy_fill` — `write_mapped`, the closure producing its bytes in
//!   place (a `memset`): what the engine moves when the producer reads no
//!   other host memory;
//! * `host_copy` — no GPU: the same bytes copied from one host buffer into
//!   another over the worker pool's thread count, this run's host copy
//!   rate. A plain write or read (and a zero-copy write that copies) moves
//!   each byte through host memory three times (the copy reads and writes
//!   it, the DMA reads or writes it once more), so about two thirds of
//!   `host_copy` is what this host allows them.
//!
//! `--svg PATH` draws GB/s against size (reads and writes, ours beside raw
//! wgpu and, with `--cuda FILE`, CUDA's pageable and pinned copies: the
//! output of `cuda_bw.py` run in the same command, lines `cuda
//! <d2h|h2d>_<pageable|pinned> size=<B> gbps=<GB/s> …`). `--replot FILE`
//! measures nothing: it draws the `read`/`write` lines a run printed into
//! `FILE` (to redraw a device run's numbers).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hurray_gpu::wgpu::{self, BufferUsages};
use hurray_gpu::{GpuBufferHandle, GpuContext, wait_for};

#[path = "svg/mod.rs"]
mod svg;

/// `key=value` of a bench line.
/// Copies `src` into `dst` (equal lengths) on as many threads as the
/// worker pool has: the host's own copy rate, for comparison.
fn host_copy(dst: &mut [u8], src: &[u8]) {
    let threads = hurray_gpu::worker_threads().max(1);
    let part = src.len().div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (d, c) in dst.chunks_mut(part).zip(src.chunks(part)) {
            s.spawn(move || d.copy_from_slice(c));
        }
    });
}

fn field(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// CUDA's points from `cuda_bw.py`'s output: `(name, [(size, GB/s)])`.
fn cuda_points(text: &str, name: &str) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(name) && l.starts_with("cuda "))
        .filter_map(|l| Some((field(l, "size")?, field(l, "gbps")?)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The rows of [`draw`] from a run's printed `read`/`write` lines.
fn replot_rows(text: &str) -> Vec<[f64; 7]> {
    let lines = |kind: &str| {
        text.lines()
            .filter(|l| l.split_whitespace().next() == Some(kind))
            .filter_map(|l| {
                Some((
                    field(l, "size")?,
                    field(l, "hurray_gbps")?,
                    field(l, "zerocopy_gbps")?,
                    field(l, "raw_spin_gbps")?,
                ))
            })
            .collect::<Vec<_>>()
    };
    lines("read")
        .into_iter()
        .zip(lines("write"))
        .filter(|(r, w)| r.0 == w.0)
        .map(|(r, w)| [r.0, r.1, r.2, r.3, w.1, w.2, w.3])
        .collect()
}

/// Draws the measured points (`rows`: size, read, zero-copy read, raw
/// read, write, zero-copy write, raw write; GB/s) beside CUDA's.
fn draw(path: &str, rows: &[[f64; 7]], cuda: Option<&str>, adapter: &str) {
    let line = |name: &str, color, dashed, col: usize| svg::Series {
        name: name.into(),
        color,
        dashed,
        points: rows.iter().map(|r| (r[0], r[col])).collect(),
    };
    let mut reads = vec![
        line("hurray readback", svg::OURS, false, 1),
        line("hurray read_mapped (zero-copy)", svg::OURS_2, false, 2),
        line("raw wgpu (kept staging, spin)", svg::OTHER, true, 3),
    ];
    let mut writes = vec![
        line("hurray write", svg::OURS, false, 4),
        line("hurray write_mapped (zero-copy)", svg::OURS_2, false, 5),
        line("raw wgpu write_buffer (spin)", svg::OTHER, true, 6),
    ];
    if let Some(text) = cuda {
        for (panel, dir) in [(&mut reads, "d2h"), (&mut writes, "h2d")] {
            for (kind, color) in [("pinned", svg::PINNED), ("pageable", svg::PAGEABLE)] {
                let points = cuda_points(text, &format!("{dir}_{kind}"));
                if !points.is_empty() {
                    panel.push(svg::Series {
                        name: format!("CUDA {dir} {kind} (torch)"),
                        color,
                        dashed: true,
                        points,
                    });
                }
            }
        }
    }
    let doc = svg::line_charts(
        &[("GPU → host (read)", reads), ("host → GPU (write)", writes)],
        &format!("transfer_bench on {adapter}; medians; every time until the data has arrived"),
    );
    std::fs::write(path, doc).expect("write the SVG");
    println!("svg {path}");
}

/// Raw read through a kept staging buffer.
fn raw_read(
    ctx: &GpuContext,
    src: &wgpu::Buffer,
    staging: &wgpu::Buffer,
    len: u64,
    spin: bool,
    out: &mut Vec<u8>,
) {
    let padded = len.next_multiple_of(4);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(src, 0, staging, 0, padded);
    let index = ctx.queue.submit([encoder.finish()]);
    let done = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&done);
    staging.map_async(wgpu::MapMode::Read, 0..padded, move |r| {
        r.expect("map");
        flag.store(true, Ordering::Release);
    });
    if spin {
        while !done.load(Ordering::Acquire) {
            ctx.device.poll(wgpu::PollType::Poll).expect("poll");
        }
    } else {
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
            .expect("poll");
    }
    {
        let view = staging.get_mapped_range(0..padded).expect("mapped");
        out.clear();
        out.extend_from_slice(&view[..len as usize]);
    }
    staging.unmap();
}

/// Raw write: `Queue::write_buffer`, submit, and wait until the GPU has it.
fn raw_write(ctx: &GpuContext, dst: &wgpu::Buffer, data: &[u8], spin: bool) {
    ctx.queue.write_buffer(dst, 0, data);
    let index = ctx.queue.submit([]);
    if spin {
        spin_until_done(ctx, index);
    } else {
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
            .expect("poll");
    }
}

fn spin_until_done(ctx: &GpuContext, index: wgpu::SubmissionIndex) {
    loop {
        match ctx.device.poll(wgpu::PollType::Wait {
            submission_index: Some(index.clone()),
            timeout: Some(Duration::ZERO),
        }) {
            Ok(_) => return,
            Err(wgpu::PollError::Timeout) => {}
            Err(e) => panic!("{e}"),
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn us(t: Duration) -> f64 {
    t.as_secs_f64() * 1e6
}

fn gbps(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let svg_path = value("--svg");
    let cuda = value("--cuda").map(|p| std::fs::read_to_string(p).expect("--cuda FILE"));
    if let Some(p) = value("--replot") {
        let text = std::fs::read_to_string(p).expect("--replot FILE");
        let rows = replot_rows(&text);
        let adapter = text
            .lines()
            .find_map(|l| l.strip_prefix("adapter: "))
            .and_then(|l| l.split(" (").next())
            .unwrap_or("?");
        draw(
            svg_path.as_deref().expect("--replot needs --svg PATH"),
            &rows,
            cuda.as_deref(),
            adapter,
        );
        return;
    }
    let mut rows: Vec<[f64; 7]> = Vec::new();
    if let Some(t) = value("--threads") {
        hurray_gpu::set_worker_threads(t.parse().expect("--threads N")).expect("threads");
    }
    let max_mib: u64 = args
        .iter()
        .enumerate()
        .find(|(i, a)| {
            !a.starts_with("--")
                && (*i == 0
                    || !["--threads", "--svg", "--cuda", "--replot"]
                        .contains(&args[i - 1].as_str()))
        })
        .map_or(256, |(_, s)| s.parse().expect("max size in MiB"));
    let ctx = GpuContext::new().expect("a GPU adapter");
    let info = ctx.adapter_info();
    let mappable = ctx
        .device
        .features()
        .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);
    println!(
        "adapter: {} ({:?}, {:?}, driver {}); worker threads {}; MAPPABLE_PRIMARY_BUFFERS {mappable}",
        info.name,
        info.backend,
        info.device_type,
        info.driver_info,
        hurray_gpu::worker_threads()
    );
    let (d, q) = (&ctx.device, &ctx.queue);
    let rw = BufferUsages::COPY_SRC | BufferUsages::COPY_DST | BufferUsages::STORAGE;
    for size in [4u64, 4 << 10, 1 << 20, 16 << 20, 256 << 20] {
        if size > max_mib << 20 && size > 4 << 10 {
            break;
        }
        let data: Vec<u8> = (0..size)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let iters = match size {
            s if s <= 4096 => 300,
            s if s <= 1 << 20 => 100,
            s if s <= 16 << 20 => 20,
            _ => 7,
        };
        let iters = if quick { (iters / 10).max(3) } else { iters };
        let h = GpuBufferHandle::upload(d, q, &data, rw).expect("upload");
        let staging = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bench staging"),
            size: size.next_multiple_of(4),
            usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mapped = (mappable && size <= 1 << 20).then(|| {
            GpuBufferHandle::upload(d, q, &data, BufferUsages::MAP_READ | BufferUsages::STORAGE)
                .expect("mappable upload")
        });
        let resident = GpuBufferHandle::alloc(d, size, rw).expect("alloc");

        // Warm-up, and a correctness check of every method.
        let mut out = Vec::new();
        h.readback(d, q, &mut out).expect("readback");
        assert!(out == data);
        raw_read(&ctx, h.buffer(), &staging, size, true, &mut out);
        assert!(out == data);
        // Every byte the zero-copy read lends, not only the last.
        let same = h
            .read_mapped(d, q, 0, size, |b| b == &data[..])
            .expect("read_mapped");
        assert!(same, "read_mapped lent other bytes than were written");
        if let Some(m) = &mapped {
            m.readback(d, q, &mut out).expect("mapped readback");
            assert!(out == data);
        }
        let i = resident.write(d, q, 0, &data).expect("write");
        wait_for(d, i).expect("wait");
        resident.readback(d, q, &mut out).expect("readback");
        assert!(out == data);
        let i = resident
            .write_mapped(d, q, 0, size, |from, mut part| {
                let from = from as usize;
                part.copy_from_slice(&data[from..from + part.len()]);
            })
            .expect("write_mapped");
        wait_for(d, i).expect("wait");
        resident.readback(d, q, &mut out).expect("readback");
        assert!(out == data);
        raw_write(&ctx, resident.buffer(), &data, true);
        let i = resident
            .write_mapped(d, q, 0, size, |_, mut part| part.fill(0x5a))
            .expect("write_mapped in place");
        wait_for(d, i).expect("wait");
        resident.readback(d, q, &mut out).expect("readback");
        assert!(out.iter().all(|&b| b == 0x5a), "write_mapped in place");
        let mut copy = vec![0u8; data.len()];

        let mut t: [Vec<Duration>; 12] = Default::default();
        for _ in 0..iters {
            let s = Instant::now();
            h.readback(d, q, &mut out).expect("readback");
            t[0].push(s.elapsed());
            black_box(&out);

            let s = Instant::now();
            raw_read(&ctx, h.buffer(), &staging, size, false, &mut out);
            t[1].push(s.elapsed());

            let s = Instant::now();
            raw_read(&ctx, h.buffer(), &staging, size, true, &mut out);
            t[2].push(s.elapsed());

            let s = Instant::now();
            h.read_mapped(d, q, 0, size, |b| black_box((b[0], b[b.len() - 1])))
                .expect("read_mapped");
            t[3].push(s.elapsed());

            if let Some(m) = &mapped {
                let s = Instant::now();
                m.readback(d, q, &mut out).expect("mapped readback");
                t[4].push(s.elapsed());
            }

            let s = Instant::now();
            let i = resident.write(d, q, 0, &data).expect("write");
            wait_for(d, i).expect("wait");
            t[5].push(s.elapsed());

            let s = Instant::now();
            let u = GpuBufferHandle::upload(d, q, &data, rw).expect("upload");
            wait_for(d, q.submit([])).expect("wait");
            t[6].push(s.elapsed());
            drop(u);

            let s = Instant::now();
            raw_write(&ctx, resident.buffer(), &data, false);
            t[7].push(s.elapsed());

            let s = Instant::now();
            raw_write(&ctx, resident.buffer(), &data, true);
            t[8].push(s.elapsed());

            let s = Instant::now();
            let i = resident
                .write_mapped(d, q, 0, size, |from, mut part| {
                    let from = from as usize;
                    part.copy_from_slice(&data[from..from + part.len()]);
                })
                .expect("write_mapped");
            wait_for(d, i).expect("wait");
            t[9].push(s.elapsed());

            let s = Instant::now();
            let i = resident
                .write_mapped(d, q, 0, size, |_, mut part| part.fill(0x5a))
                .expect("write_mapped in place");
            wait_for(d, i).expect("wait");
            t[10].push(s.elapsed());

            let s = Instant::now();
            host_copy(&mut copy, &data);
            t[11].push(s.elapsed());
            black_box(&copy);
        }
        let [r, rw_, rs, rz, rm, w, wu, ww, wsp, wz, wf, hc] = t.map(|v| {
            if v.is_empty() {
                Duration::ZERO
            } else {
                median(v)
            }
        });
        println!(
            "read size={size} hurray_us={:.1} hurray_gbps={:.3} raw_wait_us={:.1} raw_spin_us={:.1} raw_spin_gbps={:.3} zerocopy_us={:.1} zerocopy_gbps={:.3} mapped_us={:.1}",
            us(r),
            gbps(size, r),
            us(rw_),
            us(rs),
            gbps(size, rs),
            us(rz),
            gbps(size, rz),
            us(rm),
        );
        println!(
            "write size={size} hurray_us={:.1} hurray_gbps={:.3} upload_us={:.1} upload_gbps={:.3} raw_wait_us={:.1} raw_spin_us={:.1} raw_spin_gbps={:.3} zerocopy_us={:.1} zerocopy_gbps={:.3} zerocopy_fill_us={:.1} zerocopy_fill_gbps={:.3} host_copy_gbps={:.3}",
            us(w),
            gbps(size, w),
            us(wu),
            gbps(size, wu),
            us(ww),
            us(wsp),
            gbps(size, wsp),
            us(wz),
            gbps(size, wz),
            us(wf),
            gbps(size, wf),
            gbps(size, hc),
        );
        rows.push([
            size as f64,
            gbps(size, r),
            gbps(size, rz),
            gbps(size, rs),
            gbps(size, w),
            gbps(size, wz),
            gbps(size, wsp),
        ]);
    }
    if let Some(path) = &svg_path {
        draw(path, &rows, cuda.as_deref(), &info.name);
    }
    let s = hurray_gpu::staging_stats();
    println!(
        "staging pooled_bytes={} pooled_buffers={} in_use_bytes={} cap_bytes={}",
        s.pooled_bytes, s.pooled_buffers, s.in_use_bytes, s.cap_bytes
    );
}
