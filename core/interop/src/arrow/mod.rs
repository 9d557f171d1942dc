//! The Arrow C Device interface: a hurray tensor as an `ArrowDeviceArray`
//! plus `ArrowSchema` of the canonical extension type
//! `arrow.fixed_shape_tensor`, and back.
//!
//! # The mapping
//!
//! A tensor of shape `[n, d1, …, dk]` is an array of `n` tensors of shape
//! `[d1, …, dk]`: storage `FixedSizeList<value, d1·…·dk>` of length `n`,
//! extension metadata `{"shape":[d1,…,dk]}`. Arrow stores each element
//! row-major in its *physical* shape; a tensor whose element dimensions are
//! a permutation of row-major (a transposed view) is exported with the
//! physical shape and `"permutation"` (logical dimension `i` is physical
//! dimension `permutation[i]`), as the canonical extension defines. Every
//! other layout — column-major over the batch dimension, negative, zero or
//! gapped strides, rank 0 — is an [`ExportError`]. Value types: 8- to
//! 64-bit integers and 16- to 64-bit floats (Arrow's tensor types).
//!
//! # Contract
//!
//! * **Export** ([`export_arrow`]) fills the two structs; their release
//!   callbacks free what the export allocated, each exactly once, and the
//!   owner is dropped when both the array and its child (which a consumer
//!   may move out) have been released. `sync_event` is null for a
//!   `ProducerSynced` buffer and the caller's event for an `Event` one.
//! * **Import** ([`import_arrow`]) takes ownership of both structs in every
//!   case (their release callbacks have run when it returns an error, and
//!   run when the [`Imported`] is dropped otherwise); allocates nothing;
//!   reads no string past its NUL or 64 bytes, and no array past the count
//!   it has checked.

pub mod ffi;
mod json;

use core::ffi::{c_char, c_void};
use core::ptr;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use hurray_core::{DeviceTag, ElementType, SyncMode, TensorView};

use crate::describe::{self, MAX_NDIM, PrivateDevice, RawTensor};
use crate::dlpack;
use crate::error::{ExportError, ImportError};
use crate::imported::{ImportOptions, Imported, ProducerGuard, ProducerKind};
use ffi::{ARROW_FLAG_NULLABLE, ArrowArray, ArrowDeviceArray, ArrowSchema};

/// The extension name.
pub const EXTENSION_NAME: &str = "arrow.fixed_shape_tensor";

/// The Arrow format string of an element type, or `None` where Arrow has no
/// tensor value type (bool, bfloat16, complex, float8/6/4, sub-byte
/// integers, float128, private types).
///
/// ```
/// use hurray_core::ElementType;
/// assert_eq!(hurray_interop::arrow::format_of(ElementType::Float32), Some("f"));
/// assert_eq!(hurray_interop::arrow::format_of(ElementType::BFloat16), None);
/// ```
#[must_use]
pub const fn format_of(t: ElementType) -> Option<&'static str> {
    Some(match t {
        ElementType::Int8 => "c",
        ElementType::UInt8 => "C",
        ElementType::Int16 => "s",
        ElementType::UInt16 => "S",
        ElementType::Int32 => "i",
        ElementType::UInt32 => "I",
        ElementType::Int64 => "l",
        ElementType::UInt64 => "L",
        ElementType::Float16 => "e",
        ElementType::Float32 => "f",
        ElementType::Float64 => "g",
        _ => return None,
    })
}

/// The element type of an Arrow primitive format string; the inverse of
/// [`format_of`].
#[must_use]
pub fn element_of(format: &[u8]) -> Option<ElementType> {
    Some(match format {
        b"c" => ElementType::Int8,
        b"C" => ElementType::UInt8,
        b"s" => ElementType::Int16,
        b"S" => ElementType::UInt16,
        b"i" => ElementType::Int32,
        b"I" => ElementType::UInt32,
        b"l" => ElementType::Int64,
        b"L" => ElementType::UInt64,
        b"e" => ElementType::Float16,
        b"f" => ElementType::Float32,
        b"g" => ElementType::Float64,
        _ => return None,
    })
}

