//! Quantization section: `quantization_length: uint32`, then that many bytes
//! of a quantization descriptor (`docs/spec/quantization.md`).
//!
//! Every descriptor starts with `scheme_tag: uint8`, `scheme_version: uint8`
//! (1), `flags: uint16`; the scheme's fields follow (offsets from the start of
//! the payload):
//!
//! | Scheme | Tag | Length | Fields |
//! |---|---:|---:|---|
//! | per-tensor affine | `0x01` | 16 | `scale: f32`@4, `zero_point: i32`@8, `_reserved[4]`@12 |
//! | per-channel affine | `0x02` | 20 | `axis`@4, `scale_buffer_index`@8, `zero_point_buffer_index`@12 (u32), `scale_type_tag`@16 (= f32), `_reserved[3]`@17 |
//! | per-block affine | `0x03` | 24 | `axis`@4, `block_size`@8, `scale_buffer_index`@12, `zero_point_buffer_index`@16 (u32), `scale_type_tag`@20 (f16, bf16, f32), `_reserved[3]`@21 |
//! | NF4 | `0x04` | 16 | `axis`@4, `block_size`@8, `scale_buffer_index`@12 (u32) |
//! | MXFP | `0x05` | 16 | `axis`@4, `block_size`@8, `scale_buffer_index`@12 (u32) |
//!
//! Flag bit 0 of per-channel and per-block is `SYMMETRIC`: no zero points,
//! and `zero_point_buffer_index` must be `0xFFFFFFFF`. Bytes after the scheme's
//! fields (writer padding) must be zero. Private schemes (`0xF0`–`0xFE`) are
//! refused unless the reader was told to accept them.

use core::mem::{offset_of, size_of};

use zerocopy::FromBytes;
use zerocopy::little_endian::{F32, I32, U16, U32};

use crate::FieldName;
use crate::element::ElementType;
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::field::wire_fields;

use super::super::cursor::{Reader, Writer};
use super::super::extent::{Shape, Sizes};

/// `zero_point_buffer_index` of a symmetric scheme.
pub const NO_BUFFER: u32 = u32::MAX;

/// Quantization scheme tags (`docs/spec/quantization.md`).
pub mod scheme_tag {
    /// Per-tensor affine.
    pub const PER_TENSOR: u8 = 0x01;
    /// Per-channel affine.
    pub const PER_CHANNEL: u8 = 0x02;
    /// Per-block affine.
    pub const PER_BLOCK: u8 = 0x03;
    /// NormalFloat4.
    pub const NF4: u8 = 0x04;
    /// OCP microscaling.
    pub const MXFP: u8 = 0x05;
}

/// The `SYMMETRIC` bit of a per-channel or per-block scheme's flags.
const SYMMETRIC: u16 = 1;

wire_fields! {
    /// The 4 bytes every scheme starts with.
    SchemeHeader {
        /// [`scheme_tag`] code.
        scheme_tag: u8,
        /// Scheme version (1 for the public schemes).
        scheme_version: u8,
        /// Scheme flags (bit 0 `SYMMETRIC` for per-channel and per-block).
        flags: U16,
    } = 4;
    /// Per-tensor affine (`0x01`) after the scheme header.
    PerTensorFields {
        /// Dequantization scale.
        scale: F32,
        /// Zero point.
        zero_point: I32,
        /// Reserved, zero.
        reserved: [u8; 4] as "_reserved",
    } = 12;
    /// Per-channel affine (`0x02`) after the scheme header.
    PerChannelFields {
        /// The channel axis.
        axis: U32,
        /// Buffer of the scales.
        scale_buffer_index: U32,
        /// Buffer of the zero points, or [`NO_BUFFER`].
        zero_point_buffer_index: U32,
        /// Type of the scales (float32).
        scale_type_tag: u8,
        /// Reserved, zero.
        reserved: [u8; 3] as "_reserved",
    } = 16;
    /// Per-block affine (`0x03`) after the scheme header.
    PerBlockFields {
        /// The blocked axis.
        axis: U32,
        /// Elements per block.
        block_size: U32,
        /// Buffer of the scales.
        scale_buffer_index: U32,
        /// Buffer of the zero points, or [`NO_BUFFER`].
        zero_point_buffer_index: U32,
        /// Type of the scales.
        scale_type_tag: u8,
        /// Reserved, zero.
        reserved: [u8; 3] as "_reserved",
    } = 20;
    /// NF4 (`0x04`) and MXFP (`0x05`) after the scheme header.
    BlockScaleFields {
        /// The blocked axis.
        axis: U32,
        /// Elements per block.
        block_size: U32,
        /// Buffer of the scales.
        scale_buffer_index: U32,
    } = 12;
}

/// A quantization scheme and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Scheme<'a> {
    /// One scale and zero point for the whole tensor (`0x01`).
    PerTensor {
        /// Dequantization scale (finite, non-zero).
        scale: f32,
        /// Zero point (inside the storage type's range).
        zero_point: i32,
    },
    /// One scale (and zero point) per slice along `axis` (`0x02`).
    PerChannel {
        /// The channel axis.
        axis: u32,
        /// Buffer holding `shape[axis]` f32 scales.
        scale_buffer: u32,
        /// Buffer holding `shape[axis]` i32 zero points; `None` if symmetric.
        zero_point_buffer: Option<u32>,
    },
    /// One scale (and zero point) per block of `block_size` along `axis` (`0x03`).
    PerBlock {
        /// The blocked axis.
        axis: u32,
        /// Elements per block (a power of two ≥ 2).
        block_size: u32,
        /// Buffer holding one scale per block.
        scale_buffer: u32,
        /// Buffer holding one i32 zero point per block; `None` if symmetric.
        zero_point_buffer: Option<u32>,
        /// Type of the scales: float16, bfloat16 or float32.
        scale_type: ElementType,
    },
    /// NormalFloat4 with one f32 absmax per block (`0x04`).
    Nf4 {
        /// The blocked axis.
        axis: u32,
        /// Elements per block (a power of two ≥ 8).
        block_size: u32,
        /// Buffer holding one f32 per block.
        scale_buffer: u32,
    },
    /// OCP microscaling with one E8M0 scale per block (`0x05`).
    Mxfp {
        /// The blocked axis.
        axis: u32,
        /// Elements per block (a power of two in 16..=2048).
        block_size: u32,
        /// Buffer holding one byte per block.
        scale_buffer: u32,
    },
    /// A private scheme, carried as opaque bytes after the 4-byte header.
    Private {
        /// The scheme tag, `0xF0`–`0xFE`.
        tag: u8,
        /// `scheme_version`.
        version: u8,
        /// The scheme's flags.
        flags: u16,
        /// The bytes after the header.
        payload: &'a [u8],
    },
}

