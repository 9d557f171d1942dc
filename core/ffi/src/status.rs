//! Status codes, the codes of the wire format as C constants, and the mapping
//! from the core's errors ([`Error`], [`DescriptorError`], [`EncodeError`],
//! [`InteropError`]) to a status and its detail.

use core::ffi::CStr;

use hurray_core::interop::InteropError;
use hurray_core::layout::tag;
use hurray_core::{
    DescriptorError, DescriptorErrorKind, DeviceTag, EncodeError, Error, Flags, MemoryClass,
    SyncMode,
};

use crate::hurray_error;

/// Result of every function: `HURRAY_OK` (0) or a negative `HURRAY_E_*` code.
pub type hurray_status = i32;

/// Success.
pub const HURRAY_OK: hurray_status = 0;

// --- the C boundary ------------------------------------------------------------
/// A required pointer argument is null.
pub const HURRAY_E_NULL: hurray_status = -1;
/// A pointer is not aligned for its type.
pub const HURRAY_E_MISALIGNED_POINTER: hurray_status = -2;
/// The input ends before a field it must contain (a handle shorter than 16
/// bytes, a descriptor shorter than its fields or its `descriptor_length`).
/// `value`: bytes available; `expected`: bytes needed.
pub const HURRAY_E_TRUNCATED: hurray_status = -3;
/// An output buffer or array is too small. `value`: its capacity;
/// `expected`: what is needed.
pub const HURRAY_E_OUTPUT_TOO_SMALL: hurray_status = -4;
/// An index (axis, buffer, tile level) is past the end.
pub const HURRAY_E_INDEX_OUT_OF_RANGE: hurray_status = -5;
/// The optional section asked for is not in the descriptor.
pub const HURRAY_E_ABSENT: hurray_status = -6;
/// The field asked for belongs to another layout.
pub const HURRAY_E_WRONG_LAYOUT: hurray_status = -7;
/// The tensor has no element strides: its layout is not row-major,
/// column-major or strided, or its shape is dynamic or too large for `int64`
/// strides.
pub const HURRAY_E_NO_STRIDES: hurray_status = -8;
/// A view no longer describes a valid descriptor: its bytes or fields were
/// modified after the parse.
pub const HURRAY_E_INVALID_VIEW: hurray_status = -9;
/// Internal error: a panic was caught at the boundary (never expected).
pub const HURRAY_E_PANIC: hurray_status = -10;
/// An error this version of the C ABI has no code for.
pub const HURRAY_E_UNKNOWN: hurray_status = -11;

// --- buffer handles ---------------------------------------------------------------
/// An alignment is zero or not a power of two. `value`: the alignment.
pub const HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO: hurray_status = -12;
/// A non-empty buffer's alignment is below 64. `value`: the alignment;
/// `expected`: 64.
pub const HURRAY_E_ALIGNMENT_BELOW_MINIMUM: hurray_status = -13;
/// Unknown sync mode, or a CPU buffer that is not producer-synced.
/// `value`: the sync mode byte.
pub const HURRAY_E_INVALID_SYNC_MODE: hurray_status = -14;
/// A reserved (`0x09`-`0xEF`) or invalid (`0xFF`) device tag. `value`: the byte.
pub const HURRAY_E_INVALID_DEVICE_TAG: hurray_status = -15;
/// A reserved (`0x04`-`0xEF`) or invalid (`0xFF`) memory class. `value`: the byte.
pub const HURRAY_E_INVALID_MEMORY_CLASS: hurray_status = -16;
/// The memory class is not valid on the device (per-device validity).
/// `value`: the memory class; `expected`: the device tag.
pub const HURRAY_E_MEMORY_CLASS_NOT_ALLOWED: hurray_status = -17;
/// A reserved byte or field is not zero (byte 15 of a handle: `value` is
/// the byte; a descriptor's reserved field: `offset` locates it).
pub const HURRAY_E_RESERVED_NONZERO: hurray_status = -18;

// --- buffer tables ----------------------------------------------------------------
/// A buffer table's length is not a multiple of 16. `value`: the length.
pub const HURRAY_E_TABLE_LENGTH: hurray_status = -19;
/// A buffer's device tag or memory class differs from buffer 0's
/// (device colocation). `index`: the buffer.
pub const HURRAY_E_NOT_COLOCATED: hurray_status = -20;

// --- descriptor framing -----------------------------------------------------------
/// The descriptor does not start with "HRRY". `value`: its first four bytes
/// as a little-endian integer.
pub const HURRAY_E_BAD_MAGIC: hurray_status = -21;
/// The descriptor's major version is not 1. `value`: the major version;
/// `index`: the minor version.
pub const HURRAY_E_UNSUPPORTED_VERSION: hurray_status = -22;
/// `descriptor_length` is not the bytes the fields occupy. `value`: the
/// declared length; `expected`: the bytes the fields occupy.
pub const HURRAY_E_LENGTH_MISMATCH: hurray_status = -23;
/// Bytes follow the descriptor (use `hurray_tensor_parse_prefix` for a
/// stream). `value`: bytes given; `expected`: `descriptor_length`.
pub const HURRAY_E_TRAILING_BYTES: hurray_status = -24;
/// A reserved flag bit is set (descriptor flags, statistics mask or
/// quantization flags). `value`: the reserved bits.
pub const HURRAY_E_RESERVED_FLAGS: hurray_status = -25;

// --- codes -------------------------------------------------------------------------
/// The element type tag is reserved or invalid. `value`: the tag.
pub const HURRAY_E_INVALID_TYPE_TAG: hurray_status = -26;
/// The layout tag is reserved or invalid. `value`: the tag.
pub const HURRAY_E_INVALID_LAYOUT_TAG: hurray_status = -27;
/// An enumerated or bounded field holds a value the format does not define.
/// `value`: the value; `offset` locates the field.
pub const HURRAY_E_INVALID_VALUE: hurray_status = -28;

// --- shape and layout ---------------------------------------------------------------
/// `rank` exceeds 64. `value`: the rank; `expected`: 64.
pub const HURRAY_E_RANK_TOO_LARGE: hurray_status = -29;
/// The layout is not allowed at this rank. `value`: the rank; `index`: the
/// layout tag.
pub const HURRAY_E_RANK_NOT_ALLOWED: hurray_status = -30;
/// A dimension is dynamic where a size is required. `index`: the axis.
pub const HURRAY_E_DYNAMIC_DIMENSION: hurray_status = -31;
/// A tiled layout nests more than 8 levels. `expected`: 8.
pub const HURRAY_E_TILING_TOO_DEEP: hurray_status = -32;
/// The inside of a tile reaches outside it. `index`: the tile level.
pub const HURRAY_E_TILE_OVERRUN: hurray_status = -33;
/// A size computation overflows 64 bits.
pub const HURRAY_E_OVERFLOW: hurray_status = -34;
/// CSF `mode_order` is not a permutation. `value`: the first bad value.
pub const HURRAY_E_NOT_A_PERMUTATION: hurray_status = -35;
/// A Morton or Hilbert dimension does not fit the curve. `index`: the axis;
/// `value`: its size.
pub const HURRAY_E_SHAPE_DOES_NOT_FIT_CURVE: hurray_status = -36;
/// A private layout id the reader was not told about. `value`: the id.
pub const HURRAY_E_UNKNOWN_EXTENSION_LAYOUT: hurray_status = -37;

