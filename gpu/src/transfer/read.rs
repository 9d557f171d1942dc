//! The readback engine: GPU buffer -> host memory, asynchronously.
//!
//! ## Contract
//!
//! * Callers check the range first (usage, overflow, bounds); the engine
//!   widens it to wgpu's 4-byte copy granularity, which stays inside the
//!   allocation (a multiple of 4 that covers the logical length).
//! * [`read_into`] returns how many elements of `dst` its copies wrote:
//!   the destination is cut with `split_at_mut` into disjoint pieces that
//!   cover it exactly (checked), each piece is taken out of its job once and
//!   written by one [`copy::parallel_copy`], which returns what its copies
//!   wrote; the total is the sum of those counts, never the length that was
//!   meant to be written.
//! * [`read_to_vec`] is the one function that fills a `Vec`'s spare
//!   capacity, and the one place that sets its length: only after the
//!   copies' own count says every reserved byte was written.
//! * Nothing here blocks on the GPU: every wait is an `.await` on a map
//!   callback. Host copies run inside the poll that resumes the future, on
//!   the worker pool, and finish before it returns, so the borrowed
//!   destination never outlives the call even if the future is dropped.
//! * A read is cut into chunks ([`chunk_len`]) that are copied and mapped
//!   [`DEPTH`] at a time: while the host copies chunk `i` out, the GPU copies
//!   the next ones. A buffer with `MAP_READ` usage (with
//!   `MAPPABLE_PRIMARY_BUFFERS`) is mapped directly instead, with no copy.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use wgpu::COPY_BUFFER_ALIGNMENT;

use super::Source;
use super::chunk::{DEPTH, chunk_len, widen};
use super::copy::{self, Byte, Stores};
use crate::exec::{self, Receiver, scoped};
use crate::staging::{Kind, Staging, size_class};
use crate::{ApiMisuse, BackendError};

/// One chunk: the widened source range and where its requested part goes.
pub(crate) struct Job<'d, B> {
    /// Source offset (a multiple of 4).
    pub(crate) src: u64,
    /// Bytes copied to staging (a multiple of 4).
    pub(crate) len: u64,
    /// Where the requested part starts inside the chunk.
    pub(crate) view_from: usize,
    /// The destination piece for that part; taken when it is written, so
    /// no piece is written (and counted) twice.
    pub(crate) dst: Option<&'d mut [B]>,
}

/// Reads `[offset, offset + len)` (checked by the caller) into `dst`, which
/// must be `len` elements long, and returns how many elements of `dst` the
/// copies wrote. See the module contract.
pub(crate) async fn read_into<B: Byte>(
    src: &Source<'_>,
    offset: u64,
    len: u64,
    dst: &mut [B],
) -> Result<usize, BackendError> {
    if u64::try_from(dst.len()).ok() != Some(len) {
        return Err(BackendError::Bug("readback destination of the wrong size"));
    }
    if len == 0 {
        return Ok(0);
    }
    if src.direct {
        return read_direct(src, offset, len, |view| {
            copy::parallel_copy(dst, view, Stores::Cached)
        })
        .await?;
    }
    let (start, widened, _) = widen(offset, len);
    let max = src.shared.max_staging();
    #[cfg(target_os = "linux")]
    let dma = super::dma::use_for(src.shared, widened);
    #[cfg(not(target_os = "linux"))]
    let dma = false;
    let chunk = if dma {
        #[cfg(target_os = "linux")]
        {
            super::dma::chunk_len(widened)
        }
        #[cfg(not(target_os = "linux"))]
        {
            widened
        }
    } else {
        chunk_len(widened, max)
    };
    let end = start + widened;
    let (req_start, req_end) = (offset, offset + len);
    let mut jobs = Vec::new();
    let mut rest = dst;
    let mut from = start;
    while from < end {
        let to = end.min(from + chunk);
        let (a, b) = (req_start.max(from), req_end.min(to));
        let take = usize::try_from(b.saturating_sub(a)).map_err(|_| ApiMisuse::Overflow)?;
        if take > rest.len() {
            return Err(BackendError::Bug("readback chunks overrun the destination"));
        }
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(take);
        rest = tail;
        let view_from = usize::try_from(a - from).map_err(|_| ApiMisuse::Overflow)?;
        jobs.push(Job {
            src: from,
            len: to - from,
            view_from,
            dst: Some(piece),
        });
        from = to;
    }
    if !rest.is_empty() {
        return Err(BackendError::Bug(
            "readback chunks do not cover the request",
        ));
    }
    #[cfg(target_os = "linux")]
    if dma {
        return super::dma::read_jobs(src, &mut jobs, chunk).await;
    }
    crate::staging::count_transfer(false);
    let class = size_class(chunk, max);
    let pools = &src.shared.staging;
    let device = &src.shared.device;
    let mut pending: VecDeque<(usize, Staging, Receiver<MapResult>)> = VecDeque::new();
    let mut next = 0;
    let mut written = 0usize;
    loop {
        while pending.len() < DEPTH {
            let Some(job) = jobs.get(next) else { break };
            let staging = pools.take(device, Kind::Read, class).await?;
            let rx = submit_copy(src, job.src, &staging.buffer, job.len).await?;
            pending.push_back((next, staging, rx));
            next += 1;
        }
        let Some((i, staging, rx)) = pending.pop_front() else {
            break;
        };
        map_result(rx.await)?;
        let job = jobs
            .get_mut(i)
            .ok_or(BackendError::Bug("readback job index"))?;
        {
            let view = staging
                .buffer
                .get_mapped_range(0..job.len)
                .map_err(|e| BackendError::Map(e.to_string()))?;
            let dst = job
                .dst
                .take()
                .ok_or(BackendError::Bug("a readback piece written twice"))?;
            let part = view
                .get(job.view_from..job.view_from + dst.len())
                .ok_or(BackendError::Bug("chunk shorter than its piece"))?;
            written += copy::parallel_copy(dst, part, Stores::Cached)?;
        }
        scoped(device, || staging.buffer.unmap()).await?;
        pools.give(Kind::Read, staging);
    }
    Ok(written)
}