/// What an Arrow export needs besides the descriptor, address and owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrowExportOptions<'a> {
    /// `device_id` (Arrow uses -1 for host memory with no device).
    pub device_id: i64,
    /// The event a consumer waits on: required for an `Event` buffer, null
    /// for a `ProducerSynced` one.
    pub sync_event: *mut c_void,
    /// Private hurray device tags the caller maps to interchange codes.
    pub private_devices: &'a [PrivateDevice],
}

impl Default for ArrowExportOptions<'_> {
    fn default() -> Self {
        Self {
            device_id: 0,
            sync_event: ptr::null_mut(),
            private_devices: &[],
        }
    }
}

/// An exported tensor: the two structs a consumer imports
/// (`pa.Array._import_from_c_device(&array, &schema)`). Each releases
/// itself when its `release` callback is called; dropping this value
/// without handing the structs over calls the callbacks that are still
/// set.
#[derive(Debug)]
pub struct ArrowExport {
    /// The array, with device type, id and sync event.
    pub array: ArrowDeviceArray,
    /// The schema.
    pub schema: ArrowSchema,
}

impl ArrowExport {
    /// The two structs, handed over: the receiver calls each `release`
    /// exactly once (or moves them on, as the Arrow spec allows).
    #[must_use]
    pub fn into_parts(self) -> (ArrowDeviceArray, ArrowSchema) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so each field is read out once
        // and owned by the caller from here on.
        unsafe { (ptr::read(&this.array), ptr::read(&this.schema)) }
    }
}

impl Drop for ArrowExport {
    fn drop(&mut self) {
        // SAFETY: both structs were filled by `export_arrow` (or released
        // and nulled by a consumer); their callbacks, when set, are ours and
        // free what they own once, nulling `release`.
        unsafe {
            if let Some(release) = self.array.array.release {
                release(&mut self.array.array);
            }
            if let Some(release) = self.schema.release {
                release(&mut self.schema);
            }
        }
    }
}

/// The physical order of the element dimensions and the permutation, if
/// the strides (in elements) are a permutation of row-major under an
/// outermost batch dimension.
fn permutation(shape: &[i64], strides: &[i64]) -> Result<Option<[usize; MAX_NDIM]>, ExportError> {
    let (Some((&n, dims)), Some((&batch_stride, element_strides))) =
        (shape.split_first(), strides.split_first())
    else {
        return Err(ExportError::RankZero);
    };
    let list_size = dims
        .iter()
        .try_fold(1i64, |acc, &d| acc.checked_mul(d))
        .ok_or(ExportError::Overflow {
            what: "the list size",
        })?;
    if n == 0 || list_size == 0 {
        return Ok(None);
    }
    if n > 1 && batch_stride != list_size {
        return Err(ExportError::NotPermutedRowMajor);
    }
    // Logical element dimensions ordered by decreasing stride (ties keep
    // their order): the physical order.
    let k = dims.len();
    let mut order = [0usize; MAX_NDIM];
    for (i, slot) in order.iter_mut().enumerate().take(k) {
        *slot = i;
    }
    let order = order.get_mut(..k).unwrap_or_default();
    order.sort_by(|&a, &b| {
        let sa = element_strides.get(a).copied().unwrap_or(0);
        let sb = element_strides.get(b).copied().unwrap_or(0);
        sb.cmp(&sa).then(a.cmp(&b))
    });
    // Compact row-major in that order; size-1 dimensions may have any stride.
    let mut expected = 1i64;
    for &axis in order.iter().rev() {
        let d = dims.get(axis).copied().unwrap_or(0);
        let s = element_strides.get(axis).copied().unwrap_or(0);
        if d > 1 && s != expected {
            return Err(ExportError::NotPermutedRowMajor);
        }
        expected = expected.saturating_mul(d);
    }
    if order.iter().enumerate().all(|(i, &a)| i == a) {
        return Ok(None);
    }
    let mut physical = [0usize; MAX_NDIM];
    for (slot, &a) in physical.iter_mut().zip(order.iter()) {
        *slot = a;
    }
    Ok(Some(physical))
}

