//! One entry of the index section: a name, then where the tensor's
//! descriptor and data lie (`docs/spec/file-format.md` § Index section).
//!
//! An entry is `name_length: u16`, `name` (UTF-8, 1..=65535 bytes), then the
//! fixed 32-byte [`EntryFields`]. [`read_entry`] checks one entry alone
//! (name, UTF-8, flags); the view checks entries against each other and the
//! file.

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::error::{FileError, FileErrorKind};

/// Length of the fixed part of an entry, after its name.
pub const ENTRY_FIELDS_LEN: usize = 32;
/// The shortest entry: a one-byte name.
pub const MIN_ENTRY_LEN: usize = 2 + 1 + ENTRY_FIELDS_LEN;
/// Length of the index's entry count.
pub const INDEX_COUNT_LEN: usize = 8;

/// The fixed fields of an index entry, after its name
/// (`docs/spec/file-format.md` § Index section, offsets asserted below).
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy, PartialEq, Eq,
)]
#[repr(C)]
pub struct EntryFields {
    /// Absolute offset of the tensor's descriptor.
    pub descriptor_offset: U64,
    /// The descriptor's length (its own `descriptor_length`).
    pub descriptor_length: U32,
    /// Absolute offset of the tensor's first data buffer.
    pub data_offset: U64,
    /// Bytes from the first buffer's start to the last buffer's end.
    pub data_length: U64,
    /// Zero.
    pub flags: U32,
}

assert_eq_size!(EntryFields, [u8; ENTRY_FIELDS_LEN]);
assert_eq_align!(EntryFields, u8);
const_assert_eq!(core::mem::offset_of!(EntryFields, descriptor_length), 8);
const_assert_eq!(core::mem::offset_of!(EntryFields, data_offset), 12);
const_assert_eq!(core::mem::offset_of!(EntryFields, data_length), 20);
const_assert_eq!(core::mem::offset_of!(EntryFields, flags), 28);

/// One index entry, validated on its own: a tensor's name and where its
/// descriptor and data lie. Also what the writer keeps per tensor.
///
/// ```
/// use hurray_core::file::IndexEntry;
/// let e = IndexEntry { name: "w", descriptor_offset: 64, descriptor_length: 61,
///                      data_offset: 4096, data_length: 64 };
/// assert_eq!(e.encoded_len(), 2 + 1 + 32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IndexEntry<'a> {
    /// The tensor's name, unique in the file.
    pub name: &'a str,
    /// Absolute offset of its descriptor.
    pub descriptor_offset: u64,
    /// Its descriptor's length.
    pub descriptor_length: u32,
    /// Absolute offset of its first data buffer.
    pub data_offset: u64,
    /// Bytes from its first buffer's start to its last buffer's end.
    pub data_length: u64,
}

impl IndexEntry<'_> {
    /// Bytes this entry takes in the index.
    #[must_use]
    #[inline]
    pub const fn encoded_len(&self) -> usize {
        2usize
            .saturating_add(self.name.len())
            .saturating_add(ENTRY_FIELDS_LEN)
    }

    /// The fixed fields of this entry.
    #[must_use]
    pub const fn fields(&self) -> EntryFields {
        EntryFields {
            descriptor_offset: U64::new(self.descriptor_offset),
            descriptor_length: U32::new(self.descriptor_length),
            data_offset: U64::new(self.data_offset),
            data_length: U64::new(self.data_length),
            flags: U32::new(0),
        }
    }

    /// End of the tensor's extent: its data's end, or its descriptor's
    /// when that is later (a head without data).
    pub(crate) const fn extent_end(&self) -> u64 {
        let d = self
            .descriptor_offset
            .saturating_add(self.descriptor_length as u64);
        let e = self.data_offset.saturating_add(self.data_length);
        if d > e { d } else { e }
    }
}

/// The name bytes and the fields of the entry at `at` in `index`, and the
/// offset of the next entry; `None` when the index ends inside it.
#[inline]
pub(crate) fn split_entry(index: &[u8], at: usize) -> Option<(&[u8], &EntryFields, usize)> {
    let rest = index.get(at..)?;
    let (len, rest) = U16::read_from_prefix(rest).ok()?;
    let len = usize::from(len.get());
    let name = rest.get(..len)?;
    let (fields, _) = EntryFields::ref_from_prefix(rest.get(len..)?).ok()?;
    let next = at
        .checked_add(2)?
        .checked_add(len)?
        .checked_add(ENTRY_FIELDS_LEN)?;
    Some((name, fields, next))
}

/// Reads and checks the entry at `at` of `index` (which starts at file
/// offset `base`): its name is 1..=65535 bytes of UTF-8 and its flags are
/// zero. Returns it and the offset of the next entry.
///
/// # Errors
/// [`FileErrorKind::IndexLength`] when the index ends inside the entry,
/// [`FileErrorKind::EmptyName`], [`FileErrorKind::NotUtf8`],
/// [`FileErrorKind::EntryFlags`].
pub fn read_entry(
    index: &[u8],
    at: usize,
    base: u64,
) -> Result<(IndexEntry<'_>, usize), FileError> {
    let fail = |o: usize, kind| Err(FileError::new(base.saturating_add(o as u64), kind));
    let Some((name, fields, next)) = split_entry(index, at) else {
        return fail(at, FileErrorKind::IndexLength);
    };
    if name.is_empty() {
        return fail(at, FileErrorKind::EmptyName);
    }
    let Ok(name) = core::str::from_utf8(name) else {
        return fail(at.saturating_add(2), FileErrorKind::NotUtf8);
    };
    let flags = fields.flags.get();
    if flags != 0 {
        return fail(next.saturating_sub(4), FileErrorKind::EntryFlags(flags));
    }
    Ok((
        IndexEntry {
            name,
            descriptor_offset: fields.descriptor_offset.get(),
            descriptor_length: fields.descriptor_length.get(),
            data_offset: fields.data_offset.get(),
            data_length: fields.data_length.get(),
        },
        next,
    ))
}
