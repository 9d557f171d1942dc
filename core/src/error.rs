//! The one error type of the core crate.
//!
//! Every variant is `Copy` and carries the raw value that was wrong (a code
//! byte, an alignment, an offset) and, where there is one, what was expected.
//! `Display` writes literal text through `write!` and never allocates.

use core::fmt;

use crate::codes::{DeviceTag, MemoryClass};
use crate::descriptor::Region;

/// `core::result::Result` specialised to [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

/// Everything that can be wrong with a single 16-byte buffer handle entry.
///
/// [`BufferHandle`](crate::BufferHandle)'s own constructors and decoder
/// report these as the [`Error`] variants of the same name; a
/// [`BufferTable`](crate::BufferTable) or [`TensorView`](crate::TensorView)
/// reports them inside [`Error::InvalidEntry`], together with the entry's
/// index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum EntryError {
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
    /// The device-tag byte is not a known code.
    InvalidDeviceTag(u8),
    /// The memory-class byte is not a known code.
    InvalidMemoryClass(u8),
    /// The reserved byte (offset 15) is not zero.
    ReservedNonZero(u8),
}

impl EntryError {
    /// The same fault as a crate-level [`Error`] (without an entry index).
    #[must_use]
    #[inline]
    pub const fn into_error(self) -> Error {
        match self {
            Self::AlignmentNotPowerOfTwo { alignment } => {
                Error::AlignmentNotPowerOfTwo { alignment }
            }
            Self::AlignmentBelowMinimum { alignment, minimum } => {
                Error::AlignmentBelowMinimum { alignment, minimum }
            }
            Self::InvalidSyncMode(c) => Error::InvalidSyncMode(c),
            Self::InvalidDeviceTag(c) => Error::InvalidDeviceTag(c),
            Self::InvalidMemoryClass(c) => Error::InvalidMemoryClass(c),
            Self::ReservedNonZero(c) => Error::ReservedNonZero(c),
        }
    }
}

impl From<EntryError> for Error {
    #[inline]
    fn from(e: EntryError) -> Self {
        e.into_error()
    }
}

