//! The buffer table: a packed array of 16-byte [`BufferHandleEntry`]s.
//!
//! # Contract
//!
//! * [`BufferTable::parse`] accepts any `&[u8]`: its length must be a multiple
//!   of 16 and every entry must decode, else it returns
//!   [`Error::TableLength`] or [`Error::InvalidEntry`] naming the *first*
//!   invalid entry's index and fault. It never panics and never copies.
//! * After `parse` succeeds, [`BufferTable::get`] and [`BufferTable::iter`]
//!   return a [`BufferHandle`] for every index below [`BufferTable::len`];
//!   they cannot fail.
//!
//! Validation is a single pass with a branch-free check per entry (see
//! `docs/impl/validation.md`); only a chunk that holds a bad entry is scanned
//! again to name the first fault.

use zerocopy::little_endian::U32;
use zerocopy::{FromBytes, IntoBytes};

use crate::MIN_BUFFER_ALIGNMENT;
use crate::error::{Error, Result};
use crate::handle::{BufferHandle, BufferHandleEntry, ENTRY_LEN};

/// A validated, zero-copy view of a buffer table.
///
/// ```
/// use hurray_core::{BufferHandle, BufferTable, DeviceTag, Error, SyncMode};
///
/// let handles = [
///     BufferHandle::new(4096, 64, DeviceTag::Cuda, SyncMode::Event).unwrap(),
///     BufferHandle::empty(DeviceTag::Cpu),
/// ];
/// let mut bytes = [0u8; 32];
/// assert_eq!(BufferTable::encode(&handles, &mut bytes), Ok(32));
///
/// let table = BufferTable::parse(&bytes).unwrap();
/// assert_eq!(table.len(), 2);
/// assert_eq!(table.get(0), Some(handles[0]));
/// assert!(table.iter().eq(handles));
///
/// // A bad entry is reported with its index.
/// bytes[16 + 15] = 0xAA; // reserved byte of entry 1
/// assert!(matches!(BufferTable::parse(&bytes), Err(Error::InvalidEntry { index: 1, .. })));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTable<'a> {
    entries: &'a [BufferHandleEntry],
}

// --- the fast path -------------------------------------------------------------
//
// `entry_ok` is the branch-free twin of `BufferHandleEntry::decode`, written
// over the entry's four little-endian u32 words so that the compiler can check
// several entries per instruction with plain SSE2. The code sets it tests
// against are derived at compile time from the enums' `ALL` tables: sync modes
// and memory classes must be contiguous from 0 and device tags below 32
// (asserted below, failing the build otherwise).

/// Code sets for the fast path. Everything here is evaluated at compile time:
/// an out-of-range index or a failed assertion fails the build, so the
/// runtime panic lints do not apply.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod codesets {
    use crate::codes::{DeviceTag, MemoryClass, SyncMode};

    /// `(min, max, count)` of a code table.
    const fn span(codes: &[u8]) -> (u8, u8, usize) {
        let (mut min, mut max) = (u8::MAX, 0u8);
        let mut rest = codes;
        while let [c, more @ ..] = rest {
            if *c < min {
                min = *c;
            }
            if *c > max {
                max = *c;
            }
            rest = more;
        }
        (min, max, codes.len())
    }

    macro_rules! codes_of {
        ($ty:ty) => {{
            const N: usize = <$ty>::ALL.len();
            let mut out = [0u8; N];
            let mut i = 0;
            while i < N {
                out[i] = <$ty>::ALL[i].code();
                i += 1;
            }
            out
        }};
    }

    pub(super) const DEVICE_CODES: [u8; DeviceTag::ALL.len()] = codes_of!(DeviceTag);
    pub(super) const SYNC_SPAN: (u8, u8, usize) = span(&codes_of!(SyncMode));
    pub(super) const CLASS_SPAN: (u8, u8, usize) = span(&codes_of!(MemoryClass));

    // Sync modes and memory classes are 0..=max with no hole.
    const _: () = assert!(SYNC_SPAN.0 == 0 && SYNC_SPAN.1 as usize + 1 == SYNC_SPAN.2);
    const _: () = assert!(CLASS_SPAN.0 == 0 && CLASS_SPAN.1 as usize + 1 == CLASS_SPAN.2);

    /// Bit `c` set for every device code `c` (all are below 32, asserted).
    pub(super) const DEVICE_MASK32: u32 = {
        let mut mask = 0u32;
        let mut i = 0;
        while i < DEVICE_CODES.len() {
            assert!(DEVICE_CODES[i] < 32);
            mask |= 1 << DEVICE_CODES[i];
            i += 1;
        }
        mask
    };
    pub(super) const CPU: u32 = DeviceTag::Cpu.code() as u32;
    pub(super) const PRODUCER_SYNCED: u32 = SyncMode::ProducerSynced.code() as u32;
}
use codesets::{CLASS_SPAN, CPU, DEVICE_MASK32, PRODUCER_SYNCED, SYNC_SPAN};

