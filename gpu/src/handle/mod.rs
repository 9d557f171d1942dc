//! The handle room: `GpuBufferHandle`, a cheaply cloneable handle to a
//! GPU-resident buffer, and its process-wide registry.
//!
//! ## Contract
//!
//! * This file holds the handle itself: what it owns, how it is made
//!   (`alloc`, and [`GpuBufferHandle::from_parts`] for buffers other rooms
//!   make, such as sharing's), its registry and its accessors.
//!   [`transfers`] holds its transfers, [`bridge`] its description as a
//!   `hurray_core::BufferHandle`.
//! * Every transfer comes in two signatures over one body: the seed's, which
//!   names a device and queue that must be the handle's own
//!   ([`ApiMisuse::WrongDevice`], [`ApiMisuse::WrongQueue`]; the check is
//!   `DeviceShared::check`), and the shorter one
//!   ([`read`](GpuBufferHandle::read), [`write_at`](GpuBufferHandle::write_at),
//!   …), which names none and uses the handle's own. Both check usage,
//!   range and overflow before anything is encoded, and only then reach the
//!   transfer engine ([`crate::transfer`]), which uses the handle's own
//!   device and queue, never the caller's.
//! * Each blocking call is its `_async` form run by `exec::block_on`.
//! * Dropping the last clone of a handle frees its GPU memory at once
//!   (`wgpu::Buffer::destroy`, deferred by wgpu until submitted work that uses
//!   it is done) and removes the bind groups that kernels cached for it.
//! * Imports run one way: the handle knows the device state, the transfer
//!   engine and (opaquely) the external memory it may hold; it never knows
//!   sharing, which builds on it.

use std::fmt;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::LazyLock;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use wgpu::{BufferUsages, COPY_BUFFER_ALIGNMENT};

use crate::device::{self, DeviceShared, TeardownEnd, TeardownStart};
use crate::exec;
#[cfg(target_os = "linux")]
use crate::external::ExternalMemory;
use crate::registry::{self, Registry};
use crate::{ApiMisuse, BackendError};

mod bridge;
mod transfers;

/// A cache that keeps GPU objects naming buffers (a kernel's bind groups):
/// told when a buffer dies, so that it lets go of it at once.
pub(crate) trait Evict: wgpu::WasmNotSendSync {
    /// Drops every entry that names buffer `id`.
    fn evict(&self, id: u64);
}

pub(crate) struct Inner {
    _start: TeardownStart,
    id: u64,
    buffer: wgpu::Buffer,
    shared: Arc<DeviceShared>,
    byte_len: u64,
    allocation_len: u64,
    element_count: usize,
    usage: BufferUsages,
    /// Set while a direct read maps the buffer itself.
    mapping: AtomicBool,
    /// Caches holding GPU objects that name this buffer.
    bound_by: Mutex<Vec<Weak<dyn Evict>>>,
    /// The external memory behind an exportable or imported buffer.
    #[cfg(target_os = "linux")]
    external: Option<ExternalMemory>,
    _end: TeardownEnd,
}

impl Drop for Inner {
    fn drop(&mut self) {
        resident(|r| r.unregister(self.id));
        let caches =
            std::mem::take(&mut *self.bound_by.lock().unwrap_or_else(PoisonError::into_inner));
        for cache in caches.iter().filter_map(Weak::upgrade) {
            cache.evict(self.id);
        }
        // Free the memory now, even if wgpu objects elsewhere (a clone of
        // `buffer()`, a bind group) still name the buffer.
        self.buffer.destroy();
    }
}

#[cfg(not(target_arch = "wasm32"))]
static RESIDENT: LazyLock<Registry<Inner>> = LazyLock::new(Registry::new);

/// Runs `f` on the process's registry of live buffers.
#[cfg(not(target_arch = "wasm32"))]
fn resident<R>(f: impl FnOnce(&Registry<Inner>) -> R) -> R {
    f(&RESIDENT)
}

// The browser's wasm32 has one thread, and its wgpu objects are not `Send`.
#[cfg(target_arch = "wasm32")]
thread_local! {
    static RESIDENT: Registry<Inner> = Registry::new();
}

/// Runs `f` on the process's registry of live buffers.
#[cfg(target_arch = "wasm32")]
fn resident<R>(f: impl FnOnce(&Registry<Inner>) -> R) -> R {
    RESIDENT.with(f)
}

/// Number of live buffers in the registry (diagnostics and leak tests).
#[must_use]
pub fn resident_count() -> usize {
    resident(Registry::len)
}

