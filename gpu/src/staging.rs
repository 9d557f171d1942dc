//! Staging buffers: a pool keyed by size class, and the copy/map machinery
//! every readback goes through.
//!
//! Each `GpuBufferHandle` owns its pool (shared by its clones): wgpu's
//! `Device` equality compares per-instance ids, so a process-wide pool keyed
//! by device could hand one instance's buffer to another instance's device
//! (wgpu-core panics on that). Owning the pool per buffer also frees staging
//! memory with the buffer. A staging buffer (`MAP_READ | COPY_DST`) returns
//! to the pool only after it has been unmapped; one whose map failed or timed
//! out is dropped instead. The pool keeps at most [`MAX_PER_CLASS`] buffers
//! per size class, and at most [`MAX_POOLED_BYTES`] plus the buffer's own
//! size in all (a whole-buffer `read_mapped` maps one staging buffer as big
//! as the read).

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wgpu::{BufferUsages, COPY_BUFFER_ALIGNMENT};

use crate::BackendError;

/// Buffers kept per size class (two per readback thread).
pub(crate) const MAX_PER_CLASS: usize = 2 * crate::copy::MAX_THREADS;
/// Bytes of idle staging kept per buffer, besides one as large as the buffer.
pub(crate) const MAX_POOLED_BYTES: u64 = 8 * CHUNK;
/// The smallest staging buffer.
const MIN_CLASS: u64 = 256;
/// Reads longer than one chunk are pipelined in chunks of this size.
pub(crate) const CHUNK: u64 = 8 << 20;
/// How long a readback waits for the GPU before giving up.
pub(crate) const POLL_TIMEOUT: Duration = Duration::from_secs(60);

/// Idle staging buffers by size class.
pub(crate) struct Pool {
    inner: Mutex<PoolInner>,
    budget: u64,
}

#[derive(Default)]
struct PoolInner {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    bytes: u64,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, PoolInner> {
        // Each critical section is one map operation: poisoning cannot leave
        // the pool inconsistent, so it is ignored.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Bytes of idle staging buffers in the pool.
    pub(crate) fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// Drops every idle staging buffer.
    pub(crate) fn clear(&self) {
        let mut p = self.lock();
        p.free.clear();
        p.bytes = 0;
    }

