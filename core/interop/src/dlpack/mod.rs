//! DLPack 1.x: export a validated hurray tensor as a
//! `DLManagedTensorVersioned` (or a legacy `DLManagedTensor`), import
//! either form as a hurray descriptor.
//!
//! # Contract
//!
//! * **Export** ([`export_versioned`], [`export_legacy`]) refuses, with an
//!   [`ExportError`], every tensor DLPack cannot describe faithfully; on
//!   success the managed tensor has `version` = 1.1, strides always filled
//!   (DLPack 1.2 requires them for `ndim > 0`), hurray's `byte_offset`,
//!   the device from the (device tag, memory class) table, and a deleter
//!   that drops the owner exactly once. Nothing is dereferenced.
//! * **Read-only rule.** A hurray buffer handed over with its descriptor is
//!   *shared*: the zero-copy rule of the buffer protocol lets a consumer
//!   read it and write only what the producer grants exclusively. Exports
//!   therefore set `DLPACK_FLAG_BITMASK_READ_ONLY` unless the caller passes
//!   [`Access::ReadWrite`], asserting that no one else reads the buffer
//!   while the consumer holds it. `IS_COPIED` is never set: nothing is
//!   copied.
//! * **Import** ([`import_versioned`], [`import_legacy`]) takes ownership of
//!   the managed tensor in every case: on error the producer's deleter has
//!   been called before the error is returned; on success it is called
//!   when the [`Imported`] (or its guard) is dropped. Every malformed field
//!   is an [`ImportError`]; the import never panics, never reads past
//!   `ndim` entries of `shape`/`strides`, and reads nothing but `version`
//!   and `deleter` of a managed tensor whose major version is not 1.

pub mod ffi;

use core::ffi::c_void;
use core::ptr::{self, NonNull};

use hurray_core::interop;
use hurray_core::{DeviceTag, Layout, SyncMode, TensorView};

use crate::describe::{self, MAX_NDIM, PrivateDevice, RawTensor};
use crate::error::{ExportError, ImportError};
use crate::imported::{ImportOptions, Imported, ProducerGuard, ProducerKind};
use ffi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};

/// Whether a consumer may write the exported buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Access {
    /// Shared: the consumer only reads (`DLPACK_FLAG_BITMASK_READ_ONLY`).
    #[default]
    ReadOnly,
    /// Exclusive: the producer grants writes (no flag).
    ReadWrite,
}

/// What an export needs besides the descriptor, the address and the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExportOptions<'a> {
    /// The device ordinal (0 for host memory).
    pub device_id: i64,
    /// Read-only (default) or writable.
    pub access: Access,
    /// Private hurray device tags the caller maps to interchange codes.
    pub private_devices: &'a [PrivateDevice],
}

/// The fields of a `DLTensor` for one export, computed before anything is
/// allocated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) ndim: usize,
    pub(crate) dtype: DLDataType,
    pub(crate) device_type: i32,
    pub(crate) byte_offset: u64,
    pub(crate) data: *mut c_void,
    pub(crate) sync_mode: SyncMode,
}

