//! # hurray-rs-ffi (library `hurray_ffi`)
//!
//! The C ABI of `hurray_core`: decode, validate and encode buffer handles,
//! buffer tables and hurray tensor descriptors (`"HRRY"`) without
//! allocating, map device codes and element types to DLPack and Arrow, and
//! pair a handle with its out-of-band base pointer. The header is
//! `include/hurray.h`; `docs/impl/c-ffi.md` gives the ownership, lifetime,
//! threading and versioning rules.
//!
//! ## Contract
//!
//! * Every function returns a `hurray_status` (`HURRAY_OK` = 0, a negative
//!   `HURRAY_E_*` code otherwise) and writes its outputs only on success
//!   (the one exception: `hurray_descriptor_encode` may have written into
//!   its output buffer before it finds the descriptor invalid).
//! * Null pointers, misaligned pointers and short lengths are reported as
//!   `HURRAY_E_NULL`, `HURRAY_E_MISALIGNED_POINTER`, `HURRAY_E_TRUNCATED`
//!   and `HURRAY_E_OUTPUT_TOO_SMALL`; input byte pointers need no alignment.
//! * No function allocates, keeps global state, or lets a panic cross the
//!   boundary: the code behind them is panic-free (`core/nopanic` proves it
//!   at link time), and hosted builds additionally catch any unwind and
//!   return `HURRAY_E_PANIC`.
//!
//! ## Where `unsafe` lives
//!
//! In this crate: the raw-pointer helpers at the top of this file (each an
//! `unsafe fn` with its own `# Safety` contract), the `extern "C"` entry
//! points (each `unsafe` with a `# Safety` section, since C hands them the
//! pointers), and the calls between them, each with a `// SAFETY:`
//! argument; `interchange.rs` (the DLPack/Arrow C functions, hosted targets
//! only) follows the same rule. Elsewhere in the project: `hurray-rs-core`
//! forbids `unsafe`; `hurray-rs-interop` holds the raw DLPack and Arrow
//! structs; `hurray-rs-gpu` has one `unsafe fn` (`copy::commit`) and the
//! module that exports Vulkan memory. `ARCHITECTURE.md` keeps the list.
#![cfg_attr(target_os = "none", no_std)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]
// C naming for C types.
#![allow(non_camel_case_types)]

use core::mem::{align_of, size_of};

use hurray_core::{BufferHandle, BufferHandleEntry, BufferTable, DeviceTag, Error, MemoryClass};

mod container;
mod descriptor;
mod encode;
mod interop;
mod status;

pub use container::*;
pub use descriptor::*;
pub use encode::*;
pub use interop::*;
pub use status::*;

// DLPack / Arrow C Device export and import (hosted targets: exports allocate).
#[cfg(not(target_os = "none"))]
mod interchange;
#[cfg(not(target_os = "none"))]
pub use interchange::*;

/// Version of the C ABI: `major << 16 | minor`. See `docs/impl/c-ffi.md` § Versioning.
pub const HURRAY_ABI_VERSION: u32 = 2 << 16;

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
    /// `HURRAY_DEVICE_*` code, or a private code `0xF0`-`0xFE`.
    pub device_tag: u8,
    /// `HURRAY_SYNC_*` code.
    pub sync_mode: u8,
    /// `HURRAY_MEMORY_*` code, or a private code `0xF0`-`0xFE` (private devices only).
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

/// What went wrong, beyond the status code (optional out-parameter). Which
/// fields a status fills is listed with each `HURRAY_E_*` constant; the
/// others are 0.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct hurray_error {
    /// The status also returned.
    pub status: hurray_status,
    /// Byte offset of the field at fault, from the first byte of the
    /// descriptor (or buffer table); 0 for errors outside one.
    pub offset: u32,
    /// The buffer, axis, tile level or section the error names; else 0.
    pub index: u64,
    /// The offending value: a raw code byte, alignment, length, size.
    pub value: u64,
    /// What the rule required: bytes needed, a minimum, a count or size, a
    /// bound; 0 when there is none.
    pub expected: u64,
}

const _: () = assert!(size_of::<hurray_error>() == 32);

