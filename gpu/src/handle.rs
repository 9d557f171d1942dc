//! `GpuBufferHandle`: a cheaply cloneable handle to a GPU-resident buffer.

use std::fmt;
use std::sync::Arc;

use hurray_core::{BufferHandle, DeviceTag, MIN_BUFFER_ALIGNMENT, MemoryClass, SyncMode};
use wgpu::{BufferUsages, COPY_BUFFER_ALIGNMENT};
use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::staging::{self, CHUNK};
use crate::{BackendError, copy, registry};

pub(crate) struct Inner {
    id: u64,
    buffer: Arc<wgpu::Buffer>,
    device: wgpu::Device,
    byte_len: u64,
    allocation_len: u64,
    element_count: usize,
    usage: BufferUsages,
    staging: staging::Pool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        registry::unregister(self.id);
    }
}

/// Cheaply cloneable handle for a GPU-resident buffer.
///
/// The handle records the byte length originally requested by the caller,
/// the backing allocation length, the logical element count, and the actual
/// usage flags used to create the underlying [`wgpu::Buffer`].
///
/// Every handle has a process-wide id ([`id`](Self::id)); while any clone is
/// alive, [`from_resident_id`](Self::from_resident_id) resolves it.
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

/// `len` rounded up to wgpu's copy granularity, checked against the device.
fn allocation_len(device: &wgpu::Device, len: u64) -> Result<u64, BackendError> {
    let rounded = len
        .checked_next_multiple_of(COPY_BUFFER_ALIGNMENT)
        .ok_or(BackendError::Overflow)?;
    let max = device.limits().max_buffer_size;
    if rounded > max {
        return Err(BackendError::TooLarge {
            requested: rounded,
            max,
        });
    }
    Ok(rounded)
}

