//! Morton (Z-order) layout (`0x05`).
//!
//! Wire fields: `morton_bits: uint32[rank]`, each > 0, with
//! `shape[k] <= 2^morton_bits[k]`. The data buffer holds
//! `2^sum(morton_bits)` elements.

use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::{FieldName, Quantity};

use super::super::arrays::{Dims, Words};
use super::super::cursor::Reader;
use super::super::extent::{Ctx, Shape, Sizes, overflow};
use super::Layout;

/// Reads `morton_bits` and checks each against its dimension: the parsed
/// layout.
pub(super) fn parse<'a>(
    r: &mut Reader<'a>,
    shape: Dims<'a>,
) -> Result<Layout<'a>, DescriptorError> {
    let at = r.pos();
    let bits = Words::new(r.take_slice(shape.len() as u64)?);
    check_bits(bits.iter(), shape.iter(), at)?;
    Ok(Layout::Morton(bits))
}

/// Each of `bits` is positive and holds its dimension (`at`: the offset of
/// the first); the parser's and the encoder's one rule.
pub(super) fn check_bits(
    bits: impl Iterator<Item = u32>,
    shape: impl Iterator<Item = u64>,
    at: u32,
) -> Result<(), DescriptorError> {
    for (axis, (b, n)) in bits.zip(shape).enumerate() {
        #[allow(clippy::cast_possible_truncation)]
        let (axis, field_at) = (
            axis as u32,
            at.saturating_add((axis as u32).saturating_mul(4)),
        );
        if b == 0 {
            return Err(DescriptorError::invalid(field_at, FieldName::MortonBits, 0));
        }
        // n <= 2^b, i.e. n - 1 < 2^b; any n fits when b >= 64. A dynamic
        // dimension is not checked here (its size is unknown).
        if n != crate::DYNAMIC && b < 64 && n > (1u64 << b) {
            return Err(DescriptorError::new(
                field_at,
                DescriptorErrorKind::ShapeDoesNotFitCurve { axis, size: n },
            ));
        }
    }
    Ok(())
}

/// The data buffer holds `2^sum(bits)` elements.
pub(super) fn check(
    mut bits: impl Iterator<Item = u32>,
    ctx: &Ctx<impl Shape, impl Sizes>,
    count: u64,
) -> Result<(), DescriptorError> {
    if count == 0 {
        return Ok(());
    }
    let total = bits.try_fold(0u32, u32::checked_add);
    let elements = match total {
        Some(t) if t < 64 => 1u64 << t,
        _ => return Err(overflow!(ctx, 0, Quantity::MortonCurveSize)),
    };
    ctx.contiguous(elements)
}
