//! Checks on the *contents* of a tensor's buffers, for a host that can read
//! them (`docs/spec/layouts.md`, `docs/spec/quantization.md`,
//! `docs/spec/element-types.md`).
//!
//! [`TensorView::parse`](crate::TensorView::parse) validates everything the
//! descriptor says about its buffers; the spec also has rules about what the
//! buffers hold, which a reader "SHOULD validate and MUST reject": sparse
//! indices and pointers, block-paged page tables, quantization parameters,
//! `float8_e8m0` data and sub-byte padding (`docs/spec/layouts.md` § Buffer
//! contents, `[LY-DATA-1]` to `[LY-DATA-7]`).
//!
//! [`validate_contents`] takes the view and one byte slice per buffer (the
//! mapped memory, in table order), never panics and never allocates.

use core::fmt;

use zerocopy::little_endian::{F32, I32, U16, U32, U64};
use zerocopy::{FromBytes, Immutable};

use crate::descriptor::layout::BlockPaged;
use crate::descriptor::{Layout, Scheme, TensorView};
use crate::element::{ElementType, Packing};
use crate::error::error_enum;

/// Why a buffer's contents break a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DataError {
    /// The buffer (index in the table).
    pub buffer: u32,
    /// The element of that buffer at fault.
    pub element: u64,
    /// What is wrong.
    pub kind: DataErrorKind,
}

error_enum! {
    /// What is wrong with a buffer's contents.
    #[non_exhaustive]
    pub enum DataErrorKind {
        /// Fewer slices than buffers, or a slice shorter than its `byte_size`.
        Missing {
            /// Bytes the descriptor declares.
            expected: u64,
            /// Bytes given.
            found: u64,
        } => "{found} bytes given, {expected} declared";
        /// A pointer array does not start at 0.
        PointerStart(v: u64) => "pointer array starts at {v}, not 0";
        /// A pointer array does not end at the count it must.
        PointerEnd {
            /// The last value.
            found: u64,
            /// The count required.
            expected: u64,
        } => "pointer array ends at {found}, must end at {expected}";
        /// A pointer array decreases.
        PointerDecreasing => "pointer array decreases";
        /// An index is not below its bound.
        OutOfBounds {
            /// The index.
            value: u64,
            /// Its exclusive bound.
            bound: u64,
        } => "index {value} is not below {bound}";
        /// Indices that must strictly increase do not.
        NotIncreasing => "indices do not strictly increase";
        /// A scale is zero, negative where not allowed, or not finite.
        BadScale => "scale is zero, negative or not finite";
        /// A zero point lies outside the storage type's range.
        ZeroPointOutOfRange(z: i32) => "zero point {z} is outside the storage type";
        /// A reserved `float8_e8m0` pattern (`0x00` or `0xFF`).
        ReservedE8M0(b: u8) => "reserved E8M0 pattern {b:#04x}";
        /// Padding bits after the last packed element are not zero.
        PaddingNotZero => "padding bits are not zero";
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "buffer {} element {}: {}",
            self.buffer, self.element, self.kind
        )
    }
}

impl core::error::Error for DataError {}

type Res = Result<(), DataError>;

const fn fail(buffer: u32, element: u64, kind: DataErrorKind) -> Res {
    Err(DataError {
        buffer,
        element,
        kind,
    })
}

