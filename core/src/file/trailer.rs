//! The 40-byte trailer that locates the index and the KV section
//! (`docs/spec/file-format.md` § Trailer).

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::error::{FileError, FileErrorKind};

/// `"HRRY"`: the last four bytes of every file.
pub const TRAILER_MAGIC: [u8; 4] = *b"HRRY";
/// Length of the trailer.
pub const TRAILER_LEN: usize = 40;

/// The trailer, as it lies on the wire (any 40 bytes form one):
/// `docs/spec/file-format.md` § Trailer, offsets asserted below.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy, PartialEq, Eq,
)]
#[repr(C)]
pub struct Trailer {
    /// Absolute offset of the index section.
    pub index_offset: U64,
    /// Length of the index section.
    pub index_length: U64,
    /// Absolute offset of the KV section, 0 when there is none.
    pub kv_offset: U64,
    /// Length of the KV section, 0 when there is none.
    pub kv_length: U32,
    /// CRC-32C of the index section's bytes; 0 without the CRC flag.
    pub index_crc32c: U32,
    /// Zero.
    pub reserved: [u8; 4],
    /// `"HRRY"`.
    pub magic: [u8; 4],
}

assert_eq_size!(Trailer, [u8; TRAILER_LEN]);
assert_eq_align!(Trailer, u8);
const_assert_eq!(core::mem::offset_of!(Trailer, index_length), 8);
const_assert_eq!(core::mem::offset_of!(Trailer, kv_offset), 16);
const_assert_eq!(core::mem::offset_of!(Trailer, kv_length), 24);
const_assert_eq!(core::mem::offset_of!(Trailer, index_crc32c), 28);
const_assert_eq!(core::mem::offset_of!(Trailer, reserved), 32);
const_assert_eq!(core::mem::offset_of!(Trailer, magic), 36);

impl Trailer {
    /// Byte offset of `field` within the trailer, for error reports.
    pub(crate) const MAGIC_AT: u64 = core::mem::offset_of!(Trailer, magic) as u64;
    pub(crate) const RESERVED_AT: u64 = core::mem::offset_of!(Trailer, reserved) as u64;
    pub(crate) const CRC_AT: u64 = core::mem::offset_of!(Trailer, index_crc32c) as u64;
    pub(crate) const KV_AT: u64 = core::mem::offset_of!(Trailer, kv_offset) as u64;

    /// Checks the magic first (nothing else is trusted before it), then the
    /// reserved bytes. `base` is the trailer's offset in the file.
    ///
    /// # Errors
    /// [`FileErrorKind::BadTrailerMagic`] or [`FileErrorKind::ReservedBytes`].
    pub fn check(&self, base: u64) -> Result<(), FileError> {
        let fail = |at, kind| Err(FileError::new(base.saturating_add(at), kind));
        if self.magic != TRAILER_MAGIC {
            return fail(Self::MAGIC_AT, FileErrorKind::BadTrailerMagic);
        }
        if self.reserved != [0; 4] {
            return fail(Self::RESERVED_AT, FileErrorKind::ReservedBytes);
        }
        Ok(())
    }
}