/// Reads `[offset, offset + len)` (checked by the caller) into `out`, which
/// is cleared first and then holds exactly those bytes: they are copied
/// straight into its spare capacity (no zero-fill of a large read).
///
/// # Errors
/// [`BackendError::OutOfHostMemory`] when `out` cannot grow, the engine's
/// errors, and [`BackendError::Bug`] if the copies wrote fewer bytes than
/// reserved (`out` then stays empty).
pub(crate) async fn read_to_vec(
    src: &Source<'_>,
    offset: u64,
    len: u64,
    out: &mut Vec<u8>,
) -> Result<(), BackendError> {
    out.clear();
    let n = usize::try_from(len).map_err(|_| ApiMisuse::Overflow)?;
    out.try_reserve_exact(n)
        .map_err(|_| BackendError::OutOfHostMemory { bytes: len })?;
    let spare = out
        .spare_capacity_mut()
        .get_mut(..n)
        .ok_or(BackendError::Bug("reserved capacity missing"))?;
    let written = read_into(src, offset, len, spare).await?;
    if written != n {
        return Err(BackendError::Bug(
            "readback wrote fewer bytes than reserved",
        ));
    }
    // SAFETY: `set_len(n)` needs `n <= capacity` and elements `0..n`
    // initialised. `out` is empty and `try_reserve_exact(n)` succeeded, so
    // `n <= capacity`, and `spare` is exactly elements `0..n`. `written` is
    // not the length that was asked for but what the copies report they
    // initialised (`Byte::copy` for `MaybeUninit<u8>` counts the elements
    // its loop wrote), summed over pieces that `read_into` cut from `spare`
    // with `split_at_mut` (disjoint, the borrow checker's guarantee) and
    // took out of their jobs once each (`Option::take`); each copy writes
    // its piece from its start. Disjoint pieces of `0..n` whose written
    // prefixes add up to `n` are all written in full: every element of
    // `0..n` is initialised.
    #[allow(unsafe_code)]
    unsafe {
        out.set_len(n);
    }
    Ok(())
}