fn metadata_bytes(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    let len = |s: &str| i32::try_from(s.len()).unwrap_or(i32::MAX).to_ne_bytes();
    out.extend_from_slice(&i32::try_from(pairs.len()).unwrap_or(0).to_ne_bytes());
    for (k, v) in pairs {
        out.extend_from_slice(&len(k));
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&len(v));
        out.extend_from_slice(v.as_bytes());
    }
    out
}

/// What an exported schema owns: its strings and, for the parent, the
/// boxed child schema (`child`, null for a leaf) that `children` lists.
struct SchemaPrivate {
    format: CString,
    name: CString,
    metadata: Vec<u8>,
    child: *mut ArrowSchema,
    children: [*mut ArrowSchema; 1],
}

/// What an exported array owns: a reference to the owner, the buffer
/// pointer array, and, for the parent, the boxed child array.
struct ArrayPrivate {
    _owner: Arc<Mutex<Box<dyn Send>>>,
    buffers: [*const c_void; 2],
    child: *mut ArrowArray,
    children: [*mut ArrowArray; 1],
}

/// Release callback of every schema the export makes (parent and child).
///
/// # Safety
/// `schema` is null or a schema filled by `export_arrow` (or its child),
/// not yet released.
unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    if schema.is_null() {
        return;
    }
    // SAFETY: the contract: a live schema of ours. Its private data is a
    // `Box<SchemaPrivate>` leaked by the export and its `child` a leaked
    // `Box<ArrowSchema>` (or null). The child is released first if a
    // consumer has not moved it out (the Arrow rule for parents), then both
    // boxes are freed once and the struct is marked released.
    unsafe {
        let private = (*schema).private_data.cast::<SchemaPrivate>();
        if !private.is_null() {
            let private = Box::from_raw(private);
            if !private.child.is_null() {
                if let Some(release) = (*private.child).release {
                    release(private.child);
                }
                drop(Box::from_raw(private.child));
            }
            drop(private);
        }
        (*schema).private_data = ptr::null_mut();
        (*schema).release = None;
    }
}

/// Release callback of every array the export makes (parent and child).
///
/// # Safety
/// `array` is null or an array filled by `export_arrow` (or its child), not
/// yet released.
unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    if array.is_null() {
        return;
    }
    // SAFETY: as in `release_schema`, for a `Box<ArrayPrivate>` and a boxed
    // child array; dropping the private data drops one reference to the
    // owner (the last one drops the owner).
    unsafe {
        let private = (*array).private_data.cast::<ArrayPrivate>();
        if !private.is_null() {
            let private = Box::from_raw(private);
            if !private.child.is_null() {
                if let Some(release) = (*private.child).release {
                    release(private.child);
                }
                drop(Box::from_raw(private.child));
            }
            drop(private);
        }
        (*array).private_data = ptr::null_mut();
        (*array).release = None;
    }
}

fn cstring(s: &str) -> CString {
    // Every string here is built from ASCII digits, names and JSON without
    // NUL bytes; an impossible NUL yields an empty string, not a panic.
    CString::new(s).unwrap_or_default()
}

