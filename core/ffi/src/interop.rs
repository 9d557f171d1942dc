//! DLPack and Arrow: the core's mapping as functions, and as constant tables
//! a C program can iterate. Hurray codes are not DLPack codes; every value
//! here comes from `hurray_core::interop` (the tables are computed from it
//! at compile time).

use hurray_core::interop::{self as core_interop, InteropError};
use hurray_core::{DeviceTag, ElementType, MemoryClass};

use crate::status::{self, *};
use crate::{check_out, guard, put, tri};

/// One row of the device table: a valid (device tag, memory class) pair and
/// the device codes through which DLPack and Arrow reach it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct hurray_device_mapping {
    /// DLPack `DLDeviceType`.
    pub dlpack: i32,
    /// Arrow C Device `ArrowDeviceType`.
    pub arrow: i32,
    /// `HURRAY_DEVICE_*` tag.
    pub device_tag: u8,
    /// `HURRAY_MEMORY_*` class.
    pub memory_class: u8,
}

/// One row of the element type table: a hurray type and its DLPack
/// `DLDataType`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct hurray_dtype_mapping {
    /// `DLDataType.lanes` (always 1).
    pub lanes: u16,
    /// `HURRAY_TYPE_*` code.
    pub element_type: u8,
    /// `DLDataType.code` (`kDLInt`, `kDLFloat`, ...).
    pub code: u8,
    /// `DLDataType.bits`.
    pub bits: u8,
}

/// Rows of `HURRAY_DEVICE_MAPPINGS`: every (named device, named class) pair
/// the per-device validity table allows.
pub const HURRAY_DEVICE_MAPPING_COUNT: usize = 29;
/// Rows of `HURRAY_DTYPE_MAPPINGS`: every built-in type but `bool` (one bit
/// in hurray, one byte in DLPack) and `float128`.
pub const HURRAY_DTYPE_MAPPING_COUNT: usize = 24;

/// Every valid named (device tag, memory class) pair with its DLPack and
/// Arrow device codes, in device then class order. Export direction: a
/// DLPack/Arrow code may appear on several rows; `hurray_from_dlpack_device`
/// gives its one canonical pair.
#[unsafe(no_mangle)]
pub static HURRAY_DEVICE_MAPPINGS: [hurray_device_mapping; HURRAY_DEVICE_MAPPING_COUNT] =
    device_table();

/// Every built-in element type DLPack can describe, with its `DLDataType`,
/// in type-code order. Both directions are exact.
#[unsafe(no_mangle)]
pub static HURRAY_DTYPE_MAPPINGS: [hurray_dtype_mapping; HURRAY_DTYPE_MAPPING_COUNT] =
    dtype_table();

/// The device table, built from the core's mapping at compile time (the
/// build fails if the row count changes).
#[allow(clippy::indexing_slicing)] // const evaluation: an index out of range fails the build
const fn device_table() -> [hurray_device_mapping; HURRAY_DEVICE_MAPPING_COUNT] {
    let mut rows = [hurray_device_mapping {
        dlpack: 0,
        arrow: 0,
        device_tag: 0,
        memory_class: 0,
    }; HURRAY_DEVICE_MAPPING_COUNT];
    let mut n = 0;
    let mut d = 0;
    while d < DeviceTag::NAMED.len() {
        let mut c = 0;
        while c < MemoryClass::NAMED.len() {
            let (dev, class) = (DeviceTag::NAMED[d], MemoryClass::NAMED[c]);
            if dev.allows(class) {
                let (Ok(dlpack), Ok(arrow)) = (
                    core_interop::to_dlpack(dev, class),
                    core_interop::to_arrow(dev, class),
                ) else {
                    panic!("a valid named pair has no DLPack/Arrow code")
                };
                rows[n] = hurray_device_mapping {
                    dlpack,
                    arrow,
                    device_tag: dev.code(),
                    memory_class: class.code(),
                };
                n += 1;
            }
            c += 1;
        }
        d += 1;
    }
    assert!(n == HURRAY_DEVICE_MAPPING_COUNT);
    rows
}

/// The element type table, built from the core's mapping at compile time.
#[allow(clippy::indexing_slicing)] // const evaluation: an index out of range fails the build
const fn dtype_table() -> [hurray_dtype_mapping; HURRAY_DTYPE_MAPPING_COUNT] {
    let mut rows = [hurray_dtype_mapping {
        lanes: 0,
        element_type: 0,
        code: 0,
        bits: 0,
    }; HURRAY_DTYPE_MAPPING_COUNT];
    let mut n = 0;
    let mut t = 0;
    while t < ElementType::BUILT_IN.len() {
        let ty = ElementType::BUILT_IN[t];
        if let Ok((code, bits, lanes)) = core_interop::to_dlpack_dtype(ty) {
            rows[n] = hurray_dtype_mapping {
                lanes,
                element_type: ty.code(),
                code,
                bits,
            };
            n += 1;
        }
        t += 1;
    }
    assert!(n == HURRAY_DTYPE_MAPPING_COUNT);
    rows
}

/// The status of an interop error.
fn fail(e: InteropError) -> hurray_status {
    status::describe_interop(e).status
}

/// Decodes a (device tag, memory class) pair of wire codes.
fn pair(device_tag: u8, memory_class: u8) -> Result<(DeviceTag, MemoryClass), hurray_status> {
    let d = DeviceTag::from_code(device_tag).ok_or(HURRAY_E_INVALID_DEVICE_TAG)?;
    let m = MemoryClass::from_code(memory_class).ok_or(HURRAY_E_INVALID_MEMORY_CLASS)?;
    Ok((d, m))
}

