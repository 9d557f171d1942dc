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

use zerocopy::little_endian::{F32, I32, U16, U32};

use crate::element::ElementType;
use crate::error::{DescriptorError, DescriptorErrorKind};

use super::super::arrays::Dims;
use super::super::cursor::{Reader, Writer};

/// `zero_point_buffer_index` of a symmetric scheme.
pub const NO_BUFFER: u32 = u32::MAX;

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

/// What a reader must know to check a quantization section.
pub(crate) struct QuantCtx<'a> {
    pub(crate) shape: Dims<'a>,
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
            Self::PerTensor { .. } => 0x01,
            Self::PerChannel { .. } => 0x02,
            Self::PerBlock { .. } => 0x03,
            Self::Nf4 { .. } => 0x04,
            Self::Mxfp { .. } => 0x05,
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
        match self {
            Self::PerTensor { .. } | Self::Nf4 { .. } | Self::Mxfp { .. } => 16,
            Self::PerChannel { .. } => 20,
            Self::PerBlock { .. } => 24,
            Self::Private { payload, .. } => 4usize.saturating_add(payload.len()),
        }
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
        match *self {
            Self::PerChannel {
                scale_buffer,
                zero_point_buffer,
                ..
            }
            | Self::PerBlock {
                scale_buffer,
                zero_point_buffer,
                ..
            } => (Some(scale_buffer), zero_point_buffer),
            Self::Nf4 { scale_buffer, .. } | Self::Mxfp { scale_buffer, .. } => {
                (Some(scale_buffer), None)
            }
            Self::PerTensor { .. } | Self::Private { .. } => (None, None),
        }
    }

    /// Bytes per scale value.
    pub(crate) const fn scale_width(&self) -> u64 {
        match self {
            Self::PerBlock { scale_type, .. } => match scale_type {
                ElementType::Float32 => 4,
                _ => 2,
            },
            Self::Mxfp { .. } => 1,
            _ => 4,
        }
    }

    /// Whether the data buffer holds whole blocks (partial trailing blocks
    /// padded): per-block affine and NF4.
    pub(crate) const fn pads_blocks(&self) -> bool {
        matches!(self, Self::PerBlock { .. } | Self::Nf4 { .. })
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
    /// buffer table).
    pub(crate) fn parse(r: &mut Reader<'a>, ctx: &QuantCtx<'a>) -> Result<Self, DescriptorError> {
        let len = r.u32()?;
        let at = r.pos();
        let payload = r.bytes(len as usize)?;
        let mut q = Reader::new(payload);
        let off = |pos: u32| at.saturating_add(pos);
        let err = |pos: u32, kind| DescriptorError::new(off(pos), kind);
        let invalid = |pos: u32, field, value: u64| {
            err(pos, DescriptorErrorKind::InvalidValue { field, value })
        };
        // A payload shorter than its fields reads past `quantization_length`:
        // the length field (4 bytes before the payload) is at fault.
        let short_err = DescriptorError::new(
            at.saturating_sub(4),
            DescriptorErrorKind::InvalidValue {
                field: "quantization_length",
                value: u64::from(len),
            },
        );
        let short = |_| short_err;
        // A reserved run: non-zero bytes are located in the payload, a run
        // cut short by the length is the length's fault.
        let reserved = |q: &mut Reader<'_>, n: usize, field: &'static str| {
            if q.remaining() < n {
                return Err(short_err);
            }
            q.reserved(n, field).map_err(|e| err(e.offset(), e.kind()))
        };

        let tag = q.u8().map_err(short)?;
        let version = q.u8().map_err(short)?;
        let flags = q.take::<U16>().map_err(short)?.get();
        if crate::codes::is_private_code(tag) {
            if !ctx.accept_private {
                return Err(err(
                    0,
                    DescriptorErrorKind::PrivateCodeRefused {
                        field: "scheme_tag",
                        code: tag,
                    },
                ));
            }
            let rest = q.remaining();
            let payload = q.bytes(rest).map_err(short)?;
            return Ok(Self {
                scheme: Scheme::Private {
                    tag,
                    version,
                    flags,
                    payload,
                },
                padding: 0,
            });
        }
        if !(0x01..=0x05).contains(&tag) {
            return Err(invalid(0, "scheme_tag", u64::from(tag)));
        }
        if version != 1 {
            return Err(invalid(1, "scheme_version", u64::from(version)));
        }
        let symmetric_allowed = matches!(tag, 0x02 | 0x03);
        let reserved_flags = flags & !u16::from(symmetric_allowed);
        if reserved_flags != 0 {
            return Err(err(
                2,
                DescriptorErrorKind::ReservedFlags(u32::from(reserved_flags)),
            ));
        }
        let symmetric = flags & 1 != 0;
        let u32_at = |q: &mut Reader<'_>| q.take::<U32>().map(|v| v.get()).map_err(short);
        let scheme = match tag {
            0x01 => {
                let scale = q.take::<F32>().map_err(short)?.get();
                let zero_point = q.take::<I32>().map_err(short)?.get();
                reserved(&mut q, 4, "per_tensor._reserved")?;
                if !scale.is_finite() || scale == 0.0 {
                    return Err(err(
                        4,
                        DescriptorErrorKind::ParameterOutOfRange { field: "scale" },
                    ));
                }
                Scheme::PerTensor { scale, zero_point }
            }
            0x02 => {
                let axis = u32_at(&mut q)?;
                let scale_buffer = u32_at(&mut q)?;
                let zp = u32_at(&mut q)?;
                let scale_type = q.u8().map_err(short)?;
                reserved(&mut q, 3, "per_channel._reserved")?;
                if scale_type != ElementType::Float32.code() {
                    return Err(invalid(16, "scale_type_tag", u64::from(scale_type)));
                }
                Scheme::PerChannel {
                    axis,
                    scale_buffer,
                    zero_point_buffer: zero_point(symmetric, zp).ok_or(invalid(
                        12,
                        "zero_point_buffer_index",
                        u64::from(zp),
                    ))?,
                }
            }
            0x03 => {
                let axis = u32_at(&mut q)?;
                let block_size = u32_at(&mut q)?;
                let scale_buffer = u32_at(&mut q)?;
                let zp = u32_at(&mut q)?;
                let scale_type = q.u8().map_err(short)?;
                reserved(&mut q, 3, "per_block._reserved")?;
                let scale_type = match ElementType::from_code(scale_type) {
                    Some(
                        t @ (ElementType::Float16 | ElementType::BFloat16 | ElementType::Float32),
                    ) => t,
                    _ => return Err(invalid(20, "scale_type_tag", u64::from(scale_type))),
                };
                Scheme::PerBlock {
                    axis,
                    block_size,
                    scale_buffer,
                    zero_point_buffer: zero_point(symmetric, zp).ok_or(invalid(
                        16,
                        "zero_point_buffer_index",
                        u64::from(zp),
                    ))?,
                    scale_type,
                }
            }
            0x04 | 0x05 => {
                let axis = u32_at(&mut q)?;
                let block_size = u32_at(&mut q)?;
                let scale_buffer = u32_at(&mut q)?;
                if tag == 0x04 {
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
                }
            }
            // Checked above: 0x01..=0x05 only.
            _ => return Err(invalid(0, "scheme_tag", u64::from(tag))),
        };
        // Writer padding: whatever is left, all zero.
        let padding_at = q.pos();
        let rest = q.remaining();
        if q.bytes(rest).map_err(short)?.iter().any(|&b| b != 0) {
            return Err(err(
                padding_at,
                DescriptorErrorKind::ReservedNonZero {
                    field: "quantization padding",
                },
            ));
        }
        #[allow(clippy::cast_possible_truncation)]
        let padding = rest as u32; // < quantization_length, a u32
        let this = Self { scheme, padding };
        this.check_shape(ctx)
            .map_err(|e| err(e.offset(), e.kind()))?;
        Ok(this)
    }

    /// Rules between the scheme and the tensor's type and shape. Errors are
    /// located relative to the payload (the caller adds its offset).
    fn check_shape(&self, ctx: &QuantCtx<'_>) -> Result<(), DescriptorError> {
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
        let rank = ctx.shape.len() as u32;
        let Some(size) = ctx.shape.get(axis as usize) else {
            return err(4, DescriptorErrorKind::AxisOutOfRange { axis, rank });
        };
        if size == crate::DYNAMIC {
            return err(
                4,
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
                    8,
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
                None if axis == 0 => return invalid(4, "axis", axis),
                Some((axis, _)) if axis != 0 => return invalid(4, "axis", axis),
                Some((_, k)) if k != page_size => return invalid(8, "block_size", k),
                _ => {}
            }
        }
        Ok(())
    }

    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        let len_at = w.pos();
        w.u32(0);
        let start = w.pos();
        let s = &self.scheme;
        let symmetric = |zp: Option<u32>| u16::from(zp.is_none());
        match *s {
            Scheme::Private {
                tag,
                version,
                flags,
                payload,
            } => {
                w.u8(tag);
                w.u8(version);
                w.bytes(&flags.to_le_bytes());
                w.bytes(payload);
            }
            _ => {
                w.u8(s.tag());
                w.u8(1);
                let flags = match *s {
                    Scheme::PerChannel {
                        zero_point_buffer, ..
                    }
                    | Scheme::PerBlock {
                        zero_point_buffer, ..
                    } => symmetric(zero_point_buffer),
                    _ => 0,
                };
                w.bytes(&flags.to_le_bytes());
            }
        }
        match *s {
            Scheme::PerTensor { scale, zero_point } => {
                w.bytes(&scale.to_le_bytes());
                w.bytes(&zero_point.to_le_bytes());
                w.zeros(4);
            }
            Scheme::PerChannel {
                axis,
                scale_buffer,
                zero_point_buffer,
            } => {
                w.u32(axis);
                w.u32(scale_buffer);
                w.u32(zero_point_buffer.unwrap_or(NO_BUFFER));
                w.u8(ElementType::Float32.code());
                w.zeros(3);
            }
            Scheme::PerBlock {
                axis,
                block_size,
                scale_buffer,
                zero_point_buffer,
                scale_type,
            } => {
                w.u32(axis);
                w.u32(block_size);
                w.u32(scale_buffer);
                w.u32(zero_point_buffer.unwrap_or(NO_BUFFER));
                w.u8(scale_type.code());
                w.zeros(3);
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
            } => {
                w.u32(axis);
                w.u32(block_size);
                w.u32(scale_buffer);
            }
            Scheme::Private { .. } => {}
        }
        w.zeros(self.padding as usize);
        #[allow(clippy::cast_possible_truncation)]
        let len = w.pos().saturating_sub(start).min(u32::MAX as usize) as u32;
        w.patch_u32(len_at, len);
    }
}

/// The zero-point buffer of a scheme with a `SYMMETRIC` flag: `None` when
/// symmetric (the index must then be `0xFFFFFFFF`); an asymmetric scheme
/// must name a real buffer. `Some(..)` of the result is "valid".
const fn zero_point(symmetric: bool, index: u32) -> Option<Option<u32>> {
    match (symmetric, index) {
        (true, NO_BUFFER) => Some(None),
        (false, i) if i != NO_BUFFER => Some(Some(i)),
        _ => None,
    }
}