/// A schema owning `format`, `name`, `metadata` and optionally a child
/// schema (leaked box). Every pointer in it is derived after its private
/// data is leaked, so moving the returned struct invalidates nothing.
fn schema(format: &str, name: &str, metadata: Vec<u8>, child: *mut ArrowSchema) -> ArrowSchema {
    let private = Box::into_raw(Box::new(SchemaPrivate {
        format: cstring(format),
        name: cstring(name),
        metadata,
        child,
        children: [child],
    }));
    // SAFETY: `private` is the live box just leaked; the pointers are
    // derived from it and stay valid until `release_schema` frees it.
    unsafe {
        ArrowSchema {
            format: (*private).format.as_ptr(),
            name: (*private).name.as_ptr(),
            metadata: if (*private).metadata.is_empty() {
                ptr::null()
            } else {
                (*private).metadata.as_ptr().cast::<c_char>()
            },
            flags: ARROW_FLAG_NULLABLE,
            n_children: i64::from(!child.is_null()),
            children: if child.is_null() {
                ptr::null_mut()
            } else {
                ptr::addr_of_mut!((*private).children).cast()
            },
            dictionary: ptr::null_mut(),
            release: Some(release_schema),
            private_data: private.cast(),
        }
    }
}

/// An array of `length` owning one reference to the owner, the buffers
/// and optionally a child array (leaked box).
fn array(
    owner: Arc<Mutex<Box<dyn Send>>>,
    length: i64,
    buffers: [*const c_void; 2],
    n_buffers: i64,
    child: *mut ArrowArray,
) -> ArrowArray {
    let private = Box::into_raw(Box::new(ArrayPrivate {
        _owner: owner,
        buffers,
        child,
        children: [child],
    }));
    // SAFETY: as in `schema`: pointers derived from the leaked box.
    unsafe {
        ArrowArray {
            length,
            null_count: 0,
            offset: 0,
            n_buffers,
            n_children: i64::from(!child.is_null()),
            buffers: ptr::addr_of_mut!((*private).buffers).cast(),
            children: if child.is_null() {
                ptr::null_mut()
            } else {
                ptr::addr_of_mut!((*private).children).cast()
            },
            dictionary: ptr::null_mut(),
            release: Some(release_array),
            private_data: private.cast(),
        }
    }
}

