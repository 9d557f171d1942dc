//! Checks of buffer sizes against what a descriptor addresses in them.
//!
//! All arithmetic is checked: `u64` for sizes, `i128` for signed stride
//! extents. A result that does not fit is an
//! [`Overflow`](DescriptorErrorKind::Overflow), never a wrap.

use crate::element::Packing;
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::table::BufferTable;

use super::arrays::Dims;

/// What the size checks of a layout need to know about the descriptor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    /// The shape; every check here runs only when no dimension is dynamic.
    pub(crate) shape: Dims<'a>,
    /// How elements are packed (built-in type or extension type section).
    pub(crate) packing: Packing,
    /// `byte_offset` of the descriptor.
    pub(crate) byte_offset: u64,
    /// The validated buffer table.
    pub(crate) buffers: BufferTable<'a>,
    /// Offset of the buffer table's first entry (for error locations).
    pub(crate) table_at: u32,
    /// For row- and column-major data quantized per block: the element count
    /// including the padding of partial blocks.
    pub(crate) padded_elements: Option<u64>,
}

/// Offset of buffer `index`'s entry: the table starts with its count byte.
pub(crate) const fn entry_offset(table_at: u32, index: u8) -> u32 {
    table_at
        .saturating_add(1)
        .saturating_add((index as u32).saturating_mul(16))
}

impl Ctx<'_> {
    /// `byte_size` of buffer `index` (the count was checked before any
    /// layout check runs, so a missing buffer reads as 0 and then fails the
    /// size check rather than panicking).
    pub(crate) fn size(&self, index: u8) -> u64 {
        self.buffers
            .get(usize::from(index))
            .map_or(0, crate::BufferHandle::byte_size)
    }

    pub(crate) const fn err(&self, index: u8, kind: DescriptorErrorKind) -> DescriptorError {
        DescriptorError::new(entry_offset(self.table_at, index), kind)
    }

    /// Product of the shape; `None` on overflow.
    pub(crate) fn element_count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, u64::checked_mul)
    }

    /// Buffer `index` must hold at least `needed` bytes.
    pub(crate) fn at_least(&self, index: u8, needed: u64) -> Result<(), DescriptorError> {
        let byte_size = self.size(index);
        if byte_size < needed {
            return Err(self.err(
                index,
                DescriptorErrorKind::BufferTooSmall {
                    index: u32::from(index),
                    needed,
                    byte_size,
                },
            ));
        }
        Ok(())
    }

    /// Buffer `index` must hold exactly `expected` bytes.
    pub(crate) fn exactly(&self, index: u8, expected: u64) -> Result<(), DescriptorError> {
        let byte_size = self.size(index);
        if byte_size != expected {
            return Err(self.err(
                index,
                DescriptorErrorKind::BufferSizeMismatch {
                    index: u32::from(index),
                    expected,
                    byte_size,
                },
            ));
        }
        Ok(())
    }

    /// Bytes of `n` elements of the tensor's type; overflow is an error.
    pub(crate) fn element_bytes(&self, index: u8, n: u64) -> Result<u64, DescriptorError> {
        self.packing.bytes_for(n).ok_or(self.err(
            index,
            DescriptorErrorKind::Overflow {
                what: "buffer size",
            },
        ))
    }

    /// `count` values of `width` bytes each; overflow is an error.
    pub(crate) fn array_bytes(
        &self,
        index: u8,
        count: u64,
        width: u64,
    ) -> Result<u64, DescriptorError> {
        count.checked_mul(width).ok_or(self.err(
            index,
            DescriptorErrorKind::Overflow {
                what: "buffer size",
            },
        ))
    }

    /// The data buffer (0) holds `n` contiguous elements from `byte_offset`.
    pub(crate) fn contiguous(&self, n: u64) -> Result<(), DescriptorError> {
        let bytes = self.element_bytes(0, n)?;
        let needed = self.byte_offset.checked_add(bytes).ok_or(self.err(
            0,
            DescriptorErrorKind::Overflow {
                what: "buffer extent",
            },
        ))?;
        self.at_least(0, needed)
    }

    /// The data buffer (0) holds every element whose linear offset lies in
    /// `first ..= last` (in elements, relative to `byte_offset`).
    pub(crate) fn span(&self, first: i128, last: i128) -> Result<(), DescriptorError> {
        let overflow = self.err(
            0,
            DescriptorErrorKind::Overflow {
                what: "buffer extent",
            },
        );
        let (lo, hi) = self.packing.byte_span(first, last).ok_or(overflow)?;
        let base = i128::from(self.byte_offset);
        let (Some(start), Some(end)) = (base.checked_add(lo), base.checked_add(hi)) else {
            return Err(overflow);
        };
        let byte_size = self.size(0);
        if start < 0 || end > i128::from(byte_size) {
            return Err(self.err(
                0,
                DescriptorErrorKind::ExtentOutOfBounds {
                    start,
                    end,
                    byte_size,
                },
            ));
        }
        Ok(())
    }
}

/// The lowest and highest linear offset (in elements, or tiles) that
/// `strides` reach over `shape`: `sum(min(0, s·(n−1)))` and
/// `sum(max(0, s·(n−1)))`; `None` if a sum does not fit an `i128`. The
/// shape must have no zero dimension (the caller checks emptiness first).
pub(crate) fn stride_range(
    shape: impl Iterator<Item = u64>,
    strides: impl Iterator<Item = i64>,
) -> Option<(i128, i128)> {
    let mut lo = 0i128;
    let mut hi = 0i128;
    for (n, s) in shape.zip(strides) {
        let reach = i128::from(s).checked_mul(i128::from(n).checked_sub(1)?)?;
        if reach < 0 {
            lo = lo.checked_add(reach)?;
        } else {
            hi = hi.checked_add(reach)?;
        }
    }
    Some((lo, hi))
}