    /// A pooled or new staging buffer of exactly `class` bytes.
    pub(crate) fn take(
        &self,
        device: &wgpu::Device,
        class: u64,
    ) -> Result<wgpu::Buffer, BackendError> {
        let pooled = {
            let mut p = self.lock();
            let b = p.free.get_mut(&class).and_then(Vec::pop);
            if b.is_some() {
                p.bytes -= class;
            }
            b
        };
        if let Some(b) = pooled {
            return Ok(b);
        }
        scoped(device, || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("hurray staging"),
                size: class,
                usage: BufferUsages::MAP_READ | BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// A pool for a buffer of `allocation_len` bytes: its budget is
    /// [`MAX_POOLED_BYTES`] for chunked reads plus one staging buffer as large
    /// as the whole buffer, for repeated whole-buffer zero-copy reads.
    pub(crate) fn new(allocation_len: u64) -> Self {
        Self {
            inner: Mutex::default(),
            budget: MAX_POOLED_BYTES.saturating_add(allocation_len.next_power_of_two()),
        }
    }

    /// Returns an unmapped staging buffer (or drops it when the pool is full).
    pub(crate) fn give(&self, buffer: wgpu::Buffer) {
        let class = buffer.size();
        let mut p = self.lock();
        let fits = p.bytes + class <= self.budget;
        let list = p.free.entry(class).or_default();
        if list.len() < MAX_PER_CLASS && fits {
            list.push(buffer);
            p.bytes += class;
        }
    }
}

/// The staging size for `len` bytes: the next power of two (at least 256),
/// or `len` rounded to the copy granularity where that power exceeds `max`.
pub(crate) fn size_class(len: u64, max: u64) -> u64 {
    let class = len
        .max(MIN_CLASS)
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX);
    if class <= max {
        class
    } else {
        len.next_multiple_of(COPY_BUFFER_ALIGNMENT)
    }
}

/// Runs `f` inside validation, out-of-memory and internal error scopes and
/// turns a captured error into a [`BackendError`].
pub(crate) fn scoped<R>(device: &wgpu::Device, f: impl FnOnce() -> R) -> Result<R, BackendError> {
    // Three scopes, one per error filter, so no error reaches wgpu's default
    // uncaptured-error handler (which panics). Cost: about 0.4 µs per call
    // on the CI box (0.27 µs measured for two).
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let out = f();
    let validation = pollster::block_on(validation.pop());
    let oom = pollster::block_on(oom.pop());
    let internal = pollster::block_on(internal.pop());
    match validation.or(oom).or(internal) {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}

/// Encodes and submits `src[src_offset..src_offset + len] -> staging[0..len]`
/// and asks for `staging[0..len]` to be mapped once the copy is done.
pub(crate) fn copy_and_map(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    src: &wgpu::Buffer,
    src_offset: u64,
    staging: &wgpu::Buffer,
    len: u64,
) -> Result<Pending, BackendError> {
    let (tx, rx) = mpsc::sync_channel(1);
    let index = scoped(device, || {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("hurray readback"),
        });
        encoder.copy_buffer_to_buffer(src, src_offset, staging, 0, len);
        let index = queue.submit([encoder.finish()]);
        staging.map_async(wgpu::MapMode::Read, 0..len, move |r| {
            // The receiver only disappears when the waiting side already failed.
            let _ = tx.send(r);
        });
        index
    })?;
    Ok(Pending { index, rx })
}

/// A submitted copy whose staging buffer has a map request outstanding.
pub(crate) struct Pending {
    index: wgpu::SubmissionIndex,
    rx: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

impl Pending {
    /// Waits for the copy and the mapping.
    pub(crate) fn wait(self, device: &wgpu::Device) -> Result<(), BackendError> {
        match device.poll(wgpu::PollType::Wait {
            submission_index: Some(self.index),
            timeout: Some(POLL_TIMEOUT),
        }) {
            Ok(_) => {}
            Err(e) => return Err(poll_error(e)),
        }
        // The submission is done, but its map callback may be delivered by
        // another thread's poll that collected it: wait for it (driving the
        // device ourselves meanwhile) rather than assuming it already ran.
        let deadline = Instant::now() + POLL_TIMEOUT;
        loop {
            match self.rx.recv_timeout(Duration::from_millis(1)) {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => return Err(BackendError::Map(e.to_string())),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(BackendError::Map("the map request was dropped".into()));
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                    return Err(BackendError::PollTimeout);
                }
                Err(RecvTimeoutError::Timeout) => {
                    device.poll(wgpu::PollType::Poll).map_err(poll_error)?;
                }
            }
        }
    }
}

/// A failed wait. `WrongSubmissionIndex` means the submission never happened
/// although it raised no validation error: wgpu drops work on a lost or
/// destroyed device silently (as WebGPU specifies), so that is device loss.
pub(crate) fn poll_error(e: wgpu::PollError) -> BackendError {
    match e {
        wgpu::PollError::Timeout => BackendError::PollTimeout,
        wgpu::PollError::WrongSubmissionIndex(..) => {
            BackendError::DeviceLost("the device dropped a submission (lost or destroyed)".into())
        }
    }
}

/// Whether `device` is lost: an empty submission that the device silently
/// drops. Only called on error paths, to tell device loss from other errors.
pub(crate) fn is_lost(device: &wgpu::Device, queue: &wgpu::Queue) -> bool {
    let Ok(index) = scoped(device, || queue.submit([])) else {
        return false;
    };
    matches!(
        device.poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: Some(POLL_TIMEOUT)
        }),
        Err(wgpu::PollError::WrongSubmissionIndex(..))
    )
}

/// `error`, or [`BackendError::DeviceLost`] when the device turns out to be lost.
pub(crate) fn lost_or(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    error: BackendError,
) -> BackendError {
    match error {
        BackendError::DeviceLost(_) | BackendError::PollTimeout => error,
        _ if is_lost(device, queue) => BackendError::DeviceLost(error.to_string()),
        _ => error,
    }
}

/// Unmaps a staging buffer inside error scopes.
pub(crate) fn unmap(device: &wgpu::Device, staging: &wgpu::Buffer) -> Result<(), BackendError> {
    scoped(device, || staging.unmap())
}
