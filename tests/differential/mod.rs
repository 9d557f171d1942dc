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
//!   The confirmation recomputes, from the reference's values (or the raw
//!   bytes at the offset our error names), the field and value that make us
//!   stricter, with the spec's rules restated here: the size a buffer must
//!   have (`needed`/`expected` of our error, by `size_rule`), a strided
//!   extent, the `u64` overflow of the size named by `Overflow { what }`,
//!   the statistics range, the extension type's family rules, the tile
//!   overrun's level, every rule of a quantization section (its raw fields,
//!   storage types, axis, block size, parameter indices). Not modelled, so
//!   only the direction of the error is checked: the sizes of strided-tiled,
//!   CSF, block-paged and extension-layout buffers, tiled extents and the
//!   tile-grid and CSF-pointer overflows.
//! * Anything else — we accept and the reference rejects, the values
//!   differ, or a rejection the confirmation does not bear out — is a
//!   [`Finding`].
//!
//! Bytes after `descriptor_length` are [`Stricter::TrailingInput`] for
//! `parse`; the descriptor in front of them (our `parse_prefix`) must then
//! agree with the reference field by field as well.

use std::fmt;

use ::reference as theirs;
use hurray_core::layout::{Layout, Tiled};
use hurray_core::{DescriptorError, DescriptorErrorKind, Error, FieldName, Scheme, TensorView};
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
    // The section's payload, and where our error points into it.
    let section = quant.as_ref().map(|(q, span)| Quant {
        at: span.start + 4,
        q: q.as_slice(),
    });
    let quant_broken = |kind| {
        section.as_ref().is_some_and(|s| {
            let pos = (err.offset() as usize).checked_sub(s.at);
            quant_rule_broken(kind, pos, s, t)
        })
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
        // The size the spec requires, recomputed where modelled
        // (`size_rule`); elsewhere at least the direction of the error.
        K::BufferTooSmall {
            index,
            needed,
            byte_size,
        } if buffer(index)?.byte_size() == byte_size
            && needed > byte_size
            && size_rule(t, index).is_none_or(|n| n == u128::from(needed)) =>
        {
            if is_parameter_buffer(index) {
                S::QuantParameterSizes
            } else {
                S::BufferSizes
            }
        }
        K::BufferSizeMismatch {
            index,
            expected,
            byte_size,
        } if buffer(index)?.byte_size() == byte_size
            && expected != byte_size
            && size_rule(t, index).is_none_or(|n| n == u128::from(expected)) =>
        {
            if is_parameter_buffer(index) {
                S::QuantParameterSizes
            } else {
                S::BufferSizes
            }
        }
        K::ExtentOutOfBounds {
            start,
            end,
            byte_size,
        } if buffer(0)?.byte_size() == byte_size
            && (start < 0 || u64::try_from(end).is_ok_and(|e| e > byte_size))
            && strided_extent(t)
                .is_none_or(|(lo, hi)| lo == i128::from(start) && hi == i128::from(end)) =>
        {
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
                FieldName::ParentShape => {
                    shard.is_some_and(|s| s.parent_shape.get(axis) == Some(&u64::MAX))
                }
                FieldName::ShardOffset => {
                    shard.is_some_and(|s| s.shard_offset.get(axis) == Some(&u64::MAX))
                }
                // The shape itself: named at its own offset by the shard
                // check, inside the quantization section by the axis check.
                FieldName::Shape => {
                    shard.is_some() && !in_quant && dims.get(axis) == Some(&u64::MAX)
                }
                _ => false,
            };
            if in_shard {
                S::DynamicShard
            } else if field == FieldName::Shape
                && in_quant
                && dims.get(axis) == Some(&u64::MAX)
                && section.as_ref()?.field("axis") == Some(axis as u64)
            {
                S::DynamicQuantAxis
            } else {
                return None;
            }
        }
        K::InvalidValue {
            field: FieldName::PageSize | FieldName::PagedAxis,
            ..
        } => match &t.layout {
            L::BlockPaged(p) if p.page_size == 0 || p.paged_axis != 0 => S::PagedFields,
            _ => return None,
        },
        K::InvalidValue {
            field: FieldName::HilbertRank,
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
        K::StatisticsInconsistent {
            field: FieldName::Nnz,
        } => {
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
        K::StatisticsInconsistent { field }
            if statistics_out_of_range(
                field.name(),
                t,
                bytes.get(err.offset() as usize).copied(),
            ) =>
        {
            S::StatisticsRange
        }
        K::InvalidValue {
            field: FieldName::BitWidth,
            value,
        } => {
            let e = t.extension_type.as_ref()?;
            let whole_bytes = e.bit_width >= 8 && e.bit_width % 8 == 0;
            (u64::from(e.bit_width) == value && !whole_bytes).then_some(S::ExtensionTypeWidth)?
        }
        K::InvalidValue {
            field:
                field @ (FieldName::IsFloat
                | FieldName::IsSigned
                | FieldName::SignBits
                | FieldName::ExponentBits
                | FieldName::MantissaBits
                | FieldName::ExponentBias
                | FieldName::HasNan
                | FieldName::HasInf),
            value,
        } if extension_field_invalid(
            field.name(),
            value,
            t,
            bytes.get(err.offset() as usize..).unwrap_or_default(),
        ) =>
        {
            S::ExtensionTypeFields
        }
        K::InvalidValue {
            field: FieldName::IsSorted,
            value,
        } if matches!(t.layout, L::Coo(_)) && value > 1 => S::CooIsSorted,
        K::InvalidValue {
            field: FieldName::MemberCount,
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
        K::TileOverrun { level } if tile_overrun(t) == Some(level) => S::TileOverrun,
        // The quantization section, on a block-paged tensor (the only one
        // whose section the reference parses).
        K::InvalidValue {
            field: FieldName::SchemeVersion,
            value: 0,
        } if paged && in_quant && quant_broken(err.kind()) => S::SchemeVersionZero,
        K::InvalidValue {
            field: FieldName::ZeroPointBufferIndex,
            value,
        } if paged && in_quant => {
            let (q, _) = quant.as_ref()?;
            let asymmetric_per_block =
                q.first() == Some(&0x03) && q.get(2).is_some_and(|f| f & 1 == 0);
            (asymmetric_per_block && value == u64::from(u32::MAX))
                .then_some(S::PerBlockAsymmetricWithoutZeroPoint)?
        }
        K::ReservedNonZero {
            field: FieldName::QuantizationPadding,
        } if paged && in_quant && quant_broken(err.kind()) => S::QuantPadding,
        K::InvalidValue {
            field: FieldName::Axis | FieldName::BlockSize,
            ..
        } if paged
            && in_quant
            && matches!(quant.as_ref()?.0.first(), Some(0x04 | 0x05))
            && quant_broken(err.kind()) =>
        {
            S::PagedQuantRules
        }
        K::StorageTypeNotAllowed { .. }
        | K::AxisOutOfRange { .. }
        | K::ParameterOutOfRange { .. }
        | K::InvalidValue {
            field: FieldName::BlockSize,
            ..
        } if paged && in_quant && quant_broken(err.kind()) => S::PagedQuantFields,
        K::ParameterBufferIndex { .. } if paged && quant_broken(err.kind()) => S::PagedQuantFields,
        K::Overflow { what } if !dynamic(dims) && overflows(what.name(), t) => S::SizeOverflow,
        // A rule of a section the reference never parses, confirmed on its
        // raw bytes.
        _ if !paged && in_quant && quant_broken(err.kind()) => S::QuantRules,
        K::ParameterBufferIndex { .. } if !paged && quant_broken(err.kind()) => S::QuantRules,
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

// --- Confirmations on the reference's values ---------------------------------
//
// Each documented case is recognised from our error and then confirmed by
// recomputing, from the values the reference decoded (or from the raw bytes
// at the offset our error names), the field and value that make us stricter.
// The rules are restated here from `docs/spec/` independently of the core's
// code. A rejection whose claim does not hold on those values is no
// documented case: `classify` returns `None` and `differ` reports a finding.

/// Where the section's payload starts (after its length field), the quantization
/// section's raw bytes, and the scheme tag.
struct Quant<'a> {
    /// Offset of the payload in the descriptor.
    at: usize,
    /// The payload (`quantization_length` bytes).
    q: &'a [u8],
}

impl Quant<'_> {
    fn u8_at(&self, o: usize) -> Option<u64> {
        self.q.get(o).map(|&b| u64::from(b))
    }
    fn u32_at(&self, o: usize) -> Option<u64> {
        Some(u64::from(u32::from_le_bytes(
            self.q.get(o..o + 4)?.try_into().ok()?,
        )))
    }
    fn tag(&self) -> Option<u8> {
        self.q.first().copied()
    }
    /// The scheme's length (`docs/spec/quantization.md`, the scheme table).
    fn scheme_len(&self) -> Option<usize> {
        Some(match self.tag()? {
            0x01 | 0x04 | 0x05 => 16,
            0x02 => 20,
            0x03 => 24,
            _ => return None,
        })
    }
    /// A named field of the payload, by the spec's field maps.
    fn field(&self, name: &str) -> Option<u64> {
        let tag = self.tag()?;
        match (tag, name) {
            (_, "scheme_tag") => self.u8_at(0),
            (_, "scheme_version") => self.u8_at(1),
            (0x02..=0x05, "axis") => self.u32_at(4),
            (0x03..=0x05, "block_size") => self.u32_at(8),
            (0x02, "zero_point_buffer_index") => self.u32_at(12),
            (0x03, "zero_point_buffer_index") => self.u32_at(16),
            (0x02, "scale_type_tag") => self.u8_at(16),
            (0x03, "scale_type_tag") => self.u8_at(20),
            _ => None,
        }
    }
    fn flags(&self) -> Option<u16> {
        Some(u16::from_le_bytes(self.q.get(2..4)?.try_into().ok()?))
    }
    /// The reserved run of the scheme's own fields.
    fn reserved(&self, field: &str) -> Option<&[u8]> {
        let (tag, range) = match field {
            "per_tensor._reserved" => (0x01, 12..16),
            "per_channel._reserved" => (0x02, 17..20),
            "per_block._reserved" => (0x03, 21..24),
            _ => return None,
        };
        (self.tag() == Some(tag))
            .then(|| self.q.get(range))
            .flatten()
    }
}

/// Bits per element of the reference's element type (an extension type's
/// own `bit_width`), `None` when unknown.
fn element_bits(t: &theirs::TensorDescriptor) -> Option<u64> {
    match t.element_type.bit_width() {
        0 => t.extension_type.as_ref().map(|e| u64::from(e.bit_width)),
        b => Some(u64::from(b)),
    }
}

/// Bytes of `n` contiguous elements of the reference's element type, in
/// `u128` so that no size wraps ([ET-SIZE-1] to [ET-SIZE-3]).
fn elements_bytes(t: &theirs::TensorDescriptor, n: u128) -> Option<u128> {
    if let (0, Some(e)) = (t.element_type.bit_width(), t.extension_type.as_ref()) {
        return Some(if e.bit_width < 8 {
            n.div_ceil(u128::from(e.packing_factor.max(1)))
        } else {
            n * u128::from(e.bit_width) / 8
        });
    }
    Some(match element_bits(t)? {
        6 => n.div_ceil(4).saturating_mul(3),
        b @ (1 | 2 | 4) => n.div_ceil(u128::from(8 / b)),
        b => n.saturating_mul(u128::from(b / 8)),
    })
}

fn product(v: impl IntoIterator<Item = u64>) -> u128 {
    v.into_iter()
        .fold(1u128, |acc, d| acc.saturating_mul(u128::from(d)))
}

/// The product of every dimension but `axis` (saturating).
fn off_axis_product(dims: &[u64], axis: usize) -> u128 {
    product(
        dims.iter()
            .enumerate()
            .filter(|&(j, _)| j != axis)
            .map(|(_, &d)| d),
    )
}

/// The quantization blocks of a block scheme on a tensor of shape `dims`:
/// `(⌈S / K⌉ · Π_{j≠axis} shape[j], K)` (`docs/spec/quantization.md`, Blocks).
/// Whether scales and zero points that share one buffer need more than
/// `u64` bytes together (the core sums the two arrays' bytes in `u64`).
fn shared_parameters_overflow(q: &Quant<'_>, dims: &[u64]) -> bool {
    const MAX: u128 = u64::MAX as u128;
    let [Some(scale), Some(zero)] = parameter_indices(q.q) else {
        return false;
    };
    if scale != zero {
        return false;
    }
    let (count, width) = match q.tag() {
        Some(0x02) => (
            q.field("axis")
                .and_then(|a| dims.get(a as usize))
                .map(|&d| u128::from(d)),
            4,
        ),
        Some(0x03) => (
            blocks(q, dims).map(|(b, _)| b),
            if matches!(q.field("scale_type_tag"), Some(0x01 | 0x02)) {
                2
            } else {
                4
            },
        ),
        _ => (None, 0),
    };
    count.is_some_and(|c| c.saturating_mul(width + 4) > MAX)
}

fn blocks(q: &Quant<'_>, dims: &[u64]) -> Option<(u128, u128)> {
    let axis = q.field("axis")? as usize;
    let k = q.field("block_size")?;
    let s = *dims.get(axis)?;
    if k == 0 {
        return None;
    }
    let others = off_axis_product(dims, axis);
    Some((
        u128::from(s.div_ceil(k)).saturating_mul(others),
        u128::from(k),
    ))
}

/// The bytes buffer `index` must hold by the spec's size rules, computed from
/// the reference's values: `Some(bytes)` where the rule is modelled here
/// (row- and column-major with the padded blocks of a block scheme, Morton,
/// Hilbert, COO, CSR, CSC and every parameter buffer of a non-paged tensor);
/// `None` otherwise (strided and tiled extents, CSF, block-paged,
/// extensions), where only the direction of the error is checked.
fn size_rule(t: &theirs::TensorDescriptor, index: u32) -> Option<u128> {
    let dims = t.shape.dims();
    let offset = u128::from(t.byte_offset);
    let quant = t
        .quantization
        .as_deref()
        .zip(quantization_at(t))
        .map(|(q, at)| Quant { at: at + 4, q });
    if let Some(q) = &quant {
        if !matches!(t.layout, L::BlockPaged(_)) {
            let [scale, zero] = parameter_indices(q.q);
            let (is_scale, is_zero) = (scale == Some(index), zero == Some(index));
            if is_scale || is_zero {
                let (count, scale_bytes) = match q.tag()? {
                    0x02 => (u128::from(*dims.get(q.field("axis")? as usize)?), 4),
                    0x03 => (
                        blocks(q, dims)?.0,
                        match q.field("scale_type_tag")? {
                            0x01 | 0x02 => 2,
                            _ => 4,
                        },
                    ),
                    0x04 => (blocks(q, dims)?.0, 4),
                    0x05 => (blocks(q, dims)?.0, 1),
                    _ => return None,
                };
                let zero_bytes = 4;
                return Some(
                    count * (u128::from(is_scale) * scale_bytes + u128::from(is_zero) * zero_bytes),
                );
            }
        }
    }
    let elements = |n: u128| elements_bytes(t, n);
    match (&t.layout, index) {
        (L::RowMajor | L::ColMajor, 0) => {
            let mut n = product(dims.iter().copied());
            // A block scheme's partial last block is stored whole.
            if let Some(q) = quant
                .as_ref()
                .filter(|q| matches!(q.tag(), Some(0x03 | 0x04)))
            {
                let (b, k) = blocks(q, dims)?;
                n = b.saturating_mul(k);
            }
            Some(offset + elements(n)?)
        }
        (L::Morton(m), 0) => {
            let bits: u32 = m.morton_bits.iter().sum();
            Some(offset + elements(1u128.checked_shl(bits)?)?)
        }
        (L::Hilbert(h), 0) => {
            let bits = h.hilbert_rank.checked_mul(h.hilbert_order)?;
            Some(offset + elements(1u128.checked_shl(bits)?)?)
        }
        (L::Coo(c), 0) => elements(u128::from(c.nnz)),
        (L::Csr(c), 0) => elements(u128::from(c.nnz)),
        (L::Csc(c), 0) => elements(u128::from(c.nnz)),
        (L::Coo(c), 1) => Some(u128::from(c.nnz) * dims.len() as u128 * 8),
        (L::Csr(c), 1) => Some(u128::from(c.nnz) * 8),
        (L::Csc(c), 1) => Some(u128::from(c.nnz) * 8),
        (L::Csr(_), 2) => Some((u128::from(*dims.first()?) + 1) * 8),
        (L::Csc(_), 2) => Some((u128::from(*dims.get(1)?) + 1) * 8),
        _ => None,
    }
}

/// A strided tensor's byte extent `[start, end)` relative to buffer 0, from
/// the reference's strides (whole-byte element types only).
fn strided_extent(t: &theirs::TensorDescriptor) -> Option<(i128, i128)> {
    let L::Strided(s) = &t.layout else {
        return None;
    };
    let bits = element_bits(t)?;
    if bits == 0 || bits % 8 != 0 {
        return None;
    }
    let size = i128::from(bits / 8);
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&d, &st) in t.shape.dims().iter().zip(&s.strides) {
        if d == 0 {
            return None; // no element, no extent
        }
        // Saturating: hostile strides and dimensions can pass i128, and a
        // saturated extent is as far outside i64 as the true one.
        let reach = (i128::from(d) - 1).saturating_mul(i128::from(st));
        lo = lo.saturating_add(reach.min(0));
        hi = hi.saturating_add(reach.max(0));
    }
    let offset = i128::from(t.byte_offset);
    Some((
        offset.saturating_add(lo.saturating_mul(size)),
        offset.saturating_add(hi.saturating_add(1).saturating_mul(size)),
    ))
}

