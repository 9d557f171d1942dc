//! What drawing a window of a tensor needs: which element type the kernel
//! decodes and how wide it is, how the tensor is dequantized (every scheme
//! of `docs/spec/quantization.md`), which bytes of the data and parameter
//! buffers the window touches, and the CPU's own min/max of the window (the
//! oracle the page shows next to the GPU's).
//!
//! The formulas, with `g` the row-major index of a logical element, `S =
//! shape[axis]`, `inner` the product of the dimensions after `axis`, `K =
//! block_size` and `P = ⌈S / K⌉`:
//!
//! * per tensor: `scale × (q − zero_point)`;
//! * per channel: parameter index `p = (g / inner) mod S`,
//!   `scale[p] × (q − zero_point[p])`;
//! * per block, NF4, MXFP: `outer = (g / (S·inner))·inner + g mod inner`,
//!   `p = outer·P + ((g / inner) mod S) / K`; per block `scale[p] × (q −
//!   zero_point[p])` (scales float16, bfloat16 or float32, widened), NF4
//!   `absmax[p] × NF4[q]`, MXFP `2^(e[p] − 127) × value(q)`;
//! * per block and NF4 store a partial last block whole: element `g` is
//!   stored at `g + (g / (S·inner))·(P·K − S)·inner`.
//!
//! Everything here takes its sizes from a validated view and checks its
//! arithmetic: a window that does not fit answers an error, never a panic.

use std::fmt::Write;

use hurray_core::{ElementType, Layout, Scheme, TensorView};

/// The most elements a drawn window holds (512 × 512).
pub const MAX_WINDOW: u64 = 512 * 512;

/// The NF4 levels (`docs/spec/quantization.md`, the format's fixed table),
/// as float32 bit patterns (the kernel has the same words).
pub const NF4_BITS: [u32; 16] = [
    0xbf80_0000,
    0xbf32_39b1,
    0xbf06_6b30,
    0xbeca_32a0,
    0xbe91_a24d,
    0xbe3d_353f,
    0xbdba_7871,
    0x0000_0000,
    0x3da2_faff,
    0x3e24_cae3,
    0x3e7c_04dd,
    0x3ead_033a,
    0x3ee1_a4b8,
    0x3f10_07ab,
    0x3f39_13b3,
    0x3f80_0000,
];

/// The dequantization formula (the kernel's `formula` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formula {
    /// Values as stored (0).
    None = 0,
    /// `scale × (q − zero_point)` (1).
    Affine = 1,
    /// `absmax × NF4[q]` (2).
    Nf4 = 2,
    /// `2^(e − 127) × value(q)` (3).
    Mxfp = 3,
}

/// Where the parameters of an element are: one set per channel or per
/// block, in parameter buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamMap {
    /// `shape[axis]`.
    pub axis_len: u64,
    /// Product of the dimensions after the axis.
    pub inner: u64,
    /// Elements per block; 0 for per channel.
    pub block: u64,
    /// The axis as stored: `⌈S / K⌉ × K` where partial blocks are padded,
    /// else `S`.
    pub stored_len: u64,
    /// Parameter sets in all (scales in the scale buffer).
    pub count: u64,
    /// The scale buffer.
    pub scale_buffer: u32,
    /// The zero-point buffer (`int32` each); `None` when symmetric.
    pub zero_point_buffer: Option<u32>,
    /// The scales' kernel code (1 float32, 2 float16, 3 bfloat16, 5 the
    /// `float8_e8m0` byte of MXFP).
    pub scale_code: u32,
    /// Bytes per scale.
    pub scale_width: u64,
}

impl ParamMap {
    /// The parameter index of logical element `g`.
    #[must_use]
    pub fn index(&self, g: u64) -> u64 {
        let (s, inner) = (self.axis_len.max(1), self.inner.max(1));
        let along = (g / inner) % s;
        if self.block == 0 {
            return along;
        }
        let per_axis = s.div_ceil(self.block);
        let outer = (g / (s * inner)) * inner + g % inner;
        outer * per_axis + along / self.block
    }

