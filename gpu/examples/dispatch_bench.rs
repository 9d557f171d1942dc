//! Dispatch overhead: a warm bind-group cache against building the bind group
//! on every dispatch, in one run, on the same buffers and shader.
//!
//! Run: `cargo run --release -p hurray-rs-gpu --example dispatch_bench`
//!
//! Three loops of 2000 dispatches of a one-workgroup kernel with 4 bound
//! buffers, interleaved 5 times (best loop kept). Dispatches are recorded
//! 100 to an encoder with `GpuKernel::record`, then submitted and waited for;
//! only the time inside the record calls (bind group + encoding) counts:
//! * `warm`    — every call a cache hit;
//! * `cold`    — `clear_cache` first, every call a miss (hurray's own cost);
//! * `rebuild` — raw wgpu, `create_bind_group` + encode each time.
//!
//! Last line: `dispatch warm_us=<x> cold_us=<x> rebuild_us=<x> rebuild_vs_warm=<ratio>`.

use std::time::{Duration, Instant};

use hurray_gpu::wgpu::{self, BufferUsages};
use hurray_gpu::{GpuBufferHandle, GpuContext, GpuKernel, GpuResource};

const SHADER: &str = r"
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read> c: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn add3(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < arrayLength(&out) { out[id.x] = a[id.x] + b[id.x] + c[id.x]; }
}
";

const N: usize = 2000;
const BATCH: usize = 100;

fn wait(ctx: &GpuContext) {
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
}

fn main() {
    let ctx = GpuContext::new().expect("a GPU adapter");
    println!(
        "adapter: {} ({:?})",
        ctx.adapter_info().name,
        ctx.adapter_info().backend
    );
    let data: Vec<u32> = (0..64).collect();
    let usage = BufferUsages::STORAGE | BufferUsages::COPY_SRC;
    let bufs: Vec<GpuBufferHandle> = (0..4)
        .map(|_| GpuBufferHandle::upload_slice(&ctx.device, &ctx.queue, &data, usage).unwrap())
        .collect();
    let resources: Vec<GpuResource> = bufs.iter().map(GpuResource::from).collect();
    let kernel = GpuKernel::new(&ctx.device, SHADER, "add3").unwrap();

    // The raw-wgpu baseline: same shader, its own pipeline.
    let module = ctx
        .device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
    let pipeline = ctx
        .device
        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("add3"),
            compilation_options: Default::default(),
            cache: None,
        });
    let layout = pipeline.get_bind_group_layout(0);
    let mut rebuild = |enc: &mut wgpu::CommandEncoder| {
        let entries: Vec<wgpu::BindGroupEntry<'_>> = bufs
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.buffer().as_entire_binding(),
            })
            .collect();
        let group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    };

    // Dispatches are recorded BATCH to an encoder and submitted together, so
    // the time measured is the per-dispatch CPU cost (bind group + encoding).
    let timed = |f: &mut dyn FnMut(&mut wgpu::CommandEncoder)| {
        let mut total = Duration::ZERO;
        for _ in 0..N / BATCH {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            for _ in 0..BATCH {
                let t = Instant::now();
                f(&mut enc);
                total += t.elapsed();
            }
            ctx.queue.submit([enc.finish()]);
            wait(&ctx);
        }
        total
    };
    let (mut warm, mut cold, mut raw) = (Duration::MAX, Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        warm = warm.min(timed(&mut |enc| {
            kernel.record(enc, &resources, [1, 1, 1]).unwrap();
        }));
        cold = cold.min(timed(&mut |enc| {
            kernel.clear_cache();
            kernel.record(enc, &resources, [1, 1, 1]).unwrap();
        }));
        raw = raw.min(timed(&mut rebuild));
    }
    // And through `dispatch` (one submission each), for scale.
    let t = Instant::now();
    for _ in 0..200 {
        kernel.dispatch(&ctx.queue, &resources, [1, 1, 1]).unwrap();
    }
    wait(&ctx);
    println!(
        "dispatch() with its own submission: {:.2} us each",
        t.elapsed().as_secs_f64() * 1e6 / 200.0
    );
    // The work was real: out = a + b + c.
    let out: Vec<u32> = bufs[3].readback_vec(&ctx.device, &ctx.queue).unwrap();
    assert_eq!(out[10], 30);
    let stats = kernel.cache_stats();
    println!("cache after the runs: {stats:?}");
    let per = |d: Duration| d.as_secs_f64() * 1e6 / N as f64;
    println!(
        "dispatch warm_us={:.2} cold_us={:.2} rebuild_us={:.2} rebuild_vs_warm={:.2}",
        per(warm),
        per(cold),
        per(raw),
        raw.as_secs_f64() / warm.as_secs_f64()
    );
}
