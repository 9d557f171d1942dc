//! External memory (Linux, Vulkan): GPU memory that hurray allocates or
//! imports outside wgpu's allocator, wrapped as an ordinary `wgpu::Buffer`.
//!
//! ## Contract
//!
//! * **What this room does.** It finds the Vulkan objects behind a wgpu
//!   device ([`vk::Vk`]), allocates memory another device, process or API
//!   can import (an opaque file descriptor, `VK_KHR_external_memory_fd`),
//!   imports such memory, and hands the buffer to wgpu. Every `unsafe` call
//!   of it is in [`vk`], each block argued there; nothing here knows about
//!   messages or sockets (that is `share`'s), nor about handles (the handle
//!   keeps an [`ExternalMemory`] it is given, opaque to it).
//! * **Defined contents.** A buffer handed to wgpu from here never exposes
//!   undefined memory: a fresh allocation is cleared in the first
//!   submission that uses it ([`allocate_exportable`]); imported memory
//!   holds what its producer wrote.
//! * **Unsupported is an error, not a panic.** A device of another backend,
//!   a driver without the extension or without Vulkan 1.1, or one that
//!   cannot export storage buffers, answers [`ShareError::Unsupported`].
//! * **Ownership.** The wgpu buffer owns the Vulkan buffer and memory (freed
//!   with it); the [`ExternalMemory`] keeps a file descriptor of its own, so
//!   later exports never touch the Vulkan memory object.
//!
//! Timeline semaphores shared as fds (`VK_KHR_external_semaphore_fd`, the
//! `Event` sync of a shared buffer, issue 21) live in [`semaphore`], with
//! every `unsafe` of that feature (ADR-117).
//!
//! Host memory imported for DMA (`VK_EXT_external_memory_host`, issue 21)
//! lives in [`host`], with every `unsafe` of that feature: the device
//! opened with the extension, [`HostBuffer`], and the transfer engine's DMA
//! staging.

mod error;
pub(crate) mod host;
pub(crate) mod semaphore;
mod vk;

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, PoisonError};

use wgpu::BufferUsages;

pub use error::{DeviceIdentity, MessageError, ShareError, Unsupported};
pub use host::{HOST_PAGE, HostBuffer};

use crate::device::DeviceShared;
use crate::exec;

/// The usage of every exportable and imported buffer: storage (kernels
/// read and write it) and copies both ways (upload, write, readback).
/// Fixed, so that exporter and importer create identical buffers, as a
/// dedicated import requires.
pub const SHARED_USAGE: BufferUsages = BufferUsages::STORAGE
    .union(BufferUsages::COPY_SRC)
    .union(BufferUsages::COPY_DST);

/// What an importer must know about a piece of external memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Memory {
    /// `VkMemoryAllocateInfo::allocationSize`.
    pub(crate) allocation_size: u64,
    /// The Vulkan memory type it was allocated from.
    pub(crate) memory_type_index: u32,
    /// A dedicated allocation (an importer must import it as one).
    pub(crate) dedicated: bool,
    /// The device and driver it lives on.
    pub(crate) identity: DeviceIdentity,
}

/// What an exportable or imported buffer keeps: a file descriptor for its
/// memory (so an export never touches the Vulkan memory object, which the
/// caller may destroy through `buffer().destroy()`), what an importer
/// must know about that memory, and its timeline semaphore once it has one
/// (made by the first `Event` export, or imported with the memory).
#[derive(Debug)]
pub(crate) struct ExternalMemory {
    fd: OwnedFd,
    memory: Memory,
    timeline: Mutex<Option<Arc<semaphore::Timeline>>>,
}

