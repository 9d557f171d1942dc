//! A ready-made adapter + device + queue, for programs that do not bring
//! their own; the owner of hurray's identity of the device, so the calls made
//! through it ([`GpuContext::upload`], [`GpuContext::alloc`],
//! [`GpuContext::kernel`]) name no device or queue and need no lookup.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wgpu::BufferUsages;
use zerocopy::{Immutable, IntoBytes};

use crate::device::{self, DeviceShared, TeardownEnd, TeardownStart};
use crate::exec::block_on;
use crate::{BackendError, GpuBufferHandle, GpuKernel};

/// A wgpu device and queue with hurray's defaults: the adapter's own limits
/// (so buffers may be as large as the hardware allows),
/// `MAPPABLE_PRIMARY_BUFFERS` where the adapter offers it, and device-loss
/// tracking.
///
/// Dropping the last clone of a context tears the device down under a
/// process-wide lock: NVIDIA's Vulkan driver deadlocks when two threads
/// destroy devices at once (`docs/robustness.md`). Devices you create
/// yourself should be dropped from one thread at a time, or wrapped with
/// [`GpuContext::from_device`].
///
/// ## Polling, for the async API
///
/// The `_async` transfers never block: they wait for wgpu callbacks, which
/// run when the device is polled. Poll it from your event loop
/// ([`GpuContext::poll`] or `device.poll(wgpu::PollType::Poll)` each frame),
/// or from a helper thread that calls
/// `device.poll(wgpu::PollType::wait_indefinitely())` in a loop. In a browser
/// the event loop polls for you. The blocking calls poll by themselves.
///
/// ## Identity
///
/// The context is hurray's device: the calls made through it
/// ([`upload`](Self::upload), [`alloc`](Self::alloc), [`kernel`](Self::kernel))
/// give handles and kernels that carry its identity and name no device or
/// queue again ([`GpuBufferHandle::read`], [`GpuKernel::launch`]). The seed's
/// calls that name `&ctx.device` find the same identity (ADR-112).
///
/// ```no_run
/// let ctx = hurray_gpu::GpuContext::new()?;
/// println!("running on {}", ctx.adapter_info().name);
/// # Ok::<(), hurray_gpu::BackendError>(())
/// ```
#[derive(Debug, Clone)]
pub struct GpuContext {
    _start: TeardownStart,
    /// The adapter the device was created on.
    pub adapter: wgpu::Adapter,
    /// The device.
    pub device: wgpu::Device,
    /// The device's queue.
    pub queue: wgpu::Queue,
    lost: Arc<AtomicBool>,
    shared: Arc<DeviceShared>,
    _end: TeardownEnd,
}

impl GpuContext {
    /// Picks the highest-performance adapter of any backend (software adapters
    /// included) and creates a device on it.
    ///
    /// # Errors
    /// [`BackendError::NoAdapter`] when none exists, [`BackendError::RequestDevice`]
    /// when device creation fails.
    pub fn new() -> Result<Self, BackendError> {
        pollster::block_on(Self::new_async())
    }

    /// The async form of [`GpuContext::new`].
    ///
    /// # Errors
    /// As [`GpuContext::new`].
    pub async fn new_async() -> Result<Self, BackendError> {
        Self::with_options_async(ContextOptions::default()).await
    }

    /// As [`GpuContext::new`], with [`ContextOptions`].
    ///
    /// ```no_run
    /// use hurray_gpu::{ContextOptions, GpuContext};
    ///
    /// // Keep transfers on mapped staging buffers, even where DMA is offered.
    /// let ctx = GpuContext::with_options(ContextOptions::default().host_dma(false))?;
    /// assert!(!ctx.host_dma());
    /// # Ok::<(), hurray_gpu::BackendError>(())
    /// ```
    ///
    /// # Errors
    /// As [`GpuContext::new`].
    pub fn with_options(options: ContextOptions) -> Result<Self, BackendError> {
        pollster::block_on(Self::with_options_async(options))
    }

    /// The async form of [`GpuContext::with_options`].
    ///
    /// # Errors
    /// As [`GpuContext::new`].
    pub async fn with_options_async(options: ContextOptions) -> Result<Self, BackendError> {
        let adapter = Self::adapter().await?;
        Self::from_adapter_with_options(adapter, options).await
    }

