//! Element types (`type_tag`, byte 14 of the descriptor header) and how many
//! bytes a run of elements occupies (`docs/spec/element-types.md`).
//!
//! Every size computation here is checked: an element count whose byte size
//! does not fit a `u64` returns `None`, never wraps.

use crate::codes::code_enum;

code_enum! {
    /// A tensor's element type.
    ///
    /// Tier 1 types (`0x01`–`0x3F`) and Tier 2 types (`0x40`–`0x7F`) are the
    /// spec's tables; `0x00`, `0x47`, every other unassigned code and `0xFF` are
    /// rejected. `0xF0`–`0xFE` are implementation-private ([`ElementType::Private`]):
    /// their bit width comes from the descriptor's extension type section.
    ///
    /// ```
    /// use hurray_core::ElementType;
    /// assert_eq!(ElementType::Float32.code(), 0x03);
    /// assert_eq!(ElementType::from_code(0x48), Some(ElementType::Int4));
    /// assert_eq!(ElementType::from_code(0x47), None); // reserved
    /// assert_eq!(ElementType::Bool.bits(), Some(1));
    /// assert_eq!(ElementType::Float6E2M3.storage_bytes(5), Some(6)); // two 3-byte groups
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[non_exhaustive]
    pub enum ElementType: u8, BUILT_IN, fn from_code_matched {
        /// IEEE 754 binary16 (`0x01`).
        Float16 = 0x01 => "float16",
        /// bfloat16 (`0x02`).
        BFloat16 = 0x02 => "bfloat16",
        /// IEEE 754 binary32 (`0x03`).
        Float32 = 0x03 => "float32",
        /// IEEE 754 binary64 (`0x04`).
        Float64 = 0x04 => "float64",
        /// Signed 8-bit integer (`0x10`).
        Int8 = 0x10 => "int8",
        /// Unsigned 8-bit integer (`0x11`).
        UInt8 = 0x11 => "uint8",
        /// Signed 16-bit integer (`0x12`).
        Int16 = 0x12 => "int16",
        /// Unsigned 16-bit integer (`0x13`).
        UInt16 = 0x13 => "uint16",
        /// Signed 32-bit integer (`0x14`).
        Int32 = 0x14 => "int32",
        /// Unsigned 32-bit integer (`0x15`).
        UInt32 = 0x15 => "uint32",
        /// Signed 64-bit integer (`0x16`).
        Int64 = 0x16 => "int64",
        /// Unsigned 64-bit integer (`0x17`).
        UInt64 = 0x17 => "uint64",
        /// Boolean, one bit, packed 8 per byte LSB first (`0x20`).
        Bool = 0x20 => "bool",
        /// OCP FP8 E4M3 (no infinities) (`0x40`).
        Float8E4M3 = 0x40 => "float8_e4m3",
        /// OCP FP8 E5M2 (`0x41`).
        Float8E5M2 = 0x41 => "float8_e5m2",
        /// Exponent-only scale E8M0 (`0x42`).
        Float8E8M0 = 0x42 => "float8_e8m0",
        /// OCP MX FP4 E2M1, packed 2 per byte (`0x43`).
        Float4E2M1 = 0x43 => "float4_e2m1",
        /// OCP MX FP6 E2M3, 4 elements per 3 bytes (`0x44`).
        Float6E2M3 = 0x44 => "float6_e2m3",
        /// OCP MX FP6 E3M2, 4 elements per 3 bytes (`0x45`).
        Float6E3M2 = 0x45 => "float6_e3m2",
        /// IEEE 754 binary128 (`0x46`).
        Float128 = 0x46 => "float128",
        /// Signed 4-bit integer, packed 2 per byte (`0x48`).
        Int4 = 0x48 => "int4",
        /// Unsigned 4-bit integer, packed 2 per byte (`0x49`).
        UInt4 = 0x49 => "uint4",
        /// Signed 2-bit integer, packed 4 per byte (`0x4A`).
        Int2 = 0x4A => "int2",
        /// Unsigned 2-bit integer, packed 4 per byte (`0x4B`).
        UInt2 = 0x4B => "uint2",
        /// Two binary32 values, real then imaginary (`0x50`).
        Complex64 = 0x50 => "complex64",
        /// Two binary64 values, real then imaginary (`0x51`).
        Complex128 = 0x51 => "complex128",
        @
        /// An implementation-private type `0xF0`–`0xFE`, described by the
        /// descriptor's extension type section.
        Private(u8),
    }
}