impl GpuBufferHandle {
    fn create(
        device: &wgpu::Device,
        byte_len: u64,
        element_count: usize,
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        let allocation_len = allocation_len(device, byte_len)?;
        let buffer = staging::scoped(device, || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("hurray buffer"),
                size: allocation_len,
                usage,
                mapped_at_creation: false,
            })
        })?;
        let id = registry::next_id();
        let inner = Arc::new(Inner {
            id,
            buffer: Arc::new(buffer),
            device: device.clone(),
            byte_len,
            allocation_len,
            element_count,
            usage,
            staging: staging::Pool::new(allocation_len),
        });
        registry::register(id, &inner);
        Ok(Self { inner })
    }

    /// Upload bytes into a new GPU buffer.
    ///
    /// The created buffer always includes `COPY_DST` so the upload is legal.
    ///
    /// # Errors
    ///
    /// Returns a backend error when the requested allocation length cannot
    /// fit `u64` or exceeds the device's `max_buffer_size`, or when wgpu
    /// rejects the usage flags.
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
        let bytes = data.as_bytes();
        let len = u64::try_from(bytes.len()).map_err(|_| BackendError::Overflow)?;
        let handle = Self::create(device, len, data.len(), usage | BufferUsages::COPY_DST)
            .map_err(|e| staging::lost_or(device, queue, e))?;
        handle.write(device, queue, bytes)?;
        Ok(handle)
    }

    /// Queues `bytes` (the buffer's whole logical contents) for writing; the
    /// tail is zero-padded to the copy granularity.
    fn write(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        let body = bytes.len() - bytes.len() % 4;
        let (head, tail) = bytes.split_at(body);
        staging::scoped(device, || {
            if !head.is_empty() {
                queue.write_buffer(&self.inner.buffer, 0, head);
            }
            if !tail.is_empty() {
                let mut padded = [0u8; 4];
                padded[..tail.len()].copy_from_slice(tail);
                queue.write_buffer(&self.inner.buffer, body as u64, &padded);
            }
        })
        .map_err(|e| staging::lost_or(device, queue, e))
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
        let count = usize::try_from(len).map_err(|_| BackendError::Overflow)?;
        Self::create(device, len, count, usage)
    }

    /// Allocate room for `count` values of `T`; [`element_count`](Self::element_count) is `count`.
    ///
    /// # Errors
    /// As [`alloc`](Self::alloc); [`BackendError::Overflow`] when
    /// `count * size_of::<T>()` overflows.
    pub fn alloc_elements<T>(
        device: &wgpu::Device,
        count: usize,
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        let bytes = count
            .checked_mul(size_of::<T>())
            .ok_or(BackendError::Overflow)?;
        let len = u64::try_from(bytes).map_err(|_| BackendError::Overflow)?;
        Self::create(device, len, count, usage)
    }

    /// Download this GPU buffer into `out`.
    ///
    /// This is intended for terminal output and test assertions, not hot-loop
    /// dispatch. The buffer must have `COPY_SRC` usage. `out` is cleared and
    /// then holds exactly [`byte_len`](Self::byte_len) bytes.
    ///
    /// # Errors
    ///
    /// Returns a backend error when the handle is not copy-readable or the GPU
    /// mapping fails.
    pub fn readback(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.readback_range(device, queue, 0, self.inner.byte_len, out)
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
        out.clear();
        let n = usize::try_from(len).map_err(|_| BackendError::Overflow)?;
        self.check_range(byte_offset, len)?;
        out.try_reserve_exact(n)
            .map_err(|_| BackendError::OutOfMemory)?;
        copy::append(
            out,
            n,
            |filled| BackendError::Internal(format!("readback produced {filled} of {n} bytes")),
            |dst| self.read_into(device, queue, byte_offset, len, dst),
        )
        .map_err(|e| staging::lost_or(device, queue, e))
    }

    /// Download the whole buffer as values of `T`.
    ///
    /// # Errors
    /// [`BackendError::ElementSize`] when the byte length is not a multiple of
    /// `size_of::<T>()` (or `T` is zero-sized), and those of [`readback`](Self::readback).
    pub fn readback_vec<T: FromBytes + IntoBytes>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<Vec<T>, BackendError> {
        let size = size_of::<T>();
        let byte_len = self.inner.byte_len;
        let count = match u64::try_from(size) {
            Ok(s) if s > 0 && byte_len.is_multiple_of(s) => {
                usize::try_from(byte_len / s).map_err(|_| BackendError::Overflow)?
            }
            _ => {
                return Err(BackendError::ElementSize {
                    byte_len,
                    element_size: size,
                });
            }
        };
        self.check_range(0, byte_len)?;
        // Zeroed allocations come from calloc: fresh pages cost no zero-fill.
        let mut values = T::new_vec_zeroed(count).map_err(|_| BackendError::OutOfMemory)?;
        let written = self
            .read_into(device, queue, 0, byte_len, values.as_mut_bytes())
            .map_err(|e| staging::lost_or(device, queue, e))?;
        if written as u64 != byte_len {
            return Err(BackendError::Internal(format!(
                "readback produced {written} of {byte_len} bytes"
            )));
        }
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
    /// [`BackendError::TooLarge`] when the (4-byte-widened) range exceeds the
    /// device's `max_buffer_size`.
    pub fn read_mapped<R>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, BackendError> {
        self.check_range(byte_offset, len)?;
        if len == 0 {
            return Ok(f(&[]));
        }
        let (start, widened, skip) = widen(byte_offset, len);
        let max = device.limits().max_buffer_size;
        if widened > max {
            return Err(BackendError::TooLarge {
                requested: widened,
                max,
            });
        }
        let pool = &self.inner.staging;
        let staging = pool.take(device, staging::size_class(widened, max))?;
        staging::copy_and_map(device, queue, &self.inner.buffer, start, &staging, widened)
            .and_then(|pending| pending.wait(device))
            .map_err(|e| staging::lost_or(device, queue, e))?;
        let result = {
            let view = staging
                .get_mapped_range(0..widened)
                .map_err(|e| BackendError::Map(e.to_string()))?;
            let n = usize::try_from(len).map_err(|_| BackendError::Overflow)?;
            let bytes = view.get(skip..skip + n).ok_or(BackendError::Overflow)?;
            f(bytes)
        };
        staging::unmap(device, &staging)?;
        pool.give(staging);
        Ok(result)
    }

    /// Checks usage and range before anything is encoded.
    fn check_range(&self, byte_offset: u64, len: u64) -> Result<(), BackendError> {
        if !self.inner.usage.contains(BufferUsages::COPY_SRC) {
            return Err(BackendError::NotCopyReadable {
                usage: self.inner.usage,
            });
        }
        let end = byte_offset.checked_add(len).ok_or(BackendError::Overflow)?;
        if end > self.inner.byte_len {
            return Err(BackendError::RangeOutOfBounds {
                offset: byte_offset,
                len,
                byte_len: self.inner.byte_len,
            });
        }
        Ok(())
    }

    /// Reads `[byte_offset, byte_offset + len)` (already checked) into `dst`
    /// (`len` elements) and returns the number of elements written.
    ///
    /// The widened range is cut into [`CHUNK`]-byte chunks, and the part of
    /// `dst` each chunk covers is split off with `split_at_mut` (so the pieces
    /// are disjoint and, checked at the end, cover `dst` exactly). One chunk
    /// A short read runs on this thread (three staging buffers in flight,
    /// large host copies split over threads); a long one (at least
    /// [`MULTI_READER_CHUNKS`] chunks per thread) is dealt round-robin to up
    /// to [`copy::MAX_THREADS`] scoped threads, each of which pipelines its
    /// own chunks through two staging buffers.
    fn read_into<B: copy::Byte>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        dst: &mut [B],
    ) -> Result<usize, BackendError> {
        let n = usize::try_from(len).map_err(|_| BackendError::Overflow)?;
        if dst.len() != n {
            return Err(BackendError::Internal(
                "readback destination of the wrong size".into(),
            ));
        }
        if len == 0 {
            return Ok(0);
        }
        let (start, widened, _) = widen(byte_offset, len);
        let max = device.limits().max_buffer_size;
        // Chunk size: a multiple of MAP_ALIGNMENT no larger than the device allows.
        let chunk = CHUNK.min(max - max % wgpu::MAP_ALIGNMENT);
        let end = start + widened;
        let (req_start, req_end) = (byte_offset, byte_offset + len);
        let mut jobs = Vec::new();
        let mut rest = dst;
        let mut from = start;
        while from < end {
            let to = end.min(from + chunk);
            let (a, b) = (req_start.max(from), req_end.min(to));
            // Both differences are below `chunk` and `len`, which fit usize.
            let take = usize::try_from(b.saturating_sub(a)).map_err(|_| BackendError::Overflow)?;
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(take);
            rest = tail;
            let view_from = usize::try_from(a - from).map_err(|_| BackendError::Overflow)?;
            jobs.push(Job {
                src: from,
                len: to - from,
                view_from,
                dst: piece,
            });
            from = to;
        }
        if !rest.is_empty() {
            return Err(BackendError::Internal(
                "readback chunks do not cover the request".into(),
            ));
        }
        let class = staging::size_class(widened.min(chunk), max);
        // Threads that poll the device concurrently can collect each other's
        // map callbacks and deliver them late; that costs more than it gains
        // on short reads (measured on the H200: 16 MiB reads got slower), so
        // several readers are used only from MULTI_READER_CHUNKS chunks per reader.
        let threads = copy::threads();
        let workers = if jobs.len() >= MULTI_READER_CHUNKS * threads {
            threads
        } else {
            1
        };
        if workers <= 1 {
            return self.run_jobs(device, queue, jobs, class, true);
        }
        let mut shares: Vec<Vec<Job<'_, B>>> = (0..workers).map(|_| Vec::new()).collect();
        for (i, job) in jobs.into_iter().enumerate() {
            shares[i % workers].push(job);
        }
        std::thread::scope(|s| {
            let mut shares = shares.into_iter();
            let mine = shares.next().unwrap_or_default();
            let others: Vec<_> = shares
                .map(|share| s.spawn(move || self.run_jobs(device, queue, share, class, false)))
                .collect();
            let mut total = self.run_jobs(device, queue, mine, class, false)?;
            for handle in others {
                let written = handle
                    .join()
                    .map_err(|_| BackendError::Internal("a readback thread panicked".into()))??;
                total += written;
            }
            Ok(total)
        })
    }

    /// Reads `jobs` in order through a ring of up to two staging buffers
    /// (three for a lone worker), copying each chunk's requested part into
    /// its destination piece. Returns the elements written.
    fn run_jobs<B: copy::Byte>(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        jobs: Vec<Job<'_, B>>,
        class: u64,
        alone: bool,
    ) -> Result<usize, BackendError> {
        let depth = jobs.len().min(if alone { 3 } else { 2 });
        let ranges: Vec<(u64, u64)> = jobs.iter().map(|j| (j.src, j.len)).collect();
        let src = &self.inner.buffer;
        let mut ring = Vec::with_capacity(depth);
        let mut pending = std::collections::VecDeque::with_capacity(depth);
        let result = (|| {
            for &(from, n) in ranges.iter().take(depth) {
                let staging = self.inner.staging.take(device, class)?;
                pending.push_back(staging::copy_and_map(
                    device, queue, src, from, &staging, n,
                )?);
                ring.push(staging);
            }
            let mut written = 0;
            for (i, job) in jobs.into_iter().enumerate() {
                let staging = &ring[i % depth];
                // One request is queued per job, `depth` ahead: never empty here.
                pending
                    .pop_front()
                    .ok_or_else(|| BackendError::Internal("readback pipeline underflow".into()))?
                    .wait(device)?;
                {
                    let view = staging
                        .get_mapped_range(0..job.len)
                        .map_err(|e| BackendError::Map(e.to_string()))?;
                    let part = view
                        .get(job.view_from..job.view_from + job.dst.len())
                        .ok_or_else(|| {
                            BackendError::Internal("chunk shorter than its piece".into())
                        })?;
                    if alone {
                        copy::parallel_copy(job.dst, part);
                    } else {
                        B::copy(job.dst, part);
                    }
                    written += part.len();
                }
                staging::unmap(device, staging)?;
                if let Some(&(from, n)) = ranges.get(i + depth) {
                    pending.push_back(staging::copy_and_map(device, queue, src, from, staging, n)?);
                }
            }
            Ok(written)
        })();
        // Only buffers that are unmapped with no request outstanding go back.
        if result.is_ok() {
            for staging in ring {
                self.inner.staging.give(staging);
            }
        }
        result
    }

    /// Bytes of idle staging buffers this buffer keeps for its next readback.
    ///
    /// Readbacks reuse them (a staging buffer is reused only after it was
    /// unmapped); they are freed with the last clone of the handle, or now
    /// with [`trim_staging`](Self::trim_staging).
    #[must_use]
    pub fn pooled_staging_bytes(&self) -> u64 {
        self.inner.staging.bytes()
    }

    /// Frees the idle staging buffers kept for this buffer's readbacks.
    pub fn trim_staging(&self) {
        self.inner.staging.clear();
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
        registry::resolve(id).map(|inner| Self { inner })
    }

    /// Underlying [`wgpu::Buffer`].
    #[must_use]
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.inner.buffer
    }

    /// Clone the internal `Arc<wgpu::Buffer>` - cheap, reference-count only.
    /// Used by the indirect dispatch path which needs to stash the buffer
    /// alongside other args.
    #[must_use]
    pub fn buffer_arc(&self) -> Arc<wgpu::Buffer> {
        Arc::clone(&self.inner.buffer)
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
        &self.inner.device
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
    /// [`BackendError::NoDeviceTag`], [`BackendError::PollTimeout`].
    pub fn to_buffer_handle(&self) -> Result<BufferHandle, BackendError> {
        let device = &self.inner.device;
        let backend = device.adapter_info().backend;
        let tag = match backend {
            wgpu::Backend::Vulkan => DeviceTag::Vulkan,
            wgpu::Backend::Metal => DeviceTag::Metal,
            wgpu::Backend::BrowserWebGpu => DeviceTag::WebGpu,
            other => return Err(BackendError::NoDeviceTag(other)),
        };
        match device.poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: Some(staging::POLL_TIMEOUT),
        }) {
            Ok(_) => {}
            Err(e) => return Err(staging::poll_error(e)),
        }
        if self.inner.byte_len == 0 {
            return Ok(BufferHandle::empty(tag));
        }
        let alignment = device
            .limits()
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
        .map_err(|e| BackendError::Internal(e.to_string()))
    }
}

/// Chunks per reading thread below which a readback uses one thread (which
/// still splits each large host copy over several threads).
const MULTI_READER_CHUNKS: usize = 4;

/// One chunk of a readback: the widened source range and where its requested
/// part goes.
struct Job<'d, B> {
    /// Source offset of the chunk (4-byte aligned).
    src: u64,
    /// Bytes copied to staging (a multiple of 4).
    len: u64,
    /// Where the requested part starts inside the chunk.
    view_from: usize,
    /// The destination piece for that part.
    dst: &'d mut [B],
}

/// `(start, widened_len, skip)`: the 4-byte-aligned copy that covers
/// `[offset, offset + len)`, and where the request starts inside it.
/// The caller checked `offset + len <= byte_len <= allocation_len`, and
/// `allocation_len` is a multiple of 4, so the widened end stays inside the
/// allocation.
const fn widen(offset: u64, len: u64) -> (u64, u64, usize) {
    let start = offset - offset % COPY_BUFFER_ALIGNMENT;
    let end = (offset + len).next_multiple_of(COPY_BUFFER_ALIGNMENT);
    (start, end - start, (offset - start) as usize)
}