/// Whether a size named `what` that our reader refused as an `Overflow`
/// does exceed `u64` on the reference's values.
fn overflows(what: &str, t: &theirs::TensorDescriptor) -> bool {
    const MAX: u128 = u64::MAX as u128;
    let dims = t.shape.dims();
    let n = product(dims.iter().copied());
    let bytes = |n: u128| {
        elements_bytes(t, n).is_none_or(|b| b.saturating_add(u128::from(t.byte_offset)) > MAX)
    };
    match what {
        "element count" => n > MAX,
        "buffer size" => {
            // Any count the layout sizes a buffer by.
            let nnz = match &t.layout {
                L::Coo(c) => Some(c.nnz),
                L::Csr(c) => Some(c.nnz),
                L::Csc(c) => Some(c.nnz),
                L::Csf(c) => Some(c.nnz),
                _ => None,
            };
            bytes(n)
                || nnz.is_some_and(|z| bytes(u128::from(z)))
                || size_rule(t, 0).is_some_and(|b| b > MAX)
                || (0..t.buffers.len() as u32).any(|i| size_rule(t, i).is_some_and(|b| b > MAX))
                || matches!(t.layout, L::Tiled(_) | L::BlockPaged(_) | L::Csf(_))
        }
        "stride extent" | "buffer extent" => match strided_extent(t) {
            // A dimension's last index `n - 1` is an `i64` in the extent's
            // arithmetic (LY-STRIDED-1), under a zero stride too.
            Some(_) if matches!(t.layout, L::Strided(_)) && dims.iter().any(|&n| n > 1 << 63) => {
                true
            }
            Some((lo, hi)) => lo < i128::from(i64::MIN) || hi > i128::from(i64::MAX),
            // A contiguous data buffer (row- and column-major, Morton,
            // Hilbert) past `u64` from `byte_offset`; tiled extents are not
            // modelled here.
            None => {
                matches!(t.layout, L::Tiled(_) | L::Strided(_))
                    || size_rule(t, 0).is_some_and(|b| b > MAX)
            }
        },
        "Morton curve size" => match &t.layout {
            L::Morton(m) => m.morton_bits.iter().map(|&b| u64::from(b)).sum::<u64>() >= 64,
            _ => false,
        },
        "COO index count" => match &t.layout {
            L::Coo(c) => u128::from(c.nnz) * dims.len() as u128 * 8 > MAX,
            _ => false,
        },
        "pointer count" => match &t.layout {
            L::Csr(_) => dims.first().is_some_and(|&d| (u128::from(d) + 1) * 8 > MAX),
            L::Csc(_) => dims.get(1).is_some_and(|&d| (u128::from(d) + 1) * 8 > MAX),
            _ => false,
        },
        "page pool size" => match &t.layout {
            L::BlockPaged(p) => {
                let slots = u128::from(p.num_pages) * u128::from(p.page_size);
                // (Saturating: pages × page size × a row's elements can pass
                // u128 for hostile counts, and a saturated product is as
                // "too large" as the true one.) The pool's element count is
                // a `u64` too, before its bytes (sub-byte types pack more
                // than `u64::MAX` elements into fewer bytes).
                let pool = slots.saturating_mul(product(dims.iter().skip(1).copied()));
                slots > MAX || pool > MAX || bytes(pool)
            }
            _ => false,
        },
        "quantization parameter count" => {
            let quant = t
                .quantization
                .as_deref()
                .zip(quantization_at(t))
                .map(|(q, at)| Quant { at: at + 4, q });
            match (&t.layout, quant) {
                (L::BlockPaged(p), Some(_)) => {
                    (u128::from(p.num_pages) * u128::from(p.page_size)).saturating_mul(4) > MAX
                }
                (_, Some(q)) => {
                    // As the core counts: blocks, and the other axes'
                    // product, in u64; a padding scheme's (per block, NF4)
                    // padded element count too, where the data is dense.
                    let pads = matches!(q.tag(), Some(0x03 | 0x04))
                        && matches!(t.layout, L::RowMajor | L::ColMajor);
                    q.field("axis")
                        .is_some_and(|axis| off_axis_product(dims, axis as usize) > MAX)
                        || blocks(&q, dims).is_some_and(|(b, k)| {
                            b.saturating_mul(4) > MAX || (pads && b.saturating_mul(k) > MAX)
                        })
                        || shared_parameters_overflow(&q, dims)
                }
                _ => false,
            }
        }
        // Not modelled: the CSF pointer counts and the tile grid follow
        // from buffer sizes and nested levels.
        "CSF pointer count" => matches!(t.layout, L::Csf(_)),
        "tile grid" => matches!(t.layout, L::Tiled(_)),
        _ => false,
    }
}

