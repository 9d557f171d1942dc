//! Host memory the GPU reaches by DMA (Linux, Vulkan
//! `VK_EXT_external_memory_host`): page-aligned host memory imported as the
//! memory of a `wgpu::Buffer` that copies read and write directly, as CUDA's
//! pinned copies do. This file holds **every** `unsafe` of that feature
//! (opening a device with the extension, the import, the hand-over to wgpu,
//! the host barrier, the page allocation and the host copies), each block
//! argued where it stands.
//!
//! ## Why it is sound: who frees the host memory, and when
//!
//! Vulkan requires imported host memory to stay allocated for the lifetime of
//! the `VkDeviceMemory` made from it, and the GPU may touch it until the last
//! submission that uses the buffer has finished. wgpu knows both: it destroys
//! a buffer's hal object only once the last handle is gone *and* the last
//! submission that used it is done (`Buffer::destroy` schedules the same
//! thing while clones live). The buffer is therefore handed to wgpu with
//! [`from_raw_externally_owned`](wgpu::hal::vulkan::Buffer::from_raw_externally_owned)
//! and a drop callback that, in this order, destroys the `VkBuffer`, frees the
//! `VkDeviceMemory`, then releases the host memory:
//!
//! * **Our own allocation** ([`HostBuffer::alloc`], the transfer engine's
//!   staging) is *moved into* that callback: nothing else can free it, so it
//!   outlives every use by the GPU whatever the caller does (clones of the
//!   `wgpu::Buffer` included).
//! * **A caller's slice** ([`HostBuffer::import`], `import_read_only`) is
//!   borrowed for `'a`; `HostBuffer<'a>`'s `Drop` calls `destroy` and then
//!   **waits** (polling the device) until the callback has run, so the
//!   borrow cannot end while the GPU may still use the memory. A borrowed
//!   `&'a mut [u8]` cannot be read or written by the caller meanwhile. If the
//!   callback never runs within [`WAIT_LIMIT`](crate::exec::WAIT_LIMIT) (a hung
//!   or lost device), the process aborts rather than hand back memory a
//!   device may still write: never a use after free.
//!
//! Host access to memory the GPU may use goes through raw-pointer copies
//! ([`HostBuffer::read`], [`HostBuffer::write`]) after the queue is idle, or,
//! inside the engine, through [`Staging`]s that are *moved* into the
//! completion callback of the submission that uses them: while the GPU works
//! on one, no host code holds it.
//!
//! ## Visibility
//!
//! wgpu inserts no barrier for host reads of such a buffer, so every
//! GPU → host copy is followed, in the same submission, by a command buffer
//! holding one memory barrier (transfer writes → host reads)
//! ([`host_barrier`]). Host writes are visible to later submissions by
//! Vulkan's rule for `vkQueueSubmit` on host-coherent memory (the only memory
//! type chosen).
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::ffi::{CStr, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use ash::vk;
use wgpu::BufferUsages;
use wgpu::hal::api::Vulkan;

use super::error::{ShareError, Unsupported};
use crate::device::{self, DeviceShared};
use crate::{ApiMisuse, BackendError, exec};

/// The extension this file needs.
pub(crate) const EXTENSION: &CStr = ash::ext::external_memory_host::NAME;
/// The handle type of every import: a host allocation.
const HANDLE: vk::ExternalMemoryHandleTypeFlags =
    vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
/// The alignment hurray gives its own host allocations (and asks of a
/// caller's slices) when the driver asks for less.
pub const HOST_PAGE: usize = 4096;

/// Whether `adapter` offers `VK_EXT_external_memory_host` (Vulkan only).
pub(crate) fn adapter_supports(adapter: &wgpu::Adapter) -> bool {
    // SAFETY: `as_hal` asks that the adapter not be destroyed through the
    // guard; it is only read (one extension lookup) and dropped at once.
    let hal = unsafe { adapter.as_hal::<Vulkan>() };
    hal.is_some_and(|a| {
        a.physical_device_capabilities()
            .supports_extension(EXTENSION)
    })
}

/// Opens a device on `adapter` as `request_device(desc)` would, with the
/// device `extensions` enabled in addition (each one the adapter lists:
/// the caller checked, with [`adapter_supports`] for
/// `VK_EXT_external_memory_host` and `semaphore::adapter_supports` for
/// `VK_KHR_external_semaphore_fd`; neither needs a feature struct). `None`
/// when the adapter is not a Vulkan one.
pub(crate) fn open_device(
    adapter: &wgpu::Adapter,
    desc: &wgpu::DeviceDescriptor<'_>,
    extensions: &[&'static CStr],
) -> Option<Result<(wgpu::Device, wgpu::Queue), BackendError>> {
    let open = {
        // SAFETY: as in `adapter_supports`; the guard lives through the
        // `open_with_callback` call below and is dropped after it.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }?;
        if !extensions
            .iter()
            .all(|e| hal.physical_device_capabilities().supports_extension(e))
        {
            return Some(Err(BackendError::RequestDevice(
                "an extension the adapter does not list".into(),
            )));
        }
        let wanted = extensions.to_vec();
        let callback: Box<wgpu::hal::vulkan::CreateDeviceCallback<'_>> = Box::new(move |args| {
            for e in &wanted {
                if !args.extensions.contains(e) {
                    args.extensions.push(e);
                }
            }
        });
        // SAFETY: `open_with_callback` asks what `open` asks (features and
        // limits the adapter supports: `desc`'s, which the caller took from
        // this adapter, checked again by wgpu-core below) and that the
        // callback only add what the device supports and remove nothing: it
        // adds extensions the adapter lists (checked just above), none of
        // which needs a feature struct (`VK_EXT_external_memory_host` has no
        // features; `VK_KHR_external_semaphore_fd` has none either, and the
        // timeline semaphore feature it is used with is one wgpu-hal
        // enables by itself where the device has it).
        unsafe {
            hal.open_with_callback(
                desc.required_features,
                &desc.required_limits,
                &desc.memory_hints,
                Some(callback),
            )
        }
    };
    let open = match open {
        Ok(o) => o,
        Err(e) => return Some(Err(BackendError::RequestDevice(e.to_string()))),
    };
    // SAFETY: `open` was created from this adapter's hal object just above,
    // with `desc.required_features`, so `desc`'s features are a subset of
    // the device's.
    let made = unsafe { adapter.create_device_from_hal::<Vulkan>(open, desc) };
    Some(made.map_err(|e| BackendError::RequestDevice(e.to_string())))
}