/// Maps a (device tag, memory class) pair to an interop code and writes it.
///
/// # Safety
/// `out` is null or points to one writable `i32`.
unsafe fn to_code(
    device_tag: u8,
    memory_class: u8,
    out: *mut i32,
    map: fn(DeviceTag, MemoryClass) -> Result<i32, InteropError>,
) -> hurray_status {
    tri!(check_out(out));
    let (d, m) = tri!(pair(device_tag, memory_class));
    match map(d, m) {
        // SAFETY: forwarded from this function's contract.
        Ok(code) => unsafe { put(out, code) },
        Err(e) => fail(e),
    }
}

/// Writes the (device tag, memory class) pair of an interop code.
///
/// # Safety
/// `device_tag` and `memory_class` are null or point to one writable byte each.
unsafe fn unpair(
    r: Result<(DeviceTag, MemoryClass), InteropError>,
    device_tag: *mut u8,
    memory_class: *mut u8,
) -> hurray_status {
    tri!(check_out(device_tag));
    tri!(check_out(memory_class));
    match r {
        Ok((d, m)) => {
            // SAFETY: both pointers were checked non-null and aligned; by
            // this function's contract each is one writable byte.
            unsafe {
                put(device_tag, d.code());
                put(memory_class, m.code())
            }
        }
        Err(e) => fail(e),
    }
}

/// The DLPack `DLDeviceType` of a (device tag, memory class) pair.
/// `HURRAY_E_NO_INTEROP_CODE` for a private device or class.
///
/// # Safety
/// `out` is null or storage for one `int32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_to_dlpack_device(
    device_tag: u8,
    memory_class: u8,
    out: *mut i32,
) -> hurray_status {
    // SAFETY: `out` is null or one writable `int32_t` (# Safety).
    guard(|| unsafe { to_code(device_tag, memory_class, out, core_interop::to_dlpack) })
}

/// The canonical (device tag, memory class) pair of a DLPack `DLDeviceType`.
/// `HURRAY_E_UNKNOWN_INTEROP_CODE` for a code with no hurray device.
///
/// # Safety
/// `device_tag` and `memory_class` are null or storage for one byte each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_from_dlpack_device(
    code: i32,
    device_tag: *mut u8,
    memory_class: *mut u8,
) -> hurray_status {
    // SAFETY: both outputs are null or one writable byte (# Safety).
    guard(|| unsafe { unpair(core_interop::from_dlpack(code), device_tag, memory_class) })
}

/// The Arrow C Device `ArrowDeviceType` of a (device tag, memory class) pair.
///
/// # Safety
/// As `hurray_to_dlpack_device`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_to_arrow_device(
    device_tag: u8,
    memory_class: u8,
    out: *mut i32,
) -> hurray_status {
    // SAFETY: `out` is null or one writable `int32_t` (# Safety).
    guard(|| unsafe { to_code(device_tag, memory_class, out, core_interop::to_arrow) })
}

/// The canonical (device tag, memory class) pair of an `ArrowDeviceType`.
///
/// # Safety
/// As `hurray_from_dlpack_device`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_from_arrow_device(
    code: i32,
    device_tag: *mut u8,
    memory_class: *mut u8,
) -> hurray_status {
    // SAFETY: both outputs are null or one writable byte (# Safety).
    guard(|| unsafe { unpair(core_interop::from_arrow(code), device_tag, memory_class) })
}

/// The DLPack `DLDataType` (`code`, `bits`, `lanes`) of an element type.
/// `HURRAY_E_NO_INTEROP_CODE` for bool, float128 and private types;
/// `HURRAY_E_INVALID_TYPE_TAG` for a reserved code.
///
/// # Safety
/// `code`, `bits` and `lanes` are null or storage for one value each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_to_dlpack_dtype(
    element_type: u8,
    code: *mut u8,
    bits: *mut u8,
    lanes: *mut u16,
) -> hurray_status {
    guard(|| {
        tri!(check_out(code));
        tri!(check_out(bits));
        tri!(check_out(lanes));
        let Some(t) = ElementType::from_code(element_type) else {
            return HURRAY_E_INVALID_TYPE_TAG;
        };
        match core_interop::to_dlpack_dtype(t) {
            // SAFETY: the three outputs were checked non-null and aligned; by
            // this function's contract each is storage for one value.
            Ok((c, b, l)) => unsafe {
                put(code, c);
                put(bits, b);
                put(lanes, l)
            },
            Err(e) => fail(e),
        }
    })
}

/// The element type of a DLPack `DLDataType`.
/// `HURRAY_E_UNKNOWN_INTEROP_CODE` when hurray has none (or `lanes != 1`).
///
/// # Safety
/// `element_type` is null or storage for one byte.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_from_dlpack_dtype(
    code: u8,
    bits: u8,
    lanes: u16,
    element_type: *mut u8,
) -> hurray_status {
    guard(
        || match core_interop::from_dlpack_dtype(code, bits, lanes) {
            // SAFETY: `element_type` is null or one writable byte (# Safety).
            Ok(t) => unsafe { put(element_type, t.code()) },
            Err(e) => fail(e),
        },
    )
}

/// Bits per element of a built-in element type; 0 for a private or reserved
/// code (a private type's width is in its descriptor's extension type
/// section: `hurray_tensor_view.element_bits`).
#[unsafe(no_mangle)]
pub extern "C" fn hurray_element_type_bits(element_type: u8) -> u32 {
    ElementType::from_code(element_type)
        .and_then(ElementType::bits)
        .unwrap_or(0)
}

/// Natural alignment in bytes of one element of a built-in type (what
/// `byte_offset` must be a multiple of); 0 for a private or reserved code.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_element_type_alignment(element_type: u8) -> u32 {
    match ElementType::from_code(element_type) {
        Some(t) if !t.is_private() => t.natural_alignment(),
        _ => 0,
    }
}