// --- buffers --------------------------------------------------------------------------
/// The buffer count is not what the layout and quantization need.
/// `value`: buffers declared; `expected`: buffers required.
pub const HURRAY_E_BUFFER_COUNT: hurray_status = -38;
/// A buffer is smaller than what the descriptor addresses in it.
/// `index`: the buffer; `value`: its size; `expected`: bytes needed.
pub const HURRAY_E_BUFFER_TOO_SMALL: hurray_status = -39;
/// A buffer holding a fixed-length array has another size. `index`: the
/// buffer; `value`: its size; `expected`: the size required.
pub const HURRAY_E_BUFFER_SIZE_MISMATCH: hurray_status = -40;
/// Strides reach bytes outside the data buffer. `value`: the first byte
/// position outside it (the start, as a two's-complement `int64`, when the
/// extent begins before the buffer; else the end); `expected`: the buffer's
/// size.
pub const HURRAY_E_EXTENT_OUT_OF_BOUNDS: hurray_status = -41;
/// `byte_offset` lies past the end of buffer 0. `value`: the offset;
/// `expected`: the buffer's size.
pub const HURRAY_E_BYTE_OFFSET_OUT_OF_RANGE: hurray_status = -42;
/// `byte_offset` is not a multiple of the element alignment. `value`: the
/// offset; `expected`: the alignment.
pub const HURRAY_E_BYTE_OFFSET_MISALIGNED: hurray_status = -43;
/// `byte_offset` must be 0 for this layout. `value`: the offset.
pub const HURRAY_E_BYTE_OFFSET_NOT_ZERO: hurray_status = -44;

// --- optional sections --------------------------------------------------------------
/// The extension type section is present without a private element type,
/// or missing with one. `value`: the type tag; `index`: 1 if the section is
/// present.
pub const HURRAY_E_EXTENSION_TYPE_MISMATCH: hurray_status = -45;
/// A section is not allowed with this layout. `value`: the layout tag;
/// `index`: the section's `HURRAY_FLAG_HAS_*` bit.
pub const HURRAY_E_SECTION_NOT_ALLOWED: hurray_status = -46;
/// A shard leaves its parent tensor. `index`: the axis.
pub const HURRAY_E_SHARD_OUT_OF_BOUNDS: hurray_status = -47;
/// The quantization scheme does not accept the storage type. `value`: the
/// type tag; `index`: the scheme tag.
pub const HURRAY_E_STORAGE_TYPE_NOT_ALLOWED: hurray_status = -48;
/// A quantization axis is not below the rank. `value`: the axis;
/// `expected`: the rank.
pub const HURRAY_E_AXIS_OUT_OF_RANGE: hurray_status = -49;
/// A quantization parameter buffer index is out of range or one of the
/// layout's own buffers. `value`: the index; `index`: the first index
/// allowed; `expected`: the buffer count.
pub const HURRAY_E_PARAMETER_BUFFER_INDEX: hurray_status = -50;
/// An inline quantization parameter is out of range (scale not finite or
/// zero, zero point outside the storage type).
pub const HURRAY_E_PARAMETER_OUT_OF_RANGE: hurray_status = -51;
/// A statistics value contradicts the descriptor or its range.
pub const HURRAY_E_STATISTICS_INCONSISTENT: hurray_status = -52;
/// A private quantization scheme or composition rule the reader was not
/// told to accept. `value`: the code.
pub const HURRAY_E_PRIVATE_CODE_REFUSED: hurray_status = -53;

// --- encoders ------------------------------------------------------------------------
/// An array given to an encoder has the wrong length, or too many entries.
/// `value`: its length; `expected`: the length required.
pub const HURRAY_E_ARRAY_LENGTH: hurray_status = -54;
/// The encoder cannot write this (e.g. more than 255 buffers). `expected`:
/// the capacity.
pub const HURRAY_E_CAPACITY_EXCEEDED: hurray_status = -55;

// --- DLPack / Arrow ----------------------------------------------------------------------
/// The value has no DLPack/Arrow counterpart (a private device or memory
/// class, or an element type DLPack cannot describe). `value`: the code.
pub const HURRAY_E_NO_INTEROP_CODE: hurray_status = -56;
/// A DLPack/Arrow device code or data type hurray does not map. `value`:
/// the code.
pub const HURRAY_E_UNKNOWN_INTEROP_CODE: hurray_status = -57;

// --- files and streams -----------------------------------------------------------------
/// The file breaks a rule of the file format. `value`: the absolute byte
/// offset of the field at fault (`offset`: the same, saturated to 32 bits).
pub const HURRAY_E_INVALID_FILE: hurray_status = -58;
/// The stream breaks a rule of the stream format. `value`: the stream's byte
/// offset of the field at fault (`offset`: saturated); `index`: the tensor
/// (from 0, composite heads and members counted).
pub const HURRAY_E_INVALID_STREAM: hurray_status = -59;
/// The file has no tensor of that name.
pub const HURRAY_E_NOT_FOUND: hurray_status = -60;
/// A writer refused what it was given (buffers that do not match the
/// table, a composite rule, a bad or duplicate name, more tensors than
/// slots, KV without `has_kv`); nothing was written.
pub const HURRAY_E_WRITER_MISUSE: hurray_status = -61;
/// The encoder has no bytes for what the spec describes: tile levels whose
/// layouts and nesting disagree (every level but the last must be
/// `HURRAY_LAYOUT_TILED` inside, the last must not), or a private layout or
/// quantization scheme under a public tag. Nothing was written.
pub const HURRAY_E_UNSUPPORTED: hurray_status = -62;

/// The most negative status this ABI version returns: every status is in
/// `HURRAY_STATUS_MIN ..= HURRAY_OK`.
pub const HURRAY_STATUS_MIN: hurray_status = -62;