/// Whether `device` was opened with the extension (so imports can work).
pub(crate) fn device_supports(device: &wgpu::Device) -> bool {
    // SAFETY: `as_hal` asks that the device not be destroyed through the
    // guard; it is only read (the enabled extension list) and dropped.
    let hal = unsafe { device.as_hal::<Vulkan>() };
    hal.is_some_and(|d| d.enabled_device_extensions().contains(&EXTENSION))
}

/// Page-aligned, zero-filled host memory of ours (like a `Box<[u8]>` with a
/// page alignment).
pub(crate) struct PageBox {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a `PageBox` owns its bytes exclusively, as a `Box<[u8]>` does; it
// hands out no references (only the pointer, which the importer uses under
// the rules in the module docs).
unsafe impl Send for PageBox {}
// SAFETY: `&PageBox` gives access to nothing (no method reads the bytes).
unsafe impl Sync for PageBox {}

impl PageBox {
    /// `len` (> 0, a multiple of `align`) zeroed bytes aligned to `align` (a
    /// power of two).
    fn new(len: usize, align: usize) -> Result<Self, BackendError> {
        let layout = Layout::from_size_align(len, align)
            .map_err(|_| BackendError::OutOfHostMemory { bytes: len as u64 })?;
        if len == 0 {
            return Err(BackendError::Bug("empty host allocation"));
        }
        // SAFETY: `layout` has a non-zero size (checked above).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(BackendError::OutOfHostMemory { bytes: len as u64 })?;
        Ok(Self { ptr, layout })
    }
}

impl Drop for PageBox {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(layout)` and is freed once,
        // here.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// Set by the drop callback once Vulkan has let go of the memory.
#[derive(Default)]
struct Released {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Released {
    fn set(&self) {
        *self.done.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }

    fn is_set(&self) -> bool {
        *self.done.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Host memory imported as a wgpu buffer: the buffer, where the bytes are,
/// and the signal that Vulkan has let them go.
struct Imported {
    buffer: wgpu::Buffer,
    ptr: NonNull<u8>,
    len: usize,
    released: Arc<Released>,
}

// SAFETY: the raw pointer is only dereferenced by this file's copies, under
// the rules of the module docs (exclusive owner, or an idle queue); the other
// fields are `Send + Sync`.
unsafe impl Send for Imported {}
// SAFETY: as for `Send`; `&Imported` allows only reads through `read`,
// after the queue is idle.
unsafe impl Sync for Imported {}

/// What the drop callback frees, in order.
struct Release {
    raw: ash::Device,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    keep: Option<PageBox>,
    released: Arc<Released>,
}

impl Release {
    fn run(self) {
        // SAFETY: wgpu-hal runs this callback when it destroys its buffer,
        // after the last submission using it finished (see the module docs);
        // `buffer` and `memory` were made by `import_raw` on `raw` (a device
        // still alive: wgpu destroys its buffers before the device) and are
        // owned by this value alone. The buffer goes before its memory, and
        // the host memory (`keep`) after both, as Vulkan requires.
        unsafe {
            self.raw.destroy_buffer(self.buffer, None);
            self.raw.free_memory(self.memory, None);
        }
        drop(self.keep);
        self.released.set();
    }
}

/// The `VkResult` of a failed call as a [`ShareError`].
fn vk_error(call: &'static str) -> impl Fn(vk::Result) -> ShareError {
    move |r| ShareError::Vulkan {
        call,
        result: r.as_raw(),
    }
}

/// The Vulkan pieces of a device opened with the extension.
struct Raw {
    instance: ash::Instance,
    raw: ash::Device,
    physical: vk::PhysicalDevice,
}

fn raw_of(device: &wgpu::Device) -> Result<Raw, ShareError> {
    // SAFETY: the guard is only read (handles and tables copied out) and
    // dropped at the end of this block; nothing is destroyed through it.
    let hal = unsafe { device.as_hal::<Vulkan>() };
    let Some(hal) = hal else {
        return Err(Unsupported::Backend(device.adapter_info().backend).into());
    };
    if !hal.enabled_device_extensions().contains(&EXTENSION) {
        return Err(Unsupported::Extension("VK_EXT_external_memory_host").into());
    }
    Ok(Raw {
        instance: hal.shared_instance().raw_instance().clone(),
        raw: hal.raw_device().clone(),
        physical: hal.raw_physical_device(),
    })
}

/// The driver's `minImportedHostPointerAlignment`, at least [`HOST_PAGE`].
fn alignment(r: &Raw) -> usize {
    let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
    // SAFETY: the extension is enabled on a device of this physical device
    // (checked in `raw_of`), which requires Vulkan 1.1 or
    // `VK_KHR_get_physical_device_properties2` (wgpu-hal needs 1.1 for
    // external memory); the structs live on this frame through the call.
    unsafe {
        r.instance
            .get_physical_device_properties2(r.physical, &mut props2)
    };
    usize::try_from(host.min_imported_host_pointer_alignment)
        .unwrap_or(usize::MAX)
        .max(HOST_PAGE)
}

/// The required alignment of host memory imported on `device`.
pub(crate) fn import_alignment(device: &wgpu::Device) -> Result<usize, ShareError> {
    Ok(alignment(&raw_of(device)?))
}

/// Imports `len` bytes at `ptr` as a wgpu buffer of `usage` (copy usages
/// only). `keep`, when given, is the allocation `ptr` points into; it is
/// freed after Vulkan lets go.
///
/// # Safety
/// `ptr..ptr + len` must stay allocated (and, for a `COPY_DST` usage, be
/// writable memory no one else reads or writes through a reference) until
/// the returned value's `released` is set: either `keep` owns it, or the
/// caller waits for `released` before ending its borrow.
unsafe fn import_raw(
    device: &wgpu::Device,
    ptr: NonNull<u8>,
    len: usize,
    usage: BufferUsages,
    keep: Option<PageBox>,
) -> Result<Imported, ShareError> {
    let r = raw_of(device)?;
    let align = alignment(&r);
    if len == 0 {
        return Err(Unsupported::Empty.into());
    }
    if !(ptr.as_ptr() as usize).is_multiple_of(align) || !len.is_multiple_of(align) {
        return Err(ShareError::Backend(
            ApiMisuse::UnalignedHostMemory {
                address: ptr.as_ptr() as u64,
                len: len as u64,
                align: align as u64,
            }
            .into(),
        ));
    }
    let mut vk_usage = vk::BufferUsageFlags::empty();
    if usage.contains(BufferUsages::COPY_SRC) {
        vk_usage |= vk::BufferUsageFlags::TRANSFER_SRC;
    }
    if usage.contains(BufferUsages::COPY_DST) {
        vk_usage |= vk::BufferUsageFlags::TRANSFER_DST;
    }
    let fns = ash::ext::external_memory_host::Device::new(&r.instance, &r.raw);
    let mut host_props = vk::MemoryHostPointerPropertiesEXT::default();
    // SAFETY: the extension is enabled (`raw_of`), so its function is
    // loaded; `ptr` is aligned to the driver's minimum (checked above) and
    // points to host memory of ours or the caller's; `host_props` lives
    // through the call.
    let got = unsafe {
        (fns.fp().get_memory_host_pointer_properties_ext)(
            r.raw.handle(),
            HANDLE,
            ptr.as_ptr() as *const c_void,
            &mut host_props,
        )
    };
    if got != vk::Result::SUCCESS {
        return Err(vk_error("vkGetMemoryHostPointerPropertiesEXT")(got));
    }
    let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(HANDLE);
    let info = vk::BufferCreateInfo::default()
        .size(len as u64)
        .usage(vk_usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut external);
    // SAFETY: a live device; a valid create info (non-zero size) whose chain
    // holds one core 1.1 struct, alive through the call.
    let buffer = unsafe { r.raw.create_buffer(&info, None) }.map_err(vk_error("vkCreateBuffer"))?;
    // SAFETY: `buffer` was just made on `raw`.
    let req = unsafe { r.raw.get_buffer_memory_requirements(buffer) };
    // SAFETY: a core 1.0 query on the device's physical device.
    let mem = unsafe { r.instance.get_physical_device_memory_properties(r.physical) };
    let allowed = req.memory_type_bits & host_props.memory_type_bits;
    let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let count = mem.memory_type_count.min(vk::MAX_MEMORY_TYPES as u32);
    let index = mem
        .memory_types
        .iter()
        .zip(0..count)
        .find(|(t, i)| allowed & (1 << i) != 0 && t.property_flags.contains(want))
        .map(|(_, i)| i);
    let destroy = |b| {
        // SAFETY: `b` was made on `raw` here, no memory is bound and no
        // work ever used it.
        unsafe { r.raw.destroy_buffer(b, None) }
    };
    let (Some(index), true) = (index, req.size <= len as u64) else {
        destroy(buffer);
        return Err(ShareError::MemoryType {
            index: u32::MAX,
            allowed,
        });
    };
    let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
        .handle_type(HANDLE)
        .host_pointer(ptr.as_ptr().cast());
    let alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(len as u64)
        .memory_type_index(index)
        .push_next(&mut import);
    // SAFETY: a live device; the import names a host pointer aligned to the
    // driver's minimum, a size that is a multiple of it, and a memory type
    // both the pointer and the buffer allow; this function's caller keeps
    // the memory alive until the memory object is freed (`Release`).
    let memory = match unsafe { r.raw.allocate_memory(&alloc, None) } {
        Ok(m) => m,
        Err(e) => {
            destroy(buffer);
            return Err(vk_error("vkAllocateMemory")(e));
        }
    };
    // SAFETY: `buffer` has no memory bound; `memory` is at least its
    // required size, of a type it allows; offset 0 meets any alignment.
    if let Err(e) = unsafe { r.raw.bind_buffer_memory(buffer, memory, 0) } {
        destroy(buffer);
        // SAFETY: just allocated, never used.
        unsafe { r.raw.free_memory(memory, None) };
        return Err(vk_error("vkBindBufferMemory")(e));
    }
    let released = Arc::new(Released::default());
    let release = Release {
        raw: r.raw.clone(),
        buffer,
        memory,
        keep,
        released: Arc::clone(&released),
    };
    let callback: wgpu::hal::DropCallback = Box::new(move || release.run());
    // SAFETY: `from_raw_externally_owned` asks that the buffer outlive the
    // hal object (it is destroyed only by the callback, which runs when the
    // hal object drops) and that wgpu never map it (the usage below has no
    // MAP flag).
    let hal = unsafe { wgpu::hal::vulkan::Buffer::from_raw_externally_owned(buffer, callback) };
    let desc = wgpu::BufferDescriptor {
        label: Some("hurray host memory"),
        size: len as u64,
        usage: usage & (BufferUsages::COPY_SRC | BufferUsages::COPY_DST),
        mapped_at_creation: false,
    };
    let wgpu_buffer = exec::scoped_now(device, || {
        // SAFETY: the hal buffer comes from this device, was created with
        // the Vulkan usages wgpu-hal gives `desc.usage`, `desc.size` bytes
        // (non-zero), not mapped, and its contents are defined: host memory
        // always holds bytes (ours are zero-filled, a caller's are its own).
        unsafe { device.create_buffer_from_hal::<Vulkan>(hal, &desc) }
    })
    .map_err(ShareError::Backend)?;
    Ok(Imported {
        buffer: wgpu_buffer,
        ptr,
        len,
        released,
    })
}

/// Records, in a command buffer of its own, a memory barrier that makes
/// earlier transfer writes visible to host reads. Submit it after the
/// copies it covers, in the same or a later submission.
pub(crate) fn host_barrier(device: &wgpu::Device) -> wgpu::CommandBuffer {
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("hurray host barrier"),
    });
    let raw = raw_of(device).ok().map(|r| r.raw);
    // SAFETY: `as_hal_mut` hands the open hal encoder of this (empty) wgpu
    // encoder; a pipeline barrier is recorded into its live command buffer,
    // no resource is referenced (a global memory barrier), and wgpu records
    // nothing else into this encoder.
    unsafe {
        encoder.as_hal_mut::<Vulkan, _, _>(|enc| {
            if let (Some(enc), Some(raw)) = (enc, raw) {
                let barrier = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                    .dst_access_mask(vk::AccessFlags::HOST_READ);
                raw.cmd_pipeline_barrier(
                    enc.raw_handle(),
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                );
            }
        });
    }
    encoder.finish()
}

/// Page-aligned host memory imported as a `wgpu::Buffer` that the GPU's
/// copy engines read and write by DMA (Linux, Vulkan, a device opened with
/// `VK_EXT_external_memory_host`: [`GpuContext::new`](crate::GpuContext::new)
/// opens one where the adapter offers it).
///
/// The buffer has copy usages only (`COPY_SRC`, and `COPY_DST` unless
/// imported read-only): use it as the source or destination of
/// `copy_buffer_to_buffer`. The host memory cannot be freed while the GPU
/// may use it: memory of ours is freed by wgpu itself after its last use,
/// and dropping a `HostBuffer` over your slice waits until wgpu has let go
/// (module `external::host` argues it).
///
/// ```no_run
/// use hurray_gpu::{GpuContext, HostBuffer};
///
/// let ctx = GpuContext::new()?;
/// let mut host = HostBuffer::alloc(&ctx.device, 1 << 20)?;
/// host.write(0, &[1, 2, 3, 4])?;
/// // `host.buffer()` is a COPY_SRC | COPY_DST wgpu buffer.
/// let mut back = [0u8; 4];
/// host.read(0, &mut back)?;
/// assert_eq!(back, [1, 2, 3, 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HostBuffer<'a> {
    inner: Imported,
    shared: Arc<DeviceShared>,
    writable: bool,
    borrowed: bool,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for HostBuffer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("len", &self.inner.len)
            .field("writable", &self.writable)
            .field("borrowed", &self.borrowed)
            .finish_non_exhaustive()
    }
}

