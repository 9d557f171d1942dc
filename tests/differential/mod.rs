//! Our strict reader held against the format's reference decoder.
//!
//! The reference is the registry package `hurray-core` 0.1.0 (the decoder of
//! github.com/pgillet/hurray at `2a2db96`), depended on as `reference`. This
//! module is shared, through `#[path]`, by the cross-decoding test
//! (`tests/cross_decode.rs`) and the differential fuzz target
//! (`fuzz/fuzz_targets/differential.rs`).
//!
//! # Contract
//!
//! [`differ`] gives both decoders the same bytes: our [`TensorView::parse`]
//! (strict, exactly one descriptor) and `reference::TensorDescriptor::decode`.
//!
//! * Both accept: every field must be equal — header, shape, byte offset,
//!   every layout field (tiled levels included), every buffer handle and
//!   every section — and the result is [`Verdict::Agree`].
//! * Both reject: [`Verdict::BothReject`] (the two error models differ; the
//!   reasons are not compared).
//! * The reference accepts and we reject: the rejection must be one of the
//!   documented cases where we are stricter, each a [`Stricter`] variant
//!   naming the MUST it enforces (`docs/spec/README.md`, § Where this
//!   implementation is stricter than the format's reference decoder). The
//!   case is recognised from our error *and* confirmed on the values the
//!   reference decoded (a rejection for the right kind of reason on the
//!   wrong value is not explained). [`Verdict::Stricter`].
//! * Anything else — we accept and the reference rejects, the values
//!   differ, or an unexplained rejection — is a [`Finding`].
//!
//! Bytes after `descriptor_length` are [`Stricter::TrailingInput`] for
//! `parse`; the descriptor in front of them (our `parse_prefix`) must then
//! agree with the reference field by field as well.

use std::fmt;

use ::reference as theirs;
use hurray_core::layout::{Layout, Tiled};
use hurray_core::{DescriptorError, DescriptorErrorKind, Error, Scheme, TensorView};
use theirs::LayoutDescriptor as L;

/// A documented case where our reader rejects what the reference accepts:
/// one per row of the table in `docs/spec/README.md`, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stricter {
    /// `version_major = 0`.
    VersionMajorZero,
    /// `version_minor > 0` with `descriptor_length` past the end of the input.
    LengthPastInput,
    /// Input bytes after `descriptor_length` given to `parse`.
    TrailingInput,
    /// Buffers of one descriptor on different devices or memory classes.
    NotColocated,
    /// A (device, memory class) pair the per-device table forbids.
    MemoryClassNotAllowed,
    /// A buffer count other than the layout's plus the scheme's buffers.
    BufferCount,
    /// Buffers too small (or of the wrong fixed size) for what the layout
    /// addresses.
    BufferSizes,
    /// `byte_offset` past the end of buffer 0.
    ByteOffsetPastBuffer,
    /// `byte_offset != 0` on a sparse or block-paged tensor.
    ByteOffsetNotZero,
    /// `byte_offset` not a multiple of the element's natural alignment.
    ByteOffsetMisaligned,
    /// A rank-0 tensor with a layout other than row-major.
    ScalarNotRowMajor,
    /// CSR/CSC of rank ≠ 2, CSF of rank < 3, block-paged of rank ≠ 3.
    LayoutRank,
    /// A dynamic dimension in a shard.
    DynamicShard,
    /// A dynamic dimension on a quantization axis.
    DynamicQuantAxis,
    /// `page_size = 0` or `paged_axis ≠ 0`.
    PagedFields,
    /// `hilbert_rank ≠ rank`, or a side that is not `2^hilbert_order`.
    HilbertShape,
    /// A Morton dimension larger than `2^morton_bits`.
    MortonShape,
    /// Any rule of a quantization section on a layout other than
    /// block-paged (the reference does not parse it).
    QuantRules,
    /// Quantization parameter buffers of the wrong size.
    QuantParameterSizes,
    /// `scheme_version = 0`.
    SchemeVersionZero,
    /// Per-block asymmetric with the "none" zero-point index.
    PerBlockAsymmetricWithoutZeroPoint,
    /// Non-zero bytes after a scheme's fields.
    QuantPadding,
    /// The block-paged quantization rules the reference skips.
    PagedQuantRules,
    /// Statistics out of range.
    StatisticsRange,
    /// Statistics `nnz` different from the sparse layout's.
    StatisticsNnz,
    /// Extension type field rules for its family, and 0/1 booleans.
    ExtensionTypeFields,
    /// Extension type width ≥ 8 that is not a whole number of bytes.
    ExtensionTypeWidth,
    /// COO `is_sorted` other than 0 or 1.
    CooIsSorted,
    /// Overlay composite head with `member_count = 0`.
    OverlayWithoutMembers,
    /// A private layout id the reader has no agreement for.
    UnknownExtensionLayout,
    /// A strided or nested tile interior that reaches outside its tile.
    TileOverrun,
    /// A quantization section on a block-paged tensor (the one layout whose section the reference
    /// reads) breaking a rule the reference's reading skips — storage type,
    /// axis below the rank, block size against the axis, inline parameter
    /// ranges, parameter buffer indices.
    PagedQuantFields,
    /// A size the descriptor implies (element
    /// count, curve, pool, index or parameter count) does not fit a
    /// `uint64`; the reference computes no size.
    SizeOverflow,
}

