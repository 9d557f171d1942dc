//! Tiled / blocked layout (`0x04`), possibly nested.
//!
//! Wire fields of one level: `tile_shape`, then [`TileCodes`], then the
//! strides and next level those codes call for (`docs/spec/layouts.md`
//! § Tiled). At most 8 levels.
//!
//! The data buffer holds the tile grid (`ceil(shape / tile_shape)` tiles of
//! `product(tile_shape)` elements, or the span the outer strides reach); a
//! strided or nested inner layout must stay inside its tile.

use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::{FieldName, Quantity};

use super::super::arrays::{Dims, Strides, write_native};
use super::super::cursor::{Reader, Writer};
use super::super::extent::{Ctx, Shape, Sizes, div_ceil, imul, mul, overflow, stride_range};
use super::{Layout, tag};

/// The deepest nesting a reader accepts.
pub const MAX_TILE_LEVELS: u8 = 8;

/// A validated tiled layout: a view of its levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Tiled<'a> {
    raw: &'a [u8],
    rank: u32,
    depth: u8,
}

/// One level of a tiled layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TileLevel<'a> {
    /// Tile size per dimension.
    pub tile_shape: Dims<'a>,
    /// Order of the tile grid: row-major, column-major or strided.
    pub outer_layout: u8,
    /// Order inside a tile: row-major, column-major, strided or tiled.
    pub inner_layout: u8,
    /// Strides of the tile grid, in tiles (when `outer_layout` is strided).
    pub outer_strides: Option<Strides<'a>>,
    /// Strides inside a tile, in elements (when `inner_layout` is strided).
    pub inner_strides: Option<Strides<'a>>,
}

/// A tiled level to encode, from native values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileSpec<'a> {
    /// Tile size per dimension.
    pub tile_shape: &'a [u64],
    /// Order of the tile grid (`0x01`, `0x02`, `0x03`).
    pub outer_layout: u8,
    /// Order inside a tile (`0x01`–`0x04`); `0x04` when another level follows.
    pub inner_layout: u8,
    /// Grid strides in tiles, when `outer_layout` is `0x03`.
    pub outer_strides: Option<&'a [i64]>,
    /// Strides inside a tile in elements, when `inner_layout` is `0x03`.
    pub inner_strides: Option<&'a [i64]>,
}

/// Iterator over the levels of a [`Tiled`] layout, outermost first.
#[derive(Debug, Clone)]
pub struct TiledLevels<'a> {
    reader: Reader<'a>,
    rank: u32,
    left: u8,
}

impl<'a> Iterator for TiledLevels<'a> {
    type Item = TileLevel<'a>;

    fn next(&mut self) -> Option<TileLevel<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left = self.left.saturating_sub(1);
        // The bytes were validated by `Tiled::parse`; a failure here cannot
        // happen and ends the iteration instead of panicking.
        read_level(&mut self.reader, self.rank).ok()
    }
}

crate::field::wire_fields! {
    /// A tiled level's fixed fields on the wire, after its `tile_shape`.
    TileCodes {
        /// Layout of the tile grid (row-major, column-major or strided).
        outer_layout: u8,
        /// Layout inside a tile (or tiled again).
        inner_layout: u8,
        /// Reserved, zero.
        reserved: [u8; 2] as "_reserved",
    } = 4;
}

fn read_level<'a>(r: &mut Reader<'a>, rank: u32) -> Result<TileLevel<'a>, DescriptorError> {
    let tile_shape = Dims::new(r.take_slice(u64::from(rank))?);
    let at = r.pos();
    let codes = r.take::<TileCodes>()?;
    let (outer_layout, inner_layout) = (codes.outer_layout, codes.inner_layout);
    let reserved_at = at.saturating_add(crate::field::at!(TileCodes.reserved));
    super::reserved(&codes.reserved, reserved_at, FieldName::TiledReserved)?;
    let outer_strides = if outer_layout == tag::STRIDED {
        Some(Strides::new(r.take_slice(u64::from(rank))?))
    } else {
        None
    };
    let inner_strides = if inner_layout == tag::STRIDED {
        Some(Strides::new(r.take_slice(u64::from(rank))?))
    } else {
        None
    };
    Ok(TileLevel {
        tile_shape,
        outer_layout,
        inner_layout,
        outer_strides,
        inner_strides,
    })
}

