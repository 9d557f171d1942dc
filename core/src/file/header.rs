//! The 64-byte file header and its flag word
//! (`docs/spec/file-format.md` § File header).

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::error::{FileError, FileErrorKind};
use crate::codes::flag_set;

/// `"HRRYFILE"`: the first eight bytes of every file.
pub const FILE_MAGIC: [u8; 8] = *b"HRRYFILE";
/// The container major version this crate reads and writes.
pub const FILE_VERSION_MAJOR: u8 = 1;
/// The container minor version this crate writes.
pub const FILE_VERSION_MINOR: u8 = 0;
/// Length of the file header.
pub const FILE_HEADER_LEN: usize = 64;
/// The smallest `data_buffer_alignment` a file may declare (4 KiB).
pub const MIN_DATA_ALIGNMENT: u32 = 4096;
/// The largest `data_buffer_alignment` a file may declare (2 MiB).
pub const MAX_DATA_ALIGNMENT: u32 = 2 * 1024 * 1024;
/// `tensor_count_hint` of a writer that did not know the count up front.
pub const UNKNOWN_TENSOR_COUNT: u64 = u64::MAX;

/// The file header, as it lies on the wire (any 64 bytes form one):
/// `docs/spec/file-format.md` § Header, offsets asserted below.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy, PartialEq, Eq,
)]
#[repr(C)]
pub struct FileHeader {
    /// `"HRRYFILE"`.
    pub magic: [u8; 8],
    /// Container major version (1).
    pub version_major: u8,
    /// Container minor version.
    pub version_minor: u8,
    /// Zero.
    pub reserved: [u8; 2],
    /// [`FileFlags`] bits.
    pub flags: U32,
    /// Alignment of every data buffer: a power of two in 4 KiB..=2 MiB.
    pub data_buffer_alignment: U32,
    /// Absolute offset of the first descriptor (≥ 64, a multiple of 8).
    pub first_descriptor_offset: U64,
    /// Tensor count if known at write time, else [`UNKNOWN_TENSOR_COUNT`].
    pub tensor_count_hint: U64,
    /// Zero.
    pub reserved_tail: [u8; 28],
}

/// Byte offset of a header field, for the layout checks and error reports.
macro_rules! at {
    ($field:ident) => {
        core::mem::offset_of!(FileHeader, $field) as u64
    };
}

assert_eq_size!(FileHeader, [u8; FILE_HEADER_LEN]);
assert_eq_align!(FileHeader, u8);
const_assert_eq!(at!(version_major), 8);
const_assert_eq!(at!(reserved), 10);
const_assert_eq!(at!(flags), 12);
const_assert_eq!(at!(data_buffer_alignment), 16);
const_assert_eq!(at!(first_descriptor_offset), 20);
const_assert_eq!(at!(tensor_count_hint), 28);
const_assert_eq!(at!(reserved_tail), 36);

/// Whether `a` is a `data_buffer_alignment`: a power of two in
/// [`MIN_DATA_ALIGNMENT`]..=[`MAX_DATA_ALIGNMENT`].
pub(crate) const fn alignment_ok(a: u32) -> bool {
    a.is_power_of_two() && a >= MIN_DATA_ALIGNMENT && a <= MAX_DATA_ALIGNMENT
}

flag_set! {
    /// The file's flag word.
    ///
    /// ```
    /// use hurray_core::file::FileFlags;
    /// let f = FileFlags::SORTED_INDEX.union(FileFlags::HAS_INDEX_CRC32C);
    /// assert_eq!(f.bits(), 0b110);
    /// assert_eq!(FileFlags::from_bits(1 << 3), None); // reserved bit
    /// ```
    pub struct FileFlags(u32) {
        /// No flag.
        const EMPTY = 0;
        /// Bit 0: a KV metadata section is present.
        const HAS_KV_METADATA = 1;
        /// Bit 1: index entries are in strictly ascending byte order of name.
        const SORTED_INDEX = 1 << 1;
        /// Bit 2: the trailer carries the CRC-32C of the index section.
        const HAS_INDEX_CRC32C = 1 << 2;
        /// Every defined bit.
        const ALL = 0b111;
    }
}

impl FileHeader {
    /// A header for a writer: version 1.0, the given flags and alignment,
    /// the first descriptor right after the header.
    #[must_use]
    pub const fn new(flags: FileFlags, alignment: u32, tensor_count_hint: u64) -> Self {
        Self {
            magic: FILE_MAGIC,
            version_major: FILE_VERSION_MAJOR,
            version_minor: FILE_VERSION_MINOR,
            reserved: [0; 2],
            flags: U32::new(flags.bits()),
            data_buffer_alignment: U32::new(alignment),
            first_descriptor_offset: U64::new(FILE_HEADER_LEN as u64),
            tensor_count_hint: U64::new(tensor_count_hint),
            reserved_tail: [0; 28],
        }
    }

    /// Checks every rule a reader can check from the header alone and
    /// returns its flags.
    ///
    /// # Errors
    /// The first rule broken, at the offset of its field.
    pub fn check(&self) -> Result<FileFlags, FileError> {
        let fail = |at, kind| Err(FileError::new(at, kind));
        if self.magic != FILE_MAGIC {
            return fail(0, FileErrorKind::BadMagic);
        }
        let (major, minor) = (self.version_major, self.version_minor);
        if major != FILE_VERSION_MAJOR {
            let kind = FileErrorKind::UnsupportedVersion { major, minor };
            return fail(at!(version_major), kind);
        }
        if self.reserved != [0; 2] {
            return fail(at!(reserved), FileErrorKind::ReservedBytes);
        }
        let Some(flags) = FileFlags::from_bits(self.flags.get()) else {
            return fail(at!(flags), FileErrorKind::ReservedFlags(self.flags.get()));
        };
        let alignment = self.data_buffer_alignment.get();
        if !alignment_ok(alignment) {
            let kind = FileErrorKind::BadAlignment(alignment);
            return fail(at!(data_buffer_alignment), kind);
        }
        let first = self.first_descriptor_offset.get();
        if first < FILE_HEADER_LEN as u64 || !first.is_multiple_of(8) {
            let kind = FileErrorKind::BadFirstDescriptorOffset(first);
            return fail(at!(first_descriptor_offset), kind);
        }
        if self.reserved_tail != [0; 28] {
            return fail(at!(reserved_tail), FileErrorKind::ReservedBytes);
        }
        Ok(flags)
    }
}