/// Zero-copy read: lends the mapped bytes `[offset, offset + len)` (checked
/// by the caller) to `f`.
pub(crate) async fn read_mapped<R>(
    src: &Source<'_>,
    offset: u64,
    len: u64,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R, BackendError> {
    if len == 0 {
        return Ok(f(&[]));
    }
    if src.direct {
        return read_direct(src, offset, len, |view| Ok(f(view))).await?;
    }
    let (start, widened, skip) = widen(offset, len);
    #[cfg(target_os = "linux")]
    if super::dma::use_for(src.shared, widened) {
        return super::dma::read_mapped(src, start, widened, skip, len, f).await;
    }
    let max = src.shared.max_staging();
    if widened > max {
        return Err(ApiMisuse::TooLarge {
            requested: widened,
            max: src.shared.limits.max_buffer_size,
        }
        .into());
    }
    crate::staging::count_transfer(false);
    let device = &src.shared.device;
    let pools = &src.shared.staging;
    let staging = pools
        .take(device, Kind::Read, size_class(widened, max))
        .await?;
    let rx = submit_copy(src, start, &staging.buffer, widened).await?;
    map_result(rx.await)?;
    let result = {
        let view = staging
            .buffer
            .get_mapped_range(0..widened)
            .map_err(|e| BackendError::Map(e.to_string()))?;
        let bytes = requested(&view, skip, len)?;
        f(bytes)
    };
    scoped(device, || staging.buffer.unmap()).await?;
    pools.give(Kind::Read, staging);
    Ok(result)
}

/// `view[skip..skip + len]`.
fn requested(view: &[u8], skip: u64, len: u64) -> Result<&[u8], BackendError> {
    let skip = usize::try_from(skip).map_err(|_| ApiMisuse::Overflow)?;
    let n = usize::try_from(len).map_err(|_| ApiMisuse::Overflow)?;
    view.get(skip..skip + n)
        .ok_or(BackendError::Bug("mapped view shorter than the request"))
}

type MapResult = Result<(), wgpu::BufferAsyncError>;

fn map_result(r: Option<MapResult>) -> Result<(), BackendError> {
    match r {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(BackendError::Map(e.to_string())),
        None => Err(BackendError::Map("the map request was dropped".into())),
    }
}

/// Encodes and submits `src[from..from + n] -> staging[0..n]` and asks for
/// `staging[0..n]` to be mapped once the copy is done.
async fn submit_copy(
    src: &Source<'_>,
    from: u64,
    staging: &wgpu::Buffer,
    n: u64,
) -> Result<Receiver<MapResult>, BackendError> {
    let (tx, mut rx) = exec::oneshot(None);
    let device = &src.shared.device;
    let index = scoped(device, || {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("hurray readback"),
        });
        encoder.copy_buffer_to_buffer(src.buffer, from, staging, 0, n);
        let index = src.queue.submit([encoder.finish()]);
        // Mapped once the copy is done (wgpu waits for the submission).
        staging.map_async(wgpu::MapMode::Read, 0..n, move |r| tx.send(r));
        index
    })
    .await?;
    rx.set_hint(index);
    Ok(rx)
}

/// Clears the direct-mapping flag, and cancels a mapping left behind by a
/// future dropped mid-way.
struct DirectMap<'a> {
    src: &'a Source<'a>,
    mapped: bool,
}

impl Drop for DirectMap<'_> {
    fn drop(&mut self) {
        if self.mapped {
            let _ = exec::scoped_now(&self.src.shared.device, || self.src.buffer.unmap());
        }
        self.src.mapping.store(false, Ordering::Release);
    }
}

/// Maps the buffer itself (it has `MAP_READ`) over the widened range and
/// lends the requested bytes to `f`.
async fn read_direct<R>(
    src: &Source<'_>,
    offset: u64,
    len: u64,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R, BackendError> {
    if src.mapping.swap(true, Ordering::AcqRel) {
        return Err(ApiMisuse::MappedElsewhere.into());
    }
    let mut guard = DirectMap { src, mapped: true };
    // Mapped ranges start at multiples of 8 and have lengths in multiples of 4.
    let start = offset - offset % wgpu::MAP_ALIGNMENT;
    let end = (offset + len).next_multiple_of(COPY_BUFFER_ALIGNMENT);
    let (tx, rx) = exec::oneshot(None);
    let device = &src.shared.device;
    scoped(device, || {
        src.buffer
            .map_async(wgpu::MapMode::Read, start..end, move |r| tx.send(r));
    })
    .await?;
    map_result(rx.await)?;
    let result = {
        let view = src
            .buffer
            .get_mapped_range(start..end)
            .map_err(|e| BackendError::Map(e.to_string()))?;
        f(requested(&view, offset - start, len)?)
    };
    guard.mapped = false;
    scoped(device, || src.buffer.unmap()).await?;
    Ok(result)
}