impl<'a> Tiled<'a> {
    /// The levels, outermost first.
    #[must_use]
    pub const fn levels(&self) -> TiledLevels<'a> {
        TiledLevels {
            reader: Reader::new(self.raw),
            rank: self.rank,
            left: self.depth,
        }
    }

    /// The levels' wire bytes, as validated.
    pub(crate) const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// The rank each level's arrays have.
    pub(crate) const fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of nested levels (1 to 8).
    #[must_use]
    pub const fn depth(&self) -> u8 {
        self.depth
    }

    /// Reads and checks the levels: the parsed layout (each error written
    /// where the parser returns it).
    pub(super) fn parse(
        r: &mut Reader<'a>,
        shape: Dims<'a>,
    ) -> Result<Layout<'a>, DescriptorError> {
        #[allow(clippy::cast_possible_truncation)]
        let rank = shape.len() as u32;
        let start = r.clone();
        let first = r.pos();
        let mut depth = 0u8;
        loop {
            if depth == MAX_TILE_LEVELS {
                return Err(r.err(DescriptorErrorKind::TilingTooDeep));
            }
            depth = depth.saturating_add(1);
            let at = r.pos();
            let level = read_level(r, rank)?;
            check_level(&level, rank, at)?;
            if level.inner_layout != tag::TILED {
                break;
            }
        }
        let len = r.pos().saturating_sub(first) as usize;
        let mut start = start;
        let raw = start.bytes(len)?;
        Ok(Layout::Tiled(Self { raw, rank, depth }))
    }
}

/// One tiled level as the rules read it: a parsed level's wire arrays or
/// an encoder's native ones (each side gets its own copy of the rules).
pub(super) trait Level: Copy {
    /// Tile size per dimension.
    fn tile_shape(&self) -> impl Iterator<Item = u64> + Clone;
    /// Order of the tile grid.
    fn outer_layout(&self) -> u8;
    /// Order inside a tile.
    fn inner_layout(&self) -> u8;
    /// Grid strides, in tiles.
    fn outer_strides(&self) -> Option<impl Iterator<Item = i64>>;
    /// Strides inside a tile, in elements.
    fn inner_strides(&self) -> Option<impl Iterator<Item = i64>>;
}

/// A parsed level reads its arrays as the shape and the strided layout
/// read theirs (the same iterator types): the tile grid's rules then share
/// one copy of [`level_span`], [`product`] and [`stride_range`] with the
/// tensor's shape and the strided layout on a 32-bit target.
impl Level for TileLevel<'_> {
    fn tile_shape(&self) -> impl Iterator<Item = u64> + Clone {
        Shape::dims(&self.tile_shape)
    }
    fn outer_layout(&self) -> u8 {
        self.outer_layout
    }
    fn inner_layout(&self) -> u8 {
        self.inner_layout
    }
    fn outer_strides(&self) -> Option<impl Iterator<Item = i64>> {
        self.outer_strides.as_ref().map(Strides::iter)
    }
    fn inner_strides(&self) -> Option<impl Iterator<Item = i64>> {
        self.inner_strides.as_ref().map(Strides::iter)
    }
}

impl Level for &TileSpec<'_> {
    fn tile_shape(&self) -> impl Iterator<Item = u64> + Clone {
        self.tile_shape.iter().copied()
    }
    fn outer_layout(&self) -> u8 {
        self.outer_layout
    }
    fn inner_layout(&self) -> u8 {
        self.inner_layout
    }
    fn outer_strides(&self) -> Option<impl Iterator<Item = i64>> {
        self.outer_strides.map(|s| s.iter().copied())
    }
    fn inner_strides(&self) -> Option<impl Iterator<Item = i64>> {
        self.inner_strides.map(|s| s.iter().copied())
    }
}

/// A level's own rules (`at`: the offset of its `tile_shape`): no zero
/// tile, known grid and inner codes. The parser's and the encoder's one
/// rule.
fn check_level(level: &impl Level, rank: u32, at: u32) -> Result<(), DescriptorError> {
    if let Some(axis) = level.tile_shape().position(|t| t == 0) {
        #[allow(clippy::cast_possible_truncation)]
        let at = at.saturating_add((axis as u32).saturating_mul(8));
        return Err(DescriptorError::invalid(at, FieldName::TileShape, 0));
    }
    let code_at = at.saturating_add(rank.saturating_mul(8));
    let inner_at = code_at.saturating_add(crate::field::at!(TileCodes.inner_layout));
    if !matches!(level.outer_layout(), 0x01..=0x03) {
        return Err(DescriptorError::invalid(
            code_at,
            FieldName::OuterLayout,
            u64::from(level.outer_layout()),
        ));
    }
    if !matches!(level.inner_layout(), 0x01..=0x04) {
        return Err(DescriptorError::invalid(
            inner_at,
            FieldName::InnerLayout,
            u64::from(level.inner_layout()),
        ));
    }
    Ok(())
}

