//! The layout tag and the layout-specific fields that follow `byte_offset`
//! (`docs/spec/metadata.md` § Layout-Specific Fields, `docs/spec/layouts/`).
//!
//! One file per layout: its field map, the checks a reader must make on the
//! fields (at parse time, where the shape is already known) and on the
//! buffers (after the buffer table), and its encoder.

mod block_paged;
pub(crate) mod composite;
mod csf;
mod extension;
mod hilbert;
mod morton;
mod sparse;
mod strided;
mod tiled;

pub use block_paged::{BlockPaged, BlockPagedFields, KvRole};
pub use composite::{CombineOp, CompositeFields, CompositeHead, CompositionRule};
pub use csf::Csf;
pub use extension::{ExtensionLayout, ExtensionLayoutFields};
pub use hilbert::{Hilbert, HilbertFields};
pub use sparse::{Compressed, CompressedFields, Coo, CooFields};
pub use tiled::{MAX_TILE_LEVELS, TileCodes, TileLevel, TileSpec, Tiled, TiledLevels};

pub use super::extent::stride_range;

use crate::FieldName;
use crate::error::{DescriptorError, DescriptorErrorKind};

use super::arrays::{DimValues, Dims, Strides, Values, Words, write_native};
use super::cursor::{Reader, Writer};
use super::extent::{Ctx, Shape, Sizes};

/// Layout tag codes (`docs/spec/memory-layout.md` § Named Layout Tags).
pub mod tag {
    /// Row-major (C order).
    pub const ROW_MAJOR: u8 = 0x01;
    /// Column-major (Fortran order).
    pub const COLUMN_MAJOR: u8 = 0x02;
    /// Explicit strides.
    pub const STRIDED: u8 = 0x03;
    /// Tiled / blocked.
    pub const TILED: u8 = 0x04;
    /// Morton (Z-order) curve.
    pub const MORTON: u8 = 0x05;
    /// Coordinate-list sparse.
    pub const COO: u8 = 0x06;
    /// Compressed sparse row.
    pub const CSR: u8 = 0x07;
    /// Compressed sparse column.
    pub const CSC: u8 = 0x08;
    /// Compressed sparse fiber.
    pub const CSF: u8 = 0x09;
    /// Block-paged (paged KV cache).
    pub const BLOCK_PAGED: u8 = 0x0A;
    /// Composite head (virtual, owns no data).
    pub const COMPOSITE: u8 = 0x0B;
    /// Hilbert curve.
    pub const HILBERT: u8 = 0x40;
}