/// Checks a view against what the interchange protocols can express and
/// computes the tensor's fields (shared with the Arrow export).
pub(crate) fn plan(
    view: &TensorView<'_>,
    data: *mut c_void,
    private: &[PrivateDevice],
) -> Result<Plan, ExportError> {
    let layout = view.layout();
    if !matches!(
        layout,
        Layout::RowMajor | Layout::ColumnMajor | Layout::Strided(_)
    ) {
        return Err(ExportError::UnsupportedLayout(layout.tag()));
    }
    if view.quantization().is_some() {
        return Err(ExportError::Quantized);
    }
    if view.is_dynamic() {
        return Err(ExportError::DynamicShape);
    }
    let rank = view.rank();
    let ndim = usize::try_from(rank).unwrap_or(usize::MAX);
    if ndim > MAX_NDIM {
        return Err(ExportError::TooManyDims(rank));
    }
    let element_type = view.element_type();
    let (code, bits, lanes) = interop::to_dlpack_dtype(element_type)?;
    // A dense layout always has its data buffer (the parser checked the
    // count); a missing one is reported as the layout it came with.
    let buffer = view
        .buffers()
        .get(0)
        .ok_or(ExportError::UnsupportedLayout(layout.tag()))?;
    let device_type =
        describe::device_to_code(buffer.device_tag(), buffer.memory_class(), private)?;
    if buffer.byte_size() > 0 {
        if data.is_null() {
            return Err(ExportError::NullData);
        }
        let address = data as usize;
        if !address.is_multiple_of(buffer.alignment() as usize) {
            return Err(ExportError::MisalignedData {
                address,
                alignment: buffer.alignment(),
            });
        }
    }
    Ok(Plan {
        ndim,
        dtype: DLDataType { code, bits, lanes },
        device_type,
        byte_offset: view.byte_offset(),
        data,
        sync_mode: buffer.sync_mode(),
    })
}

/// Writes the view's shape and strides (in elements) as `i64`s; the plan
/// has checked the rank, so both fit.
pub(crate) fn fill_dims(
    view: &TensorView<'_>,
    shape: &mut [i64; MAX_NDIM],
    strides: &mut [i64; MAX_NDIM],
) -> Result<(), ExportError> {
    for (slot, n) in shape.iter_mut().zip(view.shape().iter()) {
        *slot = i64::try_from(n).map_err(|_| ExportError::Overflow {
            what: "a dimension",
        })?;
    }
    view.strides(strides)
        .ok_or(ExportError::Overflow { what: "a stride" })?;
    Ok(())
}

fn dlpack_plan(
    view: &TensorView<'_>,
    data: *mut c_void,
    opts: &ExportOptions<'_>,
) -> Result<(Plan, i32), ExportError> {
    let plan = plan(view, data, opts.private_devices)?;
    if plan.sync_mode == SyncMode::Event {
        return Err(ExportError::Sync(SyncMode::Event));
    }
    let device_id = i32::try_from(opts.device_id)
        .ok()
        .filter(|id| *id >= 0)
        .ok_or(ExportError::DeviceId(opts.device_id))?;
    Ok((plan, device_id))
}

/// The boxed storage behind one versioned export: the managed tensor first
/// (so a pointer to it is a pointer to the box), then the arrays its
/// `shape`/`strides` point into, then the owner.
#[repr(C)]
struct VersionedBox<O> {
    managed: DLManagedTensorVersioned,
    shape: [i64; MAX_NDIM],
    strides: [i64; MAX_NDIM],
    owner: O,
}

/// As [`VersionedBox`], for the legacy form.
#[repr(C)]
struct LegacyBox<O> {
    managed: DLManagedTensor,
    shape: [i64; MAX_NDIM],
    strides: [i64; MAX_NDIM],
    owner: O,
}

/// The deleter of every versioned export: frees the box, dropping the
/// owner. Null is ignored.
///
/// # Safety
/// `managed` is null or a pointer this module returned from
/// [`export_versioned`] with the same `O`, not yet deleted.
unsafe extern "C" fn delete_versioned<O>(managed: *mut DLManagedTensorVersioned) {
    if !managed.is_null() {
        // SAFETY: by the contract, `managed` came from `Box::into_raw` of a
        // `VersionedBox<O>` whose first field (offset 0, `repr(C)`) it
        // points to, with the whole box's provenance; it is freed once.
        drop(unsafe { Box::from_raw(managed.cast::<VersionedBox<O>>()) });
    }
}

/// The deleter of every legacy export.
///
/// # Safety
/// As [`delete_versioned`], for [`export_legacy`].
unsafe extern "C" fn delete_legacy<O>(managed: *mut DLManagedTensor) {
    if !managed.is_null() {
        // SAFETY: as in `delete_versioned`, for a `LegacyBox<O>`.
        drop(unsafe { Box::from_raw(managed.cast::<LegacyBox<O>>()) });
    }
}