/// How elements of a type are laid out in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Packing {
    /// Whole bytes per element (1 to 16 for the built-in types; any
    /// positive count for an extension type).
    Bytes(u32),
    /// Several elements per byte, LSB first: the element width in bits
    /// (1, 2 or 4).
    Bits(u8),
    /// Four 6-bit elements per 3-byte group (`float6_*`), addressed by group.
    SixBitGroups,
}

impl Packing {
    /// Bytes needed to store `n` contiguous elements; `None` on overflow.
    ///
    /// ```
    /// use hurray_core::Packing;
    /// assert_eq!(Packing::Bytes(4).bytes_for(3), Some(12));
    /// assert_eq!(Packing::Bits(1).bytes_for(10), Some(2));
    /// assert_eq!(Packing::Bits(4).bytes_for(3), Some(2));
    /// assert_eq!(Packing::SixBitGroups.bytes_for(5), Some(6));
    /// assert_eq!(Packing::Bytes(8).bytes_for(u64::MAX), None);
    /// ```
    #[must_use]
    // Off bare metal, inlined where the encoder's acceptance calls it with
    // the packing known (ADR-130); the firmware keeps the compiler's choice.
    #[cfg_attr(not(target_os = "none"), inline(always))]
    #[cfg_attr(target_os = "none", inline)]
    pub const fn bytes_for(self, n: u64) -> Option<u64> {
        match self {
            Self::Bytes(w) => n.checked_mul(w as u64),
            Self::Bits(_) => match self.per_byte_shift() {
                // ceil(n / 2^shift) without a division; `n >> shift` is
                // below 2^63, so adding 1 cannot wrap.
                Some(shift) => {
                    Some((n >> shift).wrapping_add((n & !(u64::MAX << shift) != 0) as u64))
                }
                None => None,
            },
            // ceil(n / 4) groups of 3 bytes.
            // `n >> 2` is below 2^62: adding 1 cannot wrap.
            Self::SixBitGroups => (n >> 2).wrapping_add((n & 3 != 0) as u64).checked_mul(3),
        }
    }

    /// log2 of the elements per byte of a bit-packed type (1, 2 or 4 bits).
    const fn per_byte_shift(self) -> Option<u32> {
        match self {
            Self::Bits(1) => Some(3),
            Self::Bits(2) => Some(2),
            Self::Bits(4) => Some(1),
            _ => None,
        }
    }

    /// [`byte_span`](Self::byte_span) in `i128`, where it cannot overflow
    /// (`|first|, |last| < 2^63` and at most 16 bytes an element for the
    /// built-in types; any `u32` width still fits); `None` only for a
    /// packing that addresses no byte (an unsupported bit width).
    pub(crate) const fn byte_span_wide(self, first: i64, last: i64) -> Option<(i128, i128)> {
        // Every product and sum below is of values under 2^96: none can
        // overflow an i128, and `checked_*` says so without a panic path.
        let (first, last) = (first as i128, last as i128);
        let (lo, after, width) = match self {
            Self::Bytes(w) => (first, last.checked_add(1), w as i128),
            Self::Bits(_) => match self.per_byte_shift() {
                Some(shift) => ((first >> shift), (last >> shift).checked_add(1), 1),
                None => return None,
            },
            Self::SixBitGroups => ((first >> 2), (last >> 2).checked_add(1), 3),
        };
        match (after, lo.checked_mul(width)) {
            (Some(after), Some(lo)) => match after.checked_mul(width) {
                Some(hi) => Some((lo, hi)),
                None => None,
            },
            _ => None,
        }
    }