impl Stricter {
    /// Every case, in the table's order.
    pub const ALL: &'static [Self] = &[
        Self::VersionMajorZero,
        Self::LengthPastInput,
        Self::TrailingInput,
        Self::NotColocated,
        Self::MemoryClassNotAllowed,
        Self::BufferCount,
        Self::BufferSizes,
        Self::ByteOffsetPastBuffer,
        Self::ByteOffsetNotZero,
        Self::ByteOffsetMisaligned,
        Self::ScalarNotRowMajor,
        Self::LayoutRank,
        Self::DynamicShard,
        Self::DynamicQuantAxis,
        Self::PagedFields,
        Self::HilbertShape,
        Self::MortonShape,
        Self::QuantRules,
        Self::QuantParameterSizes,
        Self::SchemeVersionZero,
        Self::PerBlockAsymmetricWithoutZeroPoint,
        Self::QuantPadding,
        Self::PagedQuantRules,
        Self::StatisticsRange,
        Self::StatisticsNnz,
        Self::ExtensionTypeFields,
        Self::ExtensionTypeWidth,
        Self::CooIsSorted,
        Self::OverlayWithoutMembers,
        Self::UnknownExtensionLayout,
        Self::TileOverrun,
        Self::PagedQuantFields,
        Self::SizeOverflow,
    ];

    /// The requirement identifiers the spec's table gives for the case.
    pub const fn requirements(self) -> &'static [&'static str] {
        match self {
            Self::VersionMajorZero => &["MD-VERSION-1"],
            Self::LengthPastInput => &["MD-LENGTH-2"],
            Self::TrailingInput => &["MD-LENGTH-4"],
            Self::NotColocated => &["BP-COLOC-1"],
            Self::MemoryClassNotAllowed => &["BP-CLASS-2", "BP-CLASS-3"],
            Self::BufferCount => &[
                "MD-BUFFERS-1",
                "LY-COO-2",
                "LY-CSR-2",
                "LY-CSF-2",
                "LY-PAGED-2",
                "QZ-BUFFER-1",
            ],
            Self::BufferSizes => &[
                "LY-DENSE-1",
                "LY-STRIDED-1",
                "LY-TILED-3",
                "LY-MORTON-2",
                "LY-HILBERT-2",
                "LY-COO-2",
                "LY-CSR-2",
                "LY-CSC-1",
                "LY-CSF-2",
                "LY-PAGED-2",
                "ET-SIZE-1",
                "ET-SIZE-2",
                "ET-SIZE-3",
            ],
            Self::ByteOffsetPastBuffer => &["MD-OFFSET-1"],
            Self::ByteOffsetNotZero => &["MD-OFFSET-2"],
            Self::ByteOffsetMisaligned => &["MD-OFFSET-3"],
            Self::ScalarNotRowMajor => &["MD-RANK-2"],
            Self::LayoutRank => &["LY-CSR-1", "LY-CSF-1", "LY-PAGED-1"],
            Self::DynamicShard => &["MD-SHARD-2"],
            Self::DynamicQuantAxis => &["QZ-AXIS-1"],
            Self::PagedFields => &["LY-PAGED-1"],
            Self::HilbertShape => &["LY-HILBERT-1"],
            Self::MortonShape => &["LY-MORTON-1"],
            Self::QuantRules => &[
                "QZ-HEADER-1",
                "QZ-TAG-1",
                "QZ-STORAGE-1",
                "QZ-TENSOR-1",
                "QZ-AXIS-1",
                "QZ-CHANNEL-1",
                "QZ-BLOCK-1",
                "QZ-NF-1",
                "QZ-MXFP-1",
                "QZ-BUFFER-1",
            ],
            Self::QuantParameterSizes => &[
                "QZ-CHANNEL-2",
                "QZ-BLOCK-2",
                "QZ-NF-1",
                "QZ-MXFP-1",
                "QZ-PAGED-1",
            ],
            Self::SchemeVersionZero => &["QZ-HEADER-1"],
            Self::PerBlockAsymmetricWithoutZeroPoint => &["QZ-BLOCK-1"],
            Self::QuantPadding => &["QZ-LENGTH-1"],
            Self::PagedQuantRules => &["QZ-PAGED-1"],
            Self::StatisticsRange => &["MD-STATS-2"],
            Self::StatisticsNnz => &["MD-STATS-3"],
            Self::ExtensionTypeFields => &["MD-EXT-2"],
            Self::ExtensionTypeWidth => &["MD-EXT-1"],
            Self::CooIsSorted => &["LY-COO-1"],
            Self::OverlayWithoutMembers => &["LY-COMPOSITE-3"],
            Self::UnknownExtensionLayout => &["LY-EXT-1"],
            Self::TileOverrun => &["LY-TILED-4"],
            Self::PagedQuantFields => &[
                "QZ-STORAGE-1",
                "QZ-TENSOR-1",
                "QZ-AXIS-1",
                "QZ-BLOCK-1",
                "QZ-NF-1",
                "QZ-MXFP-1",
                "QZ-BUFFER-1",
            ],
            Self::SizeOverflow => &["ET-SIZE-4"],
        }
    }
}