impl HostBuffer<'static> {
    /// Allocates `len` bytes of zeroed host memory (rounded up to the
    /// driver's import alignment, at least 4 KiB) and imports it.
    ///
    /// # Errors
    /// [`ShareError::Unsupported`] when the device was not opened with
    /// `VK_EXT_external_memory_host` (or is not Vulkan) or `len` is 0;
    /// [`ShareError::Backend`] with [`BackendError::OutOfHostMemory`] when
    /// the host allocation fails; [`ShareError::Vulkan`] when the driver
    /// refuses the import.
    pub fn alloc(device: &wgpu::Device, len: u64) -> Result<Self, ShareError> {
        let shared = device::shared(device, None);
        let align = import_alignment(device)?;
        let n = usize::try_from(len)
            .ok()
            .and_then(|n| n.checked_next_multiple_of(align))
            .ok_or(ShareError::Backend(ApiMisuse::Overflow.into()))?;
        if n == 0 {
            return Err(Unsupported::Empty.into());
        }
        let pages = PageBox::new(n, align)?;
        let ptr = pages.ptr;
        // SAFETY: `ptr..ptr + n` is `pages`, moved into the import, which
        // frees it only after Vulkan lets go; no reference to it exists.
        let inner = unsafe {
            import_raw(
                device,
                ptr,
                n,
                BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
                Some(pages),
            )
        }?;
        Ok(Self {
            inner,
            shared,
            writable: true,
            borrowed: false,
            _borrow: PhantomData,
        })
    }
}

