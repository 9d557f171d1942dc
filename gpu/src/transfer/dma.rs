//! Transfers through host memory the GPU reaches by DMA (Linux, Vulkan,
//! a device opened with `VK_EXT_external_memory_host`).
//!
//! ## Contract
//!
//! * **When.** Reads and writes of at least [`DMA_MIN`] bytes on a device
//!   that has the extension ([`DmaPool::available`]); everything else takes
//!   the mapped-staging path of [`read`](super::read) and
//!   [`write`](mod@super::write). Which path ran is counted in
//!   [`crate::staging_stats`] (`dma_transfers`, `mapped_transfers`).
//! * **Staging.** Chunks of imported host memory of ours
//!   ([`host::Staging`]), pooled per device by size, and bounded: at most
//!   [`keep`] idle per size, the idle total under the process-wide
//!   staging cap. A staging chunk is *moved* into the completion callback
//!   (`Queue::on_submitted_work_done`) of the submission that uses it: the
//!   host never holds one the GPU is working on (the soundness argument of
//!   `external::host`).
//! * **Pipelining.** As the mapped path: [`DEPTH`] chunks in flight; while
//!   the host threads fill (or empty) one, the copy engine moves the others.
//!   The copies themselves are plain `copy_buffer_to_buffer`; a read adds
//!   the host-visibility barrier in the same submission.
//! * **Never blocks on the GPU**: every wait is an `.await`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::chunk::DEPTH;
use super::copy::{self, Byte, Stores};
use super::read::Job;
use super::{Source, Target};
use crate::device::DeviceShared;
use crate::exec::{self, Receiver, scoped};
use crate::external::host::{self, Staging};
use crate::{ApiMisuse, BackendError};

/// Transfers from this size up use DMA staging where the device allows it.
pub(crate) const DMA_MIN: u64 = 1 << 20;
/// The largest DMA chunk: a copy of this size runs at ~90 % of the PCIe
/// rate on the H200 (`notes`: 16 MiB at 38 GB/s in one submit-and-wait,
/// 256 MiB at 49), while four of them in flight stay small.
const MAX_CHUNK: u64 = 32 << 20;
/// Idle staging kept per size, in bytes, beyond the `DEPTH + 1` chunks
/// every size keeps: the file loader's ring (`load.rs`) comes back whole,
/// so a second load imports nothing (importing 256 MiB costs 18.5 ms on
/// the H200, 77 ms for never-touched pages).
pub(crate) const RING_BYTES: usize = 256 << 20;

/// Idle staging chunks kept for size `class`.
fn keep(class: usize) -> usize {
    (RING_BYTES / class.max(1)).max(DEPTH + 1)
}

/// Bytes of idle DMA staging, all devices.
pub(crate) static DMA_POOLED: AtomicU64 = AtomicU64::new(0);

/// One device's DMA staging: whether it can import, and idle chunks by size.
#[derive(Default)]
pub(crate) struct DmaPool {
    available: OnceLock<bool>,
    free: Mutex<HashMap<usize, Vec<Staging>>>,
}

impl DmaPool {
    /// Whether `device` was opened with `VK_EXT_external_memory_host`.
    pub(crate) fn available(&self, device: &wgpu::Device) -> bool {
        *self.available.get_or_init(|| host::device_supports(device))
    }

    /// An idle chunk of `class` bytes, or a new one.
    pub(crate) fn take(
        &self,
        device: &wgpu::Device,
        class: usize,
    ) -> Result<Staging, BackendError> {
        let idle = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&class)
            .and_then(Vec::pop);
        if let Some(s) = idle {
            DMA_POOLED.fetch_sub(class as u64, Ordering::AcqRel);
            return Ok(s);
        }
        Staging::new(device, class).map_err(|e| match e {
            crate::ShareError::Backend(b) => b,
            other => BackendError::Map(other.to_string()),
        })
    }

    /// Keeps `s` for reuse within the bounds of the module contract.
    pub(crate) fn give(&self, s: Staging) {
        let class = s.len();
        let cap = crate::staging_stats().cap_bytes;
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let list = free.entry(class).or_default();
        if list.len() >= keep(class) || DMA_POOLED.load(Ordering::Acquire) + class as u64 > cap {
            return;
        }
        DMA_POOLED.fetch_add(class as u64, Ordering::AcqRel);
        list.push(s);
    }

    /// Bytes of idle chunks.
    pub(crate) fn bytes(&self) -> u64 {
        let free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        free.iter()
            .map(|(class, list)| *class as u64 * list.len() as u64)
            .sum()
    }

    /// Drops every idle chunk.
    pub(crate) fn clear(&self) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        for (class, list) in free.drain() {
            DMA_POOLED.fetch_sub(class as u64 * list.len() as u64, Ordering::AcqRel);
        }
    }
}

