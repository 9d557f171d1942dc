//! The hurray **file**: named tensors in one random-access container
//! (`docs/spec/file-format.md`), read in place and written in one forward
//! pass, without `std`, an allocator or `unsafe`.
//!
//! One file per part, as the descriptor has: [`header`](FileHeader),
//! [`trailer`](Trailer), [`entry`](IndexEntry) (one index entry), [`kv`]
//! (the KV section), the view ([`FileIndex`], [`FileView`]), the
//! [`writer`](FileWriter) and the [`sequential`](SequentialReader) reader.
//!
//! # Contract
//!
//! * [`FileIndex::parse`] and [`FileView::parse`] accept **any** byte
//!   slice: they never panic, never allocate, never read outside it, and
//!   return a [`FileError`] naming the rule broken and the absolute byte
//!   offset of the field at fault. Before returning, [`FileIndex`] has
//!   checked the header, the trailer (its magic before any other field),
//!   the sections' bounds and alignment, the index CRC-32C when flagged
//!   (and a zero CRC field when not), every KV entry and the keys'
//!   uniqueness, every index entry, the names' uniqueness and (when
//!   flagged) their strict order, and that every descriptor and data range
//!   lies in the tensor region, 8- or data-aligned (and, for an index in
//!   file order or a small one, that no two tensors overlap); it reads one
//!   pass over the index and no descriptor or data byte. [`FileView`] has
//!   also put any index into file order (a sort through the caller's
//!   table), checked that no two tensors overlap, and every descriptor (strict
//!   [`TensorView`](crate::TensorView)) against its entry and data region,
//!   and every composite, assembled in file order and judged at its last
//!   member.
//! * Work is bounded by the index: O(n) with a sorted index or one in file
//!   order, O(n log n) with a caller's table (`FileIndex::table_len`
//!   slots) for any order; never O(n²) past [`SMALL_INDEX`] entries.
//! * After a parse returns `Ok`, the accessors of a [`FileView`] cannot
//!   fail; those of a [`FileIndex`] check the one tensor they hand out.
//! * [`FileWriter`] writes only what [`FileView`] accepts: one forward
//!   pass, keeping only the caller's `IndexEntry` slots.
//!
//! Where the format's reference writer departs from the spec, the reader
//! accepts what it writes and the writer writes the spec
//! (`docs/spec/README.md` § Files the reference writes).

mod crc;
mod entry;
mod error;
mod header;
pub mod kv;
mod sequential;
mod sort;
mod trailer;
mod view;
mod writer;

pub use entry::{
    ENTRY_FIELDS_LEN, EntryFields, INDEX_COUNT_LEN, IndexEntry, MIN_ENTRY_LEN, read_entry,
};
pub use error::{FileError, FileErrorKind, Misuse, Section, WriteError};
pub use header::{
    FILE_HEADER_LEN, FILE_MAGIC, FILE_VERSION_MAJOR, FILE_VERSION_MINOR, FileFlags, FileHeader,
    MAX_DATA_ALIGNMENT, MIN_DATA_ALIGNMENT, UNKNOWN_TENSOR_COUNT,
};
pub use kv::{KvArray, KvSection, KvValue};
pub use sequential::{SeqEvent, SequentialReader};
pub use trailer::{TRAILER_LEN, TRAILER_MAGIC, Trailer};
pub use view::{
    Buffers, FileIndex, FileOptions, FileParts, FileView, MAX_PARTITION_MEMBERS, PartChecked,
    SMALL_INDEX, Tensor, Tensors,
};
pub use writer::{FileWriter, IndexStore, WriterOptions};

/// CRC-32C (Castagnoli, the iSCSI polynomial), portable: slicing by 8
/// over tables built at compile time. `crc32c(&[])` is 0.
///
/// ```
/// assert_eq!(hurray_core::file::crc32c(b"123456789"), 0xE306_9283);
/// ```
#[must_use]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc::update(0, bytes)
}

/// CRC-32C continued: `crc32c_append(crc32c(a), b) == crc32c(a ++ b)`.
///
/// ```
/// use hurray_core::file::{crc32c, crc32c_append};
/// assert_eq!(crc32c_append(crc32c(b"1234"), b"56789"), crc32c(b"123456789"));
/// ```
#[must_use]
pub fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    crc::update(crc, bytes)
}

/// `offset` rounded up to a multiple of `alignment` (a power of two, or 0
/// for none); `None` on overflow.
pub(crate) const fn align_up(offset: u64, alignment: u64) -> Option<u64> {
    let mask = alignment.wrapping_sub(1);
    if alignment == 0 {
        return Some(offset);
    }
    match offset.checked_add(mask) {
        Some(bumped) => Some(bumped & !mask),
        None => None,
    }
}
