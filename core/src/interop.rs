//! The mapping between hurray's device tags, memory classes and element
//! types and the codes of DLPack 1.x (`DLDeviceType`, `DLDataType`) and the
//! Arrow C Device interface (`ArrowDeviceType`).
//!
//! Hurray device tags are **not** DLPack numbers (the format forbids storing
//! DLPack integers in a handle); this module is the only place the two
//! meet, by the export and import tables of `docs/spec/buffer-protocol.md`
//! § Interchange codes. A private device, and a code hurray has no device
//! for, is an [`InteropError`]; export then import returns the original
//! pair for every canonical pair.
//!
//! ```
//! use hurray_core::{interop, DeviceTag, MemoryClass};
//!
//! assert_eq!(interop::to_dlpack(DeviceTag::Cuda, MemoryClass::HostPinned), Ok(interop::KDL_CUDA_HOST));
//! assert_eq!(interop::from_dlpack(interop::KDL_CUDA_MANAGED), Ok((DeviceTag::Cuda, MemoryClass::Unified)));
//! assert_eq!(interop::to_dlpack(DeviceTag::Vulkan, MemoryClass::Standard), Ok(interop::KDL_VULKAN));
//! assert!(interop::from_dlpack(interop::KDL_MAIA).is_err());
//! ```

use crate::codes::{DeviceTag, MemoryClass};
use crate::element::ElementType;
use crate::error::error_enum;

/// `kDLCPU` / `ARROW_DEVICE_CPU`.
pub const KDL_CPU: i32 = 1;
/// `kDLCUDA` / `ARROW_DEVICE_CUDA`.
pub const KDL_CUDA: i32 = 2;
/// `kDLCUDAHost` / `ARROW_DEVICE_CUDA_HOST`: CUDA pinned host memory.
pub const KDL_CUDA_HOST: i32 = 3;
/// `kDLOpenCL` / `ARROW_DEVICE_OPENCL`.
pub const KDL_OPENCL: i32 = 4;
/// `kDLVulkan` / `ARROW_DEVICE_VULKAN`.
pub const KDL_VULKAN: i32 = 7;
/// `kDLMetal` / `ARROW_DEVICE_METAL`.
pub const KDL_METAL: i32 = 8;
/// `kDLVPI` / `ARROW_DEVICE_VPI`: no hurray device.
pub const KDL_VPI: i32 = 9;
/// `kDLROCM` / `ARROW_DEVICE_ROCM`.
pub const KDL_ROCM: i32 = 10;
/// `kDLROCMHost` / `ARROW_DEVICE_ROCM_HOST`: ROCm pinned host memory.
pub const KDL_ROCM_HOST: i32 = 11;
/// `kDLExtDev` / `ARROW_DEVICE_EXT_DEV`: no hurray device.
pub const KDL_EXT_DEV: i32 = 12;
/// `kDLCUDAManaged` / `ARROW_DEVICE_CUDA_MANAGED`.
pub const KDL_CUDA_MANAGED: i32 = 13;
/// `kDLOneAPI` / `ARROW_DEVICE_ONEAPI`.
pub const KDL_ONEAPI: i32 = 14;
/// `kDLWebGPU` / `ARROW_DEVICE_WEBGPU`.
pub const KDL_WEBGPU: i32 = 15;
/// `kDLHexagon` / `ARROW_DEVICE_HEXAGON`.
pub const KDL_HEXAGON: i32 = 16;
/// `kDLMAIA` (DLPack only): no hurray device.
pub const KDL_MAIA: i32 = 17;
/// `kDLTrn` (DLPack only): no hurray device.
pub const KDL_TRN: i32 = 18;
/// `kDLTPU` (DLPack only, upstream after v1.3; not in the vendored 1.1
/// header): no hurray device.
pub const KDL_TPU: i32 = 19;
/// `kDLTPUHost` (DLPack only, upstream after v1.3; JAX already emits it):
/// no hurray device.
pub const KDL_TPU_HOST: i32 = 20;

