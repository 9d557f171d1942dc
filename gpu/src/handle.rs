//! `GpuBufferHandle`: a cheaply cloneable handle to a GPU-resident buffer,
//! and its process-wide registry.
//!
//! ## Contract
//!
//! * Every transfer checks its arguments first — the device and queue
//!   (they must be the handle's own: [`ApiMisuse::WrongDevice`],
//!   [`ApiMisuse::WrongQueue`]), usage, range and overflow — and only then
//!   reaches the engines ([`crate::readback`], [`crate::upload`]), which use
//!   the handle's own device and queue, never the caller's.
//! * Each blocking call is its `_async` form run by [`exec::block_on`].
//! * Dropping the last clone of a handle frees its GPU memory at once
//!   (`wgpu::Buffer::destroy`, deferred by wgpu until submitted work that uses
//!   it is done) and removes the bind groups that kernels cached for it.

use std::fmt;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::LazyLock;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use hurray_core::{BufferHandle, DeviceTag, MIN_BUFFER_ALIGNMENT, MemoryClass, SyncMode};
use wgpu::{BufferUsages, COPY_BUFFER_ALIGNMENT};
use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::device::{self, DeviceShared, TeardownEnd, TeardownStart};
use crate::exec::{self, block_on, lost_or};
use crate::readback::{self, Source};
use crate::registry::{self, Registry};
use crate::upload::{self, Target};
use crate::{ApiMisuse, BackendError, copy};

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
    /// The exported memory behind an exportable or imported buffer.
    #[cfg(target_os = "linux")]
    exportable: Option<crate::share::Exportable>,
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
/// ```no_run
/// use hurray_gpu::{GpuBufferHandle, GpuContext, wgpu::BufferUsages};
///
/// let ctx = GpuContext::new()?;
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
    pub(crate) exportable: Option<crate::share::Exportable>,
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
            exportable: None,
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
            exportable: parts.exportable,
            _end: TeardownEnd,
        });
        resident(|r| r.register(id, &inner));
        Self { inner }
    }

    /// The exported memory behind this buffer, if it was allocated
    /// exportable or imported.
    #[cfg(target_os = "linux")]
    pub(crate) fn exportable(&self) -> Option<&crate::share::Exportable> {
        self.inner.exportable.as_ref()
    }

    /// Upload bytes into a new GPU buffer.
    ///
    /// The created buffer always includes `COPY_DST` so the upload is legal.
    /// The data goes through reused staging memory (`docs/impl/gpu-transfers.md`);
    /// the call returns once it is submitted, and later work on the queue sees it.
    ///
    /// # Errors
    ///
    /// Returns a backend error when the requested allocation length cannot
    /// fit `u64` or exceeds the device's `max_buffer_size`
    /// ([`ApiMisuse`]), when `queue` is not `device`'s, or when wgpu rejects
    /// the usage flags.
    pub fn upload(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bytes: &[u8],
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        // Bytes are the one-byte case of typed data: one element per byte.
        Self::upload_slice(device, queue, bytes, usage)
    }

    /// Upload a slice of plain-data values; [`element_count`](Self::element_count)
    /// is `data.len()`.
    ///
    /// # Errors
    /// As [`upload`](Self::upload).
    pub fn upload_slice<T: IntoBytes + Immutable>(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        data: &[T],
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        block_on(device, Self::upload_slice_async(device, queue, data, usage))
    }

    /// The async form of [`upload_slice`](Self::upload_slice): never blocks.
    ///
    /// # Errors
    /// As [`upload`](Self::upload).
    pub async fn upload_slice_async<T: IntoBytes + Immutable>(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        data: &[T],
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        let bytes = data.as_bytes();
        let len = u64::try_from(bytes.len()).map_err(|_| ApiMisuse::Overflow)?;
        let shared = device::shared(device, Some(queue));
        let queue = shared.check_queue(queue)?.clone();
        let handle = Self::create(
            Arc::clone(&shared),
            len,
            data.len(),
            usage | BufferUsages::COPY_DST,
        )
        .map_err(|e| lost_or(device, &queue, e))?;
        upload::write(&handle.target(&queue), 0, bytes)
            .await
            .map_err(|e| lost_or(device, &queue, e))?;
        Ok(handle)
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
        let count = usize::try_from(len).map_err(|_| ApiMisuse::Overflow)?;
        Self::create(device::shared(device, None), len, count, usage)
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
        let bytes = count
            .checked_mul(size_of::<T>())
            .ok_or(ApiMisuse::Overflow)?;
        let len = u64::try_from(bytes).map_err(|_| ApiMisuse::Overflow)?;
        Self::create(device::shared(device, None), len, count, usage)
    }

    fn source<'a>(&'a self, queue: &'a wgpu::Queue) -> Source<'a> {
        Source {
            buffer: &self.inner.buffer,
            shared: &self.inner.shared,
            queue,
            direct: self.inner.usage.contains(BufferUsages::MAP_READ),
            mapping: &self.inner.mapping,
        }
    }

    fn target<'a>(&'a self, queue: &'a wgpu::Queue) -> Target<'a> {
        Target {
            buffer: &self.inner.buffer,
            shared: &self.inner.shared,
            queue,
        }
    }

    /// Download this GPU buffer into `out`.
    ///
    /// This is intended for terminal output and test assertions, not hot-loop
    /// dispatch. The buffer must have `COPY_SRC` usage (or `MAP_READ`, which is
    /// read by mapping the buffer itself). `out` is cleared and then holds
    /// exactly [`byte_len`](Self::byte_len) bytes.
    ///
    /// # Errors
    ///
    /// Returns a backend error when the handle is not copy-readable, the
    /// device or queue is not the handle's ([`ApiMisuse`]), or the GPU
    /// mapping fails.
    pub fn readback(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.readback_range(device, queue, 0, self.inner.byte_len, out)
    }

    /// The async form of [`readback`](Self::readback): never blocks.
    ///
    /// # Errors
    /// As [`readback`](Self::readback).
    pub async fn readback_async(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.readback_range_async(device, queue, 0, self.inner.byte_len, out)
            .await
    }

    /// Download the first `len` logical bytes of this GPU buffer into `out`.
    ///
    /// Hot paths that publish a device-side count should read back only the
    /// counted prefix instead of the whole capacity-sized buffer. The copy is
    /// rounded up to wgpu's 4-byte copy granularity internally, then truncated
    /// back to exactly `len` bytes before returning.
    ///
    /// # Errors
    ///
    /// Returns a backend error when the handle is not copy-readable, `len`
    /// exceeds the logical buffer length, or the GPU mapping fails.
    pub fn readback_prefix(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.readback_range(device, queue, 0, len, out)
    }

    /// The async form of [`readback_prefix`](Self::readback_prefix): never blocks.
    ///
    /// # Errors
    /// As [`readback_prefix`](Self::readback_prefix).
    pub async fn readback_prefix_async(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.readback_range_async(device, queue, 0, len, out).await
    }

    /// Download `len` logical bytes starting at `byte_offset` into `out`.
    ///
    /// The internal GPU copy is alignment-expanded when necessary, then the
    /// returned host slice is trimmed back to exactly the requested range.
    /// `out` is cleared first; a zero-length read touches no GPU.
    ///
    /// # Errors
    ///
    /// Returns a backend error when the handle is not copy-readable, the range
    /// exceeds the logical buffer length, or the GPU mapping fails.
    pub fn readback_range(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        block_on(
            &self.inner.shared.device,
            self.readback_range_async(device, queue, byte_offset, len, out),
        )
    }

    /// The async form of [`readback_range`](Self::readback_range): never
    /// blocks; `out` holds the bytes once the future resolves `Ok`.
    ///
    /// # Errors
    /// As [`readback_range`](Self::readback_range).
    pub async fn readback_range_async(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        out.clear();
        let queue = self.check_read(device, queue, byte_offset, len)?;
        let n = usize::try_from(len).map_err(|_| ApiMisuse::Overflow)?;
        out.try_reserve_exact(n)
            .map_err(|_| BackendError::OutOfHostMemory { bytes: len })?;
        let spare = out
            .spare_capacity_mut()
            .get_mut(..n)
            .ok_or(BackendError::Bug("reserved capacity missing"))?;
        readback::read_into(&self.source(queue), byte_offset, len, spare)
            .await
            .map_err(|e| lost_or(device, queue, e))?;
        // SAFETY: `try_reserve_exact(n)` on the cleared `out` made
        // `capacity - len >= n`, and `read_into` returned `Ok`, which it does
        // only after writing every element of `spare` — the first `n` spare
        // elements (its contract: disjoint `split_at_mut` pieces that cover
        // `spare` exactly, each written whole, total checked against `n`).
        #[allow(unsafe_code)]
        unsafe {
            copy::commit(out, n);
        }
        Ok(())
    }

    /// Download the whole buffer as values of `T`.
    ///
    /// # Errors
    /// [`ApiMisuse::ElementSize`] when the byte length is not a multiple of
    /// `size_of::<T>()` (or `T` is zero-sized), and those of [`readback`](Self::readback).
    pub fn readback_vec<T: FromBytes + IntoBytes>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<Vec<T>, BackendError> {
        block_on(
            &self.inner.shared.device,
            self.readback_vec_async(device, queue),
        )
    }

    /// The async form of [`readback_vec`](Self::readback_vec): never blocks.
    ///
    /// # Errors
    /// As [`readback_vec`](Self::readback_vec).
    pub async fn readback_vec_async<T: FromBytes + IntoBytes>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<Vec<T>, BackendError> {
        let byte_len = self.inner.byte_len;
        let count = elements::<T>(byte_len)?;
        let queue = self.check_read(device, queue, 0, byte_len)?;
        // Zeroed allocations come from calloc: fresh pages cost no zero-fill.
        let mut values = T::new_vec_zeroed(count)
            .map_err(|_| BackendError::OutOfHostMemory { bytes: byte_len })?;
        readback::read_into(&self.source(queue), 0, byte_len, values.as_mut_bytes())
            .await
            .map_err(|e| lost_or(device, queue, e))?;
        Ok(values)
    }

    /// Zero-copy read: maps `len` bytes at `byte_offset` and lends them to `f`
    /// without copying them into a `Vec`.
    ///
    /// The bytes are valid only inside `f`; the staging buffer is unmapped and
    /// returned to the pool afterwards. A zero-length read calls `f(&[])`
    /// without touching the GPU.
    ///
    /// # Errors
    /// Those of [`readback_range`](Self::readback_range), and
    /// [`ApiMisuse::TooLarge`] when the (4-byte-widened) range exceeds the
    /// device's `max_buffer_size`.
    pub fn read_mapped<R>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, BackendError> {
        block_on(
            &self.inner.shared.device,
            self.read_mapped_async(device, queue, byte_offset, len, f),
        )
    }

    /// The async form of [`read_mapped`](Self::read_mapped): never blocks.
    ///
    /// # Errors
    /// As [`read_mapped`](Self::read_mapped).
    pub async fn read_mapped_async<R>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, BackendError> {
        let queue = self.check_read(device, queue, byte_offset, len)?;
        readback::read_mapped(&self.source(queue), byte_offset, len, f)
            .await
            .map_err(|e| lost_or(device, queue, e))
    }

    /// Writes `bytes` into this buffer at `byte_offset`, in place (no new GPU
    /// buffer).
    ///
    /// The call returns once the data has left `bytes` and its copies are
    /// submitted; work submitted afterwards on the queue sees it. It returns
    /// the index of the last submission: wait on it
    /// (`device.poll(PollType::Wait { submission_index: Some(i), .. })`) to
    /// know that the GPU holds the data.
    ///
    /// ```no_run
    /// use hurray_gpu::{GpuBufferHandle, GpuContext, wgpu::BufferUsages};
    ///
    /// let ctx = GpuContext::new()?;
    /// let usage = BufferUsages::COPY_SRC | BufferUsages::COPY_DST;
    /// let h = GpuBufferHandle::alloc(&ctx.device, 8, usage)?;
    /// h.write(&ctx.device, &ctx.queue, 4, &[1, 2, 3, 4])?;
    /// let mut out = Vec::new();
    /// h.readback(&ctx.device, &ctx.queue, &mut out)?;
    /// assert_eq!(out, [0, 0, 0, 0, 1, 2, 3, 4]);
    /// # Ok::<(), hurray_gpu::BackendError>(())
    /// ```
    ///
    /// # Errors
    /// [`ApiMisuse::MissingUsage`] without `COPY_DST`,
    /// [`ApiMisuse::RangeOutOfBounds`] / [`ApiMisuse::Overflow`] for a range
    /// outside the buffer, [`ApiMisuse::UnalignedWrite`] unless the range
    /// starts on a 4-byte boundary and ends on one or at the logical end,
    /// [`ApiMisuse::WrongDevice`] / [`ApiMisuse::WrongQueue`], and the
    /// backend's errors.
    pub fn write(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        bytes: &[u8],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        block_on(
            &self.inner.shared.device,
            self.write_async(device, queue, byte_offset, bytes),
        )
    }

    /// The async form of [`write`](Self::write): never blocks (it waits only
    /// for a staging buffer of an earlier chunk to come back, which needs the
    /// device to be polled).
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub async fn write_async(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        bytes: &[u8],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let len = u64::try_from(bytes.len()).map_err(|_| ApiMisuse::Overflow)?;
        let queue = self.check_write(device, queue, byte_offset, len)?;
        upload::write(&self.target(queue), byte_offset, bytes)
            .await
            .map_err(|e| lost_or(device, queue, e))
    }

    /// Writes plain-data values at `byte_offset`; as [`write`](Self::write).
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn write_slice<T: IntoBytes + Immutable>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        data: &[T],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        self.write(device, queue, byte_offset, data.as_bytes())
    }

    /// The async form of [`write_slice`](Self::write_slice).
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub async fn write_slice_async<T: IntoBytes + Immutable>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        data: &[T],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        self.write_async(device, queue, byte_offset, data.as_bytes())
            .await
    }

    /// Zero-copy write: `fill` writes `len` bytes at `byte_offset` straight
    /// into mapped staging memory, with no intermediate copy.
    ///
    /// `fill(from, part)` is called for disjoint parts that together cover
    /// the range — possibly several at once on the worker pool's threads —
    /// where `part` stands for bytes `from..from + part.len()` of the range.
    /// It must write every byte of its part: bytes it leaves unwritten are
    /// unspecified. Returns as [`write`](Self::write) does.
    ///
    /// ```no_run
    /// use hurray_gpu::{GpuBufferHandle, GpuContext, wgpu::BufferUsages};
    ///
    /// let ctx = GpuContext::new()?;
    /// let usage = BufferUsages::COPY_SRC | BufferUsages::COPY_DST;
    /// let h = GpuBufferHandle::alloc(&ctx.device, 1 << 20, usage)?;
    /// // Bytes 0, 1, 2, … 255, 0, 1, …, generated in place.
    /// h.write_mapped(&ctx.device, &ctx.queue, 0, 1 << 20, |from, part| {
    ///     let n = part.len() as u64;
    ///     part.write_iter((from..from + n).map(|i| i as u8));
    /// })?;
    /// # Ok::<(), hurray_gpu::BackendError>(())
    /// ```
    ///
    /// # Errors
    /// As [`write`](Self::write).
    ///
    /// # Panics
    /// A panic of `fill` is propagated to the caller.
    pub fn write_mapped(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        fill: impl Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        block_on(
            &self.inner.shared.device,
            self.write_mapped_async(device, queue, byte_offset, len, fill),
        )
    }

    /// The async form of [`write_mapped`](Self::write_mapped).
    ///
    /// # Errors
    /// As [`write`](Self::write).
    ///
    /// # Panics
    /// A panic of `fill` is propagated to the caller.
    pub async fn write_mapped_async(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        fill: impl Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let queue = self.check_write(device, queue, byte_offset, len)?;
        upload::write_with(&self.target(queue), byte_offset, len, &fill)
            .await
            .map_err(|e| lost_or(device, queue, e))
    }

    /// Checks the device and queue, then a read's usage and range, before
    /// anything is encoded; returns the queue to submit to.
    fn check_read<'a>(
        &'a self,
        device: &wgpu::Device,
        queue: &'a wgpu::Queue,
        byte_offset: u64,
        len: u64,
    ) -> Result<&'a wgpu::Queue, BackendError> {
        let queue = self.inner.shared.check(device, queue)?;
        let usage = self.inner.usage;
        if !usage.intersects(BufferUsages::COPY_SRC | BufferUsages::MAP_READ) {
            return Err(ApiMisuse::MissingUsage {
                required: BufferUsages::COPY_SRC,
                actual: usage,
            }
            .into());
        }
        self.check_bounds(byte_offset, len)?;
        Ok(queue)
    }

    /// As [`check_read`](Self::check_read), for a write.
    fn check_write<'a>(
        &'a self,
        device: &wgpu::Device,
        queue: &'a wgpu::Queue,
        byte_offset: u64,
        len: u64,
    ) -> Result<&'a wgpu::Queue, BackendError> {
        let queue = self.inner.shared.check(device, queue)?;
        let usage = self.inner.usage;
        if !usage.contains(BufferUsages::COPY_DST) {
            return Err(ApiMisuse::MissingUsage {
                required: BufferUsages::COPY_DST,
                actual: usage,
            }
            .into());
        }
        let end = self.check_bounds(byte_offset, len)?;
        let aligned = |x: u64| x.is_multiple_of(COPY_BUFFER_ALIGNMENT);
        // An empty write touches nothing: any in-bounds offset is fine.
        if len > 0 && (!aligned(byte_offset) || !(aligned(end) || end == self.inner.byte_len)) {
            return Err(ApiMisuse::UnalignedWrite {
                offset: byte_offset,
                len,
            }
            .into());
        }
        Ok(queue)
    }

    /// `byte_offset + len`, checked against the logical length.
    fn check_bounds(&self, byte_offset: u64, len: u64) -> Result<u64, BackendError> {
        let end = byte_offset.checked_add(len).ok_or(ApiMisuse::Overflow)?;
        if end > self.inner.byte_len {
            return Err(ApiMisuse::RangeOutOfBounds {
                offset: byte_offset,
                len,
                byte_len: self.inner.byte_len,
            }
            .into());
        }
        Ok(end)
    }

    /// Bytes of idle staging buffers kept for this buffer's device.
    ///
    /// Transfers reuse them; they are freed with the device's last handle,
    /// when the process-wide cap ([`set_staging_cap`](crate::set_staging_cap))
    /// needs room, or now with [`trim_staging`](Self::trim_staging).
    /// [`staging_stats`](crate::staging_stats) reports all devices.
    #[must_use]
    pub fn pooled_staging_bytes(&self) -> u64 {
        self.inner.shared.staging.bytes()
    }

    /// Frees the idle staging buffers kept for this buffer's device.
    pub fn trim_staging(&self) {
        self.inner.shared.staging.clear();
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
    ///   final when the handle is returned.
    /// * `byte_size` — [`byte_len`](Self::byte_len); an empty buffer gives
    ///   [`BufferHandle::empty`].
    ///
    /// # Errors
    /// [`BackendError::NoDeviceTag`], [`BackendError::PollTimeout`],
    /// [`BackendError::DeviceLost`].
    pub fn to_buffer_handle(&self) -> Result<BufferHandle, BackendError> {
        let shared = &self.inner.shared;
        let device = &shared.device;
        let backend = device.adapter_info().backend;
        let tag = match backend {
            wgpu::Backend::Vulkan => DeviceTag::Vulkan,
            wgpu::Backend::Metal => DeviceTag::Metal,
            wgpu::Backend::BrowserWebGpu => DeviceTag::WebGpu,
            other => return Err(BackendError::NoDeviceTag(other)),
        };
        exec::poll(
            device,
            wgpu::PollType::Wait {
                submission_index: None,
                timeout: Some(exec::WAIT_LIMIT),
            },
        )?;
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
        BufferHandle::with_memory_class(
            self.inner.byte_len,
            alignment,
            tag,
            SyncMode::ProducerSynced,
            class,
        )
        .map_err(|_| BackendError::Bug("a valid buffer gave an invalid BufferHandle"))
    }
}

/// How many `T` make `byte_len` bytes.
fn elements<T>(byte_len: u64) -> Result<usize, BackendError> {
    let size = size_of::<T>();
    match u64::try_from(size) {
        Ok(s) if s > 0 && byte_len.is_multiple_of(s) => {
            Ok(usize::try_from(byte_len / s).map_err(|_| ApiMisuse::Overflow)?)
        }
        _ => Err(ApiMisuse::ElementSize {
            byte_len,
            element_size: size,
        }
        .into()),
    }
}