/// Checks the contents of every buffer of `view` (see the module docs).
/// `buffers[i]` is buffer `i`'s memory; it must hold at least the handle's
/// `byte_size` bytes. Descriptors with a dynamic dimension are checked only
/// where the shape is not needed.
///
/// # Errors
/// The first rule broken, with the buffer and element at fault.
///
/// ```
/// use hurray_core::{BufferHandle, DataErrorKind, DeviceTag, ElementType, LayoutSpec, SyncMode,
///     TensorDescriptor, TensorView, layout::Compressed, validate_contents};
///
/// // CSR [2, 3] with nnz = 2: values, col_indices, row_ptr.
/// let cpu = |n| BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
/// let buffers = [cpu(8), cpu(16), cpu(24)];
/// let d = TensorDescriptor::new(ElementType::Float32, &[2, 3], LayoutSpec::Csr(Compressed { nnz: 2 }), &buffers);
/// let mut bytes = [0u8; 256];
/// let len = d.encode(&mut bytes)?;
/// let view = TensorView::parse(&bytes[..len])?;
///
/// let values = [0u8; 8];
/// let cols: Vec<u8> = [0u64, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let rows: Vec<u8> = [0u64, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert!(validate_contents(&view, &[&values, &cols, &rows]).is_ok());
///
/// let bad_cols: Vec<u8> = [0u64, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let err = validate_contents(&view, &[&values, &bad_cols, &rows]).unwrap_err();
/// assert_eq!(err.kind, DataErrorKind::OutOfBounds { value: 3, bound: 3 });
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub fn validate_contents(view: &TensorView<'_>, buffers: &[&[u8]]) -> Res {
    // Every buffer present and long enough.
    for (i, h) in view.buffers().iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let (expected, found) = (h.byte_size(), buffers.get(i).map_or(0, |b| b.len() as u64));
        if buffers.get(i).is_none() || found < expected {
            return fail(index, 0, DataErrorKind::Missing { expected, found });
        }
    }
    let buf = |i: u32| -> &[u8] {
        let b = buffers.get(i as usize).copied().unwrap_or_default();
        let size = view.buffers().get(i as usize).map_or(0, |h| h.byte_size());
        b.get(..usize::try_from(size).unwrap_or(usize::MAX))
            .unwrap_or(b)
    };
    let dynamic = view.is_dynamic();
    match view.layout() {
        Layout::Csr(c) | Layout::Csc(c) if !dynamic => {
            let (major, minor) = match view.layout() {
                Layout::Csr(_) => (0, 1),
                _ => (1, 0),
            };
            let bound = view.shape().get(minor).unwrap_or(0);
            let n = view.shape().get(major).unwrap_or(0);
            compressed(u64s(buf(2)), u64s(buf(1)), c.nnz, n, bound, 2, 1)?;
        }
        Layout::Coo(c) if !dynamic => coo(view, u64s(buf(1)), c.nnz, c.sorted)?,
        Layout::Csf(c) if !dynamic => {
            let mut parents: u64 = 1;
            for (level, mode) in (0u32..).zip(c.mode_order().iter()) {
                let pos = level.saturating_mul(2).saturating_add(1);
                let crd = pos.saturating_add(1);
                let crds = u64s(buf(crd));
                let count = crds.len() as u64;
                let bound = view.shape().get(mode as usize).unwrap_or(0);
                compressed(u64s(buf(pos)), crds, count, parents, bound, pos, crd)?;
                parents = count;
            }
        }
        Layout::BlockPaged(b) => block_paged(&b, buf(1), buf(2))?,
        _ => {}
    }
    if let Some(q) = view.quantization() {
        quantization(view, &q.scheme, &buf)?;
    }
    if view.element_type() == ElementType::Float8E8M0 {
        e8m0(buf(0), 0)?;
    }
    padding(view, buf(0))
}

/// `b` as an array of little-endian values (the descriptor checked its size
/// is a whole number of values, so a remainder cannot occur).
fn values<T: FromBytes + Immutable>(b: &[u8]) -> &[T] {
    let n = b.len().checked_div(size_of::<T>()).unwrap_or(0);
    <[T]>::ref_from_prefix_with_elems(b, n).map_or(&[][..], |(s, _)| s)
}

/// [`values`] of u64.
fn u64s(b: &[u8]) -> &[U64] {
    values(b)
}