/// A validated buffer table. Borrows the caller's bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_table {
    /// First byte of the first entry.
    pub bytes: *const u8,
    /// Number of 16-byte entries.
    pub count: usize,
}

// ---------------------------------------------------------------------------
// Boundary helpers: the only functions that touch raw pointers.

/// Unwraps a `Result<T, hurray_status>` or returns the status.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}
pub(crate) use tri;

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
    // SAFETY: `out` is non-null and aligned for `T` (checked above) and, by
    // this function's contract, points to writable storage for one `T`.
    unsafe { out.write(value) };
    HURRAY_OK
}

/// Checks an output pointer without writing through it, so a function can
/// refuse a bad output before it does any work.
fn check_out<T>(out: *mut T) -> Result<(), hurray_status> {
    if out.is_null() {
        Err(HURRAY_E_NULL)
    } else if out.align_offset(align_of::<T>()) != 0 {
        Err(HURRAY_E_MISALIGNED_POINTER)
    } else {
        Ok(())
    }
}

/// Writes an optional error detail.
///
/// # Safety
/// `out` is null or points to storage for one `hurray_error`.
unsafe fn detail(out: *mut hurray_error, e: hurray_error) {
    if !out.is_null() && out.align_offset(align_of::<hurray_error>()) == 0 {
        // SAFETY: non-null and aligned (checked); by this function's
        // contract `out` points to storage for one `hurray_error`.
        unsafe { out.write(e) };
    }
}

/// Reports `d` through the optional detail pointer and returns its status.
///
/// # Safety
/// As [`detail`].
unsafe fn fail(err: *mut hurray_error, d: hurray_error) -> hurray_status {
    // SAFETY: forwarded from this function's contract.
    unsafe { detail(err, d) };
    d.status
}

/// Borrows `count` values of a caller's input array. A null pointer is an
/// empty array when `count == 0`.
///
/// # Safety
/// `ptr` is null or points to `count` initialised `T`s that stay unmodified
/// for `'a`; every bit pattern must be a valid `T` (plain integers and
/// pointers).
unsafe fn slice_in<'a, T>(ptr: *const T, count: usize) -> Result<&'a [T], hurray_status> {
    if count == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(HURRAY_E_NULL);
    }
    if ptr.align_offset(align_of::<T>()) != 0 {
        return Err(HURRAY_E_MISALIGNED_POINTER);
    }
    if count
        .checked_mul(size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(HURRAY_E_OVERFLOW);
    }
    // SAFETY: non-null, aligned, and `count * size_of::<T>() <= isize::MAX`
    // (checked above); by this function's contract `ptr` points to `count`
    // initialised values that stay unmodified for `'a`.
    Ok(unsafe { core::slice::from_raw_parts(ptr, count) })
}

/// Borrows `len` input bytes.
///
/// # Safety
/// `bytes` is null or points to `len` readable bytes that stay unmodified for `'a`.
unsafe fn input<'a>(bytes: *const u8, len: usize) -> Result<&'a [u8], hurray_status> {
    // SAFETY: forwarded from this function's contract; `u8` is valid for
    // every bit pattern and has alignment 1.
    unsafe { slice_in(bytes, len) }
}

/// Borrows a caller's output array of `count` values.
///
/// # Safety
/// `ptr` is null or points to `count` writable `T`s not otherwise accessed
/// for `'a`.
unsafe fn slice_out<'a, T>(ptr: *mut T, count: usize) -> Result<&'a mut [T], hurray_status> {
    if ptr.is_null() {
        return Err(HURRAY_E_NULL);
    }
    if ptr.align_offset(align_of::<T>()) != 0 {
        return Err(HURRAY_E_MISALIGNED_POINTER);
    }
    if count
        .checked_mul(size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(HURRAY_E_OVERFLOW);
    }
    // SAFETY: non-null, aligned, size within `isize::MAX` (checked above); by
    // this function's contract `ptr` points to `count` writable values not
    // aliased for `'a`. The values may be uninitialised in C, but every `T`
    // used here is plain data valid for any bits and only ever written.
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, count) })
}

