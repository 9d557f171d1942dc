//! # hurray-ffi
//!
//! The C ABI of `hurray-core`: decode, validate and encode buffer handles,
//! view buffer tables and tensor descriptors without allocating, map device
//! codes to DLPack and Arrow, and pair a handle with its out-of-band base
//! pointer. The header is `include/hurray.h`; `docs/impl/c-ffi.md` gives the
//! ownership, lifetime, threading and versioning rules.
//!
//! ## Contract
//!
//! * Every function returns a `hurray_status` (`HURRAY_OK` = 0, a negative
//!   `HURRAY_E_*` code otherwise) and writes its outputs only on success.
//! * Null pointers, misaligned output pointers and short lengths are
//!   reported as `HURRAY_E_NULL`, `HURRAY_E_MISALIGNED_POINTER` and
//!   `HURRAY_E_BUFFER_TOO_SMALL`; input byte pointers need no alignment.
//! * No function allocates, keeps global state, or lets a panic cross the
//!   boundary: the code behind them is panic-free (`core/nopanic` proves it
//!   for the decoders), and hosted builds additionally catch any unwind and
//!   return `HURRAY_E_PANIC`.
//!
//! All `unsafe` code of the project lives here, one block per raw-pointer
//! access, each with a `// SAFETY:` argument.
#![cfg_attr(target_os = "none", no_std)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]
// C naming for C types.
#![allow(non_camel_case_types)]

use core::mem::{align_of, size_of};

use hurray_core::{
    BufferHandle, BufferTable, DeviceTag, EntryError, Error, MemoryClass, SyncMode, TensorView,
    interop,
};

mod status;
pub use status::*;

// DLPack / Arrow C Device export and import (hosted targets: exports allocate).
#[cfg(not(target_os = "none"))]
mod interchange;
#[cfg(not(target_os = "none"))]
pub use interchange::*;

/// Version of the C ABI: `major << 16 | minor`. See `docs/impl/c-ffi.md` § Versioning.
pub const HURRAY_ABI_VERSION: u32 = 1 << 16;

/// A validated buffer handle, as C sees it (native-endian fields).
///
/// On little-endian hosts its memory layout equals the 16-byte wire entry.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct hurray_buffer_handle {
    /// Size in bytes; 0 for an empty buffer.
    pub byte_size: u64,
    /// Alignment of the base address (a power of two).
    pub alignment: u32,
    /// `HURRAY_DEVICE_*` code.
    pub device_tag: u8,
    /// `HURRAY_SYNC_*` code.
    pub sync_mode: u8,
    /// `HURRAY_MEMORY_*` code.
    pub memory_class: u8,
    /// Always 0.
    pub reserved: u8,
}

const _: () = assert!(size_of::<hurray_buffer_handle>() == 16);
const _: () = assert!(core::mem::offset_of!(hurray_buffer_handle, alignment) == 8);
const _: () = assert!(core::mem::offset_of!(hurray_buffer_handle, device_tag) == 12);
const _: () = assert!(core::mem::offset_of!(hurray_buffer_handle, reserved) == 15);

/// A handle paired with the base pointer of its memory (the out-of-band half).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_buffer {
    /// What the buffer is.
    pub handle: hurray_buffer_handle,
    /// Where it is, in the address space of the tagged device; may be null
    /// only for an empty buffer.
    pub data: *const core::ffi::c_void,
}

/// What went wrong, beyond the status code (optional out-parameter).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct hurray_error {
    /// The status also returned.
    pub status: hurray_status,
    /// For table entries: the index of the first invalid entry; else 0.
    pub index: u64,
    /// The offending value: the raw code byte, alignment, offset, flag bits,
    /// or needed length; 0 when there is none.
    pub value: u64,
}

/// A validated buffer table. Borrows the caller's bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_table {
    /// First byte of the first entry.
    pub bytes: *const u8,
    /// Number of 16-byte entries.
    pub count: usize,
}

