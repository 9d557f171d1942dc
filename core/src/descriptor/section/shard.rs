//! Shard section: `parent_shape: uint64[rank]`, `shard_offset: uint64[rank]`.
//! Every `shard_offset[k] + shape[k] <= parent_shape[k]`; no value may be the
//! dynamic sentinel.

use crate::FieldName;
use crate::error::{DescriptorError, DescriptorErrorKind};

use super::super::arrays::Dims;
use super::super::cursor::Reader;

/// Where a shard sits in its parent tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shard<'a> {
    /// Shape of the whole (parent) tensor.
    pub parent_shape: Dims<'a>,
    /// Index of this shard's first element in the parent, per dimension.
    pub shard_offset: Dims<'a>,
}

impl<'a> Shard<'a> {
    pub(crate) fn parse(r: &mut Reader<'a>, shape: Dims<'a>) -> Result<Self, DescriptorError> {
        let rank = shape.len() as u64;
        let at = r.pos();
        let parent_shape = Dims::new(r.take_slice(rank)?);
        let shard_offset = Dims::new(r.take_slice(rank)?);
        check(shape.iter(), parent_shape.iter(), shard_offset.iter(), at)?;
        Ok(Self {
            parent_shape,
            shard_offset,
        })
    }
}

/// The shard box: no dynamic dimension, and `shard_offset + shape` inside
/// `parent_shape` on every axis (`at`: the section's offset; the three runs
/// have the rank's length). The parser's and the encoder's one rule.
pub(crate) fn check(
    shape: impl Iterator<Item = u64>,
    parent_shape: impl ExactSizeIterator<Item = u64>,
    shard_offset: impl Iterator<Item = u64>,
    at: u32,
) -> Result<(), DescriptorError> {
    #[allow(clippy::cast_possible_truncation)]
    let offsets_at = at.saturating_add((parent_shape.len() as u32).saturating_mul(8));
    for (k, ((n, p), o)) in shape.zip(parent_shape).zip(shard_offset).enumerate() {
        // The dynamic field at fault (`None`: the box) and where its run
        // starts (the shape follows the header).
        let (field, base) = if n == crate::DYNAMIC {
            (Some(FieldName::Shape), super::super::header::at::SHAPE)
        } else if p == crate::DYNAMIC {
            (Some(FieldName::ParentShape), at)
        } else if o == crate::DYNAMIC {
            (Some(FieldName::ShardOffset), offsets_at)
        } else if o.checked_add(n).is_none_or(|end| end > p) {
            (None, offsets_at)
        } else {
            continue;
        };
        #[allow(clippy::cast_possible_truncation)]
        let axis = k as u32;
        let kind = match field {
            Some(field) => DescriptorErrorKind::DynamicDimension { field, axis },
            None => DescriptorErrorKind::ShardOutOfBounds { axis },
        };
        let at = base.saturating_add(axis.saturating_mul(8));
        return Err(DescriptorError::new(at, kind));
    }
    Ok(())
}