/// The quantization section: the scheme plus the count of zero padding
/// bytes the writer put after it (kept so re-encoding is exact).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantization<'a> {
    /// The scheme.
    pub scheme: Scheme<'a>,
    /// Zero bytes after the scheme's fields.
    pub padding: u32,
}

/// What the rules that tie a descriptor's parts together read of its
/// quantization scheme ([`Scheme::params`]): the parameter buffers and how
/// the scheme blocks the tensor, as plain values. Both sides derive it from
/// a [`Scheme`] (the parser's, decoded from the checked payload, or the
/// encoder's), so the rules stay one set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Params {
    /// The scale buffer, where the scheme has one.
    pub(crate) scale: Option<u32>,
    /// The zero-point buffer, where the scheme has one.
    pub(crate) zero: Option<u32>,
    /// The quantized axis (per-channel and block schemes).
    pub(crate) axis: u32,
    /// Elements per block; 0 when the scheme does not block (per-channel:
    /// one parameter per slice along `axis`).
    pub(crate) block_size: u32,
    /// Bytes per scale value.
    pub(crate) scale_width: u8,
    /// The data buffer holds whole blocks (per-block affine and NF4).
    pub(crate) pads: bool,
    /// A private scheme: nothing is known of its buffers.
    pub(crate) private: bool,
}

impl Params {
    /// The quantized dense acceptance's rules on the parameter buffers
    /// (ADR-127), the parser's and the encoder's one copy: `Some` of the
    /// element count the data buffer holds where the scheme pads to whole
    /// blocks and of the descriptor's buffer count (the data buffer, then
    /// the parameter buffers, inside the table), once the parameter buffers
    /// hold exactly their values. `shape` is `None` where a dimension is
    /// dynamic: no size is checked. A block size is a power of two (the
    /// section's rule held). `None` is no verdict.
    #[inline(always)]
    pub(crate) fn dense_holds(
        &self,
        b: &impl Sizes,
        shape: Option<&impl Shape>,
    ) -> Option<(Option<u64>, usize)> {
        let (scale, zero) = (self.scale, self.zero);
        let in_table = |i: u32| i >= 1 && (i as usize) < b.count();
        let buffers = match (scale, zero) {
            (Some(s), Some(z)) if in_table(s) && in_table(z) && s != z => 3,
            (Some(s), Some(z)) if in_table(s) && in_table(z) => 2,
            (Some(s), None) if in_table(s) => 2,
            (None, None) => 1,
            _ => return None,
        };
        let (Some(scale), Some(shape)) = (scale, shape) else {
            return Some((None, buffers));
        };
        let (axis, k) = (self.axis, self.block_size);
        let along = shape.dim(axis as usize)?;
        let (entries, padded) = if k == 0 {
            (along, None)
        } else {
            // The blocks along the axis by a shift, times the other
            // dimensions (a multiply per dimension, not a division of the
            // element count: ADR-127).
            let partial = along & u64::from(k).wrapping_sub(1) != 0;
            let blocks = (along >> k.trailing_zeros())
                .saturating_add(u64::from(partial))
                .checked_mul(shape.product_but(axis)?)?;
            let padded = match self.pads {
                true => Some(blocks.checked_mul(u64::from(k))?),
                false => None,
            };
            (blocks, padded)
        };
        let scale_bytes = entries.checked_mul(u64::from(self.scale_width))?;
        let zero_bytes = entries.checked_mul(4)?;
        let size = |i: u32| b.byte_size(i as usize);
        let sized = match zero {
            Some(z) if z == scale => Some(size(scale)) == scale_bytes.checked_add(zero_bytes),
            Some(z) => size(scale) == scale_bytes && size(z) == zero_bytes,
            None => size(scale) == scale_bytes,
        };
        sized.then_some((padded, buffers))
    }
}

/// What a reader must know to check a quantization section.
pub(crate) struct QuantCtx<S> {
    pub(crate) shape: S,
    pub(crate) storage: ElementType,
    /// Its code (the header's `type_tag`).
    pub(crate) storage_code: u8,
    pub(crate) accept_private: bool,
    /// `page_size` when the layout is block-paged (whose quantization axis
    /// and block size are constrained).
    pub(crate) page_size: Option<u32>,
}

impl<'a> Scheme<'a> {
    /// The scheme tag.
    #[must_use]
    pub const fn tag(&self) -> u8 {
        match self {
            Self::PerTensor { .. } => scheme_tag::PER_TENSOR,
            Self::PerChannel { .. } => scheme_tag::PER_CHANNEL,
            Self::PerBlock { .. } => scheme_tag::PER_BLOCK,
            Self::Nf4 { .. } => scheme_tag::NF4,
            Self::Mxfp { .. } => scheme_tag::MXFP,
            Self::Private { tag, .. } => *tag,
        }
    }

