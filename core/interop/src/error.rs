//! The two error types of the crate: [`ExportError`] (a hurray tensor that
//! cannot be expressed in DLPack or Arrow, or a caller mistake at export) and
//! [`ImportError`] (a producer value hurray refuses).
//!
//! Both are `Copy`, `#[non_exhaustive]`, carry the offending raw value, and
//! format without allocating.

use core::fmt;

use hurray_core::interop::InteropError;
use hurray_core::{DescriptorError, ElementType, EncodeError, SyncMode};

/// Why a hurray tensor was not exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportError {
    /// The descriptor's layout has no DLPack/Arrow form (only row-major,
    /// column-major and strided tensors are exported); the layout tag.
    UnsupportedLayout(u8),
    /// A quantized tensor: its storage elements mean nothing without the
    /// scales, which neither protocol carries.
    Quantized,
    /// A dimension is dynamic (`u64::MAX`): there is nothing to point at.
    DynamicShape,
    /// More dimensions than the exporters support ([`MAX_NDIM`](crate::MAX_NDIM)).
    TooManyDims(u32),
    /// A dimension or stride does not fit an `i64`.
    Overflow {
        /// What overflowed.
        what: &'static str,
    },
    /// No device or data-type code on the other side (the mapping's error).
    Mapping(InteropError),
    /// The element type has no Arrow type (Arrow tensors take 8- to 64-bit
    /// integers and 16- to 64-bit floats).
    NoArrowType(ElementType),
    /// A rank-0 tensor: an Arrow fixed-shape-tensor array needs a batch
    /// dimension (`length = shape[0]`).
    RankZero,
    /// The strides are not row-major over a batch dimension followed by a
    /// permutation of compact element dimensions, so no Arrow
    /// `permutation` describes them (negative, zero or gapped strides).
    NotPermutedRowMajor,
    /// The buffer's sync mode cannot be honoured by the protocol: DLPack has
    /// no event (wait for it, then export as `ProducerSynced`), Arrow no
    /// consumer stream; an Arrow `Event` export needs a `sync_event`, a
    /// producer-synced one must not pass one.
    Sync(SyncMode),
    /// A non-empty buffer's data pointer is null.
    NullData,
    /// The data pointer is not a multiple of the handle's alignment.
    MisalignedData {
        /// The address.
        address: usize,
        /// The handle's alignment.
        alignment: u32,
    },
    /// A device id does not fit the protocol's field (DLPack: `int32_t`,
    /// non-negative).
    DeviceId(i64),
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::UnsupportedLayout(tag) => write!(
                f,
                "layout tag {tag:#04x} has no DLPack/Arrow form (row-major, column-major and strided only)"
            ),
            Self::Quantized => write!(f, "a quantized tensor cannot be exported"),
            Self::DynamicShape => write!(f, "a tensor with a dynamic dimension cannot be exported"),
            Self::TooManyDims(n) => {
                write!(f, "{n} dimensions exceed the interchange limit of 32")
            }
            Self::Overflow { what } => write!(f, "{what} does not fit an int64"),
            Self::Mapping(e) => write!(f, "{e}"),
            Self::NoArrowType(t) => write!(f, "element type {} has no Arrow type", t.name()),
            Self::RankZero => write!(f, "a rank-0 tensor has no Arrow batch dimension"),
            Self::NotPermutedRowMajor => write!(
                f,
                "strides are not a permutation of row-major under an outermost batch dimension"
            ),
            Self::Sync(mode) => write!(
                f,
                "sync mode {} cannot be expressed by this protocol",
                mode.name()
            ),
            Self::NullData => write!(f, "a non-empty buffer has a null data pointer"),
            Self::MisalignedData { address, alignment } => write!(
                f,
                "data address {address:#x} is not a multiple of the handle's alignment {alignment}"
            ),
            Self::DeviceId(id) => write!(f, "device id {id} does not fit the protocol"),
        }
    }
}

impl core::error::Error for ExportError {}

impl From<InteropError> for ExportError {
    fn from(e: InteropError) -> Self {
        Self::Mapping(e)
    }
}

