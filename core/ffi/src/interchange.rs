//! DLPack and Arrow C Device export/import for C callers, on top of
//! `hurray-interop` (hosted targets only: the exports allocate the protocol
//! structs).
//!
//! # Contract
//!
//! * Ownership moves into every call in every case. An export takes the
//!   caller's owner (`owner_ctx`, `owner_release`): `owner_release(owner_ctx)`
//!   runs exactly once, when the consumer has released the exported tensor,
//!   or before the export returns an error. An import takes the producer's
//!   tensor: its deleter / release callbacks have run when the import
//!   returns an error, and run at `hurray_import_release` otherwise.
//! * The import path allocates nothing: the descriptor is written into the
//!   caller's buffer (`HURRAY_INTEROP_MAX_DESCRIPTOR_LEN` bytes always
//!   suffice), the state into the caller's `hurray_import`.
//! * Outputs are written only on success; every producer value that hurray
//!   refuses is a `HURRAY_E_INTEROP_*` status, never a crash; an unwind
//!   becomes `HURRAY_E_PANIC`.
//! * `owner_release`, DLPack deleters and Arrow release callbacks may run on
//!   whichever thread drops the last reference.
//!
//! DLPack and Arrow structs appear here as `void *`: include the vendored
//! `dlpack.h` / Arrow `abi.h` (`core/interop/include/vendor/`) to read them.

use core::ffi::{CStr, c_char, c_void};
use core::ptr;

use hurray_core::{SyncMode, TensorView};
use hurray_interop::arrow::ffi::{ArrowDeviceArray, ArrowSchema};
use hurray_interop::dlpack::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use hurray_interop::dlpack::{self, Access, ExportOptions};
use hurray_interop::{
    ExportError, ImportError, ImportOptions, Imported, ProducerGuard, ProducerKind, arrow,
};

use crate::status::{HURRAY_E_NULL, HURRAY_E_PANIC, HURRAY_OK, hurray_status};

/// The longest descriptor an import writes (32 dimensions, strided).
pub const HURRAY_INTEROP_MAX_DESCRIPTOR_LEN: usize = 557;
const _: () = assert!(HURRAY_INTEROP_MAX_DESCRIPTOR_LEN == hurray_interop::MAX_DESCRIPTOR_LEN);

/// Export flag: the consumer may write (no `DLPACK_FLAG_BITMASK_READ_ONLY`).
/// Without it, exports are read-only: a hurray buffer is shared.
pub const HURRAY_EXPORT_WRITABLE: u32 = 1;
/// Export flag: a legacy `DLManagedTensor` instead of a
/// `DLManagedTensorVersioned`.
pub const HURRAY_EXPORT_LEGACY: u32 = 2;
/// Import flag: the pointer is a legacy `DLManagedTensor`.
pub const HURRAY_IMPORT_LEGACY: u32 = 1;

/// `hurray_import.kind`: nothing held (released, or never filled).
pub const HURRAY_IMPORT_NONE: u8 = 0;
/// `hurray_import.kind`: a `DLManagedTensorVersioned`.
pub const HURRAY_IMPORT_DLPACK: u8 = 1;
/// `hurray_import.kind`: a legacy `DLManagedTensor`.
pub const HURRAY_IMPORT_DLPACK_LEGACY: u8 = 2;
/// `hurray_import.kind`: an `ArrowDeviceArray` and its `ArrowSchema`.
pub const HURRAY_IMPORT_ARROW: u8 = 3;