    /// The spec's name of the scheme.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::PerTensor { .. } => "per_tensor_affine",
            Self::PerChannel { .. } => "per_channel_affine",
            Self::PerBlock { .. } => "per_block_affine",
            Self::Nf4 { .. } => "nf4",
            Self::Mxfp { .. } => "mxfp",
            Self::Private { .. } => "private",
        }
    }

    /// Length of the scheme's encoding (header included) without padding.
    #[must_use]
    pub const fn encoded_len(&self) -> usize {
        let fields = match self {
            Self::PerTensor { .. } => size_of::<PerTensorFields>(),
            Self::Nf4 { .. } | Self::Mxfp { .. } => size_of::<BlockScaleFields>(),
            Self::PerChannel { .. } => size_of::<PerChannelFields>(),
            Self::PerBlock { .. } => size_of::<PerBlockFields>(),
            Self::Private { payload, .. } => payload.len(),
        };
        size_of::<SchemeHeader>().saturating_add(fields)
    }

    /// `(axis, block_size)` of a block scheme.
    #[must_use]
    pub const fn blocks(&self) -> Option<(u32, u32)> {
        match *self {
            Self::PerBlock {
                axis, block_size, ..
            }
            | Self::Nf4 {
                axis, block_size, ..
            }
            | Self::Mxfp {
                axis, block_size, ..
            } => Some((axis, block_size)),
            _ => None,
        }
    }

    /// `(scale buffer, zero-point buffer)` indices, where the scheme has them.
    #[must_use]
    pub const fn parameter_buffers(&self) -> (Option<u32>, Option<u32>) {
        let p = self.params();
        (p.scale, p.zero)
    }

    /// Bytes per scale value.
    #[must_use]
    pub const fn scale_width(&self) -> u64 {
        self.params().scale_width as u64
    }

    /// What the rules that tie the parts together read of the scheme,
    /// flat: its [`Values`] through its row.
    #[inline]
    pub(crate) const fn params(&self) -> Params {
        Values::of(self).params()
    }
}

/// A public scheme as a row of the table one routine reads: where its
/// fields lie in the payload and which of the rules apply to them. Rows
/// are indexed by tag − 1; the offsets are the field structs'.
struct Row {
    /// Bytes of the header and the fields (the padding follows).
    len: u8,
    /// Where the reserved bytes start (they run to `len`; `len`: none).
    reserved: u8,
    /// Their field name.
    reserved_field: FieldName,
    /// `scale_buffer_index`'s offset; 0 for the inline scale and zero
    /// point of per-tensor (every scheme with a scale buffer has an axis
    /// at 4).
    scale_at: u8,
    /// `zero_point_buffer_index`'s offset; 0 where there is none, nor a
    /// `SYMMETRIC` flag.
    zero_at: u8,
    /// `scale_type_tag`'s offset; 0 where the type is fixed (`width`).
    type_at: u8,
    /// The scales are float32, refused otherwise before the zero-point
    /// index (per-channel); else float16, bfloat16 or float32, a rule of
    /// the value checked after the index's symmetric rule (per-block).
    f32_only: bool,
    /// Bytes per scale where the type is fixed.
    width: u8,
    /// Block size bounds (a power of two); `min_block` 0: no blocks.
    min_block: u16,
    /// The largest block size; 0: none.
    max_block: u16,
    /// The blocks tile the axis exactly (no partial block).
    exact: bool,
    /// The data buffer holds whole blocks (partial ones padded).
    pads: bool,
    /// The storage types accepted, bit `code − 0x10`.
    storage: u64,
}

/// A field's offset in the payload (after the 4-byte header), as a row
/// holds it.
macro_rules! at8 {
    ($s:ident . $f:ident) => {{
        #[allow(clippy::cast_possible_truncation)] // payloads are under 32 bytes
        let at = size_of::<SchemeHeader>().saturating_add(offset_of!($s, $f)) as u8;
        at
    }};
}

/// The length of a scheme's header and fields.
#[allow(clippy::cast_possible_truncation)] // under 32 bytes
const fn len8(fields: usize) -> u8 {
    size_of::<SchemeHeader>().saturating_add(fields) as u8
}

/// The storage-type bits of `types` (evaluated at compile time only,
/// where a fault fails the build).
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn storage(types: &[ElementType]) -> u64 {
    let mut bits = 0u64;
    let mut i = 0;
    while i < types.len() {
        bits |= 1 << (types[i].code() - 0x10);
        i += 1;
    }
    bits
}

/// No row's fields: the defaults the rows below override.
const NONE: Row = Row {
    len: len8(0),
    reserved: len8(0),
    reserved_field: FieldName::PerTensorReserved,
    scale_at: 0,
    zero_at: 0,
    type_at: 0,
    f32_only: false,
    width: 4,
    min_block: 0,
    max_block: 0,
    exact: false,
    pads: false,
    storage: {
        use ElementType as E;
        storage(&[
            E::Int8,
            E::UInt8,
            E::Int16,
            E::UInt16,
            E::Int32,
            E::UInt32,
            E::Int4,
            E::UInt4,
            E::Int2,
            E::UInt2,
        ])
    },
};