error_enum! {
    /// Why a value has no counterpart on the other side.
    #[non_exhaustive]
    pub enum InteropError {
        /// This (device tag, memory class) pair has no device code.
        NoDeviceCode {
            /// The device.
            device_tag: DeviceTag,
            /// The memory class.
            memory_class: MemoryClass,
        } => "device {} with memory class {} has no interchange device code",
            device_tag.name(),
            memory_class.name();
        /// A DLPack or Arrow device-type code that hurray does not map.
        UnknownDeviceCode(c: i32) => "interchange device code {c} is not mapped";
        /// An element type DLPack has no `DLDataType` for.
        NoDataType(t: ElementType) => "element type {} has no DLPack data type", t.name();
        /// A `DLDataType` hurray has no element type for.
        UnknownDataType {
            /// `code`.
            code: u8,
            /// `bits`.
            bits: u8,
            /// `lanes`.
            lanes: u16,
        } => "DLPack data type (code {code}, bits {bits}, lanes {lanes}) has no hurray element type";
    }
}

impl core::error::Error for InteropError {}

/// The DLPack `DLDeviceType` through which a buffer of this pair is reached.
///
/// # Errors
/// [`InteropError::NoDeviceCode`] for a private device or memory class.
pub const fn to_dlpack(
    device_tag: DeviceTag,
    memory_class: MemoryClass,
) -> Result<i32, InteropError> {
    use MemoryClass::{HostPinned, Private, Unified};
    Ok(match (device_tag, memory_class) {
        (DeviceTag::Private(_), _) | (_, Private(_)) => {
            return Err(InteropError::NoDeviceCode {
                device_tag,
                memory_class,
            });
        }
        (DeviceTag::Cpu, _) => KDL_CPU,
        (DeviceTag::Cuda, HostPinned) => KDL_CUDA_HOST,
        (DeviceTag::Cuda, Unified) => KDL_CUDA_MANAGED,
        (DeviceTag::Cuda, _) => KDL_CUDA,
        (DeviceTag::Rocm, HostPinned) => KDL_ROCM_HOST,
        (DeviceTag::Rocm, _) => KDL_ROCM,
        (DeviceTag::Metal, _) => KDL_METAL,
        (DeviceTag::Vulkan, _) => KDL_VULKAN,
        (DeviceTag::WebGpu, _) => KDL_WEBGPU,
        (DeviceTag::Hexagon, _) => KDL_HEXAGON,
        (DeviceTag::LevelZero, _) => KDL_ONEAPI,
        (DeviceTag::OpenCl, _) => KDL_OPENCL,
    })
}

/// The canonical (device tag, memory class) of a DLPack `DLDeviceType`.
///
/// # Errors
/// [`InteropError::UnknownDeviceCode`] for a code with no hurray device.
pub const fn from_dlpack(code: i32) -> Result<(DeviceTag, MemoryClass), InteropError> {
    use MemoryClass::{HostPinned, Standard, Unified};
    Ok(match code {
        KDL_CPU => (DeviceTag::Cpu, Standard),
        KDL_CUDA => (DeviceTag::Cuda, Standard),
        KDL_CUDA_HOST => (DeviceTag::Cuda, HostPinned),
        KDL_OPENCL => (DeviceTag::OpenCl, Standard),
        KDL_VULKAN => (DeviceTag::Vulkan, Standard),
        KDL_METAL => (DeviceTag::Metal, Standard),
        KDL_ROCM => (DeviceTag::Rocm, Standard),
        KDL_ROCM_HOST => (DeviceTag::Rocm, HostPinned),
        KDL_CUDA_MANAGED => (DeviceTag::Cuda, Unified),
        KDL_ONEAPI => (DeviceTag::LevelZero, Standard),
        KDL_WEBGPU => (DeviceTag::WebGpu, Standard),
        KDL_HEXAGON => (DeviceTag::Hexagon, Standard),
        _ => return Err(InteropError::UnknownDeviceCode(code)),
    })
}

