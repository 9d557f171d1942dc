//! File loader benchmark: `.hrry` files into GPU buffers, beside the
//! baselines measured in the same command, drawn as an SVG.
//!
//! Run: `cargo run --release -p hurray-rs-gpu --example load_bench -- [--runs N]
//! [--threads N] [--pack-below BYTES] [--slab-size BYTES] [--baseline FILE]...
//! [--svg PATH] FILE.hrry...`
//!
//! `--pack-below` and `--slab-size` set `LoadOptions::pack_below` (buffers
//! under this many bytes share slabs; default 1 MiB, `0` = one GPU buffer
//! per tensor buffer) and `LoadOptions::slab_size` (default 64 MiB).
//!
//! For each file, after one warm-up load (page cache, staging ring), it
//! times `--runs` loads (default 5) two ways, medians:
//! * `cold`  — `load_file`, allocating every GPU buffer (the previous
//!   load's freed first): what a process's first load of a model costs;
//! * `reuse` — `load_file` with `LoadOptions::reuse` of the previous load:
//!   no allocation, as a second `safetensors` load into PyTorch's caching
//!   allocator.
//!
//! One line per file:
//! `load_bench file=<path> bytes=<n> tensors=<k> cold_gbps= reuse_gbps= cold_ms= reuse_ms= validate_ms= allocate_ms= copy_ms= dma= threads= pack_below= slabs= packed= list_ms= retag_ms= plan_ms= gpu_alloc_ms= build_ms= fill_ms= submit_ms= wait_slot_ms= wait_buffer_ms=`
//! (phases of the median cold run: `allocate_ms` is `list_ms` + `retag_ms` +
//! `plan_ms` (host work) + `gpu_alloc_ms` (creating the GPU buffers, beside
//! the first copies), `build_ms` is building the loaded tensors after the
//! copies, so `validate_ms + allocate_ms + copy_ms + build_ms` is about
//! `cold_ms`; `slabs` GPU buffers shared by `packed`
//! tensor buffers, `slabs=0 packed=0` when nothing was packed;
//! `fill_ms`, `submit_ms`, `wait_slot_ms`,
//! `wait_buffer_ms` the copy threads' time, summed over the threads:
//! `LoadTimes::workers`). `--baseline` files hold the output of
//! `safetensors_load.py` (`load <method> bytes=<n> tensors=<k> gbps=…`,
//! matched to a file by its tensor count and its size within 1 %: the
//! safetensors file's count includes its header) and `load_ceiling.py`
//! (`ceiling <method> … gbps=…`); `--svg PATH` draws one group of bars per
//! file: ours (cold, reuse), `safetensors` → CUDA, one pinned CUDA copy of
//! the same bytes, and the host's ceiling (the best page cache → pinned
//! copy, capped by pinned → GPU).

use std::time::Instant;

use hurray_gpu::{GpuContext, LoadOptions, Loaded, load_file};

#[path = "svg/mod.rs"]
mod svg;

