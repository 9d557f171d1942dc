//! The Arrow C data and C device interface structs, field for field as
//! `include/vendor/arrow/c/abi.h` (apache/arrow, unchanged since
//! `aab7d81`) declares them, with sizes and offsets asserted here and
//! against the C header by `core/ffi/tests/test_interchange.c`.

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};

/// `ARROW_FLAG_DICTIONARY_ORDERED`.
pub const ARROW_FLAG_DICTIONARY_ORDERED: i64 = 1;
/// `ARROW_FLAG_NULLABLE`.
pub const ARROW_FLAG_NULLABLE: i64 = 2;
/// `ARROW_FLAG_MAP_KEYS_SORTED`.
pub const ARROW_FLAG_MAP_KEYS_SORTED: i64 = 4;

/// `struct ArrowSchema`: a type description.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowSchema {
    /// Format string (`"+w:6"`, `"f"`, …).
    pub format: *const c_char,
    /// Field name, or null.
    pub name: *const c_char,
    /// Binary key/value metadata, or null.
    pub metadata: *const c_char,
    /// `ARROW_FLAG_*`.
    pub flags: i64,
    /// Number of children.
    pub n_children: i64,
    /// `n_children` child schemas.
    pub children: *mut *mut ArrowSchema,
    /// Dictionary value type, or null.
    pub dictionary: *mut ArrowSchema,
    /// Releases the schema; null once released.
    pub release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    /// The producer's data.
    pub private_data: *mut c_void,
}

/// `struct ArrowArray`: array data.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowArray {
    /// Logical length.
    pub length: i64,
    /// Null count (-1: unknown).
    pub null_count: i64,
    /// Logical offset into the buffers.
    pub offset: i64,
    /// Number of buffers.
    pub n_buffers: i64,
    /// Number of children.
    pub n_children: i64,
    /// `n_buffers` buffer pointers.
    pub buffers: *mut *const c_void,
    /// `n_children` child arrays.
    pub children: *mut *mut ArrowArray,
    /// Dictionary, or null.
    pub dictionary: *mut ArrowArray,
    /// Releases the array; null once released.
    pub release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    /// The producer's data.
    pub private_data: *mut c_void,
}

/// `struct ArrowDeviceArray`: an array whose buffers live on a device.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowDeviceArray {
    /// The array.
    pub array: ArrowArray,
    /// The device ordinal (-1: none).
    pub device_id: i64,
    /// `ArrowDeviceType` (`ARROW_DEVICE_CPU` = 1, …).
    pub device_type: i32,
    /// An event to wait on before reading (null: the data is ready).
    pub sync_event: *mut c_void,
    /// Reserved; zero.
    pub reserved: [i64; 3],
}

#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<ArrowSchema>() == 72);
    assert!(offset_of!(ArrowSchema, flags) == 24);
    assert!(offset_of!(ArrowSchema, children) == 40);
    assert!(offset_of!(ArrowSchema, release) == 56);
    assert!(offset_of!(ArrowSchema, private_data) == 64);
    assert!(size_of::<ArrowArray>() == 80);
    assert!(offset_of!(ArrowArray, buffers) == 40);
    assert!(offset_of!(ArrowArray, release) == 64);
    assert!(size_of::<ArrowDeviceArray>() == 128);
    assert!(offset_of!(ArrowDeviceArray, device_id) == 80);
    assert!(offset_of!(ArrowDeviceArray, device_type) == 88);
    assert!(offset_of!(ArrowDeviceArray, sync_event) == 96);
    assert!(offset_of!(ArrowDeviceArray, reserved) == 104);
};