/// The tensor cannot be exported: a layout other than row-major,
/// column-major or strided; quantized; a dynamic dimension; for Arrow, rank
/// 0 or strides that are not a permutation of row-major.
pub const HURRAY_E_INTEROP_NOT_EXPORTABLE: hurray_status = -100;
/// No device code on the other side: a private hurray device, or a
/// DLPack/Arrow device hurray has no tag for (VPI, ExtDev, MAIA, Trainium,
/// TPU, …).
pub const HURRAY_E_INTEROP_DEVICE: hurray_status = -101;
/// No data type on the other side (hurray's bit-packed bool, float128,
/// DLPack's byte bool, vector lanes, Arrow's bool/bfloat16/…), or padded
/// sub-byte data.
pub const HURRAY_E_INTEROP_DATA_TYPE: hurray_status = -102;
/// The buffer's sync mode cannot be carried (DLPack: `Event`; Arrow:
/// `ConsumerStream`, or an event that is missing or superfluous).
pub const HURRAY_E_INTEROP_SYNC: hurray_status = -103;
/// A null data pointer with a non-zero extent, or one not aligned as the
/// handle or element type requires.
pub const HURRAY_E_INTEROP_DATA_POINTER: hurray_status = -104;
/// A device id the protocol cannot carry (negative, or beyond `int32_t`).
pub const HURRAY_E_INTEROP_DEVICE_ID: hurray_status = -105;
/// A `DLManagedTensorVersioned` whose major version is not 1.
pub const HURRAY_E_INTEROP_VERSION: hurray_status = -106;
/// Unknown DLPack flag bits.
pub const HURRAY_E_INTEROP_FLAGS: hurray_status = -107;
/// `ndim` negative or above 32.
pub const HURRAY_E_INTEROP_NDIM: hurray_status = -108;
/// A null shape, a negative dimension, or null strides where DLPack ≥ 1.2
/// requires them.
pub const HURRAY_E_INTEROP_SHAPE: hurray_status = -109;
/// Arithmetic overflow: element count, offsets, or the byte range the
/// strides reach.
pub const HURRAY_E_INTEROP_OVERFLOW: hurray_status = -110;
/// The Arrow array or schema was already released.
pub const HURRAY_E_INTEROP_RELEASED: hurray_status = -111;
/// An Arrow schema that is not a fixed-size list of one supported
/// primitive child.
pub const HURRAY_E_INTEROP_ARROW_TYPE: hurray_status = -112;
/// Missing, malformed or inconsistent `arrow.fixed_shape_tensor` metadata.
pub const HURRAY_E_INTEROP_ARROW_METADATA: hurray_status = -113;
/// An Arrow array field out of range (negative length, nulls, buffer or
/// child counts, a child too short).
pub const HURRAY_E_INTEROP_ARROW_ARRAY: hurray_status = -114;
/// The descriptor given to an export is invalid, or the handle an import
/// built was refused.
pub const HURRAY_E_INTEROP_DESCRIPTOR: hurray_status = -115;
/// The caller's descriptor buffer is too small.
pub const HURRAY_E_INTEROP_BUFFER_TOO_SMALL: hurray_status = -116;

/// Called once with the owner's context when hurray no longer needs the
/// exported memory.
pub type hurray_owner_release = Option<unsafe extern "C" fn(ctx: *mut c_void)>;

/// An imported tensor: what the descriptor says in summary, the addresses,
/// and the producer object hurray hands back at `hurray_import_release`.
/// Plain data: copy it freely, release it once.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_import {
    /// Base address of buffer 0 (up to 63 bytes below the first addressed
    /// byte, which are never addressed; see `docs/interop.md`).
    pub base: *mut c_void,
    /// Address of element `[0, …, 0]` (`base + byte_offset`).
    pub first_element: *mut c_void,
    /// The producer's device ordinal.
    pub device_id: i64,
    /// Arrow `sync_event` (null for DLPack and producer-synced data).
    pub sync_event: *mut c_void,
    /// The producer object (`DLManagedTensorVersioned *`,
    /// `DLManagedTensor *` or `ArrowDeviceArray *`).
    pub object: *mut c_void,
    /// The `ArrowSchema *` (null for DLPack).
    pub schema: *mut c_void,
    /// Bytes of the descriptor written to the caller's buffer.
    pub descriptor_len: usize,
    /// `HURRAY_IMPORT_*`.
    pub kind: u8,
    /// 1 if the consumer must not write (DLPack read-only flag; always for
    /// legacy DLPack and Arrow).
    pub read_only: u8,
    /// Element type tag of the descriptor.
    pub type_tag: u8,
    /// Device tag of buffer 0.
    pub device_tag: u8,
    /// Memory class of buffer 0.
    pub memory_class: u8,
    /// Sync mode of buffer 0.
    pub sync_mode: u8,
    /// Number of dimensions.
    pub ndim: u8,
    /// Layout tag of the descriptor.
    pub layout_tag: u8,
}

