//! The 20-byte fixed header of a tensor descriptor and its flag word
//! (`docs/spec/metadata.md` § Fixed Header).

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::U32;

use crate::codes::flag_set;
use crate::element::ElementType;
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::field::wire_fields;

/// `"HRRY"`: the first four bytes of every descriptor.
pub const DESCRIPTOR_MAGIC: [u8; 4] = *b"HRRY";
/// The major format version this crate reads and writes.
pub const VERSION_MAJOR: u8 = 1;
/// The minor format version this crate writes (and the highest it
/// interprets fully).
pub const VERSION_MINOR: u8 = 0;
/// Length of the fixed header.
pub const HEADER_LEN: usize = 20;
/// The largest rank a descriptor may declare.
pub const MAX_RANK: u32 = 64;
/// The dynamic-dimension sentinel of a shape: the size is not known yet.
pub const DYNAMIC: u64 = u64::MAX;

wire_fields! {
    /// The fixed header, as it lies on the wire (any 20 bytes form one):
    /// `docs/spec/metadata.md` § Fixed header, offsets asserted below.
    #[derive(Eq)]
    FixedHeader {
        /// `"HRRY"`.
        magic: [u8; 4],
        /// Major version (1).
        version_major: u8,
        /// Minor version.
        version_minor: u8,
        /// Total length of the descriptor in bytes, header included.
        descriptor_length: U32,
        /// [`Flags`] bits.
        flags: U32,
        /// Element type code.
        type_tag: u8,
        /// Layout code.
        layout_tag: u8,
        /// Number of dimensions.
        rank: U32,
    } = 20;
}

assert_eq_size!(FixedHeader, [u8; HEADER_LEN]);
assert_eq_align!(FixedHeader, u8);
const_assert_eq!(core::mem::offset_of!(FixedHeader, version_major), 4);
const_assert_eq!(core::mem::offset_of!(FixedHeader, version_minor), 5);
const_assert_eq!(core::mem::offset_of!(FixedHeader, descriptor_length), 6);
const_assert_eq!(core::mem::offset_of!(FixedHeader, flags), 10);
const_assert_eq!(core::mem::offset_of!(FixedHeader, type_tag), 14);
const_assert_eq!(core::mem::offset_of!(FixedHeader, layout_tag), 15);
const_assert_eq!(core::mem::offset_of!(FixedHeader, rank), 16);

/// Offsets of the header's fields, for errors (from the struct).
pub(crate) mod at {
    use super::FixedHeader;
    use crate::field::offset32;
    use core::mem::offset_of;
    pub(crate) const VERSION: u32 = offset32(offset_of!(FixedHeader, version_major));
    pub(crate) const LENGTH: u32 = offset32(offset_of!(FixedHeader, descriptor_length));
    pub(crate) const FLAGS: u32 = offset32(offset_of!(FixedHeader, flags));
    pub(crate) const TYPE_TAG: u32 = offset32(offset_of!(FixedHeader, type_tag));
    pub(crate) const LAYOUT_TAG: u32 = offset32(offset_of!(FixedHeader, layout_tag));
    pub(crate) const RANK: u32 = offset32(offset_of!(FixedHeader, rank));
    /// The shape, the first field after the header.
    pub(crate) const SHAPE: u32 = offset32(size_of::<FixedHeader>());
}

impl FixedHeader {
    /// The rules of the header on its own: magic, major version, reserved
    /// flags, type tag, layout tag, rank, and that a private type comes
    /// with its extension type section. Returns the flags and the type.
    // Two hot callers (the parse, the encoder's general path): out of line
    // it cost each ~20 x86-64 instructions (ADR-125). Not forced on bare
    // metal, where inlining it into each decoder costs 64 B of flash.
    #[cfg_attr(not(target_os = "none"), inline(always))]
    pub(crate) fn check(&self) -> Result<(Flags, ElementType), DescriptorError> {
        use DescriptorErrorKind as Kind;
        let err = |offset, kind| Err(DescriptorError::new(offset, kind));
        if self.magic != DESCRIPTOR_MAGIC {
            return err(0, Kind::BadMagic(self.magic));
        }
        if self.version_major != VERSION_MAJOR {
            let (major, minor) = (self.version_major, self.version_minor);
            return err(at::VERSION, Kind::UnsupportedVersion { major, minor });
        }
        let raw_flags = self.flags.get();
        let Some(flags) = Flags::from_bits(raw_flags) else {
            return err(at::FLAGS, Kind::ReservedFlags(raw_flags & !Flags::DEFINED));
        };
        let Some(element_type) = ElementType::from_code(self.type_tag) else {
            return err(at::TYPE_TAG, Kind::InvalidTypeTag(self.type_tag));
        };
        if !super::layout::is_known_tag(self.layout_tag) {
            return err(at::LAYOUT_TAG, Kind::InvalidLayoutTag(self.layout_tag));
        }
        let rank = self.rank.get();
        if rank > MAX_RANK {
            return err(at::RANK, Kind::RankTooLarge(rank));
        }
        let present = flags.contains(Flags::HAS_EXTENSION_TYPE);
        if element_type.is_private() != present {
            let type_tag = self.type_tag;
            return err(at::FLAGS, Kind::ExtensionTypeMismatch { type_tag, present });
        }
        Ok((flags, element_type))
    }
}

flag_set! {
    /// The descriptor's flag word: which optional sections follow the buffer
    /// table.
    ///
    /// ```
    /// use hurray_core::Flags;
    /// let f = Flags::HAS_SHARD.union(Flags::HAS_STATISTICS);
    /// assert_eq!(f.bits(), 0b1010);
    /// assert!(f.contains(Flags::HAS_SHARD));
    /// assert_eq!(Flags::from_bits(1 << 7), None); // reserved bit
    /// ```
    pub struct Flags(u32) {
        /// No optional section.
        const EMPTY = 0;
        /// A quantization section follows (bit 0).
        const HAS_QUANTIZATION = 1 << 0;
        /// A shard section follows (bit 1).
        const HAS_SHARD = 1 << 1;
        /// An extension type section follows (bit 2).
        const HAS_EXTENSION_TYPE = 1 << 2;
        /// A statistics section follows (bit 3).
        const HAS_STATISTICS = 1 << 3;
        /// A composite member section follows (bit 4).
        const HAS_COMPOSITE_MEMBER = 1 << 4;
    }
}

impl Flags {
    /// Every defined bit.
    pub const DEFINED: u32 = 0b1_1111;

    /// `self` with `other` set when `on`, cleared otherwise.
    #[must_use]
    #[inline]
    pub const fn with(self, other: Self, on: bool) -> Self {
        if on {
            Self(self.0 | other.0)
        } else {
            Self(self.0 & !other.0)
        }
    }
}