/// Reads a caller's input struct after checking the pointer.
///
/// # Safety
/// `ptr` is null or points to an initialised `T` valid for any bit pattern.
unsafe fn get<T: Copy>(ptr: *const T) -> Result<T, hurray_status> {
    if ptr.is_null() {
        return Err(HURRAY_E_NULL);
    }
    if ptr.align_offset(align_of::<T>()) != 0 {
        return Err(HURRAY_E_MISALIGNED_POINTER);
    }
    // SAFETY: non-null and aligned (checked); by this function's contract
    // `ptr` points to an initialised `T`.
    Ok(unsafe { ptr.read() })
}

/// Copies `values` into a caller's array of capacity `cap`.
///
/// # Safety
/// As [`slice_out`] for `out` and `cap`.
unsafe fn copy_out<T: Copy>(values: &[T], out: *mut T, cap: usize) -> hurray_status {
    if values.len() > cap {
        // Check the pointer first, so a null array is reported as such.
        return match check_out(out) {
            Err(s) => s,
            Ok(()) => HURRAY_E_OUTPUT_TOO_SMALL,
        };
    }
    // SAFETY: forwarded from this function's contract.
    let dst = tri!(unsafe { slice_out(out, cap) });
    for (d, v) in dst.iter_mut().zip(values) {
        *d = *v;
    }
    HURRAY_OK
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
    BufferHandleEntry {
        byte_size: h.byte_size.into(),
        alignment: h.alignment.into(),
        device_tag: h.device_tag,
        sync_mode: h.sync_mode,
        memory_class: h.memory_class,
        reserved: h.reserved,
    }
    .decode()
}

/// A "too short" detail: `needed` bytes where `available` were given.
const fn short(status: hurray_status, needed: usize, available: usize) -> hurray_error {
    hurray_error {
        status,
        offset: 0,
        index: 0,
        value: available as u64,
        expected: needed as u64,
    }
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
    #[cfg(not(target_os = "none"))]
    if let Some(m) = interchange::message(status) {
        return m.as_ptr();
    }
    status::message(status).as_ptr()
}

// ---------------------------------------------------------------------------
// Buffer handles.

/// Decodes and validates the 16 wire bytes at `bytes` (`len` must be at
/// least 16; bytes after the first 16 are ignored).
///
/// # Safety
/// `bytes` addresses `len` readable bytes (or is null); `out` is null or
/// writable storage for one handle; `err` is null or storage for one
/// `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_decode(
    bytes: *const u8,
    len: usize,
    out: *mut hurray_buffer_handle,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: `bytes`/`len` address readable bytes (# Safety).
        let bytes = tri!(unsafe { input(bytes, len) });
        let Some(first) = bytes.first_chunk::<16>() else {
            // SAFETY: `err` is null or storage for one detail (# Safety).
            return unsafe { fail(err, short(HURRAY_E_TRUNCATED, 16, bytes.len())) };
        };
        match BufferHandle::from_bytes(first) {
            // SAFETY: `out` is null or storage for one handle (# Safety).
            Ok(h) => unsafe { put(out, to_c(h)) },
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => unsafe { fail(err, status::describe(e)) },
        }
    })
}

/// Validates `handle` and writes its 16 wire bytes to `out` (`out_len` >= 16).
///
/// # Safety
/// `handle` is null or points to an initialised handle; `out` is null or
/// addresses `out_len` writable bytes; `err` is null or storage for one
/// `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_encode(
    handle: *const hurray_buffer_handle,
    out: *mut u8,
    out_len: usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: `handle` is null or an initialised handle (# Safety).
        let h = tri!(unsafe { get(handle) });
        let h = match from_c(&h) {
            Ok(h) => h,
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => return unsafe { fail(err, status::describe(e)) },
        };
        // SAFETY: `out` addresses `out_len` writable bytes (# Safety).
        let out = tri!(unsafe { slice_out(out, out_len) });
        let Some(dst) = out.first_chunk_mut::<16>() else {
            // SAFETY: `err` is null or storage for one detail (# Safety).
            return unsafe { fail(err, short(HURRAY_E_OUTPUT_TOO_SMALL, 16, out.len())) };
        };
        *dst = h.to_bytes();
        HURRAY_OK
    })
}