// --- wire codes ----------------------------------------------------------------------------
/// Device tag: host memory.
pub const HURRAY_DEVICE_CPU: u8 = 0x00;
/// Device tag: NVIDIA CUDA.
pub const HURRAY_DEVICE_CUDA: u8 = 0x01;
/// Device tag: AMD ROCm / HIP.
pub const HURRAY_DEVICE_ROCM: u8 = 0x02;
/// Device tag: Apple Metal.
pub const HURRAY_DEVICE_METAL: u8 = 0x03;
/// Device tag: Vulkan.
pub const HURRAY_DEVICE_VULKAN: u8 = 0x04;
/// Device tag: WebGPU.
pub const HURRAY_DEVICE_WEBGPU: u8 = 0x05;
/// Device tag: Qualcomm Hexagon.
pub const HURRAY_DEVICE_HEXAGON: u8 = 0x06;
/// Device tag: Intel Level Zero / oneAPI.
pub const HURRAY_DEVICE_LEVEL_ZERO: u8 = 0x07;
/// Device tag: OpenCL.
pub const HURRAY_DEVICE_OPENCL: u8 = 0x08;
/// First implementation-private code of every code space (device tag,
/// memory class, element type, layout, quantization scheme, composition rule).
pub const HURRAY_PRIVATE_FIRST: u8 = 0xF0;
/// Last implementation-private code of every code space.
pub const HURRAY_PRIVATE_LAST: u8 = 0xFE;

/// Sync mode: the producer finished before publishing.
pub const HURRAY_SYNC_PRODUCER_SYNCED: u8 = 0;
/// Sync mode: wait on the producer's event.
pub const HURRAY_SYNC_EVENT: u8 = 1;
/// Sync mode: ordered on the consumer's stream.
pub const HURRAY_SYNC_CONSUMER_STREAM: u8 = 2;

/// Memory class: memory of the tagged device.
pub const HURRAY_MEMORY_STANDARD: u8 = 0;
/// Memory class: pinned host memory mapped for the device.
pub const HURRAY_MEMORY_HOST_PINNED: u8 = 1;
/// Memory class: unified / managed memory.
pub const HURRAY_MEMORY_UNIFIED: u8 = 2;
/// Memory class: peer-to-peer device memory.
pub const HURRAY_MEMORY_PEER_TO_PEER: u8 = 3;

/// Minimum alignment of a non-empty buffer.
pub const HURRAY_MIN_BUFFER_ALIGNMENT: u32 = 64;
/// The largest rank a descriptor may declare.
pub const HURRAY_MAX_RANK: u32 = 64;
/// The deepest tiled nesting a reader accepts.
pub const HURRAY_MAX_TILE_LEVELS: u32 = 8;
/// The dynamic-dimension sentinel of a shape.
pub const HURRAY_DYNAMIC: u64 = u64::MAX;
/// Length of the fixed descriptor header.
pub const HURRAY_HEADER_LEN: u32 = 20;
/// Descriptor major version this library reads and writes.
pub const HURRAY_VERSION_MAJOR: u8 = 1;
/// Descriptor minor version this library writes.
pub const HURRAY_VERSION_MINOR: u8 = 0;

/// Descriptor flag: a quantization section follows.
pub const HURRAY_FLAG_HAS_QUANTIZATION: u32 = 1 << 0;
/// Descriptor flag: a shard section follows.
pub const HURRAY_FLAG_HAS_SHARD: u32 = 1 << 1;
/// Descriptor flag: an extension type section follows.
pub const HURRAY_FLAG_HAS_EXTENSION_TYPE: u32 = 1 << 2;
/// Descriptor flag: a statistics section follows.
pub const HURRAY_FLAG_HAS_STATISTICS: u32 = 1 << 3;
/// Descriptor flag: a composite member section follows.
pub const HURRAY_FLAG_HAS_COMPOSITE_MEMBER: u32 = 1 << 4;

/// Layout tag: row-major.
pub const HURRAY_LAYOUT_ROW_MAJOR: u8 = 0x01;
/// Layout tag: column-major.
pub const HURRAY_LAYOUT_COLUMN_MAJOR: u8 = 0x02;
/// Layout tag: explicit strides.
pub const HURRAY_LAYOUT_STRIDED: u8 = 0x03;
/// Layout tag: tiled (also an inner layout code: a nested level follows).
pub const HURRAY_LAYOUT_TILED: u8 = 0x04;
/// Layout tag: Morton (Z-order) curve.
pub const HURRAY_LAYOUT_MORTON: u8 = 0x05;
/// Layout tag: coordinate-list sparse.
pub const HURRAY_LAYOUT_COO: u8 = 0x06;
/// Layout tag: compressed sparse row.
pub const HURRAY_LAYOUT_CSR: u8 = 0x07;
/// Layout tag: compressed sparse column.
pub const HURRAY_LAYOUT_CSC: u8 = 0x08;
/// Layout tag: compressed sparse fiber.
pub const HURRAY_LAYOUT_CSF: u8 = 0x09;
/// Layout tag: block-paged (paged KV cache).
pub const HURRAY_LAYOUT_BLOCK_PAGED: u8 = 0x0A;
/// Layout tag: composite head.
pub const HURRAY_LAYOUT_COMPOSITE: u8 = 0x0B;
/// Layout tag: Hilbert curve.
pub const HURRAY_LAYOUT_HILBERT: u8 = 0x40;

/// Element type: IEEE binary16.
pub const HURRAY_TYPE_FLOAT16: u8 = 0x01;
/// Element type: bfloat16.
pub const HURRAY_TYPE_BFLOAT16: u8 = 0x02;
/// Element type: IEEE binary32.
pub const HURRAY_TYPE_FLOAT32: u8 = 0x03;
/// Element type: IEEE binary64.
pub const HURRAY_TYPE_FLOAT64: u8 = 0x04;
/// Element type: int8.
pub const HURRAY_TYPE_INT8: u8 = 0x10;
/// Element type: uint8.
pub const HURRAY_TYPE_UINT8: u8 = 0x11;
/// Element type: int16.
pub const HURRAY_TYPE_INT16: u8 = 0x12;
/// Element type: uint16.
pub const HURRAY_TYPE_UINT16: u8 = 0x13;
/// Element type: int32.
pub const HURRAY_TYPE_INT32: u8 = 0x14;
/// Element type: uint32.
pub const HURRAY_TYPE_UINT32: u8 = 0x15;
/// Element type: int64.
pub const HURRAY_TYPE_INT64: u8 = 0x16;
/// Element type: uint64.
pub const HURRAY_TYPE_UINT64: u8 = 0x17;
/// Element type: bool, one bit, packed LSB first.
pub const HURRAY_TYPE_BOOL: u8 = 0x20;
/// Element type: OCP FP8 E4M3.
pub const HURRAY_TYPE_FLOAT8_E4M3: u8 = 0x40;
/// Element type: OCP FP8 E5M2.
pub const HURRAY_TYPE_FLOAT8_E5M2: u8 = 0x41;
/// Element type: E8M0 scale.
pub const HURRAY_TYPE_FLOAT8_E8M0: u8 = 0x42;
/// Element type: OCP MX FP4 E2M1, two per byte.
pub const HURRAY_TYPE_FLOAT4_E2M1: u8 = 0x43;
/// Element type: OCP MX FP6 E2M3, four per three bytes.
pub const HURRAY_TYPE_FLOAT6_E2M3: u8 = 0x44;
/// Element type: OCP MX FP6 E3M2, four per three bytes.
pub const HURRAY_TYPE_FLOAT6_E3M2: u8 = 0x45;
/// Element type: IEEE binary128.
pub const HURRAY_TYPE_FLOAT128: u8 = 0x46;
/// Element type: int4, two per byte.
pub const HURRAY_TYPE_INT4: u8 = 0x48;
/// Element type: uint4, two per byte.
pub const HURRAY_TYPE_UINT4: u8 = 0x49;
/// Element type: int2, four per byte.
pub const HURRAY_TYPE_INT2: u8 = 0x4A;
/// Element type: uint2, four per byte.
pub const HURRAY_TYPE_UINT2: u8 = 0x4B;
/// Element type: complex64 (two binary32).
pub const HURRAY_TYPE_COMPLEX64: u8 = 0x50;
/// Element type: complex128 (two binary64).
pub const HURRAY_TYPE_COMPLEX128: u8 = 0x51;