/// Why a buffer handle, buffer table or tensor descriptor was rejected.
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
    // --- a single buffer handle -------------------------------------------------
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
    /// The device-tag byte is not a known code.
    InvalidDeviceTag(u8),
    /// The memory-class byte is not a known code.
    InvalidMemoryClass(u8),
    /// The reserved byte (offset 15) of a handle entry is not zero.
    ReservedNonZero(u8),

    // --- a buffer table ---------------------------------------------------------
    /// An entry of a buffer table is invalid.
    InvalidEntry {
        /// The zero-based index of the first invalid entry.
        index: usize,
        /// What is wrong with it.
        error: EntryError,
    },
    /// A buffer table's byte length is not a multiple of 16.
    TableLength {
        /// The length found, in bytes.
        len: usize,
    },

    // --- a tensor descriptor ----------------------------------------------------
    /// The input ends before a structure it must contain.
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The descriptor does not start with [`DESCRIPTOR_MAGIC`](crate::DESCRIPTOR_MAGIC).
    BadMagic([u8; 4]),
    /// The descriptor's major version is not one this reader implements.
    UnsupportedVersion {
        /// Major version found.
        major: u8,
        /// Minor version found.
        minor: u8,
    },
    /// A flag bit that a reader must understand is set but unknown.
    UnknownFlags(u16),
    /// The header's reserved field is not zero.
    HeaderReservedNonZero(u16),
    /// The dtype byte is not a known code.
    InvalidDType(u8),
    /// More dimensions than [`MAX_NDIM`](crate::MAX_NDIM).
    TooManyDims {
        /// Dimensions declared.
        ndim: u8,
        /// The maximum.
        max: u8,
    },
    /// The descriptor declares no buffers, or names a data buffer past the table.
    DataBufferOutOfRange {
        /// The data-buffer index.
        index: u16,
        /// Entries in the table.
        count: u16,
    },
    /// A region's offset is not a multiple of 8.
    MisalignedRegion {
        /// Which region.
        region: Region,
        /// Its offset.
        offset: u32,
    },
    /// A region starts inside the header or ends past the descriptor.
    RegionOutOfBounds {
        /// Which region.
        region: Region,
        /// Its offset.
        offset: u32,
        /// Its length in bytes.
        len: u64,
        /// The descriptor's total length.
        total_len: u32,
    },
    /// Two regions share bytes.
    RegionsOverlap {
        /// The first region.
        first: Region,
        /// The second region.
        second: Region,
    },
    /// A dimension exceeds `i64::MAX` (DLPack and Arrow use signed sizes).
    DimTooLarge {
        /// The axis.
        axis: u8,
        /// Its size.
        size: u64,
    },
    /// A stride's magnitude exceeds `i64::MAX` (`i64::MIN` is rejected).
    StrideTooLarge {
        /// The axis.
        axis: u8,
        /// Its stride, in elements.
        stride: i64,
    },
    /// The product of the shape, or the byte extent it spans, does not fit the arithmetic.
    ShapeOverflow,
    /// `byte_offset` is not a multiple of the dtype's element size.
    MisalignedByteOffset {
        /// The offset.
        byte_offset: u64,
        /// The element size.
        element_size: u32,
    },
    /// The elements addressed by shape, strides and offset do not lie inside the data buffer.
    ExtentOutOfBounds {
        /// Lowest byte addressed, relative to the buffer start (negative: before it).
        start: i128,
        /// One past the highest byte addressed.
        end: i128,
        /// The data buffer's `byte_size`.
        byte_size: u64,
    },
    /// An encoder's output slice, or a builder's capacity, is too small.
    BufferTooSmall {
        /// Bytes or items needed.
        needed: u64,
        /// Bytes or items available.
        available: u64,
    },
    /// An encoder was given strides whose count differs from the shape's.
    StridesLength {
        /// Dimensions in the shape.
        ndim: usize,
        /// Strides given.
        strides: usize,
    },

    // --- interop ----------------------------------------------------------------
    /// This (device tag, memory class) pair has no code in the target standard.
    NoInteropCode {
        /// The device.
        device_tag: DeviceTag,
        /// The memory class.
        memory_class: MemoryClass,
    },
    /// A DLPack or Arrow device-type code that hurray does not map.
    UnknownInteropCode(i32),
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.into_error(), f)
    }
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
            Self::InvalidDeviceTag(c) => write!(f, "device tag {c:#04x} is unknown"),
            Self::InvalidMemoryClass(c) => write!(f, "memory class {c:#04x} is unknown"),
            Self::ReservedNonZero(c) => write!(f, "reserved byte is {c:#04x}, must be zero"),
            Self::InvalidEntry { index, error } => {
                write!(f, "buffer table entry {index}: {error}")
            }
            Self::TableLength { len } => {
                write!(f, "buffer table length {len} is not a multiple of 16")
            }
            Self::Truncated { needed, available } => {
                write!(f, "truncated: {needed} bytes needed, {available} available")
            }
            Self::BadMagic(m) => write!(f, "bad magic {m:02x?}, expected \"HRAY\""),
            Self::UnsupportedVersion { major, minor } => {
                write!(f, "unsupported descriptor version {major}.{minor}")
            }
            Self::UnknownFlags(bits) => write!(f, "unknown required flag bits {bits:#06x}"),
            Self::HeaderReservedNonZero(v) => {
                write!(f, "header reserved field is {v:#06x}, must be zero")
            }
            Self::InvalidDType(c) => write!(f, "dtype {c:#04x} is unknown"),
            Self::TooManyDims { ndim, max } => write!(f, "{ndim} dimensions, at most {max}"),
            Self::DataBufferOutOfRange { index, count } => {
                write!(
                    f,
                    "data buffer {index} is not in a table of {count} entries"
                )
            }
            Self::MisalignedRegion { region, offset } => {
                write!(f, "{region} region offset {offset} is not a multiple of 8")
            }
            Self::RegionOutOfBounds {
                region,
                offset,
                len,
                total_len,
            } => write!(
                f,
                "{region} region [{offset}, +{len}) is outside the descriptor body [40, {total_len})"
            ),
            Self::RegionsOverlap { first, second } => {
                write!(f, "{first} and {second} regions overlap")
            }
            Self::DimTooLarge { axis, size } => {
                write!(f, "axis {axis} size {size} exceeds i64::MAX")
            }
            Self::StrideTooLarge { axis, stride } => {
                write!(f, "axis {axis} stride {stride} is out of range")
            }
            Self::ShapeOverflow => write!(f, "shape or extent overflows"),
            Self::MisalignedByteOffset {
                byte_offset,
                element_size,
            } => write!(
                f,
                "byte offset {byte_offset} is not a multiple of the element size {element_size}"
            ),
            Self::ExtentOutOfBounds {
                start,
                end,
                byte_size,
            } => write!(
                f,
                "tensor spans bytes [{start}, {end}) but the data buffer holds {byte_size}"
            ),
            Self::BufferTooSmall { needed, available } => {
                write!(
                    f,
                    "output too small: {needed} needed, {available} available"
                )
            }
            Self::StridesLength { ndim, strides } => {
                write!(f, "{strides} strides given for {ndim} dimensions")
            }
            Self::NoInteropCode {
                device_tag,
                memory_class,
            } => write!(
                f,
                "{device_tag:?} with memory class {memory_class:?} has no interop device code"
            ),
            Self::UnknownInteropCode(c) => write!(f, "interop device code {c} is not mapped"),
        }
    }
}

impl core::error::Error for EntryError {}
impl core::error::Error for Error {}

#[cfg(feature = "std")]
impl From<Error> for std::io::Error {
    /// Hurray errors are malformed input: [`std::io::ErrorKind::InvalidData`].
    fn from(e: Error) -> Self {
        Self::new(std::io::ErrorKind::InvalidData, e)
    }
}