/// The five public schemes, by tag − 1.
const ROWS: [Row; 5] = {
    use ElementType as E;
    let block_scale = Row {
        len: len8(size_of::<BlockScaleFields>()),
        reserved: len8(size_of::<BlockScaleFields>()),
        scale_at: at8!(BlockScaleFields.scale_buffer_index),
        ..NONE
    };
    [
        Row {
            len: len8(size_of::<PerTensorFields>()),
            reserved: at8!(PerTensorFields.reserved),
            reserved_field: FieldName::PerTensorReserved,
            ..NONE
        },
        Row {
            len: len8(size_of::<PerChannelFields>()),
            reserved: at8!(PerChannelFields.reserved),
            reserved_field: FieldName::PerChannelReserved,
            scale_at: at8!(PerChannelFields.scale_buffer_index),
            zero_at: at8!(PerChannelFields.zero_point_buffer_index),
            type_at: at8!(PerChannelFields.scale_type_tag),
            f32_only: true,
            ..NONE
        },
        Row {
            len: len8(size_of::<PerBlockFields>()),
            reserved: at8!(PerBlockFields.reserved),
            reserved_field: FieldName::PerBlockReserved,
            scale_at: at8!(PerBlockFields.scale_buffer_index),
            zero_at: at8!(PerBlockFields.zero_point_buffer_index),
            type_at: at8!(PerBlockFields.scale_type_tag),
            min_block: 2,
            pads: true,
            storage: storage(&[E::Int8, E::UInt8, E::Int4, E::UInt4, E::Int2, E::UInt2]),
            ..NONE
        },
        Row {
            min_block: 8,
            pads: true,
            storage: storage(&[E::UInt4]),
            ..block_scale
        },
        Row {
            width: 1,
            min_block: 16,
            max_block: 2048,
            exact: true,
            storage: storage(&[
                E::Float8E4M3,
                E::Float8E5M2,
                E::Float4E2M1,
                E::Float6E2M3,
                E::Float6E3M2,
                E::Int8,
                E::Int4,
            ]),
            ..block_scale
        },
    ]
};

/// Every scheme with a scale buffer has its axis first, every block
/// scheme its block size second; per-tensor has its scale and zero point
/// there.
const AXIS_AT: u8 = at8!(PerChannelFields.axis);
const BLOCK_SIZE_AT: u8 = at8!(PerBlockFields.block_size);
const _: () = assert!(
    AXIS_AT == at8!(PerBlockFields.axis)
        && AXIS_AT == at8!(BlockScaleFields.axis)
        && AXIS_AT == at8!(PerTensorFields.scale)
);
const _: () = assert!(
    BLOCK_SIZE_AT == at8!(BlockScaleFields.block_size)
        && BLOCK_SIZE_AT == at8!(PerTensorFields.zero_point)
);

/// Every row's section fits the encoder's image (per-block affine's, the
/// longest).
#[allow(clippy::indexing_slicing)] // compile time
const _: () = {
    let mut i = 0;
    while i < ROWS.len() {
        assert!(ROWS[i].len as usize + 4 <= size_of::<Fixed>());
        i += 1;
    }
};

/// The header's version and flags.
const VERSION_AT: u8 = 1;
const FLAGS_AT: u8 = 2;
const _: () = assert!(
    offset_of!(SchemeHeader, scheme_version) == VERSION_AT as usize
        && offset_of!(SchemeHeader, flags) == FLAGS_AT as usize
);

/// A public scheme's row; `None` for any other tag.
#[inline]
const fn row(tag: u8) -> Option<&'static Row> {
    match tag {
        // In bounds: 0 to 4 (one load, where a match by tag took a
        // switch table of each field).
        #[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
        scheme_tag::PER_TENSOR..=scheme_tag::MXFP => Some(&ROWS[(tag - 1) as usize]),
        _ => None,
    }
}

/// A scheme's values as its payload lays them out, flat: what the rules
/// and the cross-part rules read, whether they come from the bytes (the
/// parser) or from a [`Scheme`] (the encoder), so that the rules are one
/// set.
#[derive(Clone, Copy)]
struct Values<'a> {
    /// The scheme tag.
    tag: u8,
    /// The word at 4: the axis, or per-tensor's scale (its bits).
    w4: u32,
    /// The word at 8: the block size, per-channel's scale buffer, or
    /// per-tensor's zero point.
    w8: u32,
    /// The scale buffer, where the scheme has one.
    scale: u32,
    /// The zero-point buffer; `None` when symmetric or absent.
    zero: Option<u32>,
    /// The scale type, where the scheme has the field.
    scale_type: ElementType,
    /// Its code (as read, for the error that names it).
    scale_code: u8,
    /// A private scheme's version, flags and bytes after the header.
    private: Option<(u8, u16, &'a [u8])>,
}

impl<'a> Values<'a> {
    /// Scheme `tag` with every value zero (float32 scales).
    #[inline(always)]
    const fn empty(tag: u8) -> Self {
        Self {
            tag,
            w4: 0,
            w8: 0,
            scale: 0,
            zero: None,
            scale_type: ElementType::Float32,
            scale_code: ElementType::Float32.code(),
            private: None,
        }
    }

    /// A scheme's values.
    #[inline]
    const fn of(s: &Scheme<'a>) -> Self {
        let mut v = Self::empty(s.tag());
        match *s {
            Scheme::PerTensor { scale, zero_point } => {
                v.w4 = scale.to_bits();
                #[allow(clippy::cast_sign_loss)] // the wire's bits
                let zero_point = zero_point as u32;
                v.w8 = zero_point;
            }
            Scheme::PerChannel {
                axis,
                scale_buffer,
                zero_point_buffer,
            } => {
                (v.w4, v.w8, v.scale) = (axis, scale_buffer, scale_buffer);
                v.zero = zero_point_buffer;
            }
            Scheme::PerBlock {
                axis,
                block_size,
                scale_buffer,
                zero_point_buffer,
                scale_type,
            } => {
                (v.w4, v.w8, v.scale) = (axis, block_size, scale_buffer);
                v.zero = zero_point_buffer;
                (v.scale_type, v.scale_code) = (scale_type, scale_type.code());
            }
            Scheme::Nf4 {
                axis,
                block_size,
                scale_buffer,
            }
            | Scheme::Mxfp {
                axis,
                block_size,
                scale_buffer,
            } => (v.w4, v.w8, v.scale) = (axis, block_size, scale_buffer),
            Scheme::Private {
                version,
                flags,
                payload,
                ..
            } => v.private = Some((version, flags, payload)),
        }
        v
    }

