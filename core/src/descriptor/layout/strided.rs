//! Strided layout (`0x03`): one signed stride per dimension, in elements.
//!
//! Wire fields: `strides: int64[rank]`. Negative strides walk backwards from
//! `byte_offset`, zero strides broadcast. A reader checks that every element
//! the strides reach lies inside the data buffer.

use crate::Quantity;
use crate::error::DescriptorError;

use super::super::extent::{Ctx, Shape, Sizes, overflow, stride_range};

/// Every addressed element of a non-empty strided tensor lies in buffer 0
/// (the parser's wire strides and the encoder's native ones alike).
pub(super) fn check(
    strides: impl Iterator<Item = i64>,
    ctx: &Ctx<impl Shape, impl Sizes>,
    count: u64,
) -> Result<(), DescriptorError> {
    if count == 0 {
        return Ok(());
    }
    let (lo, hi) =
        stride_range(ctx.shape.dims(), strides).ok_or(overflow!(ctx, 0, Quantity::StrideExtent))?;
    ctx.span(lo, hi)
}