/// A pointer array `ptr` of `n + 1` entries over `idx`: starts at 0, ends at
/// `count`, never decreases; each run of `idx` strictly increases below
/// `bound`.
fn compressed(ptr: &[U64], idx: &[U64], count: u64, n: u64, bound: u64, pb: u32, ib: u32) -> Res {
    let first = ptr.first().map_or(0, |v| v.get());
    if first != 0 {
        return fail(pb, 0, DataErrorKind::PointerStart(first));
    }
    let last = ptr.last().map_or(0, |v| v.get());
    if last != count || ptr.len() as u64 != n.saturating_add(1) {
        return fail(
            pb,
            n,
            DataErrorKind::PointerEnd {
                found: last,
                expected: count,
            },
        );
    }
    for (k, pair) in (0u64..).zip(ptr.windows(2)) {
        let (Some(a), Some(b)) = (pair.first(), pair.get(1)) else {
            continue;
        };
        let (a, b) = (a.get(), b.get());
        if b < a {
            return fail(pb, k.saturating_add(1), DataErrorKind::PointerDecreasing);
        }
        // a <= b <= count == idx.len(): in range.
        let run = idx
            .get(usize::try_from(a).unwrap_or(usize::MAX)..usize::try_from(b).unwrap_or(usize::MAX))
            .unwrap_or_default();
        let mut prev: Option<u64> = None;
        for (j, v) in (a..).zip(run) {
            let v = v.get();
            if v >= bound {
                return fail(ib, j, DataErrorKind::OutOfBounds { value: v, bound });
            }
            if prev.is_some_and(|p| p >= v) {
                return fail(ib, j, DataErrorKind::NotIncreasing);
            }
            prev = Some(v);
        }
    }
    Ok(())
}

fn coo(view: &TensorView<'_>, idx: &[U64], nnz: u64, sorted: bool) -> Res {
    let rank = view.shape().len().max(1);
    let mut prev: Option<&[U64]> = None;
    for (i, tuple) in (0u64..).zip(
        idx.chunks_exact(rank)
            .take(usize::try_from(nnz).unwrap_or(usize::MAX)),
    ) {
        let first = i.saturating_mul(rank as u64);
        for (d, v) in tuple.iter().enumerate() {
            let (value, bound) = (v.get(), view.shape().get(d).unwrap_or(0));
            if value >= bound {
                let element = first.saturating_add(d as u64);
                return fail(1, element, DataErrorKind::OutOfBounds { value, bound });
            }
        }
        if sorted
            && prev.is_some_and(|p| {
                p.iter()
                    .map(|v| v.get())
                    .cmp(tuple.iter().map(|v| v.get()))
                    .is_ge()
            })
        {
            return fail(1, first, DataErrorKind::NotIncreasing);
        }
        prev = Some(tuple);
    }
    Ok(())
}

fn block_paged(b: &BlockPaged, table: &[u8], seq: &[u8]) -> Res {
    let read = |bytes: &[u8], i: usize| -> u64 {
        if b.wide_indices {
            u64s(bytes).get(i).map_or(0, |v| v.get())
        } else {
            values::<U32>(bytes)
                .get(i)
                .map_or(0, |v| u64::from(v.get()))
        }
    };
    let width = usize::try_from(b.index_width()).unwrap_or(8);
    let pages = table.len().checked_div(width).unwrap_or(0);
    let seqs = seq.len().checked_div(width).unwrap_or(0);
    if read(seq, 0) != 0 {
        return fail(2, 0, DataErrorKind::PointerStart(read(seq, 0)));
    }
    let at = seqs.saturating_sub(1);
    let (found, expected) = (read(seq, at), pages as u64);
    if found != expected {
        return fail(2, at as u64, DataErrorKind::PointerEnd { found, expected });
    }
    for s in 1..seqs {
        if read(seq, s) < read(seq, s.saturating_sub(1)) {
            return fail(2, s as u64, DataErrorKind::PointerDecreasing);
        }
    }
    for k in 0..pages {
        let (value, bound) = (read(table, k), b.num_pages);
        if value >= bound {
            return fail(1, k as u64, DataErrorKind::OutOfBounds { value, bound });
        }
    }
    Ok(())
}