/// The first level of a tiled layout whose inside reaches outside its tile
/// ([LY-TILED-4]), recomputed from the reference's levels in `i128`.
fn tile_overrun(t: &theirs::TensorDescriptor) -> Option<u8> {
    let L::Tiled(top) = &t.layout else {
        return None;
    };
    let dims = t.shape.dims();
    if dims.contains(&0) {
        return None;
    }
    // `[lo, hi]` of Σ (n_k − 1)·s_k over counts `n`.
    let stride_range = |n: &[u128], s: &[i64]| {
        n.iter().zip(s).fold((0i128, 0i128), |(lo, hi), (&n, &s)| {
            let reach = (n as i128 - 1) * i128::from(s);
            (lo + reach.min(0), hi + reach.max(0))
        })
    };
    // The elements a level's grid spans over `region`.
    let span = |l: &theirs::layout::TiledLayout, region: &[u64]| {
        let grid: Vec<u128> = region
            .iter()
            .zip(&l.tile_shape)
            .map(|(&n, &k)| u128::from(n.div_ceil(k.max(1))))
            .collect();
        let e = product(l.tile_shape.iter().copied()) as i128;
        let (lo, hi) = match &l.outer_strides {
            Some(s) => stride_range(&grid, &s.strides),
            None => (0, grid.iter().product::<u128>() as i128 - 1),
        };
        (lo * e, (hi + 1) * e - 1)
    };
    let mut parent: &theirs::layout::TiledLayout = top;
    for level in 0u8.. {
        let e = product(parent.tile_shape.iter().copied()) as i128;
        let (lo, hi) = match (&parent.inner_strides, parent.inner_tiled.as_deref()) {
            (Some(s), _) => {
                let n: Vec<u128> = parent.tile_shape.iter().map(|&k| u128::from(k)).collect();
                stride_range(&n, &s.strides)
            }
            (None, Some(next)) => span(next, &parent.tile_shape),
            (None, None) => return None,
        };
        if lo < 0 || hi >= e {
            return Some(level);
        }
        match (&parent.inner_strides, parent.inner_tiled.as_deref()) {
            (None, Some(next)) => parent = next,
            _ => return None,
        }
    }
    None
}

