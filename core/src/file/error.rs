//! Why a file, or a write of one, was refused.

use core::fmt;

use crate::composite::CompositeError;
use crate::error::{DescriptorError, located_error};

/// A part of the file, as named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Section {
    /// The tensor region (descriptors and data buffers).
    Tensors,
    /// The KV metadata section.
    Kv,
    /// The index section.
    Index,
}

located_error! {
    /// Why a file was refused: what is wrong, and the absolute byte offset of
    /// the field at fault.
    pub struct FileError(u64, FileErrorKind), "";
    /// An error of `kind` at byte `offset` of the file.
    new;
    /// Absolute byte offset, in the file, of the field at fault.
    offset;
    source FileErrorKind::Descriptor(e) => e, FileErrorKind::Composite(e) => e;
}

/// What is wrong with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum FileErrorKind {
    /// The input is shorter than the part being read.
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The first eight bytes are not `"HRRYFILE"`.
    BadMagic,
    /// A container major version this reader does not know.
    UnsupportedVersion {
        /// Major version found.
        major: u8,
        /// Minor version found.
        minor: u8,
    },
    /// A reserved byte of the header or trailer is not zero.
    ReservedBytes,
    /// Reserved bits of `file_flags` are set (the raw word).
    ReservedFlags(u32),
    /// `data_buffer_alignment` is not a power of two in 4 KiB..=2 MiB.
    BadAlignment(u32),
    /// `first_descriptor_offset` is below 64, not a multiple of 8, or past
    /// the tensor region.
    BadFirstDescriptorOffset(u64),
    /// The last four bytes are not `"HRRY"`.
    BadTrailerMagic,
    /// A section lies outside the file, in the trailer, or over another
    /// section.
    SectionOutOfBounds(Section),
    /// A section does not start on an 8-byte boundary.
    SectionMisaligned(Section),
    /// `HAS_KV_METADATA` is set but the trailer locates no KV section, or
    /// only one of `kv_offset` / `kv_length` is zero.
    KvLocation,
    /// The index's CRC-32C is not the one the trailer carries.
    CrcMismatch {
        /// CRC in the trailer.
        stored: u32,
        /// CRC of the index bytes.
        computed: u32,
    },
    /// `HAS_INDEX_CRC32C` is clear but `index_crc32c` is not zero.
    CrcWithoutFlag(u32),
    /// The index's bytes end before its entries do, or go on after them.
    IndexLength,
    /// An index entry's or KV key's name is empty.
    EmptyName,
    /// An index entry's name, a KV key or a KV string is not UTF-8.
    NotUtf8,
    /// An index entry's `flags` is not zero (the raw word).
    EntryFlags(u32),
    /// `SORTED_INDEX` is set but this name does not sort after the last.
    NotSorted,
    /// Two index entries, or two KV entries, share a name.
    DuplicateName,
    /// A descriptor is misplaced: not 8-aligned, before the first
    /// descriptor, outside the tensor region, or over another tensor.
    DescriptorPlacement,
    /// The index's `descriptor_length` is not the descriptor's own.
    DescriptorLength {
        /// Length in the index.
        index: u32,
        /// Length in the descriptor.
        descriptor: u32,
    },
    /// A descriptor is invalid; its offset is relative to the descriptor.
    Descriptor(DescriptorError),
    /// A data region is misplaced: not on the data alignment, before its
    /// descriptor ends, outside the tensor region, or over another tensor.
    DataPlacement,
    /// `data_length` is not what the buffers and their padding occupy.
    DataLength {
        /// Length in the index.
        index: u64,
        /// Length the buffer table implies.
        expected: u64,
    },
    /// A composite is torn, too deeply nested, or breaks a composition rule.
    Composite(CompositeError),
    /// A KV value tag that is reserved, private or invalid (the raw tag).
    KvValueTag(u8),
    /// A KV bool is neither 0 nor 1 (the raw byte).
    KvBool(u8),
    /// The KV section's bytes end before its entries do, or go on after.
    KvLength,
    /// More KV entries than the reader's limit.
    TooManyKvEntries {
        /// The limit.
        limit: u32,
    },
    /// An unsorted or out-of-order index of this many entries needs a
    /// caller table to be checked in O(n log n) (see
    /// `FileIndex::parse_with`).
    NeedsTable {
        /// Index entries.
        entries: u64,
    },
    /// The caller's table is too small for this index.
    TableTooSmall {
        /// Slots needed.
        needed: u64,
    },
    /// The sequential reader found content where it needed zero padding.
    NonZeroPadding,
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Section::Tensors => "tensor region",
            Section::Kv => "KV section",
            Section::Index => "index section",
        })
    }
}