impl<'a> HostBuffer<'a> {
    /// Imports your page-aligned slice (address and length multiples of the
    /// driver's alignment, at least 4 KiB) as a `COPY_SRC | COPY_DST`
    /// buffer. The slice stays borrowed until the `HostBuffer` drops, and
    /// the drop waits until the GPU has let go of it.
    ///
    /// # Errors
    /// As [`alloc`](HostBuffer::alloc), and [`ApiMisuse::UnalignedHostMemory`] (inside
    /// [`ShareError::Backend`]) for a slice that is not page-aligned.
    pub fn import(device: &wgpu::Device, bytes: &'a mut [u8]) -> Result<Self, ShareError> {
        let ptr = NonNull::from(&mut *bytes).cast::<u8>();
        let len = bytes.len();
        // SAFETY: `bytes` is borrowed mutably for `'a`, which this value
        // holds; its `Drop` waits for `released` before the borrow can end,
        // and no reference into it is made meanwhile.
        let inner = unsafe {
            import_raw(
                device,
                ptr,
                len,
                BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
                None,
            )
        }?;
        Ok(Self::borrowed(device, inner, true))
    }

    /// Imports your page-aligned slice as a `COPY_SRC` buffer: the GPU only
    /// reads it (an mmap'd file's pages, for instance — which NVIDIA's
    /// driver refuses to import; lavapipe accepts them).
    ///
    /// # Errors
    /// As [`import`](HostBuffer::import).
    pub fn import_read_only(device: &wgpu::Device, bytes: &'a [u8]) -> Result<Self, ShareError> {
        let ptr = NonNull::from(bytes).cast::<u8>();
        // SAFETY: `bytes` is borrowed for `'a`, which this value holds; its
        // `Drop` waits for `released`; the buffer has no `COPY_DST` usage,
        // so the GPU never writes what others may read.
        let inner = unsafe { import_raw(device, ptr, bytes.len(), BufferUsages::COPY_SRC, None) }?;
        Ok(Self::borrowed(device, inner, false))
    }