    /// The scheme the values are (of a payload the rules accepted).
    fn scheme(self) -> Option<Scheme<'a>> {
        let (axis, block_size, scale_buffer) = (self.w4, self.w8, self.scale);
        Some(match self.tag {
            scheme_tag::PER_TENSOR => Scheme::PerTensor {
                scale: f32::from_bits(self.w4),
                #[allow(clippy::cast_possible_wrap)] // the wire's bits
                zero_point: self.w8 as i32,
            },
            scheme_tag::PER_CHANNEL => Scheme::PerChannel {
                axis,
                scale_buffer,
                zero_point_buffer: self.zero,
            },
            scheme_tag::PER_BLOCK => Scheme::PerBlock {
                axis,
                block_size,
                scale_buffer,
                zero_point_buffer: self.zero,
                scale_type: self.scale_type,
            },
            scheme_tag::NF4 => Scheme::Nf4 {
                axis,
                block_size,
                scale_buffer,
            },
            scheme_tag::MXFP => Scheme::Mxfp {
                axis,
                block_size,
                scale_buffer,
            },
            tag => {
                let (version, flags, payload) = self.private?;
                Scheme::Private {
                    tag,
                    version,
                    flags,
                    payload,
                }
            }
        })
    }

    /// A public scheme's section up to its padding, as the encoder writes
    /// it: the length field, then the header and the values at the row's
    /// offsets (4 bytes on), zero elsewhere.
    fn image(&self, row: &Row, padding: u32) -> [u8; size_of::<Fixed>()] {
        let mut image = [0u8; size_of::<Fixed>()];
        let mut put = |at: u8, bytes: [u8; 4]| {
            let at = usize::from(at).wrapping_add(4);
            if let Some(d) = image.get_mut(at..).and_then(<[u8]>::first_chunk_mut) {
                *d = bytes;
            }
        };
        let [lo, hi] = if row.zero_at != 0 && self.zero.is_none() {
            SYMMETRIC.to_le_bytes()
        } else {
            [0; 2]
        };
        put(0, [self.tag, 1, lo, hi]);
        put(AXIS_AT, self.w4.to_le_bytes());
        put(BLOCK_SIZE_AT, self.w8.to_le_bytes());
        if row.scale_at != 0 {
            put(row.scale_at, self.scale.to_le_bytes());
        }
        if row.zero_at != 0 {
            put(row.zero_at, self.zero.unwrap_or(NO_BUFFER).to_le_bytes());
        }
        if row.type_at != 0 {
            put(row.type_at, [self.scale_code, 0, 0, 0]);
        }
        let len = u32::from(row.len).saturating_add(padding);
        if let Some(d) = image.first_chunk_mut() {
            *d = len.to_le_bytes();
        }
        image
    }

    /// What the cross-part rules read of the values.
    #[inline(always)]
    const fn params(&self) -> Params {
        let mut p = Params {
            scale: None,
            zero: None,
            axis: 0,
            block_size: 0,
            scale_width: 4,
            pads: false,
            private: true,
        };
        let Some(row) = row(self.tag) else {
            return p;
        };
        p.private = false;
        p.pads = row.pads;
        p.scale_width = row.width;
        if row.type_at != 0 && !matches!(self.scale_type, ElementType::Float32) {
            p.scale_width = 2;
        }
        if row.scale_at != 0 {
            (p.scale, p.zero, p.axis) = (Some(self.scale), self.zero, self.w4);
        }
        if row.min_block != 0 {
            p.block_size = self.w8;
        }
        p
    }

    /// The rules on the values alone, after the payload's own (errors at
    /// `base` plus the field's offset): a scale type the scheme allows,
    /// an asymmetric zero point in a real buffer, a finite non-zero
    /// per-tensor scale.
    #[inline(always)]
    fn check(&self, row: &Row, base: u32) -> Result<(), DescriptorError> {
        let fail = |at, kind| Err(fault(base, at, kind));
        let t = self.scale_type;
        let scales = matches!(
            t,
            ElementType::Float16 | ElementType::BFloat16 | ElementType::Float32
        );
        if row.type_at != 0 && !scales {
            let kind = invalid(FieldName::ScaleTypeTag, self.scale_code.into());
            return fail(row.type_at, kind);
        }
        if self.zero == Some(NO_BUFFER) {
            let kind = invalid(FieldName::ZeroPointBufferIndex, NO_BUFFER.into());
            return fail(row.zero_at, kind);
        }
        // Per-tensor: not ±0, infinite or NaN (on the bits: no float
        // compares).
        let magnitude = self.w4 & !(1 << 31);
        if row.scale_at == 0 && (magnitude == 0 || magnitude >= f32::INFINITY.to_bits()) {
            let field = FieldName::Scale;
            return fail(AXIS_AT, DescriptorErrorKind::ParameterOutOfRange { field });
        }
        Ok(())
    }

    /// The rules between the values and the tensor's type and shape
    /// (errors at `base` plus the field's offset).
    #[inline(always)]
    fn check_shape(
        &self,
        row: &Row,
        ctx: &QuantCtx<impl Shape>,
        base: u32,
    ) -> Result<(), DescriptorError> {
        let fail = |at, kind| Err(fault(base, at, kind));
        let (scheme, type_tag) = (self.tag, ctx.storage_code);
        let bit = type_tag.wrapping_sub(0x10);
        if bit >= 64 || row.storage >> bit & 1 == 0 {
            let kind = DescriptorErrorKind::StorageTypeNotAllowed { scheme, type_tag };
            return fail(0, kind);
        }
        if row.scale_at == 0 {
            #[allow(clippy::cast_possible_wrap)] // the wire's bits
            let zero_point = i64::from(self.w8 as i32);
            let in_range = ctx
                .storage
                .integer_range()
                .is_some_and(|(lo, hi)| lo <= zero_point && zero_point <= hi);
            if !in_range {
                let field = FieldName::ZeroPoint;
                let kind = DescriptorErrorKind::ParameterOutOfRange { field };
                return fail(BLOCK_SIZE_AT, kind);
            }
            return Ok(());
        }
        let (axis, k, blocks) = (self.w4, self.w8, row.min_block != 0);
        let Some(size) = ctx.shape.dim(axis as usize) else {
            #[allow(clippy::cast_possible_truncation)] // rank <= 64
            let rank = ctx.shape.rank() as u32;
            return fail(AXIS_AT, DescriptorErrorKind::AxisOutOfRange { axis, rank });
        };
        if size == crate::DYNAMIC {
            let field = FieldName::Shape;
            let kind = DescriptorErrorKind::DynamicDimension { field, axis };
            return fail(AXIS_AT, kind);
        }
        if blocks {
            let (min, max) = (u32::from(row.min_block), u32::from(row.max_block));
            let valid = k.is_power_of_two() && min <= k && (max == 0 || k <= max);
            let fits = if row.exact {
                // No partial blocks: a positive multiple of the block
                // size (`k` a power of two, when valid).
                size > 0 && super::super::extent::is_multiple_of_pow2(size, u64::from(k))
            } else {
                // A non-empty axis holds at least one whole block.
                size == 0 || u64::from(k) <= size
            };
            if !valid || !fits {
                return fail(BLOCK_SIZE_AT, invalid(FieldName::BlockSize, k.into()));
            }
        }
        // Block-paged: parameters are per page slot, so a block scheme
        // blocks the paged axis (0) one page at a time, and per-channel
        // never quantizes the paged axis.
        if let Some(page_size) = ctx.page_size {
            if blocks == (axis != 0) {
                return fail(AXIS_AT, invalid(FieldName::Axis, axis.into()));
            }
            if blocks && k != page_size {
                return fail(BLOCK_SIZE_AT, invalid(FieldName::BlockSize, k.into()));
            }
        }
        Ok(())
    }
}