/// A validated tensor descriptor. Borrows the caller's bytes; every pointer
/// points into them. Do not modify: accessors trust these fields.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_tensor_view {
    /// `ndim` little-endian u64 sizes.
    pub shape: *const u8,
    /// `ndim` little-endian i64 strides (elements), or null for compact row-major.
    pub strides: *const u8,
    /// The buffer table.
    pub table: hurray_table,
    /// Offset in bytes of the first element in the data buffer.
    pub byte_offset: u64,
    /// Product of the shape.
    pub element_count: u64,
    /// Descriptor length in bytes.
    pub total_len: u32,
    /// Flag bits (`HURRAY_FLAG_*`).
    pub flags: u16,
    /// Index of the data buffer in the table.
    pub data_buffer: u16,
    /// `HURRAY_DTYPE_*` code.
    pub dtype: u8,
    /// Number of dimensions.
    pub ndim: u8,
    /// Descriptor major version.
    pub version_major: u8,
    /// Descriptor minor version.
    pub version_minor: u8,
}

// ---------------------------------------------------------------------------
// Boundary helpers.

/// Runs an exported function's body; on hosted targets an unwind (which the
/// code cannot produce, but the boundary must never let through) becomes
/// `HURRAY_E_PANIC`.
#[inline]
fn guard(body: impl FnOnce() -> hurray_status) -> hurray_status {
    #[cfg(not(target_os = "none"))]
    {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(HURRAY_E_PANIC)
    }
    #[cfg(target_os = "none")]
    {
        body()
    }
}

/// Writes `value` through a caller's output pointer after checking it.
///
/// # Safety
/// `out` is null or points to storage for one `T` (alignment is checked).
unsafe fn put<T>(out: *mut T, value: T) -> hurray_status {
    if out.is_null() {
        return HURRAY_E_NULL;
    }
    if out.align_offset(align_of::<T>()) != 0 {
        return HURRAY_E_MISALIGNED_POINTER;
    }
    // SAFETY: `out` is non-null and aligned for `T` (checked above); the C
    // contract of every function taking an output pointer is that it points
    // to writable storage for one `T`.
    unsafe { out.write(value) };
    HURRAY_OK
}

/// Writes an optional error detail.
///
/// # Safety
/// `out` is null or points to storage for one `hurray_error`.
unsafe fn detail(out: *mut hurray_error, e: hurray_error) {
    if !out.is_null() && out.align_offset(align_of::<hurray_error>()) == 0 {
        // SAFETY: non-null and aligned (checked); the caller passes storage
        // for one `hurray_error` or null.
        unsafe { out.write(e) };
    }
}

/// Borrows `len` input bytes.
///
/// # Safety
/// `bytes` is null or points to `len` readable bytes that stay unmodified for `'a`.
const unsafe fn input<'a>(bytes: *const u8, len: usize) -> Result<&'a [u8], hurray_status> {
    if bytes.is_null() {
        // A null pointer with length 0 is an empty input.
        return if len == 0 {
            Ok(&[])
        } else {
            Err(HURRAY_E_NULL)
        };
    }
    if len > isize::MAX as usize {
        return Err(HURRAY_E_BUFFER_TOO_SMALL);
    }
    // SAFETY: non-null, `len <= isize::MAX` (checked); the caller guarantees
    // `bytes` points to `len` readable bytes that stay unmodified during the
    // call (and, for views, for as long as the view is used). `u8` has
    // alignment 1.
    Ok(unsafe { core::slice::from_raw_parts(bytes, len) })
}

/// Borrows `len` output bytes.
///
/// # Safety
/// `bytes` is null or points to `len` writable bytes not otherwise accessed for `'a`.
const unsafe fn output<'a>(bytes: *mut u8, len: usize) -> Result<&'a mut [u8], hurray_status> {
    if bytes.is_null() {
        return Err(HURRAY_E_NULL);
    }
    if len > isize::MAX as usize {
        return Err(HURRAY_E_BUFFER_TOO_SMALL);
    }
    // SAFETY: non-null, `len <= isize::MAX` (checked); the caller guarantees
    // `bytes` points to `len` writable bytes not aliased during the call.
    Ok(unsafe { core::slice::from_raw_parts_mut(bytes, len) })
}

/// Reads a caller's input struct after checking the pointer.
///
/// # Safety
/// `ptr` is null or points to an initialised `T`.
unsafe fn get<T: Copy>(ptr: *const T) -> Result<T, hurray_status> {
    if ptr.is_null() {
        return Err(HURRAY_E_NULL);
    }
    if ptr.align_offset(align_of::<T>()) != 0 {
        return Err(HURRAY_E_MISALIGNED_POINTER);
    }
    // SAFETY: non-null and aligned (checked); the caller passes a pointer to
    // an initialised `T`. Every `T` used here is plain data valid for any bits.
    Ok(unsafe { ptr.read() })
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}