impl ExternalMemory {
    /// The buffer's timeline semaphore, if it has one.
    pub(crate) fn timeline(&self) -> Option<Arc<semaphore::Timeline>> {
        self.timeline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The buffer's timeline semaphore, made exportable on `device` if it
    /// has none yet.
    pub(crate) fn timeline_or_new(
        &self,
        device: &wgpu::Device,
    ) -> Result<Arc<semaphore::Timeline>, ShareError> {
        let mut slot = self.timeline.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = slot.as_ref() {
            return Ok(Arc::clone(t));
        }
        let t = Arc::new(semaphore::Timeline::exportable(device)?);
        *slot = Some(Arc::clone(&t));
        Ok(t)
    }

    /// Sets the buffer's timeline semaphore (an imported one).
    pub(crate) fn set_timeline(&self, timeline: Arc<semaphore::Timeline>) {
        *self.timeline.lock().unwrap_or_else(PoisonError::into_inner) = Some(timeline);
    }

    /// What an importer must know about the memory.
    pub(crate) fn memory(&self) -> Memory {
        self.memory
    }

    /// A new file descriptor for the memory (`dup`).
    pub(crate) fn dup_fd(&self) -> Result<OwnedFd, ShareError> {
        self.fd.try_clone().map_err(|e| ShareError::io("dup", &e))
    }
}

impl ExternalMemory {
    fn new(fd: OwnedFd, memory: Memory) -> Self {
        Self {
            fd,
            memory,
            timeline: Mutex::new(None),
        }
    }
}

/// Whether `Event` exports of buffers on `device` carry a timeline
/// semaphore (Linux, Vulkan 1.2, `VK_KHR_external_semaphore_fd` enabled on
/// the device, timeline semaphores exportable and importable as opaque fds).
/// Where it is not, [`GpuBufferHandle::export_event`](crate::GpuBufferHandle::export_event)
/// waits for the queue instead, as [`export`](crate::GpuBufferHandle::export)
/// does. [`GpuContext::new`](crate::GpuContext::new) opens its device with
/// the extension wherever the adapter offers it; a device you created
/// yourself generally lacks it (wgpu does not enable it).
///
/// ```no_run
/// let ctx = hurray_gpu::GpuContext::new()?;
/// match hurray_gpu::event_sync(&ctx.device) {
///     Ok(()) => println!("exports signal a timeline semaphore"),
///     Err(why) => println!("exports wait for the queue: {why}"),
/// }
/// # Ok::<(), hurray_gpu::BackendError>(())
/// ```
///
/// # Errors
/// [`ShareError::Unsupported`] saying what is missing.
pub fn event_sync(device: &wgpu::Device) -> Result<(), ShareError> {
    semaphore::check(device)
}

/// The `deviceUUID` and `driverUUID` of a wgpu device: memory exported on
/// one device can be imported by another (in this or another process, or by
/// CUDA) only when both match.
///
/// # Errors
/// [`ShareError::Unsupported`] when the device cannot share (not Vulkan, no
/// `VK_KHR_external_memory_fd`, below Vulkan 1.1).
pub fn device_identity(device: &wgpu::Device) -> Result<DeviceIdentity, ShareError> {
    Ok(vk::Vk::of(device)?.identity)
}

/// Runs `f` inside wgpu error scopes; a wgpu error becomes a [`ShareError`].
fn scoped<R>(shared: &DeviceShared, f: impl FnOnce() -> R) -> Result<R, ShareError> {
    Ok(exec::scoped_now(&shared.device, f)?)
}

/// Allocates `size` bytes (a multiple of 4, checked against the device by
/// the caller) of exportable, device-local memory as one dedicated
/// allocation, and returns it as a cleared wgpu buffer of
/// [`SHARED_USAGE`] with its [`ExternalMemory`].
///
/// # Errors
/// [`ShareError::Unsupported`] when the device cannot export (or `size` is
/// 0), [`ShareError::Vulkan`] when the driver refuses.
#[allow(unsafe_code)]
pub(crate) fn allocate_exportable(
    shared: &DeviceShared,
    queue: &wgpu::Queue,
    size: u64,
) -> Result<(wgpu::Buffer, ExternalMemory), ShareError> {
    let vk = vk::Vk::of(&shared.device)?;
    let allocation = vk.allocate(size)?;
    let fd = vk.export_fd(&allocation)?;
    let memory = Memory {
        allocation_size: allocation.allocation_size,
        memory_type_index: allocation.memory_type_index,
        dedicated: true,
        identity: vk.identity,
    };
    let device = &shared.device;
    let buffer = scoped(shared, || {
        // SAFETY: `hand_to_wgpu` asks that nothing read the buffer before
        // its contents are defined. The buffer's contents are
        // undefined until cleared; it is cleared in the next submission,
        // below, before this function gives the buffer to anyone, so no
        // work reads it first. Should the clear fail to be recorded, the
        // buffer is dropped here with the error, unread.
        let buffer = unsafe { vk.hand_to_wgpu(allocation, "hurray exportable buffer") };
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("hurray exportable clear"),
        });
        encoder.clear_buffer(&buffer, 0, None);
        queue.submit([encoder.finish()]);
        buffer
    })?;
    Ok((buffer, ExternalMemory::new(fd, memory)))
}

/// Imports `fd`, external memory described by `memory`, as a wgpu buffer
/// of `size` bytes (a multiple of 4, checked against the device by the
/// caller) and [`SHARED_USAGE`]. The fd is consumed (the driver owns it on
/// success); the returned [`ExternalMemory`] keeps a duplicate.
///
/// # Errors
/// [`ShareError::Unsupported`] when `device` cannot import;
/// [`ShareError::DeviceMismatch`] when the memory comes from another
/// physical device or driver; [`ShareError::MemoryType`] and
/// [`ShareError::Message`] (`BufferLargerThanAllocation`) when the stated
/// memory cannot back the buffer here; [`ShareError::Vulkan`] when the
/// driver refuses the fd.
#[allow(unsafe_code)]
pub(crate) fn import(
    shared: &DeviceShared,
    fd: OwnedFd,
    size: u64,
    memory: Memory,
) -> Result<(wgpu::Buffer, ExternalMemory), ShareError> {
    let vk = vk::Vk::of(&shared.device)?;
    if vk.identity != memory.identity {
        return Err(ShareError::DeviceMismatch {
            local: vk.identity,
            remote: memory.identity,
        });
    }
    let keep = fd.try_clone().map_err(|e| ShareError::io("dup", &e))?;
    let allocation = vk.import(
        fd,
        size,
        memory.allocation_size,
        memory.memory_type_index,
        memory.dedicated,
    )?;
    let buffer = scoped(shared, || {
        // SAFETY: `hand_to_wgpu` asks that nothing read the buffer before
        // its contents are defined. Imported memory holds what
        // its producer wrote (an export is `ProducerSynced`: the producer's
        // work finished before the fd left), so its contents are defined.
        unsafe { vk.hand_to_wgpu(allocation, "hurray imported buffer") }
    })?;
    Ok((buffer, ExternalMemory::new(keep, memory)))
}

/// The size and the allowed memory types (bit `i` for type `i`) Vulkan
/// requires for a shared buffer of `size` bytes on `device`: what the
/// import checks compare a message against.
#[cfg(test)]
pub(crate) fn requirements(device: &wgpu::Device, size: u64) -> Result<(u64, u32), ShareError> {
    vk::Vk::of(device)?.requirements(size)
}