/// The branch-free form of [`BufferHandleEntry::decode`] over the entry's
/// words `[size_lo, size_hi, alignment, dev | sync << 8 | class << 16 | reserved << 24]`:
/// `true` exactly when `decode` returns `Ok` (a unit test checks all 2^24
/// code combinations).
#[inline(always)]
const fn entry_ok(w: &[U32; 4]) -> bool {
    let [lo, hi, align, codes] = [w[0].get(), w[1].get(), w[2].get(), w[3].get()];
    let dev = codes & 0xFF;
    let sync = (codes >> 8) & 0xFF;
    // `1 << dev` rather than `MASK >> dev`: SSE2 has no per-lane variable
    // shift, and LLVM lowers a left shift through float exponents, which is
    // cheaper than testing every hole.
    let dev_ok = (codes & 0xE0 == 0) & ((1u32 << (dev & 31)) & DEVICE_MASK32 != 0);
    let sync_ok = sync <= SYNC_SPAN.1 as u32;
    // Class (byte 14) and reserved (byte 15) together: class <= max and reserved == 0.
    let class_and_reserved_ok = (codes >> 16) <= CLASS_SPAN.1 as u32;
    let pow2 = (align != 0) & (align & align.wrapping_sub(1) == 0);
    // Given `pow2`, `align >= 64` is `align & !63 != 0` (cheaper than an unsigned compare).
    let min_ok = ((lo | hi) == 0) | (align & !(MIN_BUFFER_ALIGNMENT - 1) != 0);
    let cpu_ok = (dev != CPU) | (sync == PRODUCER_SYNCED);
    dev_ok & sync_ok & class_and_reserved_ok & pow2 & min_ok & cpu_ok
}

/// Entries checked together before the loop looks at the running verdict.
const CHUNK: usize = 64;

/// Validates every entry; on failure names the first invalid one.
///
/// # Errors
/// [`Error::InvalidEntry`] for the first entry that does not decode.
pub(crate) fn validate_entries(entries: &[BufferHandleEntry]) -> Result<()> {
    // Same bytes, seen as four little-endian words per entry; cannot fail
    // (16-byte entries, alignment 1), but a failure would only skip the fast path.
    let words = <[[U32; 4]]>::ref_from_bytes(entries.as_bytes()).unwrap_or(&[]);
    let fast_ok = words.len() == entries.len();
    for (n, (chunk, words)) in entries
        .chunks(CHUNK)
        .zip(words.chunks(CHUNK).chain(core::iter::repeat(&[][..])))
        .enumerate()
    {
        if fast_ok && words.iter().fold(true, |ok, w| ok & entry_ok(w)) {
            continue;
        }
        for (i, e) in chunk.iter().enumerate() {
            if let Err(error) = e.decode() {
                let index = n.saturating_mul(CHUNK).saturating_add(i);
                return Err(Error::InvalidEntry { index, error });
            }
        }
    }
    Ok(())
}