/// Quantization scheme: per-tensor affine.
pub const HURRAY_SCHEME_PER_TENSOR: u8 = 0x01;
/// Quantization scheme: per-channel affine.
pub const HURRAY_SCHEME_PER_CHANNEL: u8 = 0x02;
/// Quantization scheme: per-block affine.
pub const HURRAY_SCHEME_PER_BLOCK: u8 = 0x03;
/// Quantization scheme: NormalFloat4.
pub const HURRAY_SCHEME_NF4: u8 = 0x04;
/// Quantization scheme: OCP microscaling.
pub const HURRAY_SCHEME_MXFP: u8 = 0x05;
/// Quantization: the zero-point buffer index of a symmetric scheme (no
/// zero points); also "no such buffer".
pub const HURRAY_NO_BUFFER: u32 = u32::MAX;

/// Statistics mask bit: `nnz` is valid.
pub const HURRAY_STAT_NNZ: u32 = 1 << 0;
/// Statistics mask bit: `sparsity_ratio` is valid.
pub const HURRAY_STAT_SPARSITY: u32 = 1 << 1;
/// Statistics mask bit: `value_min`, `value_max`, `value_abs_max` are valid.
pub const HURRAY_STAT_RANGE: u32 = 1 << 2;
/// Statistics mask bit: `value_mean`, `value_stddev` are valid.
pub const HURRAY_STAT_MOMENTS: u32 = 1 << 3;
/// Statistics mask bit: `nm_n`, `nm_m` are valid.
pub const HURRAY_STAT_NM: u32 = 1 << 4;
/// Statistics mask bit: `has_nan`, `has_inf` are valid.
pub const HURRAY_STAT_NAN_INF: u32 = 1 << 5;

/// Block-paged `layer_index` of a tensor that is not layer-scoped.
pub const HURRAY_NO_LAYER: u32 = u32::MAX;
/// Composite member role: a correction.
pub const HURRAY_MEMBER_CORRECTION: u8 = 0;
/// Composite member role: the base.
pub const HURRAY_MEMBER_BASE: u8 = 1;
/// Composite member role: no composite member section.
pub const HURRAY_MEMBER_NONE: u8 = 0xFF;

