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
//! Then, where the device shares timeline semaphores (`Event` sync, issue 21:
//! not lavapipe 22, which lacks `VK_KHR_external_semaphore_fd`; the H200
//! runs it), [`EVENT_ROUNDS`] rounds with no host wait on either side: the
//! parent queues a write and exports with `export_event`; the child's import
//! waits for the semaphore on its GPU, checks the values, queues a kernel and
//! answers with the value it signals after it; the parent's GPU waits for
//! that value before its readback. Both processes count their open fds
//! (`/proc/self/fd`) after the first round and the last: equal, or a
//! semaphore or memory fd leaked. `HURRAY_REQUIRE_EVENT_SYNC=1` makes a
//! device without event sync a failure instead of a skip.
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
    /// Rounds of the `Event` exchange.
    const EVENT_ROUNDS: u32 = 6;

    /// Open file descriptors of this process.
    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
    }

    /// Waits until the device is idle, so that wgpu has freed what dropped
    /// handles held (it frees after the last submission using them).
    fn settle(c: &hurray_gpu::GpuContext) -> Result<(), String> {
        c.device
            .poll(hurray_gpu::wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| format!("poll: {e}"))
    }

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
        if let Err(e) = (&ours).read_exact(&mut reply) {
            let status = child.wait().map_err(|e| format!("wait: {e}"))?;
            return Err(format!("no reply from the child ({status}): {e}"));
        }
        if reply != *b"k" {
            let status = child.wait().map_err(|e| format!("wait: {e}"))?;
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
        event_rounds(&c, &h, &ours)?;
        drop(ours);
        let status = child.wait().map_err(|e| format!("wait: {e}"))?;
        if !status.success() {
            return Err(format!("child failed: {status}"));
        }
        Ok(Ran::Shared)
    }

    /// The `Event` rounds, parent side (see the module docs).
    fn event_rounds(
        c: &hurray_gpu::GpuContext,
        h: &GpuBufferHandle,
        ours: &UnixStream,
    ) -> Result<(), String> {
        if let Err(why) = hurray_gpu::event_sync(&c.device) {
            if std::env::var_os("HURRAY_REQUIRE_EVENT_SYNC").is_some_and(|v| v == "1") {
                return Err(format!("HURRAY_REQUIRE_EVENT_SYNC=1 but {why}"));
            }
            eprintln!("SKIPPED share_process event rounds: {why}");
            return Ok(());
        }
        let mut fds_after_first = 0;
        for round in 0..EVENT_ROUNDS {
            let values: Vec<u32> = parent_values().iter().map(|v| v ^ round).collect();
            h.write_slice(&c.device, &c.queue, 0, &values)
                .map_err(|e| format!("write: {e}"))?;
            let message = h
                .export_event(ElementType::UInt32, &[u64::from(N)])
                .map_err(|e| format!("export_event: {e}"))?;
            let value = message
                .wait_value()
                .ok_or("export_event sent no semaphore on a device with event sync")?;
            message.send(ours).map_err(|e| format!("send: {e}"))?;
            drop(message); // both fds closed here
            let mut reply = [0u8; 9];
            (&*ours)
                .read_exact(&mut reply)
                .map_err(|e| format!("no event reply from the child: {e}"))?;
            let [tag, back @ ..] = reply;
            let back = u64::from_le_bytes(back);
            if tag != b'e' || back <= value {
                return Err(format!("child replied {tag:#04x} {back} to value {value}"));
            }
            // The parent's GPU waits for the child's kernel, not its host.
            h.wait_event(back).map_err(|e| format!("wait_event: {e}"))?;
            let seen: Vec<u32> = h
                .readback_vec(&c.device, &c.queue)
                .map_err(|e| format!("readback: {e}"))?;
            let want: Vec<u32> = child_values().iter().map(|v| v ^ round).collect();
            if seen != want {
                return Err(format!(
                    "event round {round}: the parent does not see the child's kernel"
                ));
            }
            if round == 0 {
                settle(c)?;
                fds_after_first = open_fds();
            }
            println!(
                "parent: event round {round}: sent value {value}, waited for {back} on the GPU, bytes checked"
            );
        }
        settle(c)?;
        let fds = open_fds();
        if fds != fds_after_first {
            return Err(format!(
                "fd leak: {fds_after_first} open after round 0, {fds} after round {}",
                EVENT_ROUNDS - 1
            ));
        }
        println!(
            "parent: {EVENT_ROUNDS} event rounds, {fds} fds open after the first and the last"
        );
        Ok(())
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
        drop(h);
        child_event_rounds(&c, &socket, &k)
    }

    /// The `Event` rounds, child side: until the parent closes the socket.
    fn child_event_rounds(
        c: &hurray_gpu::GpuContext,
        socket: &UnixStream,
        k: &GpuKernel,
    ) -> Result<(), String> {
        let mut fds_after_first = 0;
        let mut round = 0u32;
        loop {
            let shared = match SharedBuffer::recv(socket) {
                Ok(s) => s,
                // The parent closed the socket: no more rounds.
                Err(ShareError::Message(hurray_gpu::MessageError::Truncated {
                    got: 0, ..
                })) => break,
                Err(e) => return Err(format!("recv (event round {round}): {e}")),
            };
            if shared.wait_value().is_none() {
                return Err("an event round without a semaphore".into());
            }
            let h = GpuBufferHandle::import(&c.device, &c.queue, shared)
                .map_err(|e| format!("import (event): {e}"))?;
            // The readback's copy is queued after the import's GPU wait.
            let seen: Vec<u32> = h
                .readback_vec(&c.device, &c.queue)
                .map_err(|e| format!("child readback: {e}"))?;
            let want: Vec<u32> = parent_values().iter().map(|v| v ^ round).collect();
            if seen != want {
                return Err(format!(
                    "event round {round}: the child does not see the parent's write"
                ));
            }
            let seed = GpuResource::uniform(&[SEED ^ round, 0, 0, 0]);
            k.dispatch(&c.queue, &[(&h).into(), seed], [N / 64, 1, 1])
                .map_err(|e| format!("dispatch: {e}"))?;
            // No host wait: the signal follows the kernel on the GPU.
            let value = h.signal_event().map_err(|e| format!("signal_event: {e}"))?;
            let mut reply = vec![b'e'];
            reply.extend_from_slice(&value.to_le_bytes());
            (&*socket).write_all(&reply).map_err(|e| e.to_string())?;
            drop(h);
            if round == 0 {
                settle(c)?;
                fds_after_first = open_fds();
            }
            round += 1;
        }
        if round > 0 {
            settle(c)?;
            let fds = open_fds();
            if fds != fds_after_first {
                return Err(format!(
                    "child fd leak: {fds_after_first} open after round 0, {fds} after {round} rounds"
                ));
            }
            println!("child: {round} event rounds, {fds} fds open after the first and the last");
        }
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
