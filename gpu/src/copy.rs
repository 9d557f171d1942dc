//! Host-side copies into and out of mapped staging memory, split over the
//! worker pool.
//!
//! One host thread copies mapped memory at about 10 GB/s on a server core,
//! below what PCIe delivers (~50 GB/s), so pieces of at least
//! [`PARALLEL_MIN`] bytes are split over the pool ([`crate::pool`]).
//!
//! This module holds the crate's only `unsafe` code: [`commit`], an
//! `unsafe fn` that sets a `Vec`'s length after its spare capacity was
//! filled (so a 256 MiB read is not preceded by a 256 MiB memset).

use std::mem::MaybeUninit;

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
    /// Writes every element of `dst` from `src`; the caller makes the
    /// lengths equal.
    fn copy(dst: &mut [Self], src: &[u8]);
}

impl Byte for u8 {
    fn copy(dst: &mut [u8], src: &[u8]) {
        let n = dst.len().min(src.len());
        if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
            d.copy_from_slice(s);
        }
    }
}

impl Byte for MaybeUninit<u8> {
    fn copy(dst: &mut [Self], src: &[u8]) {
        // LLVM turns this loop into a memcpy.
        for (d, s) in dst.iter_mut().zip(src) {
            d.write(*s);
        }
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

/// Copies `src` into `dst` (equal lengths), over the pool when large.
///
/// # Errors
/// [`BackendError::Bug`] when the lengths differ or a worker panicked.
pub(crate) fn parallel_copy<B: Byte>(dst: &mut [B], src: &[u8]) -> Result<(), BackendError> {
    if dst.len() != src.len() {
        return Err(BackendError::Bug("host copy of unequal lengths"));
    }
    let n = parts(src.len());
    if n <= 1 {
        B::copy(dst, src);
        return Ok(());
    }
    let part = part_len(src.len(), n);
    let pieces: Vec<std::sync::Mutex<(&mut [B], &[u8])>> = dst
        .chunks_mut(part)
        .zip(src.chunks(part))
        .map(std::sync::Mutex::new)
        .collect();
    pool::run(pieces.len(), |i| {
        if let Some(Ok(mut p)) = pieces.get(i).map(std::sync::Mutex::lock) {
            let (d, s) = &mut *p;
            B::copy(d, s);
        }
    })
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

/// Sets `out`'s length to `out.len() + len` after its spare capacity was
/// filled.
///
/// # Safety
/// `len <= out.capacity() - out.len()`, and the first `len` elements of
/// `out.spare_capacity_mut()` have all been written (initialised).
#[allow(unsafe_code)]
pub(crate) unsafe fn commit(out: &mut Vec<u8>, len: usize) {
    let new_len = out.len() + len;
    // SAFETY: the caller guarantees that `new_len` is within capacity and that
    // every element of `out.len()..new_len` is initialised — exactly
    // `Vec::set_len`'s contract.
    unsafe { out.set_len(new_len) };
}
