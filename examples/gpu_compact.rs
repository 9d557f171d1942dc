//! Stream compaction on the GPU, end to end through hurray:
//!
//! 1. `keep`: every element below a threshold is appended to `output` at a
//!    slot taken with an atomic add on `count` (the device-published count);
//! 2. `make_args`: one thread turns `count` into indirect dispatch arguments;
//! 3. `square`: dispatched *indirectly* from those arguments, it squares
//!    exactly the `count` kept elements;
//! 4. the host reads back the 4-byte count, then only the counted prefix of
//!    `output` with `readback_prefix`.
//!
//! Run: `cargo run --example gpu_compact --features gpu [n] [threshold]`

use hurray::gpu::wgpu::BufferUsages;
use hurray::gpu::{ApiMisuse, BackendError, GpuBufferHandle, GpuContext, GpuKernel, GpuResource};

const KEEP: &str = r"
struct Params { threshold: u32, n: u32, width: u32, pad: u32 }
@group(0) @binding(0) var<storage, read> input: array<u32>;
@group(0) @binding(1) var<storage, read_write> output: array<u32>;
@group(0) @binding(2) var<storage, read_write> count: atomic<u32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn keep(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.y * params.width + id.x;
    if i >= params.n { return; }
    let x = input[i];
    if x < params.threshold {
        output[atomicAdd(&count, 1u)] = x;
    }
}
";

const MAKE_ARGS: &str = r"
@group(0) @binding(0) var<storage, read> count: u32;
@group(0) @binding(1) var<storage, read_write> args: array<u32, 3>;

@compute @workgroup_size(1)
fn make_args() {
    args[0] = (count + 63u) / 64u;
    args[1] = 1u;
    args[2] = 1u;
}
";

const SQUARE: &str = r"
@group(0) @binding(0) var<storage, read_write> output: array<u32>;
@group(0) @binding(1) var<storage, read> count: u32;

@compute @workgroup_size(64)
fn square(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < count {
        output[id.x] = output[id.x] * output[id.x];
    }
}
";

/// The three kernels of the compaction, compiled once and reused.
pub struct Compactor {
    keep: GpuKernel,
    make_args: GpuKernel,
    square: GpuKernel,
}

impl Compactor {
    /// Compiles the kernels.
    pub fn new(ctx: &GpuContext) -> Result<Self, BackendError> {
        Ok(Self {
            keep: GpuKernel::new(&ctx.device, KEEP, "keep")?,
            make_args: GpuKernel::new(&ctx.device, MAKE_ARGS, "make_args")?,
            square: GpuKernel::new(&ctx.device, SQUARE, "square")?,
        })
    }

    /// The squares of the elements of `input` below `threshold`, in the
    /// (unspecified) order the GPU appended them.
    pub fn run(
        &self,
        ctx: &GpuContext,
        input: &[u32],
        threshold: u32,
    ) -> Result<Vec<u32>, BackendError> {
        let (d, q) = (&ctx.device, &ctx.queue);
        let n =
            u32::try_from(input.len()).map_err(|_| BackendError::ApiMisuse(ApiMisuse::Overflow))?;
        let storage = BufferUsages::STORAGE | BufferUsages::COPY_SRC;
        // wgpu refuses zero-sized bindings: give empty inputs one padding element.
        let input_buf = if input.is_empty() {
            GpuBufferHandle::upload_slice(d, q, &[0u32], storage)?
        } else {
            GpuBufferHandle::upload_slice(d, q, input, storage)?
        };
        let output = GpuBufferHandle::alloc_elements::<u32>(d, input.len().max(1), storage)?;
        let count = GpuBufferHandle::alloc_elements::<u32>(d, 1, storage)?;
        let args = GpuBufferHandle::alloc_elements::<u32>(
            d,
            3,
            BufferUsages::STORAGE | BufferUsages::INDIRECT,
        )?;

        // Pass 1 over n elements, as a 2-D grid when n needs more than 65535 workgroups.
        let groups = n.div_ceil(64);
        let max = d.limits().max_compute_workgroups_per_dimension;
        let (gx, gy) = if groups <= max {
            (groups, 1)
        } else {
            (max, groups.div_ceil(max))
        };
        let params = [threshold, n, gx * 64, 0];
        self.keep.dispatch(
            q,
            &[
                (&input_buf).into(),
                (&output).into(),
                (&count).into(),
                GpuResource::uniform(&params),
            ],
            [gx, gy, 1],
        )?;
        // Pass 2: the device turns its own count into dispatch arguments.
        self.make_args
            .dispatch(q, &[(&count).into(), (&args).into()], [1, 1, 1])?;
        // Pass 3: exactly `count` elements, sized by the GPU.
        self.square
            .dispatch_indirect(q, &[(&output).into(), (&count).into()], &args, 0)?;

        // Read the 4-byte count, then only the counted prefix.
        let mut bytes = Vec::new();
        count.readback_prefix(d, q, 4, &mut bytes)?;
        let kept = u32::from_le_bytes(
            bytes[..4]
                .try_into()
                .map_err(|_| BackendError::ApiMisuse(ApiMisuse::Overflow))?,
        );
        output.readback_prefix(d, q, u64::from(kept) * 4, &mut bytes)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// The three kernels (for cache statistics).
    pub fn kernels(&self) -> [&GpuKernel; 3] {
        [&self.keep, &self.make_args, &self.square]
    }
}

/// What the GPU computes, on the CPU: sorted, since GPU order is unspecified.
pub fn reference(input: &[u32], threshold: u32) -> Vec<u32> {
    let mut v: Vec<u32> = input
        .iter()
        .filter(|&&x| x < threshold)
        .map(|&x| x.wrapping_mul(x))
        .collect();
    v.sort_unstable();
    v
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(1 << 20), |s| s.parse())?;
    let threshold: u32 = args.next().map_or(Ok(1 << 30), |s| s.parse())?;
    let ctx = GpuContext::new()?;
    println!("adapter: {}", ctx.adapter_info().name);
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let input: Vec<u32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u32
        })
        .collect();
    let compactor = Compactor::new(&ctx)?;
    let mut got = compactor.run(&ctx, &input, threshold)?;
    got.sort_unstable();
    let want = reference(&input, threshold);
    println!(
        "{n} elements, {} below {threshold}; GPU result matches the CPU: {}",
        got.len(),
        got == want
    );
    assert_eq!(got, want);
    // A second run over the same kernels; its buffers are new, so the bind
    // groups miss, and the first run's dead entries are swept out.
    compactor.run(&ctx, &input, threshold / 2)?;
    for k in compactor.kernels() {
        let c = k.cache_stats();
        println!(
            "kernel {:<9} bind groups: {} reused, {} created, {} cached",
            k.entry_point(),
            c.hits,
            c.misses,
            c.entries
        );
    }
    Ok(())
}