// Every C constant equals the core's code (the build fails otherwise).
const _: () = {
    let devices = [
        (HURRAY_DEVICE_CPU, DeviceTag::Cpu),
        (HURRAY_DEVICE_CUDA, DeviceTag::Cuda),
        (HURRAY_DEVICE_ROCM, DeviceTag::Rocm),
        (HURRAY_DEVICE_METAL, DeviceTag::Metal),
        (HURRAY_DEVICE_VULKAN, DeviceTag::Vulkan),
        (HURRAY_DEVICE_WEBGPU, DeviceTag::WebGpu),
        (HURRAY_DEVICE_HEXAGON, DeviceTag::Hexagon),
        (HURRAY_DEVICE_LEVEL_ZERO, DeviceTag::LevelZero),
        (HURRAY_DEVICE_OPENCL, DeviceTag::OpenCl),
    ];
    assert!(devices.len() == DeviceTag::NAMED.len());
    let mut i = 0;
    while i < devices.len() {
        assert!(devices[i].0 == devices[i].1.code());
        i += 1;
    }
    assert!(HURRAY_PRIVATE_FIRST == hurray_core::PRIVATE_FIRST);
    assert!(HURRAY_PRIVATE_LAST == hurray_core::PRIVATE_LAST);
    assert!(HURRAY_SYNC_PRODUCER_SYNCED == SyncMode::ProducerSynced.code());
    assert!(HURRAY_SYNC_EVENT == SyncMode::Event.code());
    assert!(HURRAY_SYNC_CONSUMER_STREAM == SyncMode::ConsumerStream.code());
    assert!(SyncMode::ALL.len() == 3);
    assert!(HURRAY_MEMORY_STANDARD == MemoryClass::Standard.code());
    assert!(HURRAY_MEMORY_HOST_PINNED == MemoryClass::HostPinned.code());
    assert!(HURRAY_MEMORY_UNIFIED == MemoryClass::Unified.code());
    assert!(HURRAY_MEMORY_PEER_TO_PEER == MemoryClass::PeerToPeer.code());
    assert!(MemoryClass::NAMED.len() == 4);
    assert!(HURRAY_MIN_BUFFER_ALIGNMENT == hurray_core::MIN_BUFFER_ALIGNMENT);
    assert!(HURRAY_MAX_RANK == hurray_core::MAX_RANK);
    assert!(HURRAY_MAX_TILE_LEVELS == hurray_core::layout::MAX_TILE_LEVELS as u32);
    assert!(HURRAY_DYNAMIC == hurray_core::DYNAMIC);
    assert!(HURRAY_HEADER_LEN as usize == hurray_core::HEADER_LEN);
    assert!(HURRAY_VERSION_MAJOR == hurray_core::VERSION_MAJOR);
    assert!(HURRAY_VERSION_MINOR == hurray_core::VERSION_MINOR);
    assert!(HURRAY_NO_BUFFER == hurray_core::NO_BUFFER);
    assert!(HURRAY_FLAG_HAS_QUANTIZATION == Flags::HAS_QUANTIZATION.bits());
    assert!(HURRAY_FLAG_HAS_SHARD == Flags::HAS_SHARD.bits());
    assert!(HURRAY_FLAG_HAS_EXTENSION_TYPE == Flags::HAS_EXTENSION_TYPE.bits());
    assert!(HURRAY_FLAG_HAS_STATISTICS == Flags::HAS_STATISTICS.bits());
    assert!(HURRAY_FLAG_HAS_COMPOSITE_MEMBER == Flags::HAS_COMPOSITE_MEMBER.bits());
    assert!(Flags::DEFINED == 0b1_1111);
    let layouts = [
        (HURRAY_LAYOUT_ROW_MAJOR, tag::ROW_MAJOR),
        (HURRAY_LAYOUT_COLUMN_MAJOR, tag::COLUMN_MAJOR),
        (HURRAY_LAYOUT_STRIDED, tag::STRIDED),
        (HURRAY_LAYOUT_TILED, tag::TILED),
        (HURRAY_LAYOUT_MORTON, tag::MORTON),
        (HURRAY_LAYOUT_COO, tag::COO),
        (HURRAY_LAYOUT_CSR, tag::CSR),
        (HURRAY_LAYOUT_CSC, tag::CSC),
        (HURRAY_LAYOUT_CSF, tag::CSF),
        (HURRAY_LAYOUT_BLOCK_PAGED, tag::BLOCK_PAGED),
        (HURRAY_LAYOUT_COMPOSITE, tag::COMPOSITE),
        (HURRAY_LAYOUT_HILBERT, tag::HILBERT),
    ];
    let mut l = 0;
    while l < layouts.len() {
        assert!(layouts[l].0 == layouts[l].1);
        l += 1;
    }
    let types = [
        HURRAY_TYPE_FLOAT16,
        HURRAY_TYPE_BFLOAT16,
        HURRAY_TYPE_FLOAT32,
        HURRAY_TYPE_FLOAT64,
        HURRAY_TYPE_INT8,
        HURRAY_TYPE_UINT8,
        HURRAY_TYPE_INT16,
        HURRAY_TYPE_UINT16,
        HURRAY_TYPE_INT32,
        HURRAY_TYPE_UINT32,
        HURRAY_TYPE_INT64,
        HURRAY_TYPE_UINT64,
        HURRAY_TYPE_BOOL,
        HURRAY_TYPE_FLOAT8_E4M3,
        HURRAY_TYPE_FLOAT8_E5M2,
        HURRAY_TYPE_FLOAT8_E8M0,
        HURRAY_TYPE_FLOAT4_E2M1,
        HURRAY_TYPE_FLOAT6_E2M3,
        HURRAY_TYPE_FLOAT6_E3M2,
        HURRAY_TYPE_FLOAT128,
        HURRAY_TYPE_INT4,
        HURRAY_TYPE_UINT4,
        HURRAY_TYPE_INT2,
        HURRAY_TYPE_UINT2,
        HURRAY_TYPE_COMPLEX64,
        HURRAY_TYPE_COMPLEX128,
    ];
    let built_in = hurray_core::ElementType::BUILT_IN;
    assert!(types.len() == built_in.len());
    let mut t = 0;
    while t < types.len() {
        assert!(types[t] == built_in[t].code());
        t += 1;
    }
};

/// A detail with only a status and a value.
const fn entry(status: hurray_status, value: u64) -> hurray_error {
    hurray_error {
        status,
        offset: 0,
        index: 0,
        value,
        expected: 0,
    }
}

/// The same detail with `expected` set.
const fn with_expected(mut e: hurray_error, expected: u64) -> hurray_error {
    e.expected = expected;
    e
}

/// The same detail with `index` set.
const fn with_index(mut e: hurray_error, index: u64) -> hurray_error {
    e.index = index;
    e
}

/// The status and detail of a buffer-handle error.
pub(crate) const fn describe(e: Error) -> hurray_error {
    match e {
        Error::AlignmentNotPowerOfTwo { alignment } => {
            entry(HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO, alignment as u64)
        }
        Error::AlignmentBelowMinimum { alignment, minimum } => with_expected(
            entry(HURRAY_E_ALIGNMENT_BELOW_MINIMUM, alignment as u64),
            minimum as u64,
        ),
        Error::InvalidSyncMode(c) => entry(HURRAY_E_INVALID_SYNC_MODE, c as u64),
        Error::InvalidDeviceTag(c) => entry(HURRAY_E_INVALID_DEVICE_TAG, c as u64),
        Error::InvalidMemoryClass(c) => entry(HURRAY_E_INVALID_MEMORY_CLASS, c as u64),
        Error::MemoryClassNotAllowed {
            device_tag,
            memory_class,
        } => with_expected(
            entry(
                HURRAY_E_MEMORY_CLASS_NOT_ALLOWED,
                memory_class.code() as u64,
            ),
            device_tag.code() as u64,
        ),
        Error::ReservedNonZero(c) => entry(HURRAY_E_RESERVED_NONZERO, c as u64),
        _ => entry(HURRAY_E_UNKNOWN, 0),
    }
}

