//! Extension type section (20 bytes): how a private element type
//! (`0xF0`–`0xFE`) is stored, so a reader can size its buffers; the field
//! map is `docs/spec/metadata.md` § Extension type section.
//!
//! Widths below 8 are 1, 2 or 4 bits with `packing_factor = 8 / bit_width`;
//! wider types have `packing_factor = 1` and (stricter than the format's
//! reference reader) a whole number of bytes. Integer types carry no
//! floating-point fields; a float type is unsigned-integer-free
//! (`is_signed = 0`) with at most one sign bit.

use zerocopy::IntoBytes;
use zerocopy::little_endian::U32;

use crate::FieldName;
use crate::field::{at, field_row, wire_fields};

use crate::element::{ElementType, Packing};
use crate::error::DescriptorError;

use super::super::cursor::{Reader, Writer};

wire_fields! {
    /// The extension type section as it lies on the wire.
    #[derive(Eq, Hash)]
    ExtensionTypeEntry {
        /// Bits per element.
        bit_width: U32,
        /// Elements per byte.
        packing_factor: u8,
        /// 1 for a floating-point type.
        is_float: u8,
        /// 1 for a signed integer type.
        is_signed: u8,
        /// Sign bits of a float.
        sign_bits: u8,
        /// Exponent bits of a float.
        exponent_bits: u8,
        /// Mantissa bits of a float.
        mantissa_bits: u8,
        /// Reserved, zero.
        reserved: [u8; 2] as "_reserved",
        /// Exponent bias of a float.
        exponent_bias: U32,
        /// 1 if NaN is representable.
        has_nan: u8,
        /// 1 if infinity is representable.
        has_inf: u8,
        /// Reserved, zero.
        reserved2: [u8; 2] as "_reserved2",
    } = 20;
}

/// `packing_factor` for a valid `bit_width`: `8 / bit_width` below 8, else 1.
const fn packing_factor(bit_width: u32) -> u8 {
    match bit_width {
        1 => 8,
        2 => 4,
        4 => 2,
        _ => 1,
    }
}

/// The fields the rules name: offset and spec name. The rows below name
/// them by index here.
const FIELDS: [(u8, FieldName); 10] = [
    field_row!(ExtensionTypeEntry.bit_width, BitWidth),
    field_row!(ExtensionTypeEntry.packing_factor, PackingFactor),
    field_row!(ExtensionTypeEntry.is_float, IsFloat),
    field_row!(ExtensionTypeEntry.is_signed, IsSigned),
    field_row!(ExtensionTypeEntry.sign_bits, SignBits),
    field_row!(ExtensionTypeEntry.exponent_bits, ExponentBits),
    field_row!(ExtensionTypeEntry.mantissa_bits, MantissaBits),
    field_row!(ExtensionTypeEntry.exponent_bias, ExponentBias),
    field_row!(ExtensionTypeEntry.has_nan, HasNan),
    field_row!(ExtensionTypeEntry.has_inf, HasInf),
];
/// The offset of `bit_width`, one of the two fields wider than a byte.
const BIT_WIDTH_AT: u8 = field_row!(ExtensionTypeEntry.bit_width, BitWidth).0;
/// The offset of `exponent_bias`, the other one.
const EXPONENT_BIAS_AT: u8 = field_row!(ExtensionTypeEntry.exponent_bias, ExponentBias).0;
/// Flags of every type, at most 1 (`(field, most allowed)`, checked in
/// order).
const FLAGS: [(u8, u8); 4] = [(2, 1), (3, 1), (8, 1), (9, 1)];
/// A float type: unsigned, at most one sign bit.
const FLOAT: [(u8, u8); 2] = [(3, 0), (4, 1)];
/// An integer type: no floating-point field.
const INTEGER: [(u8, u8); 6] = [(4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0)];

/// A validated description of a private element type.
///
/// ```
/// use hurray_core::ExtensionType;
/// let t = ExtensionType::integer(4, true);
/// assert_eq!(t.bit_width(), 4);
/// assert_eq!(t.packing(), hurray_core::Packing::Bits(4));
/// let f = ExtensionType::float(8, 1, 4, 3, 7, true, false);
/// assert_eq!(f.packing(), hurray_core::Packing::Bytes(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtensionType {
    raw: ExtensionTypeEntry,
}

#[cfg(feature = "defmt")]
impl defmt::Format for ExtensionType {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "ExtensionType {{ bit_width: {=u32}, float: {=bool} }}",
            self.bit_width(),
            self.is_float()
        );
    }
}

impl ExtensionType {
    /// The entry of a `bit_width`-bit type with every other field zero.
    const fn raw(bit_width: u32) -> ExtensionTypeEntry {
        let mut raw: ExtensionTypeEntry = zerocopy::transmute!([0u8; 20]);
        raw.bit_width = U32::new(bit_width);
        raw.packing_factor = packing_factor(bit_width);
        raw
    }

    /// An integer type of `bit_width` bits (1, 2, 4, or a multiple of 8).
    #[must_use]
    pub const fn integer(bit_width: u32, signed: bool) -> Self {
        let mut raw = Self::raw(bit_width);
        raw.is_signed = signed as u8;
        Self { raw }
    }