    fn borrowed(device: &wgpu::Device, inner: Imported, writable: bool) -> Self {
        Self {
            inner,
            shared: device::shared(device, None),
            writable,
            borrowed: true,
            _borrow: PhantomData,
        }
    }

    /// The wgpu buffer over the host memory.
    #[must_use]
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.inner.buffer
    }

    /// Its length in bytes (a multiple of the import alignment).
    #[must_use]
    pub fn len(&self) -> u64 {
        self.inner.len as u64
    }

    /// Whether it is empty (never: imports refuse 0 bytes).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// Waits until the device has finished all submitted work, so the host
    /// side can be read or written.
    fn idle(&self) -> Result<(), BackendError> {
        if let Some(q) = self.shared.queue() {
            q.submit([host_barrier(&self.shared.device)]);
        }
        exec::poll(&self.shared.device, wgpu::PollType::wait_indefinitely())
    }

    /// Copies `dst.len()` bytes at `offset` out of the host memory, after
    /// the device's queue is idle (GPU writes submitted so far are visible).
    ///
    /// # Errors
    /// [`ApiMisuse::RangeOutOfBounds`] past the end; the device's loss.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<(), BackendError> {
        let at = self.range(offset, dst.len())?;
        self.idle()?;
        // SAFETY: `at..at + dst.len()` lies in the imported memory (checked
        // by `range`), which is allocated while `self` lives; the queue is
        // idle, and the copy goes through raw pointers into a distinct
        // `dst`, making no reference to memory a device could write.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.inner.ptr.as_ptr().add(at),
                dst.as_mut_ptr(),
                dst.len(),
            );
        }
        Ok(())
    }

    /// Copies `src` into the host memory at `offset`, after the device's
    /// queue is idle. Later submissions see the bytes.
    ///
    /// # Errors
    /// [`ApiMisuse::RangeOutOfBounds`] past the end, [`ApiMisuse::MissingUsage`]
    /// for a read-only import; the device's loss.
    pub fn write(&mut self, offset: u64, src: &[u8]) -> Result<(), BackendError> {
        if !self.writable {
            return Err(ApiMisuse::MissingUsage {
                required: BufferUsages::COPY_DST,
                actual: BufferUsages::COPY_SRC,
            }
            .into());
        }
        let at = self.range(offset, src.len())?;
        self.idle()?;
        // SAFETY: as in `read`, the other way; the memory is writable
        // (ours, or a `&mut` slice of the caller's).
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.inner.ptr.as_ptr().add(at), src.len());
        }
        Ok(())
    }

    fn range(&self, offset: u64, len: usize) -> Result<usize, BackendError> {
        let end = offset.checked_add(len as u64).ok_or(ApiMisuse::Overflow)?;
        if end > self.len() {
            return Err(ApiMisuse::RangeOutOfBounds {
                offset,
                len: len as u64,
                byte_len: self.len(),
            }
            .into());
        }
        usize::try_from(offset).map_err(|_| ApiMisuse::Overflow.into())
    }
}

