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

use crate::element::ElementType;
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::field::wire_fields;

use super::super::cursor::{Reader, Writer};
use super::super::extent::Shape;

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

/// Offset of a scheme field in the payload (after the 4-byte header).
macro_rules! at {
    ($s:ident . $f:ident) => {
        crate::field::offset32(size_of::<SchemeHeader>().saturating_add(offset_of!($s, $f)))
    };
}

/// Every public scheme with an axis has it first, and every block scheme
/// its block size second.
const AXIS_AT: u32 = at!(PerChannelFields.axis);
const BLOCK_SIZE_AT: u32 = at!(PerBlockFields.block_size);
const _: () = assert!(AXIS_AT == at!(PerBlockFields.axis) && AXIS_AT == at!(BlockScaleFields.axis));
const _: () = assert!(BLOCK_SIZE_AT == at!(BlockScaleFields.block_size));

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

/// What a reader must know to check a quantization section.
pub(crate) struct QuantCtx<S> {
    pub(crate) shape: S,
    pub(crate) storage: ElementType,
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
    /// flat (one match here instead of one per rule).
    #[inline]
    pub(crate) const fn params(&self) -> Params {
        let none = Params {
            scale: None,
            zero: None,
            axis: 0,
            block_size: 0,
            scale_width: 4,
            pads: false,
            private: false,
        };
        match *self {
            Self::PerTensor { .. } => none,
            Self::Private { .. } => Params {
                private: true,
                ..none
            },
            Self::PerChannel {
                axis,
                scale_buffer,
                zero_point_buffer,
            } => Params {
                scale: Some(scale_buffer),
                zero: zero_point_buffer,
                axis,
                ..none
            },
            Self::PerBlock {
                axis,
                block_size,
                scale_buffer,
                zero_point_buffer,
                scale_type,
            } => Params {
                scale: Some(scale_buffer),
                zero: zero_point_buffer,
                axis,
                block_size,
                scale_width: if matches!(scale_type, ElementType::Float32) {
                    4
                } else {
                    2
                },
                // Whole blocks stored (partial trailing blocks padded).
                pads: true,
                private: false,
            },
            Self::Nf4 {
                axis,
                block_size,
                scale_buffer,
            } => Params {
                scale: Some(scale_buffer),
                axis,
                block_size,
                pads: true,
                ..none
            },
            Self::Mxfp {
                axis,
                block_size,
                scale_buffer,
            } => Params {
                scale: Some(scale_buffer),
                axis,
                block_size,
                scale_width: 1,
                ..none
            },
        }
    }

    /// The scheme's own rules on its values (errors located relative to
    /// the payload): a finite non-zero per-tensor scale, a per-block scale
    /// type of 16 or 32 bits, an asymmetric zero point in a real buffer.
    /// The parser runs them on what it read (inlined into each scheme's
    /// branch, where only that scheme's rule remains), the encoder on what
    /// it writes.
    #[inline(always)]
    fn check_values(&self) -> Result<(), DescriptorError> {
        let (at, kind) = match *self {
            Self::PerTensor { scale, .. } if !scale.is_finite() || scale == 0.0 => (
                at!(PerTensorFields.scale),
                DescriptorErrorKind::ParameterOutOfRange { field: "scale" },
            ),
            Self::PerChannel {
                zero_point_buffer: Some(NO_BUFFER),
                ..
            } => (
                at!(PerChannelFields.zero_point_buffer_index),
                DescriptorErrorKind::InvalidValue {
                    field: "zero_point_buffer_index",
                    value: u64::from(NO_BUFFER),
                },
            ),
            Self::PerBlock {
                scale_type,
                zero_point_buffer,
                ..
            } => {
                if !matches!(
                    scale_type,
                    ElementType::Float16 | ElementType::BFloat16 | ElementType::Float32
                ) {
                    (
                        at!(PerBlockFields.scale_type_tag),
                        DescriptorErrorKind::InvalidValue {
                            field: "scale_type_tag",
                            value: u64::from(scale_type.code()),
                        },
                    )
                } else if zero_point_buffer == Some(NO_BUFFER) {
                    (
                        at!(PerBlockFields.zero_point_buffer_index),
                        DescriptorErrorKind::InvalidValue {
                            field: "zero_point_buffer_index",
                            value: u64::from(NO_BUFFER),
                        },
                    )
                } else {
                    return Ok(());
                }
            }
            _ => return Ok(()),
        };
        Err(DescriptorError::new(at, kind))
    }