fn quantization<'b>(
    view: &TensorView<'_>,
    scheme: &Scheme<'_>,
    buf: &dyn Fn(u32) -> &'b [u8],
) -> Res {
    let storage = view.element_type();
    let (scale, zero) = scheme.parameter_buffers();
    let Some(scale) = scale else {
        return Ok(());
    };
    let scales = buf(scale);
    // A shared buffer holds [scales | zero points].
    let width = usize::try_from(scheme.scale_width()).unwrap_or(4);
    let scale_len = match zero {
        Some(z) if z == scale => (scales
            .len()
            .checked_div(width.saturating_add(4))
            .unwrap_or(0))
        .saturating_mul(width),
        _ => scales.len(),
    };
    let (scale_bytes, rest) = scales.split_at_checked(scale_len).unwrap_or((scales, &[]));
    match scheme {
        Scheme::Mxfp { .. } => e8m0(scale_bytes, scale)?,
        Scheme::Nf4 { .. } => floats(scale_bytes, ElementType::Float32, scale, true)?,
        Scheme::PerBlock { scale_type, .. } => floats(scale_bytes, *scale_type, scale, false)?,
        _ => floats(scale_bytes, ElementType::Float32, scale, false)?,
    }
    let zeros = match zero {
        Some(z) if z == scale => rest,
        Some(z) => buf(z),
        None => return Ok(()),
    };
    let (lo, hi) = storage.integer_range().unwrap_or((i64::MIN, i64::MAX));
    for (i, z) in (0u64..).zip(values::<I32>(zeros)) {
        let z = z.get();
        if !(lo..=hi).contains(&i64::from(z)) {
            return fail(zero.unwrap_or(0), i, DataErrorKind::ZeroPointOutOfRange(z));
        }
    }
    Ok(())
}

/// Scales of `t` (f16, bf16 or f32): finite and non-zero (or, for NF4,
/// finite and non-negative).
fn floats(bytes: &[u8], t: ElementType, buffer: u32, nf4: bool) -> Res {
    let bad = |x: f32| !x.is_finite() || if nf4 { x < 0.0 } else { x == 0.0 };
    let first_bad = if t == ElementType::Float32 {
        values::<F32>(bytes).iter().position(|x| bad(x.get()))
    } else {
        values::<U16>(bytes).iter().position(|x| {
            let bits = x.get();
            bad(match t {
                ElementType::BFloat16 => f32::from_bits(u32::from(bits) << 16),
                _ => f16_to_f32(bits),
            })
        })
    };
    match first_bad {
        Some(i) => fail(buffer, i as u64, DataErrorKind::BadScale),
        None => Ok(()),
    }
}

/// IEEE binary16 to binary32 (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1F);
    let frac = u32::from(h & 0x3FF);
    match exp {
        // Subnormal: frac · 2^-24, exact in f32.
        0 => {
            #[allow(clippy::cast_precision_loss)] // frac < 2^10
            let v = frac as f32 * (1.0 / 16_777_216.0);
            if sign == 0 { v } else { -v }
        }
        0x1F => f32::from_bits(sign | 0x7F80_0000 | (frac << 13)),
        // Rebias 15 → 127: exponent e + 112, mantissa widened by 13 bits.
        e => f32::from_bits(sign | (e.saturating_add(112) << 23) | (frac << 13)),
    }
}

fn e8m0(bytes: &[u8], buffer: u32) -> Res {
    match (0u64..).zip(bytes).find(|&(_, &b)| b == 0x00 || b == 0xFF) {
        Some((i, &b)) => fail(buffer, i, DataErrorKind::ReservedE8M0(b)),
        None => Ok(()),
    }
}

/// Zero padding bits after the last element of contiguous packed data.
fn padding(view: &TensorView<'_>, data: &[u8]) -> Res {
    if !matches!(view.layout(), Layout::RowMajor | Layout::ColumnMajor)
        || view.quantization().is_some()
    {
        return Ok(());
    }
    let Some(n) = view.element_count() else {
        return Ok(());
    };
    let (bits, per_group) = match view.packing() {
        Packing::Bits(b) => (u64::from(b), 8u64),
        Packing::SixBitGroups => (6, 24),
        Packing::Bytes(_) => return Ok(()),
    };
    // The packed run starts at byte_offset; the used bits end at n * bits
    // and the storage at the end of the last byte (or 3-byte group).
    let used = n.saturating_mul(bits);
    let stored = used.div_ceil(per_group).saturating_mul(per_group);
    let start = view.byte_offset();
    let mut bit = used;
    while bit < stored {
        let byte = start.saturating_add(bit / 8);
        let b = usize::try_from(byte)
            .ok()
            .and_then(|i| data.get(i))
            .copied()
            .unwrap_or(0);
        if b >> (bit % 8) != 0 {
            return fail(0, byte, DataErrorKind::PaddingNotZero);
        }
        bit = (bit / 8).saturating_add(1).saturating_mul(8);
    }
    Ok(())
}