/// The error of `kind` at the payload's offset `at`, the payload lying at
/// `base`. A rule only names a field inside the payload (its first bytes
/// or its fixed fields), which lies inside the descriptor: the sum cannot
/// wrap, and is a plain addition.
#[inline(always)]
const fn fault(base: u32, at: u8, kind: DescriptorErrorKind) -> DescriptorError {
    DescriptorError::new(base.wrapping_add(at as u32), kind)
}

/// [`DescriptorErrorKind::InvalidValue`] of `field`.
#[inline(always)]
const fn invalid(field: FieldName, value: u64) -> DescriptorErrorKind {
    DescriptorErrorKind::InvalidValue { field, value }
}

impl<'a> Quantization<'a> {
    /// A section holding `scheme` with no padding.
    #[must_use]
    pub const fn new(scheme: Scheme<'a>) -> Self {
        Self { scheme, padding: 0 }
    }

    /// Reads and checks the section (everything that does not need the
    /// buffer table), and returns what the cross-part rules read of it (the
    /// view decodes the scheme again on access: [`read`](Self::read)).
    pub(crate) fn parse(
        r: &mut Reader<'a>,
        ctx: &QuantCtx<impl Shape>,
    ) -> Result<Params, DescriptorError> {
        let len = r.u32()?;
        let at = r.pos();
        let payload = r.bytes(len as usize)?;
        #[cfg(not(target_os = "none"))]
        if let Some(p) = per_block_holds(payload, ctx) {
            // Debug builds hold the acceptance to the rules it shortcuts.
            debug_assert_eq!(Self::parse_rules(payload, ctx, at, len).ok(), Some(p));
            return Ok(p);
        }
        Self::parse_rules(payload, ctx, at, len)
    }

    /// [`parse`](Self::parse)'s rules over the payload at `at` (whose
    /// length field said `len`), in their order. Off bare metal out of
    /// line, so that the per-block acceptance's path stays short (ADR-127).
    #[cfg_attr(not(target_os = "none"), inline(never))]
    fn parse_rules(
        payload: &'a [u8],
        ctx: &QuantCtx<impl Shape>,
        at: u32,
        len: u32,
    ) -> Result<Params, DescriptorError> {
        let (v, _) = decode(payload, ctx.accept_private, at, len)?;
        if let Some(row) = row(v.tag) {
            v.check_shape(row, ctx, at)?;
        }
        Ok(v.params())
    }

    /// The section of a validated payload (a parsed view's accessor): the
    /// same decoder as the parse, so the values cannot differ from what was
    /// checked; `None` only for bytes no parse accepted.
    pub(crate) fn read(payload: &'a [u8]) -> Option<Self> {
        let (v, padding) = decode(payload, true, 0, 0).ok()?;
        Some(Self {
            scheme: v.scheme()?,
            padding,
        })
    }

    /// The section's rules on the values, for an encoder (`at`: the offset
    /// of the section's length field): what
    /// [`parse`](Self::parse) checks of a payload that its own fields
    /// wrote, in the same order. `Ok(false)` when the values have no
    /// encoding (a private scheme with a public tag).
    #[inline(always)] // two callers; the encoder's acceptance is the hot one
    pub(crate) fn check(
        &self,
        ctx: &QuantCtx<impl Shape>,
        at: u32,
    ) -> Result<bool, DescriptorError> {
        let base = at.saturating_add(4);
        let v = Values::of(&self.scheme);
        let Some(row) = row(v.tag) else {
            if !crate::codes::is_private_code(v.tag) {
                return Ok(false);
            }
            if !ctx.accept_private {
                let (field, code) = (FieldName::SchemeTag, v.tag);
                let kind = DescriptorErrorKind::PrivateCodeRefused { field, code };
                return Err(DescriptorError::new(base, kind));
            }
            return Ok(true);
        };
        v.check(row, base)?;
        v.check_shape(row, ctx, base)?;
        Ok(true)
    }