/// `key=value` of a bench line.
fn field(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Result_ {
    label: String,
    bytes: u64,
    tensors: usize,
    cold: f64,
    reuse: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 5usize;
    let mut threads = None;
    let mut baselines = String::new();
    let mut svg_path = None;
    let mut pack_below = hurray_gpu::DEFAULT_PACK_BELOW;
    let mut slab_size = hurray_gpu::DEFAULT_SLAB_SIZE;
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().expect("--runs N").parse().expect("--runs N"),
            "--threads" => threads = Some(it.next().expect("--threads N").parse().expect("N")),
            "--baseline" => {
                let p = it.next().expect("--baseline FILE");
                baselines.push_str(&std::fs::read_to_string(p).expect("baseline file"));
                baselines.push('\n');
            }
            "--svg" => svg_path = Some(it.next().expect("--svg PATH").clone()),
            "--pack-below" => {
                pack_below = it
                    .next()
                    .expect("--pack-below BYTES")
                    .parse()
                    .expect("BYTES");
            }
            "--slab-size" => {
                slab_size = it
                    .next()
                    .expect("--slab-size BYTES")
                    .parse()
                    .expect("BYTES");
            }
            f => files.push(f.to_owned()),
        }
    }
    let threads = threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(hurray_gpu::DEFAULT_MAX_THREADS, usize::from)
    });
    hurray_gpu::set_worker_threads(threads).expect("threads");
    let runs = runs.max(1);
    let ctx = GpuContext::new().expect("a GPU adapter");
    let info = ctx.adapter_info();
    println!(
        "adapter: {} ({:?}); host_dma {}; threads {}",
        info.name,
        info.backend,
        ctx.host_dma(),
        hurray_gpu::worker_threads()
    );
    let mut results = Vec::new();
    for f in &files {
        let once = |reuse: Option<Loaded>| {
            let mut o = LoadOptions::default()
                .pack_below(pack_below)
                .slab_size(slab_size);
            if let Some(r) = reuse {
                o = o.reuse(r);
            }
            let t = Instant::now();
            let l = load_file(&ctx.device, &ctx.queue, f, o).expect("load");
            (t.elapsed().as_secs_f64(), l)
        };
        let (_, mut loaded) = once(None);
        let (bytes, tensors, dma) = (loaded.bytes, loaded.tensors.len(), loaded.dma);
        let (slabs, packed) = (loaded.slabs, loaded.packed);
        let mut cold = Vec::new();
        for _ in 0..runs {
            drop(loaded);
            let (s, l) = once(None);
            cold.push((s, l.times));
            loaded = l;
        }
        let mut reuse = Vec::new();
        for _ in 0..runs {
            let (s, l) = once(Some(loaded));
            assert_eq!(l.reused, l.tensors.len(), "every buffer reused");
            reuse.push(s);
            loaded = l;
        }
        drop(loaded);
        cold.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (cold_s, times) = cold[cold.len() / 2];
        let reuse_s = median(reuse);
        let gbps = |s: f64| bytes as f64 / s / 1e9;
        println!(
            "load_bench file={f} bytes={bytes} tensors={tensors} cold_gbps={:.2} reuse_gbps={:.2} cold_ms={:.2} reuse_ms={:.2} validate_ms={:.2} allocate_ms={:.2} copy_ms={:.2} dma={dma} threads={} pack_below={pack_below} slabs={slabs} packed={packed} list_ms={:.2} retag_ms={:.2} plan_ms={:.2} gpu_alloc_ms={:.2} build_ms={:.2} fill_ms={:.2} submit_ms={:.2} wait_slot_ms={:.2} wait_buffer_ms={:.2}",
            gbps(cold_s),
            gbps(reuse_s),
            cold_s * 1e3,
            reuse_s * 1e3,
            times.validate.as_secs_f64() * 1e3,
            times.allocate.as_secs_f64() * 1e3,
            times.copy.as_secs_f64() * 1e3,
            hurray_gpu::worker_threads(),
            times.list.as_secs_f64() * 1e3,
            times.retag.as_secs_f64() * 1e3,
            times.plan.as_secs_f64() * 1e3,
            times.gpu_allocate.as_secs_f64() * 1e3,
            times.build.as_secs_f64() * 1e3,
            times.workers.fill.as_secs_f64() * 1e3,
            times.workers.submit.as_secs_f64() * 1e3,
            times.workers.wait_slot.as_secs_f64() * 1e3,
            times.workers.wait_buffer.as_secs_f64() * 1e3,
        );
        results.push(Result_ {
            label: format!("{}, {tensors} tensors", svg::size_label(bytes as f64)),
            bytes,
            tensors,
            cold: gbps(cold_s),
            reuse: gbps(reuse_s),
        });
    }
    if let Some(path) = svg_path {
        // A baseline line of method `m` for this file (bytes and count).
        let base = |m: &str, r: &Result_| {
            baselines.lines().find_map(|l| {
                let mut w = l.split_whitespace();
                // The safetensors file's bytes include its header: the
                // same file within 1 %.
                let near = field(l, "bytes")
                    .is_some_and(|b| (b - r.bytes as f64).abs() <= r.bytes as f64 / 100.0);
                (w.next() == Some("load")
                    && w.next() == Some(m)
                    && near
                    && field(l, "tensors") == Some(r.tensors as f64))
                .then(|| field(l, "gbps"))
                .flatten()
            })
        };
        let best = |m: &str| {
            baselines
                .lines()
                .filter(|l| l.split_whitespace().take(2).eq(["ceiling", m]))
                .filter_map(|l| field(l, "gbps"))
                .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
        };
        let copy = best("pread_pinned")
            .into_iter()
            .chain(best("memcpy_pinned"))
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        let ceiling = match (copy, best("pinned_h2d")) {
            (Some(c), Some(h)) => Some(c.min(h)),
            (c, h) => c.or(h),
        };
        let groups: Vec<String> = results.iter().map(|r| r.label.clone()).collect();
        let mut series = vec![
            (
                "hurray load (allocating)".to_owned(),
                svg::OURS,
                results.iter().map(|r| Some(r.cold)).collect(),
            ),
            (
                "hurray load (reused buffers)".to_owned(),
                svg::OURS_2,
                results.iter().map(|r| Some(r.reuse)).collect(),
            ),
            (
                "safetensors load_file(device=cuda)".to_owned(),
                svg::PAGEABLE,
                results
                    .iter()
                    .map(|r| base("safetensors_cuda", r))
                    .collect(),
            ),
            (
                "CUDA pinned copy of the bytes".to_owned(),
                svg::PINNED,
                results
                    .iter()
                    .map(|r| base("pinned_copy", r))
                    .collect::<Vec<_>>(),
            ),
        ];
        if ceiling.is_some() {
            series.push((
                "host ceiling (load_ceiling.py)".to_owned(),
                svg::OTHER,
                results.iter().map(|_| ceiling).collect(),
            ));
        }
        let doc = svg::bar_chart(
            "Model file (page cache) → GPU buffers",
            &groups,
            &series,
            &format!(
                "load_bench on {}; medians of {runs}; GB = 10^9 bytes",
                info.name
            ),
        );
        std::fs::write(&path, doc).expect("write the SVG");
        println!("svg {path}");
    }
}