/// The status and detail of a descriptor or table error.
pub(crate) fn describe_descriptor(e: DescriptorError) -> hurray_error {
    use DescriptorErrorKind as K;
    let mut d = match e.kind() {
        K::Truncated { needed, available } => {
            with_expected(entry(HURRAY_E_TRUNCATED, available), needed)
        }
        K::BadMagic(m) => with_expected(
            entry(HURRAY_E_BAD_MAGIC, u32::from_le_bytes(m).into()),
            u32::from_le_bytes(hurray_core::DESCRIPTOR_MAGIC).into(),
        ),
        K::UnsupportedVersion { major, minor } => with_expected(
            with_index(
                entry(HURRAY_E_UNSUPPORTED_VERSION, major.into()),
                minor.into(),
            ),
            hurray_core::VERSION_MAJOR.into(),
        ),
        K::LengthMismatch { declared, consumed } => with_expected(
            entry(HURRAY_E_LENGTH_MISMATCH, declared.into()),
            consumed.into(),
        ),
        K::TrailingBytes {
            declared,
            available,
        } => with_expected(entry(HURRAY_E_TRAILING_BYTES, available), declared.into()),
        K::ReservedFlags(bits) => entry(HURRAY_E_RESERVED_FLAGS, bits.into()),
        K::InvalidTypeTag(c) => entry(HURRAY_E_INVALID_TYPE_TAG, c.into()),
        K::InvalidLayoutTag(c) => entry(HURRAY_E_INVALID_LAYOUT_TAG, c.into()),
        K::InvalidValue { value, .. } => entry(HURRAY_E_INVALID_VALUE, value),
        K::ReservedNonZero { .. } => entry(HURRAY_E_RESERVED_NONZERO, 0),
        K::RankTooLarge(r) => with_expected(
            entry(HURRAY_E_RANK_TOO_LARGE, r.into()),
            hurray_core::MAX_RANK.into(),
        ),
        K::RankNotAllowed { layout_tag, rank } => with_index(
            entry(HURRAY_E_RANK_NOT_ALLOWED, rank.into()),
            layout_tag.into(),
        ),
        K::DynamicDimension { axis, .. } => with_index(
            entry(HURRAY_E_DYNAMIC_DIMENSION, hurray_core::DYNAMIC),
            axis.into(),
        ),
        K::TilingTooDeep => with_expected(
            entry(HURRAY_E_TILING_TOO_DEEP, 0),
            HURRAY_MAX_TILE_LEVELS.into(),
        ),
        K::TileOverrun { level } => with_index(entry(HURRAY_E_TILE_OVERRUN, 0), level.into()),
        K::Overflow { .. } => entry(HURRAY_E_OVERFLOW, 0),
        K::NotAPermutation { value } => entry(HURRAY_E_NOT_A_PERMUTATION, value.into()),
        K::ShapeDoesNotFitCurve { axis, size } => {
            with_index(entry(HURRAY_E_SHAPE_DOES_NOT_FIT_CURVE, size), axis.into())
        }
        K::UnknownExtensionLayout(id) => entry(HURRAY_E_UNKNOWN_EXTENSION_LAYOUT, id),
        K::TableLength { len } => with_expected(entry(HURRAY_E_TABLE_LENGTH, len), 16),
        K::Buffer { index, error } => with_index(describe(error), index.into()),
        K::NotColocated { index } => with_index(entry(HURRAY_E_NOT_COLOCATED, 0), index.into()),
        K::BufferCount { expected, found } => {
            with_expected(entry(HURRAY_E_BUFFER_COUNT, found.into()), expected.into())
        }
        K::BufferTooSmall {
            index,
            needed,
            byte_size,
        } => with_index(
            with_expected(entry(HURRAY_E_BUFFER_TOO_SMALL, byte_size), needed),
            index.into(),
        ),
        K::BufferSizeMismatch {
            index,
            expected,
            byte_size,
        } => with_index(
            with_expected(entry(HURRAY_E_BUFFER_SIZE_MISMATCH, byte_size), expected),
            index.into(),
        ),
        K::ExtentOutOfBounds {
            start,
            end,
            byte_size,
        } => {
            // The first position outside the buffer: a negative start (as
            // two's-complement int64), else the end.
            let value = if start < 0 {
                start.cast_unsigned()
            } else {
                end.cast_unsigned()
            };
            with_expected(entry(HURRAY_E_EXTENT_OUT_OF_BOUNDS, value), byte_size)
        }
        K::ByteOffsetOutOfRange {
            byte_offset,
            byte_size,
        } => with_expected(
            entry(HURRAY_E_BYTE_OFFSET_OUT_OF_RANGE, byte_offset),
            byte_size,
        ),
        K::ByteOffsetMisaligned {
            byte_offset,
            alignment,
        } => with_expected(
            entry(HURRAY_E_BYTE_OFFSET_MISALIGNED, byte_offset),
            alignment.into(),
        ),
        K::ByteOffsetNotZero(o) => entry(HURRAY_E_BYTE_OFFSET_NOT_ZERO, o),
        K::ExtensionTypeMismatch { type_tag, present } => with_index(
            entry(HURRAY_E_EXTENSION_TYPE_MISMATCH, type_tag.into()),
            present.into(),
        ),
        K::SectionNotAllowed {
            section,
            layout_tag,
        } => with_index(
            entry(HURRAY_E_SECTION_NOT_ALLOWED, layout_tag.into()),
            section.bits().into(),
        ),
        K::ShardOutOfBounds { axis } => {
            with_index(entry(HURRAY_E_SHARD_OUT_OF_BOUNDS, 0), axis.into())
        }
        K::StorageTypeNotAllowed { scheme, type_tag } => with_index(
            entry(HURRAY_E_STORAGE_TYPE_NOT_ALLOWED, type_tag.into()),
            scheme.into(),
        ),
        K::AxisOutOfRange { axis, rank } => {
            with_expected(entry(HURRAY_E_AXIS_OUT_OF_RANGE, axis.into()), rank.into())
        }
        K::ParameterBufferIndex {
            index,
            first,
            count,
        } => with_index(
            with_expected(
                entry(HURRAY_E_PARAMETER_BUFFER_INDEX, index.into()),
                count.into(),
            ),
            first.into(),
        ),
        K::ParameterOutOfRange { .. } => entry(HURRAY_E_PARAMETER_OUT_OF_RANGE, 0),
        K::StatisticsInconsistent { .. } => entry(HURRAY_E_STATISTICS_INCONSISTENT, 0),
        K::PrivateCodeRefused { code, .. } => entry(HURRAY_E_PRIVATE_CODE_REFUSED, code.into()),
        _ => entry(HURRAY_E_UNKNOWN, 0),
    };
    d.offset = e.offset();
    d
}

/// The status and detail of an encoder error.
pub(crate) fn describe_encode(e: EncodeError) -> hurray_error {
    match e {
        EncodeError::OutputTooSmall { needed, available } => {
            with_expected(entry(HURRAY_E_OUTPUT_TOO_SMALL, available), needed)
        }
        EncodeError::CapacityExceeded { capacity, .. } => {
            with_expected(entry(HURRAY_E_CAPACITY_EXCEEDED, 0), capacity.into())
        }
        EncodeError::LengthMismatch { len, expected, .. } => {
            with_expected(entry(HURRAY_E_ARRAY_LENGTH, len.into()), expected.into())
        }
        EncodeError::Invalid(d) => describe_descriptor(d),
        EncodeError::Unsupported { .. } => entry(HURRAY_E_UNSUPPORTED, 0),
        _ => entry(HURRAY_E_UNKNOWN, 0),
    }
}

/// The status and detail of an interop error.
pub(crate) fn describe_interop(e: InteropError) -> hurray_error {
    match e {
        InteropError::NoDeviceCode {
            device_tag,
            memory_class,
        } => with_expected(
            entry(HURRAY_E_NO_INTEROP_CODE, device_tag.code().into()),
            memory_class.code().into(),
        ),
        InteropError::NoDataType(t) => entry(HURRAY_E_NO_INTEROP_CODE, t.code().into()),
        InteropError::UnknownDeviceCode(c) => {
            entry(HURRAY_E_UNKNOWN_INTEROP_CODE, i64::from(c).cast_unsigned())
        }
        InteropError::UnknownDataType { code, .. } => {
            entry(HURRAY_E_UNKNOWN_INTEROP_CODE, code.into())
        }
        _ => entry(HURRAY_E_UNKNOWN, 0),
    }
}

