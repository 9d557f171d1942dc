//! Filling a readback destination in order, with large pieces copied by
//! several threads at once.
//!
//! One host thread copies mapped staging memory at about 10 GB/s on a server
//! core, below what PCIe delivers; [`Cursor::push`] splits large pieces over
//! up to [`MAX_THREADS`] scoped threads.

use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// Pieces at least this large are copied by several threads.
const PARALLEL_MIN: usize = 2 << 20;
/// The most threads one copy uses.
const MAX_THREADS: usize = 4;

fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS))
    })
}

/// A byte-sized destination element: `u8` or `MaybeUninit<u8>`.
pub(crate) trait Byte: Send + Sized {
    fn copy(dst: &mut [Self], src: &[u8]);
}

impl Byte for u8 {
    fn copy(dst: &mut [u8], src: &[u8]) {
        dst.copy_from_slice(src);
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

/// A destination filled front to back; `filled()` bytes at the front have
/// been written.
pub(crate) struct Cursor<'a, B: Byte> {
    rest: &'a mut [B],
    filled: usize,
}

impl<'a, B: Byte> Cursor<'a, B> {
    pub(crate) const fn new(dst: &'a mut [B]) -> Self {
        Self {
            rest: dst,
            filled: 0,
        }
    }

    /// Bytes written so far (a prefix of the destination).
    pub(crate) const fn filled(&self) -> usize {
        self.filled
    }

    /// Writes `src` right after the bytes already written. Writes nothing
    /// (and returns `false`) if it does not fit.
    pub(crate) fn push(&mut self, src: &[u8]) -> bool {
        if src.len() > self.rest.len() {
            return false;
        }
        let (dst, rest) = std::mem::take(&mut self.rest).split_at_mut(src.len());
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
        self.rest = rest;
        self.filled += src.len();
        true
    }
}

/// Appends exactly `len` bytes to `out`, produced by `fill` through a cursor
/// over `out`'s spare capacity, without zero-filling first. On error, or if
/// `fill` wrote fewer than `len` bytes, `out` keeps only what it had before.
#[allow(unsafe_code)]
pub(crate) fn append<E>(
    out: &mut Vec<u8>,
    len: usize,
    short: impl FnOnce(usize) -> E,
    fill: impl FnOnce(&mut Cursor<'_, MaybeUninit<u8>>) -> Result<(), E>,
) -> Result<(), E> {
    out.reserve_exact(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    let mut cursor = Cursor::new(spare);
    fill(&mut cursor)?;
    let filled = cursor.filled();
    if filled != len {
        return Err(short(filled));
    }
    let new_len = out.len() + len;
    // SAFETY: `reserve_exact` made room for `len` more bytes, and the cursor
    // wrote every one of the first `filled` (== `len`) bytes of the spare
    // capacity, front to back (`Cursor::push` only advances `filled` after
    // writing the bytes it covers). So elements `old_len..new_len` are
    // initialised and within capacity.
    unsafe { out.set_len(new_len) };
    Ok(())
}