    /// The half-open byte range, relative to `byte_offset`, that elements
    /// with linear offsets `first ..= last` touch (offsets may be negative,
    /// for strided layouts); `None` if it does not fit an `i64`.
    ///
    /// ```
    /// use hurray_core::Packing;
    /// assert_eq!(Packing::Bytes(4).byte_span(-2, 3), Some((-8, 16)));
    /// assert_eq!(Packing::Bits(4).byte_span(0, 4), Some((0, 3)));
    /// assert_eq!(Packing::SixBitGroups.byte_span(0, 4), Some((0, 6)));
    /// ```
    #[must_use]
    #[allow(clippy::cast_possible_truncation)] // each cast is checked to round-trip
    pub const fn byte_span(self, first: i64, last: i64) -> Option<(i64, i64)> {
        // The wide span, where `last + 1`, `lo` and `hi` each fit an `i64`.
        match self.byte_span_wide(first, last) {
            Some((lo, hi))
                if last < i64::MAX && lo as i64 as i128 == lo && hi as i64 as i128 == hi =>
            {
                Some((lo as i64, hi as i64))
            }
            _ => None,
        }
    }
}

/// [`ElementType::width_of`] of each built-in type, by its place in
/// [`ElementType::BUILT_IN`]; 0 after them (a private type).
#[allow(clippy::indexing_slicing)] // compile time: a bad index fails the build
const WIDTHS: [u8; ElementType::BUILT_IN.len() + 1] = {
    let mut widths = [0; ElementType::BUILT_IN.len() + 1];
    let mut i = 0;
    while i < ElementType::BUILT_IN.len() {
        widths[i] = ElementType::BUILT_IN[i].width_of();
        i += 1;
    }
    widths
};

/// The first code past the named ones, from the list (a type added to it
/// is in [`PLACES`] without a second edit).
#[allow(clippy::indexing_slicing)] // compile time: a bad index fails the build
const CODES_END: usize = {
    let mut end = 0;
    let mut i = 0;
    while i < ElementType::BUILT_IN.len() {
        let next = ElementType::BUILT_IN[i].code() as usize + 1;
        if next > end {
            end = next;
        }
        i += 1;
    }
    end
};

/// The place in [`ElementType::BUILT_IN`] of each code below [`CODES_END`]
/// (`u8::MAX` for one the spec does not name), from the list's decoder.
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)] // compile time
const PLACES: [u8; CODES_END] = {
    let mut places = [u8::MAX; CODES_END];
    let mut code = 0;
    while code < CODES_END {
        if let Some(t) = ElementType::from_code_matched(code as u8) {
            places[code] = t.place() as u8;
        }
        code += 1;
    }
    places
};

impl ElementType {
    /// Decodes a wire code; `None` for a reserved, invalid or unknown
    /// code. Read from `PLACES`, not matched: the same verdicts as the
    /// list's decoder in less code (out of line on bare metal, where it
    /// has two callers).
    #[must_use]
    #[cfg_attr(not(target_os = "none"), inline)]
    #[cfg_attr(target_os = "none", inline(never))]
    pub const fn from_code(code: u8) -> Option<Self> {
        if crate::codes::is_private_code(code) {
            return Some(Self::Private(code));
        }
        match PLACES.split_at_checked(code as usize) {
            Some((_, [place, ..])) => Self::at_place(*place as usize),
            _ => None,
        }
    }