/// The layout of a validated descriptor, with its fields (zero-copy views
/// where a field is an array).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Layout<'a> {
    /// Row-major: the last dimension varies fastest; implicit strides.
    RowMajor,
    /// Column-major: the first dimension varies fastest; implicit strides.
    ColumnMajor,
    /// Explicit strides in elements, one per dimension (negative and zero
    /// allowed).
    Strided(Strides<'a>),
    /// Uniform tiles, possibly nested.
    Tiled(Tiled<'a>),
    /// Morton (Z-order) curve; the bits per dimension.
    Morton(Words<'a>),
    /// Coordinate-list sparse tensor.
    Coo(Coo),
    /// Compressed sparse rows (rank 2).
    Csr(Compressed),
    /// Compressed sparse columns (rank 2).
    Csc(Compressed),
    /// Compressed sparse fiber tree (rank ≥ 3).
    Csf(Csf<'a>),
    /// Paged KV-cache pool with a block table (rank 3).
    BlockPaged(BlockPaged),
    /// Composite head: owns no data, binds the next members.
    Composite(CompositeHead),
    /// Hilbert curve.
    Hilbert(Hilbert),
    /// An implementation-private layout (`0xF0`–`0xFE`) whose id the reader
    /// was told about.
    Extension(ExtensionLayout<'a>),
}

/// A layout to encode, from native values.
///
/// `repr(u8)` gives it a tag byte of its own: without it the compiler
/// folds [`Parsed`](Self::Parsed)'s [`Layout`] into the niches of the other
/// variants, and every match on a spec decodes that niche first (ADR-118).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[repr(u8)]
pub enum LayoutSpec<'a> {
    /// Row-major.
    RowMajor,
    /// Column-major.
    ColumnMajor,
    /// Explicit strides in elements, one per dimension.
    Strided(&'a [i64]),
    /// Tiles: one entry per nesting level, outermost first.
    Tiled(&'a [TileSpec<'a>]),
    /// Morton curve: bits per dimension.
    Morton(&'a [u32]),
    /// Coordinate list.
    Coo(Coo),
    /// Compressed sparse rows.
    Csr(Compressed),
    /// Compressed sparse columns.
    Csc(Compressed),
    /// Compressed sparse fiber: `nnz` and the mode order.
    Csf {
        /// Stored elements.
        nnz: u64,
        /// Logical dimension of each tree level.
        mode_order: &'a [u32],
    },
    /// Block-paged.
    BlockPaged(BlockPaged),
    /// Composite head.
    Composite(CompositeHead),
    /// Hilbert curve.
    Hilbert(Hilbert),
    /// Private layout.
    Extension {
        /// The layout tag, `0xF0`–`0xFE`.
        tag: u8,
        /// Implementation-defined id.
        id: u64,
        /// Opaque metadata.
        data: &'a [u8],
    },
    /// A layout as a parsed descriptor holds it ([`TensorView::layout`]),
    /// written back from its wire fields as they lie (no copy into native
    /// values). `LayoutSpec::from(layout)` gives this variant.
    ///
    /// [`TensorView::layout`]: crate::TensorView::layout
    Parsed(Layout<'a>),
}

impl<'a> From<Layout<'a>> for LayoutSpec<'a> {
    #[inline]
    fn from(layout: Layout<'a>) -> Self {
        Self::Parsed(layout)
    }
}

/// The family a layout belongs to, which decides its buffer count and
/// `byte_offset` rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// Every element stored; one data buffer; `byte_offset` locates element 0.
    Dense,
    /// Only non-zeros stored, through index buffers; `byte_offset` is 0.
    Sparse,
    /// Every element stored, reached through an index; `byte_offset` is 0.
    Indirect,
    /// No data at all; `byte_offset` is 0 and there are no buffers.
    Virtual,
    /// Private: at least one buffer, nothing else known.
    Extension,
}

/// A layout as the rules that tie a descriptor's parts together read it: a
/// parsed [`Layout`] or an encoder's [`LayoutSpec`].
pub(crate) trait Rules {
    /// The number of stored non-zeros of a sparse layout.
    fn stored(&self) -> Option<u64>;
    /// The block-paged fields, if the layout is block-paged.
    fn paged(&self) -> Option<BlockPaged>;
    /// The buffers against the fields, for a shape with no dynamic
    /// dimension (`count`: the element count).
    fn sizes(&self, ctx: &Ctx<impl Shape, impl Sizes>, count: u64) -> Result<(), DescriptorError>;
}

impl Rules for Layout<'_> {
    #[inline]
    fn stored(&self) -> Option<u64> {
        self.nnz()
    }
    #[inline]
    fn paged(&self) -> Option<BlockPaged> {
        match self {
            Self::BlockPaged(b) => Some(*b),
            _ => None,
        }
    }
    #[inline]
    fn sizes(&self, ctx: &Ctx<impl Shape, impl Sizes>, count: u64) -> Result<(), DescriptorError> {
        match self {
            // The commonest rule, without a call (the same rule as below).
            Self::RowMajor | Self::ColumnMajor => {
                ctx.contiguous(ctx.padded_elements.unwrap_or(count))
            }
            _ => self.check_sizes(ctx, count),
        }
    }
}

impl Rules for LayoutSpec<'_> {
    #[inline]
    fn stored(&self) -> Option<u64> {
        self.nnz()
    }
    #[inline]
    fn paged(&self) -> Option<BlockPaged> {
        self.block_paged()
    }
    #[inline]
    fn sizes(&self, ctx: &Ctx<impl Shape, impl Sizes>, count: u64) -> Result<(), DescriptorError> {
        match self {
            // The commonest rule, without a call (the same rule as below).
            Self::RowMajor | Self::ColumnMajor => {
                ctx.contiguous(ctx.padded_elements.unwrap_or(count))
            }
            _ => self.check_sizes(ctx, count),
        }
    }
}

impl Family {
    /// The family of a layout tag (one of [`is_known_tag`]'s).
    pub(crate) const fn of(layout_tag: u8) -> Self {
        match layout_tag {
            tag::COO | tag::CSR | tag::CSC | tag::CSF => Self::Sparse,
            tag::BLOCK_PAGED => Self::Indirect,
            tag::COMPOSITE => Self::Virtual,
            crate::codes::PRIVATE_FIRST..=crate::codes::PRIVATE_LAST => Self::Extension,
            _ => Self::Dense,
        }
    }

    /// Buffers a layout of this family and tag uses itself (quantization
    /// parameters come after).
    pub(crate) const fn layout_buffers(self, layout_tag: u8, rank: u32) -> u32 {
        match self {
            Self::Dense | Self::Extension => 1,
            Self::Virtual => 0,
            Self::Indirect => 3,
            Self::Sparse => match layout_tag {
                tag::COO => 2,
                // CSF: values plus a (pos, crd) pair per level; rank <= 64.
                tag::CSF => rank.saturating_mul(2).saturating_add(1),
                _ => 3,
            },
        }
    }
}

impl<'a> Layout<'a> {
    /// The layout tag.
    #[must_use]
    pub const fn tag(&self) -> u8 {
        match self {
            Self::RowMajor => tag::ROW_MAJOR,
            Self::ColumnMajor => tag::COLUMN_MAJOR,
            Self::Strided(_) => tag::STRIDED,
            Self::Tiled(_) => tag::TILED,
            Self::Morton(_) => tag::MORTON,
            Self::Coo(_) => tag::COO,
            Self::Csr(_) => tag::CSR,
            Self::Csc(_) => tag::CSC,
            Self::Csf(_) => tag::CSF,
            Self::BlockPaged(_) => tag::BLOCK_PAGED,
            Self::Composite(_) => tag::COMPOSITE,
            Self::Hilbert(_) => tag::HILBERT,
            Self::Extension(e) => e.tag(),
        }
    }

    /// The spec's name of the layout (`"row_major"`, `"csr"`, …).
    #[must_use]
    pub const fn name(&self) -> &'static str {
        name_of(self.tag())
    }

    /// The number of stored non-zeros of a sparse layout.
    #[must_use]
    pub const fn nnz(&self) -> Option<u64> {
        match self {
            Self::Coo(c) => Some(c.nnz),
            Self::Csr(c) | Self::Csc(c) => Some(c.nnz),
            Self::Csf(c) => Some(c.nnz()),
            _ => None,
        }
    }

    /// The size rules of a parsed layout (`count`: the element count).
    /// Inline into the parse on a 64-bit target (a call there costs every
    /// layout but row-major ~18 instructions); left to the compiler on a
    /// 32-bit one, where flash decides.
    #[cfg_attr(not(target_pointer_width = "32"), inline(always))]
    fn check_sizes(
        &self,
        ctx: &Ctx<impl Shape, impl Sizes>,
        count: u64,
    ) -> Result<(), DescriptorError> {
        match self {
            // Hilbert: `2^(rank * order)` elements, the element count
            // itself (every dimension is `2^order`; a count that overflows
            // was reported before this runs), unpadded (only row- and
            // column-major data pads).
            Self::RowMajor | Self::ColumnMajor | Self::Hilbert(_) => {
                ctx.contiguous(ctx.padded_elements.unwrap_or(count))
            }
            Self::Strided(s) => strided::check(s.iter(), ctx, count),
            Self::Tiled(t) => tiled::check_grid(t.levels(), ctx, count),
            Self::Morton(bits) => morton::check(bits.iter(), ctx, count),
            Self::Coo(c) => c.check(ctx),
            Self::Csr(c) => c.check(ctx, ctx.shape.dim(0)),
            Self::Csc(c) => c.check(ctx, ctx.shape.dim(1)),
            Self::Csf(c) => csf::check(c.nnz(), c.mode_order().len(), ctx),
            Self::BlockPaged(b) => b.check(ctx),
            Self::Composite(_) | Self::Extension(_) => Ok(()),
        }
    }

    /// Reads the layout-specific fields of `layout_tag`. `at` is the offset
    /// of the layout tag in the header (for a bad tag).
    #[cfg_attr(not(target_pointer_width = "32"), inline(always))]
    pub(crate) fn parse(
        r: &mut Reader<'a>,
        layout_tag: u8,
        shape: Dims<'a>,
        extension_layouts: &[u64],
    ) -> Result<Self, DescriptorError> {
        #[allow(clippy::cast_possible_truncation)]
        let rank = shape.len() as u32; // <= 64, checked before
        // The rank rule: a scalar is row-major only
        // (`docs/spec/data-model.md` § Scalar Tensors); CSR and CSC are
        // rank 2, CSF at least 3, block-paged exactly 3.
        let rank_ok = match layout_tag {
            tag::ROW_MAJOR => true,
            _ if rank == 0 => false,
            tag::CSR | tag::CSC => rank == 2,
            tag::CSF => rank >= 3,
            tag::BLOCK_PAGED => rank == 3,
            _ => true,
        };
        if !rank_ok {
            return Err(r.err(DescriptorErrorKind::RankNotAllowed { layout_tag, rank }));
        }
        // A layout's parser builds the layout itself. On a 32-bit target
        // its result is the parse's, returned as it is (each error written
        // once, where the parse returns it: no move between result types);
        // on a 64-bit one it is unwrapped, so the layout stays in registers
        // where the parse is inlined (x86-64 CSR and strided decodes ~25
        // instructions fewer).
        macro_rules! parsed {
            ($parse:expr) => {{
                #[cfg(target_pointer_width = "32")]
                return $parse;
                #[cfg(not(target_pointer_width = "32"))]
                $parse?
            }};
        }
        Ok(match layout_tag {
            tag::ROW_MAJOR => Self::RowMajor,
            tag::COLUMN_MAJOR => Self::ColumnMajor,
            tag::STRIDED => Self::Strided(Strides::new(r.take_slice(u64::from(rank))?)),
            tag::TILED => parsed!(Tiled::parse(r, shape)),
            tag::MORTON => parsed!(morton::parse(r, shape)),
            tag::COO => parsed!(Coo::parse(r)),
            tag::CSR | tag::CSC => parsed!(Compressed::parse(r, layout_tag == tag::CSR)),
            tag::CSF => parsed!(Csf::parse(r, rank)),
            tag::BLOCK_PAGED => parsed!(BlockPaged::parse(r)),
            tag::COMPOSITE => parsed!(CompositeHead::parse(r)),
            tag::HILBERT => parsed!(Hilbert::parse(r, shape)),
            crate::codes::PRIVATE_FIRST..=crate::codes::PRIVATE_LAST => {
                parsed!(ExtensionLayout::parse(r, layout_tag, extension_layouts))
            }
            // The tag was checked in the header; no other value gets here.
            _ => return Err(r.err(DescriptorErrorKind::InvalidLayoutTag(layout_tag))),
        })
    }
}