/// Exports a validated tensor as an Arrow `fixed_shape_tensor` device
/// array. `data` is the base address of buffer 0; `owner` keeps it alive
/// and is dropped once both arrays have been released. Nothing is
/// dereferenced.
///
/// # Errors
/// [`ExportError`]: rank 0; a layout, type or device Arrow cannot carry;
/// strides that are not a permutation of row-major under the batch
/// dimension; a `ConsumerStream` buffer, an `Event` buffer without an event
/// or a `ProducerSynced` one with one; a null or misaligned `data`.
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
/// use hurray_interop::arrow::{export_arrow, ArrowExportOptions};
///
/// #[repr(align(64))]
/// struct Block([i32; 6]);
/// let data = Box::new(Block([1, 2, 3, 4, 5, 6]));
/// let handles = [BufferHandle::new(24, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut bytes = [0u8; 128];
/// let n = TensorDescriptor::row_major(ElementType::Int32, &[2, 3], &handles).encode(&mut bytes)?;
/// let view = TensorView::parse(&bytes[..n])?;
/// let ptr = data.0.as_ptr().cast_mut().cast();
/// let out = export_arrow(&view, ptr, data, &ArrowExportOptions::default())?;
/// assert_eq!(out.array.array.length, 2);
/// assert_eq!(out.array.device_type, 1); // ARROW_DEVICE_CPU
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export_arrow<O: Send + 'static>(
    view: &TensorView<'_>,
    data: *mut c_void,
    owner: O,
    opts: &ArrowExportOptions<'_>,
) -> Result<ArrowExport, ExportError> {
    let plan = dlpack::plan(view, data, opts.private_devices)?;
    let element_type = view.element_type();
    let format = format_of(element_type).ok_or(ExportError::NoArrowType(element_type))?;
    match (plan.sync_mode, opts.sync_event.is_null()) {
        (SyncMode::ProducerSynced, true) | (SyncMode::Event, false) => {}
        (mode, _) => return Err(ExportError::Sync(mode)),
    }
    let (mut shape, mut strides) = ([0i64; MAX_NDIM], [0i64; MAX_NDIM]);
    dlpack::fill_dims(view, &mut shape, &mut strides)?;
    let shape = shape.get(..plan.ndim).unwrap_or_default();
    let strides = strides.get(..plan.ndim).unwrap_or_default();
    let physical = permutation(shape, strides)?;
    let (&n, dims) = shape.split_first().ok_or(ExportError::RankZero)?;
    let list_size = dims
        .iter()
        .try_fold(1i64, |acc, &d| acc.checked_mul(d))
        .filter(|s| i32::try_from(*s).is_ok())
        .ok_or(ExportError::Overflow {
            what: "the list size (int32)",
        })?;
    let values = n.checked_mul(list_size).ok_or(ExportError::Overflow {
        what: "the value count",
    })?;

    // Metadata: physical shape, and the permutation when not identity.
    let mut json = String::from("{\"shape\":[");
    let mut perm = String::new();
    for (j, _) in dims.iter().enumerate() {
        let logical = physical.map_or(j, |p| p.get(j).copied().unwrap_or(j));
        if j > 0 {
            json.push(',');
        }
        json.push_str(&dims.get(logical).copied().unwrap_or(0).to_string());
    }
    json.push(']');
    if let Some(p) = physical {
        // Logical dimension i is physical dimension permutation[i]: the
        // position of i in the physical order.
        json.push_str(",\"permutation\":[");
        for i in 0..dims.len() {
            let at = p
                .get(..dims.len())
                .unwrap_or_default()
                .iter()
                .position(|&a| a == i)
                .unwrap_or(i);
            if i > 0 {
                perm.push(',');
            }
            perm.push_str(&at.to_string());
        }
        json.push_str(&perm);
        json.push(']');
    }
    json.push('}');
    let metadata = metadata_bytes(&[
        ("ARROW:extension:name", EXTENSION_NAME),
        ("ARROW:extension:metadata", &json),
    ]);

    // Schemas: the list, owning its value child.
    let child_schema = Box::into_raw(Box::new(schema(
        format,
        "item",
        Vec::new(),
        ptr::null_mut(),
    )));
    let schema = schema(&format!("+w:{list_size}"), "", metadata, child_schema);

    // Arrays: the child holds the values, the parent the list; both hold
    // the owner.
    let owner: Arc<Mutex<Box<dyn Send>>> = Arc::new(Mutex::new(Box::new(owner)));
    let first = plan
        .data
        .wrapping_byte_add(usize::try_from(plan.byte_offset).unwrap_or(0))
        .cast_const();
    let child = Box::into_raw(Box::new(array(
        Arc::clone(&owner),
        values,
        [ptr::null(), first],
        2,
        ptr::null_mut(),
    )));
    let array = array(owner, n, [ptr::null(); 2], 1, child);
    Ok(ArrowExport {
        array: ArrowDeviceArray {
            array,
            device_id: opts.device_id,
            device_type: plan.device_type,
            sync_event: opts.sync_event,
            reserved: [0; 3],
        },
        schema,
    })
}

/// Reads a NUL-terminated string of at most `max` bytes.
///
/// # Safety
/// `p` is null or addresses readable bytes up to a NUL or `max` bytes,
/// whichever comes first.
unsafe fn c_str<'a>(p: *const c_char, max: usize) -> Option<&'a [u8]> {
    if p.is_null() {
        return None;
    }
    let mut len = 0;
    // SAFETY: the contract: every byte before the NUL (and the NUL), up to
    // `max`, is readable; the loop stops at the first NUL or at `max`.
    unsafe {
        while len < max && p.add(len).read() != 0 {
            len += 1;
        }
        if len == max {
            return None;
        }
        Some(core::slice::from_raw_parts(p.cast::<u8>(), len))
    }
}