    /// Where logical element `g` is stored (in elements from the first).
    #[must_use]
    pub fn stored(&self, g: u64) -> Option<u64> {
        let line = self.axis_len.checked_mul(self.inner)?.max(1);
        let pad = (self.stored_len - self.axis_len).checked_mul(self.inner)?;
        (g / line).checked_mul(pad)?.checked_add(g)
    }
}

/// How a drawn tensor is dequantized.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quant {
    /// The formula.
    pub formula: Formula,
    /// The per-tensor scale (per-tensor affine).
    pub scale: f32,
    /// The per-tensor zero point.
    pub zero_point: i32,
    /// Per-channel or per-block parameters; `None` for none or per tensor.
    pub map: Option<ParamMap>,
    /// The spec's name of the scheme (`"none"` when not quantized).
    pub name: &'static str,
}

/// What drawing 2-D slices of a tensor needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawPlan {
    /// The element type's kernel code (see `kernel.wgsl`).
    pub code: u32,
    /// Bits per element.
    pub bits: u64,
    /// Rows of a slice (1 for a vector).
    pub rows: u64,
    /// Columns of a slice.
    pub cols: u64,
    /// Number of 2-D slices (product of the leading dims).
    pub slices: u64,
    /// Byte offset of the tensor's first element in buffer 0.
    pub start: u64,
    /// Dequantization.
    pub quant: Quant,
}

/// The kernel's code of an element type, and its width in bits.
#[must_use]
pub fn kernel_code(t: ElementType) -> Option<(u32, u64)> {
    use ElementType as E;
    Some(match t {
        E::Float32 => (1, 32),
        E::Float16 => (2, 16),
        E::BFloat16 => (3, 16),
        E::Int8 => (4, 8),
        E::UInt8 => (5, 8),
        E::Int16 => (6, 16),
        E::UInt16 => (7, 16),
        E::Int32 => (8, 32),
        E::UInt32 => (9, 32),
        E::Int4 => (10, 4),
        E::UInt4 => (11, 4),
        E::Int2 => (12, 2),
        E::UInt2 => (13, 2),
        E::Float8E4M3 => (14, 8),
        E::Float8E5M2 => (15, 8),
        E::Float4E2M1 => (16, 4),
        E::Float6E2M3 => (17, 6),
        E::Float6E3M2 => (18, 6),
        E::Bool => (19, 1),
        _ => return None,
    })
}

fn product(dims: &[u64]) -> Result<u64, String> {
    dims.iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| "shape overflows".into())
}

