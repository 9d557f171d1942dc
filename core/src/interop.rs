//! The mapping between hurray's (device tag, memory class) pairs and the
//! device-type codes of DLPack 1.x (`DLDeviceType`) and the Arrow C Device
//! interface (`ArrowDeviceType`).
//!
//! The mapping is a bijection on the pairs listed in
//! `docs/spec/buffer-protocol.md` § DLPack and Arrow: every pair with a code
//! maps to exactly one code and back to itself. A pair with no code (Metal
//! unified memory, any peer-to-peer buffer, a pinned CPU buffer whose pinning
//! device is unknown, …) is an [`Error::NoInteropCode`], never a guess; a
//! code hurray does not map is an [`Error::UnknownInteropCode`].
//!
//! ```
//! use hurray_core::{interop, DeviceTag, MemoryClass};
//!
//! assert_eq!(interop::to_dlpack(DeviceTag::Cuda, MemoryClass::HostPinned), Ok(interop::KDL_CUDA_HOST));
//! assert_eq!(interop::from_dlpack(13), Ok((DeviceTag::Cuda, MemoryClass::Unified)));
//! assert!(interop::to_dlpack(DeviceTag::Metal, MemoryClass::Unified).is_err());
//! ```

use crate::codes::{DeviceTag, MemoryClass};
use crate::error::{Error, Result};

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
/// `kDLVPI` / `ARROW_DEVICE_VPI`.
pub const KDL_VPI: i32 = 9;
/// `kDLROCM` / `ARROW_DEVICE_ROCM`.
pub const KDL_ROCM: i32 = 10;
/// `kDLROCMHost` / `ARROW_DEVICE_ROCM_HOST`: ROCm pinned host memory.
pub const KDL_ROCM_HOST: i32 = 11;
/// `kDLExtDev` / `ARROW_DEVICE_EXT_DEV`.
pub const KDL_EXT_DEV: i32 = 12;
/// `kDLCUDAManaged` / `ARROW_DEVICE_CUDA_MANAGED`: CUDA managed memory.
pub const KDL_CUDA_MANAGED: i32 = 13;
/// `kDLOneAPI` / `ARROW_DEVICE_ONEAPI`.
pub const KDL_ONEAPI: i32 = 14;
/// `kDLWebGPU` / `ARROW_DEVICE_WEBGPU`.
pub const KDL_WEBGPU: i32 = 15;
/// `kDLHexagon` / `ARROW_DEVICE_HEXAGON`.
pub const KDL_HEXAGON: i32 = 16;
/// `kDLMAIA` (DLPack only).
pub const KDL_MAIA: i32 = 17;
/// `kDLTrn` (DLPack only).
pub const KDL_TRN: i32 = 18;

/// The highest code shared by DLPack and Arrow; Arrow defines nothing above it.
const ARROW_MAX: i32 = KDL_HEXAGON;

/// The DLPack `DLDeviceType` of a (device tag, memory class) pair.
///
/// # Errors
/// [`Error::NoInteropCode`] when DLPack has no code for the pair.
pub const fn to_dlpack(device_tag: DeviceTag, memory_class: MemoryClass) -> Result<i32> {
    use DeviceTag as D;
    use MemoryClass as M;
    Ok(match (device_tag, memory_class) {
        (D::Cpu, M::Standard) => KDL_CPU,
        (D::Cuda, M::Standard) => KDL_CUDA,
        (D::Cuda, M::HostPinned) => KDL_CUDA_HOST,
        (D::Cuda, M::Unified) => KDL_CUDA_MANAGED,
        (D::OpenCl, M::Standard) => KDL_OPENCL,
        (D::Vulkan, M::Standard) => KDL_VULKAN,
        (D::Metal, M::Standard) => KDL_METAL,
        (D::Vpi, M::Standard) => KDL_VPI,
        (D::Rocm, M::Standard) => KDL_ROCM,
        (D::Rocm, M::HostPinned) => KDL_ROCM_HOST,
        (D::ExtDev, M::Standard) => KDL_EXT_DEV,
        (D::OneApi, M::Standard) => KDL_ONEAPI,
        (D::WebGpu, M::Standard) => KDL_WEBGPU,
        (D::Hexagon, M::Standard) => KDL_HEXAGON,
        (D::Maia, M::Standard) => KDL_MAIA,
        (D::Trainium, M::Standard) => KDL_TRN,
        _ => {
            return Err(Error::NoInteropCode {
                device_tag,
                memory_class,
            });
        }
    })
}

/// The (device tag, memory class) pair of a DLPack `DLDeviceType`.
///
/// # Errors
/// [`Error::UnknownInteropCode`] for a code hurray does not map.
pub const fn from_dlpack(code: i32) -> Result<(DeviceTag, MemoryClass)> {
    use DeviceTag as D;
    use MemoryClass as M;
    Ok(match code {
        KDL_CPU => (D::Cpu, M::Standard),
        KDL_CUDA => (D::Cuda, M::Standard),
        KDL_CUDA_HOST => (D::Cuda, M::HostPinned),
        KDL_CUDA_MANAGED => (D::Cuda, M::Unified),
        KDL_OPENCL => (D::OpenCl, M::Standard),
        KDL_VULKAN => (D::Vulkan, M::Standard),
        KDL_METAL => (D::Metal, M::Standard),
        KDL_VPI => (D::Vpi, M::Standard),
        KDL_ROCM => (D::Rocm, M::Standard),
        KDL_ROCM_HOST => (D::Rocm, M::HostPinned),
        KDL_EXT_DEV => (D::ExtDev, M::Standard),
        KDL_ONEAPI => (D::OneApi, M::Standard),
        KDL_WEBGPU => (D::WebGpu, M::Standard),
        KDL_HEXAGON => (D::Hexagon, M::Standard),
        KDL_MAIA => (D::Maia, M::Standard),
        KDL_TRN => (D::Trainium, M::Standard),
        _ => return Err(Error::UnknownInteropCode(code)),
    })
}

/// The Arrow C Device `ArrowDeviceType` of a (device tag, memory class) pair.
///
/// Arrow's codes equal DLPack's for every device Arrow defines (1–16).
///
/// # Errors
/// [`Error::NoInteropCode`] when Arrow has no code for the pair (including
/// MAIA and Trainium, which only DLPack defines).
pub const fn to_arrow(device_tag: DeviceTag, memory_class: MemoryClass) -> Result<i32> {
    match to_dlpack(device_tag, memory_class) {
        Ok(code) if code <= ARROW_MAX => Ok(code),
        _ => Err(Error::NoInteropCode {
            device_tag,
            memory_class,
        }),
    }
}

/// The (device tag, memory class) pair of an Arrow C Device `ArrowDeviceType`.
///
/// # Errors
/// [`Error::UnknownInteropCode`] for a code hurray does not map.
pub const fn from_arrow(code: i32) -> Result<(DeviceTag, MemoryClass)> {
    if code > ARROW_MAX {
        return Err(Error::UnknownInteropCode(code));
    }
    from_dlpack(code)
}