/// Whether a statistics value our reader refused breaks [MD-STATS-2] on the
/// reference's values (the 0/1 bytes read where our error points).
fn statistics_out_of_range(field: &str, t: &theirs::TensorDescriptor, byte: Option<u8>) -> bool {
    let Some(s) = t.statistics.as_ref() else {
        return false;
    };
    let m = s.computed_mask;
    match field {
        "sparsity_ratio" => m.sparsity_valid() && !(0.0..=1.0).contains(&s.sparsity_ratio),
        "value_range" => {
            m.value_range_valid()
                && !(s.value_min <= s.value_max
                    && s.value_abs_max == s.value_min.abs().max(s.value_max.abs())
                    && !s.value_abs_max.is_nan())
        }
        "value_stddev" => {
            m.value_stats_valid() && (s.value_stddev.is_nan() || s.value_stddev < 0.0)
        }
        "nm_n" => m.nm_sparsity_valid() && s.nm_n > s.nm_m,
        "has_nan" | "has_inf" => m.nan_inf_valid() && byte.is_some_and(|b| b > 1),
        _ => false,
    }
}

/// Whether an extension type field our reader refused breaks [MD-EXT-2] on
/// the reference's values (`raw`: the field's bytes where our error points).
fn extension_field_invalid(
    field: &str,
    value: u64,
    t: &theirs::TensorDescriptor,
    raw: &[u8],
) -> bool {
    let Some(e) = t.extension_type.as_ref() else {
        return false;
    };
    let width = if field == "exponent_bias" { 4 } else { 1 };
    let Some(found) = raw.get(..width) else {
        return false;
    };
    let mut le = [0u8; 8];
    le[..width].copy_from_slice(found);
    if u64::from_le_bytes(le) != value {
        return false;
    }
    let boolean = matches!(field, "is_float" | "is_signed" | "has_nan" | "has_inf");
    if boolean && value > 1 {
        return true;
    }
    if e.is_float {
        match field {
            "is_signed" => value != 0,
            "sign_bits" => value > 1,
            _ => false,
        }
    } else {
        matches!(
            field,
            "sign_bits"
                | "exponent_bits"
                | "mantissa_bits"
                | "exponent_bias"
                | "has_nan"
                | "has_inf"
        ) && value != 0
    }
}

