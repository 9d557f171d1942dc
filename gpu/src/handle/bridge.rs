//! The bridge to hurray's format: a GPU buffer described as a
//! [`hurray_core::BufferHandle`], so it can be named by a descriptor.

use hurray_core::{BufferHandle, DeviceTag, MIN_BUFFER_ALIGNMENT, MemoryClass, SyncMode};
use wgpu::BufferUsages;

use super::GpuBufferHandle;
use crate::BackendError;
use crate::exec::{self, block_on, lost_or};

impl GpuBufferHandle {
    /// The [`hurray_core::BufferHandle`] that describes this buffer.
    ///
    /// * `device_tag` — from the adapter's backend: Vulkan → `Vulkan`, Metal →
    ///   `Metal`, browser WebGPU → `WebGpu`. DX12 and GL have no hurray device
    ///   tag and give [`BackendError::NoDeviceTag`].
    /// * `alignment` — the larger of [`MIN_BUFFER_ALIGNMENT`] and the
    ///   device's `min_storage_buffer_offset_alignment` (wgpu places buffers at
    ///   least that aligned).
    /// * `memory_class` — `HostPinned` for mappable (`MAP_READ`/`MAP_WRITE`)
    ///   buffers, which wgpu places in host-visible memory; `Standard` otherwise.
    /// * `sync_mode` — `ProducerSynced`: this call waits until all work
    ///   submitted to the device has completed, so the buffer's contents are
    ///   final when the handle is returned. It is
    ///   [`to_buffer_handle_async`](Self::to_buffer_handle_async) run to
    ///   completion, polling the device.
    /// * `byte_size` — [`byte_len`](Self::byte_len); an empty buffer gives
    ///   [`BufferHandle::empty`].
    ///
    /// # Errors
    /// [`BackendError::NoDeviceTag`], [`BackendError::PollTimeout`],
    /// [`BackendError::DeviceLost`].
    pub fn to_buffer_handle(&self) -> Result<BufferHandle, BackendError> {
        block_on(self.device(), self.to_buffer_handle_async())
    }

    /// The async form of [`to_buffer_handle`](Self::to_buffer_handle): never
    /// blocks. The wait for the device's work is a callback
    /// (`Queue::on_submitted_work_done` on the device's queue), delivered
    /// when the device is polled, as for every `_async` transfer. On a
    /// device hurray never knew a queue for (only `alloc` used it), hurray
    /// submitted nothing: the future then polls the device without
    /// blocking each time it is polled, until its queue is empty.
    ///
    /// # Errors
    /// As [`to_buffer_handle`](Self::to_buffer_handle).
    pub async fn to_buffer_handle_async(&self) -> Result<BufferHandle, BackendError> {
        let shared = &self.inner.shared;
        let device = &shared.device;
        // A backend without a tag is refused before any wait.
        self.device_tag()?;
        let queue = shared.queue();
        exec::idle(device, queue).await.map_err(|e| match queue {
            Some(q) => lost_or(device, q, e),
            None => e,
        })?;
        self.buffer_handle_now(SyncMode::ProducerSynced)
    }

    /// The hurray device tag of the buffer's backend.
    fn device_tag(&self) -> Result<DeviceTag, BackendError> {
        match self.inner.shared.device.adapter_info().backend {
            wgpu::Backend::Vulkan => Ok(DeviceTag::Vulkan),
            wgpu::Backend::Metal => Ok(DeviceTag::Metal),
            wgpu::Backend::BrowserWebGpu => Ok(DeviceTag::WebGpu),
            other => Err(BackendError::NoDeviceTag(other)),
        }
    }

    /// The buffer's description with `sync` as its sync mode, without
    /// waiting for anything (the caller says, by `sync`, how a consumer
    /// learns the contents are final).
    pub(crate) fn buffer_handle_now(&self, sync: SyncMode) -> Result<BufferHandle, BackendError> {
        let shared = &self.inner.shared;
        let tag = self.device_tag()?;
        if self.inner.byte_len == 0 {
            return Ok(BufferHandle::empty(tag));
        }
        let alignment = shared
            .limits
            .min_storage_buffer_offset_alignment
            .max(MIN_BUFFER_ALIGNMENT);
        let class = if self
            .inner
            .usage
            .intersects(BufferUsages::MAP_READ | BufferUsages::MAP_WRITE)
        {
            MemoryClass::HostPinned
        } else {
            MemoryClass::Standard
        };
        BufferHandle::with_memory_class(self.inner.byte_len, alignment, tag, sync, class)
            .map_err(|_| BackendError::Bug("a valid buffer gave an invalid BufferHandle"))
    }
}
