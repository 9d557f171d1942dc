//! Status codes, the codes of the wire format as C constants, and the mapping
//! from `hurray_core::Error` to both.

use core::ffi::CStr;

use hurray_core::{DType, DeviceTag, EntryError, Error, MemoryClass, SyncMode};

use crate::hurray_error;

/// Result of every function: `HURRAY_OK` (0) or a negative `HURRAY_E_*` code.
pub type hurray_status = i32;

/// Success.
pub const HURRAY_OK: hurray_status = 0;
/// A required pointer argument is null.
pub const HURRAY_E_NULL: hurray_status = -1;
/// An input is too short or an output buffer too small.
pub const HURRAY_E_BUFFER_TOO_SMALL: hurray_status = -2;
/// An alignment is not a power of two.
pub const HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO: hurray_status = -3;
/// A non-empty buffer's alignment is below 64.
pub const HURRAY_E_ALIGNMENT_BELOW_MINIMUM: hurray_status = -4;
/// Unknown sync mode, or a CPU buffer not producer-synced.
pub const HURRAY_E_INVALID_SYNC_MODE: hurray_status = -5;
/// Unknown device tag.
pub const HURRAY_E_INVALID_DEVICE_TAG: hurray_status = -6;
/// Unknown memory class.
pub const HURRAY_E_INVALID_MEMORY_CLASS: hurray_status = -7;
/// A handle's reserved byte is not zero.
pub const HURRAY_E_RESERVED_NONZERO: hurray_status = -8;
/// A buffer table's length is not a multiple of 16.
pub const HURRAY_E_TABLE_LENGTH: hurray_status = -9;
/// A descriptor is truncated.
pub const HURRAY_E_TRUNCATED: hurray_status = -10;
/// A descriptor does not start with "HRAY".
pub const HURRAY_E_BAD_MAGIC: hurray_status = -11;
/// A descriptor's major version is not supported.
pub const HURRAY_E_UNSUPPORTED_VERSION: hurray_status = -12;
/// Unknown required flag bits.
pub const HURRAY_E_UNKNOWN_FLAGS: hurray_status = -13;
/// A descriptor header's reserved field is not zero.
pub const HURRAY_E_HEADER_RESERVED: hurray_status = -14;
/// Unknown dtype code.
pub const HURRAY_E_INVALID_DTYPE: hurray_status = -15;
/// More than 32 dimensions.
pub const HURRAY_E_TOO_MANY_DIMS: hurray_status = -16;
/// The data-buffer index is not in the table.
pub const HURRAY_E_DATA_BUFFER_OUT_OF_RANGE: hurray_status = -17;
/// A region offset is not a multiple of 8.
pub const HURRAY_E_MISALIGNED_REGION: hurray_status = -18;
/// A region lies outside the descriptor.
pub const HURRAY_E_REGION_OUT_OF_BOUNDS: hurray_status = -19;
/// Two regions overlap.
pub const HURRAY_E_REGIONS_OVERLAP: hurray_status = -20;
/// A dimension exceeds INT64_MAX.
pub const HURRAY_E_DIM_TOO_LARGE: hurray_status = -21;
/// A stride is INT64_MIN.
pub const HURRAY_E_STRIDE_TOO_LARGE: hurray_status = -22;
/// The shape or its extent overflows.
pub const HURRAY_E_SHAPE_OVERFLOW: hurray_status = -23;
/// The byte offset is not a multiple of the element size.
pub const HURRAY_E_MISALIGNED_BYTE_OFFSET: hurray_status = -24;
/// The tensor's elements do not fit the data buffer.
pub const HURRAY_E_EXTENT_OUT_OF_BOUNDS: hurray_status = -25;
/// Strides and shape differ in length.
pub const HURRAY_E_STRIDES_LENGTH: hurray_status = -26;
/// The (device, memory class) pair has no DLPack/Arrow code.
pub const HURRAY_E_NO_INTEROP_CODE: hurray_status = -27;
/// A DLPack/Arrow device code is not mapped.
pub const HURRAY_E_UNKNOWN_INTEROP_CODE: hurray_status = -28;
/// An index is past the end.
pub const HURRAY_E_INDEX_OUT_OF_RANGE: hurray_status = -29;
/// A pointer is not aligned as required.
pub const HURRAY_E_MISALIGNED_POINTER: hurray_status = -30;
/// The descriptor has no strides (compact row-major).
pub const HURRAY_E_NO_STRIDES: hurray_status = -31;
/// Internal error: a panic was caught at the boundary (never expected).
pub const HURRAY_E_PANIC: hurray_status = -32;
/// An error this version of the C ABI has no code for.
pub const HURRAY_E_UNKNOWN: hurray_status = -33;