/// Reads one native-endian `int32` of metadata at `*at` and advances.
///
/// # Safety
/// `p + *at .. p + *at + 4` is readable.
unsafe fn meta_i32(p: *const c_char, at: &mut usize) -> Result<i32, ImportError> {
    // SAFETY: the contract: four readable bytes at `p + *at`, read without
    // an alignment assumption.
    let v = unsafe { p.add(*at).cast::<i32>().read_unaligned() };
    *at = at.checked_add(4).ok_or(ImportError::Metadata {
        what: "metadata length overflows",
    })?;
    Ok(v)
}

/// Reads one length-prefixed metadata string at `*at` and advances.
///
/// # Safety
/// `p` addresses well-formed metadata and `*at` is the start of a string.
unsafe fn meta_bytes<'a>(p: *const c_char, at: &mut usize) -> Result<&'a [u8], ImportError> {
    // SAFETY: the contract: a length prefix is readable at `*at`.
    let len = unsafe { meta_i32(p, at)? };
    let len = usize::try_from(len).map_err(|_| ImportError::Metadata {
        what: "negative metadata length",
    })?;
    // SAFETY: the contract: the `len` bytes the prefix announces are
    // readable; the length was checked non-negative above.
    let bytes = unsafe { core::slice::from_raw_parts(p.add(*at).cast::<u8>(), len) };
    *at = at.checked_add(len).ok_or(ImportError::Metadata {
        what: "metadata length overflows",
    })?;
    Ok(bytes)
}

/// Reads the binary metadata and returns the extension metadata value.
///
/// # Safety
/// `p` is null or addresses well-formed Arrow metadata (an `int32` pair
/// count, then per pair an `int32` length and that many bytes, twice):
/// every byte a length announces is readable.
unsafe fn extension<'a>(p: *const c_char) -> Result<&'a [u8], ImportError> {
    const fn bad(what: &'static str) -> ImportError {
        ImportError::Metadata { what }
    }
    if p.is_null() {
        return Err(bad("no extension metadata"));
    }
    let mut at = 0usize;
    // SAFETY: the contract: the pair count is readable.
    let pairs = unsafe { meta_i32(p, &mut at)? };
    if pairs < 0 {
        return Err(bad("negative metadata pair count"));
    }
    let mut name = None;
    let mut value = None;
    for _ in 0..pairs {
        // SAFETY: the contract: `pairs` key/value strings follow.
        let (key, val) = unsafe { (meta_bytes(p, &mut at)?, meta_bytes(p, &mut at)?) };
        match key {
            b"ARROW:extension:name" => name = Some(val),
            b"ARROW:extension:metadata" => value = Some(val),
            _ => {}
        }
    }
    match (name, value) {
        (Some(n), Some(v)) if n == EXTENSION_NAME.as_bytes() => Ok(v),
        (Some(_), _) => Err(bad("extension is not arrow.fixed_shape_tensor")),
        _ => Err(bad("no extension name and metadata")),
    }
}

fn list_size_of(format: &[u8]) -> Option<u64> {
    let digits = format.strip_prefix(b"+w:")?;
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits
        .iter()
        .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
    (v <= i32::MAX as u64).then_some(v)
}

const fn arrow_err(what: &'static str) -> ImportError {
    ImportError::ArrowArray { what }
}

/// Reads `n_buffers` == `expected` buffer pointers and the null rule.
///
/// # Safety
/// `a` is a live array whose `buffers` addresses `n_buffers` pointers when
/// `n_buffers` is `expected`.
unsafe fn buffers(a: &ArrowArray, expected: i64) -> Result<[*const c_void; 2], ImportError> {
    if a.n_buffers != expected || a.buffers.is_null() {
        return Err(arrow_err("buffer count"));
    }
    if a.length < 0 || a.offset < 0 {
        return Err(arrow_err("negative length or offset"));
    }
    let mut out = [ptr::null(); 2];
    for (i, slot) in out
        .iter_mut()
        .enumerate()
        .take(usize::try_from(expected).unwrap_or(0))
    {
        // SAFETY: `i < n_buffers`, and the contract makes those readable.
        *slot = unsafe { a.buffers.add(i).read() };
    }
    // No nulls: a zero count, or an unknown count with no validity bitmap.
    if !(a.null_count == 0 || (a.null_count == -1 && out[0].is_null())) {
        return Err(arrow_err("null values"));
    }
    Ok(out)
}