/// What one input did to the two decoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Both accept, with the same values.
    Agree,
    /// Both reject.
    BothReject,
    /// The reference accepts; we reject for a documented reason.
    Stricter(Stricter, DescriptorError),
}

/// A disagreement the documented cases do not explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding(pub String);

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Both decoders over `bytes`.
///
/// # Errors
/// A [`Finding`] when they disagree in a way no [`Stricter`] case explains.
pub fn differ(bytes: &[u8]) -> Result<Verdict, Finding> {
    let ours = TensorView::parse(bytes);
    let reference = theirs::TensorDescriptor::decode(bytes);
    match (ours, reference) {
        (Ok(view), Ok(t)) => {
            same_values(&view, &t).map_err(|e| Finding(format!("both accept, but {e}")))?;
            Ok(Verdict::Agree)
        }
        (Err(_), Err(_)) => Ok(Verdict::BothReject),
        (Ok(view), Err(e)) => Err(Finding(format!(
            "we accept (layout {:#04x}, {} buffers) what the reference rejects: {e:?}",
            view.layout().tag(),
            view.buffers().len()
        ))),
        (Err(err), Ok(t)) => {
            let Some(case) = classify(bytes, err, &t) else {
                return Err(Finding(format!(
                    "the reference accepts; we reject with {err} ({:?}), which no documented \
                     case explains (reference: layout {:#04x}, rank {}, {} buffers)",
                    err.kind(),
                    t.layout.tag(),
                    t.shape.rank(),
                    t.buffers.len()
                )));
            };
            if case == Stricter::TrailingInput {
                // The descriptor in front of the extra bytes must agree.
                let (view, _) = TensorView::parse_prefix(bytes).map_err(|e| {
                    Finding(format!(
                        "parse rejects trailing bytes but parse_prefix: {e}"
                    ))
                })?;
                same_values(&view, &t).map_err(|e| {
                    Finding(format!(
                        "both accept the descriptor before trailing bytes, but {e}"
                    ))
                })?;
            }
            Ok(Verdict::Stricter(case, err))
        }
    }
}

/// The `descriptor_length` field, if the input holds it.
fn declared_length(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(6..10)?.try_into().ok()?))
}

/// Bytes of the layout payload the reference decoded, from its values
/// (the wire layout of `docs/spec/layouts.md`).
fn layout_len(layout: &L, rank: usize) -> Option<usize> {
    fn tiled_len(t: &theirs::layout::TiledLayout, rank: usize) -> usize {
        let strided = |present: bool| if present { 8 * rank } else { 0 };
        8 * rank
            + 4
            + strided(t.outer_strides.is_some())
            + strided(t.inner_strides.is_some())
            + t.inner_tiled.as_deref().map_or(0, |n| tiled_len(n, rank))
    }
    Some(match layout {
        L::RowMajor | L::ColMajor => 0,
        L::Strided(_) => 8 * rank,
        L::Tiled(t) => tiled_len(t, rank),
        L::Morton(_) => 4 * rank,
        L::Coo(_) | L::Csr(_) | L::Csc(_) => 16,
        L::Csf(_) => 16 + 4 * rank,
        L::BlockPaged(_) => 32,
        L::Composite(_) | L::Hilbert(_) => 8,
        L::PrivateExtension(p) => 12 + p.extension_data.len(),
        _ => return None,
    })
}

/// Where the quantization section starts (its length field), from the
/// reference's values.
fn quantization_at(t: &theirs::TensorDescriptor) -> Option<usize> {
    let rank = t.shape.rank();
    Some(28 + 8 * rank + layout_len(&t.layout, rank)? + 1 + 16 * t.buffers.len())
}

