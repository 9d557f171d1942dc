//! A ready-made adapter + device + queue, for programs that do not bring their own.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::BackendError;

/// A wgpu device and queue with hurray's defaults: the adapter's own limits
/// (so buffers may be as large as the hardware allows), and device-loss
/// tracking.
///
/// ```no_run
/// let ctx = hurray_gpu::GpuContext::new()?;
/// println!("running on {}", ctx.adapter_info().name);
/// # Ok::<(), hurray_gpu::BackendError>(())
/// ```
#[derive(Debug, Clone)]
pub struct GpuContext {
    /// The adapter the device was created on.
    pub adapter: wgpu::Adapter,
    /// The device.
    pub device: wgpu::Device,
    /// The device's queue.
    pub queue: wgpu::Queue,
    lost: Arc<AtomicBool>,
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
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| BackendError::NoAdapter(e.to_string()))?;
        Self::from_adapter(adapter).await
    }

    /// Creates the device on a given adapter.
    ///
    /// # Errors
    /// [`BackendError::RequestDevice`] when device creation fails.
    pub async fn from_adapter(adapter: wgpu::Adapter) -> Result<Self, BackendError> {
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("hurray"),
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| BackendError::RequestDevice(e.to_string()))?;
        let lost = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&lost);
        device
            .set_device_lost_callback(move |_reason, _message| flag.store(true, Ordering::SeqCst));
        Ok(Self {
            adapter,
            device,
            queue,
            lost,
        })
    }

    /// Information about the adapter.
    #[must_use]
    pub fn adapter_info(&self) -> wgpu::AdapterInfo {
        self.adapter.get_info()
    }

    /// Whether the device has been lost (or destroyed) since creation.
    ///
    /// Polls the device once without blocking, since wgpu delivers the loss
    /// notification from `poll`.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        // A failed poll is itself a sign of trouble, but the flag is the answer.
        let _ = self.device.poll(wgpu::PollType::Poll);
        self.lost.load(Ordering::SeqCst)
    }
}
