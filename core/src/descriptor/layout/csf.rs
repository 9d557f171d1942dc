//! CSF, compressed sparse fiber (`0x09`, rank ≥ 3).
//!
//! Wire fields: `nnz: uint64`, `mode_order: uint32[rank]` (a permutation of
//! `0..rank`), `_reserved: uint8[8]`.
//!
//! Buffers: `values` (≥ `nnz` elements), then per level `L` the pair
//! `pos_L` (index `2L+1`) and `crd_L` (index `2L+2`), uint64 arrays. The
//! sizes alone fix the tree's node counts: `pos_0` holds 2 values,
//! `crd_L` holds `n_L` values, `pos_L` holds `n_{L-1} + 1`, and the leaf
//! level holds `nnz`. A reader checks every one of these relations.

use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::{FieldName, Quantity};

use super::super::arrays::{WordValues, Words};
use super::super::cursor::{Reader, Writer};
use super::super::extent::{Ctx, Need, Shape, Sizes};
use super::Layout;

/// The fields of a CSF layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Csf<'a> {
    nnz: u64,
    mode_order: Words<'a>,
}

impl<'a> Csf<'a> {
    /// Number of stored elements.
    #[must_use]
    pub const fn nnz(&self) -> u64 {
        self.nnz
    }

    /// The logical dimension stored at each tree level, outermost first.
    #[must_use]
    pub const fn mode_order(&self) -> Words<'a> {
        self.mode_order
    }

    /// Reads and checks the fields: the parsed layout.
    pub(super) fn parse(r: &mut Reader<'a>, rank: u32) -> Result<Layout<'a>, DescriptorError> {
        let nnz = r.u64()?;
        let at = r.pos();
        let mode_order = Words::new(r.take_slice(u64::from(rank))?);
        check_mode_order(mode_order.iter(), rank, at)?;
        r.reserved(8, FieldName::CsfReserved)?;
        Ok(Layout::Csf(Self { nnz, mode_order }))
    }
}

/// `mode_order` is a permutation of `0..rank` (`at`: the offset of its
/// first value); the parser's and the encoder's one rule.
pub(super) fn check_mode_order(
    mode_order: impl Iterator<Item = u32>,
    rank: u32,
    at: u32,
) -> Result<(), DescriptorError> {
    // rank <= 64, so a u64 bit set suffices.
    let mut seen = 0u64;
    for (i, m) in mode_order.enumerate() {
        let bit = if m < rank { 1u64 << m } else { 0 };
        if bit == 0 || seen & bit != 0 {
            #[allow(clippy::cast_possible_truncation)]
            let at = at.saturating_add((i as u32).saturating_mul(4));
            let kind = DescriptorErrorKind::NotAPermutation { value: m };
            return Err(DescriptorError::new(at, kind));
        }
        seen |= bit;
    }
    Ok(())
}

/// The buffers of a CSF tensor of `rank` (3 to 64) levels and `nnz`
/// stored elements: values, then a `pos`/`crd` pair per level.
pub(super) fn check(
    nnz: u64,
    rank: usize,
    ctx: &Ctx<impl Shape, impl Sizes>,
) -> Result<(), DescriptorError> {
    ctx.needs(&[Need::values(0, nnz)])?;
    #[allow(clippy::cast_possible_truncation)]
    let rank = rank.min(64) as u8;
    let mut parents = 1u64; // n_{-1}: the virtual root
    for level in 0..rank {
        let pos = level.saturating_mul(2).saturating_add(1);
        let crd = pos.saturating_add(1);
        let nodes = if level.saturating_add(1) == rank {
            nnz
        } else {
            ctx.size(crd) / 8
        };
        ctx.needs(&[
            Need::counted(pos, parents.checked_add(1), 8, Quantity::CsfPointerCount),
            Need::exactly(crd, nodes, 8),
        ])?;
        parents = nodes;
    }
    Ok(())
}

pub(super) fn encode(nnz: u64, mode_order: WordValues<'_>, w: &mut Writer<'_>) {
    w.u64(nnz);
    mode_order.write(w);
    w.zeros(8);
}