impl Drop for DmaPool {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Whether a transfer of `len` bytes on `shared`'s device goes through DMA
/// staging.
pub(crate) fn use_for(shared: &DeviceShared, len: u64) -> bool {
    len >= DMA_MIN && shared.dma.available(&shared.device)
}

/// The chunk size of a DMA transfer of `len` bytes: whole up to 2 MiB, else
/// a quarter, between 1 MiB and [`MAX_CHUNK`], in 64 KiB steps.
pub(crate) fn chunk_len(len: u64) -> u64 {
    if len <= 2 * DMA_MIN {
        len
    } else {
        len.div_ceil(DEPTH as u64)
            .clamp(DMA_MIN, MAX_CHUNK)
            .next_multiple_of(64 << 10)
    }
}

/// The staging size for a chunk of `n` bytes: the next multiple of 1 MiB
/// (so sizes repeat and pool well; a multiple of every page size in use).
fn class_of(n: u64) -> Result<usize, BackendError> {
    usize::try_from(n.next_multiple_of(DMA_MIN)).map_err(|_| ApiMisuse::Overflow.into())
}

/// Writes `len` bytes at `offset` (checked by the caller), produced by
/// `fill` straight into DMA staging; the same contract as
/// [`write::write_with`](super::write::write_with).
pub(crate) async fn write_with(
    t: &Target<'_>,
    offset: u64,
    len: u64,
    fill: &(dyn Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync),
) -> Result<wgpu::SubmissionIndex, BackendError> {
    upload(t, offset, len, Fill::With(fill)).await
}

/// Writes `bytes` at `offset` (checked by the caller) through DMA staging:
/// the upload's own copy, with non-temporal stores from
/// [`STREAM_MIN`](super::nontemporal::STREAM_MIN) up.
pub(crate) async fn write_bytes(
    t: &Target<'_>,
    offset: u64,
    bytes: &[u8],
) -> Result<wgpu::SubmissionIndex, BackendError> {
    let len = u64::try_from(bytes.len()).map_err(|_| ApiMisuse::Overflow)?;
    upload(t, offset, len, Fill::Bytes(bytes)).await
}

/// Where an upload's bytes come from.
enum Fill<'a> {
    /// A caller's closure writes them into staging.
    With(&'a (dyn Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync)),
    /// A copy of these bytes.
    Bytes(&'a [u8]),
}

/// The upload loop of [`write_with`] and [`write_bytes`].
async fn upload(
    t: &Target<'_>,
    offset: u64,
    len: u64,
    fill: Fill<'_>,
) -> Result<wgpu::SubmissionIndex, BackendError> {
    crate::staging::count_transfer(true);
    let stores = Stores::for_transfer(len);
    let device = &t.shared.device;
    let padded = len.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
    let chunk = chunk_len(padded);
    let class = class_of(chunk)?;
    let mut in_flight: VecDeque<Receiver<()>> = VecDeque::new();
    let mut last = None;
    let mut from = 0;
    while from < padded {
        let n = chunk.min(padded - from);
        if in_flight.len() >= DEPTH {
            if let Some(oldest) = in_flight.pop_front() {
                let _ = oldest.await;
            }
        }
        let mut staging = t.shared.dma.take(device, class)?;
        let logical = usize::try_from(n.min(len - from)).map_err(|_| ApiMisuse::Overflow)?;
        let n_us = usize::try_from(n).map_err(|_| ApiMisuse::Overflow)?;
        {
            let bytes = staging
                .bytes_mut()
                .get_mut(..n_us)
                .ok_or(BackendError::Bug("DMA chunk shorter than its class"))?;
            let (body, pad) = bytes.split_at_mut(logical);
            pad.fill(0);
            match fill {
                Fill::With(f) => {
                    copy::fill_slice(body, &|part_from, part| f(from + part_from, part))?;
                }
                Fill::Bytes(b) => {
                    let start = usize::try_from(from).map_err(|_| ApiMisuse::Overflow)?;
                    let src = b
                        .get(start..start + logical)
                        .ok_or(BackendError::Bug("upload chunk past its bytes"))?;
                    copy::parallel_copy(body, src, stores)?;
                }
            }
        }
        let (tx, mut rx) = exec::oneshot(None);
        let shared = Arc::downgrade(t.shared);
        let to = offset + from;
        let index = scoped(device, || {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("hurray DMA upload"),
            });
            encoder.copy_buffer_to_buffer(staging.buffer(), 0, t.buffer, to, n);
            let index = t.queue.submit([encoder.finish()]);
            t.queue.on_submitted_work_done(move || {
                // The GPU is done with it: back to the pool.
                if let Some(s) = shared.upgrade() {
                    s.dma.give(staging);
                }
                tx.send(());
            });
            index
        })
        .await?;
        rx.set_hint(index.clone());
        in_flight.push_back(rx);
        last = Some(index);
        from += n;
    }
    last.ok_or(BackendError::Bug("a non-empty write submitted nothing"))
}

