//! Host-side copies into and out of mapped staging memory, split over the
//! worker pool.
//!
//! One host thread copies mapped memory at about 10 GB/s on a server core,
//! below what PCIe delivers (~50 GB/s), so pieces of at least
//! [`PARALLEL_MIN`] bytes are split over the pool ([`crate::pool`]).
//!
//! Copies into uninitialised memory (`MaybeUninit<u8>`, a `Vec`'s spare
//! capacity) report how many elements they wrote, counted by the loop that
//! wrote them: that count, not the length that was meant to be written, is
//! what lets `read::read_to_vec` set the `Vec`'s length. No `unsafe` here.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{BackendError, pool};

/// Pieces at least this large are split over the worker pool.
const PARALLEL_MIN: usize = 256 << 10;
/// The smallest part of a split piece.
const PART_MIN: usize = 128 << 10;
/// Splits of mapped ranges start at multiples of this (wgpu wants mapped
/// sub-ranges at multiples of 8 with sizes in multiples of 4).
const PART_ALIGN: usize = 4096;

/// A byte-sized destination element: `u8` or `MaybeUninit<u8>`.
pub(crate) trait Byte: Send + Sized {
    /// Writes the first `min(dst.len(), src.len())` elements of `dst` from
    /// `src` (the caller makes the lengths equal), and returns how many it
    /// wrote.
    fn copy(dst: &mut [Self], src: &[u8]) -> usize;

    /// [`copy`](Self::copy) with non-temporal stores where the target has
    /// them (`super::nontemporal`); the same count contract.
    #[cfg(target_os = "linux")]
    fn copy_streaming(dst: &mut [Self], src: &[u8]) -> usize;
}

/// How a large host copy stores its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stores {
    /// Plain stores: the destination stays in cache.
    Cached,
    /// Non-temporal stores (`super::nontemporal`): the destination goes to
    /// memory, not cache. Only DMA staging (Linux) streams.
    #[cfg(target_os = "linux")]
    Streaming,
}

#[cfg(target_os = "linux")]
impl Stores {
    /// Streaming for a transfer of at least
    /// [`STREAM_MIN`](super::nontemporal::STREAM_MIN) bytes.
    pub(crate) fn for_transfer(len: u64) -> Self {
        if len >= super::nontemporal::STREAM_MIN {
            Self::Streaming
        } else {
            Self::Cached
        }
    }
}

impl Byte for u8 {
    fn copy(dst: &mut [u8], src: &[u8]) -> usize {
        let n = dst.len().min(src.len());
        match (dst.get_mut(..n), src.get(..n)) {
            (Some(d), Some(s)) => {
                d.copy_from_slice(s);
                n
            }
            _ => 0,
        }
    }

    #[cfg(target_os = "linux")]
    fn copy_streaming(dst: &mut [u8], src: &[u8]) -> usize {
        super::nontemporal::copy(dst, src)
    }
}

impl Byte for MaybeUninit<u8> {
    fn copy(dst: &mut [Self], src: &[u8]) -> usize {
        // LLVM turns this loop into a memcpy; `zip` stops at the shorter
        // side, so the loop writes exactly `written` elements, from the
        // start of `dst`.
        let written = dst.len().min(src.len());
        for (d, s) in dst.iter_mut().zip(src) {
            d.write(*s);
        }
        written
    }

    #[cfg(target_os = "linux")]
    fn copy_streaming(dst: &mut [Self], src: &[u8]) -> usize {
        super::nontemporal::copy_uninit(dst, src)
    }
}

/// How many parts a piece of `len` bytes is split into.
fn parts(len: usize) -> usize {
    if len < PARALLEL_MIN {
        1
    } else {
        (len / PART_MIN).clamp(1, pool::worker_threads())
    }
}

/// The part length for `len` bytes in `n` parts: a multiple of [`PART_ALIGN`].
fn part_len(len: usize, n: usize) -> usize {
    len.div_ceil(n.max(1))
        .next_multiple_of(PART_ALIGN)
        .max(PART_ALIGN)
}

/// One piece of a parallel copy, taken by the worker that copies it.
type Slot<'a, B> = std::sync::Mutex<Option<(&'a mut [B], &'a [u8])>>;