/// The Arrow C Device `ArrowDeviceType` of a pair. Arrow's codes 1–16 are
/// DLPack's; MAIA and Trainium have no Arrow code, and neither maps here.
///
/// # Errors
/// As [`to_dlpack`].
pub const fn to_arrow(
    device_tag: DeviceTag,
    memory_class: MemoryClass,
) -> Result<i32, InteropError> {
    to_dlpack(device_tag, memory_class)
}

/// The canonical pair of an `ArrowDeviceType`.
///
/// # Errors
/// As [`from_dlpack`].
pub const fn from_arrow(code: i32) -> Result<(DeviceTag, MemoryClass), InteropError> {
    from_dlpack(code)
}

/// `DLDataTypeCode` values.
pub mod dl_code {
    /// `kDLInt`.
    pub const INT: u8 = 0;
    /// `kDLUInt`.
    pub const UINT: u8 = 1;
    /// `kDLFloat`.
    pub const FLOAT: u8 = 2;
    /// `kDLBfloat`.
    pub const BFLOAT: u8 = 4;
    /// `kDLComplex`.
    pub const COMPLEX: u8 = 5;
    /// `kDLBool`.
    pub const BOOL: u8 = 6;
    /// `kDLFloat8_e4m3fn` (OCP E4M3: no infinities).
    pub const FLOAT8_E4M3FN: u8 = 10;
    /// `kDLFloat8_e5m2`.
    pub const FLOAT8_E5M2: u8 = 12;
    /// `kDLFloat8_e8m0fnu`.
    pub const FLOAT8_E8M0FNU: u8 = 14;
    /// `kDLFloat6_e2m3fn`.
    pub const FLOAT6_E2M3FN: u8 = 15;
    /// `kDLFloat6_e3m2fn`.
    pub const FLOAT6_E3M2FN: u8 = 16;
    /// `kDLFloat4_e2m1fn`.
    pub const FLOAT4_E2M1FN: u8 = 17;
}

/// The DLPack data types of the element types, each pair written once:
/// [`to_dlpack_dtype`] and [`from_dlpack_dtype`] are two `match`es over the
/// list (no table in memory).
macro_rules! dl_data_types {
    ($($t:ident = ($code:ident, $bits:literal),)*) => {
        /// The DLPack `DLDataType` `(code, bits, lanes)` of an element type.
        ///
        /// Sub-byte types map to DLPack's packed sub-byte types (little bit-endian,
        /// as hurray packs them): int4/uint4/int2/uint2 as `kDLInt`/`kDLUInt` with
        /// 4 or 2 bits, float4/float6 as their `fn` codes. `bool` has no DLPack
        /// counterpart because DLPack's `kDLBool` is one byte per value while
        /// hurray's is one bit; nor does `float128`.
        ///
        /// # Errors
        /// [`InteropError::NoDataType`] for bool, float128 and private types.
        ///
        /// ```
        /// use hurray_core::{interop, ElementType};
        /// assert_eq!(interop::to_dlpack_dtype(ElementType::BFloat16), Ok((4, 16, 1)));
        /// assert_eq!(interop::to_dlpack_dtype(ElementType::Int4), Ok((0, 4, 1)));
        /// assert!(interop::to_dlpack_dtype(ElementType::Bool).is_err());
        /// ```
        #[inline(never)] // out of line, as before: an inlined copy doubled its tables
        pub const fn to_dlpack_dtype(t: ElementType) -> Result<(u8, u8, u16), InteropError> {
            let (code, bits) = match t {
                $(ElementType::$t => (dl_code::$code, $bits),)*
                _ => return Err(InteropError::NoDataType(t)),
            };
            Ok((code, bits, 1))
        }

        /// The element type of a DLPack `DLDataType`; the inverse of
        /// [`to_dlpack_dtype`].
        ///
        /// # Errors
        /// [`InteropError::UnknownDataType`] for lanes ≠ 1 or a (code, bits) pair
        /// with no hurray type.
        #[inline(never)] // out of line, as before: an inlined copy doubled its tables
        pub const fn from_dlpack_dtype(
            code: u8,
            bits: u8,
            lanes: u16,
        ) -> Result<ElementType, InteropError> {
            if lanes != 1 {
                return Err(InteropError::UnknownDataType { code, bits, lanes });
            }
            Ok(match (code, bits) {
                $((dl_code::$code, $bits) => ElementType::$t,)*
                _ => return Err(InteropError::UnknownDataType { code, bits, lanes }),
            })
        }
    };
}