impl fmt::Display for FileErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { needed, available } => {
                write!(f, "truncated: {needed} bytes needed, {available} available")
            }
            Self::BadMagic => write!(f, "not a hurray file (magic is not \"HRRYFILE\")"),
            Self::UnsupportedVersion { major, minor } => {
                write!(f, "unsupported container version {major}.{minor}")
            }
            Self::ReservedBytes => write!(f, "reserved bytes are not zero"),
            Self::ReservedFlags(bits) => write!(f, "reserved file flags set in {bits:#010x}"),
            Self::BadAlignment(a) => write!(
                f,
                "data_buffer_alignment {a} is not a power of two in 4096..=2097152"
            ),
            Self::BadFirstDescriptorOffset(o) => {
                write!(f, "first_descriptor_offset {o} is misplaced")
            }
            Self::BadTrailerMagic => write!(f, "trailer magic is not \"HRRY\""),
            Self::SectionOutOfBounds(s) => write!(f, "{s} out of bounds"),
            Self::SectionMisaligned(s) => write!(f, "{s} is not 8-byte aligned"),
            Self::KvLocation => write!(f, "KV flag and KV location disagree"),
            Self::CrcMismatch { stored, computed } => write!(
                f,
                "index CRC-32C is {computed:#010x}, trailer says {stored:#010x}"
            ),
            Self::CrcWithoutFlag(v) => {
                write!(f, "index_crc32c {v:#010x} without the CRC flag")
            }
            Self::IndexLength => write!(f, "index length does not match its entries"),
            Self::EmptyName => write!(f, "empty name"),
            Self::NotUtf8 => write!(f, "not UTF-8"),
            Self::EntryFlags(v) => write!(f, "index entry flags {v:#010x} are not zero"),
            Self::NotSorted => write!(f, "index is flagged sorted but is not"),
            Self::DuplicateName => write!(f, "duplicate name"),
            Self::DescriptorPlacement => write!(f, "descriptor misplaced"),
            Self::DescriptorLength { index, descriptor } => write!(
                f,
                "index says descriptor_length {index}, descriptor says {descriptor}"
            ),
            Self::Descriptor(e) => write!(f, "descriptor: {e}"),
            Self::DataPlacement => write!(f, "data region misplaced"),
            Self::DataLength { index, expected } => write!(
                f,
                "data_length {index}, buffers and padding occupy {expected}"
            ),
            Self::Composite(e) => write!(f, "{e}"),
            Self::KvValueTag(t) => write!(f, "KV value tag {t:#04x} is not allowed"),
            Self::KvBool(b) => write!(f, "KV bool {b:#04x} is neither 0 nor 1"),
            Self::KvLength => write!(f, "KV length does not match its entries"),
            Self::TooManyKvEntries { limit } => write!(f, "more than {limit} KV entries"),
            Self::NeedsTable { entries } => write!(
                f,
                "index of {entries} entries not in name and file order: pass a table"
            ),
            Self::TableTooSmall { needed } => write!(f, "table too small: {needed} slots needed"),
            Self::NonZeroPadding => write!(f, "padding is not zero"),
        }
    }
}

/// Why the writer refused a call (the caller's mistake), apart from the
/// sink's own errors ([`WriteError::Sink`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Misuse {
    /// `data_buffer_alignment` is not a power of two in 4 KiB..=2 MiB.
    BadAlignment(u32),
    /// A name or KV key is empty or longer than 65,535 bytes.
    BadName,
    /// A name was already written, or a KV key given twice.
    DuplicateName,
    /// The buffers given are not the descriptor's (count or sizes); the
    /// index of the first that differs.
    BufferMismatch(u32),
    /// The caller's index storage is full.
    IndexFull {
        /// Its capacity.
        capacity: u32,
    },
    /// `finish` while a composite still expects members.
    TornComposite {
        /// Members still expected.
        missing: u32,
    },
    /// Composites nested deeper than 8 levels.
    NestingTooDeep,
    /// A KV array mixes element types, nests an array, or a KV section,
    /// string or array is larger than its length field.
    BadKv,
    /// The file would pass 2^64 bytes.
    TooLarge,
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::BadAlignment(a) => write!(f, "{}", FileErrorKind::BadAlignment(a)),
            Self::BadName => write!(f, "name is empty or longer than 65535 bytes"),
            Self::DuplicateName => write!(f, "name written twice"),
            Self::BufferMismatch(i) => write!(f, "buffer {i} does not match the descriptor"),
            Self::IndexFull { capacity } => write!(f, "index storage of {capacity} is full"),
            Self::TornComposite { missing } => {
                write!(f, "a composite still expects {missing} members")
            }
            Self::NestingTooDeep => write!(f, "composites nest deeper than 8"),
            Self::BadKv => write!(f, "KV value cannot be encoded"),
            Self::TooLarge => write!(f, "file larger than 2^64 bytes"),
        }
    }
}

/// Why a write failed: the sink's error, or the caller's mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WriteError<E> {
    /// The sink failed (or accepted zero bytes: `None`).
    Sink(Option<E>),
    /// The call was refused before anything of it was written.
    Misuse(Misuse),
}

impl<E: fmt::Debug> fmt::Display for WriteError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sink(Some(e)) => write!(f, "sink failed: {e:?}"),
            Self::Sink(None) => write!(f, "sink accepted no bytes"),
            Self::Misuse(m) => write!(f, "{m}"),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for WriteError<E> {}

impl<E> From<Misuse> for WriteError<E> {
    fn from(m: Misuse) -> Self {
        Self::Misuse(m)
    }
}