impl Drop for HostBuffer<'_> {
    fn drop(&mut self) {
        if !self.borrowed {
            // Ours: wgpu frees it after its last use (module docs).
            return;
        }
        // The borrow must not end while Vulkan holds the memory: schedule the
        // destruction (after any submission in flight), then wait for the
        // callback, polling the device so wgpu runs it.
        let _ = exec::scoped_now(&self.shared.device, || self.inner.buffer.destroy());
        let start = Instant::now();
        while !self.inner.released.is_set() {
            let _ = self.shared.device.poll(wgpu::PollType::wait_indefinitely());
            if self.inner.released.is_set() {
                break;
            }
            // The hal object goes once wgpu's last reference does; clones of
            // the buffer do not keep it after `destroy`, but wgpu may need
            // another maintenance pass.
            let guard = self
                .inner
                .released
                .done
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let _ = self
                .inner
                .released
                .cv
                .wait_timeout(guard, std::time::Duration::from_millis(1));
            if start.elapsed() > exec::WAIT_LIMIT {
                // Never hand back memory a device may still write.
                eprintln!("hurray: imported host memory still held by the GPU; aborting");
                std::process::abort();
            }
        }
    }
}

/// One staging buffer of imported host memory of ours, for the transfer
/// engine. Whoever holds it may touch its bytes: the engine moves it into
/// the completion callback of each submission that uses it, so while the
/// GPU works on it no host code holds it.
pub(crate) struct Staging {
    inner: Imported,
}