const fn to_c(h: BufferHandle) -> hurray_buffer_handle {
    hurray_buffer_handle {
        byte_size: h.byte_size(),
        alignment: h.alignment(),
        device_tag: h.device_tag().code(),
        sync_mode: h.sync_mode().code(),
        memory_class: h.memory_class().code(),
        reserved: 0,
    }
}

/// Validates a C handle by running it through the wire decoder.
fn from_c(h: &hurray_buffer_handle) -> Result<BufferHandle, Error> {
    let entry = hurray_core::BufferHandleEntry {
        byte_size: h.byte_size.into(),
        alignment: h.alignment.into(),
        device_tag: h.device_tag,
        sync_mode: h.sync_mode,
        memory_class: h.memory_class,
        reserved: h.reserved,
    };
    entry.decode().map_err(EntryError::into_error)
}

/// `Error::BufferTooSmall` for `needed` bytes where `available` were given.
const fn too_small(needed: usize, available: usize) -> Error {
    Error::BufferTooSmall {
        needed: needed as u64,
        available: available as u64,
    }
}

/// Reports `e` through the optional detail pointer and returns its status.
///
/// # Safety
/// As [`detail`].
unsafe fn fail(err_out: *mut hurray_error, e: Error) -> hurray_status {
    let d = status::describe(e);
    // SAFETY: forwarded from this function's contract.
    unsafe { detail(err_out, d) };
    d.status
}

// ---------------------------------------------------------------------------
// Version and messages.

/// The ABI version this library implements (`HURRAY_ABI_VERSION`).
#[unsafe(no_mangle)]
pub extern "C" fn hurray_abi_version() -> u32 {
    HURRAY_ABI_VERSION
}

/// A static, NUL-terminated English message for a status code (never null).
#[unsafe(no_mangle)]
pub extern "C" fn hurray_status_message(status: hurray_status) -> *const core::ffi::c_char {
    status::message(status).as_ptr()
}

// ---------------------------------------------------------------------------
// Buffer handles.

/// Decodes and validates the 16 wire bytes at `bytes` (`len` must be at least 16).
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_decode(
    bytes: *const u8,
    len: usize,
    out: *mut hurray_buffer_handle,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let bytes = tri!(unsafe { input(bytes, len) });
        let Some(first) = bytes.first_chunk::<16>() else {
            // SAFETY: the caller upholds this function's `# Safety` contract.
            return unsafe { fail(err, too_small(16, bytes.len())) };
        };
        match BufferHandle::from_bytes(first) {
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Ok(h) => unsafe { put(out, to_c(h)) },
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Err(e) => unsafe { fail(err, e) },
        }
    })
}

/// Validates `handle` and writes its 16 wire bytes to `out` (`out_len` >= 16).
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_encode(
    handle: *const hurray_buffer_handle,
    out: *mut u8,
    out_len: usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let h = tri!(unsafe { get(handle) });
        let h = match from_c(&h) {
            Ok(h) => h,
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Err(e) => return unsafe { fail(err, e) },
        };
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let out = tri!(unsafe { output(out, out_len) });
        let Some(dst) = out.first_chunk_mut::<16>() else {
            // SAFETY: the caller upholds this function's `# Safety` contract.
            return unsafe { fail(err, too_small(16, out.len())) };
        };
        *dst = h.to_bytes();
        HURRAY_OK
    })
}

/// Checks every rule of the spec on a C handle.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_validate(
    handle: *const hurray_buffer_handle,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let h = tri!(unsafe { get(handle) });
        match from_c(&h) {
            Ok(_) => HURRAY_OK,
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Err(e) => unsafe { fail(err, e) },
        }
    })
}

/// Builds a validated handle from its fields.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_new(
    byte_size: u64,
    alignment: u32,
    device_tag: u8,
    sync_mode: u8,
    memory_class: u8,
    out: *mut hurray_buffer_handle,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        let h = hurray_buffer_handle {
            byte_size,
            alignment,
            device_tag,
            sync_mode,
            memory_class,
            reserved: 0,
        };
        match from_c(&h) {
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Ok(v) => unsafe { put(out, to_c(v)) },
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Err(e) => unsafe { fail(err, e) },
        }
    })
}