impl<'a> LayoutSpec<'a> {
    /// The number of stored non-zeros of a sparse layout.
    pub(crate) const fn nnz(&self) -> Option<u64> {
        match self {
            Self::Parsed(l) => l.nnz(),
            Self::Coo(c) => Some(c.nnz),
            Self::Csr(c) | Self::Csc(c) => Some(c.nnz),
            Self::Csf { nnz, .. } => Some(*nnz),
            _ => None,
        }
    }

    /// The block-paged fields, if the layout is block-paged.
    pub(crate) const fn block_paged(&self) -> Option<BlockPaged> {
        match self {
            Self::BlockPaged(b) | Self::Parsed(Layout::BlockPaged(b)) => Some(*b),
            _ => None,
        }
    }

    /// The size rules of an encoder's layout (`count`: the element count).
    fn check_sizes(
        &self,
        ctx: &Ctx<impl Shape, impl Sizes>,
        count: u64,
    ) -> Result<(), DescriptorError> {
        match *self {
            Self::Parsed(l) => l.check_sizes(ctx, count),
            // Hilbert as the parsed layout's.
            Self::RowMajor | Self::ColumnMajor | Self::Hilbert(_) => {
                ctx.contiguous(ctx.padded_elements.unwrap_or(count))
            }
            Self::Strided(s) => strided::check(s.iter().copied(), ctx, count),
            Self::Tiled(levels) => tiled::check_grid(levels.iter(), ctx, count),
            Self::Morton(b) => morton::check(b.iter().copied(), ctx, count),
            Self::Coo(c) => c.check(ctx),
            Self::Csr(c) => c.check(ctx, ctx.shape.dim(0)),
            Self::Csc(c) => c.check(ctx, ctx.shape.dim(1)),
            Self::Csf { nnz, mode_order } => csf::check(nnz, mode_order.len(), ctx),
            Self::BlockPaged(b) => b.check(ctx),
            Self::Composite(_) | Self::Extension { .. } => Ok(()),
        }
    }

