//! `hurray load` (feature `gpu`): loads a `.hrry` file's tensors into GPU
//! buffers (`hurray_gpu::load_file`) a few times and reports the rate, for
//! users to try on their own models.
//!
//! Every run is timed from opening the file to the GPU holding every byte
//! (the loader returns then), allocation of the GPU buffers included; the
//! page cache and the loader's staging ring are warmed by the first run,
//! which is not counted when more than one run is asked for. With
//! `--reuse`, each run loads into the buffers of the run before
//! (`LoadOptions::reuse`: no allocation, as a second `safetensors` load
//! into PyTorch's caching allocator). One line goes to standard output:
//!
//! ```text
//! load file=<path> bytes=<n> tensors=<k> runs=<r> median_ms=<ms> gbps=<GB/s> best_gbps=<GB/s> validate_ms=<ms> allocate_ms=<ms> copy_ms=<ms> gpu_alloc_ms=<ms> build_ms=<ms> fill_ms=<ms> submit_ms=<ms> wait_slot_ms=<ms> reuse=<bool> dma=<true|false> slabs=<s> packed=<p> threads=<t> adapter=<name>
//! ```
//!
//! (`gbps` from the median; the phases are those of the median run
//! (`LoadTimes`: `gpu_alloc_ms` the part of `allocate_ms` spent creating
//! GPU buffers, `build_ms` building the loaded tensors; `fill_ms`,
//! `submit_ms` and `wait_slot_ms` the DMA copy threads' time copying,
//! submitting and waiting for a staging slot, summed over the threads, 0
//! off the threaded DMA path); 1 GB = 10⁹ bytes; `slabs` GPU buffers shared by `packed` small tensor buffers,
//! `LoadOptions::pack_below`, both 0 with `--no-pack`.)

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use hurray_gpu::{ContextOptions, GpuContext, LoadOptions, LoadTimes, Loaded, load_file};

/// The arguments of `hurray load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The `.hrry` file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Load only these tensors (repeatable; default: all).
    #[arg(long = "tensor", value_name = "NAME")]
    pub tensors: Vec<String>,
    /// Timed runs after the warm-up run.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Host threads that copy file pages (default: the machine's cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Stage through mapped buffers instead of host memory the GPU reaches
    /// by DMA (for comparison).
    #[arg(long)]
    pub no_dma: bool,
    /// Load each run into the buffers of the run before (no allocation).
    #[arg(long)]
    pub reuse: bool,
    /// Give every tensor buffer a GPU buffer of its own instead of packing
    /// those under 1 MiB into shared slabs (for comparison).
    #[arg(long)]
    pub no_pack: bool,
}

/// What `hurray load` measured.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadReport {
    /// Buffer bytes loaded per run.
    pub bytes: u64,
    /// Tensors loaded per run.
    pub tensors: usize,
    /// Timed runs.
    pub runs: usize,
    /// Median seconds of a run.
    pub median_s: f64,
    /// Fastest run, seconds.
    pub best_s: f64,
    /// The median run's phases.
    pub times: LoadTimes,
    /// Whether runs reused the buffers of the run before.
    pub reuse: bool,
    /// Whether DMA staging was used.
    pub dma: bool,
    /// Slabs (GPU buffers shared by small tensor buffers) per run.
    pub slabs: usize,
    /// Tensor buffers packed into slabs per run.
    pub packed: usize,
    /// Host copy threads.
    pub threads: usize,
    /// The adapter's name.
    pub adapter: String,
}

impl LoadReport {
    /// The report line (module docs).
    #[must_use]
    pub fn line(&self, path: &Path) -> String {
        let gbps = |s: f64| self.bytes as f64 / s.max(1e-9) / 1e9;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        format!(
            "load file={} bytes={} tensors={} runs={} median_ms={:.2} gbps={:.2} best_gbps={:.2} validate_ms={:.2} allocate_ms={:.2} copy_ms={:.2} gpu_alloc_ms={:.2} build_ms={:.2} fill_ms={:.2} submit_ms={:.2} wait_slot_ms={:.2} reuse={} dma={} slabs={} packed={} threads={} adapter={:?}",
            path.display(),
            self.bytes,
            self.tensors,
            self.runs,
            self.median_s * 1e3,
            gbps(self.median_s),
            gbps(self.best_s),
            self.times.validate.as_secs_f64() * 1e3,
            self.times.allocate.as_secs_f64() * 1e3,
            self.times.copy.as_secs_f64() * 1e3,
            ms(self.times.gpu_allocate),
            ms(self.times.build),
            ms(self.times.workers.fill),
            ms(self.times.workers.submit),
            ms(self.times.workers.wait_slot),
            self.reuse,
            self.dma,
            self.slabs,
            self.packed,
            self.threads,
            self.adapter
        )
    }
}

/// Runs `hurray load`.
///
/// # Errors
/// A message: no adapter, or the loader's error (with the file's byte
/// offset where it applies).
pub fn run(args: &LoadArgs) -> Result<LoadReport, String> {
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(hurray_gpu::DEFAULT_MAX_THREADS, usize::from)
    });
    hurray_gpu::set_worker_threads(threads).map_err(|e| e.to_string())?;
    let ctx = GpuContext::with_options(ContextOptions::default().host_dma(!args.no_dma))
        .map_err(|e| e.to_string())?;
    let once = |previous: Option<Loaded>| {
        let mut options = if args.tensors.is_empty() {
            LoadOptions::default()
        } else {
            LoadOptions::default().only(&args.tensors)
        };
        if args.no_pack {
            options = options.pack_below(0);
        }
        if let Some(p) = previous {
            options = options.reuse(p);
        }
        let t = Instant::now();
        let loaded =
            load_file(&ctx.device, &ctx.queue, &args.path, options).map_err(|e| e.to_string())?;
        Ok::<_, String>((t.elapsed().as_secs_f64(), loaded))
    };
    let (first, mut loaded) = once(None)?;
    let (bytes, tensors, dma) = (loaded.bytes, loaded.tensors.len(), loaded.dma);
    let (slabs, packed) = (loaded.slabs, loaded.packed);
    let mut times = vec![(first, loaded.times)];
    for i in 0..args.runs {
        let previous = args.reuse.then_some(loaded);
        // Without reuse, the previous run's buffers are freed before this one.
        let (s, l) = once(previous)?;
        loaded = l;
        if i == 0 {
            times.clear();
        }
        times.push((s, loaded.times));
    }
    drop(loaded);
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (median_s, median_times) = times
        .get(times.len() / 2)
        .copied()
        .unwrap_or((first, LoadTimes::default()));
    let best_s = times.first().map_or(first, |t| t.0);
    Ok(LoadReport {
        bytes,
        tensors,
        runs: times.len(),
        median_s,
        best_s,
        times: median_times,
        reuse: args.reuse,
        dma,
        slabs,
        packed,
        threads: hurray_gpu::worker_threads(),
        adapter: ctx.adapter_info().name,
    })
}