/// The empty handle of a device: size 0, alignment 1, producer-synced, standard memory.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_empty(
    device_tag: u8,
    out: *mut hurray_buffer_handle,
) -> hurray_status {
    guard(|| match DeviceTag::from_code(device_tag) {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        Some(d) => unsafe { put(out, to_c(BufferHandle::empty(d))) },
        None => HURRAY_E_INVALID_DEVICE_TAG,
    })
}

// ---------------------------------------------------------------------------
// Out-of-band pairing.

/// Whether `data` satisfies the (valid) handle's alignment: 1 if so, 0 if not
/// or if the handle is invalid or null. An empty buffer accepts any pointer.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_pointer_is_aligned(
    handle: *const hurray_buffer_handle,
    data: *const core::ffi::c_void,
) -> i32 {
    let ok = guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let h = tri!(unsafe { get(handle) });
        match from_c(&h) {
            Ok(h) if h.is_address_aligned(data as usize as u64) => HURRAY_OK,
            _ => HURRAY_E_MISALIGNED_POINTER,
        }
    });
    i32::from(ok == HURRAY_OK)
}

/// Checks a handle + pointer pair: the handle is valid, the pointer is
/// non-null for a non-empty buffer, and aligned as the handle declares.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_buffer_check(
    buffer: *const hurray_buffer,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let b = tri!(unsafe { get(buffer) });
        let h = match from_c(&b.handle) {
            Ok(h) => h,
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Err(e) => return unsafe { fail(err, e) },
        };
        let address = b.data as usize as u64;
        let status = if !h.is_empty() && b.data.is_null() {
            HURRAY_E_NULL
        } else if !h.is_address_aligned(address) {
            HURRAY_E_MISALIGNED_POINTER
        } else {
            return HURRAY_OK;
        };
        // SAFETY: the caller upholds this function's `# Safety` contract.
        unsafe {
            detail(
                err,
                hurray_error {
                    status,
                    index: 0,
                    value: address,
                },
            )
        };
        status
    })
}

// ---------------------------------------------------------------------------
// Buffer tables.

/// Validates a buffer table of `len` bytes in place. On an invalid entry, `err`
/// (if not null) receives its index and raw offending value.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_table_parse(
    bytes: *const u8,
    len: usize,
    out: *mut hurray_table,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let raw = tri!(unsafe { input(bytes, len) });
        match BufferTable::parse(raw) {
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Ok(t) => unsafe {
                put(
                    out,
                    hurray_table {
                        bytes: raw.as_ptr(),
                        count: t.len(),
                    },
                )
            },
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Err(e) => unsafe { fail(err, e) },
        }
    })
}

/// Entry `index` of a table produced by `hurray_table_parse`.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_table_get(
    table: *const hurray_table,
    index: usize,
    out: *mut hurray_buffer_handle,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let t = tri!(unsafe { get(table) });
        if index >= t.count {
            return HURRAY_E_INDEX_OUT_OF_RANGE;
        }
        let Some(len) = t.count.checked_mul(16) else {
            return HURRAY_E_INDEX_OUT_OF_RANGE;
        };
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let raw = tri!(unsafe { input(t.bytes, len) });
        match raw
            .chunks_exact(16)
            .nth(index)
            .and_then(|c| c.first_chunk::<16>())
        {
            Some(entry) => match BufferHandle::from_bytes(entry) {
                // SAFETY: the caller upholds this function's `# Safety` contract.
                Ok(h) => unsafe { put(out, to_c(h)) },
                Err(e) => status::describe(e).status,
            },
            None => HURRAY_E_INDEX_OUT_OF_RANGE,
        }
    })
}

