//! The error types of the core crate, one per failure domain:
//!
//! * [`Error`] — a single buffer handle is invalid (the seed's error: every
//!   [`BufferHandle`](crate::BufferHandle) constructor and decoder returns it);
//! * [`DescriptorError`] — a tensor descriptor or buffer table is invalid: a
//!   [`DescriptorErrorKind`] plus the byte offset, inside the descriptor, of
//!   the field at fault. A bad buffer handle is nested in it
//!   ([`DescriptorErrorKind::Buffer`]) rather than copied;
//! * [`EncodeError`] — an encoder or builder was given an output or input it
//!   cannot use.
//!
//! Every type is `Copy`, carries the raw value that was wrong and, where
//! there is one, what was expected. `Display` writes literal text through
//! `write!` and never allocates.

use core::fmt;

use crate::codes::{DeviceTag, MemoryClass};

/// `core::result::Result` specialised to [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

/// Why a buffer handle is invalid.
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, Error, SyncMode};
///
/// let err = BufferHandle::new(512, 3, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap_err();
/// assert_eq!(err, Error::AlignmentNotPowerOfTwo { alignment: 3 });
/// // Display never allocates; on a host it reads like this:
/// assert_eq!(format!("{err}"), "alignment 3 is not a power of two");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The alignment is zero or not a power of two.
    AlignmentNotPowerOfTwo {
        /// The alignment found.
        alignment: u32,
    },
    /// A non-empty buffer declares an alignment below the minimum.
    AlignmentBelowMinimum {
        /// The alignment found.
        alignment: u32,
        /// The minimum for a non-empty buffer ([`MIN_BUFFER_ALIGNMENT`](crate::MIN_BUFFER_ALIGNMENT)).
        minimum: u32,
    },
    /// The sync-mode byte is not a known code, or the mode is not allowed
    /// for the device (a CPU buffer must be `ProducerSynced`).
    InvalidSyncMode(u8),
    /// The device-tag byte is reserved (`0x09`–`0xEF`) or invalid (`0xFF`).
    InvalidDeviceTag(u8),
    /// The memory-class byte is reserved (`0x04`–`0xEF`) or invalid (`0xFF`).
    InvalidMemoryClass(u8),
    /// The memory class is not valid on this device
    /// (`docs/spec/buffer-protocol.md` § Per-Device Validity).
    MemoryClassNotAllowed {
        /// The device.
        device_tag: DeviceTag,
        /// The class it does not allow.
        memory_class: MemoryClass,
    },
    /// The reserved byte (offset 15) is not zero.
    ReservedNonZero(u8),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::AlignmentNotPowerOfTwo { alignment } => {
                write!(f, "alignment {alignment} is not a power of two")
            }
            Self::AlignmentBelowMinimum { alignment, minimum } => write!(
                f,
                "alignment {alignment} is below the minimum {minimum} for a non-empty buffer"
            ),
            Self::InvalidSyncMode(c) => {
                write!(
                    f,
                    "sync mode {c:#04x} is unknown or not allowed for this device"
                )
            }
            Self::InvalidDeviceTag(c) => write!(f, "device tag {c:#04x} is reserved or invalid"),
            Self::InvalidMemoryClass(c) => {
                write!(f, "memory class {c:#04x} is reserved or invalid")
            }
            Self::MemoryClassNotAllowed {
                device_tag,
                memory_class,
            } => write!(
                f,
                "memory class {} ({:#04x}) is not valid on device {} ({:#04x})",
                memory_class.name(),
                memory_class.code(),
                device_tag.name(),
                device_tag.code()
            ),
            Self::ReservedNonZero(c) => write!(f, "reserved byte is {c:#04x}, must be zero"),
        }
    }
}

impl core::error::Error for Error {}

