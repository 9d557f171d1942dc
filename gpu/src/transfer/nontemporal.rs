//! Host copies with non-temporal stores, for the large copies into and out
//! of DMA staging (x86-64; a plain copy on other targets).
//!
//! A plain copy into memory that is not in cache reads each destination
//! line before it writes it (read-for-ownership) and leaves the lines in
//! cache, where they evict what was there: the copy costs three passes over
//! host memory. Non-temporal stores (`movntdq`) write whole lines without
//! reading them first and without keeping them in cache: two passes. Where
//! the copy competes with the GPU's DMA for the same memory, the pass saved
//! is bandwidth the copy engine gets back. glibc's `memcpy` switches to
//! non-temporal stores by itself only above a threshold derived from the
//! last-level cache, which on a server (300 MiB of L3 on the H200 host) no
//! transfer reaches.
//!
//! The transfer engine streams where the destination is not read again
//! soon by this thread: a readback's copy out of staging into the caller's
//! memory, and an upload's copy of the caller's bytes into staging (the GPU
//! reads them next), for transfers of at least [`STREAM_MIN`] bytes
//! (ADR-126 and `docs/perf.md` for the measurements). The file loader does
//! not: its staging ring is small enough to stay in cache between the copy
//! and the DMA, and streaming measured slower there.
//!
//! ## Unsafe
//! One function, [`copy_raw`]: SSE2 loads and non-temporal stores (SSE2 is
//! part of x86-64) over raw pointers, with the bounds argued at the call and
//! inside. Its two safe callers pass a destination they borrow mutably for
//! exactly as many bytes as the source holds.
#![allow(unsafe_code)]

use std::mem::MaybeUninit;

/// Transfers of at least this many bytes copy with non-temporal stores.
pub(crate) const STREAM_MIN: u64 = 32 << 20;

/// Copies `src` into the first `src.len()` bytes of `dst` (the caller makes
/// the lengths equal; a shorter side limits the copy) with non-temporal
/// stores; returns how many bytes were written, every one of `dst[..n]`.
pub(crate) fn copy(dst: &mut [u8], src: &[u8]) -> usize {
    let n = dst.len().min(src.len());
    match (dst.get_mut(..n), src.get(..n)) {
        (Some(d), Some(s)) => {
            // SAFETY: `d` is borrowed mutably for its `n` bytes, so it is
            // writable and nothing else reaches it during the call, and it
            // cannot overlap `s`, a shared borrow; `s` holds `n` bytes.
            unsafe { copy_raw(d.as_mut_ptr(), s) };
            n
        }
        _ => 0,
    }
}

/// [`copy`] into uninitialised memory (a `Vec`'s spare capacity): every one
/// of the returned `n` elements of `dst` is written (the count contract of
/// `copy::Byte`).
pub(crate) fn copy_uninit(dst: &mut [MaybeUninit<u8>], src: &[u8]) -> usize {
    let n = dst.len().min(src.len());
    match (dst.get_mut(..n), src.get(..n)) {
        (Some(d), Some(s)) => {
            // SAFETY: as in `copy`; `MaybeUninit<u8>` has the layout of
            // `u8`, and writing initialised bytes into it is always allowed.
            // `copy_raw` writes each of the `n` bytes once (its contract).
            unsafe { copy_raw(d.as_mut_ptr().cast::<u8>(), s) };
            n
        }
        _ => 0,
    }
}

/// Writes `src.len()` bytes at `dst`, each once: up to the first 16-byte
/// aligned address with a plain copy, then whole 64-byte lines with
/// non-temporal stores, the rest with a plain copy; then a store fence, so
/// that the streamed bytes are visible to whoever synchronises with this
/// thread afterwards (the pool's join, then a submission).
///
/// # Safety
/// `dst` is valid for writes of `src.len()` bytes, initialised or not,
/// which nothing else reads or writes during the call and which do not
/// overlap `src`.
#[cfg(target_arch = "x86_64")]
unsafe fn copy_raw(dst: *mut u8, src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    const LINE: usize = 64;
    let n = src.len();
    // `align_offset` may answer "unknown" (usize::MAX) in theory; the `min`
    // then makes the whole copy plain, which is still correct.
    let head = dst.align_offset(16).min(n);
    let lines = (n - head) / LINE;
    let done = head + lines * LINE;
    let s = src.as_ptr();
    // SAFETY: every access stays in `0..n` of both sides: the head is
    // `0..head`, line `k` covers `head + 64k .. head + 64(k + 1)`, which ends
    // at most at `done <= n`, and the tail is `done..n`. `dst + head` is
    // 16-byte aligned (`align_offset`), and so is every 16-byte step from
    // it, as `_mm_stream_si128` needs; `_mm_loadu_si128` takes any
    // alignment. The caller guarantees `dst` is writable for `n` bytes and
    // disjoint from `src` (`copy_nonoverlapping`'s condition). SSE2, which
    // these intrinsics need, is part of the x86-64 baseline.
    unsafe {
        std::ptr::copy_nonoverlapping(s, dst, head);
        for k in 0..lines {
            let d = dst.add(head + k * LINE).cast::<__m128i>();
            let from = s.add(head + k * LINE).cast::<__m128i>();
            _mm_stream_si128(d, _mm_loadu_si128(from));
            _mm_stream_si128(d.add(1), _mm_loadu_si128(from.add(1)));
            _mm_stream_si128(d.add(2), _mm_loadu_si128(from.add(2)));
            _mm_stream_si128(d.add(3), _mm_loadu_si128(from.add(3)));
        }
        std::ptr::copy_nonoverlapping(s.add(done), dst.add(done), n - done);
        _mm_sfence();
    }
}

/// A plain copy where there are no non-temporal stores to use.
///
/// # Safety
/// As the x86-64 form.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn copy_raw(dst: *mut u8, src: &[u8]) {
    // SAFETY: the caller's contract is `copy_nonoverlapping`'s.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length and alignment around the head, line and tail cuts: the
    /// bytes arrive, and nothing outside the destination range is touched.
    #[test]
    fn streams_every_byte_at_every_offset_and_length() {
        let src: Vec<u8> = (0..1024u32).map(|i| (i * 7 + 3) as u8).collect();
        for offset in 0..17 {
            for len in [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 511, 700] {
                let mut dst = vec![0xEEu8; len + 64];
                let from = &src[offset..offset + len];
                let n = copy(&mut dst[offset..offset + len], from);
                assert_eq!(n, len);
                assert_eq!(
                    &dst[offset..offset + len],
                    from,
                    "offset {offset} len {len}"
                );
                assert!(dst[..offset].iter().all(|&b| b == 0xEE));
                assert!(dst[offset + len..].iter().all(|&b| b == 0xEE));
            }
        }
    }

    #[test]
    fn uninit_destination_reports_what_it_wrote() {
        let src: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let mut out: Vec<u8> = Vec::with_capacity(300);
        let n = copy_uninit(&mut out.spare_capacity_mut()[..300], &src);
        assert_eq!(n, 300);
        // Shorter sides limit the copy.
        let mut short = vec![0u8; 10];
        assert_eq!(copy(&mut short, &src), 10);
        assert_eq!(short, src[..10]);
        assert_eq!(copy(&mut [], &src), 0);
        let mut wide = vec![0u8; 400];
        assert_eq!(copy(&mut wide, &src), 300);
        assert!(wide[300..].iter().all(|&b| b == 0));
    }
}
