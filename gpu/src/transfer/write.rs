//! The upload engine: host memory -> GPU buffer, asynchronously.
//!
//! ## Contract
//!
//! * Callers check the range first: `COPY_DST` usage, bounds, a start on a
//!   4-byte boundary and an end on one or at the buffer's logical end (the
//!   zero padding written past a logical end lands in the allocation's
//!   padding, which no read returns).
//! * A write returns once its data has left the caller's memory and its
//!   copies are submitted, with the index of the last submission: work
//!   submitted afterwards on the device's queue sees the data (the queue
//!   runs in order); wait on the index to know that the GPU has it.
//! * Nothing here blocks on the GPU. Small writes (up to [`SMALL`] bytes) go
//!   through `Queue::write_buffer`. Larger ones go through write staging
//!   buffers that are kept *mapped* in the device's pool: the host fills a
//!   staging chunk (over the worker pool), it is unmapped, copied, and
//!   re-mapped by the GPU submission itself (`map_buffer_on_submit`), whose
//!   callback returns it to the pool. At most [`DEPTH`] chunks of one call
//!   are in flight; the next waits (`.await`) for the oldest to come back,
//!   which needs the device to be polled.

use std::collections::VecDeque;
use std::sync::Arc;

use super::Target;
use super::chunk::{DEPTH, chunk_len};
use super::copy;
use crate::exec::{self, Receiver, scoped};
use crate::staging::{Kind, Staging, size_class};
use crate::{ApiMisuse, BackendError};

/// Writes up to this size use `Queue::write_buffer` (no staging of ours).
pub(crate) const SMALL: u64 = 64 << 10;

/// Writes `bytes` at `offset` (checked by the caller). See the module contract.
pub(crate) async fn write(
    t: &Target<'_>,
    offset: u64,
    bytes: &[u8],
) -> Result<wgpu::SubmissionIndex, BackendError> {
    let len = u64::try_from(bytes.len()).map_err(|_| ApiMisuse::Overflow)?;
    if len <= SMALL {
        return write_small(t, offset, bytes).await;
    }
    #[cfg(target_os = "linux")]
    if super::dma::use_for(t.shared, len) {
        return super::dma::write_bytes(t, offset, bytes).await;
    }
    write_with(t, offset, len, &|from, mut part| {
        let start = usize::try_from(from).unwrap_or(usize::MAX);
        if let Some(src) = bytes.get(start..start.saturating_add(part.len())) {
            part.copy_from_slice(src);
        }
    })
    .await
}

/// A small write through `Queue::write_buffer`, then an empty submission so
/// that it is scheduled now and has an index.
async fn write_small(
    t: &Target<'_>,
    offset: u64,
    bytes: &[u8],
) -> Result<wgpu::SubmissionIndex, BackendError> {
    let whole = bytes.len() - bytes.len() % 4;
    let (body, tail) = bytes.split_at(whole);
    scoped(&t.shared.device, || {
        if !body.is_empty() {
            t.queue.write_buffer(t.buffer, offset, body);
        }
        if !tail.is_empty() {
            let mut padded = [0u8; 4];
            for (d, s) in padded.iter_mut().zip(tail) {
                *d = *s;
            }
            t.queue
                .write_buffer(t.buffer, offset + whole as u64, &padded);
        }
        t.queue.submit([])
    })
    .await
}

/// Writes `len` bytes at `offset` (checked by the caller), produced by `fill`
/// straight into mapped staging memory: `fill(from, part)` must write every
/// byte of `part`, which stands for bytes `from..from + part.len()` of the
/// range. Parts are disjoint, cover the range, and may be filled on several
/// threads at once.
pub(crate) async fn write_with(
    t: &Target<'_>,
    offset: u64,
    len: u64,
    fill: &(dyn Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync),
) -> Result<wgpu::SubmissionIndex, BackendError> {
    let device = &t.shared.device;
    if len == 0 {
        return scoped(device, || t.queue.submit([])).await;
    }
    #[cfg(target_os = "linux")]
    if super::dma::use_for(t.shared, len) {
        return super::dma::write_with(t, offset, len, fill).await;
    }
    crate::staging::count_transfer(false);
    let padded = len.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
    let max = t.shared.max_staging();
    let chunk = chunk_len(padded, max);
    let class = size_class(chunk, max);
    let pools = &t.shared.staging;
    let mut in_flight: VecDeque<Receiver<()>> = VecDeque::new();
    let mut last = None;
    let mut from = 0;
    while from < padded {
        let n = chunk.min(padded - from);
        if in_flight.len() >= DEPTH {
            if let Some(oldest) = in_flight.pop_front() {
                // Its staging went back to the pool (or was dropped on error).
                let _ = oldest.await;
            }
        }
        let staging = pools.take(device, Kind::Write, class).await?;
        let logical = n.min(len - from);
        copy::fill_mapped(&staging.buffer, n, &|part_from, mut part| {
            // Past the logical end (at most 3 bytes): zero padding.
            let keep = usize::try_from(logical.saturating_sub(part_from)).unwrap_or(usize::MAX);
            if keep < part.len() {
                part.slice(keep..).fill(0);
            }
            let keep = keep.min(part.len());
            fill(from + part_from, part.into_slice(..keep));
        })?;
        let (rx, index) = submit_copy(t, staging, offset + from, n).await?;
        in_flight.push_back(rx);
        last = Some(index);
        from += n;
    }
    last.ok_or(BackendError::Bug("a non-empty write submitted nothing"))
}

/// Unmaps `staging`, copies `staging[0..n] -> dst[to..to + n]`, and asks the
/// submission to map it again; its callback returns it to the pool.
async fn submit_copy(
    t: &Target<'_>,
    staging: Staging,
    to: u64,
    n: u64,
) -> Result<(Receiver<()>, wgpu::SubmissionIndex), BackendError> {
    let (tx, mut rx) = exec::oneshot(None);
    let device = &t.shared.device;
    let shared = Arc::downgrade(t.shared);
    let buffer = staging.buffer.clone();
    let index = scoped(device, || {
        buffer.unmap();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("hurray upload"),
        });
        encoder.copy_buffer_to_buffer(&buffer, 0, t.buffer, to, n);
        encoder.map_buffer_on_submit(&buffer, wgpu::MapMode::Write, .., move |r| {
            // Mapped again: back to the pool, ready for the next write.
            if r.is_ok() {
                if let Some(s) = shared.upgrade() {
                    s.staging.give(Kind::Write, staging);
                }
            }
            tx.send(());
        });
        t.queue.submit([encoder.finish()])
    })
    .await?;
    rx.set_hint(index.clone());
    Ok((rx, index))
}