/// Device tag: host memory.
pub const HURRAY_DEVICE_CPU: u8 = 1;
/// Device tag: CUDA.
pub const HURRAY_DEVICE_CUDA: u8 = 2;
/// Device tag: OpenCL.
pub const HURRAY_DEVICE_OPENCL: u8 = 4;
/// Device tag: Vulkan.
pub const HURRAY_DEVICE_VULKAN: u8 = 7;
/// Device tag: Metal.
pub const HURRAY_DEVICE_METAL: u8 = 8;
/// Device tag: Verilog simulator.
pub const HURRAY_DEVICE_VPI: u8 = 9;
/// Device tag: ROCm.
pub const HURRAY_DEVICE_ROCM: u8 = 10;
/// Device tag: extension device.
pub const HURRAY_DEVICE_EXT_DEV: u8 = 12;
/// Device tag: oneAPI.
pub const HURRAY_DEVICE_ONEAPI: u8 = 14;
/// Device tag: WebGPU.
pub const HURRAY_DEVICE_WEBGPU: u8 = 15;
/// Device tag: Hexagon.
pub const HURRAY_DEVICE_HEXAGON: u8 = 16;
/// Device tag: MAIA.
pub const HURRAY_DEVICE_MAIA: u8 = 17;
/// Device tag: Trainium.
pub const HURRAY_DEVICE_TRAINIUM: u8 = 18;

/// Sync mode: producer finished before publishing.
pub const HURRAY_SYNC_PRODUCER_SYNCED: u8 = 0;
/// Sync mode: wait on the producer's event.
pub const HURRAY_SYNC_EVENT: u8 = 1;
/// Sync mode: ordered on the consumer's stream.
pub const HURRAY_SYNC_CONSUMER_STREAM: u8 = 2;

/// Memory class: ordinary device memory.
pub const HURRAY_MEMORY_STANDARD: u8 = 0;
/// Memory class: pinned host memory.
pub const HURRAY_MEMORY_HOST_PINNED: u8 = 1;
/// Memory class: unified / managed memory.
pub const HURRAY_MEMORY_UNIFIED: u8 = 2;
/// Memory class: peer-to-peer mapped memory.
pub const HURRAY_MEMORY_PEER_TO_PEER: u8 = 3;

/// Descriptor flag: the consumer must not write the data buffer.
pub const HURRAY_FLAG_READ_ONLY: u16 = 1;

/// Minimum alignment of a non-empty buffer.
pub const HURRAY_MIN_BUFFER_ALIGNMENT: u32 = 64;

/// DType code: bool.
pub const HURRAY_DTYPE_BOOL: u8 = 0x01;
/// DType code: i8.
pub const HURRAY_DTYPE_I8: u8 = 0x02;
/// DType code: i16.
pub const HURRAY_DTYPE_I16: u8 = 0x03;
/// DType code: i32.
pub const HURRAY_DTYPE_I32: u8 = 0x04;
/// DType code: i64.
pub const HURRAY_DTYPE_I64: u8 = 0x05;
/// DType code: u8.
pub const HURRAY_DTYPE_U8: u8 = 0x06;
/// DType code: u16.
pub const HURRAY_DTYPE_U16: u8 = 0x07;
/// DType code: u32.
pub const HURRAY_DTYPE_U32: u8 = 0x08;
/// DType code: u64.
pub const HURRAY_DTYPE_U64: u8 = 0x09;
/// DType code: f16.
pub const HURRAY_DTYPE_F16: u8 = 0x0A;
/// DType code: bf16.
pub const HURRAY_DTYPE_BF16: u8 = 0x0B;
/// DType code: f32.
pub const HURRAY_DTYPE_F32: u8 = 0x0C;
/// DType code: f64.
pub const HURRAY_DTYPE_F64: u8 = 0x0D;
/// DType code: complex64.
pub const HURRAY_DTYPE_C64: u8 = 0x0E;
/// DType code: complex128.
pub const HURRAY_DTYPE_C128: u8 = 0x0F;

