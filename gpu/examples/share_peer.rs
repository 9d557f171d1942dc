//! The Vulkan side of `tests/python/cuda_share.py`: a producer that shares its
//! GPU buffers with another process (there: CUDA and PyTorch) over the
//! socket it gets as stdin, and answers commands on it.
//!
//! Run by the Python script, not by hand (Linux only):
//! `HURRAY_SHARE_PEER=target/release/examples/share_peer python3 tests/python/cuda_share.py`
//!
//! Commands (one byte, then a little-endian `u64` argument), each answered
//! on the socket:
//!
//! * `A n` — allocate an exportable buffer of `n` bytes (a multiple of 4) and
//!   have a WGSL kernel write `data[i] = i ^ 0x2A5A5A5A` into it; answers
//!   `a`.
//! * `S 0` — export it as `int32 [n / 4]` and send the share message (header,
//!   descriptor, fd); the export waits for the queue (`ProducerSynced`).
//! * `E 0` — the same with `Event` sync (`export_event`): waits for nothing;
//!   the message carries the buffer's timeline semaphore (a second fd) and
//!   the value it reaches once the kernel is done. Where the device has no
//!   `VK_KHR_external_semaphore_fd` it is `S`.
//! * `C 0` — whether this device's `Event` exports carry a semaphore;
//!   answers `c` + 1 or 0 (`u64`).
//! * `W v` — make later work on this device wait, on the GPU, until the
//!   buffer's semaphore reaches `v` (the consumer's signal); answers `w`.
//!   A `V` after it reads what the consumer wrote before signalling.
//! * `V x` — read the buffer back (hurray's readback) and count the words
//!   that differ from `(i ^ 0x2A5A5A5A) ^ x`; answers `v` + count (`u64`).
//! * `R 0` — time one whole readback into a new `Vec` (the copy that sharing
//!   replaces); answers `r` + nanoseconds (`u64`).
//! * `T 0` — how long the last `S` took in this process (export, which
//!   waits for the queue, and send); answers `t` + nanoseconds (`u64`).
//! * `F 0` — drop the buffer; answers `f`.
//! * `Q 0` — quit.

#[cfg(target_os = "linux")]
mod peer {
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    use hurray_core::ElementType;
    use hurray_gpu::{
        GpuBufferHandle, GpuContext, GpuKernel, GpuResource, device_identity, event_sync,
    };

    /// The producer's pattern.
    pub(crate) const SEED: u32 = 0x2A5A_5A5A;

    /// A grid-stride loop, so any size fits one dispatch.
    const FILL: &str = r"
struct Params { seed: u32, p0: u32, p1: u32, p2: u32 }
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(256)
fn fill(@builtin(global_invocation_id) id: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
    let stride = groups.x * 256u;
    for (var i = id.x; i < arrayLength(&data); i += stride) {
        data[i] = i ^ params.seed;
    }
}
";

    fn reply(socket: &UnixStream, tag: u8, value: Option<u64>) -> std::io::Result<()> {
        let mut out = vec![tag];
        if let Some(v) = value {
            out.extend_from_slice(&v.to_le_bytes());
        }
        (&*socket).write_all(&out)
    }

    pub(crate) fn main() -> Result<(), Box<dyn std::error::Error>> {
        let socket = UnixStream::from(std::io::stdin().as_fd().try_clone_to_owned()?);
        let ctx = GpuContext::new()?;
        let info = ctx.adapter_info();
        let id = device_identity(&ctx.device)?;
        let sync = event_sync(&ctx.device);
        eprintln!(
            "share_peer: {} ({:?}), {id}, event sync: {}",
            info.name,
            info.backend,
            sync.as_ref()
                .map_or_else(ToString::to_string, |()| "timeline semaphore".into())
        );
        let fill = GpuKernel::new(&ctx.device, FILL, "fill")?;
        let mut buffer: Option<GpuBufferHandle> = None;
        let mut last_share_ns = 0u64;
        loop {
            let mut command = [0u8; 9];
            if (&socket).read_exact(&mut command).is_err() {
                return Ok(()); // the consumer went away
            }
            let [tag, arg @ ..] = command;
            let arg = u64::from_le_bytes(arg);
            match tag {
                b'A' => {
                    let h = GpuBufferHandle::alloc_exportable(&ctx.device, &ctx.queue, arg)?;
                    let seed = GpuResource::uniform(&[SEED, 0, 0, 0]);
                    fill.dispatch(&ctx.queue, &[(&h).into(), seed], [4096, 1, 1])?;
                    buffer = Some(h);
                    reply(&socket, b'a', None)?;
                }
                b'S' => {
                    let h = buffer.as_ref().ok_or("S before A")?;
                    let start = Instant::now();
                    h.export(ElementType::Int32, &[h.byte_len() / 4])?
                        .send(&socket)?;
                    last_share_ns = u64::try_from(start.elapsed().as_nanos())?;
                }
                b'E' => {
                    let h = buffer.as_ref().ok_or("E before A")?;
                    let start = Instant::now();
                    h.export_event(ElementType::Int32, &[h.byte_len() / 4])?
                        .send(&socket)?;
                    last_share_ns = u64::try_from(start.elapsed().as_nanos())?;
                }
                b'C' => reply(&socket, b'c', Some(u64::from(sync.is_ok())))?,
                b'W' => {
                    let h = buffer.as_ref().ok_or("W before A")?;
                    h.wait_event(arg)?;
                    reply(&socket, b'w', None)?;
                }
                b'V' => {
                    let h = buffer.as_ref().ok_or("V before A")?;
                    let xor = u32::try_from(arg)?;
                    let words: Vec<u32> = h.readback_vec(&ctx.device, &ctx.queue)?;
                    let bad = words
                        .iter()
                        .zip(0u32..)
                        .filter(|&(w, i)| *w != (i ^ SEED) ^ xor)
                        .count();
                    reply(&socket, b'v', Some(u64::try_from(bad)?))?;
                }
                b'R' => {
                    let h = buffer.as_ref().ok_or("R before A")?;
                    let start = Instant::now();
                    let mut out = Vec::new();
                    h.readback(&ctx.device, &ctx.queue, &mut out)?;
                    let ns = u64::try_from(start.elapsed().as_nanos())?;
                    std::hint::black_box(&out);
                    reply(&socket, b'r', Some(ns))?;
                }
                b'T' => reply(&socket, b't', Some(last_share_ns))?,
                b'F' => {
                    buffer = None;
                    reply(&socket, b'f', None)?;
                }
                b'Q' => return Ok(()),
                other => return Err(format!("unknown command {other:#04x}").into()),
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(target_os = "linux")]
    return peer::main();
    #[cfg(not(target_os = "linux"))]
    Err("share_peer: sharing GPU buffers as file descriptors needs Linux".into())
}