/// Copies `src` into `dst` (equal lengths) with `stores`, over the pool
/// when large, and returns how many elements of `dst` were written: the sum
/// of what each part's [`Byte::copy`] (or [`Byte::copy_streaming`])
/// reported, parts being disjoint `chunks_mut` of `dst`, each copied once.
///
/// # Errors
/// [`BackendError::Bug`] when the lengths differ or a worker panicked.
pub(crate) fn parallel_copy<B: Byte>(
    dst: &mut [B],
    src: &[u8],
    stores: Stores,
) -> Result<usize, BackendError> {
    if dst.len() != src.len() {
        return Err(BackendError::Bug("host copy of unequal lengths"));
    }
    let copy = match stores {
        Stores::Cached => B::copy,
        #[cfg(target_os = "linux")]
        Stores::Streaming => B::copy_streaming,
    };
    let n = parts(src.len());
    if n <= 1 {
        return Ok(copy(dst, src));
    }
    let part = part_len(src.len(), n);
    // Each piece is taken out of its slot by the one worker that copies it.
    let pieces: Vec<Slot<'_, B>> = dst
        .chunks_mut(part)
        .zip(src.chunks(part))
        .map(|p| std::sync::Mutex::new(Some(p)))
        .collect();
    let written = AtomicUsize::new(0);
    pool::run(pieces.len(), |i| {
        let piece = pieces
            .get(i)
            .and_then(|slot| slot.lock().ok().and_then(|mut p| p.take()));
        if let Some((d, s)) = piece {
            written.fetch_add(copy(d, s), Ordering::Relaxed);
        }
    })?;
    // `pool::run` returns after every task finished (its contract), so all
    // counts are in.
    Ok(written.load(Ordering::Relaxed))
}

/// Fills `staging[..len]` (mapped for writing) by calling `fill(offset, part)`
/// for disjoint parts that cover it, over the pool when large.
///
/// # Errors
/// [`BackendError::Map`] when a part cannot be viewed, [`BackendError::Bug`]
/// when a worker panicked. A panic of `fill` reaches the caller.
pub(crate) fn fill_mapped(
    staging: &wgpu::Buffer,
    len: u64,
    fill: &(dyn Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync),
) -> Result<(), BackendError> {
    let n_len = usize::try_from(len).map_err(|_| BackendError::Bug("staging length"))?;
    let n = parts(n_len);
    let part = part_len(n_len, n) as u64;
    let count = usize::try_from(len.div_ceil(part.max(1))).unwrap_or(1);
    let failed = std::sync::Mutex::new(None);
    pool::run(count, |i| {
        let from = i as u64 * part;
        let to = (from + part).min(len);
        match staging.get_mapped_range_mut(from..to) {
            Ok(mut view) => pool::caller(|| fill(from, view.slice(..))),
            Err(e) => {
                if let Ok(mut f) = failed.lock() {
                    f.get_or_insert(BackendError::Map(e.to_string()));
                }
            }
        }
    })?;
    match failed.into_inner() {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(e),
        Err(_) => Err(BackendError::Bug("a fill worker's result was lost")),
    }
}

/// Fills `dst` (host memory of ours: imported DMA staging) by calling
/// `fill(offset, part)` for disjoint parts that cover it, over the pool
/// when large.
///
/// # Errors
/// [`BackendError::Bug`] when a worker panicked. A panic of `fill` reaches
/// the caller.
#[cfg(target_os = "linux")]
pub(crate) fn fill_slice(
    dst: &mut [u8],
    fill: &(dyn Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync),
) -> Result<(), BackendError> {
    let n = parts(dst.len());
    if n <= 1 {
        fill(0, wgpu::WriteOnly::from(dst));
        return Ok(());
    }
    let part = part_len(dst.len(), n);
    let pieces: Vec<std::sync::Mutex<Option<&mut [u8]>>> = dst
        .chunks_mut(part)
        .map(|p| std::sync::Mutex::new(Some(p)))
        .collect();
    pool::run(pieces.len(), |i| {
        let piece = pieces
            .get(i)
            .and_then(|slot| slot.lock().ok().and_then(|mut p| p.take()));
        if let Some(d) = piece {
            pool::caller(|| fill((i * part) as u64, wgpu::WriteOnly::from(d)));
        }
    })
}