// Every C constant equals the core's code (the build fails otherwise).
const _: () = {
    let devices = [
        (HURRAY_DEVICE_CPU, DeviceTag::Cpu),
        (HURRAY_DEVICE_CUDA, DeviceTag::Cuda),
        (HURRAY_DEVICE_OPENCL, DeviceTag::OpenCl),
        (HURRAY_DEVICE_VULKAN, DeviceTag::Vulkan),
        (HURRAY_DEVICE_METAL, DeviceTag::Metal),
        (HURRAY_DEVICE_VPI, DeviceTag::Vpi),
        (HURRAY_DEVICE_ROCM, DeviceTag::Rocm),
        (HURRAY_DEVICE_EXT_DEV, DeviceTag::ExtDev),
        (HURRAY_DEVICE_ONEAPI, DeviceTag::OneApi),
        (HURRAY_DEVICE_WEBGPU, DeviceTag::WebGpu),
        (HURRAY_DEVICE_HEXAGON, DeviceTag::Hexagon),
        (HURRAY_DEVICE_MAIA, DeviceTag::Maia),
        (HURRAY_DEVICE_TRAINIUM, DeviceTag::Trainium),
    ];
    assert!(devices.len() == DeviceTag::ALL.len());
    let mut i = 0;
    while i < devices.len() {
        assert!(devices[i].0 == devices[i].1.code());
        i += 1;
    }
    assert!(HURRAY_SYNC_PRODUCER_SYNCED == SyncMode::ProducerSynced.code());
    assert!(HURRAY_SYNC_CONSUMER_STREAM == SyncMode::ConsumerStream.code());
    assert!(SyncMode::ALL.len() == 3);
    assert!(HURRAY_MEMORY_STANDARD == MemoryClass::Standard.code());
    assert!(HURRAY_MEMORY_HOST_PINNED == MemoryClass::HostPinned.code());
    assert!(HURRAY_MEMORY_PEER_TO_PEER == MemoryClass::PeerToPeer.code());
    assert!(MemoryClass::ALL.len() == 4);
    assert!(HURRAY_FLAG_READ_ONLY == hurray_core::Flags::READ_ONLY.bits());
    assert!(HURRAY_MIN_BUFFER_ALIGNMENT == hurray_core::MIN_BUFFER_ALIGNMENT);
    let dtypes = [
        HURRAY_DTYPE_BOOL,
        HURRAY_DTYPE_I8,
        HURRAY_DTYPE_I16,
        HURRAY_DTYPE_I32,
        HURRAY_DTYPE_I64,
        HURRAY_DTYPE_U8,
        HURRAY_DTYPE_U16,
        HURRAY_DTYPE_U32,
        HURRAY_DTYPE_U64,
        HURRAY_DTYPE_F16,
        HURRAY_DTYPE_BF16,
        HURRAY_DTYPE_F32,
        HURRAY_DTYPE_F64,
        HURRAY_DTYPE_C64,
        HURRAY_DTYPE_C128,
    ];
    assert!(dtypes.len() == DType::ALL.len());
    let mut j = 0;
    while j < dtypes.len() {
        assert!(dtypes[j] == DType::ALL[j].code());
        j += 1;
    }
};

const fn entry(status: hurray_status, value: u64) -> hurray_error {
    hurray_error {
        status,
        index: 0,
        value,
    }
}

/// The status and detail of a core error.
pub(crate) fn describe(e: Error) -> hurray_error {
    match e {
        Error::AlignmentNotPowerOfTwo { alignment } => {
            entry(HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO, alignment.into())
        }
        Error::AlignmentBelowMinimum { alignment, .. } => {
            entry(HURRAY_E_ALIGNMENT_BELOW_MINIMUM, alignment.into())
        }
        Error::InvalidSyncMode(c) => entry(HURRAY_E_INVALID_SYNC_MODE, c.into()),
        Error::InvalidDeviceTag(c) => entry(HURRAY_E_INVALID_DEVICE_TAG, c.into()),
        Error::InvalidMemoryClass(c) => entry(HURRAY_E_INVALID_MEMORY_CLASS, c.into()),
        Error::ReservedNonZero(c) => entry(HURRAY_E_RESERVED_NONZERO, c.into()),
        Error::InvalidEntry { index, error } => {
            let mut d = describe(EntryError::into_error(error));
            d.index = index as u64;
            d
        }
        Error::TableLength { len } => entry(HURRAY_E_TABLE_LENGTH, len as u64),
        Error::Truncated { needed, .. } => entry(HURRAY_E_TRUNCATED, needed),
        Error::BadMagic(m) => entry(HURRAY_E_BAD_MAGIC, u32::from_le_bytes(m).into()),
        Error::UnsupportedVersion { major, .. } => {
            entry(HURRAY_E_UNSUPPORTED_VERSION, major.into())
        }
        Error::UnknownFlags(bits) => entry(HURRAY_E_UNKNOWN_FLAGS, bits.into()),
        Error::HeaderReservedNonZero(v) => entry(HURRAY_E_HEADER_RESERVED, v.into()),
        Error::InvalidDType(c) => entry(HURRAY_E_INVALID_DTYPE, c.into()),
        Error::TooManyDims { ndim, .. } => entry(HURRAY_E_TOO_MANY_DIMS, ndim.into()),
        Error::DataBufferOutOfRange { index, .. } => {
            entry(HURRAY_E_DATA_BUFFER_OUT_OF_RANGE, index.into())
        }
        Error::MisalignedRegion { offset, .. } => entry(HURRAY_E_MISALIGNED_REGION, offset.into()),
        Error::RegionOutOfBounds { offset, .. } => {
            entry(HURRAY_E_REGION_OUT_OF_BOUNDS, offset.into())
        }
        Error::RegionsOverlap { .. } => entry(HURRAY_E_REGIONS_OVERLAP, 0),
        Error::DimTooLarge { size, .. } => entry(HURRAY_E_DIM_TOO_LARGE, size),
        Error::StrideTooLarge { stride, .. } => entry(HURRAY_E_STRIDE_TOO_LARGE, stride as u64),
        Error::ShapeOverflow => entry(HURRAY_E_SHAPE_OVERFLOW, 0),
        Error::MisalignedByteOffset { byte_offset, .. } => {
            entry(HURRAY_E_MISALIGNED_BYTE_OFFSET, byte_offset)
        }
        Error::ExtentOutOfBounds { end, .. } => entry(
            HURRAY_E_EXTENT_OUT_OF_BOUNDS,
            u64::try_from(end).unwrap_or(u64::MAX),
        ),
        Error::BufferTooSmall { needed, .. } => entry(HURRAY_E_BUFFER_TOO_SMALL, needed),
        Error::StridesLength { strides, .. } => entry(HURRAY_E_STRIDES_LENGTH, strides as u64),
        Error::NoInteropCode { device_tag, .. } => {
            entry(HURRAY_E_NO_INTEROP_CODE, device_tag.code().into())
        }
        Error::UnknownInteropCode(c) => entry(HURRAY_E_UNKNOWN_INTEROP_CODE, c as u64),
        _ => entry(HURRAY_E_UNKNOWN, 0),
    }
}