/// Whether (and how) a tensor can be drawn as a heatmap: dense row-major,
/// one of the element types the kernel decodes, any public quantization
/// scheme.
///
/// # Errors
/// Why it cannot be drawn, in words for the page.
pub fn draw_plan(v: &TensorView<'_>) -> Result<DrawPlan, String> {
    let t = v.element_type();
    let Some((code, bits)) = kernel_code(t) else {
        return Err(format!(
            "{} is not drawn (the kernel decodes integers up to 32 bits, float32/16, bfloat16, 8-, 6- and 4-bit floats, bool)",
            t.name()
        ));
    };
    if !matches!(v.layout(), Layout::RowMajor) {
        return Err(format!(
            "layout {} is not drawn (row-major only)",
            v.layout().name()
        ));
    }
    if v.buffers().is_empty() || v.is_dynamic() {
        return Err("no data buffer or a dynamic shape".into());
    }
    let shape: Vec<u64> = v.shape().iter().collect();
    let r = shape.len();
    let (rows, cols) = match r {
        0 => (1, 1),
        1 => (1, shape[0]),
        _ => (shape[r - 2], shape[r - 1]),
    };
    let slices = product(shape.get(..r.saturating_sub(2)).unwrap_or(&[]))?;
    if rows == 0 || cols == 0 || slices == 0 {
        return Err("empty tensor".into());
    }
    let mut quant = Quant {
        formula: Formula::None,
        scale: 1.0,
        zero_point: 0,
        map: None,
        name: "none",
    };
    if let Some(q) = v.quantization() {
        let s = q.scheme;
        quant.name = s.name();
        quant.formula = match s {
            Scheme::PerTensor { .. } | Scheme::PerChannel { .. } | Scheme::PerBlock { .. } => {
                Formula::Affine
            }
            Scheme::Nf4 { .. } => Formula::Nf4,
            Scheme::Mxfp { .. } => Formula::Mxfp,
            _ => return Err(format!("the private scheme {:#04x} is not drawn", s.tag())),
        };
        let axis = match s {
            Scheme::PerTensor { scale, zero_point } => {
                quant.scale = scale;
                quant.zero_point = zero_point;
                None
            }
            Scheme::PerChannel { axis, .. } => Some((axis, 0)),
            _ => s.blocks().map(|(a, k)| (a, u64::from(k))),
        };
        if let Some((axis, block)) = axis {
            let a = axis as usize;
            let axis_len = *shape.get(a).ok_or("axis out of range")?;
            let inner = product(shape.get(a + 1..).unwrap_or(&[]))?;
            let outer = product(shape.get(..a).unwrap_or(&[]))?;
            let (scale_buffer, zero_point_buffer) = s.parameter_buffers();
            let per_axis = if block == 0 {
                axis_len
            } else {
                axis_len.div_ceil(block)
            };
            let stored_len =
                if block != 0 && matches!(s, Scheme::PerBlock { .. } | Scheme::Nf4 { .. }) {
                    per_axis.checked_mul(block).ok_or("shape overflows")?
                } else {
                    axis_len
                };
            let scale_code = match s {
                Scheme::PerBlock {
                    scale_type: ElementType::Float16,
                    ..
                } => 2,
                Scheme::PerBlock {
                    scale_type: ElementType::BFloat16,
                    ..
                } => 3,
                Scheme::Mxfp { .. } => 5,
                _ => 1,
            };
            quant.map = Some(ParamMap {
                axis_len,
                inner,
                block,
                stored_len,
                count: if block == 0 {
                    axis_len
                } else {
                    per_axis
                        .checked_mul(outer)
                        .and_then(|x| x.checked_mul(inner))
                        .ok_or("shape overflows")?
                },
                scale_buffer: scale_buffer.ok_or("no scale buffer")?,
                zero_point_buffer,
                scale_code,
                scale_width: s.scale_width(),
            });
        }
    }
    Ok(DrawPlan {
        code,
        bits,
        rows,
        cols,
        slices,
        start: v.byte_offset(),
        quant,
    })
}

/// The bytes a window of a slice touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Global index of the window's element `(0, 0)`; `(r, c)` is `base +
    /// r × cols + c` (`cols` of the tensor's slices).
    pub base: u64,
    /// Rows and columns of the window.
    pub rows: u64,
    /// See [`Window::rows`].
    pub cols: u64,
    /// Byte ranges of buffer 0 (`(offset, length)`), read back to back.
    pub reads: Vec<(u64, u64)>,
    /// Bit position of element `(r, 0)` in those bytes, per row.
    pub row_bits: Vec<u32>,
    /// First and last parameter index the window uses.
    pub params: Option<(u64, u64)>,
}

impl Window {
    /// `(buffer, offset, length)` of the scales the window uses.
    #[must_use]
    pub fn scale_read(&self, q: &Quant) -> Option<(u32, u64, u64)> {
        let (m, (p0, p1)) = (q.map?, self.params?);
        Some((
            m.scale_buffer,
            p0 * m.scale_width,
            (p1 - p0 + 1) * m.scale_width,
        ))
    }

