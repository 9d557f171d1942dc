//! Hilbert curve layout (`0x40`, Tier 2).
//!
//! Wire fields: `hilbert_order: uint32` (> 0), `hilbert_rank: uint32`
//! (= rank, >= 2). Every dimension is `2^hilbert_order`; the data buffer
//! holds `2^(rank * order)` elements.

use zerocopy::little_endian::U32;

use crate::FieldName;
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::field::{at, wire_fields};

wire_fields! {
    /// The Hilbert layout's fields on the wire.
    HilbertFields {
        /// Curve order: each side is `2^order`.
        hilbert_order: U32,
        /// The curve's rank (the tensor's).
        hilbert_rank: U32,
    } = 8;
}

use super::super::arrays::Dims;
use super::super::cursor::{Reader, Writer};
use super::Layout;

/// The Hilbert curve's parameters.
///
/// ```
/// use hurray_core::layout::Hilbert;
/// let h = Hilbert { order: 2, rank: 2 };
/// assert_eq!(h.side(), Some(4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Hilbert {
    /// Order of the curve: each side is `2^order`.
    pub order: u32,
    /// Number of curve dimensions (equals the tensor's rank).
    pub rank: u32,
}

impl Hilbert {
    /// The size of every dimension, `2^order`; `None` if it does not fit.
    #[must_use]
    pub const fn side(&self) -> Option<u64> {
        if self.order < 64 {
            Some(1u64 << self.order)
        } else {
            None
        }
    }

    /// Reads the fields and checks them against the shape: the parsed
    /// layout.
    pub(super) fn parse(
        r: &mut Reader<'_>,
        shape: Dims<'_>,
    ) -> Result<Layout<'static>, DescriptorError> {
        let at = r.pos();
        let f = r.take::<HilbertFields>()?;
        let h = Self {
            order: f.hilbert_order.get(),
            rank: f.hilbert_rank.get(),
        };
        h.check_shape(shape.len(), shape.iter(), at)?;
        Ok(Layout::Hilbert(h))
    }

    /// The curve's rules against a shape of `rank` dimensions (`at`: the
    /// offset of the fields): the parser's and the encoder's one rule.
    pub(super) fn check_shape(
        &self,
        rank: usize,
        shape: impl Iterator<Item = u64>,
        at: u32,
    ) -> Result<(), DescriptorError> {
        let invalid =
            |at: u32, field, value: u32| Err(DescriptorError::invalid(at, field, u64::from(value)));
        if self.order == 0 {
            return invalid(at, FieldName::HilbertOrder, self.order);
        }
        if self.rank as usize != rank || self.rank < 2 {
            return invalid(
                at.saturating_add(at!(HilbertFields.hilbert_rank)),
                FieldName::HilbertRank,
                self.rank,
            );
        }
        for (axis, n) in shape.enumerate() {
            if n != crate::DYNAMIC && Some(n) != self.side() {
                #[allow(clippy::cast_possible_truncation)]
                let axis = axis as u32;
                return Err(DescriptorError::new(
                    at,
                    DescriptorErrorKind::ShapeDoesNotFitCurve { axis, size: n },
                ));
            }
        }
        Ok(())
    }

    pub(super) fn encode(&self, w: &mut Writer<'_>) {
        w.value(&HilbertFields {
            hilbert_order: U32::new(self.order),
            hilbert_rank: U32::new(self.rank),
        });
    }
}
