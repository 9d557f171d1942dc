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

use zerocopy::{FromBytes, IntoBytes};

use crate::codes::{DeviceTag, MemoryClass, SyncMode};
use crate::error::{Error, Result};
use crate::handle::{BufferHandle, BufferHandleEntry, ENTRY_LEN};
use crate::MIN_BUFFER_ALIGNMENT;

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

/// A 128-bit set of the codes of a code enum: bit `c` is set when `c` is a
/// known code. Evaluated at compile time; fails the build if a code is >= 128.
macro_rules! mask_of {
    ($ty:ty) => {{
        let mut mask = 0u128;
        let mut all: &[$ty] = <$ty>::ALL;
        while let [v, rest @ ..] = all {
            assert!(v.code() < 128, "the fast path assumes codes below 128");
            mask |= 1u128 << v.code();
            all = rest;
        }
        mask
    }};
}

const DEVICE_MASK: u128 = mask_of!(DeviceTag);
const SYNC_MASK: u128 = mask_of!(SyncMode);
const CLASS_MASK: u128 = mask_of!(MemoryClass);

#[inline(always)]
const fn known(mask: u128, code: u8) -> bool {
    match mask.checked_shr(code as u32) {
        Some(m) => m & 1 == 1,
        None => false,
    }
}

/// The branch-free form of [`BufferHandleEntry::decode`]: `true` exactly when
/// `decode` returns `Ok` (a property test holds the two together).
#[inline(always)]
const fn entry_ok(e: &BufferHandleEntry) -> bool {
    let size = e.byte_size.get();
    let align = e.alignment.get();
    let pow2 = (align != 0) & (align & align.wrapping_sub(1) == 0);
    let min_ok = (size == 0) | (align >= MIN_BUFFER_ALIGNMENT);
    let cpu_ok = (e.device_tag != DeviceTag::Cpu.code())
        | (e.sync_mode == SyncMode::ProducerSynced.code());
    known(DEVICE_MASK, e.device_tag)
        & known(SYNC_MASK, e.sync_mode)
        & known(CLASS_MASK, e.memory_class)
        & (e.reserved == 0)
        & pow2
        & min_ok
        & cpu_ok
}

/// Entries checked together before the loop looks at the running verdict.
const CHUNK: usize = 64;

/// Validates every entry; on failure names the first invalid one.
///
/// # Errors
/// [`Error::InvalidEntry`] for the first entry that does not decode.
pub(crate) const fn validate_entries(entries: &[BufferHandleEntry]) -> Result<()> {
    let mut start = 0usize;
    let mut rest = entries;
    loop {
        let (chunk, tail) = match rest.split_at_checked(CHUNK) {
            Some(pair) => pair,
            None => (rest, &[] as &[BufferHandleEntry]),
        };
        let mut ok = true;
        let mut scan = chunk;
        while let [e, more @ ..] = scan {
            ok &= entry_ok(e);
            scan = more;
        }
        if !ok {
            let mut index = start;
            let mut scan = chunk;
            while let [e, more @ ..] = scan {
                if let Err(error) = e.decode() {
                    return Err(Error::InvalidEntry { index, error });
                }
                index = index.wrapping_add(1);
                scan = more;
            }
        }
        if tail.is_empty() {
            return Ok(());
        }
        start = start.wrapping_add(chunk.len());
        rest = tail;
    }
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
    pub const fn from_entries(entries: &'a [BufferHandleEntry]) -> Result<Self> {
        match validate_entries(entries) {
            Ok(()) => Ok(Self { entries }),
            Err(e) => Err(e),
        }
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
        Iter { inner: self.entries.iter() }
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
            return Err(Error::BufferTooSmall { needed: needed as u64, available: out.len() as u64 });
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
pub(crate) fn fast_check(e: &BufferHandleEntry) -> bool {
    entry_ok(e)
}