    /// The adapter [`GpuContext::new`] would pick.
    ///
    /// # Errors
    /// [`BackendError::NoAdapter`] when none exists.
    pub async fn adapter() -> Result<wgpu::Adapter, BackendError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| BackendError::NoAdapter(e.to_string()))
    }

    /// Creates the device on a given adapter, with the adapter's limits.
    ///
    /// # Errors
    /// [`BackendError::RequestDevice`] when device creation fails.
    pub async fn from_adapter(adapter: wgpu::Adapter) -> Result<Self, BackendError> {
        let limits = adapter.limits();
        Self::from_adapter_with_limits(adapter, limits).await
    }

    /// Creates the device on a given adapter with the given limits (which
    /// must not exceed the adapter's).
    ///
    /// # Errors
    /// [`BackendError::RequestDevice`] when device creation fails.
    pub async fn from_adapter_with_limits(
        adapter: wgpu::Adapter,
        limits: wgpu::Limits,
    ) -> Result<Self, BackendError> {
        Self::from_adapter_with_options(adapter, ContextOptions::default().limits(limits)).await
    }

    /// Creates the device on a given adapter with [`ContextOptions`].
    ///
    /// # Errors
    /// [`BackendError::RequestDevice`] when device creation fails.
    pub async fn from_adapter_with_options(
        adapter: wgpu::Adapter,
        options: ContextOptions,
    ) -> Result<Self, BackendError> {
        let limits = options.limits.unwrap_or_else(|| adapter.limits());
        // Harmless for every other buffer; lets `MAP_READ` storage buffers be
        // read back by mapping them directly (`docs/impl/gpu-transfers.md`).
        let features = adapter.features() & wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
        let desc = wgpu::DeviceDescriptor {
            label: Some("hurray"),
            required_limits: limits,
            required_features: features,
            ..Default::default()
        };
        // Host memory for DMA and timeline semaphores shared as fds need
        // extensions wgpu does not enable: open the device through the HAL
        // with those the adapter has.
        #[cfg(target_os = "linux")]
        {
            use crate::external::{host, semaphore};
            let mut extensions = Vec::new();
            if options.host_dma && host::adapter_supports(&adapter) {
                extensions.push(host::EXTENSION);
            }
            if options.event_sync && semaphore::adapter_supports(&adapter) {
                extensions.push(semaphore::EXTENSION);
            }
            if !extensions.is_empty() {
                if let Some(made) = host::open_device(&adapter, &desc, &extensions) {
                    let (device, queue) = made?;
                    return Ok(Self::from_device(adapter, device, queue));
                }
            }
        }
        let (device, queue) = adapter
            .request_device(&desc)
            .await
            .map_err(|e| BackendError::RequestDevice(e.to_string()))?;
        // A device made just now: registered without any lookup.
        let shared = device::register(&device, &queue);
        Ok(Self::wrap(adapter, device, queue, shared))
    }

    /// Wraps a device you created (with its adapter and queue): hurray records
    /// the queue as the device's, tracks device loss, and tears it down under
    /// the process-wide lock when the last clone of the context drops.
    ///
    /// This replaces the device's lost callback.
    ///
    /// A device hurray already knows (one a seed call named, or another
    /// context's clone) gets the state it has, so its handles and kernels
    /// meet; a new one is registered. The match is the seed signatures' one
    /// (`==`, confirmed by an error-scope probe where two instances' ids
    /// collide; see `ARCHITECTURE.md`).
    #[must_use]
    pub fn from_device(adapter: wgpu::Adapter, device: wgpu::Device, queue: wgpu::Queue) -> Self {
        let shared = device::shared(&device, Some(&queue));
        Self::wrap(adapter, device, queue, shared)
    }

    /// The context of `device` with its state `shared`.
    fn wrap(
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
        shared: Arc<DeviceShared>,
    ) -> Self {
        let lost = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&lost);
        device
            .set_device_lost_callback(move |_reason, _message| flag.store(true, Ordering::SeqCst));
        Self {
            _start: TeardownStart,
            adapter,
            device,
            queue,
            lost,
            shared,
            _end: TeardownEnd,
        }
    }

    /// Information about the adapter.
    #[must_use]
    pub fn adapter_info(&self) -> wgpu::AdapterInfo {
        self.adapter.get_info()
    }

    /// Polls the device once without blocking: runs the callbacks of finished
    /// GPU work, which completes pending `_async` transfers.
    ///
    /// # Errors
    /// [`BackendError::DeviceLost`] when the device is lost.
    pub fn poll(&self) -> Result<(), BackendError> {
        crate::exec::poll(&self.device, wgpu::PollType::Poll)
    }

    /// Whether the device has been lost (or destroyed) since creation.
    ///
    /// Polls the device once without blocking, since wgpu delivers the loss
    /// notification from `poll`.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        // A failed poll is itself a sign of trouble, but the flag is the answer.
        let _ = self.poll();
        self.lost.load(Ordering::SeqCst) || crate::exec::is_lost(&self.device, &self.queue)
    }

    /// Whether transfers of 1 MiB and more on this device stage through host
    /// memory the GPU reaches by DMA (Linux, Vulkan, a device opened with
    /// `VK_EXT_external_memory_host`), rather than mapped staging buffers.
    #[must_use]
    pub fn host_dma(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.shared.dma.available(&self.device)
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Bytes of idle staging buffers hurray keeps for this device.
    #[must_use]
    pub fn pooled_staging_bytes(&self) -> u64 {
        self.shared.pooled_bytes()
    }

    /// hurray's state of this context's device: its identity (for sharing's
    /// calls through the context).
    #[cfg(target_os = "linux")]
    pub(crate) fn shared(&self) -> &Arc<DeviceShared> {
        &self.shared
    }

    /// Uploads `bytes` into a new buffer of this device: as
    /// [`GpuBufferHandle::upload`], without naming the device and queue.
    ///
    /// ```no_run
    /// use hurray_gpu::{GpuContext, wgpu::BufferUsages};
    ///
    /// let ctx = GpuContext::new()?;
    /// let h = ctx.upload(b"hello", BufferUsages::COPY_SRC)?;
    /// let mut out = Vec::new();
    /// h.read(&mut out)?;
    /// assert_eq!(out, b"hello");
    /// # Ok::<(), hurray_gpu::BackendError>(())
    /// ```
    ///
    /// # Errors
    /// As [`GpuBufferHandle::upload`], without the device and queue checks.
    pub fn upload(
        &self,
        bytes: &[u8],
        usage: BufferUsages,
    ) -> Result<GpuBufferHandle, BackendError> {
        self.upload_slice(bytes, usage)
    }

    /// Uploads plain-data values into a new buffer of this device: as
    /// [`GpuBufferHandle::upload_slice`].
    ///
    /// # Errors
    /// As [`upload`](Self::upload).
    pub fn upload_slice<T: IntoBytes + Immutable>(
        &self,
        data: &[T],
        usage: BufferUsages,
    ) -> Result<GpuBufferHandle, BackendError> {
        block_on(&self.shared.device, self.upload_slice_async(data, usage))
    }

    /// The async form of [`upload_slice`](Self::upload_slice): never blocks.
    ///
    /// # Errors
    /// As [`upload`](Self::upload).
    pub async fn upload_slice_async<T: IntoBytes + Immutable>(
        &self,
        data: &[T],
        usage: BufferUsages,
    ) -> Result<GpuBufferHandle, BackendError> {
        GpuBufferHandle::upload_on(&self.shared, data, usage).await
    }

    /// Allocates a zeroed buffer of `len` bytes on this device: as
    /// [`GpuBufferHandle::alloc`].
    ///
    /// # Errors
    /// As [`GpuBufferHandle::alloc`].
    pub fn alloc(&self, len: u64, usage: BufferUsages) -> Result<GpuBufferHandle, BackendError> {
        GpuBufferHandle::alloc_on(&self.shared, len, usage)
    }

    /// Allocates room for `count` values of `T` on this device: as
    /// [`GpuBufferHandle::alloc_elements`].
    ///
    /// # Errors
    /// As [`GpuBufferHandle::alloc_elements`].
    pub fn alloc_elements<T>(
        &self,
        count: usize,
        usage: BufferUsages,
    ) -> Result<GpuBufferHandle, BackendError> {
        GpuBufferHandle::alloc_elements_on::<T>(&self.shared, count, usage)
    }

    /// Compiles a compute kernel for this device: as [`GpuKernel::new`].
    ///
    /// # Errors
    /// As [`GpuKernel::new`].
    pub fn kernel(&self, wgsl: &str, entry_point: &str) -> Result<GpuKernel, BackendError> {
        GpuKernel::on(Arc::clone(&self.shared), wgsl, entry_point)
    }
}