/// Encodes `count` handles as a buffer table into `out` (`out_len >= 16 * count`).
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_table_encode(
    handles: *const hurray_buffer_handle,
    count: usize,
    out: *mut u8,
    out_len: usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        let Some(needed) = count.checked_mul(16) else {
            return HURRAY_E_BUFFER_TOO_SMALL;
        };
        if count > 0
            && (handles.is_null() || handles.align_offset(align_of::<hurray_buffer_handle>()) != 0)
        {
            return if handles.is_null() {
                HURRAY_E_NULL
            } else {
                HURRAY_E_MISALIGNED_POINTER
            };
        }
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let out = tri!(unsafe { output(out, out_len) });
        let Some(dst) = out.get_mut(..needed) else {
            // SAFETY: the caller upholds this function's `# Safety` contract.
            return unsafe { fail(err, too_small(needed, out.len())) };
        };
        for (i, chunk) in dst.chunks_exact_mut(16).enumerate() {
            // SAFETY: `handles` is non-null and aligned (checked above) and the
            // caller guarantees `count` readable handles; `i < count` because
            // `dst` holds exactly `count` chunks.
            let h = unsafe { handles.add(i).read() };
            match from_c(&h) {
                Ok(v) => chunk.copy_from_slice(&v.to_bytes()),
                Err(e) => {
                    let mut d = status::describe(e);
                    d.index = i as u64;
                    // SAFETY: the caller upholds this function's `# Safety` contract.
                    unsafe { detail(err, d) };
                    return d.status;
                }
            }
        }
        HURRAY_OK
    })
}

// ---------------------------------------------------------------------------
// Tensor descriptors.

/// Parses and validates a tensor descriptor at `bytes` (trailing bytes past
/// its `total_len` are ignored).
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_parse(
    bytes: *const u8,
    len: usize,
    out: *mut hurray_tensor_view,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let raw = tri!(unsafe { input(bytes, len) });
        let v = match TensorView::parse(raw) {
            Ok(v) => v,
            // SAFETY: the caller upholds this function's `# Safety` contract.
            Err(e) => return unsafe { fail(err, e) },
        };
        let header = v.header();
        let view = hurray_tensor_view {
            shape: v.shape().as_raw().as_ptr().cast(),
            strides: v
                .strides()
                .map_or(core::ptr::null(), |s| s.as_raw().as_ptr().cast()),
            table: hurray_table {
                bytes: v.buffers().as_bytes().as_ptr(),
                count: v.buffers().len(),
            },
            byte_offset: v.byte_offset(),
            element_count: v.element_count(),
            total_len: header.total_len.get(),
            flags: v.flags().bits(),
            data_buffer: v.data_buffer_index(),
            dtype: v.dtype().code(),
            ndim: header.ndim,
            version_major: header.version_major,
            version_minor: header.version_minor,
        };
        // SAFETY: the caller upholds this function's `# Safety` contract.
        unsafe { put(out, view) }
    })
}

/// Reads lane `index` (of `count`) of an 8-byte little-endian array.
///
/// # Safety
/// `base` points to `count * 8` readable bytes (a view's shape or strides).
unsafe fn lane(base: *const u8, count: usize, index: usize) -> Result<[u8; 8], hurray_status> {
    if index >= count {
        return Err(HURRAY_E_INDEX_OUT_OF_RANGE);
    }
    let len = count.checked_mul(8).ok_or(HURRAY_E_INDEX_OUT_OF_RANGE)?;
    // SAFETY: forwarded from this function's contract.
    let raw = unsafe { input(base, len) }?;
    raw.chunks_exact(8)
        .nth(index)
        .and_then(|c| c.first_chunk::<8>().copied())
        .ok_or(HURRAY_E_INDEX_OUT_OF_RANGE)
}

/// Size of axis `axis`.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_dim(
    view: *const hurray_tensor_view,
    axis: usize,
    out: *mut u64,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let v = tri!(unsafe { get(view) });
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let b = tri!(unsafe { lane(v.shape, usize::from(v.ndim), axis) });
        // SAFETY: the caller upholds this function's `# Safety` contract.
        unsafe { put(out, u64::from_le_bytes(b)) }
    })
}

/// Stride of axis `axis` in elements; `HURRAY_E_NO_STRIDES` for a compact
/// row-major descriptor (which carries no strides).
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_stride(
    view: *const hurray_tensor_view,
    axis: usize,
    out: *mut i64,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let v = tri!(unsafe { get(view) });
        if v.strides.is_null() {
            return HURRAY_E_NO_STRIDES;
        }
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let b = tri!(unsafe { lane(v.strides, usize::from(v.ndim), axis) });
        // SAFETY: the caller upholds this function's `# Safety` contract.
        unsafe { put(out, i64::from_le_bytes(b)) }
    })
}