fn dl_tensor(plan: &Plan, device_id: i32) -> DLTensor {
    DLTensor {
        data: plan.data,
        device: DLDevice {
            device_type: plan.device_type,
            device_id,
        },
        // ndim <= MAX_NDIM (32), checked by `plan`.
        ndim: i32::try_from(plan.ndim).unwrap_or(0),
        dtype: plan.dtype,
        shape: ptr::null_mut(),
        strides: ptr::null_mut(),
        byte_offset: plan.byte_offset,
    }
}

/// An exported `DLManagedTensorVersioned`, owned until handed to a consumer
/// with [`into_raw`](Self::into_raw); dropping it calls its deleter.
#[derive(Debug)]
pub struct ManagedVersioned(NonNull<DLManagedTensorVersioned>);

impl ManagedVersioned {
    /// The managed tensor, still owned by this value.
    #[must_use]
    pub const fn as_ptr(&self) -> *mut DLManagedTensorVersioned {
        self.0.as_ptr()
    }

    /// Hands the managed tensor over: the receiver must call its deleter
    /// exactly once.
    #[must_use]
    pub fn into_raw(self) -> *mut DLManagedTensorVersioned {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        p
    }
}

impl Drop for ManagedVersioned {
    fn drop(&mut self) {
        let p = self.0.as_ptr();
        // SAFETY: `p` is an unconsumed export of this module (this value
        // owns it); its deleter is ours and frees it exactly once here.
        unsafe {
            if let Some(deleter) = (*p).deleter {
                deleter(p);
            }
        }
    }
}

/// An exported legacy `DLManagedTensor`; see [`ManagedVersioned`].
#[derive(Debug)]
pub struct ManagedLegacy(NonNull<DLManagedTensor>);

impl ManagedLegacy {
    /// The managed tensor, still owned by this value.
    #[must_use]
    pub const fn as_ptr(&self) -> *mut DLManagedTensor {
        self.0.as_ptr()
    }

    /// Hands the managed tensor over: the receiver must call its deleter
    /// exactly once.
    #[must_use]
    pub fn into_raw(self) -> *mut DLManagedTensor {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        p
    }
}

impl Drop for ManagedLegacy {
    fn drop(&mut self) {
        let p = self.0.as_ptr();
        // SAFETY: as for `ManagedVersioned`.
        unsafe {
            if let Some(deleter) = (*p).deleter {
                deleter(p);
            }
        }
    }
}

