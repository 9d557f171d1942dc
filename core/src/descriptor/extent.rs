//! Checks of buffer sizes against what a descriptor addresses in them.
//!
//! All arithmetic is checked: `u64` for sizes, `i64` for signed stride
//! extents. A result that does not fit is an
//! [`Overflow`](DescriptorErrorKind::Overflow), never a wrap.

use crate::Quantity;
use crate::element::Packing;
use crate::error::{DescriptorError, DescriptorErrorKind};

use super::arrays::{DimValues, Dims, Values, product_from};
use super::encode::Buffers;
use crate::table::BufferTable;

/// A shape as the rules read it: a parsed view's wire dimensions
/// ([`Dims`]) or the values an encoder is given ([`DimValues`]). The rules
/// are written once, generic over it; each side gets its own copy,
/// compiled for its own form (no dispatch per value on the decode path).
pub(crate) trait Shape: Copy {
    /// Number of dimensions.
    fn rank(&self) -> usize;
    /// Dimension `i`.
    fn dim(&self, i: usize) -> Option<u64>;
    /// The dimensions, in order.
    fn dims(&self) -> impl Iterator<Item = u64> + Clone;
    /// Product of the dimensions from `skip` on (see [`product_from`]).
    fn product_from(&self, skip: usize) -> Option<u64>;
    /// The product of every dimension but `axis` (`None` on overflow, as
    /// the parameter count rule has it).
    #[inline(always)]
    fn product_but(&self, axis: u32) -> Option<u64> {
        product_but(self.dims(), axis)
    }
    /// Whether a dimension is dynamic.
    fn is_dynamic(&self) -> bool {
        self.dims().any(|n| n == crate::DYNAMIC)
    }
    /// What the size rules need of the shape: `None` when a dimension is
    /// dynamic, else the element count (`Some(None)` when it overflows).
    /// One pass for the common shape: a product that neither overflows nor
    /// is 0 or `u64::MAX` has no dynamic dimension (a `u64::MAX` times
    /// anything but ones and zeros overflows), so only an empty tensor, an
    /// overflow or a product of `u64::MAX` looks at the shape again.
    #[inline]
    fn elements(&self) -> Option<Option<u64>> {
        let product = self.dims().try_fold(1u64, u64::checked_mul);
        match product {
            Some(count) if count != 0 && count != crate::DYNAMIC => Some(Some(count)),
            _ => elements_again(self.dims(), product),
        }
    }
}

/// [`Shape::product_but`] over `dims`: a loop over [`mul`] (as an
/// iterator's `try_fold` the parameter count rule's copy was outlined on
/// the M4, +48 B of decode flash).
#[inline(always)]
fn product_but(dims: impl Iterator<Item = u64>, axis: u32) -> Option<u64> {
    let mut product = 1u64;
    for (i, n) in (0..).zip(dims) {
        if i != axis {
            product = mul(product, n)?;
        }
    }
    Some(product)
}

/// [`Shape::elements`] past its one pass (`product`: that pass's checked
/// product): a dynamic dimension decides first, then a zero one (which
/// makes the count 0 even where the product overflowed).
#[inline(never)]
fn elements_again(dims: impl Iterator<Item = u64>, product: Option<u64>) -> Option<Option<u64>> {
    let (mut dynamic, mut zero) = (false, false);
    for n in dims {
        dynamic |= n == crate::DYNAMIC;
        zero |= n == 0;
    }
    match (dynamic, zero) {
        (true, _) => None,
        (false, true) => Some(Some(0)),
        (false, false) => Some(product),
    }
}

impl Shape for Dims<'_> {
    #[inline]
    fn rank(&self) -> usize {
        self.len()
    }
    #[inline]
    fn dim(&self, i: usize) -> Option<u64> {
        self.get(i)
    }
    #[inline]
    fn dims(&self) -> impl Iterator<Item = u64> + Clone {
        self.as_raw().iter().map(|d| d.get())
    }
    // Left to the compiler: `#[inline]` here cost M4 flash 80 B.
    fn product_from(&self, skip: usize) -> Option<u64> {
        product_from(self.dims(), skip)
    }
}