/// Maps an export error to its status.
const fn export_status(e: ExportError) -> hurray_status {
    use hurray_core::interop::InteropError as I;
    match e {
        ExportError::Mapping(I::NoDataType(_) | I::UnknownDataType { .. })
        | ExportError::NoArrowType(_) => HURRAY_E_INTEROP_DATA_TYPE,
        ExportError::Mapping(_) => HURRAY_E_INTEROP_DEVICE,
        ExportError::Sync(_) => HURRAY_E_INTEROP_SYNC,
        ExportError::NullData | ExportError::MisalignedData { .. } => HURRAY_E_INTEROP_DATA_POINTER,
        ExportError::DeviceId(_) => HURRAY_E_INTEROP_DEVICE_ID,
        ExportError::TooManyDims(_) => HURRAY_E_INTEROP_NDIM,
        ExportError::Overflow { .. } => HURRAY_E_INTEROP_OVERFLOW,
        _ => HURRAY_E_INTEROP_NOT_EXPORTABLE,
    }
}

/// Maps an import error to its status.
const fn import_status(e: ImportError) -> hurray_status {
    match e {
        ImportError::NullTensor => HURRAY_E_NULL,
        ImportError::UnsupportedVersion { .. } => HURRAY_E_INTEROP_VERSION,
        ImportError::UnknownFlags(_) => HURRAY_E_INTEROP_FLAGS,
        ImportError::PaddedSubByte | ImportError::DataType(_) => HURRAY_E_INTEROP_DATA_TYPE,
        ImportError::Ndim(_) => HURRAY_E_INTEROP_NDIM,
        ImportError::NullShape | ImportError::NullStrides | ImportError::NegativeDim { .. } => {
            HURRAY_E_INTEROP_SHAPE
        }
        ImportError::Device(_) => HURRAY_E_INTEROP_DEVICE,
        ImportError::DeviceId(_) => HURRAY_E_INTEROP_DEVICE_ID,
        ImportError::NullData | ImportError::MisalignedData { .. } => HURRAY_E_INTEROP_DATA_POINTER,
        ImportError::Overflow { .. } => HURRAY_E_INTEROP_OVERFLOW,
        ImportError::Released => HURRAY_E_INTEROP_RELEASED,
        ImportError::ArrowType { .. } => HURRAY_E_INTEROP_ARROW_TYPE,
        ImportError::Metadata { .. } => HURRAY_E_INTEROP_ARROW_METADATA,
        ImportError::ArrowArray { .. } => HURRAY_E_INTEROP_ARROW_ARRAY,
        ImportError::BufferTooSmall { .. } => HURRAY_E_INTEROP_BUFFER_TOO_SMALL,
        _ => HURRAY_E_INTEROP_DESCRIPTOR,
    }
}

/// The message of an interchange status, or `None` for another code.
#[must_use]
pub(crate) const fn message(status: hurray_status) -> Option<&'static CStr> {
    Some(match status {
        HURRAY_E_INTEROP_NOT_EXPORTABLE => {
            c"tensor has no DLPack/Arrow form (layout, quantization, dynamic shape, rank or strides)"
        }
        HURRAY_E_INTEROP_DEVICE => c"no interchange device code on the other side",
        HURRAY_E_INTEROP_DATA_TYPE => c"no interchange data type on the other side",
        HURRAY_E_INTEROP_SYNC => c"sync mode cannot be carried by this protocol",
        HURRAY_E_INTEROP_DATA_POINTER => c"data pointer null or misaligned",
        HURRAY_E_INTEROP_DEVICE_ID => c"device id out of range for the protocol",
        HURRAY_E_INTEROP_VERSION => c"DLPack major version is not 1",
        HURRAY_E_INTEROP_FLAGS => c"unknown DLPack flag bits",
        HURRAY_E_INTEROP_NDIM => c"ndim negative or above 32",
        HURRAY_E_INTEROP_SHAPE => c"null shape, negative dimension or missing strides",
        HURRAY_E_INTEROP_OVERFLOW => c"arithmetic overflow in the tensor's extent",
        HURRAY_E_INTEROP_RELEASED => c"Arrow array or schema already released",
        HURRAY_E_INTEROP_ARROW_TYPE => c"Arrow type is not a fixed-size list of a supported value type",
        HURRAY_E_INTEROP_ARROW_METADATA => c"arrow.fixed_shape_tensor metadata missing or invalid",
        HURRAY_E_INTEROP_ARROW_ARRAY => c"Arrow array field out of range",
        HURRAY_E_INTEROP_DESCRIPTOR => c"descriptor invalid for interchange",
        HURRAY_E_INTEROP_BUFFER_TOO_SMALL => c"descriptor buffer too small",
        _ => return None,
    })
}