/// Exports a validated tensor as a `DLManagedTensorVersioned` (DLPack 1.1).
///
/// `data` is the base address of the descriptor's buffer 0 (the element
/// `[0, …, 0]` is at `data + byte_offset`, which DLPack carries as is);
/// `owner` keeps that memory alive and is dropped exactly once, by the
/// deleter. Nothing is dereferenced here: the consumer will, so `data` must
/// address the memory the descriptor describes for as long as `owner`
/// lives.
///
/// # Errors
/// [`ExportError`]: a layout other than row-major, column-major or strided;
/// quantized; dynamic; more than 32 dimensions; a type or device with no
/// DLPack code; an `Event` buffer (wait for the event first); a null or
/// misaligned `data` for a non-empty buffer; a device id outside `int32_t`.
/// On error `owner` is dropped.
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
/// use hurray_interop::dlpack::{export_versioned, ExportOptions};
///
/// #[repr(align(64))]
/// struct Block([f32; 16]);
/// let data = Box::new(Block([1.0; 16]));
/// let handles = [BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut bytes = [0u8; 128];
/// let n = TensorDescriptor::row_major(ElementType::Float32, &[4, 4], &handles).encode(&mut bytes)?;
/// let view = TensorView::parse(&bytes[..n])?;
/// let ptr = data.0.as_ptr().cast_mut().cast();
/// let managed = export_versioned(&view, ptr, data, &ExportOptions::default())?;
/// // SAFETY (of the read): the managed tensor is ours until dropped.
/// let t = unsafe { &(*managed.as_ptr()).dl_tensor };
/// assert_eq!(t.ndim, 2);
/// drop(managed); // the deleter drops the Box
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export_versioned<O: Send + 'static>(
    view: &TensorView<'_>,
    data: *mut c_void,
    owner: O,
    opts: &ExportOptions<'_>,
) -> Result<ManagedVersioned, ExportError> {
    let (plan, device_id) = dlpack_plan(view, data, opts)?;
    let flags = match opts.access {
        Access::ReadOnly => ffi::DLPACK_FLAG_BITMASK_READ_ONLY,
        Access::ReadWrite => 0,
    };
    let raw = Box::into_raw(Box::new(VersionedBox {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion {
                major: ffi::DLPACK_MAJOR_VERSION,
                minor: ffi::DLPACK_MINOR_VERSION,
            },
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_versioned::<O>),
            flags,
            dl_tensor: dl_tensor(&plan, device_id),
        },
        shape: [0; MAX_NDIM],
        strides: [0; MAX_NDIM],
        owner,
    }));
    // SAFETY: `raw` is the live, uniquely owned box just leaked; the arrays
    // are filled in place, and on error the box is reclaimed once (dropping
    // the owner, as documented).
    if let Err(e) = unsafe { fill_dims(view, &mut (*raw).shape, &mut (*raw).strides) } {
        // SAFETY: as above; nothing else refers to the box yet.
        drop(unsafe { Box::from_raw(raw) });
        return Err(e);
    }
    // SAFETY: `raw` is the live, uniquely owned box just leaked; every
    // pointer below is derived from it, so the managed tensor's `shape`,
    // `strides` and `manager_ctx` point into the same allocation.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        (*raw).managed.dl_tensor.shape = ptr::addr_of_mut!((*raw).shape).cast();
        (*raw).managed.dl_tensor.strides = ptr::addr_of_mut!((*raw).strides).cast();
    }
    // `raw` came from `Box::into_raw`, which never returns null.
    NonNull::new(raw.cast::<DLManagedTensorVersioned>())
        .map(ManagedVersioned)
        .ok_or(ExportError::NullData)
}

/// Exports a validated tensor as a legacy `DLManagedTensor`, for consumers
/// that only speak DLPack 0.x (`__dlpack__` without `max_version`). The
/// legacy form has no flags: a consumer may write through it, so export
/// writable tensors only this way, or trust the consumer.
///
/// # Errors
/// As [`export_versioned`].
pub fn export_legacy<O: Send + 'static>(
    view: &TensorView<'_>,
    data: *mut c_void,
    owner: O,
    opts: &ExportOptions<'_>,
) -> Result<ManagedLegacy, ExportError> {
    let (plan, device_id) = dlpack_plan(view, data, opts)?;
    let raw = Box::into_raw(Box::new(LegacyBox {
        managed: DLManagedTensor {
            dl_tensor: dl_tensor(&plan, device_id),
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_legacy::<O>),
        },
        shape: [0; MAX_NDIM],
        strides: [0; MAX_NDIM],
        owner,
    }));
    // SAFETY: as in `export_versioned`.
    if let Err(e) = unsafe { fill_dims(view, &mut (*raw).shape, &mut (*raw).strides) } {
        // SAFETY: as in `export_versioned`.
        drop(unsafe { Box::from_raw(raw) });
        return Err(e);
    }
    // SAFETY: as in `export_versioned`.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        (*raw).managed.dl_tensor.shape = ptr::addr_of_mut!((*raw).shape).cast();
        (*raw).managed.dl_tensor.strides = ptr::addr_of_mut!((*raw).strides).cast();
    }
    NonNull::new(raw.cast::<DLManagedTensor>())
        .map(ManagedLegacy)
        .ok_or(ExportError::NullData)
}