    /// The rules [`Layout::parse`] applies to the fields it reads, on the
    /// values an encoder writes (`at`: the offset of the layout fields;
    /// `shape`: the descriptor's). `Ok(false)` when the values have no
    /// encoding (a private layout with a public tag; tiled levels whose
    /// codes and strides disagree).
    #[inline]
    pub(crate) fn check_fields(
        &self,
        layout_tag: u8,
        shape: DimValues<'_>,
        at: u32,
    ) -> Result<bool, DescriptorError> {
        match self {
            // Any rank, no field: nothing to check, and no call.
            Self::RowMajor => Ok(true),
            _ => self.check_other_fields(layout_tag, shape, at),
        }
    }

    /// [`check_fields`](Self::check_fields) past a native row-major spec.
    fn check_other_fields(
        &self,
        layout_tag: u8,
        shape: DimValues<'_>,
        at: u32,
    ) -> Result<bool, DescriptorError> {
        #[allow(clippy::cast_possible_truncation)]
        let rank = shape.len() as u32; // <= 64, checked before
        let rank_err = Err(DescriptorError::new(
            at,
            DescriptorErrorKind::RankNotAllowed { layout_tag, rank },
        ));
        if let Self::Extension { tag, .. } = self {
            if !crate::codes::is_private_code(*tag) {
                return Ok(false);
            }
        }
        match layout_tag {
            tag::ROW_MAJOR => return Ok(true),
            // A scalar is row-major only (`docs/spec/data-model.md` § Scalar Tensors).
            _ if rank == 0 => return rank_err,
            tag::CSR | tag::CSC if rank != 2 => return rank_err,
            tag::CSF if rank < 3 => return rank_err,
            tag::BLOCK_PAGED if rank != 3 => return rank_err,
            // No field rule a value can break.
            tag::COLUMN_MAJOR | tag::STRIDED | tag::COO | tag::CSR | tag::CSC => return Ok(true),
            _ => {}
        }
        match *self {
            Self::Tiled(levels) => return tiled::check_specs(levels, rank, at),
            Self::Morton(bits) => morton::check_bits(bits.iter().copied(), shape.iter(), at)?,
            Self::Parsed(Layout::Morton(bits)) => {
                morton::check_bits(bits.iter(), shape.iter(), at)?;
            }
            Self::Csf { mode_order, .. } => {
                csf::check_mode_order(mode_order.iter().copied(), rank, at.saturating_add(8))?;
            }
            Self::Parsed(Layout::Csf(c)) => {
                csf::check_mode_order(c.mode_order().iter(), rank, at.saturating_add(8))?;
            }
            Self::Hilbert(h) | Self::Parsed(Layout::Hilbert(h)) => {
                h.check_shape(shape.len(), shape.iter(), at)?;
            }
            Self::BlockPaged(b) | Self::Parsed(Layout::BlockPaged(b)) => {
                BlockPaged::from_fields(&b.fields(), at)?;
            }
            Self::Composite(c) | Self::Parsed(Layout::Composite(c)) => {
                CompositeHead::from_fields(&c.fields(), at)?;
            }
            // A parsed tiled layout was checked at parse for its rank,
            // which is the shape's (the encoder's length check); a strided
            // or sparse one has no field rule a value can break.
            _ => {}
        }
        Ok(true)
    }