impl Shape for DimValues<'_> {
    #[inline]
    fn rank(&self) -> usize {
        self.len()
    }
    #[inline]
    fn dim(&self, i: usize) -> Option<u64> {
        self.get(i)
    }
    #[inline]
    fn dims(&self) -> impl Iterator<Item = u64> + Clone {
        self.iter()
    }
    #[inline]
    fn product_from(&self, skip: usize) -> Option<u64> {
        match self {
            Values::Wire(v) => product_from(v.iter().map(|d| d.get()), skip),
            Values::Native(v) => product_from(v.iter().copied(), skip),
        }
    }
    #[inline]
    fn is_dynamic(&self) -> bool {
        // One dispatch, then a plain loop.
        match self {
            Values::Native(v) => v.contains(&crate::DYNAMIC),
            Values::Wire(v) => v.iter().any(|d| d.get() == crate::DYNAMIC),
        }
    }
    #[inline(always)]
    fn product_but(&self, axis: u32) -> Option<u64> {
        match self {
            Values::Native(d) => product_but(d.iter().copied(), axis),
            Values::Wire(d) => product_but(d.iter().map(|n| n.get()), axis),
        }
    }
}

/// The buffers' sizes as the rules read them: a parsed view's validated
/// table or an encoder's [`Buffers`].
pub(crate) trait Sizes: Copy {
    /// Number of buffers.
    fn count(&self) -> usize;
    /// `byte_size` of buffer `index`, 0 past the end.
    fn byte_size(&self, index: usize) -> u64;
}

impl Sizes for BufferTable<'_> {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn byte_size(&self, index: usize) -> u64 {
        // Read from the validated entry, not decoded again.
        self.entries().get(index).map_or(0, |e| e.byte_size.get())
    }
}

impl Sizes for Buffers<'_> {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn byte_size(&self, index: usize) -> u64 {
        match self {
            Self::Handles(h) => h.get(index).map_or(0, |h| h.byte_size()),
            Self::Table(t) => t.byte_size(index),
        }
    }
}

/// The size rules' overflow error: `what` overflows, at buffer `index`'s
/// entry of `ctx` (a macro, so every rule builds it in place).
macro_rules! overflow {
    ($ctx:expr, $index:expr, $what:expr) => {
        $ctx.err(
            $index,
            $crate::error::DescriptorErrorKind::Overflow { what: $what },
        )
    };
}
pub(crate) use overflow;

/// What the size checks of a layout need to know about the descriptor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<S, B> {
    /// The shape; every check here runs only when no dimension is dynamic.
    pub(crate) shape: S,
    /// How elements are packed (built-in type or extension type section).
    pub(crate) packing: Packing,
    /// `byte_offset` of the descriptor.
    pub(crate) byte_offset: u64,
    /// The buffers: a validated table, or an encoder's handles.
    pub(crate) buffers: B,
    /// Offset of the buffer table's first entry (for error locations).
    pub(crate) table_at: u32,
    /// For row- and column-major data quantized per block: the element count
    /// including the padding of partial blocks.
    pub(crate) padded_elements: Option<u64>,
}

/// A [`Need`]'s width for values of the tensor's element type.
pub(crate) const ELEMENTS: u8 = 0;

/// One buffer's size rule, a row of the table a layout's buffers are
/// checked by ([`Ctx::needs`]): buffer `index` holds `count` values of
/// `width` bytes each ([`ELEMENTS`]: of the tensor's element type),
/// `exact`ly or at least (from `byte_offset`, for a dense data buffer).
/// The constants are packed into one word (index, width, the kind and
/// what the count is), so a row is a count and a word.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Need {
    count: RowCount,
    /// `index | width << 8 | kind << 16 | what << 24`.
    rule: u32,
}