/// Validates a `DLTensor` and describes it.
///
/// # Safety
/// If `0 < t.ndim <= 32`, `t.shape` and `t.strides` are each null or
/// address `t.ndim` readable `i64`s.
unsafe fn import_tensor<'d>(
    t: &DLTensor,
    strides_required: bool,
    padded: bool,
    out: &'d mut [u8],
    opts: &ImportOptions<'_>,
) -> Result<(describe::Described<'d>, i64), ImportError> {
    let ndim = usize::try_from(t.ndim)
        .ok()
        .filter(|n| *n <= MAX_NDIM)
        .ok_or(ImportError::Ndim(i64::from(t.ndim)))?;
    let DLDataType { code, bits, lanes } = t.dtype;
    let element_type =
        interop::from_dlpack_dtype(code, bits, lanes).map_err(ImportError::DataType)?;
    if padded && element_type.is_sub_byte() {
        return Err(ImportError::PaddedSubByte);
    }
    let (device_tag, memory_class) =
        describe::device_from_code(t.device.device_type, opts.private_devices)
            .map_err(ImportError::Device)?;
    if t.device.device_id < 0 {
        return Err(ImportError::DeviceId(i64::from(t.device.device_id)));
    }
    let mut shape = [0u64; MAX_NDIM];
    let mut strides = [0i64; MAX_NDIM];
    let has_strides = !t.strides.is_null();
    if ndim > 0 {
        if t.shape.is_null() {
            return Err(ImportError::NullShape);
        }
        if !has_strides && strides_required {
            return Err(ImportError::NullStrides);
        }
        // SAFETY: the contract: `t.shape` addresses `ndim` (<= 32, checked
        // above) readable i64s, and is not null (checked above).
        let dims = unsafe { core::slice::from_raw_parts(t.shape, ndim) };
        for (axis, (slot, &n)) in shape.iter_mut().zip(dims).enumerate() {
            *slot = u64::try_from(n).map_err(|_| ImportError::NegativeDim {
                // axis < 32
                axis: u32::try_from(axis).unwrap_or(u32::MAX),
                value: n,
            })?;
        }
        if has_strides {
            // SAFETY: as for `shape`: non-null, `ndim` readable i64s.
            let s = unsafe { core::slice::from_raw_parts(t.strides, ndim) };
            for (slot, &v) in strides.iter_mut().zip(s) {
                *slot = v;
            }
        }
    }
    let shape = shape.get(..ndim).unwrap_or_default();
    let count = shape
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .ok_or(ImportError::Overflow {
            what: "element count",
        })?;
    if t.data.is_null() && count > 0 {
        return Err(ImportError::NullData);
    }
    let address = (t.data as usize)
        .checked_add(
            usize::try_from(t.byte_offset).map_err(|_| ImportError::Overflow {
                what: "byte_offset",
            })?,
        )
        .ok_or(ImportError::Overflow {
            what: "data + byte_offset",
        })?;
    let sync_mode = if device_tag == DeviceTag::Cpu {
        SyncMode::ProducerSynced
    } else {
        opts.device_sync
    };
    let raw = RawTensor {
        element_type,
        shape,
        strides: has_strides.then(|| strides.get(..ndim).unwrap_or_default()),
        address,
        device_tag,
        memory_class,
        sync_mode,
    };
    let described = describe::describe(&raw, out)?;
    Ok((described, i64::from(t.device.device_id)))
}

/// The base pointer of buffer 0, derived from the producer's data pointer
/// (keeping its provenance): `data + byte_offset - front`.
fn base_pointer(t: &DLTensor, front: usize) -> *mut c_void {
    t.data
        .wrapping_byte_add(usize::try_from(t.byte_offset).unwrap_or(0))
        .wrapping_byte_sub(front)
}