impl Staging {
    /// A new staging buffer of `len` bytes (a multiple of the import
    /// alignment).
    pub(crate) fn new(device: &wgpu::Device, len: usize) -> Result<Self, ShareError> {
        let align = import_alignment(device)?;
        let pages = PageBox::new(len, align)?;
        let ptr = pages.ptr;
        // SAFETY: as in `HostBuffer::alloc`: the memory moves into the
        // import and is freed after Vulkan lets go.
        let inner = unsafe {
            import_raw(
                device,
                ptr,
                len,
                BufferUsages::COPY_SRC | BufferUsages::COPY_DST,
                Some(pages),
            )
        }?;
        Ok(Self { inner })
    }

    /// The wgpu buffer.
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        &self.inner.buffer
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        self.inner.len
    }

    /// The bytes, for the host side of a transfer.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` is our allocation, alive while the import
        // is (its memory moves to the drop callback, which runs only after
        // the wgpu buffer, held here, is gone). No GPU work uses it while a
        // `Staging` is held outside a completion callback (type docs), and
        // `&self` excludes the `&mut` of `bytes_mut`.
        unsafe { std::slice::from_raw_parts(self.inner.ptr.as_ptr(), self.inner.len) }
    }

    /// The bytes, to fill.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.inner.ptr.as_ptr(), self.inner.len) }
    }
}