/// A static message for an interchange status (`HURRAY_E_INTEROP_*`);
/// `"unknown status"` for any other code. Never null.
#[unsafe(no_mangle)]
pub extern "C" fn hurray_interop_status_message(status: hurray_status) -> *const c_char {
    match message(status) {
        Some(m) => m.as_ptr(),
        None => c"unknown status".as_ptr(),
    }
}

/// Runs a body, turning an unwind into `HURRAY_E_PANIC`.
fn guard(body: impl FnOnce() -> hurray_status) -> hurray_status {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(HURRAY_E_PANIC)
}

/// The caller's owner: its release callback runs once, when dropped.
struct CallbackOwner {
    ctx: *mut c_void,
    release: hurray_owner_release,
}

// SAFETY: the C contract (module documentation, `docs/interop.md`) states
// that `owner_release` may be called on any thread; the context pointer is
// never dereferenced by Rust, only handed back to that callback.
unsafe impl Send for CallbackOwner {}

impl Drop for CallbackOwner {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the caller supplied `release` for `ctx` and it is
            // called exactly once: this is the only place, in `drop`.
            unsafe { release(self.ctx) }
        }
    }
}

/// Parses the caller's descriptor.
///
/// # Safety
/// `desc` is null or addresses `len` readable bytes.
unsafe fn descriptor<'a>(desc: *const u8, len: usize) -> Result<TensorView<'a>, hurray_status> {
    if desc.is_null() {
        return Err(HURRAY_E_NULL);
    }
    // SAFETY: non-null, and the contract makes `len` bytes readable.
    let bytes = unsafe { core::slice::from_raw_parts(desc, len) };
    TensorView::parse(bytes).map_err(|_| HURRAY_E_INTEROP_DESCRIPTOR)
}

/// Exports a validated tensor as a DLPack managed tensor, written to `*out`
/// (`DLManagedTensorVersioned *`, or `DLManagedTensor *` with
/// `HURRAY_EXPORT_LEGACY`).
///
/// `desc`/`len` is a hurray descriptor (row-major, column-major or strided;
/// copied: it need not outlive the call); `data` is the base address of its
/// buffer 0; `device_id` the device ordinal. The consumer calls the managed
/// tensor's deleter once, which calls `owner_release(owner_ctx)` once.
/// Without `HURRAY_EXPORT_WRITABLE` the export is read-only.
///
/// # Safety
/// `desc` is null or addresses `len` readable bytes; `out` is null or
/// writable; `owner_release` is null or may be called once with
/// `owner_ctx`, from any thread.
///
/// # Errors
/// `HURRAY_E_NULL`, `HURRAY_E_INTEROP_*`; `owner_release` has then run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_dlpack_export(
    desc: *const u8,
    len: usize,
    data: *mut c_void,
    device_id: i64,
    flags: u32,
    owner_ctx: *mut c_void,
    owner_release: hurray_owner_release,
    out: *mut *mut c_void,
) -> hurray_status {
    guard(|| {
        let owner = CallbackOwner {
            ctx: owner_ctx,
            release: owner_release,
        };
        if out.is_null() {
            return HURRAY_E_NULL;
        }
        // SAFETY: forwarded contract.
        let view = match unsafe { descriptor(desc, len) } {
            Ok(v) => v,
            Err(s) => return s,
        };
        let opts = ExportOptions {
            device_id,
            access: if flags & HURRAY_EXPORT_WRITABLE != 0 {
                Access::ReadWrite
            } else {
                Access::ReadOnly
            },
            private_devices: &[],
        };
        let managed: *mut c_void = if flags & HURRAY_EXPORT_LEGACY != 0 {
            match dlpack::export_legacy(&view, data, owner, &opts) {
                Ok(m) => m.into_raw().cast(),
                Err(e) => return export_status(e),
            }
        } else {
            match dlpack::export_versioned(&view, data, owner, &opts) {
                Ok(m) => m.into_raw().cast(),
                Err(e) => return export_status(e),
            }
        };
        // SAFETY: `out` is non-null and writable (the contract).
        unsafe { out.write(managed) };
        HURRAY_OK
    })
}