/// Submits `src[from..from + n] -> staging[0..n]` with the host barrier;
/// the staging comes back through the receiver once the GPU is done.
async fn submit_read(
    src: &Source<'_>,
    from: u64,
    n: u64,
    staging: Staging,
) -> Result<Receiver<Staging>, BackendError> {
    let (tx, mut rx) = exec::oneshot(None);
    let device = &src.shared.device;
    let index = scoped(device, || {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("hurray DMA readback"),
        });
        encoder.copy_buffer_to_buffer(src.buffer, from, staging.buffer(), 0, n);
        let index = src
            .queue
            .submit([encoder.finish(), host::host_barrier(device)]);
        src.queue.on_submitted_work_done(move || tx.send(staging));
        index
    })
    .await?;
    rx.set_hint(index);
    Ok(rx)
}

/// Reads the chunks `jobs` cut (`Job::len` at most `chunk`) through DMA
/// staging; returns how many elements the copies wrote (the same count
/// contract as [`read::read_into`](super::read::read_into)).
pub(crate) async fn read_jobs<B: Byte>(
    src: &Source<'_>,
    jobs: &mut [Job<'_, B>],
    chunk: u64,
) -> Result<usize, BackendError> {
    crate::staging::count_transfer(true);
    let device = &src.shared.device;
    let class = class_of(chunk)?;
    let stores = Stores::for_transfer(jobs.iter().map(|j| j.len).sum());
    let mut pending: VecDeque<(usize, Receiver<Staging>)> = VecDeque::new();
    let mut next = 0;
    let mut written = 0usize;
    loop {
        while pending.len() < DEPTH {
            let Some(job) = jobs.get(next) else { break };
            let staging = src.shared.dma.take(device, class)?;
            let rx = submit_read(src, job.src, job.len, staging).await?;
            pending.push_back((next, rx));
            next += 1;
        }
        let Some((i, rx)) = pending.pop_front() else {
            break;
        };
        let staging = rx
            .await
            .ok_or(BackendError::Map("a DMA readback was dropped".into()))?;
        let job = jobs
            .get_mut(i)
            .ok_or(BackendError::Bug("readback job index"))?;
        let dst = job
            .dst
            .take()
            .ok_or(BackendError::Bug("a readback piece written twice"))?;
        let part = staging
            .bytes()
            .get(job.view_from..job.view_from + dst.len())
            .ok_or(BackendError::Bug("chunk shorter than its piece"))?;
        written += copy::parallel_copy(dst, part, stores)?;
        src.shared.dma.give(staging);
    }
    Ok(written)
}

/// Zero-copy read through DMA staging: lends `[start + skip, start + skip +
/// len)` of the widened copy `[start, start + widened)` to `f`.
pub(crate) async fn read_mapped<R>(
    src: &Source<'_>,
    start: u64,
    widened: u64,
    skip: u64,
    len: u64,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R, BackendError> {
    crate::staging::count_transfer(true);
    let class = class_of(widened)?;
    let staging = src.shared.dma.take(&src.shared.device, class)?;
    let rx = submit_read(src, start, widened, staging).await?;
    let staging = rx
        .await
        .ok_or(BackendError::Map("a DMA readback was dropped".into()))?;
    let skip = usize::try_from(skip).map_err(|_| ApiMisuse::Overflow)?;
    let n = usize::try_from(len).map_err(|_| ApiMisuse::Overflow)?;
    let result = {
        let bytes = staging
            .bytes()
            .get(skip..skip + n)
            .ok_or(BackendError::Bug("DMA chunk shorter than the request"))?;
        f(bytes)
    };
    src.shared.dma.give(staging);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dma_chunks_cover_small_transfers_whole_and_stay_bounded() {
        assert_eq!(chunk_len(DMA_MIN), DMA_MIN);
        assert_eq!(chunk_len(2 * DMA_MIN), 2 * DMA_MIN);
        assert_eq!(chunk_len(16 << 20), 4 << 20);
        assert_eq!(chunk_len(1 << 30), MAX_CHUNK);
        for len in [(2 << 20) + 4, 5 << 20, 100 << 20] {
            let c = chunk_len(len);
            assert!((DMA_MIN..=MAX_CHUNK).contains(&c));
            assert_eq!(c % 4, 0);
            assert!(class_of(c).is_ok_and(|k| k as u64 >= c && k % 4096 == 0));
        }
    }
}