    /// Writes the section: a public scheme as its row lays it out (the
    /// parser's table), a private one as its header and bytes.
    #[inline]
    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        let padding = self.padding;
        let v = Values::of(&self.scheme);
        if let Some(row) = row(v.tag) {
            let image = v.image(row, padding);
            w.bytes(
                image
                    .get(..usize::from(row.len).wrapping_add(4))
                    .unwrap_or(&[]),
            );
        } else if let Some((version, flags, payload)) = v.private {
            #[allow(clippy::cast_possible_truncation)] // saturated to `u32`
            let len = self
                .scheme
                .encoded_len()
                .saturating_add(padding as usize)
                .min(u32::MAX as usize) as u32;
            w.u32(len);
            w.value(&SchemeHeader {
                scheme_tag: v.tag,
                scheme_version: version,
                flags: U16::new(flags),
            });
            w.bytes(payload);
        }
        if padding != 0 {
            w.zeros(padding as usize);
        }
    }
}

impl Quantization<'_> {
    /// A per-block affine section's fixed part (length, scheme header,
    /// fields), `None` for any other scheme.
    #[inline(always)]
    fn per_block(&self) -> Option<Fixed> {
        let Scheme::PerBlock {
            axis,
            block_size,
            scale_buffer,
            zero_point_buffer,
            scale_type,
        } = self.scheme
        else {
            return None;
        };
        // The three scale types the scheme allows as constants (no lookup);
        // any other is written as its code and refused by the rules.
        let scale_type_tag = match scale_type {
            ElementType::Float16 => const { ElementType::Float16.code() },
            ElementType::BFloat16 => const { ElementType::BFloat16.code() },
            ElementType::Float32 => const { ElementType::Float32.code() },
            other => other.code(),
        };
        let flags = if zero_point_buffer.is_none() {
            SYMMETRIC
        } else {
            0
        };
        let head = SchemeHeader {
            scheme_tag: scheme_tag::PER_BLOCK,
            scheme_version: 1,
            flags: U16::new(flags),
        };
        let fields = PerBlockFields {
            axis: U32::new(axis),
            block_size: U32::new(block_size),
            scale_buffer_index: U32::new(scale_buffer),
            zero_point_buffer_index: U32::new(zero_point_buffer.unwrap_or(NO_BUFFER)),
            scale_type_tag,
            reserved: [0; 3],
        };
        // The length: the header's and the fields' size, and the padding.
        let fixed = crate::field::offset32(
            size_of::<SchemeHeader>().saturating_add(size_of::<PerBlockFields>()),
        );
        let length = U32::new(fixed.saturating_add(self.padding));
        Some(Fixed {
            length,
            head,
            fields,
        })
    }

    /// Writes the section at the front of `out` and returns its length,
    /// `None` if it does not fit: the encoder's straight path (ADR-130). A
    /// per-block affine section with no padding (the commonest) is one
    /// fixed-size store; any other goes through [`encode`](Self::encode).
    #[inline(always)]
    pub(crate) fn write_to(&self, out: &mut [u8]) -> Option<usize> {
        const LEN: usize = size_of::<Fixed>();
        if let (Scheme::PerBlock { .. }, 0) = (self.scheme, self.padding) {
            let (dst, _) = out.split_first_chunk_mut::<LEN>()?;
            *dst = zerocopy::transmute!(self.per_block()?);
            return Some(LEN);
        }
        let mut w = Writer::new(out);
        self.encode(&mut w);
        w.finish().ok()
    }
}

/// A per-block affine section's fixed part as the encoder writes it: the
/// section's length, the scheme header and the scheme's fields, in one
/// store (the longest public scheme's: every row's image fits it).
#[derive(zerocopy::IntoBytes, zerocopy::Immutable, zerocopy::Unaligned)]
#[repr(C, packed)]
struct Fixed {
    length: U32,
    head: SchemeHeader,
    fields: PerBlockFields,
}

