//! Host-side copies out of mapped staging memory.
//!
//! One host thread copies mapped memory at about 10 GB/s on a server core,
//! below what PCIe delivers, so large reads are split over up to
//! [`MAX_THREADS`] threads (`GpuBufferHandle::read_into` gives each thread
//! whole chunks; [`parallel_copy`] splits a single large piece).

use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// Pieces at least this large are copied by several threads.
const PARALLEL_MIN: usize = 2 << 20;
/// The most threads one readback uses.
pub(crate) const MAX_THREADS: usize = 4;

/// Threads a readback may use: the machine's parallelism, at most [`MAX_THREADS`].
pub(crate) fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS))
    })
}

/// A byte-sized destination element: `u8` or `MaybeUninit<u8>`.
pub(crate) trait Byte: Send + Sized {
    /// Writes every element of `dst` from `src`; the lengths are equal.
    fn copy(dst: &mut [Self], src: &[u8]);
}

impl Byte for u8 {
    fn copy(dst: &mut [u8], src: &[u8]) {
        dst.copy_from_slice(src);
    }
}

impl Byte for MaybeUninit<u8> {
    fn copy(dst: &mut [Self], src: &[u8]) {
        assert_eq!(dst.len(), src.len(), "copy of unequal lengths");
        // LLVM turns this loop into a memcpy.
        for (d, s) in dst.iter_mut().zip(src) {
            d.write(*s);
        }
    }
}

/// Copies `src` into `dst` (equal lengths), over several threads when large.
pub(crate) fn parallel_copy<B: Byte>(dst: &mut [B], src: &[u8]) {
    let n = threads();
    if n > 1 && src.len() >= PARALLEL_MIN {
        let part = src.len().div_ceil(n);
        std::thread::scope(|s| {
            let mut pairs = dst.chunks_mut(part).zip(src.chunks(part));
            let first = pairs.next();
            for (d, s_) in pairs {
                s.spawn(move || B::copy(d, s_));
            }
            if let Some((d, s_)) = first {
                B::copy(d, s_);
            }
        });
    } else {
        B::copy(dst, src);
    }
}

/// Appends exactly `len` bytes to `out`, written by `fill` into `out`'s
/// spare capacity, without zero-filling first.
///
/// `fill` receives the `len` spare elements and returns how many it wrote.
/// Its contract: it writes pairwise-disjoint pieces of the slice, each piece
/// whole (`Byte::copy` writes every element of its destination), and returns
/// the sum of their lengths. On error, or if that sum is not `len`, `out`
/// keeps only what it had before.
#[allow(unsafe_code)]
pub(crate) fn append<E>(
    out: &mut Vec<u8>,
    len: usize,
    short: impl FnOnce(usize) -> E,
    fill: impl FnOnce(&mut [MaybeUninit<u8>]) -> Result<usize, E>,
) -> Result<(), E> {
    out.reserve_exact(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let written = fill(spare)?;
    if written != len {
        return Err(short(written));
    }
    let new_len = out.len() + len;
    // SAFETY: `reserve_exact` made room for `len` more bytes. `fill` wrote
    // disjoint whole pieces of those `len` spare elements whose lengths sum
    // to `len` (checked just above), so all of `old_len..new_len` is
    // initialised and within capacity. (`read_into` builds the pieces with
    // `split_at_mut`, so they cannot overlap, and writes each with
    // `Byte::copy`, which writes every element — the `MaybeUninit` impl
    // asserts equal lengths.)
    unsafe { out.set_len(new_len) };
    Ok(())
}