/// A [`Need`]'s count on a 32-bit target: a bare `u64`, an overflow told
/// by the rule's `what`, set only then (a row is two stores: as an
/// `Option`, 272 B more flash).
#[cfg(target_pointer_width = "32")]
type RowCount = u64;
/// A [`Need`]'s count on a 64-bit target: `None` where it overflowed, which
/// the inlined interpreter branches on directly (x86-64 CSR decode ~20
/// instructions fewer than the packed form).
#[cfg(not(target_pointer_width = "32"))]
type RowCount = Option<u64>;

/// A [`Need`]'s kind: at least so many bytes.
const AT_LEAST: u32 = 0;
/// A [`Need`]'s kind: exactly so many bytes.
const EXACTLY: u32 = 1;
/// A [`Need`]'s kind: at least so many bytes after `byte_offset`.
const FROM_OFFSET: u32 = 2;

impl Need {
    /// Buffer `index` holds at least `count` elements (a values buffer).
    pub(crate) const fn values(index: u8, count: u64) -> Self {
        Self::new(index, Some(count), ELEMENTS, AT_LEAST, 0)
    }

    /// Buffer `index` holds exactly `count` values of `width` bytes.
    pub(crate) const fn exactly(index: u8, count: u64, width: u8) -> Self {
        Self::new(index, Some(count), width, EXACTLY, 0)
    }

    /// [`exactly`](Self::exactly) a count that may have overflowed (`None`: an
    /// overflow of `what`, never code 0, which a 32-bit row reads as no overflow).
    pub(crate) const fn counted(index: u8, count: Option<u64>, width: u8, what: Quantity) -> Self {
        Self::new(index, count, width, EXACTLY, what as u8)
    }

    /// The row of these constants (`what`: the code of a [`Quantity`]).
    #[cfg(target_pointer_width = "32")]
    const fn new(index: u8, count: Option<u64>, width: u8, kind: u32, what: u8) -> Self {
        let rule = index as u32 | (width as u32) << 8 | kind << 16;
        match count {
            Some(count) => Self { count, rule },
            None => Self {
                count: 0,
                rule: rule | (what as u32) << 24,
            },
        }
    }

    /// The row of these constants (`what`: the code of a [`Quantity`]).
    #[cfg(not(target_pointer_width = "32"))]
    const fn new(index: u8, count: Option<u64>, width: u8, kind: u32, what: u8) -> Self {
        let rule = index as u32 | (width as u32) << 8 | kind << 16 | (what as u32) << 24;
        Self { count, rule }
    }

    /// The count; `None` where computing it overflowed.
    #[cfg(target_pointer_width = "32")]
    const fn count(&self) -> Option<u64> {
        if self.rule >> 24 == 0 {
            Some(self.count)
        } else {
            None
        }
    }

    /// The count; `None` where computing it overflowed.
    #[cfg(not(target_pointer_width = "32"))]
    const fn count(&self) -> Option<u64> {
        self.count
    }
}

impl<S: Shape, B: Sizes> Ctx<S, B> {
    /// `byte_size` of buffer `index` (the count was checked before any
    /// layout check runs, so a missing buffer reads as 0 and then fails the
    /// size check rather than panicking). Read from the validated entry, not
    /// decoded again.
    #[inline]
    pub(crate) fn size(&self, index: u8) -> u64 {
        self.buffers.byte_size(usize::from(index))
    }

    /// The error of `kind` at buffer `index`'s entry (the table starts
    /// with its count byte).
    pub(crate) const fn err(&self, index: u8, kind: DescriptorErrorKind) -> DescriptorError {
        // At most 1 + 255 × 16: one saturating addition (the same result
        // as saturating each term).
        let at = (index as u32).wrapping_mul(16).wrapping_add(1);
        DescriptorError::new(self.table_at.saturating_add(at), kind)
    }