impl<'a> BufferTable<'a> {
    /// Views and validates a buffer table in place.
    ///
    /// # Errors
    /// * [`Error::TableLength`] — `bytes.len()` is not a multiple of 16.
    /// * [`Error::InvalidEntry`] — the first entry that does not decode, with
    ///   its index and [`EntryError`](crate::EntryError).
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        match <[BufferHandleEntry]>::ref_from_bytes(bytes) {
            Ok(entries) => Self::from_entries(entries),
            Err(_) => Err(Error::TableLength { len: bytes.len() }),
        }
    }

    /// Validates a slice of raw entries.
    ///
    /// # Errors
    /// [`Error::InvalidEntry`] for the first entry that does not decode.
    #[inline]
    pub fn from_entries(entries: &'a [BufferHandleEntry]) -> Result<Self> {
        validate_entries(entries)?;
        Ok(Self { entries })
    }

    /// Number of entries.
    #[must_use]
    #[inline]
    pub const fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has no entries.
    #[must_use]
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The handle at `index`, or `None` past the end.
    #[must_use]
    #[inline]
    pub const fn get(&self, index: usize) -> Option<BufferHandle> {
        match self.entries.split_at_checked(index) {
            Some((_, [first, ..])) => decode_validated(first),
            _ => None,
        }
    }

    /// An iterator over the handles, in table order.
    #[must_use]
    #[inline]
    pub fn iter(&self) -> Iter<'a> {
        Iter {
            inner: self.entries.iter(),
        }
    }

    /// The raw entries (already validated).
    #[must_use]
    #[inline]
    pub const fn entries(&self) -> &'a [BufferHandleEntry] {
        self.entries
    }

    /// The table's wire bytes.
    #[must_use]
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.entries.as_bytes()
    }

    /// Encodes `handles` as a buffer table at the start of `out`.
    ///
    /// Returns the number of bytes written (`16 * handles.len()`).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when `out` is shorter than that; nothing is
    /// written then.
    pub fn encode(handles: &[BufferHandle], out: &mut [u8]) -> Result<usize> {
        let needed = handles.len().saturating_mul(ENTRY_LEN);
        let Some(dst) = out.get_mut(..needed) else {
            return Err(Error::BufferTooSmall {
                needed: needed as u64,
                available: out.len() as u64,
            });
        };
        for (chunk, h) in dst.chunks_exact_mut(ENTRY_LEN).zip(handles) {
            chunk.copy_from_slice(&h.to_bytes());
        }
        Ok(needed)
    }
}

/// Decodes an entry that a `BufferTable` already validated.
#[inline]
const fn decode_validated(e: &BufferHandleEntry) -> Option<BufferHandle> {
    match e.decode() {
        Ok(h) => Some(h),
        // Unreachable: every entry of a `BufferTable` passed `validate_entries`.
        Err(_) => None,
    }
}

impl<'a> IntoIterator for BufferTable<'a> {
    type Item = BufferHandle;
    type IntoIter = Iter<'a>;
    #[inline]
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &BufferTable<'a> {
    type Item = BufferHandle;
    type IntoIter = Iter<'a>;
    #[inline]
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Iterator over the handles of a [`BufferTable`].
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    inner: core::slice::Iter<'a, BufferHandleEntry>,
}

impl Iterator for Iter<'_> {
    type Item = BufferHandle;
    #[inline]
    fn next(&mut self) -> Option<BufferHandle> {
        self.inner.next().and_then(decode_validated)
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<BufferHandle> {
        self.inner.next_back().and_then(decode_validated)
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl core::iter::FusedIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free fast path agrees with `decode` on every combination of
    /// the three code bytes (2^24 cases; a sample under Miri), for the size
    /// and alignment shapes that matter to the other rules.
    #[test]
    fn fast_path_agrees_with_decode_exhaustively() {
        let step = if cfg!(miri) { 4099 } else { 1 };
        let shapes: &[(u64, u32)] = if cfg!(miri) {
            &[(1024, 64)]
        } else {
            &[(1024, 64), (0, 1), (5, 3), (100, 32)]
        };
        let mut checked = 0u64;
        for &(size, align) in shapes {
            for codes in (0u32..1 << 24).step_by(step) {
                let [dev, sync, class, _] = codes.to_le_bytes();
                for reserved in [0u8, 1] {
                    let e = BufferHandleEntry {
                        byte_size: size.into(),
                        alignment: align.into(),
                        device_tag: dev,
                        sync_mode: sync,
                        memory_class: class,
                        reserved,
                    };
                    let words = <[U32; 4]>::read_from_bytes(e.as_bytes()).unwrap();
                    assert_eq!(entry_ok(&words), e.decode().is_ok(), "{e:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 0);
    }
}
