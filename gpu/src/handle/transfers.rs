//! The handle's transfers: upload, readback, zero-copy read and write, each
//! a blocking call built on its `_async` form.
//!
//! ## Contract
//!
//! Each transfer has one body that takes the queue to submit to, already
//! known to be the handle's device's, and two signatures over it: the
//! seed's, which names a device and queue and checks them against the
//! handle's own (`DeviceShared::check`), and the shorter one, which names
//! neither and takes the queue hurray recorded for the device
//! (`DeviceShared::own_queue`). The body checks the rest (`check_read` /
//! `check_write`: usage, bounds, overflow, alignment) before anything is
//! encoded, then hands the handle's own buffer, device state and queue to
//! the transfer engine ([`crate::transfer`]). A backend error on a lost
//! device is reported as [`BackendError::DeviceLost`].

use std::sync::Arc;

use wgpu::{BufferUsages, COPY_BUFFER_ALIGNMENT};
use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::GpuBufferHandle;
use crate::device::{self, DeviceShared};
use crate::exec::{block_on, lost_or};
use crate::transfer::{Source, Target, read, write};
use crate::{ApiMisuse, BackendError};

impl GpuBufferHandle {
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
        let shared = device::shared(device, Some(queue));
        shared.check_queue(queue)?;
        Self::upload_on(&shared, data, usage).await
    }

    /// [`upload_slice_async`](Self::upload_slice_async) on a device state
    /// hurray holds, to its recorded queue.
    pub(crate) async fn upload_on<T: IntoBytes + Immutable>(
        shared: &Arc<DeviceShared>,
        data: &[T],
        usage: BufferUsages,
    ) -> Result<Self, BackendError> {
        let bytes = data.as_bytes();
        let len = u64::try_from(bytes.len()).map_err(|_| ApiMisuse::Overflow)?;
        let queue = shared.own_queue()?.clone();
        let device = &shared.device;
        let handle = Self::create(
            Arc::clone(shared),
            len,
            data.len(),
            usage | BufferUsages::COPY_DST,
        )
        .map_err(|e| lost_or(device, &queue, e))?;
        write::write(&handle.target(&queue), 0, bytes)
            .await
            .map_err(|e| lost_or(device, &queue, e))?;
        Ok(handle)
    }

    pub(super) fn source<'a>(&'a self, queue: &'a wgpu::Queue) -> Source<'a> {
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
        let queue = self.inner.shared.check(device, queue)?;
        self.read_range_to(queue, byte_offset, len, out).await
    }

    /// The body of the range reads, to `queue` (the device's).
    async fn read_range_to(
        &self,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        out.clear();
        self.check_read(byte_offset, len)?;
        read::read_to_vec(&self.source(queue), byte_offset, len, out)
            .await
            .map_err(|e| self.lost_or(queue, e))
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
        elements::<T>(byte_len)?;
        let queue = self.inner.shared.check(device, queue)?;
        self.read_vec_to(queue).await
    }

    /// The body of the typed reads, to `queue` (the device's).
    async fn read_vec_to<T: FromBytes + IntoBytes>(
        &self,
        queue: &wgpu::Queue,
    ) -> Result<Vec<T>, BackendError> {
        let byte_len = self.inner.byte_len;
        let count = elements::<T>(byte_len)?;
        self.check_read(0, byte_len)?;
        // Zeroed allocations come from calloc: fresh pages cost no zero-fill.
        let mut values = T::new_vec_zeroed(count)
            .map_err(|_| BackendError::OutOfHostMemory { bytes: byte_len })?;
        let written = read::read_into(&self.source(queue), 0, byte_len, values.as_mut_bytes())
            .await
            .map_err(|e| self.lost_or(queue, e))?;
        if u64::try_from(written).ok() != Some(byte_len) {
            return Err(BackendError::Bug(
                "readback wrote fewer bytes than the values hold",
            ));
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
        let queue = self.inner.shared.check(device, queue)?;
        self.read_with_to(queue, byte_offset, len, f).await
    }

    /// The body of the zero-copy reads, to `queue` (the device's).
    async fn read_with_to<R>(
        &self,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, BackendError> {
        self.check_read(byte_offset, len)?;
        read::read_mapped(&self.source(queue), byte_offset, len, f)
            .await
            .map_err(|e| self.lost_or(queue, e))
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
        let queue = self.inner.shared.check(device, queue)?;
        self.write_to(queue, byte_offset, bytes).await
    }

    /// The body of the writes, to `queue` (the device's).
    async fn write_to(
        &self,
        queue: &wgpu::Queue,
        byte_offset: u64,
        bytes: &[u8],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let len = u64::try_from(bytes.len()).map_err(|_| ApiMisuse::Overflow)?;
        self.check_write(byte_offset, len)?;
        write::write(&self.target(queue), byte_offset, bytes)
            .await
            .map_err(|e| self.lost_or(queue, e))
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
        let queue = self.inner.shared.check(device, queue)?;
        self.write_with_to(queue, byte_offset, len, fill).await
    }

    /// The body of the zero-copy writes, to `queue` (the device's).
    async fn write_with_to(
        &self,
        queue: &wgpu::Queue,
        byte_offset: u64,
        len: u64,
        fill: impl Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        self.check_write(byte_offset, len)?;
        write::write_with(&self.target(queue), byte_offset, len, &fill)
            .await
            .map_err(|e| self.lost_or(queue, e))
    }

    /// `error`, or [`BackendError::DeviceLost`] when the handle's device is lost.
    fn lost_or(&self, queue: &wgpu::Queue, error: BackendError) -> BackendError {
        lost_or(&self.inner.shared.device, queue, error)
    }

    /// Checks a read's usage and range before anything is encoded.
    fn check_read(&self, byte_offset: u64, len: u64) -> Result<(), BackendError> {
        let usage = self.inner.usage;
        if !usage.intersects(BufferUsages::COPY_SRC | BufferUsages::MAP_READ) {
            return Err(ApiMisuse::MissingUsage {
                required: BufferUsages::COPY_SRC,
                actual: usage,
            }
            .into());
        }
        self.check_bounds(byte_offset, len)?;
        Ok(())
    }

    /// As [`check_read`](Self::check_read), for a write.
    fn check_write(&self, byte_offset: u64, len: u64) -> Result<(), BackendError> {
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
        Ok(())
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
}

/// The shorter signatures: no device or queue, since a handle knows both.
/// Each submits to the queue hurray recorded for the handle's device (given
/// by the [`GpuContext`](crate::GpuContext) or the first call that named it)
/// and behaves as its seed twin otherwise.
impl GpuBufferHandle {
    /// Reads the whole buffer into `out`: [`readback`](Self::readback)
    /// without naming the device and queue.
    ///
    /// ```no_run
    /// use hurray_gpu::{GpuContext, wgpu::BufferUsages};
    ///
    /// let ctx = GpuContext::new()?;
    /// let h = ctx.alloc(8, BufferUsages::COPY_SRC | BufferUsages::COPY_DST)?;
    /// h.write_at(4, &[1, 2, 3, 4])?;
    /// let mut out = Vec::new();
    /// h.read(&mut out)?;
    /// assert_eq!(out, [0, 0, 0, 0, 1, 2, 3, 4]);
    /// # Ok::<(), hurray_gpu::BackendError>(())
    /// ```
    ///
    /// # Errors
    /// As [`readback`](Self::readback), without the device and queue checks;
    /// [`ApiMisuse::UnknownQueue`] when hurray has never seen the device's
    /// queue (a seed `alloc` on a device no call named with its queue).
    pub fn read(&self, out: &mut Vec<u8>) -> Result<(), BackendError> {
        self.read_range(0, self.inner.byte_len, out)
    }

    /// The async form of [`read`](Self::read): never blocks.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub async fn read_async(&self, out: &mut Vec<u8>) -> Result<(), BackendError> {
        self.read_range_async(0, self.inner.byte_len, out).await
    }

    /// Reads `len` logical bytes from `byte_offset` into `out`:
    /// [`readback_range`](Self::readback_range) without naming the device
    /// and queue (a prefix is the range from 0).
    ///
    /// # Errors
    /// As [`read`](Self::read) and [`readback_range`](Self::readback_range).
    pub fn read_range(
        &self,
        byte_offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        block_on(
            &self.inner.shared.device,
            self.read_range_async(byte_offset, len, out),
        )
    }

    /// The async form of [`read_range`](Self::read_range): never blocks.
    ///
    /// # Errors
    /// As [`read_range`](Self::read_range).
    pub async fn read_range_async(
        &self,
        byte_offset: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        out.clear();
        let queue = self.inner.shared.own_queue()?;
        self.read_range_to(queue, byte_offset, len, out).await
    }

    /// Reads the whole buffer as values of `T`:
    /// [`readback_vec`](Self::readback_vec) without naming the device and
    /// queue.
    ///
    /// # Errors
    /// As [`read`](Self::read) and [`readback_vec`](Self::readback_vec).
    pub fn read_vec<T: FromBytes + IntoBytes>(&self) -> Result<Vec<T>, BackendError> {
        block_on(&self.inner.shared.device, self.read_vec_async())
    }

    /// The async form of [`read_vec`](Self::read_vec): never blocks.
    ///
    /// # Errors
    /// As [`read_vec`](Self::read_vec).
    pub async fn read_vec_async<T: FromBytes + IntoBytes>(&self) -> Result<Vec<T>, BackendError> {
        elements::<T>(self.inner.byte_len)?;
        let queue = self.inner.shared.own_queue()?;
        self.read_vec_to(queue).await
    }

    /// Zero-copy read: lends the mapped bytes to `f`;
    /// [`read_mapped`](Self::read_mapped) without naming the device and
    /// queue.
    ///
    /// # Errors
    /// As [`read`](Self::read) and [`read_mapped`](Self::read_mapped).
    pub fn read_with<R>(
        &self,
        byte_offset: u64,
        len: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, BackendError> {
        block_on(
            &self.inner.shared.device,
            self.read_with_async(byte_offset, len, f),
        )
    }

    /// The async form of [`read_with`](Self::read_with): never blocks.
    ///
    /// # Errors
    /// As [`read_with`](Self::read_with).
    pub async fn read_with_async<R>(
        &self,
        byte_offset: u64,
        len: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, BackendError> {
        let queue = self.inner.shared.own_queue()?;
        self.read_with_to(queue, byte_offset, len, f).await
    }

    /// Writes `bytes` at `byte_offset`, in place: [`write`](Self::write)
    /// without naming the device and queue (typed data:
    /// `zerocopy::IntoBytes::as_bytes`).
    ///
    /// # Errors
    /// As [`write`](Self::write), without the device and queue checks;
    /// [`ApiMisuse::UnknownQueue`] as for [`read`](Self::read).
    pub fn write_at(
        &self,
        byte_offset: u64,
        bytes: &[u8],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        block_on(
            &self.inner.shared.device,
            self.write_at_async(byte_offset, bytes),
        )
    }

    /// The async form of [`write_at`](Self::write_at).
    ///
    /// # Errors
    /// As [`write_at`](Self::write_at).
    pub async fn write_at_async(
        &self,
        byte_offset: u64,
        bytes: &[u8],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let queue = self.inner.shared.own_queue()?;
        self.write_to(queue, byte_offset, bytes).await
    }

    /// Zero-copy write: `fill` writes the range straight into mapped staging
    /// memory; [`write_mapped`](Self::write_mapped) without naming the
    /// device and queue.
    ///
    /// # Errors
    /// As [`write_at`](Self::write_at).
    ///
    /// # Panics
    /// A panic of `fill` is propagated to the caller.
    pub fn write_with(
        &self,
        byte_offset: u64,
        len: u64,
        fill: impl Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        block_on(
            &self.inner.shared.device,
            self.write_with_async(byte_offset, len, fill),
        )
    }

    /// The async form of [`write_with`](Self::write_with).
    ///
    /// # Errors
    /// As [`write_at`](Self::write_at).
    ///
    /// # Panics
    /// A panic of `fill` is propagated to the caller.
    pub async fn write_with_async(
        &self,
        byte_offset: u64,
        len: u64,
        fill: impl Fn(u64, wgpu::WriteOnly<'_, [u8]>) + Sync,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let queue = self.inner.shared.own_queue()?;
        self.write_with_to(queue, byte_offset, len, fill).await
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