    /// `(buffer, offset, length)` of the zero points the window uses (after
    /// the scales when both share a buffer).
    #[must_use]
    pub fn zero_point_read(&self, q: &Quant) -> Option<(u32, u64, u64)> {
        let (m, (p0, p1)) = (q.map?, self.params?);
        let z = m.zero_point_buffer?;
        let after = if z == m.scale_buffer {
            m.count.checked_mul(m.scale_width)?
        } else {
            0
        };
        Some((z, after.checked_add(p0 * 4)?, (p1 - p0 + 1) * 4))
    }

    /// The window as JSON for the page: `{"reads": [[off, len]], "scales":
    /// [buffer, off, len] | null, "zero_points": … | null}`.
    #[must_use]
    pub fn json(&self, q: &Quant) -> String {
        let mut o = String::from("{\"reads\":[");
        for (i, (off, len)) in self.reads.iter().enumerate() {
            let _ = write!(o, "{}[{off},{len}]", if i > 0 { "," } else { "" });
        }
        o.push_str("],\"scales\":");
        let r = |o: &mut String, x: Option<(u32, u64, u64)>| match x {
            Some((b, off, len)) => {
                let _ = write!(o, "[{b},{off},{len}]");
            }
            None => o.push_str("null"),
        };
        r(&mut o, self.scale_read(q));
        o.push_str(",\"zero_points\":");
        r(&mut o, self.zero_point_read(q));
        o.push('}');
        o
    }
}

/// Reads closer than this are merged into one (fewer `Blob.slice` calls).
const MERGE_GAP: u64 = 4096;

/// The bytes that drawing `rows × cols` elements of slice `slice` reads.
///
/// # Errors
/// The window is empty, larger than the slice or [`MAX_WINDOW`], or (for
/// per-channel and block schemes, whose kernel indexes in 32 bits) reaches
/// element 2^32 − 1.
pub fn window(plan: &DrawPlan, slice: u64, rows: u64, cols: u64) -> Result<Window, String> {
    if rows == 0 || cols == 0 || rows > plan.rows || cols > plan.cols || slice >= plan.slices {
        return Err("the window is not inside the tensor".into());
    }
    if rows * cols > MAX_WINDOW {
        return Err(format!("a window holds at most {MAX_WINDOW} elements"));
    }
    let over = || "the tensor's size overflows".to_owned();
    let base = slice
        .checked_mul(plan.rows)
        .and_then(|x| x.checked_mul(plan.cols))
        .ok_or_else(over)?;
    let last = base + (rows - 1) * plan.cols + cols - 1;
    // Below u32::MAX: the kernel's `line` (S × inner, clamped to u32::MAX)
    // then divides every index it sees to the right line.
    if plan.quant.map.is_some() && last >= u64::from(u32::MAX) {
        return Err("quantized tensors are drawn in their first 2^32 - 1 elements only".into());
    }
    let mut reads: Vec<(u64, u64)> = Vec::new();
    let mut row_bits = Vec::new();
    let mut raw_len = 0u64;
    for r in 0..rows {
        let g = base + r * plan.cols;
        let s = match plan.quant.map {
            Some(m) => m.stored(g).ok_or_else(over)?,
            None => g,
        };
        let bit = s.checked_mul(plan.bits).ok_or_else(over)?;
        let end_bit = (s + cols).checked_mul(plan.bits).ok_or_else(over)?;
        let start = plan.start.checked_add(bit / 8).ok_or_else(over)?;
        let end = plan
            .start
            .checked_add(end_bit.div_ceil(8))
            .ok_or_else(over)?;
        // Merge with the previous read when close; rows never go back.
        let at = match reads.last_mut() {
            Some((o, l)) if start >= *o && start <= *o + *l + MERGE_GAP => {
                let grown = end.max(*o + *l) - *o;
                raw_len += grown - *l;
                *l = grown;
                raw_len - grown + (start - *o)
            }
            _ => {
                reads.push((start, end - start));
                raw_len += end - start;
                raw_len - (end - start)
            }
        };
        let b = at * 8 + bit % 8;
        row_bits.push(u32::try_from(b).map_err(|_| "the window's bytes exceed 512 MiB")?);
    }
    let params = plan.quant.map.map(|m| {
        let (mut lo, mut hi) = (u64::MAX, 0);
        for r in 0..rows {
            for c in 0..cols {
                let p = m.index(base + r * plan.cols + c);
                lo = lo.min(p);
                hi = hi.max(p);
            }
        }
        (lo, hi)
    });
    Ok(Window {
        base,
        rows,
        cols,
        reads,
        row_bits,
        params,
    })
}