/// Fills the caller's `hurray_import` from an import and keeps the guard
/// in it.
///
/// # Safety
/// `out` is non-null and writable.
unsafe fn fill(imported: Imported<'_>, out: *mut hurray_import) {
    let view = *imported.view();
    let h = view.buffers().get(0);
    let record = hurray_import {
        base: imported.base(),
        first_element: imported.first_element(),
        device_id: imported.device_id(),
        sync_event: imported.sync_event(),
        object: ptr::null_mut(),
        schema: ptr::null_mut(),
        descriptor_len: view.as_bytes().len(),
        kind: HURRAY_IMPORT_NONE,
        read_only: u8::from(imported.is_read_only()),
        type_tag: view.element_type().code(),
        device_tag: h.map_or(0, |h| h.device_tag().code()),
        memory_class: h.map_or(0, |h| h.memory_class().code()),
        sync_mode: h.map_or(0, |h| h.sync_mode().code()),
        ndim: u8::try_from(view.rank()).unwrap_or(u8::MAX),
        layout_tag: view.layout().tag(),
    };
    let (kind, object, schema) = imported.into_guard().into_raw();
    let record = hurray_import {
        kind: kind as u8,
        object,
        schema,
        ..record
    };
    // SAFETY: the contract: `out` is non-null and writable.
    unsafe { out.write(record) };
}

/// Imports a DLPack managed tensor (`DLManagedTensorVersioned *`, or
/// `DLManagedTensor *` with `HURRAY_IMPORT_LEGACY`): writes its descriptor
/// into `desc_out` (at most `HURRAY_INTEROP_MAX_DESCRIPTOR_LEN` bytes) and
/// the state into `*out`. `device_sync` is the `HURRAY_SYNC_*` code to
/// declare for non-CPU memory (what the caller arranged with the producer;
/// CPU memory is always producer-synced). Allocates nothing.
///
/// # Safety
/// `managed` is null or a managed tensor the caller owns whose deleter is
/// null or callable once; for major version 1 and `0 < ndim <= 32`, `shape`
/// and `strides` are null or address `ndim` `int64_t`s. `desc_out` is null
/// or addresses `desc_cap` writable bytes that stay valid while the
/// descriptor is used; `out` is null or writable.
///
/// # Errors
/// `HURRAY_E_NULL`, `HURRAY_E_INTEROP_*`: the deleter has run (unless
/// `managed` was null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_dlpack_import(
    managed: *mut c_void,
    flags: u32,
    device_sync: u8,
    desc_out: *mut u8,
    desc_cap: usize,
    out: *mut hurray_import,
) -> hurray_status {
    guard(|| {
        let legacy = flags & HURRAY_IMPORT_LEGACY != 0;
        // SAFETY: the contract: we own `managed` and its deleter.
        let early = unsafe {
            ProducerGuard::new(
                if legacy {
                    ProducerKind::DlpackLegacy
                } else {
                    ProducerKind::DlpackVersioned
                },
                managed,
                ptr::null_mut(),
            )
        };
        if desc_out.is_null() || out.is_null() || managed.is_null() {
            return HURRAY_E_NULL; // `early` runs the deleter
        }
        let Some(device_sync) = SyncMode::from_code(device_sync) else {
            return HURRAY_E_INTEROP_SYNC;
        };
        // The import takes over from here (success or error).
        let _ = early.into_raw();
        // SAFETY: non-null, `desc_cap` writable bytes (the contract).
        let buf = unsafe { core::slice::from_raw_parts_mut(desc_out, desc_cap) };
        let opts = ImportOptions {
            device_sync,
            private_devices: &[],
        };
        // SAFETY: forwarded contract.
        let result = unsafe {
            if legacy {
                dlpack::import_legacy(managed.cast::<DLManagedTensor>(), buf, &opts)
            } else {
                dlpack::import_versioned(managed.cast::<DLManagedTensorVersioned>(), buf, &opts)
            }
        };
        match result {
            // SAFETY: `out` is non-null and writable.
            Ok(imported) => unsafe {
                fill(imported, out);
                HURRAY_OK
            },
            Err(e) => import_status(e),
        }
    })
}