/// An encoder's levels, checked as the parser checks what it reads
/// (`at`: the offset of the layout fields; `rank`: the shape's). `Ok(false)`
/// when the levels have no encoding: codes and strides that disagree, or a
/// nesting that the codes do not announce.
pub(super) fn check_specs(
    levels: &[TileSpec<'_>],
    rank: u32,
    at: u32,
) -> Result<bool, DescriptorError> {
    let mut at = at;
    let last = levels.len().saturating_sub(1);
    let arrays = |n: u32| rank.saturating_mul(8).saturating_mul(n);
    for (depth, spec) in levels.iter().enumerate() {
        let announced = (spec.inner_layout == tag::TILED) == (depth != last);
        let outer = spec.outer_strides.is_some() == (spec.outer_layout == tag::STRIDED);
        let inner = spec.inner_strides.is_some() == (spec.inner_layout == tag::STRIDED);
        if !(announced && outer && inner) {
            return Ok(false);
        }
        if depth == usize::from(MAX_TILE_LEVELS) {
            return Err(DescriptorError::new(at, DescriptorErrorKind::TilingTooDeep));
        }
        check_level(&spec, rank, at)?;
        let strided = u32::from(spec.outer_strides.is_some())
            .saturating_add(u32::from(spec.inner_strides.is_some()));
        #[allow(clippy::cast_possible_truncation)]
        let codes = size_of::<TileCodes>() as u32;
        at = at
            .saturating_add(arrays(strided.saturating_add(1)))
            .saturating_add(codes);
    }
    Ok(!levels.is_empty())
}

/// The buffer against the tile grid of a non-empty tensor: the parser's
/// and the encoder's one rule.
pub(super) fn check_grid<L: Level>(
    mut levels: impl Iterator<Item = L>,
    ctx: &Ctx<impl Shape, impl Sizes>,
    count: u64,
) -> Result<(), DescriptorError> {
    if count == 0 {
        return Ok(());
    }
    let overflow = overflow!(ctx, 0, Quantity::TileGrid);
    let Some(top) = levels.next() else {
        return Ok(());
    };
    // The region each level tiles: the tensor's shape, then the parent's
    // tile shape.
    let (lo, hi) = level_span(&top, ctx.shape.dims()).ok_or(overflow)?;
    let mut parent = top;
    for n in 0u8.. {
        let tile_elems =
            i64::try_from(product(parent.tile_shape()).ok_or(overflow)?).map_err(|_| overflow)?;
        // What lies inside one of `parent`'s tiles must stay inside it:
        // a strided inner order (which ends the nesting) or the next
        // level's grid.
        let (inside, next) = match (parent.inner_strides(), levels.next()) {
            (Some(s), _) => (stride_range(parent.tile_shape(), s), None),
            (None, Some(next)) => (level_span(&next, parent.tile_shape()), Some(next)),
            (None, None) => break,
        };
        let (l, h) = inside.ok_or(overflow)?;
        if l < 0 || h >= tile_elems {
            return Err(ctx.err(0, DescriptorErrorKind::TileOverrun { level: n }));
        }
        match next {
            Some(next) => parent = next,
            None => break,
        }
    }
    ctx.span(lo, hi)
}

/// The product of `d`, checked (out of line on a 32-bit target, where the
/// grid's rules take it at three places).
#[cfg_attr(target_pointer_width = "32", inline(never))]
fn product(mut d: impl Iterator<Item = u64>) -> Option<u64> {
    d.try_fold(1u64, mul)
}

/// The element range one level's tile grid reaches when it tiles `region`;
/// `None` on overflow. Out of line on a 32-bit target: the grid's rules
/// take it for the top level and for each nested one.
#[cfg_attr(target_pointer_width = "32", inline(never))]
fn level_span(level: &impl Level, region: impl Iterator<Item = u64>) -> Option<(i64, i64)> {
    let tile_elems = i64::try_from(product(level.tile_shape())?).ok()?;
    let grid = region.zip(level.tile_shape()).map(|(n, t)| div_ceil(n, t));
    let (lo_t, hi_t) = match level.outer_strides() {
        Some(s) => stride_range(grid, s)?,
        None => {
            let tiles = product(grid)?;
            (0, i64::try_from(tiles).ok()?.checked_sub(1)?)
        }
    };
    let lo = imul(lo_t, tile_elems)?;
    let hi = imul(hi_t.checked_add(1)?, tile_elems)?.checked_sub(1)?;
    Some((lo, hi))
}

pub(super) fn encode(levels: &[TileSpec<'_>], w: &mut Writer<'_>) {
    for level in levels {
        write_native(level.tile_shape, w);
        w.value(&TileCodes {
            outer_layout: level.outer_layout,
            inner_layout: level.inner_layout,
            reserved: [0; 2],
        });
        if let Some(s) = level.outer_strides {
            write_native(s, w);
        }
        if let Some(s) = level.inner_strides {
            write_native(s, w);
        }
    }
}