/// Declares an error that is a kind at a byte offset — the struct, `new`,
/// `kind`, `offset`, `Display` (`at byte {offset}{where}: {kind}`) and
/// `Error`, whose `source` is the error the listed kinds nest — so the
/// three error types of that shape are written once.
macro_rules! located_error {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($offset:ty, $kind:ty), $where:literal;
        $(#[$new_doc:meta])* new;
        $(#[$offset_doc:meta])* offset;
        source $($nested:pat => $source:expr),*;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub struct $name {
            offset: $offset,
            kind: $kind,
        }

        impl $name {
            $(#[$new_doc])*
            #[must_use]
            #[inline]
            pub const fn new(offset: $offset, kind: $kind) -> Self {
                Self { offset, kind }
            }

            /// What was wrong.
            #[must_use]
            #[inline]
            pub const fn kind(&self) -> $kind {
                self.kind
            }

            $(#[$offset_doc])*
            #[must_use]
            #[inline]
            pub const fn offset(&self) -> $offset {
                self.offset
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, concat!("at byte {}", $where, ": {}"), self.offset, self.kind)
            }
        }

        impl core::error::Error for $name {
            fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
                match &self.kind {
                    $($nested => Some($source),)*
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use located_error;

located_error! {
    /// A tensor descriptor or buffer table was rejected: what was wrong
    /// ([`kind`](Self::kind)) and the byte offset of the field at fault
    /// ([`offset`](Self::offset)), counted from the first byte of the descriptor
    /// (or of the table, for [`BufferTable::parse`](crate::BufferTable::parse)).
    ///
    /// ```
    /// use hurray_core::{DescriptorErrorKind, TensorView};
    ///
    /// let err = TensorView::parse(b"HRAY\x01\x00").unwrap_err();
    /// assert_eq!(err.offset(), 0);
    /// assert_eq!(err.kind(), DescriptorErrorKind::Truncated { needed: 20, available: 6 });
    /// assert_eq!(err.to_string(), "at byte 0: truncated: 20 bytes needed, 6 available");
    /// ```
    pub struct DescriptorError(u32, DescriptorErrorKind), "";
    /// An error of `kind` at byte `offset`.
    new;
    /// The byte offset of the field at fault.
    offset;
    source DescriptorErrorKind::Buffer { error, .. } => error;
}

impl DescriptorError {
    /// [`DescriptorErrorKind::InvalidValue`]: `field` holds `value`.
    #[inline]
    pub(crate) const fn invalid(offset: u32, field: &'static str, value: u64) -> Self {
        Self::new(offset, DescriptorErrorKind::InvalidValue { field, value })
    }

    /// [`DescriptorErrorKind::ReservedNonZero`]: reserved `field` is not zero.
    #[inline]
    pub(crate) const fn reserved(offset: u32, field: &'static str) -> Self {
        Self::new(offset, DescriptorErrorKind::ReservedNonZero { field })
    }
}

/// What is wrong with a tensor descriptor.
///
/// Variants that name a `field` use the spec's field names (`"tile_shape"`,
/// `"kv_role"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DescriptorErrorKind {
    // --- framing ------------------------------------------------------------
    /// The input, or the declared `descriptor_length`, ends before a field
    /// the descriptor must contain.
    Truncated {
        /// Bytes needed from the start of the descriptor.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The first four bytes are not `"HRRY"`.
    BadMagic([u8; 4]),
    /// The major version is not 1.
    UnsupportedVersion {
        /// Major version found.
        major: u8,
        /// Minor version found.
        minor: u8,
    },
    /// `descriptor_length` does not equal the bytes the descriptor's fields
    /// occupy (for a 1.0 descriptor), or is smaller than them.
    LengthMismatch {
        /// The declared `descriptor_length`.
        declared: u32,
        /// Bytes the fields occupy.
        consumed: u32,
    },
    /// The input holds bytes after the descriptor (`TensorView::parse`
    /// wants exactly one descriptor; use `parse_prefix` for a stream).
    TrailingBytes {
        /// The declared `descriptor_length`.
        declared: u32,
        /// Bytes in the input.
        available: u64,
    },
    /// A reserved flag bit is set.
    ReservedFlags(u32),

    // --- codes ----------------------------------------------------------------
    /// The `type_tag` is reserved, unassigned or invalid.
    InvalidTypeTag(u8),
    /// The `layout_tag` is reserved, unassigned or invalid.
    InvalidLayoutTag(u8),
    /// An enumerated field holds a value the spec does not define.
    InvalidValue {
        /// The field.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// A reserved field or byte is not zero.
    ReservedNonZero {
        /// The field.
        field: &'static str,
    },

    // --- shape and layout -----------------------------------------------------
    /// `rank` exceeds 64.
    RankTooLarge(u32),
    /// The layout is not allowed at this rank (rank 0 is row-major only;
    /// CSR and CSC need rank 2, CSF rank ≥ 3, block-paged rank 3; a Hilbert
    /// rank mismatch is an `InvalidValue` of `hilbert_rank`).
    RankNotAllowed {
        /// The layout tag.
        layout_tag: u8,
        /// The rank.
        rank: u32,
    },
    /// A dimension is the dynamic sentinel where a concrete size is required
    /// (a shard, a quantization axis).
    DynamicDimension {
        /// The field holding it.
        field: &'static str,
        /// The axis.
        axis: u32,
    },
    /// Nested tiled levels exceed the limit of 8.
    TilingTooDeep,
    /// What lies inside a tile (strided inner layout or a nested tile grid)
    /// reaches outside the tile of this level.
    TileOverrun {
        /// The level (0 = outermost).
        level: u8,
    },
    /// A size computation overflows `u64` (shape product, extent, curve size).
    Overflow {
        /// What was being computed.
        what: &'static str,
    },
    /// `mode_order` of a CSF descriptor is not a permutation of `0..rank`.
    NotAPermutation {
        /// The first repeated or out-of-range value.
        value: u32,
    },
    /// A Morton or Hilbert dimension does not fit the curve.
    ShapeDoesNotFitCurve {
        /// The axis.
        axis: u32,
        /// Its size.
        size: u64,
    },
    /// An extension layout id this reader was not told about.
    UnknownExtensionLayout(u64),

    // --- buffers ----------------------------------------------------------------
    /// A standalone buffer table's length is not a multiple of 16.
    TableLength {
        /// The length in bytes.
        len: u64,
    },
    /// A buffer handle is invalid.
    Buffer {
        /// The index of the buffer in the table.
        index: u32,
        /// What is wrong with it.
        error: Error,
    },
    /// A buffer's device tag or memory class differs from buffer 0's
    /// (device colocation).
    NotColocated {
        /// The index of the buffer.
        index: u32,
    },
    /// The buffer count is not what the layout and quantization scheme need.
    BufferCount {
        /// Buffers required.
        expected: u32,
        /// Buffers declared.
        found: u8,
    },
    /// A buffer is smaller than the elements the descriptor addresses in it.
    BufferTooSmall {
        /// The buffer.
        index: u32,
        /// Bytes needed.
        needed: u64,
        /// Its `byte_size`.
        byte_size: u64,
    },
    /// A buffer that holds an array of a fixed length has another size.
    BufferSizeMismatch {
        /// The buffer.
        index: u32,
        /// Bytes expected.
        expected: u64,
        /// Its `byte_size`.
        byte_size: u64,
    },
    /// Strides reach bytes outside the data buffer.
    ExtentOutOfBounds {
        /// Lowest byte addressed, relative to the buffer start (negative:
        /// before it).
        start: i64,
        /// One past the highest byte addressed.
        end: i64,
        /// The data buffer's `byte_size`.
        byte_size: u64,
    },
    /// `byte_offset` lies past the end of buffer 0.
    ByteOffsetOutOfRange {
        /// The offset.
        byte_offset: u64,
        /// Buffer 0's `byte_size`.
        byte_size: u64,
    },
    /// `byte_offset` is not a multiple of the element type's natural
    /// alignment (stricter than the format's reference reader).
    ByteOffsetMisaligned {
        /// The offset.
        byte_offset: u64,
        /// The element alignment.
        alignment: u32,
    },
    /// `byte_offset` must be 0 for this layout (sparse, indirect, composite).
    ByteOffsetNotZero(u64),

    // --- sections ---------------------------------------------------------------
    /// The extension type section is present without a private type tag, or
    /// missing with one.
    ExtensionTypeMismatch {
        /// The type tag.
        type_tag: u8,
        /// Whether the section is present.
        present: bool,
    },
    /// A section or flag is not allowed on this descriptor (a shard on CSF or
    /// block-paged, quantization or a member section on a composite head).
    SectionNotAllowed {
        /// The section.
        section: &'static str,
        /// The layout tag.
        layout_tag: u8,
    },
    /// A shard box leaves its parent: `shard_offset + shape > parent_shape`.
    ShardOutOfBounds {
        /// The axis.
        axis: u32,
    },
    /// A quantization scheme does not accept the tensor's storage type.
    StorageTypeNotAllowed {
        /// The scheme tag.
        scheme: u8,
        /// The storage type tag.
        type_tag: u8,
    },
    /// A quantization `axis` is not below the rank.
    AxisOutOfRange {
        /// The axis.
        axis: u32,
        /// The rank.
        rank: u32,
    },
    /// A quantization parameter buffer index is out of range or is one of
    /// the layout's own buffers.
    ParameterBufferIndex {
        /// The index found.
        index: u32,
        /// The first index parameter buffers may use.
        first: u32,
        /// The buffer count.
        count: u8,
    },
    /// An inline quantization parameter is out of its range (scale not
    /// finite or zero, zero point outside the storage type).
    ParameterOutOfRange {
        /// The field.
        field: &'static str,
    },
    /// A statistics value contradicts the descriptor or the spec's range.
    StatisticsInconsistent {
        /// The field.
        field: &'static str,
    },
    /// A quantization scheme or composition rule in the private range that
    /// this reader has no agreement for.
    PrivateCodeRefused {
        /// The field.
        field: &'static str,
        /// The code.
        code: u8,
    },
}

impl fmt::Display for DescriptorErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { needed, available } => {
                write!(f, "truncated: {needed} bytes needed, {available} available")
            }
            Self::BadMagic(m) => write!(f, "bad magic {m:02x?}, expected \"HRRY\""),
            Self::UnsupportedVersion { major, minor } => {
                write!(f, "unsupported descriptor version {major}.{minor}")
            }
            Self::LengthMismatch { declared, consumed } => write!(
                f,
                "descriptor_length is {declared} but the fields occupy {consumed} bytes"
            ),
            Self::TrailingBytes {
                declared,
                available,
            } => write!(
                f,
                "{available} bytes given for a descriptor of {declared} bytes"
            ),
            Self::ReservedFlags(bits) => write!(f, "reserved flag bits {bits:#010x} are set"),
            Self::InvalidTypeTag(c) => write!(f, "type tag {c:#04x} is reserved or invalid"),
            Self::InvalidLayoutTag(c) => write!(f, "layout tag {c:#04x} is reserved or invalid"),
            Self::InvalidValue { field, value } => {
                write!(f, "{field} = {value} is not a valid value")
            }
            Self::ReservedNonZero { field } => write!(f, "reserved field {field} is not zero"),
            Self::RankTooLarge(r) => write!(f, "rank {r} exceeds 64"),
            Self::RankNotAllowed { layout_tag, rank } => {
                write!(f, "layout {layout_tag:#04x} is not allowed at rank {rank}")
            }
            Self::DynamicDimension { field, axis } => {
                write!(f, "{field}[{axis}] is dynamic where a size is required")
            }
            Self::TilingTooDeep => write!(f, "tiled layout nests more than 8 levels"),
            Self::TileOverrun { level } => {
                write!(f, "the inside of a level-{level} tile reaches outside it")
            }
            Self::Overflow { what } => write!(f, "{what} overflows"),
            Self::NotAPermutation { value } => {
                write!(f, "mode_order is not a permutation (value {value})")
            }
            Self::ShapeDoesNotFitCurve { axis, size } => {
                write!(f, "shape[{axis}] = {size} does not fit the curve")
            }
            Self::UnknownExtensionLayout(id) => {
                write!(f, "extension layout id {id:#x} is not recognised")
            }
            Self::TableLength { len } => {
                write!(f, "buffer table length {len} is not a multiple of 16")
            }
            Self::Buffer { index, error } => write!(f, "buffer {index}: {error}"),
            Self::NotColocated { index } => write!(
                f,
                "buffer {index} differs from buffer 0 in device tag or memory class"
            ),
            Self::BufferCount { expected, found } => {
                write!(f, "{found} buffers declared, {expected} required")
            }
            Self::BufferTooSmall {
                index,
                needed,
                byte_size,
            } => write!(
                f,
                "buffer {index} holds {byte_size} bytes, {needed} are addressed"
            ),
            Self::BufferSizeMismatch {
                index,
                expected,
                byte_size,
            } => write!(
                f,
                "buffer {index} holds {byte_size} bytes, must hold exactly {expected}"
            ),
            Self::ExtentOutOfBounds {
                start,
                end,
                byte_size,
            } => write!(
                f,
                "tensor spans bytes [{start}, {end}) but the data buffer holds {byte_size}"
            ),
            Self::ByteOffsetOutOfRange {
                byte_offset,
                byte_size,
            } => write!(
                f,
                "byte_offset {byte_offset} is past the end of buffer 0 ({byte_size} bytes)"
            ),
            Self::ByteOffsetMisaligned {
                byte_offset,
                alignment,
            } => write!(
                f,
                "byte_offset {byte_offset} is not a multiple of the element alignment {alignment}"
            ),
            Self::ByteOffsetNotZero(o) => {
                write!(f, "byte_offset is {o}, must be 0 for this layout")
            }
            Self::ExtensionTypeMismatch { type_tag, present } => {
                if present {
                    write!(
                        f,
                        "extension type section present for built-in type {type_tag:#04x}"
                    )
                } else {
                    write!(
                        f,
                        "private type {type_tag:#04x} needs an extension type section"
                    )
                }
            }
            Self::SectionNotAllowed {
                section,
                layout_tag,
            } => write!(
                f,
                "{section} section is not allowed with layout {layout_tag:#04x}"
            ),
            Self::ShardOutOfBounds { axis } => {
                write!(
                    f,
                    "shard_offset[{axis}] + shape[{axis}] exceeds parent_shape[{axis}]"
                )
            }
            Self::StorageTypeNotAllowed { scheme, type_tag } => write!(
                f,
                "quantization scheme {scheme:#04x} does not accept storage type {type_tag:#04x}"
            ),
            Self::AxisOutOfRange { axis, rank } => {
                write!(f, "quantization axis {axis} is not below rank {rank}")
            }
            Self::ParameterBufferIndex {
                index,
                first,
                count,
            } => write!(
                f,
                "parameter buffer index {index} is outside [{first}, {count})"
            ),
            Self::ParameterOutOfRange { field } => write!(f, "{field} is out of range"),
            Self::StatisticsInconsistent { field } => {
                write!(f, "statistics field {field} is inconsistent")
            }
            Self::PrivateCodeRefused { field, code } => write!(
                f,
                "{field} {code:#04x} is implementation-private and not agreed with this reader"
            ),
        }
    }
}

/// Why an encoder or builder could not produce a descriptor.
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, EncodeError, TensorDescriptor};
///
/// let buffers = [BufferHandle::empty(DeviceTag::Cpu)];
/// let desc = TensorDescriptor::row_major(ElementType::Float32, &[0], &buffers);
/// let mut out = [0u8; 8];
/// assert!(matches!(desc.encode(&mut out), Err(EncodeError::OutputTooSmall { .. })));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum EncodeError {
    /// The output slice is too small.
    OutputTooSmall {
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// A fixed-capacity builder is full.
    CapacityExceeded {
        /// What ran out (`"dims"`, `"buffers"`, …).
        what: &'static str,
        /// The capacity.
        capacity: u32,
    },
    /// An input slice has the wrong length for the others (strides vs shape,
    /// …).
    LengthMismatch {
        /// What was given.
        what: &'static str,
        /// Its length.
        len: u32,
        /// The length required.
        expected: u32,
    },
    /// This part has no encoding here: the builder cannot hold it (tiled and
    /// private layouts, private schemes: use
    /// [`TensorDescriptor`](crate::TensorDescriptor)), or the values describe
    /// nothing a descriptor can carry (a private layout or scheme under a
    /// public tag; tiled levels whose codes, strides and nesting disagree).
    Unsupported {
        /// What it cannot hold.
        what: &'static str,
    },
    /// The fields describe a descriptor a reader must reject; the error is
    /// what the decoder reports for the encoded bytes.
    Invalid(DescriptorError),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::OutputTooSmall { needed, available } => write!(
                f,
                "output too small: {needed} bytes needed, {available} available"
            ),
            Self::CapacityExceeded { what, capacity } => {
                write!(f, "capacity of {capacity} {what} exceeded")
            }
            Self::LengthMismatch {
                what,
                len,
                expected,
            } => write!(f, "{what} has length {len}, expected {expected}"),
            Self::Unsupported { what } => write!(f, "cannot encode {what}"),
            Self::Invalid(e) => write!(f, "invalid descriptor: {e}"),
        }
    }
}

impl core::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DescriptorError> for EncodeError {
    #[inline]
    fn from(e: DescriptorError) -> Self {
        Self::Invalid(e)
    }
}

#[cfg(feature = "std")]
mod std_impls {
    use super::{DescriptorError, EncodeError, Error};

    impl From<Error> for std::io::Error {
        /// Hurray errors are malformed input: [`std::io::ErrorKind::InvalidData`].
        fn from(e: Error) -> Self {
            Self::new(std::io::ErrorKind::InvalidData, e)
        }
    }

    impl From<DescriptorError> for std::io::Error {
        /// Hurray errors are malformed input: [`std::io::ErrorKind::InvalidData`].
        fn from(e: DescriptorError) -> Self {
            Self::new(std::io::ErrorKind::InvalidData, e)
        }
    }

    impl From<EncodeError> for std::io::Error {
        /// An encoder error is a bad argument: [`std::io::ErrorKind::InvalidInput`].
        fn from(e: EncodeError) -> Self {
            Self::new(std::io::ErrorKind::InvalidInput, e)
        }
    }
}