/// Exports a validated tensor as an Arrow `arrow.fixed_shape_tensor`
/// device array: fills `*out_array` (`struct ArrowDeviceArray`) and
/// `*out_schema` (`struct ArrowSchema`). `sync_event` must be null for a
/// producer-synced buffer and the event for an `Event` one. Each struct's
/// release callback must be called once; the owner is released when both
/// the array and its child are.
///
/// # Safety
/// As `hurray_dlpack_export`; `out_array` and `out_schema` are null or
/// writable structs of their types.
///
/// # Errors
/// `HURRAY_E_NULL`, `HURRAY_E_INTEROP_*`; `owner_release` has then run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_arrow_export(
    desc: *const u8,
    len: usize,
    data: *mut c_void,
    device_id: i64,
    sync_event: *mut c_void,
    owner_ctx: *mut c_void,
    owner_release: hurray_owner_release,
    out_array: *mut c_void,
    out_schema: *mut c_void,
) -> hurray_status {
    guard(|| {
        let owner = CallbackOwner {
            ctx: owner_ctx,
            release: owner_release,
        };
        if out_array.is_null() || out_schema.is_null() {
            return HURRAY_E_NULL;
        }
        // SAFETY: forwarded contract.
        let view = match unsafe { descriptor(desc, len) } {
            Ok(v) => v,
            Err(s) => return s,
        };
        let opts = arrow::ArrowExportOptions {
            device_id,
            sync_event,
            private_devices: &[],
        };
        match arrow::export_arrow(&view, data, owner, &opts) {
            Ok(exported) => {
                let (array, schema) = exported.into_parts();
                // SAFETY: both outputs are non-null, writable structs of
                // these types (the contract); ownership passes to the caller.
                unsafe {
                    out_array.cast::<ArrowDeviceArray>().write(array);
                    out_schema.cast::<ArrowSchema>().write(schema);
                }
                HURRAY_OK
            }
            Err(e) => export_status(e),
        }
    })
}

/// Imports an Arrow `arrow.fixed_shape_tensor` device array
/// (`struct ArrowDeviceArray *`, `struct ArrowSchema *`, which stay where
/// they are until `hurray_import_release`): writes its descriptor into
/// `desc_out` and the state into `*out`. Allocates nothing.
///
/// # Safety
/// `array`/`schema` are null or structs the caller owns, valid as the Arrow
/// C data interface defines them (strings NUL-terminated, metadata
/// well-formed, buffer and child arrays as long as their counts); the rest
/// as `hurray_dlpack_import`.
///
/// # Errors
/// `HURRAY_E_NULL`, `HURRAY_E_INTEROP_*`: both release callbacks have run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_arrow_import(
    array: *mut c_void,
    schema: *mut c_void,
    desc_out: *mut u8,
    desc_cap: usize,
    out: *mut hurray_import,
) -> hurray_status {
    guard(|| {
        // SAFETY: the contract: we own both structs and their callbacks.
        let early = unsafe { ProducerGuard::new(ProducerKind::Arrow, array, schema) };
        if desc_out.is_null() || out.is_null() {
            return HURRAY_E_NULL; // `early` releases both
        }
        let _ = early.into_raw();
        // SAFETY: non-null, `desc_cap` writable bytes (the contract).
        let buf = unsafe { core::slice::from_raw_parts_mut(desc_out, desc_cap) };
        // SAFETY: forwarded contract.
        let result = unsafe {
            arrow::import_arrow(
                array.cast::<ArrowDeviceArray>(),
                schema.cast::<ArrowSchema>(),
                buf,
                &ImportOptions::DEFAULT,
            )
        };
        match result {
            // SAFETY: `out` is non-null and writable.
            Ok(imported) => unsafe {
                fill(imported, out);
                HURRAY_OK
            },
            Err(e) => import_status(e),
        }
    })
}

/// Hands an imported tensor back to its producer: calls the DLPack deleter
/// or both Arrow release callbacks, once, and marks `*imp` released
/// (`kind = HURRAY_IMPORT_NONE`). A second call, or a null `imp`, does
/// nothing. Do not use the addresses or the descriptor's memory claims
/// afterwards.
///
/// # Safety
/// `imp` is null or a `hurray_import` filled by an import of this library
/// (or released); copies of it must not be released as well.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_import_release(imp: *mut hurray_import) {
    if imp.is_null() {
        return;
    }
    let _ = guard(|| {
        // SAFETY: non-null; the contract says it is a record we filled.
        let record = unsafe { &mut *imp };
        let kind = match record.kind {
            HURRAY_IMPORT_DLPACK => ProducerKind::DlpackVersioned,
            HURRAY_IMPORT_DLPACK_LEGACY => ProducerKind::DlpackLegacy,
            HURRAY_IMPORT_ARROW => ProducerKind::Arrow,
            _ => return HURRAY_OK,
        };
        let (object, schema) = (record.object, record.schema);
        record.kind = HURRAY_IMPORT_NONE;
        record.object = ptr::null_mut();
        record.schema = ptr::null_mut();
        // SAFETY: the record held the only ownership of these objects (an
        // import moved it there); it has been cleared above, so this guard
        // is the last owner and releases them once.
        drop(unsafe { ProducerGuard::new(kind, object, schema) });
        HURRAY_OK
    });
}