/// Cheaply cloneable handle for a GPU-resident buffer.
///
/// The handle records the byte length originally requested by the caller,
/// the backing allocation length, the logical element count, and the actual
/// usage flags used to create the underlying [`wgpu::Buffer`].
///
/// Every handle has a process-wide id ([`id`](Self::id)); while any clone is
/// alive, [`from_resident_id`](Self::from_resident_id) resolves it. Dropping
/// the last clone frees the GPU memory at once.
///
/// Every transfer has a blocking form and an `_async` form that never blocks
/// (see the crate docs for who must poll the device).
///
/// Each transfer has two signatures: the seed's, which names the device and
/// queue (checked against the handle's own), and a shorter one that names
/// neither and uses the handle's own — [`GpuContext::upload`](crate::GpuContext::upload),
/// [`read`](Self::read), [`write_at`](Self::write_at) and so on.
///
/// ```no_run
/// use hurray_gpu::{GpuBufferHandle, GpuContext, wgpu::BufferUsages};
///
/// let ctx = GpuContext::new()?;
/// // The shorter form: the context is the device.
/// let h = ctx.upload(b"hello", BufferUsages::COPY_SRC)?;
/// let mut out = Vec::new();
/// h.read(&mut out)?;
/// assert_eq!(out, b"hello");
/// // The seed's form.
/// let h = GpuBufferHandle::upload(&ctx.device, &ctx.queue, b"hello", BufferUsages::COPY_SRC)?;
/// assert_eq!((h.byte_len(), h.allocation_len(), h.element_count()), (5, 8, 5));
/// let mut out = Vec::new();
/// h.readback(&ctx.device, &ctx.queue, &mut out)?;
/// assert_eq!(out, b"hello");
/// # Ok::<(), hurray_gpu::BackendError>(())
/// ```
#[derive(Clone)]
pub struct GpuBufferHandle {
    inner: Arc<Inner>,
}

impl fmt::Debug for GpuBufferHandle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("GpuBufferHandle")
            .field("id", &self.inner.id)
            .field("byte_len", &self.inner.byte_len)
            .field("allocation_len", &self.inner.allocation_len)
            .field("element_count", &self.inner.element_count)
            .field("usage", &self.inner.usage)
            .finish()
    }
}

/// What [`GpuBufferHandle::from_parts`] makes a handle of.
pub(crate) struct Parts {
    pub(crate) shared: Arc<DeviceShared>,
    pub(crate) buffer: wgpu::Buffer,
    pub(crate) byte_len: u64,
    pub(crate) allocation_len: u64,
    pub(crate) element_count: usize,
    pub(crate) usage: BufferUsages,
    #[cfg(target_os = "linux")]
    pub(crate) external: Option<ExternalMemory>,
}

/// `len` rounded up to wgpu's copy granularity, checked against the device.
pub(crate) fn allocation_len(shared: &DeviceShared, len: u64) -> Result<u64, BackendError> {
    let rounded = len
        .checked_next_multiple_of(COPY_BUFFER_ALIGNMENT)
        .ok_or(ApiMisuse::Overflow)?;
    let max = shared.limits.max_buffer_size;
    if rounded > max {
        return Err(ApiMisuse::TooLarge {
            requested: rounded,
            max,
        }
        .into());
    }
    Ok(rounded)
}