/// Imports an Arrow `fixed_shape_tensor` device array: writes its
/// descriptor into `out` and returns it with the data address and a guard
/// over both release callbacks. The tensor is `[length, logical shape…]`,
/// strided when the extension has a permutation; CPU memory and data with
/// no `sync_event` are `ProducerSynced`, data with one `Event`.
///
/// # Safety
/// `array` and `schema` are each null, or point to structs the caller owns
/// (their release callbacks are null or may be called once) and that stay
/// valid until released. Unless released: strings are NUL-terminated,
/// metadata is well-formed (every announced length is readable), and
/// `buffers`/`children` address `n_buffers`/`n_children` pointers to live
/// structs. Field *values* may be anything.
///
/// # Errors
/// [`ImportError`]; both release callbacks have run.
pub unsafe fn import_arrow<'d>(
    array: *mut ArrowDeviceArray,
    schema: *mut ArrowSchema,
    out: &'d mut [u8],
    opts: &ImportOptions<'_>,
) -> Result<Imported<'d>, ImportError> {
    // SAFETY: the contract hands us both structs and their callbacks.
    let guard = unsafe { ProducerGuard::new(ProducerKind::Arrow, array.cast(), schema.cast()) };
    if array.is_null() || schema.is_null() {
        return Err(ImportError::NullTensor);
    }
    // SAFETY: both non-null and live (the contract); shared references are
    // only read while the guard, which alone may release them, waits.
    let (device, s) = unsafe { (&*array, &*schema) };
    if device.array.release.is_none() || s.release.is_none() {
        return Err(ImportError::Released);
    }
    // The schema: +w:N with one primitive child, no dictionary.
    // SAFETY: the contract: `format` is NUL-terminated.
    let format = unsafe { c_str(s.format, 64) }.ok_or(ImportError::ArrowType { what: "format" })?;
    let list_size = list_size_of(format).ok_or(ImportError::ArrowType {
        what: "not a fixed-size list (+w:N)",
    })?;
    if !s.dictionary.is_null() {
        return Err(ImportError::ArrowType { what: "dictionary" });
    }
    if s.n_children != 1 || s.children.is_null() {
        return Err(ImportError::ArrowType {
            what: "child count",
        });
    }
    // SAFETY: `n_children` is 1, so `children` addresses one pointer.
    let child_schema = unsafe { s.children.read() };
    if child_schema.is_null() {
        return Err(ImportError::ArrowType { what: "null child" });
    }
    // SAFETY: a live child schema (the contract).
    let cs = unsafe { &*child_schema };
    // SAFETY: as for the parent's format.
    let child_format = unsafe { c_str(cs.format, 64) }.ok_or(ImportError::ArrowType {
        what: "value format",
    })?;
    let element_type = element_of(child_format).ok_or(ImportError::ArrowType {
        what: "value type (integers and floats only)",
    })?;
    if !cs.dictionary.is_null() || cs.n_children != 0 {
        return Err(ImportError::ArrowType {
            what: "value type has children",
        });
    }
    // SAFETY: the contract: metadata is well-formed.
    let json = unsafe { extension(s.metadata)? };
    let meta = json::parse(json)?;
    let element_dims = meta.shape.get(..meta.ndim).unwrap_or_default();
    let product = element_dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or(ImportError::Metadata {
            what: "shape product overflows",
        })?;
    if product != list_size {
        return Err(ImportError::Metadata {
            what: "shape product differs from the list size",
        });
    }

    // The arrays.
    let a = &device.array;
    // SAFETY: the contract covers `buffers` for the expected count.
    unsafe { buffers(a, 1)? };
    if a.n_children != 1 || a.children.is_null() || !a.dictionary.is_null() {
        return Err(arrow_err("child count"));
    }
    // SAFETY: one child pointer (checked).
    let child = unsafe { a.children.read() };
    if child.is_null() {
        return Err(arrow_err("null child"));
    }
    // SAFETY: a live child array (the contract).
    let c = unsafe { &*child };
    // SAFETY: as for the parent.
    let [_, data] = unsafe { buffers(c, 2)? };
    if c.n_children != 0 {
        return Err(arrow_err("value array has children"));
    }
    let length = u64::try_from(a.length).map_err(|_| arrow_err("negative length"))?;
    let parent_offset = u64::try_from(a.offset).map_err(|_| arrow_err("negative offset"))?;
    let child_offset = u64::try_from(c.offset).map_err(|_| arrow_err("negative offset"))?;
    let overflow = ImportError::Overflow {
        what: "value offset",
    };
    let needed = parent_offset
        .checked_add(length)
        .and_then(|v| v.checked_mul(list_size))
        .ok_or(overflow)?;
    if needed > u64::try_from(c.length).unwrap_or(0) {
        return Err(arrow_err("child shorter than the parent needs"));
    }
    let first = parent_offset
        .checked_mul(list_size)
        .and_then(|v| v.checked_add(child_offset))
        .ok_or(overflow)?;
    let element_bytes = u64::from(element_type.bits().unwrap_or(8) / 8);
    let first_byte =
        usize::try_from(first.checked_mul(element_bytes).ok_or(overflow)?).map_err(|_| overflow)?;
    let count = length.checked_mul(list_size).ok_or(overflow)?;
    if data.is_null() && count > 0 {
        return Err(ImportError::NullData);
    }
    let address = (data as usize).checked_add(first_byte).ok_or(overflow)?;

    // Device and sync.
    let (device_tag, memory_class) =
        describe::device_from_code(device.device_type, opts.private_devices)
            .map_err(ImportError::Device)?;
    let sync_mode = if device.sync_event.is_null() {
        SyncMode::ProducerSynced
    } else if device_tag == DeviceTag::Cpu {
        return Err(arrow_err("sync_event on CPU memory"));
    } else {
        SyncMode::Event
    };

    // Shape [length, logical…] and, under a permutation, strides.
    let k = meta.ndim;
    let mut shape = [0u64; MAX_NDIM];
    let mut strides = [0i64; MAX_NDIM];
    shape[0] = length;
    strides[0] = i64::try_from(list_size).map_err(|_| overflow)?;
    let mut physical_strides = [0i64; MAX_NDIM];
    let mut acc = 1i64;
    for j in (0..k).rev() {
        physical_strides[j] = acc;
        let d = i64::try_from(element_dims.get(j).copied().unwrap_or(0)).map_err(|_| overflow)?;
        acc = acc.saturating_mul(d);
    }
    for i in 0..k {
        let p = meta.permutation.map_or(i, |p| {
            usize::try_from(p.get(i).copied().unwrap_or(0)).unwrap_or(0)
        });
        shape[i + 1] = element_dims.get(p).copied().unwrap_or(0);
        strides[i + 1] = physical_strides.get(p).copied().unwrap_or(0);
    }
    let rank = k + 1;
    let raw = RawTensor {
        element_type,
        shape: shape.get(..rank).unwrap_or_default(),
        strides: meta
            .permutation
            .map(|_| strides.get(..rank).unwrap_or_default()),
        address,
        device_tag,
        memory_class,
        sync_mode,
    };
    let d = describe::describe(&raw, out)?;
    Ok(Imported {
        base: data
            .cast_mut()
            .wrapping_byte_add(first_byte)
            .wrapping_byte_sub(d.front),
        view: d.view,
        device_id: device.device_id,
        read_only: true,
        sync_event: device.sync_event,
        guard,
    })
}