/// Why a DLPack or Arrow tensor was not imported. The producer's deleter
/// (release callbacks) has been called by the time the caller sees one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImportError {
    /// The managed tensor (or Arrow array/schema) pointer is null.
    NullTensor,
    /// A `DLManagedTensorVersioned` whose major version is not 1: only the
    /// deleter was touched.
    UnsupportedVersion {
        /// `version.major`.
        major: u32,
        /// `version.minor`.
        minor: u32,
    },
    /// Flag bits DLPack 1.x does not define.
    UnknownFlags(u64),
    /// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED` on a sub-byte type:
    /// hurray's sub-byte types are packed.
    PaddedSubByte,
    /// `ndim` is negative or above [`MAX_NDIM`](crate::MAX_NDIM).
    Ndim(i64),
    /// A null `shape` with `ndim > 0`.
    NullShape,
    /// A null `strides` with `ndim > 0` where the producer's version (≥ 1.2)
    /// forbids it.
    NullStrides,
    /// A negative dimension.
    NegativeDim {
        /// The axis.
        axis: u32,
        /// Its value.
        value: i64,
    },
    /// `lanes ≠ 1`, or a `(code, bits)` pair hurray has no element type for.
    DataType(InteropError),
    /// An unknown or unmappable device code (no hurray tag, none registered).
    Device(InteropError),
    /// A negative DLPack device id.
    DeviceId(i64),
    /// A null data pointer with a non-zero element count.
    NullData,
    /// Arithmetic overflow: the element count, a byte offset, or the byte
    /// range the strides reach does not fit the address space.
    Overflow {
        /// What overflowed.
        what: &'static str,
    },
    /// The first element's address is not a multiple of the element type's
    /// natural alignment.
    MisalignedData {
        /// The address of element `[0, …, 0]`.
        address: usize,
        /// The natural alignment.
        alignment: u32,
    },
    /// The Arrow array or schema was already released.
    Released,
    /// The Arrow schema is not a fixed-size list with one child of a
    /// supported primitive type, a dictionary, or carries child counts
    /// that do not match; `what` names the field.
    ArrowType {
        /// The field at fault.
        what: &'static str,
    },
    /// The extension metadata is missing, not `arrow.fixed_shape_tensor`,
    /// not valid JSON of the canonical form, or disagrees with the storage
    /// type; `what` names the rule.
    Metadata {
        /// The rule broken.
        what: &'static str,
    },
    /// An Arrow array field is out of range (negative length or offset,
    /// nulls, too few buffers or children, a child shorter than the parent
    /// needs); `what` names the field.
    ArrowArray {
        /// The field at fault.
        what: &'static str,
    },
    /// The caller's descriptor buffer is shorter than the descriptor.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The handle the import built was refused (for example a sync mode a
    /// CPU buffer does not allow).
    Handle(hurray_core::Error),
    /// The descriptor the import built was refused by the reader (never
    /// expected: the import only builds descriptors it checked).
    Descriptor(DescriptorError),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NullTensor => write!(f, "null tensor pointer"),
            Self::UnsupportedVersion { major, minor } => {
                write!(f, "DLPack version {major}.{minor} is not 1.x")
            }
            Self::UnknownFlags(bits) => write!(f, "unknown DLPack flag bits {bits:#x}"),
            Self::PaddedSubByte => write!(f, "padded sub-byte data (hurray packs sub-byte types)"),
            Self::Ndim(n) => write!(f, "ndim {n} is outside 0..=32"),
            Self::NullShape => write!(f, "null shape with ndim > 0"),
            Self::NullStrides => write!(f, "null strides with ndim > 0 (DLPack >= 1.2)"),
            Self::NegativeDim { axis, value } => {
                write!(f, "dimension {axis} is negative ({value})")
            }
            Self::DataType(e) | Self::Device(e) => write!(f, "{e}"),
            Self::DeviceId(id) => write!(f, "device id {id} is negative"),
            Self::NullData => write!(f, "null data pointer with a non-zero element count"),
            Self::Overflow { what } => write!(f, "{what} overflows"),
            Self::MisalignedData { address, alignment } => write!(
                f,
                "first element at {address:#x} is not aligned to its type's {alignment} bytes"
            ),
            Self::Released => write!(f, "the Arrow array or schema was already released"),
            Self::ArrowType { what } => write!(f, "unsupported Arrow type: {what}"),
            Self::Metadata { what } => write!(f, "fixed_shape_tensor metadata: {what}"),
            Self::ArrowArray { what } => write!(f, "unsupported Arrow array: {what}"),
            Self::BufferTooSmall { needed, available } => write!(
                f,
                "descriptor needs {needed} bytes, the buffer has {available}"
            ),
            Self::Handle(e) => write!(f, "buffer handle: {e}"),
            Self::Descriptor(e) => write!(f, "descriptor: {e}"),
        }
    }
}

impl core::error::Error for ImportError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::DataType(e) | Self::Device(e) => Some(e),
            Self::Handle(e) => Some(e),
            Self::Descriptor(e) => Some(e),
            _ => None,
        }
    }
}

impl From<EncodeError> for ImportError {
    fn from(e: EncodeError) -> Self {
        match e {
            EncodeError::Invalid(d) => Self::Descriptor(d),
            EncodeError::OutputTooSmall { needed, available } => Self::BufferTooSmall {
                needed: usize::try_from(needed).unwrap_or(usize::MAX),
                available: usize::try_from(available).unwrap_or(usize::MAX),
            },
            _ => Self::Overflow {
                what: "descriptor encoding",
            },
        }
    }
}