/// Checks every rule of the buffer protocol on a C handle: alignment, codes,
/// CPU sync mode, the per-device memory-class validity, the reserved byte.
///
/// # Safety
/// `handle` is null or points to an initialised handle; `err` is null or
/// storage for one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_validate(
    handle: *const hurray_buffer_handle,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: `handle` is null or an initialised handle (# Safety).
        let h = tri!(unsafe { get(handle) });
        match from_c(&h) {
            Ok(_) => HURRAY_OK,
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => unsafe { fail(err, status::describe(e)) },
        }
    })
}

/// Builds a validated handle from its fields.
///
/// # Safety
/// `out` is null or writable storage for one handle; `err` is null or
/// storage for one `hurray_error`.
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
            // SAFETY: `out` is null or storage for one handle (# Safety).
            Ok(v) => unsafe { put(out, to_c(v)) },
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => unsafe { fail(err, status::describe(e)) },
        }
    })
}

/// The empty handle of a device (named or private): size 0, alignment 1,
/// producer-synced, standard memory.
///
/// # Safety
/// `out` is null or writable storage for one handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_handle_empty(
    device_tag: u8,
    out: *mut hurray_buffer_handle,
) -> hurray_status {
    guard(|| match DeviceTag::from_code(device_tag) {
        // SAFETY: `out` is null or storage for one handle (# Safety).
        Some(d) => unsafe { put(out, to_c(BufferHandle::empty(d))) },
        None => HURRAY_E_INVALID_DEVICE_TAG,
    })
}

/// Whether a buffer on `device_tag` may have `memory_class` (the format's
/// per-device validity table): 1 if so; 0 if not, or if either code is
/// reserved or invalid.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_memory_class_allowed(device_tag: u8, memory_class: u8) -> i32 {
    match (
        DeviceTag::from_code(device_tag),
        MemoryClass::from_code(memory_class),
    ) {
        (Some(d), Some(m)) => i32::from(d.allows(m)),
        _ => 0,
    }
}

// ---------------------------------------------------------------------------
// Out-of-band pairing.

/// Whether `data` satisfies the (valid) handle's alignment: 1 if so, 0 if not
/// or if the handle is invalid or null. An empty buffer accepts any pointer.
///
/// # Safety
/// `handle` is null or points to an initialised handle. `data` is only
/// compared, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_pointer_is_aligned(
    handle: *const hurray_buffer_handle,
    data: *const core::ffi::c_void,
) -> i32 {
    let ok = guard(|| {
        // SAFETY: `handle` is null or an initialised handle (# Safety).
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
/// `buffer` is null or points to an initialised `hurray_buffer` (its `data`
/// is only compared, never dereferenced); `err` is null or storage for one
/// `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_buffer_check(
    buffer: *const hurray_buffer,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: `buffer` is null or an initialised buffer (# Safety).
        let b = tri!(unsafe { get(buffer) });
        let h = match from_c(&b.handle) {
            Ok(h) => h,
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => return unsafe { fail(err, status::describe(e)) },
        };
        let address = b.data as usize as u64;
        let status = if !h.is_empty() && b.data.is_null() {
            HURRAY_E_NULL
        } else if !h.is_address_aligned(address) {
            HURRAY_E_MISALIGNED_POINTER
        } else {
            return HURRAY_OK;
        };
        let d = hurray_error {
            status,
            offset: 0,
            index: 0,
            value: address,
            expected: u64::from(h.alignment()),
        };
        // SAFETY: `err` is null or storage for one detail (# Safety).
        unsafe { fail(err, d) }
    })
}

// ---------------------------------------------------------------------------
// Buffer tables.

/// Validates a buffer table of `len` bytes in place: every entry, and device
/// colocation (every entry shares entry 0's device tag and memory class).
/// On failure `err` (if not null) receives the first bad entry's index, the
/// offset of its entry and the raw offending value.
///
/// # Safety
/// `bytes` addresses `len` readable bytes (or is null with `len == 0`) that
/// stay unmodified while the table is used; `out` is null or storage for one
/// table; `err` is null or storage for one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_table_parse(
    bytes: *const u8,
    len: usize,
    out: *mut hurray_table,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: `bytes`/`len` address readable bytes (# Safety).
        let raw = tri!(unsafe { input(bytes, len) });
        match BufferTable::parse(raw) {
            // SAFETY: `out` is null or storage for one table (# Safety).
            Ok(t) => unsafe { put(out, table_of(t)) },
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => unsafe { fail(err, status::describe_descriptor(e)) },
        }
    })
}