/// The storage types a built-in scheme takes (`docs/spec/quantization.md`).
fn storage_allowed(scheme: u8, ty: theirs::ElementType) -> bool {
    use theirs::ElementType as T;
    let int = matches!(
        ty,
        T::Int8
            | T::Uint8
            | T::Int16
            | T::Uint16
            | T::Int32
            | T::Uint32
            | T::Int4
            | T::Uint4
            | T::Int2
            | T::Uint2
    );
    match scheme {
        0x01 | 0x02 => int,
        0x03 => matches!(
            ty,
            T::Int8 | T::Uint8 | T::Int4 | T::Uint4 | T::Int2 | T::Uint2
        ),
        0x04 => matches!(ty, T::Uint4),
        0x05 => matches!(
            ty,
            T::Float8E4M3
                | T::Float8E5M2
                | T::Float4E2M1
                | T::Float6E2M3
                | T::Float6E3M2
                | T::Int8
                | T::Int4
        ),
        _ => false,
    }
}

/// The buffers a layout uses before any quantization parameter buffer.
fn layout_buffers(layout: &L, rank: usize) -> Option<u32> {
    Some(match layout {
        L::RowMajor | L::ColMajor | L::Strided(_) | L::Tiled(_) | L::Morton(_) | L::Hilbert(_) => 1,
        L::Coo(_) => 2,
        L::Csr(_) | L::Csc(_) | L::BlockPaged(_) => 3,
        L::Csf(_) => 2 * u32::try_from(rank).ok()? + 1,
        _ => return None,
    })
}