/// Imports a `DLManagedTensorVersioned`: writes its descriptor into `out`
/// ([`MAX_DESCRIPTOR_LEN`](crate::MAX_DESCRIPTOR_LEN) bytes always suffice)
/// and returns it with the data address and a guard over the deleter.
///
/// # Safety
/// `managed` is null, or points to a managed tensor the caller owns (took
/// from its producer; nobody else will call its deleter) whose deleter is
/// null or may be called once with it, and which stays valid until then.
/// If its major version is 1 and `0 < ndim <= 32`, `shape` and `strides`
/// are each null or address `ndim` readable `i64`s. Field *values* may be
/// anything.
///
/// # Errors
/// [`ImportError`] for every malformed value; the deleter has been called.
pub unsafe fn import_versioned<'d>(
    managed: *mut DLManagedTensorVersioned,
    out: &'d mut [u8],
    opts: &ImportOptions<'_>,
) -> Result<Imported<'d>, ImportError> {
    if managed.is_null() {
        return Err(ImportError::NullTensor);
    }
    // SAFETY: the contract hands us ownership of `managed` and its deleter.
    let guard = unsafe {
        ProducerGuard::new(
            ProducerKind::DlpackVersioned,
            managed.cast(),
            ptr::null_mut(),
        )
    };
    // SAFETY: `managed` is non-null and valid; `version` is at offset 0 in
    // every DLPack version, the only field besides `deleter` that may be
    // read before the major version is known.
    let version = unsafe { ptr::addr_of!((*managed).version).read() };
    if version.major != ffi::DLPACK_MAJOR_VERSION {
        return Err(ImportError::UnsupportedVersion {
            major: version.major,
            minor: version.minor,
        });
    }
    // SAFETY: major version 1: the whole struct has the 1.x layout.
    let (flags, t) = unsafe {
        (
            ptr::addr_of!((*managed).flags).read(),
            ptr::addr_of!((*managed).dl_tensor).read(),
        )
    };
    if flags & !ffi::DLPACK_FLAGS_DEFINED != 0 {
        return Err(ImportError::UnknownFlags(
            flags & !ffi::DLPACK_FLAGS_DEFINED,
        ));
    }
    let padded = flags & ffi::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0;
    // SAFETY: the contract covers `shape`/`strides` for ndim <= 32.
    let (d, device_id) = unsafe { import_tensor(&t, version.minor >= 2, padded, out, opts)? };
    Ok(Imported {
        base: base_pointer(&t, d.front),
        view: d.view,
        device_id,
        read_only: flags & ffi::DLPACK_FLAG_BITMASK_READ_ONLY != 0,
        sync_event: ptr::null_mut(),
        guard,
    })
}

/// Imports a legacy `DLManagedTensor` (DLPack 0.x; null strides mean
/// compact row-major). It carries no read-only flag: the import reports
/// it read-only, hurray's rule for shared buffers.
///
/// # Safety
/// As [`import_versioned`] (there is no version field).
///
/// # Errors
/// As [`import_versioned`].
pub unsafe fn import_legacy<'d>(
    managed: *mut DLManagedTensor,
    out: &'d mut [u8],
    opts: &ImportOptions<'_>,
) -> Result<Imported<'d>, ImportError> {
    if managed.is_null() {
        return Err(ImportError::NullTensor);
    }
    // SAFETY: the contract hands us ownership of `managed` and its deleter.
    let guard =
        unsafe { ProducerGuard::new(ProducerKind::DlpackLegacy, managed.cast(), ptr::null_mut()) };
    // SAFETY: `managed` is non-null and points to a legacy managed tensor.
    let t = unsafe { ptr::addr_of!((*managed).dl_tensor).read() };
    // SAFETY: the contract covers `shape`/`strides` for ndim <= 32.
    let (d, device_id) = unsafe { import_tensor(&t, false, false, out, opts)? };
    Ok(Imported {
        base: base_pointer(&t, d.front),
        view: d.view,
        device_id,
        read_only: true,
        sync_event: ptr::null_mut(),
        guard,
    })
}