/// The message of a status code.
pub(crate) const fn message(status: hurray_status) -> &'static CStr {
    match status {
        HURRAY_OK => c"ok",
        HURRAY_E_NULL => c"a required pointer is null",
        HURRAY_E_BUFFER_TOO_SMALL => c"input too short or output buffer too small",
        HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO => c"alignment is not a power of two",
        HURRAY_E_ALIGNMENT_BELOW_MINIMUM => c"alignment of a non-empty buffer is below 64",
        HURRAY_E_INVALID_SYNC_MODE => c"sync mode is unknown or not allowed for this device",
        HURRAY_E_INVALID_DEVICE_TAG => c"device tag is unknown",
        HURRAY_E_INVALID_MEMORY_CLASS => c"memory class is unknown",
        HURRAY_E_RESERVED_NONZERO => c"reserved byte is not zero",
        HURRAY_E_TABLE_LENGTH => c"buffer table length is not a multiple of 16",
        HURRAY_E_TRUNCATED => c"descriptor is truncated",
        HURRAY_E_BAD_MAGIC => c"descriptor magic is not HRAY",
        HURRAY_E_UNSUPPORTED_VERSION => c"descriptor major version is not supported",
        HURRAY_E_UNKNOWN_FLAGS => c"unknown required flag bits",
        HURRAY_E_HEADER_RESERVED => c"descriptor header reserved field is not zero",
        HURRAY_E_INVALID_DTYPE => c"dtype is unknown",
        HURRAY_E_TOO_MANY_DIMS => c"more than 32 dimensions",
        HURRAY_E_DATA_BUFFER_OUT_OF_RANGE => c"data buffer index is not in the table",
        HURRAY_E_MISALIGNED_REGION => c"region offset is not a multiple of 8",
        HURRAY_E_REGION_OUT_OF_BOUNDS => c"region lies outside the descriptor",
        HURRAY_E_REGIONS_OVERLAP => c"descriptor regions overlap",
        HURRAY_E_DIM_TOO_LARGE => c"dimension exceeds INT64_MAX",
        HURRAY_E_STRIDE_TOO_LARGE => c"stride is out of range",
        HURRAY_E_SHAPE_OVERFLOW => c"shape or extent overflows",
        HURRAY_E_MISALIGNED_BYTE_OFFSET => c"byte offset is not a multiple of the element size",
        HURRAY_E_EXTENT_OUT_OF_BOUNDS => c"tensor elements lie outside the data buffer",
        HURRAY_E_STRIDES_LENGTH => c"strides and shape differ in length",
        HURRAY_E_NO_INTEROP_CODE => c"no DLPack/Arrow code for this device and memory class",
        HURRAY_E_UNKNOWN_INTEROP_CODE => c"DLPack/Arrow device code is not mapped",
        HURRAY_E_INDEX_OUT_OF_RANGE => c"index out of range",
        HURRAY_E_MISALIGNED_POINTER => c"pointer is not aligned as required",
        HURRAY_E_NO_STRIDES => c"descriptor has no strides (compact row-major)",
        HURRAY_E_PANIC => c"internal error: panic caught at the C boundary",
        HURRAY_E_UNKNOWN => c"error without a C code in this ABI version",
        _ => c"unknown status code",
    }
}