/// Whether our rejection `kind`, at `pos` bytes into the quantization
/// payload, breaks a rule of `docs/spec/quantization.md` on the section's raw
/// bytes and the reference's values.
fn quant_rule_broken(
    kind: DescriptorErrorKind,
    pos: Option<usize>,
    q: &Quant<'_>,
    t: &theirs::TensorDescriptor,
) -> bool {
    use DescriptorErrorKind as K;
    let dims = t.shape.dims();
    let rank = dims.len() as u64;
    let tag = q.tag();
    let paged = match &t.layout {
        L::BlockPaged(p) => Some(p.page_size),
        _ => None,
    };
    let block_scheme = matches!(tag, Some(0x03..=0x05));
    match kind {
        K::InvalidValue {
            field: FieldName::QuantizationLength,
            value,
        } => value == q.q.len() as u64 && q.scheme_len().is_none_or(|n| q.q.len() < n),
        K::PrivateCodeRefused {
            field: FieldName::SchemeTag,
            code,
        } => tag == Some(code) && (0xF0..=0xFE).contains(&code),
        K::InvalidValue {
            field: FieldName::SchemeTag,
            value,
        } => {
            q.field("scheme_tag") == Some(value)
                && !(0x01..=0x05).contains(&value)
                && !(0xF0..=0xFE).contains(&value)
        }
        K::InvalidValue {
            field: FieldName::SchemeVersion,
            value,
        } => q.field("scheme_version") == Some(value) && value != 1,
        K::ReservedFlags(bits) => {
            let allowed = u16::from(matches!(tag, Some(0x02 | 0x03)));
            q.flags()
                .is_some_and(|f| u32::from(f & !allowed) == bits && bits != 0)
        }
        K::ReservedNonZero {
            field: FieldName::QuantizationPadding,
        } => q
            .scheme_len()
            .and_then(|n| q.q.get(n..))
            .is_some_and(|rest| rest.iter().any(|&b| b != 0)),
        K::ReservedNonZero { field } => q
            .reserved(field.name())
            .is_some_and(|r| r.iter().any(|&b| b != 0)),
        K::ParameterOutOfRange {
            field: FieldName::Scale,
        } => {
            tag == Some(0x01)
                && q.u32_at(4)
                    .map(|b| f32::from_bits(b as u32))
                    .is_some_and(|s| !s.is_finite() || s == 0.0)
        }
        K::ParameterOutOfRange {
            field: FieldName::ZeroPoint,
        } => {
            let zp = q.u32_at(8).map(|b| i64::from(b as u32 as i32));
            let bits = element_bits(t).unwrap_or(0);
            let range = if bits == 0 || bits > 32 {
                None
            } else if t.element_type.is_signed() {
                Some((-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1))
            } else {
                Some((0, (1i64 << bits) - 1))
            };
            tag == Some(0x01) && zp.is_some_and(|z| range.is_none_or(|(lo, hi)| z < lo || z > hi))
        }
        K::InvalidValue {
            field: FieldName::ScaleTypeTag,
            value,
        } => {
            q.field("scale_type_tag") == Some(value)
                && match tag {
                    Some(0x02) => value != 0x03,
                    _ => !(0x01..=0x03).contains(&value),
                }
        }
        K::InvalidValue {
            field: FieldName::ZeroPointBufferIndex,
            value,
        } => {
            let symmetric = q.flags().is_some_and(|f| f & 1 != 0);
            q.field("zero_point_buffer_index") == Some(value)
                && symmetric != (value == u64::from(u32::MAX))
        }
        K::StorageTypeNotAllowed { scheme, type_tag } => {
            tag == Some(scheme)
                && type_tag == t.element_type.tag()
                && !storage_allowed(scheme, t.element_type)
        }
        K::AxisOutOfRange { axis, rank: r } => {
            q.field("axis") == Some(u64::from(axis))
                && u64::from(r) == rank
                && u64::from(axis) >= rank
        }
        K::InvalidValue {
            field: FieldName::Axis,
            value,
        } => {
            q.field("axis") == Some(value)
                && paged.is_some()
                && (if block_scheme { value != 0 } else { value == 0 })
        }
        K::InvalidValue {
            field: FieldName::BlockSize,
            value,
        } => {
            let Some(size) = q.field("axis").and_then(|a| dims.get(a as usize).copied()) else {
                return false;
            };
            let k = value;
            let broken = match tag {
                Some(0x03) => !k.is_power_of_two() || k < 2 || (size > 0 && k > size),
                Some(0x04) => !k.is_power_of_two() || k < 8 || size == 0 || k > size,
                Some(0x05) => {
                    !k.is_power_of_two() || !(16..=2048).contains(&k) || size == 0 || size % k != 0
                }
                _ => false,
            };
            q.field("block_size") == Some(value)
                && (broken || paged.is_some_and(|p| u64::from(p) != k))
        }
        K::ParameterBufferIndex {
            index,
            first,
            count,
        } => {
            let named = parameter_indices(q.q).contains(&Some(index));
            let first_ok = layout_buffers(&t.layout, dims.len()).is_none_or(|n| n == first);
            named
                && first_ok
                && usize::from(count) == t.buffers.len()
                && (index >= u32::from(count) || index < first)
        }
        _ => {
            let _ = pos;
            false
        }
    }
}