/// The payload's own rules, in their order, over the payload at `base`
/// (whose length field said `len`): the header, then a public scheme's
/// fields through its row. The values and the count of padding bytes.
#[inline(always)]
fn decode(
    payload: &[u8],
    accept_private: bool,
    base: u32,
    len: u32,
) -> Result<(Values<'_>, u32), DescriptorError> {
    let fail = |at, kind| Err(fault(base, at, kind));
    // A payload shorter than its fields: the length field (4 bytes before
    // the payload) is at fault.
    let short = || {
        Err(DescriptorError::new(
            base.saturating_sub(4),
            invalid(FieldName::QuantizationLength, len.into()),
        ))
    };
    let Ok((head, rest)) = SchemeHeader::ref_from_prefix(payload) else {
        return short();
    };
    let (tag, version, flags) = (head.scheme_tag, head.scheme_version, head.flags.get());
    let mut v = Values::empty(tag);
    let Some(row) = row(tag) else {
        if !crate::codes::is_private_code(tag) {
            return fail(0, invalid(FieldName::SchemeTag, tag.into()));
        }
        if !accept_private {
            let (field, code) = (FieldName::SchemeTag, tag);
            return fail(0, DescriptorErrorKind::PrivateCodeRefused { field, code });
        }
        v.private = Some((version, flags, rest));
        return Ok((v, 0));
    };
    if version != 1 {
        let kind = invalid(FieldName::SchemeVersion, version.into());
        return fail(VERSION_AT, kind);
    }
    let symmetric_allowed = row.zero_at != 0;
    let reserved_flags = flags & !(SYMMETRIC * u16::from(symmetric_allowed));
    if reserved_flags != 0 {
        let kind = DescriptorErrorKind::ReservedFlags(reserved_flags.into());
        return fail(FLAGS_AT, kind);
    }
    let Some((fixed, padding)) = payload.split_at_checked(row.len.into()) else {
        return short();
    };
    let reserved = fixed.iter().skip(row.reserved.into());
    if reserved.copied().any(|b| b != 0) {
        let field = row.reserved_field;
        return fail(row.reserved, DescriptorErrorKind::ReservedNonZero { field });
    }
    let word = |at: u8| {
        let bytes = fixed.get(usize::from(at)..).and_then(<[u8]>::first_chunk);
        bytes.map_or(0, |b| u32::from_le_bytes(*b))
    };
    (v.w4, v.w8, v.scale) = (word(AXIS_AT), word(BLOCK_SIZE_AT), word(row.scale_at));
    if row.type_at != 0 {
        // The scale type: a type code (per-channel: float32) before the
        // zero point; which types may scale is a rule of the value.
        let code = fixed.get(usize::from(row.type_at)).copied().unwrap_or(0);
        let t = ElementType::from_code(code);
        let Some(t) = t.filter(|&t| !row.f32_only || matches!(t, ElementType::Float32)) else {
            return fail(row.type_at, invalid(FieldName::ScaleTypeTag, code.into()));
        };
        (v.scale_type, v.scale_code) = (t, code);
    }
    if symmetric_allowed {
        // Symmetric: no zero points, and the index is `0xFFFFFFFF`.
        let index = word(row.zero_at);
        let symmetric = flags & SYMMETRIC != 0;
        if symmetric && index != NO_BUFFER {
            let kind = invalid(FieldName::ZeroPointBufferIndex, index.into());
            return fail(row.zero_at, kind);
        }
        v.zero = (!symmetric).then_some(index);
    }
    v.check(row, base)?;
    // Writer padding: whatever is left, all zero.
    if padding.iter().any(|&b| b != 0) {
        let kind = DescriptorErrorKind::ReservedNonZero {
            field: FieldName::QuantizationPadding,
        };
        return fail(row.len, kind);
    }
    #[allow(clippy::cast_possible_truncation)] // < quantization_length, a u32
    Ok((v, padding.len() as u32))
}

/// The types that may scale, by code − 1.
#[cfg(not(target_os = "none"))]
const SCALES: [ElementType; 3] = [
    ElementType::Float16,
    ElementType::BFloat16,
    ElementType::Float32,
];
#[cfg(not(target_os = "none"))]
const _: () = assert!(SCALES[0].code() == 1 && SCALES[1].code() == 2 && SCALES[2].code() == 3);

/// Per-block affine's payload up to its padding: the scheme header and
/// the scheme's fields, read as one value by [`per_block_holds`].
#[cfg(not(target_os = "none"))]
#[derive(zerocopy::FromBytes, zerocopy::KnownLayout, zerocopy::Immutable, zerocopy::Unaligned)]
#[repr(C)]
struct PerBlockPayload {
    head: SchemeHeader,
    fields: PerBlockFields,
}

/// The per-block affine payload's acceptance (the commonest scheme of
/// quantized weights): `Some` of what the cross-part rules read when every
/// rule of [`Quantization::parse`] holds for it, `None` otherwise — for
/// every other scheme, and for any payload a rule refuses, which the full
/// rules then name in their order. It decides only "every rule holds": the
/// header word against tag 3, version 1 and at most the `SYMMETRIC` flag,
/// the reserved and padding bytes zero, the scale type a type code and the
/// symmetric flag matching the zero-point index; then the rules on the
/// values and the shape, the same functions the full path runs, inlined
/// with the row known so that most of them fold away (ADR-127). Off on
/// bare metal, where the flash budget keeps the one path.
#[cfg(not(target_os = "none"))]
#[inline(always)]
fn per_block_holds(payload: &[u8], ctx: &QuantCtx<impl Shape>) -> Option<Params> {
    let (w, padding) = PerBlockPayload::ref_from_prefix(payload).ok()?;
    // The header as one word: the tag, version 1 and no flag but
    // `SYMMETRIC` (the flags are its upper half, little-endian).
    const _: () = assert!(offset_of!(SchemeHeader, flags) == 2);
    let head: &U32 = zerocopy::transmute_ref!(&w.head);
    let [symmetric_lo, symmetric_hi] = SYMMETRIC.to_le_bytes();
    let symmetric_bit = u32::from_le_bytes([0, 0, symmetric_lo, symmetric_hi]);
    let expected = u32::from_le_bytes([scheme_tag::PER_BLOCK, 1, 0, 0]);
    let f = &w.fields;
    if head.get() & !symmetric_bit != expected || f.reserved != [0; 3] {
        return None;
    }
    let symmetric = w.head.flags.get() & SYMMETRIC != 0;
    let index = f.zero_point_buffer_index.get();
    if symmetric && index != NO_BUFFER {
        return None;
    }
    let v = Values {
        w4: f.axis.get(),
        w8: f.block_size.get(),
        scale: f.scale_buffer_index.get(),
        zero: (!symmetric).then_some(index),
        // Only the three types that may scale (no lookup): any other
        // code is refused, and named, by the full rules.
        scale_type: *SCALES.get(usize::from(f.scale_type_tag).wrapping_sub(1))?,
        scale_code: f.scale_type_tag,
        ..Values::empty(scheme_tag::PER_BLOCK)
    };
    let row = row(scheme_tag::PER_BLOCK)?;
    let holds = padding.iter().all(|&b| b == 0)
        && v.check(row, 0).is_ok()
        && v.check_shape(row, ctx, 0).is_ok();
    holds.then(|| v.params())
}