    /// A floating-point type.
    #[must_use]
    pub const fn float(
        bit_width: u32,
        sign_bits: u8,
        exponent_bits: u8,
        mantissa_bits: u8,
        exponent_bias: u32,
        has_nan: bool,
        has_inf: bool,
    ) -> Self {
        let mut raw = Self::raw(bit_width);
        raw.is_float = 1;
        raw.sign_bits = sign_bits;
        raw.exponent_bits = exponent_bits;
        raw.mantissa_bits = mantissa_bits;
        raw.exponent_bias = U32::new(exponent_bias);
        raw.has_nan = has_nan as u8;
        raw.has_inf = has_inf as u8;
        Self { raw }
    }

    /// Bits per element.
    #[must_use]
    pub const fn bit_width(&self) -> u32 {
        self.raw.bit_width.get()
    }

    /// Whether the type is floating-point.
    #[must_use]
    pub const fn is_float(&self) -> bool {
        self.raw.is_float == 1
    }

    /// Whether the type is a signed integer.
    #[must_use]
    pub const fn is_signed(&self) -> bool {
        self.raw.is_signed == 1
    }

    /// The wire form.
    #[must_use]
    pub const fn entry(&self) -> &ExtensionTypeEntry {
        &self.raw
    }

    /// How elements are packed.
    #[must_use]
    pub const fn packing(&self) -> Packing {
        let bw = self.bit_width();
        if bw >= 8 {
            Packing::Bytes(bw / 8)
        } else {
            #[allow(clippy::cast_possible_truncation)]
            Packing::Bits(bw as u8)
        }
    }

    /// An extension type from its (validated) wire form.
    #[must_use]
    pub const fn from_entry(raw: &ExtensionTypeEntry) -> Self {
        Self { raw: *raw }
    }

    /// How elements of `element_type` are packed: a built-in type's own
    /// packing, a private one's from its (validated) section `raw`.
    #[cfg_attr(not(target_os = "none"), inline(always))] // x86-64 decode 4-5 fewer
    #[cfg_attr(target_os = "none", inline)] // forced: M4 flash +4 B
    pub(crate) const fn packing_of(
        element_type: ElementType,
        raw: Option<&ExtensionTypeEntry>,
    ) -> Packing {
        match (element_type.packing(), raw) {
            (Some(p), _) => p,
            (None, Some(raw)) => Self::from_entry(raw).packing(),
            // A private type without its section was refused before.
            (None, None) => Packing::Bytes(1),
        }
    }

    pub(crate) fn parse<'a>(r: &mut Reader<'a>) -> Result<&'a ExtensionTypeEntry, DescriptorError> {
        let at = r.pos();
        let entry = r.take::<ExtensionTypeEntry>()?;
        check(entry, at)?;
        Ok(entry)
    }

    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        w.value(&self.raw);
    }
}

/// The section's rules (`at`: its offset): the parser's, and the
/// encoder's over the entry it writes.
pub(crate) fn check(raw: &ExtensionTypeEntry, at: u32) -> Result<(), DescriptorError> {
    let (bw, bytes) = (raw.bit_width.get(), raw.as_bytes());
    // The value of field `i` of `FIELDS`.
    let value = |i: u8| {
        let off = FIELDS.get(usize::from(i)).map_or(0, |f| f.0);
        match off {
            BIT_WIDTH_AT => bw,
            EXPONENT_BIAS_AT => raw.exponent_bias.get(),
            _ => bytes.get(usize::from(off)).map_or(0, |&b| u32::from(b)),
        }
    };
    // The first row `(field, most allowed)` whose field is over it.
    let over = |rows: &[(u8, u8)]| {
        rows.iter()
            .find(|&&(i, most)| value(i) > u32::from(most))
            .map(|&(i, _)| i)
    };
    let width_ok = match bw {
        1 | 2 | 4 => true,
        _ => bw >= 8 && bw.is_multiple_of(8),
    };
    let field = if !width_ok {
        Some(0)
    } else if raw.packing_factor != packing_factor(bw) {
        Some(1)
    } else {
        over(&FLAGS)
    };
    let field = match field {
        Some(i) => i,
        None if raw.reserved != [0; 2] || raw.reserved2 != [0; 2] => {
            let off = if raw.reserved != [0; 2] {
                at!(ExtensionTypeEntry.reserved)
            } else {
                at!(ExtensionTypeEntry.reserved2)
            };
            return Err(DescriptorError::reserved(
                at.saturating_add(off),
                FieldName::ExtensionTypeReserved,
            ));
        }
        None => match over(if raw.is_float == 1 { &FLOAT } else { &INTEGER }) {
            Some(i) => i,
            None => return Ok(()),
        },
    };
    let (off, name) = FIELDS
        .get(usize::from(field))
        .copied()
        .unwrap_or((0, FieldName::BitWidth));
    Err(DescriptorError::invalid(
        at.saturating_add(u32::from(off)),
        name,
        u64::from(value(field)),
    ))
}