impl GpuBufferHandle {
    fn create(
        shared: Arc<DeviceShared>,
        byte_len: u64,
        element_count: usize,
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        let allocation_len = allocation_len(&shared, byte_len)?;
        let device = &shared.device;
        let buffer = exec::scoped_now(device, || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("hurray buffer"),
                size: allocation_len,
                usage,
                mapped_at_creation: false,
            })
        })?;
        Ok(Self::from_parts(Parts {
            shared,
            buffer,
            byte_len,
            allocation_len,
            element_count,
            usage,
            #[cfg(target_os = "linux")]
            external: None,
        }))
    }

    /// A handle for a buffer created elsewhere in the crate (the sharing
    /// module's exportable and imported buffers), registered like any other.
    pub(crate) fn from_parts(parts: Parts) -> Self {
        let id = registry::next_id();
        let inner = Arc::new(Inner {
            _start: TeardownStart,
            id,
            buffer: parts.buffer,
            shared: parts.shared,
            byte_len: parts.byte_len,
            allocation_len: parts.allocation_len,
            element_count: parts.element_count,
            usage: parts.usage,
            mapping: AtomicBool::new(false),
            bound_by: Mutex::default(),
            #[cfg(target_os = "linux")]
            external: parts.external,
            _end: TeardownEnd,
        });
        resident(|r| r.register(id, &inner));
        Self { inner }
    }

    /// The external memory behind this buffer, if it was allocated
    /// exportable or imported.
    #[cfg(target_os = "linux")]
    pub(crate) fn external(&self) -> Option<&ExternalMemory> {
        self.inner.external.as_ref()
    }

    /// Allocate a GPU-resident buffer without uploading host contents.
    ///
    /// The contents are zero (wgpu zero-initialises every buffer).
    ///
    /// # Errors
    ///
    /// Returns a backend error when `len` cannot be represented as a valid
    /// wgpu buffer size (overflow, or over the device's `max_buffer_size`), or
    /// when wgpu rejects the usage flags.
    pub fn alloc(
        device: &wgpu::Device,
        len: u64,
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        Self::alloc_on(&device::shared(device, None), len, usage)
    }

    /// [`alloc`](Self::alloc) on a device state hurray holds.
    pub(crate) fn alloc_on(
        shared: &Arc<DeviceShared>,
        len: u64,
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        let count = usize::try_from(len).map_err(|_| ApiMisuse::Overflow)?;
        Self::create(Arc::clone(shared), len, count, usage)
    }

    /// Allocate room for `count` values of `T`; [`element_count`](Self::element_count) is `count`.
    ///
    /// # Errors
    /// As [`alloc`](Self::alloc); [`ApiMisuse::Overflow`] when
    /// `count * size_of::<T>()` overflows.
    pub fn alloc_elements<T>(
        device: &wgpu::Device,
        count: usize,
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        Self::alloc_elements_on::<T>(&device::shared(device, None), count, usage)
    }

    /// [`alloc_elements`](Self::alloc_elements) on a device state hurray holds.
    pub(crate) fn alloc_elements_on<T>(
        shared: &Arc<DeviceShared>,
        count: usize,
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        let bytes = count
            .checked_mul(size_of::<T>())
            .ok_or(ApiMisuse::Overflow)?;
        let len = u64::try_from(bytes).map_err(|_| ApiMisuse::Overflow)?;
        Self::create(Arc::clone(shared), len, count, usage)
    }

    /// Bytes of idle staging buffers kept for this buffer's device.
    ///
    /// Transfers reuse them; they are freed with the device's last handle,
    /// when the process-wide cap ([`set_staging_cap`](crate::set_staging_cap))
    /// needs room, or now with [`trim_staging`](Self::trim_staging).
    /// [`staging_stats`](crate::staging_stats) reports all devices.
    #[must_use]
    pub fn pooled_staging_bytes(&self) -> u64 {
        self.inner.shared.pooled_bytes()
    }

    /// Frees the idle staging buffers kept for this buffer's device.
    pub fn trim_staging(&self) {
        self.inner.shared.staging.clear();
        #[cfg(target_os = "linux")]
        self.inner.shared.dma.clear();
    }

    /// Stable process-local handle id used for cache signatures.
    ///
    /// Never 0 and never reused within the process.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Resolve a process-local resident buffer id back into a live GPU handle.
    ///
    /// Returns `None` once the last clone of the handle has been dropped.
    #[must_use]
    pub fn from_resident_id(id: u64) -> Option<Self> {
        resident(|r| r.resolve(id)).map(|inner| Self { inner })
    }

    /// Underlying [`wgpu::Buffer`].
    ///
    /// Its memory is freed when the last clone of the handle is dropped, even
    /// if clones of the `wgpu::Buffer` are still alive.
    #[must_use]
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.inner.buffer
    }

    /// Clone the underlying buffer into an `Arc<wgpu::Buffer>` — cheap
    /// (`wgpu::Buffer` is itself reference-counted; this adds one small
    /// allocation). Used by the indirect dispatch path which needs to stash
    /// the buffer alongside other args. As with [`buffer`](Self::buffer), the
    /// memory is freed with the last clone of the handle.
    #[must_use]
    pub fn buffer_arc(&self) -> Arc<wgpu::Buffer> {
        Arc::new(self.inner.buffer.clone())
    }

    /// Logical byte length requested by the caller.
    #[must_use]
    pub fn byte_len(&self) -> u64 {
        self.inner.byte_len
    }

    /// Backing allocation length (`byte_len` rounded up to 4 bytes).
    #[must_use]
    pub fn allocation_len(&self) -> u64 {
        self.inner.allocation_len
    }

    /// Logical element count. Byte buffers report one element per byte.
    #[must_use]
    pub fn element_count(&self) -> usize {
        self.inner.element_count
    }

    /// Actual usage flags on the underlying GPU allocation.
    #[must_use]
    pub fn usage(&self) -> BufferUsages {
        self.inner.usage
    }

    /// The device the buffer lives on.
    #[must_use]
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.shared.device
    }

    /// The device state (identity, queue, pools).
    pub(crate) fn shared(&self) -> &Arc<DeviceShared> {
        &self.inner.shared
    }

    /// Tells this buffer that `cache` holds GPU objects naming it.
    pub(crate) fn note_bound(&self, cache: &Arc<dyn Evict>) {
        let mut list = self
            .inner
            .bound_by
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let weak = Arc::downgrade(cache);
        if !list.iter().any(|w| Weak::ptr_eq(w, &weak)) {
            list.retain(|w| w.strong_count() > 0);
            list.push(weak);
        }
    }
}