/// How [`GpuContext`] opens its device.
///
/// ```
/// let o = hurray_gpu::ContextOptions::default().host_dma(false);
/// assert!(!o.host_dma);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ContextOptions {
    /// The limits to ask for (`None`: the adapter's own).
    pub limits: Option<wgpu::Limits>,
    /// Open the device with `VK_EXT_external_memory_host` where the adapter
    /// offers it (Linux, Vulkan), so that transfers of 1 MiB and more stage
    /// through host memory the GPU reaches by DMA. Default `true`; `false`
    /// keeps wgpu's own device creation and mapped staging buffers.
    pub host_dma: bool,
    /// Open the device with `VK_KHR_external_semaphore_fd` where the adapter
    /// offers it (Linux, Vulkan), so that
    /// [`export_event`](crate::GpuBufferHandle::export_event) sends a
    /// timeline semaphore instead of waiting for the queue
    /// ([`GpuContext::event_sync`] says whether it does). Default `true`.
    pub event_sync: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        Self {
            limits: None,
            host_dma: true,
            event_sync: true,
        }
    }
}

impl ContextOptions {
    /// Sets [`event_sync`](Self::event_sync).
    #[must_use]
    pub fn event_sync(mut self, on: bool) -> Self {
        self.event_sync = on;
        self
    }

    /// Sets [`host_dma`](Self::host_dma).
    #[must_use]
    pub fn host_dma(mut self, on: bool) -> Self {
        self.host_dma = on;
        self
    }

    /// Sets [`limits`](Self::limits).
    #[must_use]
    pub fn limits(mut self, limits: wgpu::Limits) -> Self {
        self.limits = Some(limits);
        self
    }
}