/// The C view of a validated table.
fn table_of(t: BufferTable<'_>) -> hurray_table {
    hurray_table {
        bytes: t.as_bytes().as_ptr(),
        count: t.len(),
    }
}

/// Entry `index` of a table produced by this library.
///
/// # Safety
/// `table` is null or points to a table this library produced, whose bytes
/// are still alive and unmodified; `out` is null or storage for one handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_table_get(
    table: *const hurray_table,
    index: usize,
    out: *mut hurray_buffer_handle,
) -> hurray_status {
    guard(|| {
        // SAFETY: `table` is null or an initialised table (# Safety).
        let t = tri!(unsafe { get(table) });
        if index >= t.count {
            return HURRAY_E_INDEX_OUT_OF_RANGE;
        }
        let Some(len) = t.count.checked_mul(16) else {
            return HURRAY_E_INDEX_OUT_OF_RANGE;
        };
        // SAFETY: a table this library produced addresses `16 * count`
        // readable bytes that are still alive (# Safety).
        let raw = tri!(unsafe { input(t.bytes, len) });
        match raw
            .chunks_exact(16)
            .nth(index)
            .and_then(|c| c.first_chunk::<16>())
        {
            Some(entry) => match BufferHandle::from_bytes(entry) {
                // SAFETY: `out` is null or storage for one handle (# Safety).
                Ok(h) => unsafe { put(out, to_c(h)) },
                Err(e) => status::describe(e).status,
            },
            None => HURRAY_E_INDEX_OUT_OF_RANGE,
        }
    })
}

/// Encodes `count` handles as a buffer table into `out` (`out_len >= 16 * count`).
/// Every handle is validated and must share handle 0's device tag and memory
/// class (device colocation); on failure `err.index` names the first bad one
/// and nothing is written.
///
/// # Safety
/// `handles` addresses `count` initialised handles (or is null with
/// `count == 0`); `out` is null or addresses `out_len` writable bytes; `err`
/// is null or storage for one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_table_encode(
    handles: *const hurray_buffer_handle,
    count: usize,
    out: *mut u8,
    out_len: usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: `handles` addresses `count` initialised handles (# Safety).
        let handles = tri!(unsafe { slice_in(handles, count) });
        // SAFETY: `out` addresses `out_len` writable bytes (# Safety).
        let out = tri!(unsafe { slice_out(out, out_len) });
        let first = handles.first().map(|h| (h.device_tag, h.memory_class));
        for (i, h) in handles.iter().enumerate() {
            let mut d = match from_c(h) {
                Ok(_) if Some((h.device_tag, h.memory_class)) == first => continue,
                Ok(_) => hurray_error {
                    status: HURRAY_E_NOT_COLOCATED,
                    ..hurray_error::default()
                },
                Err(e) => status::describe(e),
            };
            d.index = i as u64;
            d.offset = u32::try_from(i.saturating_mul(16)).unwrap_or(u32::MAX);
            // SAFETY: `err` is null or storage for one detail (# Safety).
            return unsafe { fail(err, d) };
        }
        let needed = count.saturating_mul(16);
        let Some(dst) = out.get_mut(..needed) else {
            // SAFETY: `err` is null or storage for one detail (# Safety).
            return unsafe { fail(err, short(HURRAY_E_OUTPUT_TOO_SMALL, needed, out.len())) };
        };
        for (chunk, h) in dst.chunks_exact_mut(16).zip(handles) {
            // Validated above.
            if let Ok(v) = from_c(h) {
                chunk.copy_from_slice(&v.to_bytes());
            }
        }
        HURRAY_OK
    })
}
