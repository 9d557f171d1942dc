//! Why a file, or a write of one, was refused.

use core::fmt;

use crate::composite::CompositeError;
use crate::error::{DescriptorError, error_enum, located_error};

error_enum! {
    /// A part of the file, as named in errors.
    #[non_exhaustive]
    pub enum Section {
        /// The tensor region (descriptors and data buffers).
        Tensors => "tensor region";
        /// The KV metadata section.
        Kv => "KV section";
        /// The index section.
        Index => "index section";
    }
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

error_enum! {
    /// What is wrong with a file.
    #[non_exhaustive]
    pub enum FileErrorKind {
        /// The input is shorter than the part being read.
        Truncated {
            /// Bytes needed.
            needed: u64,
            /// Bytes available.
            available: u64,
        } => "truncated: {needed} bytes needed, {available} available";
        /// The first eight bytes are not `"HRRYFILE"`.
        BadMagic => "not a hurray file (magic is not \"HRRYFILE\")";
        /// A container major version this reader does not know.
        UnsupportedVersion {
            /// Major version found.
            major: u8,
            /// Minor version found.
            minor: u8,
        } => "unsupported container version {major}.{minor}";
        /// A reserved byte of the header or trailer is not zero.
        ReservedBytes => "reserved bytes are not zero";
        /// Reserved bits of `file_flags` are set (the raw word).
        ReservedFlags(bits: u32) => "reserved file flags set in {bits:#010x}";
        /// `data_buffer_alignment` is not a power of two in 4 KiB..=2 MiB.
        BadAlignment(a: u32) => "data_buffer_alignment {a} is not a power of two in 4096..=2097152";
        /// `first_descriptor_offset` is below 64, not a multiple of 8, or past
        /// the tensor region.
        BadFirstDescriptorOffset(o: u64) => "first_descriptor_offset {o} is misplaced";
        /// The last four bytes are not `"HRRY"`.
        BadTrailerMagic => "trailer magic is not \"HRRY\"";
        /// A section lies outside the file, in the trailer, or over another
        /// section.
        SectionOutOfBounds(s: Section) => "{s} out of bounds";
        /// A section does not start on an 8-byte boundary.
        SectionMisaligned(s: Section) => "{s} is not 8-byte aligned";
        /// `HAS_KV_METADATA` is set but the trailer locates no KV section, or
        /// only one of `kv_offset` / `kv_length` is zero.
        KvLocation => "KV flag and KV location disagree";
        /// The index's CRC-32C is not the one the trailer carries.
        CrcMismatch {
            /// CRC in the trailer.
            stored: u32,
            /// CRC of the index bytes.
            computed: u32,
        } => "index CRC-32C is {computed:#010x}, trailer says {stored:#010x}";
        /// `HAS_INDEX_CRC32C` is clear but `index_crc32c` is not zero.
        CrcWithoutFlag(v: u32) => "index_crc32c {v:#010x} without the CRC flag";
        /// The index's bytes end before its entries do, or go on after them.
        IndexLength => "index length does not match its entries";
        /// An index entry's or KV key's name is empty.
        EmptyName => "empty name";
        /// An index entry's name, a KV key or a KV string is not UTF-8.
        NotUtf8 => "not UTF-8";
        /// An index entry's `flags` is not zero (the raw word).
        EntryFlags(v: u32) => "index entry flags {v:#010x} are not zero";
        /// `SORTED_INDEX` is set but this name does not sort after the last.
        NotSorted => "index is flagged sorted but is not";
        /// Two index entries, or two KV entries, share a name.
        DuplicateName => "duplicate name";
        /// A descriptor is misplaced: not 8-aligned, before the first
        /// descriptor, outside the tensor region, or over another tensor.
        DescriptorPlacement => "descriptor misplaced";
        /// The index's `descriptor_length` is not the descriptor's own.
        DescriptorLength {
            /// Length in the index.
            index: u32,
            /// Length in the descriptor.
            descriptor: u32,
        } => "index says descriptor_length {index}, descriptor says {descriptor}";
        /// A descriptor is invalid; its offset is relative to the descriptor.
        Descriptor(e: DescriptorError) => "descriptor: {e}";
        /// A data region is misplaced: not on the data alignment, before its
        /// descriptor ends, outside the tensor region, or over another tensor.
        DataPlacement => "data region misplaced";
        /// `data_length` is not what the buffers and their padding occupy.
        DataLength {
            /// Length in the index.
            index: u64,
            /// Length the buffer table implies.
            expected: u64,
        } => "data_length {index}, buffers and padding occupy {expected}";
        /// A composite is torn, too deeply nested, or breaks a composition rule.
        Composite(e: CompositeError) => "{e}";
        /// A KV value tag that is reserved, private or invalid (the raw tag).
        KvValueTag(t: u8) => "KV value tag {t:#04x} is not allowed";
        /// A KV bool is neither 0 nor 1 (the raw byte).
        KvBool(b: u8) => "KV bool {b:#04x} is neither 0 nor 1";
        /// The KV section's bytes end before its entries do, or go on after.
        KvLength => "KV length does not match its entries";
        /// More KV entries than the reader's limit.
        TooManyKvEntries {
            /// The limit.
            limit: u32,
        } => "more than {limit} KV entries";
        /// An unsorted or out-of-order index of this many entries needs a
        /// caller table to be checked in O(n log n) (see
        /// `FileIndex::parse_with`).
        NeedsTable {
            /// Index entries.
            entries: u64,
        } => "index of {entries} entries not in name and file order: pass a table";
        /// The caller's table is too small for this index.
        TableTooSmall {
            /// Slots needed.
            needed: u64,
        } => "table too small: {needed} slots needed";
        /// The sequential reader found content where it needed zero padding.
        NonZeroPadding => "padding is not zero";
    }
}

error_enum! {
    /// Why the writer refused a call (the caller's mistake), apart from the
    /// sink's own errors ([`WriteError::Sink`]).
    #[non_exhaustive]
    pub enum Misuse {
        /// `data_buffer_alignment` is not a power of two in 4 KiB..=2 MiB.
        BadAlignment(a: u32) => "{}", FileErrorKind::BadAlignment(*a);
        /// A name or KV key is empty or longer than 65,535 bytes.
        BadName => "name is empty or longer than 65535 bytes";
        /// A name was already written, or a KV key given twice.
        DuplicateName => "name written twice";
        /// The buffers given are not the descriptor's (count or sizes); the
        /// index of the first that differs.
        BufferMismatch(i: u32) => "buffer {i} does not match the descriptor";
        /// The caller's index storage is full.
        IndexFull {
            /// Its capacity.
            capacity: u32,
        } => "index storage of {capacity} is full";
        /// `finish` while a composite still expects members.
        TornComposite {
            /// Members still expected.
            missing: u32,
        } => "a composite still expects {missing} members";
        /// Composites nested deeper than 8 levels.
        NestingTooDeep => "composites nest deeper than 8";
        /// A KV array mixes element types, nests an array, or a KV section,
        /// string or array is larger than its length field.
        BadKv => "KV value cannot be encoded";
        /// The file would pass 2^64 bytes.
        TooLarge => "file larger than 2^64 bytes";
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