    /// The layout tag.
    #[must_use]
    pub const fn tag(&self) -> u8 {
        match self {
            Self::RowMajor => tag::ROW_MAJOR,
            Self::ColumnMajor => tag::COLUMN_MAJOR,
            Self::Strided(_) => tag::STRIDED,
            Self::Tiled(_) => tag::TILED,
            Self::Morton(_) => tag::MORTON,
            Self::Coo(_) => tag::COO,
            Self::Csr(_) => tag::CSR,
            Self::Csc(_) => tag::CSC,
            Self::Csf { .. } => tag::CSF,
            Self::BlockPaged(_) => tag::BLOCK_PAGED,
            Self::Composite(_) => tag::COMPOSITE,
            Self::Hilbert(_) => tag::HILBERT,
            Self::Extension { tag, .. } => *tag,
            Self::Parsed(l) => l.tag(),
        }
    }

    /// Writes the layout-specific fields.
    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        match *self {
            Self::RowMajor | Self::ColumnMajor => {}
            Self::Strided(strides) => write_native(strides, w),
            Self::Tiled(levels) => tiled::encode(levels, w),
            Self::Morton(bits) => write_native(bits, w),
            Self::Coo(c) => c.encode(w),
            Self::Csr(c) | Self::Csc(c) => c.encode(w),
            Self::Csf { nnz, mode_order } => csf::encode(nnz, Values::Native(mode_order), w),
            Self::BlockPaged(b) => b.encode(w),
            Self::Composite(c) => c.encode(w),
            Self::Hilbert(h) => h.encode(w),
            Self::Extension { id, data, .. } => extension::encode(id, data, w),
            Self::Parsed(l) => l.encode(w),
        }
    }

    /// The arrays whose length must be the rank: `(field, length)`, at most
    /// three per tiled level; `None` past the last.
    pub(crate) fn for_each_array(
        &self,
        mut f: impl FnMut(&'static str, usize) -> Result<(), crate::EncodeError>,
    ) -> Result<(), crate::EncodeError> {
        match *self {
            Self::Strided(s) => f("strides", s.len()),
            Self::Morton(b) => f("morton_bits", b.len()),
            Self::Csf { mode_order, .. } => f("mode_order", mode_order.len()),
            Self::Tiled(levels) => levels.iter().try_for_each(|l| {
                f("tile_shape", l.tile_shape.len())?;
                l.outer_strides
                    .map_or(Ok(()), |s| f("outer_strides", s.len()))?;
                l.inner_strides
                    .map_or(Ok(()), |s| f("inner_strides", s.len()))
            }),
            Self::Parsed(Layout::Strided(s)) => f("strides", s.len()),
            Self::Parsed(Layout::Morton(b)) => f("morton_bits", b.len()),
            Self::Parsed(Layout::Csf(c)) => f("mode_order", c.mode_order().len()),
            Self::Parsed(Layout::Tiled(t)) => f("tile_shape", t.rank() as usize),
            _ => Ok(()),
        }
    }
}