    /// `count` values of `width` bytes each; overflow is an error.
    pub(crate) fn array_bytes(
        &self,
        index: u8,
        count: u64,
        width: u64,
    ) -> Result<u64, DescriptorError> {
        mul(count, width).ok_or(overflow!(self, index, Quantity::BufferSize))
    }

    /// The buffers' size rules, row by row in order: the one interpreter of
    /// every layout's buffer table but the strided and tiled spans (and of
    /// a quantization scheme's parameter buffers). The first row broken is
    /// the error. A row of at least so many values counts from
    /// `byte_offset`, which is 0 for every layout but a dense one's data
    /// buffer (the `byte_offset` rule runs first).
    ///
    /// Out of line on a 32-bit target, where each rule's arithmetic and
    /// three errors would be ~200 bytes of code at each row; inline on a
    /// 64-bit one, where the rows' constants fold into it.
    #[cfg_attr(target_pointer_width = "32", inline(never))]
    #[cfg_attr(not(target_pointer_width = "32"), inline(always))]
    pub(crate) fn needs(&self, rows: &[Need]) -> Result<(), DescriptorError> {
        for row in rows {
            #[allow(clippy::cast_possible_truncation)]
            let [index, width, kind, what] = row.rule.to_le_bytes();
            let Some(count) = row.count() else {
                let what = Quantity::ALL.get(usize::from(what)).copied();
                return Err(overflow!(self, index, what.unwrap_or(Quantity::BufferSize)));
            };
            let bytes = if width == ELEMENTS {
                self.packing.bytes_for(count)
            } else {
                mul(count, u64::from(width))
            };
            let Some(bytes) = bytes else {
                return Err(overflow!(self, index, Quantity::BufferSize));
            };
            let byte_size = self.size(index);
            let kind = if u32::from(kind) == EXACTLY {
                if byte_size == bytes {
                    continue;
                }
                DescriptorErrorKind::BufferSizeMismatch {
                    index: u32::from(index),
                    expected: bytes,
                    byte_size,
                }
            } else {
                let base = if u32::from(kind) == FROM_OFFSET {
                    self.byte_offset
                } else {
                    0
                };
                let Some(needed) = base.checked_add(bytes) else {
                    return Err(overflow!(self, index, Quantity::BufferExtent));
                };
                if byte_size >= needed {
                    continue;
                }
                DescriptorErrorKind::BufferTooSmall {
                    index: u32::from(index),
                    needed,
                    byte_size,
                }
            };
            return Err(self.err(index, kind));
        }
        Ok(())
    }

    /// The data buffer (0) holds `n` contiguous elements from `byte_offset`.
    #[inline]
    pub(crate) fn contiguous(&self, n: u64) -> Result<(), DescriptorError> {
        self.needs(&[Need::new(0, Some(n), ELEMENTS, FROM_OFFSET, 0)])
    }

    /// The data buffer (0) holds every element whose linear offset lies in
    /// `first ..= last` (in elements, relative to `byte_offset`).
    pub(crate) fn span(&self, first: i64, last: i64) -> Result<(), DescriptorError> {
        let overflow = overflow!(self, 0, Quantity::BufferExtent);
        // In i128, where nothing here can overflow: the elements' byte span
        // alone may pass `i64` (a stride near 2^61 of 4-byte elements) while
        // `byte_offset` brings it back, and `byte_offset` may pass `i64::MAX`
        // (a huge buffer 0) while negative strides bring every element back
        // below it. Only the result is held to the buffer (and, to name it
        // in an error, to `i64`).
        let (lo, hi) = self.packing.byte_span_wide(first, last).ok_or(overflow)?;
        let base = i128::from(self.byte_offset);
        let (Some(start), Some(end)) = (base.checked_add(lo), base.checked_add(hi)) else {
            return Err(overflow); // cannot happen: each term is below 2^96
        };
        let byte_size = self.size(0);
        // `end >= start`; a negative `start` is before the buffer.
        if start < 0 || end > i128::from(byte_size) {
            // The error names i64 positions; one beyond them is an overflow.
            let (Ok(start), Ok(end)) = (i64::try_from(start), i64::try_from(end)) else {
                return Err(overflow);
            };
            let kind = DescriptorErrorKind::ExtentOutOfBounds {
                start,
                end,
                byte_size,
            };
            return Err(self.err(0, kind));
        }
        Ok(())
    }
}