/// `n` bits at bit `bit` of `data` (little-endian, LSB first).
#[must_use]
pub fn bits_at(data: &[u8], bit: u64, n: u64) -> Option<u32> {
    let mut v = 0u64;
    let first = usize::try_from(bit / 8).ok()?;
    let last = usize::try_from((bit + n).div_ceil(8)).ok()?;
    for (i, b) in data.get(first..last)?.iter().enumerate() {
        v |= u64::from(*b) << (8 * i);
    }
    #[allow(clippy::cast_possible_truncation)]
    Some(((v >> (bit % 8)) & ((1u64 << n) - 1)) as u32)
}

/// A small float with `e` exponent bits, `m` mantissa bits and `bias`
/// (no infinities or NaN: the caller handles them).
#[allow(clippy::cast_possible_wrap)]
fn minifloat(x: u32, e: u32, m: u32, bias: i32) -> f32 {
    let sign = if (x >> (e + m)) & 1 == 1 { -1.0 } else { 1.0 };
    let exp = (x >> m) & ((1 << e) - 1);
    let man = x & ((1 << m) - 1);
    #[allow(clippy::cast_precision_loss)]
    let v = if exp == 0 {
        man as f32 * 2f32.powi(1 - bias - m as i32)
    } else {
        (man + (1 << m)) as f32 * 2f32.powi(exp as i32 - bias - m as i32)
    };
    sign * v
}

/// The value of the element bits `x` of kernel code `code` (before
/// dequantization).
#[must_use]
#[allow(clippy::cast_possible_wrap, clippy::cast_precision_loss)]
pub fn decode(code: u32, x: u32) -> f32 {
    let sext = |bits: u32| ((x << (32 - bits)) as i32 >> (32 - bits)) as f32;
    match code {
        1 => f32::from_bits(x),
        2 => f16_to_f32(x as u16),
        3 => f32::from_bits(x << 16),
        4 => sext(8),
        6 => sext(16),
        8 => (x as i32) as f32,
        10 => sext(4),
        12 => sext(2),
        5 | 7 | 9 | 11 | 13 | 19 => x as f32,
        14 if x & 0x7f == 0x7f => f32::NAN,
        14 => minifloat(x, 4, 3, 7),
        15 if (x >> 2) & 0x1f == 0x1f => {
            if x & 3 == 0 {
                if x & 0x80 != 0 {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                }
            } else {
                f32::NAN
            }
        }
        15 => minifloat(x, 5, 2, 15),
        16 => minifloat(x, 2, 1, 1),
        17 => minifloat(x, 2, 3, 1),
        18 => minifloat(x, 3, 2, 3),
        _ => f32::NAN,
    }
}

