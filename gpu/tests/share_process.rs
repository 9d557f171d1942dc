//! One allocation shared between two processes (issue 13's CI proof).
//!
//! The parent allocates an exportable buffer, fills it, and sends the
//! descriptor and the memory's fd over a socket pair to a child process (this
//! same binary, run with `--child`, the socket as its stdin). The child
//! validates and imports the memory, checks it sees the parent's values,
//! writes a pattern with a WGSL kernel, waits for its queue, and says so;
//! the parent reads the pattern back from its own handle. No byte of the
//! buffer crosses the socket: only the 56-byte header, the descriptor and the
//! fd do.
//!
//! A plain `main` (`harness = false`): the child must be this program, and
//! libtest would run every test in it.

#[cfg(target_os = "linux")]
mod common;

#[cfg(target_os = "linux")]
mod run {
    use std::io::{Read, Write};
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::net::UnixStream;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use hurray_core::ElementType;
    use hurray_gpu::{GpuBufferHandle, GpuKernel, GpuResource, ShareError, SharedBuffer};

    const N: u32 = 1 << 18;
    const SEED: u32 = 0x5EED_C0DE;

    const PATTERN: &str = r"
struct Params { seed: u32, p0: u32, p1: u32, p2: u32 }
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(64)
fn pattern(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < arrayLength(&data) { data[id.x] = (id.x * 2654435761u) ^ params.seed; }
}
";

    fn parent_values() -> Vec<u32> {
        (0..N).map(|i| i ^ 0xFFFF_0000).collect()
    }

    fn child_values() -> Vec<u32> {
        (0..N)
            .map(|i| i.wrapping_mul(2_654_435_761) ^ SEED)
            .collect()
    }

    /// Whether the parent ran the exchange or skipped it.
    pub(super) enum Ran {
        Shared,
        Skipped,
    }

    pub(super) fn parent() -> Result<Ran, String> {
        let Some(c) = super::common::sharing_ctx("share_process") else {
            return Ok(Ran::Skipped);
        };
        let h = GpuBufferHandle::alloc_exportable(&c.device, &c.queue, u64::from(N) * 4)
            .map_err(|e| format!("alloc_exportable: {e}"))?;
        h.write_slice(&c.device, &c.queue, 0, &parent_values())
            .map_err(|e| format!("write: {e}"))?;
        let (ours, theirs) = UnixStream::pair().map_err(|e| e.to_string())?;
        ours.set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(|e| e.to_string())?;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .arg("--child")
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        println!("parent: child {} started", child.id());
        let message = h
            .export(ElementType::UInt32, &[u64::from(N)])
            .map_err(|e| format!("export: {e}"))?;
        message.send(&ours).map_err(|e| format!("send: {e}"))?;
        println!(
            "parent: sent {} descriptor bytes and the fd of a {}-byte allocation (memory type {})",
            message.descriptor_bytes().len(),
            message.allocation_size(),
            message.memory_type_index()
        );
        let mut reply = [0u8; 1];
        let got = (&ours).read_exact(&mut reply);
        let status = child.wait().map_err(|e| format!("wait: {e}"))?;
        got.map_err(|e| format!("no reply from the child ({status}): {e}"))?;
        if !status.success() || reply != *b"k" {
            return Err(format!("child failed: {status}, reply {reply:?}"));
        }
        let seen: Vec<u32> = h
            .readback_vec(&c.device, &c.queue)
            .map_err(|e| format!("readback: {e}"))?;
        if seen != child_values() {
            let bad = seen.iter().zip(child_values()).position(|(a, b)| *a != b);
            return Err(format!(
                "the parent does not see the child's pattern (first difference at {bad:?})"
            ));
        }
        println!("parent: read back the child's pattern, all {N} words");
        Ok(Ran::Shared)
    }

    pub(super) fn child() -> Result<(), String> {
        let socket = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map(UnixStream::from)
            .map_err(|e| e.to_string())?;
        let c = hurray_gpu::GpuContext::new().map_err(|e| format!("child context: {e}"))?;
        let shared = SharedBuffer::recv(&socket).map_err(|e| format!("recv: {e}"))?;
        let view = shared.descriptor();
        if view.element_type() != ElementType::UInt32 || view.element_count() != Some(u64::from(N))
        {
            return Err(format!("unexpected descriptor {view:?}"));
        }
        let h = GpuBufferHandle::import(&c.device, &c.queue, shared)
            .map_err(|e: ShareError| format!("import: {e}"))?;
        let first: Vec<u32> = h
            .readback_vec(&c.device, &c.queue)
            .map_err(|e| format!("child readback: {e}"))?;
        if first != parent_values() {
            return Err("the child does not see the parent's values".into());
        }
        println!("child: imported the parent's memory and sees its {N} words");
        let k = GpuKernel::new(&c.device, PATTERN, "pattern").map_err(|e| e.to_string())?;
        let seed = GpuResource::uniform(&[SEED, 0, 0, 0]);
        k.dispatch(&c.queue, &[(&h).into(), seed], [N / 64, 1, 1])
            .map_err(|e| format!("dispatch: {e}"))?;
        // ProducerSynced the other way: finish the kernel before replying.
        c.device
            .poll(hurray_gpu::wgpu::PollType::wait_indefinitely())
            .map_err(|e| format!("poll: {e}"))?;
        println!("child: wrote the pattern with a kernel");
        (&socket).write_all(b"k").map_err(|e| e.to_string())?;
        Ok(())
    }
}

fn main() {
    #[cfg(target_os = "linux")]
    {
        let is_child = std::env::args().any(|a| a == "--child");
        let r = if is_child {
            run::child().map(|()| None)
        } else {
            run::parent().map(Some)
        };
        match r {
            Ok(Some(run::Ran::Shared)) => println!("share_process: ok"),
            // `SKIPPED share_process: …` is already on standard error.
            Ok(Some(run::Ran::Skipped) | None) => {}
            Err(e) => {
                eprintln!("{}: {e}", if is_child { "child" } else { "parent" });
                std::process::exit(1);
            }
        }
    }
}