/// The lowest and highest linear offset (in elements, or tiles) that
/// `strides` reach over `shape`: `sum(min(0, s·(n−1)))` and
/// `sum(max(0, s·(n−1)))`; `None` if a value does not fit an `i64`. The
/// shape must have no zero dimension (the caller checks emptiness first).
///
/// ```
/// use hurray_core::layout::stride_range;
/// // A [3, 4] view with strides (-4, 1): rows run backwards.
/// assert_eq!(stride_range([3, 4].into_iter(), [-4, 1].into_iter()), Some((-8, 3)));
/// ```
///
/// Out of line on a 32-bit target (the strided layout and the tile grid's
/// two rules take it).
#[cfg_attr(target_pointer_width = "32", inline(never))]
pub fn stride_range(
    shape: impl Iterator<Item = u64>,
    strides: impl Iterator<Item = i64>,
) -> Option<(i64, i64)> {
    let mut range = (0i64, 0i64);
    for (n, s) in shape.zip(strides) {
        range = reach(range, n, s)?;
    }
    Some(range)
}

/// One dimension's step of [`stride_range`]: `range` widened by what
/// stride `s` reaches over `n` indices. Out of line on a 32-bit target,
/// where a checked 64-bit product is ~90 bytes of code and the rule has
/// three callers (strides, a tile grid's and a tile's own strides); inline
/// on a 64-bit one, where it is one instruction.
#[cfg_attr(target_pointer_width = "32", inline(never))]
#[cfg_attr(not(target_pointer_width = "32"), inline)]
fn reach((lo, hi): (i64, i64), n: u64, s: i64) -> Option<(i64, i64)> {
    // `n - 1` wraps to `u64::MAX` for `n = 0`, which `i64` refuses: one
    // test for both (`None`, as for any `n - 1` past `i64::MAX`).
    let reach = s.checked_mul(i64::try_from(n.wrapping_sub(1)).ok()?)?;
    if reach < 0 {
        Some((lo.checked_add(reach)?, hi))
    } else {
        Some((lo, hi.checked_add(reach)?))
    }
}

/// `a × b`, checked: out of line on a 32-bit target, where a checked
/// 64-bit product is ~90 bytes of code (the tile grid's rules multiply at
/// five places); inline on a 64-bit one.
#[cfg_attr(target_pointer_width = "32", inline(never))]
#[cfg_attr(not(target_pointer_width = "32"), inline)]
pub(crate) const fn mul(a: u64, b: u64) -> Option<u64> {
    a.checked_mul(b)
}

/// [`mul`] for signed values (a tile grid's reach times its tile's
/// elements): out of line on a 32-bit target, inline on a 64-bit one.
#[cfg_attr(target_pointer_width = "32", inline(never))]
#[cfg_attr(not(target_pointer_width = "32"), inline)]
pub(crate) const fn imul(a: i64, b: i64) -> Option<i64> {
    a.checked_mul(b)
}

