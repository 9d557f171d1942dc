//! The DLPack structs, field for field as `include/vendor/dlpack/dlpack.h`
//! (dmlc/dlpack `7f393bb`) declares them, with their sizes and offsets on
//! 64-bit targets asserted at compile time here and against the C header by
//! `core/ffi/tests/test_interchange.c`.
//!
//! Codes stay open integers (`i32` device types, `u8` type codes): a value a
//! newer producer sends is data, not undefined behaviour.

use core::ffi::c_void;
use core::mem::{offset_of, size_of};

/// `DLPACK_MAJOR_VERSION` of the vendored header.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// `DLPACK_MINOR_VERSION` of the vendored header: the version hurray's
/// exports declare (every code they emit exists in 1.1).
pub const DLPACK_MINOR_VERSION: u32 = 1;
/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;
/// Every flag bit DLPack 1.x defines.
pub const DLPACK_FLAGS_DEFINED: u64 = DLPACK_FLAG_BITMASK_READ_ONLY
    | DLPACK_FLAG_BITMASK_IS_COPIED
    | DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

/// `DLPackVersion`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DLPackVersion {
    /// Major version: a change means a different struct layout.
    pub major: u32,
    /// Minor version: a change means new enumeration values.
    pub minor: u32,
}

/// `DLDevice`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DLDevice {
    /// `DLDeviceType` (`kDLCPU` = 1, `kDLCUDA` = 2, …), kept open.
    pub device_type: i32,
    /// The device ordinal; 0 for host, pinned and managed memory.
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DLDataType {
    /// `DLDataTypeCode`.
    pub code: u8,
    /// Bits per element.
    pub bits: u8,
    /// Vector lanes (1 for scalars; hurray accepts nothing else).
    pub lanes: u16,
}

/// `DLTensor`: a borrowed tensor (data pointer, device, shape, strides).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLTensor {
    /// The allocation's pointer (device pointer or handle on some devices).
    pub data: *mut c_void,
    /// Where the data lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` dimensions.
    pub shape: *mut i64,
    /// `ndim` strides in elements (null before DLPack 1.2 meant compact
    /// row-major).
    pub strides: *mut i64,
    /// Bytes from `data` to element `[0, …, 0]`.
    pub byte_offset: u64,
}

/// `DLManagedTensor`: the legacy (0.x) managed tensor.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the producer's resources and `self`; null if there are none.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned`: the DLPack ≥ 1.0 managed tensor.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The ABI version; only `version` and `deleter` may be read when the
    /// major version is not 1.
    pub version: DLPackVersion,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the producer's resources and `self`; null if there are none.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

// The header's layout on the 64-bit targets hurray builds for (LP64 and
// LLP64 agree: every field is a fixed-width integer or a pointer).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<DLPackVersion>() == 8);
    assert!(size_of::<DLDevice>() == 8);
    assert!(size_of::<DLDataType>() == 4);
    assert!(offset_of!(DLDataType, bits) == 1);
    assert!(offset_of!(DLDataType, lanes) == 2);
    assert!(size_of::<DLTensor>() == 48);
    assert!(offset_of!(DLTensor, device) == 8);
    assert!(offset_of!(DLTensor, ndim) == 16);
    assert!(offset_of!(DLTensor, dtype) == 20);
    assert!(offset_of!(DLTensor, shape) == 24);
    assert!(offset_of!(DLTensor, strides) == 32);
    assert!(offset_of!(DLTensor, byte_offset) == 40);
    assert!(size_of::<DLManagedTensor>() == 64);
    assert!(offset_of!(DLManagedTensor, manager_ctx) == 48);
    assert!(offset_of!(DLManagedTensor, deleter) == 56);
    assert!(size_of::<DLManagedTensorVersioned>() == 80);
    assert!(offset_of!(DLManagedTensorVersioned, manager_ctx) == 8);
    assert!(offset_of!(DLManagedTensorVersioned, deleter) == 16);
    assert!(offset_of!(DLManagedTensorVersioned, flags) == 24);
    assert!(offset_of!(DLManagedTensorVersioned, dl_tensor) == 32);
};