dl_data_types! {
    Int8 = (INT, 8),
    Int16 = (INT, 16),
    Int32 = (INT, 32),
    Int64 = (INT, 64),
    Int4 = (INT, 4),
    Int2 = (INT, 2),
    UInt8 = (UINT, 8),
    UInt16 = (UINT, 16),
    UInt32 = (UINT, 32),
    UInt64 = (UINT, 64),
    UInt4 = (UINT, 4),
    UInt2 = (UINT, 2),
    Float16 = (FLOAT, 16),
    Float32 = (FLOAT, 32),
    Float64 = (FLOAT, 64),
    BFloat16 = (BFLOAT, 16),
    Complex64 = (COMPLEX, 64),
    Complex128 = (COMPLEX, 128),
    Float8E4M3 = (FLOAT8_E4M3FN, 8),
    Float8E5M2 = (FLOAT8_E5M2, 8),
    Float8E8M0 = (FLOAT8_E8M0FNU, 8),
    Float6E2M3 = (FLOAT6_E2M3FN, 6),
    Float6E3M2 = (FLOAT6_E3M2FN, 6),
    Float4E2M1 = (FLOAT4_E2M1FN, 4),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (device, class) pair a buffer can have, exported then imported.
    #[test]
    fn export_then_import_returns_the_canonical_pair() {
        for &tag in DeviceTag::NAMED {
            for &class in MemoryClass::NAMED {
                if !tag.allows(class) {
                    continue;
                }
                let code = to_dlpack(tag, class).unwrap();
                assert_eq!(to_arrow(tag, class), Ok(code));
                let (t, c) = from_dlpack(code).unwrap();
                assert_eq!(t, tag);
                // The canonical pair of a code is the class that names it.
                assert_eq!(to_dlpack(t, c), Ok(code));
            }
        }
    }

    #[test]
    fn dlpack_devices_without_a_hurray_tag_are_typed_errors() {
        for code in [
            0,
            5,
            6,
            KDL_VPI,
            KDL_EXT_DEV,
            KDL_MAIA,
            KDL_TRN,
            KDL_TPU,
            KDL_TPU_HOST,
            21,
            -1,
        ] {
            assert_eq!(
                from_dlpack(code),
                Err(InteropError::UnknownDeviceCode(code))
            );
            assert_eq!(from_arrow(code), Err(InteropError::UnknownDeviceCode(code)));
        }
    }

    #[test]
    fn every_element_type_maps_both_ways_or_is_refused() {
        for &t in ElementType::BUILT_IN {
            match to_dlpack_dtype(t) {
                Ok((code, bits, lanes)) => {
                    assert_eq!(from_dlpack_dtype(code, bits, lanes), Ok(t));
                    assert_eq!(Some(u32::from(bits)), t.bits());
                }
                Err(e) => {
                    assert!(matches!(t, ElementType::Bool | ElementType::Float128));
                    assert_eq!(e, InteropError::NoDataType(t));
                }
            }
        }
        // DLPack's byte bool, vectors and the FP8 variants hurray lacks.
        for (code, bits, lanes) in [
            (6, 8, 1),
            (2, 32, 4),
            (7, 8, 1),
            (8, 8, 1),
            (9, 8, 1),
            (11, 8, 1),
            (13, 8, 1),
            (3, 64, 1),
        ] {
            assert!(from_dlpack_dtype(code, bits, lanes).is_err());
        }
    }
}