/// The scale and zero-point buffer indices of a raw quantization payload
/// (`0xFFFFFFFF`: none), read by offset (`docs/spec/quantization.md`).
fn parameter_indices(q: &[u8]) -> [Option<u32>; 2] {
    let at = |o: usize| {
        q.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    match q.first() {
        Some(0x02) => [at(8), at(12)],
        Some(0x03) => [at(12), at(16)],
        Some(0x04 | 0x05) => [at(12), None],
        _ => [None, None],
    }
}

/// Which documented case, if any, explains our rejection `err` of `bytes`,
/// which the reference decoded to `t`.
#[allow(clippy::too_many_lines)]
fn classify(bytes: &[u8], err: DescriptorError, t: &theirs::TensorDescriptor) -> Option<Stricter> {
    use DescriptorErrorKind as K;
    use Stricter as S;
    let dims = t.shape.dims();
    let rank = dims.len();
    let declared = declared_length(bytes)? as usize;
    let paged = matches!(t.layout, L::BlockPaged(_));
    let buffer = |index: u32| t.buffers.get(index as usize);
    let dynamic = |v: &[u64]| v.contains(&u64::MAX);
    // The quantization section, `[length field, end)`, where there is one.
    let quant = t
        .quantization
        .as_ref()
        .zip(quantization_at(t))
        .map(|(q, at)| (q, at..at + 4 + q.len()));
    let in_quant = quant
        .as_ref()
        .is_some_and(|(_, span)| span.contains(&(err.offset() as usize)));
    let is_parameter_buffer = |index: u32| {
        quant
            .as_ref()
            .is_some_and(|(q, _)| parameter_indices(q).contains(&Some(index)))
    };
    let case = match err.kind() {
        K::UnsupportedVersion { major: 0, .. } if t.version_major == 0 => S::VersionMajorZero,
        K::Truncated { needed, available }
            if err.offset() == 6
                && t.version_minor > 0
                && needed == declared as u64
                && available == bytes.len() as u64
                && declared > bytes.len() =>
        {
            S::LengthPastInput
        }
        K::TrailingBytes { .. } if bytes.len() > declared => S::TrailingInput,
        K::NotColocated { index } => {
            let (first, other) = (t.buffers.first()?, buffer(index)?);
            let differs = first.device_tag().to_byte() != other.device_tag().to_byte()
                || first.memory_class().to_byte() != other.memory_class().to_byte();
            differs.then_some(S::NotColocated)?
        }
        K::Buffer {
            index,
            error:
                Error::MemoryClassNotAllowed {
                    device_tag,
                    memory_class,
                },
        } => {
            let b = buffer(index)?;
            let same = b.device_tag().to_byte() == device_tag.code()
                && b.memory_class().to_byte() == memory_class.code();
            same.then_some(S::MemoryClassNotAllowed)?
        }
        K::BufferCount { expected, found }
            if t.buffers.len() == usize::from(found) && expected != u32::from(found) =>
        {
            S::BufferCount
        }
        K::BufferTooSmall {
            index, byte_size, ..
        }
        | K::BufferSizeMismatch {
            index, byte_size, ..
        } if buffer(index)?.byte_size() == byte_size => {
            if is_parameter_buffer(index) {
                S::QuantParameterSizes
            } else {
                S::BufferSizes
            }
        }
        K::ExtentOutOfBounds { byte_size, .. } if buffer(0)?.byte_size() == byte_size => {
            S::BufferSizes
        }
        K::ByteOffsetOutOfRange {
            byte_offset,
            byte_size,
        } if t.byte_offset == byte_offset
            && buffer(0)?.byte_size() == byte_size
            && byte_offset > byte_size =>
        {
            S::ByteOffsetPastBuffer
        }
        K::ByteOffsetNotZero(offset)
            if t.byte_offset == offset
                && offset != 0
                && matches!(
                    t.layout,
                    L::Coo(_) | L::Csr(_) | L::Csc(_) | L::Csf(_) | L::BlockPaged(_)
                ) =>
        {
            S::ByteOffsetNotZero
        }
        K::ByteOffsetMisaligned {
            byte_offset,
            alignment,
        } if t.byte_offset == byte_offset && byte_offset % u64::from(alignment) != 0 => {
            S::ByteOffsetMisaligned
        }
        K::RankNotAllowed {
            layout_tag,
            rank: 0,
        } if rank == 0 && layout_tag == t.layout.tag() && layout_tag != 0x01 => {
            S::ScalarNotRowMajor
        }
        K::RankNotAllowed {
            layout_tag,
            rank: r,
        } if r as usize == rank
            && layout_tag == t.layout.tag()
            && match t.layout {
                L::Csr(_) | L::Csc(_) => rank != 2,
                L::Csf(_) => rank < 3,
                L::BlockPaged(_) => rank != 3,
                _ => false,
            } =>
        {
            S::LayoutRank
        }
        K::DynamicDimension { field, axis } => {
            let axis = axis as usize;
            let shard = t.shard.as_ref();
            let in_shard = match field {
                "parent_shape" => {
                    shard.is_some_and(|s| s.parent_shape.get(axis) == Some(&u64::MAX))
                }
                "shard_offset" => {
                    shard.is_some_and(|s| s.shard_offset.get(axis) == Some(&u64::MAX))
                }
                // The shape itself: named at its own offset by the shard
                // check, inside the quantization section by the axis check.
                "shape" => shard.is_some() && !in_quant && dims.get(axis) == Some(&u64::MAX),
                _ => false,
            };
            if in_shard {
                S::DynamicShard
            } else if field == "shape" && in_quant && dims.get(axis) == Some(&u64::MAX) {
                S::DynamicQuantAxis
            } else {
                return None;
            }
        }
        K::InvalidValue {
            field: "page_size" | "paged_axis",
            ..
        } => match &t.layout {
            L::BlockPaged(p) if p.page_size == 0 || p.paged_axis != 0 => S::PagedFields,
            _ => return None,
        },
        K::InvalidValue {
            field: "hilbert_rank",
            value,
        } => match &t.layout {
            L::Hilbert(h)
                if u64::from(h.hilbert_rank) == value && h.hilbert_rank as usize != rank =>
            {
                S::HilbertShape
            }
            _ => return None,
        },
        K::ShapeDoesNotFitCurve { axis, size } if dims.get(axis as usize) == Some(&size) => {
            match &t.layout {
                L::Hilbert(h) => {
                    let side = 1u64.checked_shl(h.hilbert_order);
                    (side != Some(size)).then_some(S::HilbertShape)?
                }
                L::Morton(m) => {
                    let bits = *m.morton_bits.get(axis as usize)?;
                    let fits = bits >= 64 || size <= 1u64 << bits;
                    (!fits).then_some(S::MortonShape)?
                }
                _ => return None,
            }
        }
        K::StatisticsInconsistent { field: "nnz" } => {
            let s = t.statistics.as_ref()?;
            let layout_nnz = match &t.layout {
                L::Coo(c) => c.nnz,
                L::Csr(c) => c.nnz,
                L::Csc(c) => c.nnz,
                L::Csf(c) => c.nnz,
                _ => return None,
            };
            (s.computed_mask.nnz_valid() && s.nnz != layout_nnz).then_some(S::StatisticsNnz)?
        }
        K::StatisticsInconsistent { .. } if t.statistics.is_some() => S::StatisticsRange,
        K::InvalidValue {
            field: "bit_width",
            value,
        } => {
            let e = t.extension_type.as_ref()?;
            let whole_bytes = e.bit_width >= 8 && e.bit_width % 8 == 0;
            (u64::from(e.bit_width) == value && !whole_bytes).then_some(S::ExtensionTypeWidth)?
        }
        K::InvalidValue {
            field:
                "is_float" | "is_signed" | "sign_bits" | "exponent_bits" | "mantissa_bits"
                | "exponent_bias" | "has_nan" | "has_inf",
            ..
        } if t.extension_type.is_some() => S::ExtensionTypeFields,
        K::InvalidValue {
            field: "is_sorted",
            value,
        } if matches!(t.layout, L::Coo(_)) && value > 1 => S::CooIsSorted,
        K::InvalidValue {
            field: "member_count",
            value: 0,
        } => match &t.layout {
            L::Composite(c) if c.member_count == 0 && c.rule.rule_byte() == 2 => {
                S::OverlayWithoutMembers
            }
            _ => return None,
        },
        K::UnknownExtensionLayout(id) => match &t.layout {
            L::PrivateExtension(p) if p.extension_layout_id == id => S::UnknownExtensionLayout,
            _ => return None,
        },
        K::TileOverrun { .. } if matches!(t.layout, L::Tiled(_)) => S::TileOverrun,
        // The quantization section, on a block-paged tensor (the only one
        // whose section the reference parses).
        K::InvalidValue {
            field: "scheme_version",
            value: 0,
        } if paged && in_quant => S::SchemeVersionZero,
        K::InvalidValue {
            field: "zero_point_buffer_index",
            value,
        } if paged && in_quant => {
            let (q, _) = quant.as_ref()?;
            let asymmetric_per_block =
                q.first() == Some(&0x03) && q.get(2).is_some_and(|f| f & 1 == 0);
            (asymmetric_per_block && value == u64::from(u32::MAX))
                .then_some(S::PerBlockAsymmetricWithoutZeroPoint)?
        }
        K::ReservedNonZero {
            field: "quantization padding",
        } if paged && in_quant => S::QuantPadding,
        K::InvalidValue {
            field: "axis" | "block_size",
            ..
        } if paged && in_quant && matches!(quant.as_ref()?.0.first(), Some(0x04 | 0x05)) => {
            S::PagedQuantRules
        }
        K::StorageTypeNotAllowed { .. }
        | K::AxisOutOfRange { .. }
        | K::ParameterOutOfRange { .. }
        | K::InvalidValue {
            field: "block_size",
            ..
        } if paged && in_quant => S::PagedQuantFields,
        K::ParameterBufferIndex { .. } if paged && t.quantization.is_some() => S::PagedQuantFields,
        K::Overflow { .. } if !dynamic(dims) => S::SizeOverflow,
        // Anything in a section the reference never parses.
        _ if !paged && in_quant => S::QuantRules,
        K::ParameterBufferIndex { .. } if !paged && t.quantization.is_some() => S::QuantRules,
        _ => return None,
    };
    Some(case)
}

/// Field-by-field equality of our view and the reference's value.
///
/// # Errors
/// The first field that differs, named.
pub fn same_values(ours: &TensorView<'_>, t: &theirs::TensorDescriptor) -> Result<(), String> {
    macro_rules! same {
        ($what:expr, $a:expr, $b:expr) => {{
            let (a, b) = ($a, $b);
            if a != b {
                return Err(format!(
                    "{} differs: ours {:?}, reference {:?}",
                    $what, a, b
                ));
            }
        }};
    }
    let (major, minor) = ours.version();
    same!("version_major", major, t.version_major);
    same!("version_minor", minor, t.version_minor);
    same!("flags", ours.flags().bits(), t.flags().0);
    same!("type_tag", ours.element_type().code(), t.element_type.tag());
    same!(
        "shape",
        ours.shape().iter().collect::<Vec<_>>(),
        t.shape.dims()
    );
    same!("byte_offset", ours.byte_offset(), t.byte_offset);
    same_layout(ours.layout(), &t.layout)?;

    same!("buffer_count", ours.buffers().len(), t.buffers.len());
    for (i, (a, b)) in ours.buffers().iter().zip(&t.buffers).enumerate() {
        same!(
            format!("buffer[{i}].byte_size"),
            a.byte_size(),
            b.byte_size()
        );
        same!(
            format!("buffer[{i}].alignment"),
            a.alignment(),
            b.alignment()
        );
        same!(
            format!("buffer[{i}].device_tag"),
            a.device_tag().code(),
            b.device_tag().to_byte()
        );
        same!(
            format!("buffer[{i}].sync_mode"),
            a.sync_mode().code(),
            b.sync_mode().to_byte()
        );
        same!(
            format!("buffer[{i}].memory_class"),
            a.memory_class().code(),
            b.memory_class().to_byte()
        );
    }

    match (ours.quantization(), &t.quantization) {
        (None, None) => {}
        (Some(q), Some(raw)) => same_quantization(&q.scheme, q.padding, raw)?,
        (a, b) => same!("quantization present", a.is_some(), b.is_some()),
    }
    match (ours.shard(), &t.shard) {
        (None, None) => {}
        (Some(s), Some(r)) => {
            same!(
                "shard.parent_shape",
                s.parent_shape.iter().collect::<Vec<_>>(),
                &r.parent_shape[..]
            );
            same!(
                "shard.shard_offset",
                s.shard_offset.iter().collect::<Vec<_>>(),
                &r.shard_offset[..]
            );
        }
        (a, b) => same!("shard present", a.is_some(), b.is_some()),
    }
    match (ours.statistics(), &t.statistics) {
        (None, None) => {}
        (Some(s), Some(r)) => {
            let e = s.entry();
            same!(
                "statistics.computed_mask",
                e.computed_mask.get(),
                r.computed_mask.0
            );
            same!("statistics.nnz", e.nnz.get(), r.nnz);
            for (name, a, b) in [
                ("sparsity_ratio", e.sparsity_ratio.get(), r.sparsity_ratio),
                ("value_min", e.value_min.get(), r.value_min),
                ("value_max", e.value_max.get(), r.value_max),
                ("value_abs_max", e.value_abs_max.get(), r.value_abs_max),
                ("value_mean", e.value_mean.get(), r.value_mean),
                ("value_stddev", e.value_stddev.get(), r.value_stddev),
            ] {
                // Bit-exact: NaN payloads and signed zeros included.
                same!(format!("statistics.{name}"), a.to_bits(), b.to_bits());
            }
            same!("statistics.nm_n", e.nm_n, r.nm_n);
            same!("statistics.nm_m", e.nm_m, r.nm_m);
            same!("statistics.has_nan", e.has_nan != 0, r.has_nan);
            same!("statistics.has_inf", e.has_inf != 0, r.has_inf);
        }
        (a, b) => same!("statistics present", a.is_some(), b.is_some()),
    }
    match (ours.extension_type(), &t.extension_type) {
        (None, None) => {}
        (Some(x), Some(r)) => {
            let e = x.entry();
            same!("extension_type.bit_width", e.bit_width.get(), r.bit_width);
            same!(
                "extension_type.packing_factor",
                e.packing_factor,
                r.packing_factor
            );
            same!("extension_type.is_float", e.is_float != 0, r.is_float);
            same!("extension_type.is_signed", e.is_signed != 0, r.is_signed);
            same!("extension_type.sign_bits", e.sign_bits, r.sign_bits);
            same!(
                "extension_type.exponent_bits",
                e.exponent_bits,
                r.exponent_bits
            );
            same!(
                "extension_type.mantissa_bits",
                e.mantissa_bits,
                r.mantissa_bits
            );
            same!(
                "extension_type.exponent_bias",
                e.exponent_bias.get(),
                r.exponent_bias
            );
            same!("extension_type.has_nan", e.has_nan != 0, r.has_nan);
            same!("extension_type.has_inf", e.has_inf != 0, r.has_inf);
        }
        (a, b) => same!("extension type present", a.is_some(), b.is_some()),
    }
    same!(
        "composite_member.member_role",
        ours.member_role().map(|m| m.code()),
        t.composite_member.map(|m| m.member_role.wire_byte())
    );
    Ok(())
}

/// Every field of the layout.
fn same_layout(ours: Layout<'_>, theirs: &L) -> Result<(), String> {
    let differs = |what: &str, a: &dyn fmt::Debug, b: &dyn fmt::Debug| {
        Err(format!(
            "layout {what} differs: ours {a:?}, reference {b:?}"
        ))
    };
    macro_rules! same {
        ($what:expr, $a:expr, $b:expr) => {{
            let (a, b) = ($a, $b);
            if a != b {
                return differs($what, &a, &b);
            }
        }};
    }
    same!("tag", ours.tag(), theirs.tag());
    match (ours, theirs) {
        (Layout::RowMajor, L::RowMajor) | (Layout::ColumnMajor, L::ColMajor) => {}
        (Layout::Strided(s), L::Strided(r)) => {
            same!("strides", s.iter().collect::<Vec<_>>(), &r.strides[..]);
        }
        (Layout::Tiled(t), L::Tiled(r)) => same_tiles(t, r)?,
        (Layout::Morton(b), L::Morton(r)) => {
            same!(
                "morton_bits",
                b.iter().collect::<Vec<_>>(),
                &r.morton_bits[..]
            );
        }
        (Layout::Coo(c), L::Coo(r)) => {
            same!("nnz", c.nnz, r.nnz);
            same!("is_sorted", c.sorted, r.is_sorted);
        }
        (Layout::Csr(c), L::Csr(r)) => same!("nnz", c.nnz, r.nnz),
        (Layout::Csc(c), L::Csc(r)) => same!("nnz", c.nnz, r.nnz),
        (Layout::Csf(c), L::Csf(r)) => {
            same!("nnz", c.nnz(), r.nnz);
            same!(
                "mode_order",
                c.mode_order().iter().collect::<Vec<_>>(),
                &r.mode_order[..]
            );
        }
        (Layout::BlockPaged(p), L::BlockPaged(r)) => {
            same!("page_size", p.page_size, r.page_size);
            same!("num_pages", p.num_pages, r.num_pages);
            same!("paged_axis", 0, r.paged_axis);
            same!("num_seqs", p.num_seqs, r.num_seqs);
            same!("kv_role", p.kv_role.code(), r.kv_role.wire_byte());
            same!("layer_index", p.layer_index, r.layer_index);
            same!(
                "block_table_index_type",
                u8::from(p.wide_indices),
                r.block_table_index_type.wire_byte()
            );
        }
        (Layout::Composite(h), L::Composite(r)) => {
            same!("composition_rule", h.rule.code(), r.rule.rule_byte());
            same!("combine_op", h.combine_op.code(), r.rule.combine_op_byte());
            same!("member_count", h.member_count, r.member_count);
        }
        (Layout::Hilbert(h), L::Hilbert(r)) => {
            same!("hilbert_order", h.order, r.hilbert_order);
            same!("hilbert_rank", h.rank, r.hilbert_rank);
        }
        (Layout::Extension(e), L::PrivateExtension(r)) => {
            same!("tag", e.tag(), r.tag);
            same!("extension_layout_id", e.id(), r.extension_layout_id);
            same!("extension_data", e.data(), &r.extension_data[..]);
        }
        (a, b) => return differs("variant", &a, b),
    }
    Ok(())
}

/// Every level of a tiled layout, outermost first.
fn same_tiles(ours: Tiled<'_>, theirs: &theirs::layout::TiledLayout) -> Result<(), String> {
    let mut level = Some(theirs);
    for (depth, l) in ours.levels().enumerate() {
        let Some(r) = level else {
            return Err(format!(
                "tiled: we have a level {depth}, the reference does not"
            ));
        };
        let field = |name: &str| format!("tiled level {depth} {name}");
        let same = |name: &str, equal: bool, a: &dyn fmt::Debug, b: &dyn fmt::Debug| {
            if equal {
                Ok(())
            } else {
                Err(format!(
                    "{} differs: ours {a:?}, reference {b:?}",
                    field(name)
                ))
            }
        };
        let tile_shape: Vec<u64> = l.tile_shape.iter().collect();
        same(
            "tile_shape",
            tile_shape == r.tile_shape,
            &tile_shape,
            &r.tile_shape,
        )?;
        same(
            "outer_layout",
            l.outer_layout == r.outer_layout,
            &l.outer_layout,
            &r.outer_layout,
        )?;
        same(
            "inner_layout",
            l.inner_layout == r.inner_layout,
            &l.inner_layout,
            &r.inner_layout,
        )?;
        let outer: Option<Vec<i64>> = l.outer_strides.map(|s| s.iter().collect());
        let r_outer = r.outer_strides.as_ref().map(|s| s.strides.clone());
        same("outer_strides", outer == r_outer, &outer, &r_outer)?;
        let inner: Option<Vec<i64>> = l.inner_strides.map(|s| s.iter().collect());
        let r_inner = r.inner_strides.as_ref().map(|s| s.strides.clone());
        same("inner_strides", inner == r_inner, &inner, &r_inner)?;
        level = r.inner_tiled.as_deref();
    }
    match level {
        None => Ok(()),
        Some(_) => Err(format!(
            "tiled: the reference has more than our {} levels",
            ours.depth()
        )),
    }
}

/// Our typed quantization section against the reference's raw bytes (and
/// its own typed reading of them).
fn same_quantization(s: &Scheme<'_>, padding: u32, raw: &[u8]) -> Result<(), String> {
    let len = s.encoded_len() + padding as usize;
    if len != raw.len() {
        return Err(format!(
            "quantization_length differs: ours {len}, reference {}",
            raw.len()
        ));
    }
    if let Scheme::Private {
        tag,
        version,
        flags,
        payload,
    } = *s
    {
        let header = [tag, version, flags.to_le_bytes()[0], flags.to_le_bytes()[1]];
        return if raw.get(..4) == Some(&header[..]) && raw.get(4..) == Some(payload) {
            Ok(())
        } else {
            Err("private quantization payload differs".into())
        };
    }
    let (q, _) = theirs::QuantizationDescriptor::decode(raw).map_err(|e| {
        format!("we accept the quantization section, the reference's own reading rejects it: {e:?}")
    })?;
    use theirs::QuantizationDescriptor as Q;
    let ours = (s.tag(), s.blocks(), s.parameter_buffers());
    let (reference, scale_type) = match &q {
        Q::PerTensorAffine(p) => {
            match *s {
                Scheme::PerTensor { scale, zero_point }
                    if scale.to_bits() != p.scale().to_bits() || zero_point != p.zero_point() =>
                {
                    return Err(format!(
                        "per-tensor parameters differ: ours ({scale}, {zero_point}), reference \
                         ({}, {})",
                        p.scale(),
                        p.zero_point()
                    ));
                }
                _ => {}
            }
            ((0x01, None, (None, None)), None)
        }
        Q::PerChannelAffine(p) => (
            (
                0x02,
                None,
                (Some(p.scale_buffer_index()), p.zero_point_buffer_index()),
            ),
            None,
        ),
        Q::PerBlockAffine(p) => (
            (
                0x03,
                Some((p.axis(), p.block_size())),
                (Some(p.scale_buffer_index()), p.zero_point_buffer_index()),
            ),
            Some(p.scale_type().tag()),
        ),
        Q::Nf4(p) => (
            (
                0x04,
                Some((p.axis(), p.block_size())),
                (Some(p.scale_buffer_index()), None),
            ),
            None,
        ),
        Q::Mxfp(p) => (
            (
                0x05,
                Some((p.axis(), p.block_size())),
                (Some(p.scale_buffer_index()), None),
            ),
            None,
        ),
    };
    if ours != reference {
        return Err(format!(
            "quantization (tag, (axis, block), (scale, zero point)) differs: ours {ours:?}, \
             reference {reference:?}"
        ));
    }
    match (s, &q) {
        (Scheme::PerChannel { axis, .. }, Q::PerChannelAffine(p)) if *axis != p.axis() => {
            return Err(format!(
                "per-channel axis differs: ours {axis}, reference {}",
                p.axis()
            ));
        }
        _ => {}
    }
    match (s, scale_type) {
        (Scheme::PerBlock { scale_type: t, .. }, Some(r)) if t.code() != r => {
            return Err(format!(
                "scale_type_tag differs: ours {t:?}, reference {r:#04x}"
            ));
        }
        _ => {}
    }
    Ok(())
}