fn f16_to_f32(h: u16) -> f32 {
    let s = u32::from(h >> 15) << 31;
    let e = u32::from((h >> 10) & 0x1f);
    let m = u32::from(h & 0x3ff);
    let bits = match (e, m) {
        (0, 0) => s,
        (0, _) => {
            // Subnormal: m × 2^-24.
            let v = m as f32 * (1.0 / 16_777_216.0);
            return if s != 0 { -v } else { v };
        }
        (31, 0) => s | 0x7f80_0000,
        (31, _) => s | 0x7fc0_0000,
        _ => s | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// The scale at `j` of the window's scale bytes.
fn scale_at(code: u32, scales: &[u8], j: u64) -> Option<f32> {
    Some(match code {
        5 => {
            let e = *scales.get(usize::try_from(j).ok()?)?;
            if e == 0 || e == 0xff {
                f32::NAN
            } else {
                f32::from_bits(u32::from(e) << 23)
            }
        }
        1 => decode(1, bits_at(scales, j * 32, 32)?),
        c => decode(c, bits_at(scales, j * 16, 16)?),
    })
}

/// The CPU's min/max of a drawn window (`data`: the bytes of
/// [`Window::reads`] back to back; `scales`/`zero_points`: those of
/// [`Window::scale_read`] and [`Window::zero_point_read`]). Non-finite
/// values are skipped; `None` when no value is finite or a byte is missing.
#[must_use]
pub fn cpu_min_max(
    plan: &DrawPlan,
    w: &Window,
    data: &[u8],
    scales: &[u8],
    zero_points: &[u8],
) -> Option<(f32, f32)> {
    let mut lo = f32::INFINITY;
    let mut hi = f32::NEG_INFINITY;
    let q = &plan.quant;
    for r in 0..w.rows {
        let row = u64::from(*w.row_bits.get(usize::try_from(r).ok()?)?);
        for c in 0..w.cols {
            let x = bits_at(data, row + c * plan.bits, plan.bits)?;
            let (s, z) = match (q.map, w.params) {
                (Some(m), Some((p0, _))) => {
                    let j = m.index(w.base + r * plan.cols + c) - p0;
                    let z = if m.zero_point_buffer.is_some() {
                        bits_at(zero_points, j * 32, 32)?.cast_signed()
                    } else {
                        0
                    };
                    (scale_at(m.scale_code, scales, j)?, z)
                }
                _ => (q.scale, q.zero_point),
            };
            #[allow(clippy::cast_precision_loss)]
            let v = match q.formula {
                Formula::None => decode(plan.code, x),
                Formula::Affine => (decode(plan.code, x) - z as f32) * s,
                Formula::Nf4 => s * f32::from_bits(NF4_BITS[(x & 15) as usize]),
                Formula::Mxfp => s * decode(plan.code, x),
            };
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_floats_decode_by_the_ocp_tables() {
        // float4_e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
        let fp4: Vec<f32> = (0..16).map(|x| decode(16, x)).collect();
        assert_eq!(
            fp4,
            [
                0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0,
                -6.0
            ]
        );
        assert_eq!(decode(14, 0x7e), 448.0); // e4m3's largest
        assert!(decode(14, 0xff).is_nan());
        assert_eq!(decode(14, 0x01), 2f32.powi(-9)); // smallest subnormal
        assert_eq!(decode(15, 0x7b), 57344.0); // e5m2's largest
        assert_eq!(decode(15, 0x7c), f32::INFINITY);
        assert_eq!(decode(17, 0x1f), 7.5); // e2m3's largest
        assert_eq!(decode(18, 0x1f), 28.0); // e3m2's largest
        assert_eq!(decode(10, 0xf), -1.0);
        assert_eq!(decode(12, 0x2), -2.0);
        assert_eq!(decode(2, 0x3c00), 1.0);
        assert_eq!(decode(3, 0x3f80), 1.0);
        assert_eq!(decode(6, 0xfffe), -2.0);
    }

    #[test]
    fn nf4_levels_are_the_spec_table() {
        // The decimals of the format's table, verbatim.
        let spec = "-1.0 -0.6961928009986877 -0.5250730514526367 -0.39491748809814453 \
            -0.28444138169288635 -0.18477343022823334 -0.09105003625154495 0.0 \
            0.07958029955625534 0.16093020141124725 0.24611230194568634 0.33791524171829224 \
            0.44070982933044434 0.5626170039176941 0.7229568362236023 1.0";
        let levels: Vec<f32> = spec
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let ours: Vec<f32> = NF4_BITS.iter().map(|b| f32::from_bits(*b)).collect();
        assert_eq!(levels, ours);
        let kernel = include_str!("kernel.wgsl");
        for b in NF4_BITS {
            assert!(
                kernel.contains(&format!("0x{b:08x}u")),
                "{b:#x} not in the kernel"
            );
        }
    }

    #[test]
    fn six_bit_elements_cross_bytes_lsb_first() {
        // Elements 1, 2, 3, 4 packed: bits 0-5 = 1, 6-11 = 2, 12-17 = 3, 18-23 = 4.
        let v: u32 = 1 | (2 << 6) | (3 << 12) | (4 << 18);
        let b = v.to_le_bytes();
        let got: Vec<u32> = (0..4)
            .map(|i| bits_at(&b[..3], i * 6, 6).unwrap())
            .collect();
        assert_eq!(got, [1, 2, 3, 4]);
        assert_eq!(bits_at(&b[..2], 12, 6), None);
    }

    #[test]
    fn block_indices_and_padding_follow_the_spec() {
        // [10, 6] blocked along axis 0 by 4: 3 blocks per column, the axis
        // stored as 12 rows.
        let m = ParamMap {
            axis_len: 10,
            inner: 6,
            block: 4,
            stored_len: 12,
            count: 18,
            scale_buffer: 1,
            zero_point_buffer: None,
            scale_code: 1,
            scale_width: 4,
        };
        // (r, c) -> block c*3 + r/4.
        assert_eq!(m.index(0), 0);
        assert_eq!(m.index(5 * 6 + 2), 2 * 3 + 1);
        assert_eq!(m.index(9 * 6 + 5), 5 * 3 + 2);
        assert_eq!(m.stored(9 * 6 + 5), Some(59)); // one line: no shift
        // [3, 9] along axis 1 by 8: rows stored 16 wide.
        let m = ParamMap {
            axis_len: 9,
            inner: 1,
            block: 8,
            stored_len: 16,
            count: 6,
            ..m
        };
        assert_eq!(m.index(8), 1);
        assert_eq!(m.index(9), 2);
        assert_eq!(m.stored(9), Some(16));
        assert_eq!(m.stored(2 * 9 + 8), Some(2 * 16 + 8));
    }

    #[test]
    fn a_window_merges_close_rows_and_keeps_sub_byte_phases() {
        let plan = DrawPlan {
            code: 11,
            bits: 4,
            rows: 3,
            cols: 9,
            slices: 1,
            start: 0,
            quant: Quant {
                formula: Formula::None,
                scale: 1.0,
                zero_point: 0,
                map: None,
                name: "none",
            },
        };
        let w = window(&plan, 0, 3, 9).unwrap();
        // 27 nibbles: one read of 14 bytes; row 1 starts mid-byte.
        assert_eq!(w.reads, [(0, 14)]);
        assert_eq!(w.row_bits, [0, 36, 72]);
        assert!(window(&plan, 1, 3, 9).is_err());
        assert!(window(&plan, 0, 4, 9).is_err());
        // Mapped schemes index in 32 bits on the GPU: refused past that.
        let big = DrawPlan {
            rows: 1 << 10,
            cols: 1 << 10,
            slices: 1 << 13,
            quant: Quant {
                formula: Formula::Affine,
                map: Some(ParamMap {
                    axis_len: 1 << 13,
                    inner: 1 << 20,
                    block: 0,
                    stored_len: 1 << 13,
                    count: 1 << 13,
                    scale_buffer: 1,
                    zero_point_buffer: None,
                    scale_code: 1,
                    scale_width: 4,
                }),
                ..plan.quant
            },
            ..plan
        };
        assert!(window(&big, (1 << 12) - 1, 1, 1).is_ok());
        assert!(window(&big, 1 << 12, 1, 1).is_err());
        assert!(window(&big, 0, 1 << 10, 1 << 8).is_ok());
        assert!(window(&big, 0, 1 << 10, 1 << 9).is_err(), "over MAX_WINDOW");
    }
}