/// The handle of the buffer holding the elements.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_data_buffer(
    view: *const hurray_tensor_view,
    out: *mut hurray_buffer_handle,
) -> hurray_status {
    guard(|| {
        // SAFETY: the caller upholds this function's `# Safety` contract.
        let v = tri!(unsafe { get(view) });
        // SAFETY: the caller upholds this function's `# Safety` contract.
        unsafe { hurray_table_get(&v.table, usize::from(v.data_buffer), out) }
    })
}

/// Size in bytes of one element of a `HURRAY_DTYPE_*` code, or 0 for an unknown code.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_dtype_size(dtype: u8) -> u32 {
    hurray_core::DType::from_code(dtype).map_or(0, hurray_core::DType::size_bytes)
}

// ---------------------------------------------------------------------------
// DLPack and Arrow device codes.

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
    map: fn(DeviceTag, MemoryClass) -> hurray_core::Result<i32>,
) -> hurray_status {
    let (d, m) = tri!(pair(device_tag, memory_class));
    match map(d, m) {
        // SAFETY: forwarded from this function's contract.
        Ok(code) => unsafe { put(out, code) },
        Err(e) => status::describe(e).status,
    }
}

/// Writes the (device tag, memory class) pair of an interop code.
///
/// # Safety
/// `device_tag` and `memory_class` are null or point to one writable byte each.
unsafe fn unpair(
    r: hurray_core::Result<(DeviceTag, MemoryClass)>,
    device_tag: *mut u8,
    memory_class: *mut u8,
) -> hurray_status {
    match r {
        Ok((d, m)) => {
            if device_tag.is_null() || memory_class.is_null() {
                return HURRAY_E_NULL;
            }
            // SAFETY: forwarded from this function's contract.
            let s = unsafe { put(device_tag, d.code()) };
            if s != HURRAY_OK {
                return s;
            }
            // SAFETY: forwarded from this function's contract.
            unsafe { put(memory_class, m.code()) }
        }
        Err(e) => status::describe(e).status,
    }
}

/// The DLPack `DLDeviceType` of a (device tag, memory class) pair.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_to_dlpack_device(
    device_tag: u8,
    memory_class: u8,
    out: *mut i32,
) -> hurray_status {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    guard(|| unsafe { to_code(device_tag, memory_class, out, interop::to_dlpack) })
}

/// The (device tag, memory class) pair of a DLPack `DLDeviceType`.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_from_dlpack_device(
    code: i32,
    device_tag: *mut u8,
    memory_class: *mut u8,
) -> hurray_status {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    guard(|| unsafe { unpair(interop::from_dlpack(code), device_tag, memory_class) })
}

/// The Arrow C Device `ArrowDeviceType` of a (device tag, memory class) pair.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_to_arrow_device(
    device_tag: u8,
    memory_class: u8,
    out: *mut i32,
) -> hurray_status {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    guard(|| unsafe { to_code(device_tag, memory_class, out, interop::to_arrow) })
}

/// The (device tag, memory class) pair of an Arrow C Device `ArrowDeviceType`.
///
/// # Safety
/// Every pointer argument is null or valid for its use: input byte
/// pointers address `len` readable bytes, struct pointers address an
/// initialised struct, output pointers address writable storage, and
/// views were produced by this library over bytes that are still alive
/// and unmodified (`docs/impl/c-ffi.md` § Pointers and lifetimes).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_from_arrow_device(
    code: i32,
    device_tag: *mut u8,
    memory_class: *mut u8,
) -> hurray_status {
    // SAFETY: the caller upholds this function's `# Safety` contract.
    guard(|| unsafe { unpair(interop::from_arrow(code), device_tag, memory_class) })
}

// Codes the header exports, checked against the core's enums at compile time.
const _: () = assert!(HURRAY_SYNC_EVENT == SyncMode::Event.code());
const _: () = assert!(HURRAY_DEVICE_CUDA == DeviceTag::Cuda.code());
const _: () = assert!(HURRAY_MEMORY_UNIFIED == MemoryClass::Unified.code());