    /// Bits per element, 0 for a private type: the spec's table, read at
    /// compile time into [`WIDTHS`].
    const fn width_of(self) -> u8 {
        match self {
            Self::Bool => 1,
            Self::Int2 | Self::UInt2 => 2,
            Self::Float4E2M1 | Self::Int4 | Self::UInt4 => 4,
            Self::Float6E2M3 | Self::Float6E3M2 => 6,
            Self::Int8 | Self::UInt8 | Self::Float8E4M3 | Self::Float8E5M2 | Self::Float8E8M0 => 8,
            Self::Float16 | Self::BFloat16 | Self::Int16 | Self::UInt16 => 16,
            Self::Float32 | Self::Int32 | Self::UInt32 => 32,
            Self::Float64 | Self::Int64 | Self::UInt64 | Self::Complex64 => 64,
            Self::Float128 | Self::Complex128 => 128,
            Self::Private(_) => 0,
        }
    }

    /// Bits per element, 0 for a private type: one lookup in [`WIDTHS`],
    /// which [`bits`](Self::bits), [`packing`](Self::packing) and
    /// [`integer_range`](Self::integer_range) share.
    #[inline]
    const fn width(self) -> u32 {
        match WIDTHS.split_at_checked(self.place()) {
            Some((_, [w, ..])) => *w as u32,
            _ => 0,
        }
    }

    /// Bits per element; `None` for a private type (its width is in the
    /// extension type section).
    #[must_use]
    #[inline]
    pub const fn bits(self) -> Option<u32> {
        match self.width() {
            0 => None,
            b => Some(b),
        }
    }

    /// How elements are packed; `None` for a private type.
    #[must_use]
    // Off bare metal, inlined where the parse reads it (out of line it
    // cost the x86-64 decode 10 instructions); the firmware keeps the
    // compiler's choice.
    #[cfg_attr(not(target_os = "none"), inline(always))]
    #[cfg_attr(target_os = "none", inline)]
    #[allow(clippy::cast_possible_truncation)] // below 8
    pub const fn packing(self) -> Option<Packing> {
        Some(match self.width() {
            0 => return None,
            6 => Packing::SixBitGroups,
            b @ (1 | 2 | 4) => Packing::Bits(b as u8),
            b => Packing::Bytes(b / 8),
        })
    }

    /// Bytes needed for `n` contiguous elements; `None` for a private type
    /// or on overflow.
    #[must_use]
    #[inline]
    pub const fn storage_bytes(self, n: u64) -> Option<u64> {
        match self.packing() {
            Some(p) => p.bytes_for(n),
            None => None,
        }
    }

    /// The natural alignment of one element in bytes (the spec's type
    /// table): 1 for byte and sub-byte types, the constituent float's for
    /// complex types.
    #[must_use]
    #[inline]
    pub const fn natural_alignment(self) -> u32 {
        match self {
            Self::Float16 | Self::BFloat16 | Self::Int16 | Self::UInt16 => 2,
            Self::Float32 | Self::Int32 | Self::UInt32 | Self::Complex64 => 4,
            Self::Float64 | Self::Int64 | Self::UInt64 | Self::Complex128 => 8,
            Self::Float128 => 16,
            _ => 1,
        }
    }

    /// Whether the type has fewer than 8 bits per element (bit-packed or
    /// 6-bit grouped).
    #[must_use]
    #[inline]
    pub const fn is_sub_byte(self) -> bool {
        matches!(self.bits(), Some(b) if b < 8)
    }

    /// The inclusive range of a signed or unsigned integer storage type,
    /// used to check quantization zero points; `None` for other types.
    #[must_use]
    pub const fn integer_range(self) -> Option<(i64, i64)> {
        use ElementType::{Int2, Int4, Int8, Int16, Int32, UInt2, UInt4, UInt8, UInt16, UInt32};
        let signed = matches!(self, Int8 | Int16 | Int32 | Int4 | Int2);
        if !signed && !matches!(self, UInt8 | UInt16 | UInt32 | UInt4 | UInt2) {
            return None;
        }
        // The largest value is the width's bits, less the sign's, all ones
        // (a shift of 0 to 30: the widths are 2 to 32).
        let hi = u32::MAX >> (32u32.wrapping_sub(self.width()) | signed as u32);
        let lo = if signed { (!hi) as i32 as i64 } else { 0 };
        Some((lo, hi as i64))
    }
}