/// The message of a status code.
pub(crate) const fn message(status: hurray_status) -> &'static CStr {
    match status {
        HURRAY_OK => c"ok",
        HURRAY_E_NULL => c"a required pointer is null",
        HURRAY_E_MISALIGNED_POINTER => c"pointer is not aligned for its type",
        HURRAY_E_TRUNCATED => c"input ends before a field it must contain",
        HURRAY_E_OUTPUT_TOO_SMALL => c"output buffer or array is too small",
        HURRAY_E_INDEX_OUT_OF_RANGE => c"index out of range",
        HURRAY_E_ABSENT => c"the optional section is not in the descriptor",
        HURRAY_E_WRONG_LAYOUT => c"the field belongs to another layout",
        HURRAY_E_NO_STRIDES => c"the tensor has no element strides",
        HURRAY_E_INVALID_VIEW => c"the view was modified after the parse",
        HURRAY_E_PANIC => c"internal error: panic caught at the C boundary",
        HURRAY_E_UNKNOWN => c"error without a C code in this ABI version",
        HURRAY_E_ALIGNMENT_NOT_POWER_OF_TWO => c"alignment is not a power of two",
        HURRAY_E_ALIGNMENT_BELOW_MINIMUM => c"alignment of a non-empty buffer is below 64",
        HURRAY_E_INVALID_SYNC_MODE => c"sync mode is unknown or not allowed for this device",
        HURRAY_E_INVALID_DEVICE_TAG => c"device tag is reserved or invalid",
        HURRAY_E_INVALID_MEMORY_CLASS => c"memory class is reserved or invalid",
        HURRAY_E_MEMORY_CLASS_NOT_ALLOWED => c"memory class is not valid on this device",
        HURRAY_E_RESERVED_NONZERO => c"reserved byte or field is not zero",
        HURRAY_E_TABLE_LENGTH => c"buffer table length is not a multiple of 16",
        HURRAY_E_NOT_COLOCATED => c"buffers differ in device tag or memory class",
        HURRAY_E_BAD_MAGIC => c"descriptor magic is not HRRY",
        HURRAY_E_UNSUPPORTED_VERSION => c"descriptor major version is not supported",
        HURRAY_E_LENGTH_MISMATCH => c"descriptor_length differs from the bytes its fields occupy",
        HURRAY_E_TRAILING_BYTES => c"bytes follow the descriptor",
        HURRAY_E_RESERVED_FLAGS => c"reserved flag bits are set",
        HURRAY_E_INVALID_TYPE_TAG => c"element type tag is reserved or invalid",
        HURRAY_E_INVALID_LAYOUT_TAG => c"layout tag is reserved or invalid",
        HURRAY_E_INVALID_VALUE => c"a field holds a value the format does not define",
        HURRAY_E_RANK_TOO_LARGE => c"rank exceeds 64",
        HURRAY_E_RANK_NOT_ALLOWED => c"layout is not allowed at this rank",
        HURRAY_E_DYNAMIC_DIMENSION => c"a dimension is dynamic where a size is required",
        HURRAY_E_TILING_TOO_DEEP => c"tiled layout nests more than 8 levels",
        HURRAY_E_TILE_OVERRUN => c"the inside of a tile reaches outside it",
        HURRAY_E_OVERFLOW => c"a size computation overflows",
        HURRAY_E_NOT_A_PERMUTATION => c"CSF mode_order is not a permutation",
        HURRAY_E_SHAPE_DOES_NOT_FIT_CURVE => c"a dimension does not fit the space-filling curve",
        HURRAY_E_UNKNOWN_EXTENSION_LAYOUT => c"private layout id is not recognised",
        HURRAY_E_BUFFER_COUNT => c"buffer count is not what the layout needs",
        HURRAY_E_BUFFER_TOO_SMALL => c"a buffer is smaller than what the descriptor addresses",
        HURRAY_E_BUFFER_SIZE_MISMATCH => c"a buffer's size is not the size its array requires",
        HURRAY_E_EXTENT_OUT_OF_BOUNDS => c"tensor elements lie outside the data buffer",
        HURRAY_E_BYTE_OFFSET_OUT_OF_RANGE => c"byte_offset is past the end of buffer 0",
        HURRAY_E_BYTE_OFFSET_MISALIGNED => {
            c"byte_offset is not a multiple of the element alignment"
        }
        HURRAY_E_BYTE_OFFSET_NOT_ZERO => c"byte_offset must be 0 for this layout",
        HURRAY_E_EXTENSION_TYPE_MISMATCH => {
            c"extension type section and private element type disagree"
        }
        HURRAY_E_SECTION_NOT_ALLOWED => c"section is not allowed with this layout",
        HURRAY_E_SHARD_OUT_OF_BOUNDS => c"shard leaves its parent tensor",
        HURRAY_E_STORAGE_TYPE_NOT_ALLOWED => {
            c"quantization scheme does not accept the storage type"
        }
        HURRAY_E_AXIS_OUT_OF_RANGE => c"quantization axis is not below the rank",
        HURRAY_E_PARAMETER_BUFFER_INDEX => c"quantization parameter buffer index is invalid",
        HURRAY_E_PARAMETER_OUT_OF_RANGE => c"quantization parameter is out of range",
        HURRAY_E_STATISTICS_INCONSISTENT => c"statistics contradict the descriptor",
        HURRAY_E_PRIVATE_CODE_REFUSED => c"private code not agreed with this reader",
        HURRAY_E_ARRAY_LENGTH => c"an array has the wrong length",
        HURRAY_E_CAPACITY_EXCEEDED => c"more entries than the encoder can write",
        HURRAY_E_NO_INTEROP_CODE => c"no DLPack/Arrow code for this value",
        HURRAY_E_UNKNOWN_INTEROP_CODE => c"DLPack/Arrow code is not mapped",
        HURRAY_E_INVALID_FILE => c"the file breaks a rule of the file format",
        HURRAY_E_INVALID_STREAM => c"the stream breaks a rule of the stream format",
        HURRAY_E_NOT_FOUND => c"no tensor of that name",
        HURRAY_E_WRITER_MISUSE => c"the writer refused the tensor or the KV entry",
        HURRAY_E_UNSUPPORTED => c"the encoder has no bytes for what the spec describes",
        _ => c"unknown status code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hurray_core::{ElementType, FieldName, Flags, Quantity};

    /// Every kind the core can report has its own status (never
    /// `HURRAY_E_UNKNOWN`), a message, and the error's offset.
    #[test]
    fn every_descriptor_error_kind_has_its_own_status() {
        use DescriptorErrorKind as K;
        let handle = Error::InvalidSyncMode(7);
        let kinds = [
            K::Truncated {
                needed: 20,
                available: 3,
            },
            K::BadMagic(*b"HRAY"),
            K::UnsupportedVersion { major: 2, minor: 0 },
            K::LengthMismatch {
                declared: 1,
                consumed: 2,
            },
            K::TrailingBytes {
                declared: 1,
                available: 2,
            },
            K::ReservedFlags(1 << 9),
            K::InvalidTypeTag(0x47),
            K::InvalidLayoutTag(0x0C),
            K::InvalidValue {
                field: FieldName::KvRole,
                value: 9,
            },
            K::ReservedNonZero {
                field: FieldName::CooReserved,
            },
            K::RankTooLarge(65),
            K::RankNotAllowed {
                layout_tag: 7,
                rank: 3,
            },
            K::DynamicDimension {
                field: FieldName::Shape,
                axis: 1,
            },
            K::TilingTooDeep,
            K::TileOverrun { level: 1 },
            K::Overflow {
                what: Quantity::ElementCount,
            },
            K::NotAPermutation { value: 0 },
            K::ShapeDoesNotFitCurve { axis: 0, size: 5 },
            K::UnknownExtensionLayout(9),
            K::TableLength { len: 17 },
            K::NotColocated { index: 2 },
            K::BufferCount {
                expected: 3,
                found: 2,
            },
            K::BufferTooSmall {
                index: 0,
                needed: 8,
                byte_size: 4,
            },
            K::BufferSizeMismatch {
                index: 1,
                expected: 8,
                byte_size: 4,
            },
            K::ExtentOutOfBounds {
                start: -4,
                end: 8,
                byte_size: 8,
            },
            K::ByteOffsetOutOfRange {
                byte_offset: 9,
                byte_size: 8,
            },
            K::ByteOffsetMisaligned {
                byte_offset: 2,
                alignment: 4,
            },
            K::ByteOffsetNotZero(8),
            K::ExtensionTypeMismatch {
                type_tag: 0xF0,
                present: false,
            },
            K::SectionNotAllowed {
                section: Flags::HAS_SHARD,
                layout_tag: 9,
            },
            K::ShardOutOfBounds { axis: 0 },
            K::StorageTypeNotAllowed {
                scheme: 1,
                type_tag: 3,
            },
            K::AxisOutOfRange { axis: 2, rank: 2 },
            K::ParameterBufferIndex {
                index: 0,
                first: 1,
                count: 2,
            },
            K::ParameterOutOfRange {
                field: FieldName::Scale,
            },
            K::StatisticsInconsistent {
                field: FieldName::Nnz,
            },
            K::PrivateCodeRefused {
                field: FieldName::SchemeTag,
                code: 0xF1,
            },
        ];
        let mut seen = [false; 64];
        for kind in kinds {
            let d = describe_descriptor(DescriptorError::new(77, kind));
            assert_ne!(d.status, HURRAY_E_UNKNOWN, "{kind:?}");
            assert_eq!(d.offset, 77, "{kind:?}");
            assert_ne!(message(d.status).to_bytes(), b"unknown status code");
            let slot = usize::try_from(-d.status).unwrap();
            assert!(!seen[slot], "two kinds share status {}: {kind:?}", d.status);
            seen[slot] = true;
        }
        // A bad handle inside a table keeps the handle's status and gains the index.
        let d = describe_descriptor(DescriptorError::new(
            17,
            K::Buffer {
                index: 1,
                error: handle,
            },
        ));
        assert_eq!(
            (d.status, d.index, d.value, d.offset),
            (HURRAY_E_INVALID_SYNC_MODE, 1, 7, 17)
        );
        // A negative extent start is reported as a two's-complement int64.
        let d = describe_descriptor(DescriptorError::new(0, kinds[24]));
        assert_eq!(d.value.cast_signed(), -4);
        // The section of SectionNotAllowed is its flag bit.
        let d = describe_descriptor(DescriptorError::new(10, kinds[29]));
        assert_eq!(d.index, u64::from(HURRAY_FLAG_HAS_SHARD));
    }

    #[test]
    fn every_handle_encode_and_interop_error_has_a_status() {
        let handle_errors = [
            Error::AlignmentNotPowerOfTwo { alignment: 3 },
            Error::AlignmentBelowMinimum {
                alignment: 32,
                minimum: 64,
            },
            Error::InvalidSyncMode(7),
            Error::InvalidDeviceTag(9),
            Error::InvalidMemoryClass(4),
            Error::MemoryClassNotAllowed {
                device_tag: DeviceTag::Cpu,
                memory_class: MemoryClass::PeerToPeer,
            },
            Error::ReservedNonZero(1),
        ];
        for e in handle_errors {
            assert_ne!(describe(e).status, HURRAY_E_UNKNOWN, "{e:?}");
        }
        let encode_errors = [
            EncodeError::OutputTooSmall {
                needed: 61,
                available: 8,
            },
            EncodeError::CapacityExceeded {
                what: "buffers",
                capacity: 255,
            },
            EncodeError::LengthMismatch {
                what: "strides",
                len: 1,
                expected: 2,
            },
            EncodeError::Invalid(DescriptorError::new(0, DescriptorErrorKind::TilingTooDeep)),
            EncodeError::Unsupported {
                what: "tiled levels whose codes, strides and nesting disagree",
            },
        ];
        for e in encode_errors {
            assert_ne!(describe_encode(e).status, HURRAY_E_UNKNOWN, "{e:?}");
        }
        let interop_errors = [
            InteropError::NoDeviceCode {
                device_tag: DeviceTag::Private(0xF0),
                memory_class: MemoryClass::Standard,
            },
            InteropError::UnknownDeviceCode(9),
            InteropError::NoDataType(ElementType::Bool),
            InteropError::UnknownDataType {
                code: 9,
                bits: 8,
                lanes: 1,
            },
        ];
        for e in interop_errors {
            assert_ne!(describe_interop(e).status, HURRAY_E_UNKNOWN, "{e:?}");
        }
    }

    #[test]
    fn every_status_has_its_own_message() {
        for s in HURRAY_STATUS_MIN..=HURRAY_OK {
            let m = message(s).to_bytes();
            assert_ne!(m, b"unknown status code", "{s}");
            for t in HURRAY_STATUS_MIN..s {
                assert_ne!(m, message(t).to_bytes(), "{s} and {t}");
            }
        }
        assert_eq!(
            message(HURRAY_STATUS_MIN - 1).to_bytes(),
            b"unknown status code"
        );
    }
}