/// Describes a strided tensor whose element `[0, …, 0]` is at
/// `first_element`: writes the descriptor into `desc_out`, its length to
/// `*desc_len` and the base address of buffer 0 to `*base` (the address to
/// pass to an export). `strides` (in elements) may be null for compact
/// row-major. Nothing is dereferenced or allocated.
///
/// # Safety
/// `shape` (and `strides` unless null) address `ndim` `int64_t`s when
/// `ndim > 0`; `desc_out` addresses `desc_cap` writable bytes; `desc_len`
/// and `base` are null or writable.
///
/// # Errors
/// `HURRAY_E_NULL`; `HURRAY_E_INTEROP_DATA_TYPE` (unknown type tag),
/// `HURRAY_E_INTEROP_DEVICE` (unknown device or class code),
/// `HURRAY_E_INTEROP_SYNC` (unknown sync code); as an import otherwise.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hurray_describe_strided(
    type_tag: u8,
    ndim: usize,
    shape: *const i64,
    strides: *const i64,
    first_element: *const c_void,
    device_tag: u8,
    memory_class: u8,
    sync_mode: u8,
    desc_out: *mut u8,
    desc_cap: usize,
    desc_len: *mut usize,
    base: *mut *mut c_void,
) -> hurray_status {
    guard(|| {
        if desc_out.is_null()
            || desc_len.is_null()
            || base.is_null()
            || (ndim > 0 && shape.is_null())
        {
            return HURRAY_E_NULL;
        }
        if ndim > hurray_interop::MAX_NDIM {
            return HURRAY_E_INTEROP_NDIM;
        }
        let Some(element_type) = hurray_core::ElementType::from_code(type_tag) else {
            return HURRAY_E_INTEROP_DATA_TYPE;
        };
        let (Some(tag), Some(class)) = (
            hurray_core::DeviceTag::from_code(device_tag),
            hurray_core::MemoryClass::from_code(memory_class),
        ) else {
            return HURRAY_E_INTEROP_DEVICE;
        };
        let Some(sync) = SyncMode::from_code(sync_mode) else {
            return HURRAY_E_INTEROP_SYNC;
        };
        let mut dims = [0u64; hurray_interop::MAX_NDIM];
        let mut steps = [0i64; hurray_interop::MAX_NDIM];
        if ndim > 0 {
            // SAFETY: the contract: `ndim` (<= 32, checked) readable int64s.
            let s = unsafe { core::slice::from_raw_parts(shape, ndim) };
            for (slot, &n) in dims.iter_mut().zip(s) {
                let Ok(n) = u64::try_from(n) else {
                    return HURRAY_E_INTEROP_SHAPE;
                };
                *slot = n;
            }
            if !strides.is_null() {
                // SAFETY: as for `shape`.
                let s = unsafe { core::slice::from_raw_parts(strides, ndim) };
                for (slot, &v) in steps.iter_mut().zip(s) {
                    *slot = v;
                }
            }
        }
        // SAFETY: non-null, `desc_cap` writable bytes (the contract).
        let buf = unsafe { core::slice::from_raw_parts_mut(desc_out, desc_cap) };
        let result = hurray_interop::describe_strided(
            element_type,
            dims.get(..ndim).unwrap_or_default(),
            (!strides.is_null()).then(|| steps.get(..ndim).unwrap_or_default()),
            first_element as usize,
            tag,
            class,
            sync,
            buf,
        );
        match result {
            Ok((view, address)) => {
                // Buffer 0's base keeps the caller pointer's provenance.
                let front = (first_element as usize).wrapping_sub(address);
                let b = first_element.cast_mut().wrapping_byte_sub(front);
                // SAFETY: both outputs are non-null and writable.
                unsafe {
                    desc_len.write(view.as_bytes().len());
                    base.write(b);
                }
                HURRAY_OK
            }
            Err(e) => import_status(e),
        }
    })
}