/// `ceil(n / d)` for `d > 0` (`d = 0` is treated as 1), by shifts for a
/// power of two and a bit-serial long division otherwise: the decode path
/// then links no 64-bit division routine (~0.9 KiB on a Cortex-M, whose
/// divider is 32-bit).
pub(crate) const fn div_ceil(n: u64, d: u64) -> u64 {
    if d <= 1 {
        return n;
    }
    if d.is_power_of_two() {
        let shift = d.trailing_zeros();
        // `n >> shift` < 2^63: adding 1 cannot wrap.
        return (n >> shift).wrapping_add((n & (d.wrapping_sub(1)) != 0) as u64);
    }
    // Restoring division, one bit a step: the dividend's top bit moves
    // into the remainder and the quotient's bits fill `n` from the bottom
    // (shifts by constants only: a 64-bit shift by a variable is a dozen
    // instructions on a 32-bit target).
    let mut n = n;
    let mut r = 0u64;
    let mut steps = 64u32;
    while steps > 0 {
        steps = steps.saturating_sub(1); // steps > 0 here
        let carry = r >> 63;
        r = (r << 1) | (n >> 63);
        n <<= 1;
        // With a carry the true remainder is 2^64 + r >= d, and
        // 2^64 + r - d = r.wrapping_sub(d) < d.
        if carry == 1 || r >= d {
            r = r.wrapping_sub(d);
            n |= 1;
        }
    }
    // The quotient is at most n / 2: adding 1 cannot wrap.
    n.wrapping_add((r != 0) as u64)
}

/// Whether `n` is a multiple of `d`, a power of two (or 0, read as 1).
pub(crate) const fn is_multiple_of_pow2(n: u64, d: u64) -> bool {
    n & d.saturating_sub(1) == 0
}

#[cfg(test)]
mod tests {
    use super::{Shape, div_ceil, is_multiple_of_pow2};
    use crate::descriptor::arrays::{DimValues, Values};

    /// The one-pass element count agrees with the scan for the dynamic
    /// marker followed by the product, on shapes made of the values that
    /// decide it (zero, one, `u64::MAX` and its factors, powers of two
    /// whose product overflows or wraps to zero).
    #[test]
    fn elements_agrees_with_scan_then_product() {
        let values = [
            0u64,
            1,
            2,
            3,
            5,
            17,
            257,
            641,
            65_537,
            6_700_417,
            1 << 32,
            1 << 40,
            u64::MAX / 3,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut shape = [0u64; 3];
        let mut checked = 0;
        for rank in 0..=3usize {
            let combos = (0..rank).fold(1, |n, _| n * values.len());
            for mut k in 0..combos {
                for d in shape.iter_mut().take(rank) {
                    *d = values[k % values.len()];
                    k /= values.len();
                }
                let dims: DimValues<'_> = Values::Native(&shape[..rank]);
                let expected = if dims.is_dynamic() {
                    None
                } else {
                    Some(dims.product_from(0))
                };
                assert_eq!(dims.elements(), expected, "{:?}", &shape[..rank]);
                checked += 1;
            }
        }
        // The seven prime factors of u64::MAX: a product of exactly
        // u64::MAX with no dynamic dimension.
        let factors = [3u64, 5, 17, 257, 641, 65_537, 6_700_417];
        let dims: DimValues<'_> = Values::Native(&factors);
        assert_eq!(dims.elements(), Some(Some(u64::MAX)));
        assert!(checked > 3000);
    }

    /// The bit-serial division agrees with the standard one, including
    /// divisors above 2^63 (the carry case) and powers of two.
    #[test]
    fn div_ceil_matches_u64_div_ceil() {
        let samples = [
            0u64,
            1,
            2,
            3,
            7,
            8,
            9,
            1000,
            u64::MAX / 3,
            u64::MAX / 2,
            (1 << 63) + 5,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut randoms = [0u64; 64];
        for r in &mut randoms {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *r = state >> (state % 60);
        }
        for &n in samples.iter().chain(&randoms) {
            for &d in samples.iter().chain(&randoms).filter(|&&d| d > 0) {
                assert_eq!(div_ceil(n, d), n.div_ceil(d), "{n} / {d}");
            }
        }
        assert_eq!(div_ceil(5, 0), 5, "a zero divisor reads as 1");
        assert!(is_multiple_of_pow2(4096, 64));
        assert!(!is_multiple_of_pow2(4100, 64));
        assert!(is_multiple_of_pow2(7, 0));
    }
}