    const fn storage_allowed(&self, t: ElementType) -> bool {
        use ElementType as E;
        match self {
            Self::PerTensor { .. } | Self::PerChannel { .. } => matches!(
                t,
                E::Int8
                    | E::UInt8
                    | E::Int16
                    | E::UInt16
                    | E::Int32
                    | E::UInt32
                    | E::Int4
                    | E::UInt4
                    | E::Int2
                    | E::UInt2
            ),
            Self::PerBlock { .. } => matches!(
                t,
                E::Int8 | E::UInt8 | E::Int4 | E::UInt4 | E::Int2 | E::UInt2
            ),
            Self::Nf4 { .. } => matches!(t, E::UInt4),
            Self::Mxfp { .. } => matches!(
                t,
                E::Float8E4M3
                    | E::Float8E5M2
                    | E::Float4E2M1
                    | E::Float6E2M3
                    | E::Float6E3M2
                    | E::Int8
                    | E::Int4
            ),
            Self::Private { .. } => true,
        }
    }
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
        let this = Self::parse_payload(payload, ctx.accept_private)
            .and_then(|q| q.check_shape(ctx).map(|()| q.scheme.params()).map_err(At))
            .map_err(|e| match e {
                // A payload shorter than its fields: the length field (4
                // bytes before the payload) is at fault.
                Short => DescriptorError::new(
                    at.saturating_sub(4),
                    DescriptorErrorKind::InvalidValue {
                        field: "quantization_length",
                        value: u64::from(len),
                    },
                ),
                At(e) => DescriptorError::new(at.saturating_add(e.offset()), e.kind()),
            })?;
        Ok(this)
    }

    /// The section of a validated payload (a parsed view's accessor): the
    /// same decoder as the parse, so the values cannot differ from what was
    /// checked; `None` only for bytes no parse accepted.
    pub(crate) fn read(payload: &'a [u8]) -> Option<Self> {
        Self::parse_payload(payload, true).ok()
    }

    /// The scheme's own rules, over its payload; errors are located
    /// relative to the payload.
    #[inline(always)]
    fn parse_payload(payload: &'a [u8], accept_private: bool) -> Result<Self, PayloadError> {
        let (head, rest) = SchemeHeader::ref_from_prefix(payload).map_err(|_| Short)?;
        let err = |pos: u32, kind| At(DescriptorError::new(pos, kind));
        let invalid = |pos: u32, field, value: u64| {
            err(pos, DescriptorErrorKind::InvalidValue { field, value })
        };
        let (tag, flags) = (head.scheme_tag, head.flags.get());
        if crate::codes::is_private_code(tag) {
            if !accept_private {
                let kind = DescriptorErrorKind::PrivateCodeRefused {
                    field: "scheme_tag",
                    code: tag,
                };
                return Err(err(0, kind));
            }
            let scheme = Scheme::Private {
                tag,
                version: head.scheme_version,
                flags,
                payload: rest,
            };
            return Ok(Self::new(scheme));
        }
        if !(scheme_tag::PER_TENSOR..=scheme_tag::MXFP).contains(&tag) {
            return Err(invalid(0, "scheme_tag", u64::from(tag)));
        }
        if head.scheme_version != 1 {
            let at = crate::field::at!(SchemeHeader.scheme_version);
            return Err(invalid(
                at,
                "scheme_version",
                u64::from(head.scheme_version),
            ));
        }
        let symmetric_allowed = matches!(tag, scheme_tag::PER_CHANNEL | scheme_tag::PER_BLOCK);
        let reserved_flags = flags & !(SYMMETRIC * u16::from(symmetric_allowed));
        if reserved_flags != 0 {
            let at = crate::field::at!(SchemeHeader.flags);
            return Err(err(
                at,
                DescriptorErrorKind::ReservedFlags(u32::from(reserved_flags)),
            ));
        }
        let symmetric = flags & SYMMETRIC != 0;
        let reserved = |bytes: &[u8], at: u32, field| {
            if bytes.iter().any(|&b| b != 0) {
                return Err(err(at, DescriptorErrorKind::ReservedNonZero { field }));
            }
            Ok(())
        };
        let zero_point = |index: u32, at: u32| {
            zero_point(symmetric, index).ok_or(invalid(
                at,
                "zero_point_buffer_index",
                u64::from(index),
            ))
        };
        let (scheme, padding) = match tag {
            scheme_tag::PER_TENSOR => {
                let (f, padding) = PerTensorFields::ref_from_prefix(rest).map_err(|_| Short)?;
                reserved(
                    &f.reserved,
                    at!(PerTensorFields.reserved),
                    "per_tensor._reserved",
                )?;
                let (scale, zero_point) = (f.scale.get(), f.zero_point.get());
                let scheme = Scheme::PerTensor { scale, zero_point };
                scheme.check_values().map_err(At)?;
                (scheme, padding)
            }
            scheme_tag::PER_CHANNEL => {
                let (f, padding) = PerChannelFields::ref_from_prefix(rest).map_err(|_| Short)?;
                reserved(
                    &f.reserved,
                    at!(PerChannelFields.reserved),
                    "per_channel._reserved",
                )?;
                if f.scale_type_tag != ElementType::Float32.code() {
                    let at = at!(PerChannelFields.scale_type_tag);
                    return Err(invalid(at, "scale_type_tag", u64::from(f.scale_type_tag)));
                }
                let zp_at = at!(PerChannelFields.zero_point_buffer_index);
                let scheme = Scheme::PerChannel {
                    axis: f.axis.get(),
                    scale_buffer: f.scale_buffer_index.get(),
                    zero_point_buffer: zero_point(f.zero_point_buffer_index.get(), zp_at)?,
                };
                scheme.check_values().map_err(At)?;
                (scheme, padding)
            }
            scheme_tag::PER_BLOCK => {
                let (f, padding) = PerBlockFields::ref_from_prefix(rest).map_err(|_| Short)?;
                reserved(
                    &f.reserved,
                    at!(PerBlockFields.reserved),
                    "per_block._reserved",
                )?;
                // Which types may scale is a rule of the value
                // (`check_values`); here only whether the code is a type.
                let Some(scale_type) = ElementType::from_code(f.scale_type_tag) else {
                    let at = at!(PerBlockFields.scale_type_tag);
                    return Err(invalid(at, "scale_type_tag", u64::from(f.scale_type_tag)));
                };
                let zp_at = at!(PerBlockFields.zero_point_buffer_index);
                let scheme = Scheme::PerBlock {
                    axis: f.axis.get(),
                    block_size: f.block_size.get(),
                    scale_buffer: f.scale_buffer_index.get(),
                    zero_point_buffer: zero_point(f.zero_point_buffer_index.get(), zp_at)?,
                    scale_type,
                };
                scheme.check_values().map_err(At)?;
                (scheme, padding)
            }
            // NF4 or MXFP (the tag range was checked above).
            _ => {
                let (f, padding) = BlockScaleFields::ref_from_prefix(rest).map_err(|_| Short)?;
                let (axis, block_size) = (f.axis.get(), f.block_size.get());
                let scale_buffer = f.scale_buffer_index.get();
                let scheme = if tag == scheme_tag::NF4 {
                    Scheme::Nf4 {
                        axis,
                        block_size,
                        scale_buffer,
                    }
                } else {
                    Scheme::Mxfp {
                        axis,
                        block_size,
                        scale_buffer,
                    }
                };
                (scheme, padding)
            }
        };
        // Writer padding: whatever is left, all zero.
        if padding.iter().any(|&b| b != 0) {
            #[allow(clippy::cast_possible_truncation)] // < quantization_length, a u32
            let at = payload.len().saturating_sub(padding.len()) as u32;
            return Err(err(
                at,
                DescriptorErrorKind::ReservedNonZero {
                    field: "quantization padding",
                },
            ));
        }
        #[allow(clippy::cast_possible_truncation)]
        let padding = padding.len() as u32; // < quantization_length, a u32
        Ok(Self { scheme, padding })
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
        let payload_at = at.saturating_add(4);
        let located = |e: DescriptorError| {
            DescriptorError::new(payload_at.saturating_add(e.offset()), e.kind())
        };
        if let Scheme::Private { tag, .. } = self.scheme {
            if !crate::codes::is_private_code(tag) {
                return Ok(false);
            }
            if !ctx.accept_private {
                let kind = DescriptorErrorKind::PrivateCodeRefused {
                    field: "scheme_tag",
                    code: tag,
                };
                return Err(DescriptorError::new(payload_at, kind));
            }
        }
        self.scheme.check_values().map_err(located)?;
        self.shape_rules(ctx).map_err(located)?;
        Ok(true)
    }

    /// Rules between the scheme and the tensor's type and shape. Errors are
    /// located relative to the payload (the caller adds its offset).
    fn check_shape(&self, ctx: &QuantCtx<impl Shape>) -> Result<(), DescriptorError> {
        self.shape_rules(ctx)
    }

    /// [`check_shape`](Self::check_shape)'s body, inlined into the
    /// encoder's acceptance (where the scheme is known and most of it folds
    /// away); the parser keeps the out-of-line call, which costs it less.
    #[inline(always)]
    fn shape_rules(&self, ctx: &QuantCtx<impl Shape>) -> Result<(), DescriptorError> {
        let s = &self.scheme;
        let err = |pos, kind| Err(DescriptorError::new(pos, kind));
        if !s.storage_allowed(ctx.storage) {
            return err(
                0,
                DescriptorErrorKind::StorageTypeNotAllowed {
                    scheme: s.tag(),
                    type_tag: ctx.storage.code(),
                },
            );
        }
        if let Scheme::PerTensor { zero_point, .. } = *s {
            let in_range = ctx
                .storage
                .integer_range()
                .is_some_and(|(lo, hi)| (lo..=hi).contains(&i64::from(zero_point)));
            if !in_range {
                return err(
                    8,
                    DescriptorErrorKind::ParameterOutOfRange {
                        field: "zero_point",
                    },
                );
            }
        }
        let axis = match *s {
            Scheme::PerChannel { axis, .. } => axis,
            _ => match s.blocks() {
                Some((axis, _)) => axis,
                None => return Ok(()),
            },
        };
        #[allow(clippy::cast_possible_truncation)]
        let rank = ctx.shape.rank() as u32;
        let Some(size) = ctx.shape.dim(axis as usize) else {
            return err(AXIS_AT, DescriptorErrorKind::AxisOutOfRange { axis, rank });
        };
        if size == crate::DYNAMIC {
            return err(
                AXIS_AT,
                DescriptorErrorKind::DynamicDimension {
                    field: "shape",
                    axis,
                },
            );
        }
        if let Some((_, k)) = s.blocks() {
            let (min, max) = match s {
                Scheme::Nf4 { .. } => (8, u32::MAX),
                Scheme::Mxfp { .. } => (16, 2048),
                _ => (2, u32::MAX),
            };
            let valid = k.is_power_of_two() && k >= min && k <= max;
            let fits = match s {
                // No partial blocks: a positive multiple of the block size.
                // `k` is a power of two (checked just above).
                Scheme::Mxfp { .. } => {
                    size > 0 && super::super::extent::is_multiple_of_pow2(size, u64::from(k))
                }
                // A non-empty axis holds at least one whole block.
                _ => size == 0 || u64::from(k) <= size,
            };
            if !valid || !fits {
                return err(
                    BLOCK_SIZE_AT,
                    DescriptorErrorKind::InvalidValue {
                        field: "block_size",
                        value: u64::from(k),
                    },
                );
            }
        }
        // Block-paged: parameters are per page slot, so a block scheme
        // blocks the paged axis (0) one page at a time, and per-channel
        // never quantizes the paged axis. Structural, so checked even when
        // a dimension is dynamic.
        if let Some(page_size) = ctx.page_size {
            let invalid = |pos, field, value: u32| {
                err(
                    pos,
                    DescriptorErrorKind::InvalidValue {
                        field,
                        value: u64::from(value),
                    },
                )
            };
            match s.blocks() {
                None if axis == 0 => return invalid(AXIS_AT, "axis", axis),
                Some((axis, _)) if axis != 0 => return invalid(AXIS_AT, "axis", axis),
                Some((_, k)) if k != page_size => return invalid(BLOCK_SIZE_AT, "block_size", k),
                _ => {}
            }
        }
        Ok(())
    }

    /// Writes the section through the same field structs the parser
    /// reads: the length (known beforehand), the scheme header and the
    /// scheme's fields as one store, each scheme in one arm (its tag, flags
    /// and length are constants there: one dispatch, ADR-127).
    #[inline]
    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        let padding = self.padding;
        match self.scheme {
            Scheme::PerTensor { scale, zero_point } => w.value(&Fixed::new(
                padding,
                SchemeHeader::public(scheme_tag::PER_TENSOR, 0),
                PerTensorFields {
                    scale: F32::new(scale),
                    zero_point: I32::new(zero_point),
                    reserved: [0; 4],
                },
            )),
            Scheme::PerChannel {
                axis,
                scale_buffer,
                zero_point_buffer,
            } => w.value(&Fixed::new(
                padding,
                SchemeHeader::public(scheme_tag::PER_CHANNEL, symmetric(zero_point_buffer)),
                PerChannelFields {
                    axis: U32::new(axis),
                    scale_buffer_index: U32::new(scale_buffer),
                    zero_point_buffer_index: U32::new(zero_point_buffer.unwrap_or(NO_BUFFER)),
                    scale_type_tag: ElementType::Float32.code(),
                    reserved: [0; 3],
                },
            )),
            Scheme::PerBlock { .. } => {
                if let Some(fixed) = self.per_block() {
                    w.value(&fixed);
                }
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
            } => w.value(&Fixed::new(
                padding,
                SchemeHeader::public(self.scheme.tag(), 0),
                BlockScaleFields {
                    axis: U32::new(axis),
                    block_size: U32::new(block_size),
                    scale_buffer_index: U32::new(scale_buffer),
                },
            )),
            Scheme::Private {
                tag,
                version,
                flags,
                payload,
            } => {
                #[allow(clippy::cast_possible_truncation)] // saturated to `u32`
                let len = self
                    .scheme
                    .encoded_len()
                    .saturating_add(padding as usize)
                    .min(u32::MAX as usize) as u32;
                w.u32(len);
                w.value(&SchemeHeader {
                    scheme_tag: tag,
                    scheme_version: version,
                    flags: U16::new(flags),
                });
                w.bytes(payload);
            }
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
    fn per_block(&self) -> Option<Fixed<PerBlockFields>> {
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
        Some(Fixed::new(
            self.padding,
            SchemeHeader::public(scheme_tag::PER_BLOCK, symmetric(zero_point_buffer)),
            PerBlockFields {
                axis: U32::new(axis),
                block_size: U32::new(block_size),
                scale_buffer_index: U32::new(scale_buffer),
                zero_point_buffer_index: U32::new(zero_point_buffer.unwrap_or(NO_BUFFER)),
                scale_type_tag,
                reserved: [0; 3],
            },
        ))
    }

    /// Writes the section at the front of `out` and returns its length,
    /// `None` if it does not fit: the encoder's straight path (ADR-130). A
    /// per-block affine section with no padding (the commonest) is one
    /// fixed-size store; any other goes through [`encode`](Self::encode).
    #[inline(always)]
    pub(crate) fn write_to(&self, out: &mut [u8]) -> Option<usize> {
        const LEN: usize = size_of::<Fixed<PerBlockFields>>();
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

impl SchemeHeader {
    /// A public scheme's header (version 1) with `flags`, as the encoder
    /// writes it.
    #[inline(always)]
    const fn public(scheme_tag: u8, flags: u16) -> Self {
        Self {
            scheme_tag,
            scheme_version: 1,
            flags: U16::new(flags),
        }
    }
}

/// A per-channel or per-block scheme's flags: `SYMMETRIC` when it has no
/// zero-point buffer.
#[inline(always)]
const fn symmetric(zero_point_buffer: Option<u32>) -> u16 {
    if zero_point_buffer.is_none() {
        SYMMETRIC
    } else {
        0
    }
}

/// A public scheme's fixed part as the encoder writes it: the section's
/// length, the scheme header and the scheme's fields, in one store.
#[derive(zerocopy::IntoBytes, zerocopy::Immutable, zerocopy::Unaligned)]
#[repr(C, packed)]
struct Fixed<F> {
    length: U32,
    head: SchemeHeader,
    fields: F,
}

impl<F> Fixed<F> {
    /// The fixed part of a section with `padding` zero bytes after it:
    /// its length is the header's and the fields' size plus the padding
    /// (saturated, as the length field is a `u32`).
    #[inline(always)]
    const fn new(padding: u32, head: SchemeHeader, fields: F) -> Self {
        let fixed =
            crate::field::offset32(size_of::<SchemeHeader>().saturating_add(size_of::<F>()));
        Self {
            length: U32::new(fixed.saturating_add(padding)),
            head,
            fields,
        }
    }
}

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
/// the reserved and padding bytes zero, the scale type a type code; then
/// the scheme's own rules and its shape rules, the same functions the full
/// path runs, inlined with the scheme known so that most of them fold away
/// (ADR-127). Off on bare metal, where the flash budget keeps the one path.
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
    let q = Quantization {
        scheme: Scheme::PerBlock {
            axis: f.axis.get(),
            block_size: f.block_size.get(),
            scale_buffer: f.scale_buffer_index.get(),
            zero_point_buffer: zero_point(symmetric, f.zero_point_buffer_index.get())?,
            scale_type: ElementType::from_code(f.scale_type_tag)?,
        },
        padding: 0,
    };
    let holds = padding.iter().all(|&b| b == 0)
        && q.scheme.check_values().is_ok()
        && q.shape_rules(ctx).is_ok();
    holds.then(|| q.scheme.params())
}

/// Why a payload was refused: too short for its fields (the length's
/// fault), or a rule broken at a payload offset.
enum PayloadError {
    Short,
    At(DescriptorError),
}
use PayloadError::{At, Short};

/// The zero-point buffer of a scheme with a `SYMMETRIC` flag: `None` when
/// symmetric (the index must then be `0xFFFFFFFF`); an asymmetric scheme
/// must name a real buffer. `Some(..)` of the result is "valid".
const fn zero_point(symmetric: bool, index: u32) -> Option<Option<u32>> {
    match (symmetric, index) {
        (true, NO_BUFFER) => Some(None),
        // `NO_BUFFER` is refused by `Scheme::check_values`.
        (false, i) => Some(Some(i)),
        _ => None,
    }
}