impl Layout<'_> {
    /// Writes the layout-specific fields back from the wire values.
    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        match *self {
            Self::RowMajor | Self::ColumnMajor => {}
            Self::Strided(s) => Values::from(s).write(w),
            Self::Tiled(t) => w.bytes(t.as_bytes()),
            Self::Morton(b) => Values::from(b).write(w),
            Self::Coo(c) => c.encode(w),
            Self::Csr(c) | Self::Csc(c) => c.encode(w),
            Self::Csf(c) => csf::encode(c.nnz(), c.mode_order().into(), w),
            Self::BlockPaged(b) => b.encode(w),
            Self::Composite(c) => c.encode(w),
            Self::Hilbert(h) => h.encode(w),
            Self::Extension(e) => extension::encode(e.id(), e.data(), w),
        }
    }
}

/// Reserved bytes of a layout's fields, which must be zero; `at` is their
/// offset in the descriptor.
pub(crate) fn reserved(bytes: &[u8], at: u32, field: FieldName) -> Result<(), DescriptorError> {
    if bytes.iter().any(|&b| b != 0) {
        return Err(DescriptorError::reserved(at, field));
    }
    Ok(())
}

/// The spec's name of a layout tag.
#[must_use]
pub const fn name_of(layout_tag: u8) -> &'static str {
    match layout_tag {
        tag::ROW_MAJOR => "row_major",
        tag::COLUMN_MAJOR => "column_major",
        tag::STRIDED => "strided",
        tag::TILED => "tiled",
        tag::MORTON => "morton",
        tag::COO => "coo",
        tag::CSR => "csr",
        tag::CSC => "csc",
        tag::CSF => "csf",
        tag::BLOCK_PAGED => "block_paged",
        tag::COMPOSITE => "composite",
        tag::HILBERT => "hilbert",
        crate::codes::PRIVATE_FIRST..=crate::codes::PRIVATE_LAST => "extension",
        _ => "invalid",
    }
}

/// Whether a layout tag is one this crate can parse (named or private).
#[must_use]
#[inline]
pub const fn is_known_tag(layout_tag: u8) -> bool {
    matches!(
        layout_tag,
        tag::ROW_MAJOR..=tag::COMPOSITE
            | tag::HILBERT
            | crate::codes::PRIVATE_FIRST..=crate::codes::PRIVATE_LAST
    )
}

#[cfg(test)]
mod tests {
    use super::{is_known_tag, name_of};

    /// The fast tag check accepts exactly the tags that have a name.
    #[test]
    fn is_known_tag_is_name_of_not_invalid() {
        for t in 0..=u8::MAX {
            assert_eq!(is_known_tag(t), name_of(t) != "invalid", "tag {t:#04x}");
        }
    }
}
