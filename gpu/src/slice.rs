//! A byte range of a GPU buffer: how a loaded tensor names its bytes.
//!
//! ## Contract
//!
//! * A [`GpuSlice`] is a [`GpuBufferHandle`] plus a range that lies inside
//!   the handle's logical length: checked when the slice is made, so every
//!   read of it stays inside its buffer.
//! * A slice is a loader-level idea. Handles keep their meaning everywhere
//!   else (one whole `wgpu::Buffer`, addressed from offset 0 by kernels, the
//!   registry and sharing); a caller that needs such a handle for a slice
//!   that is only part of a buffer gets one with [`GpuSlice::to_buffer`]
//!   (a GPU-side copy into a fresh buffer).
//! * Reads ([`readback`](GpuSlice::readback), [`read`](GpuSlice::read))
//!   return exactly the slice's bytes, through the handle's range reads.

use crate::exec;
use crate::{ApiMisuse, BackendError, GpuBufferHandle};

/// A byte range of a GPU buffer: a whole buffer, or one tensor buffer's
/// part of a buffer shared by many (a slab of the loader, see
/// [`LoadOptions::pack_below`](crate::LoadOptions::pack_below)).
///
/// ```
/// use hurray_gpu::{GpuBufferHandle, GpuContext, GpuSlice, wgpu::BufferUsages};
///
/// let Ok(ctx) = GpuContext::new() else { return Ok(()) }; // no adapter here
/// let usage = BufferUsages::STORAGE | BufferUsages::COPY_SRC;
/// let h = GpuBufferHandle::upload(&ctx.device, &ctx.queue, b"abcdefgh", usage)?;
/// let s = GpuSlice::new(h, 4, 3)?;
/// let mut out = Vec::new();
/// s.readback(&ctx.device, &ctx.queue, &mut out)?;
/// assert_eq!(out, b"efg");
/// // A whole buffer of its own, holding just those bytes.
/// let own = s.to_buffer(&ctx.device, &ctx.queue)?;
/// assert_eq!(own.byte_len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct GpuSlice {
    buffer: GpuBufferHandle,
    offset: u64,
    len: u64,
}

impl GpuSlice {
    /// The whole of `buffer`.
    #[must_use]
    pub fn whole(buffer: GpuBufferHandle) -> Self {
        let len = buffer.byte_len();
        Self {
            buffer,
            offset: 0,
            len,
        }
    }

    /// `len` bytes of `buffer` from `offset`.
    ///
    /// # Errors
    /// [`ApiMisuse::RangeOutOfBounds`] when the range does not lie inside
    /// the buffer's logical length; [`ApiMisuse::Overflow`] when
    /// `offset + len` overflows.
    pub fn new(buffer: GpuBufferHandle, offset: u64, len: u64) -> Result<Self, BackendError> {
        let end = offset.checked_add(len).ok_or(ApiMisuse::Overflow)?;
        if end > buffer.byte_len() {
            return Err(ApiMisuse::RangeOutOfBounds {
                offset,
                len,
                byte_len: buffer.byte_len(),
            }
            .into());
        }
        Ok(Self {
            buffer,
            offset,
            len,
        })
    }

    /// The buffer the slice is part of (shared with other slices when
    /// packed).
    #[must_use]
    pub fn buffer(&self) -> &GpuBufferHandle {
        &self.buffer
    }

    /// Where the slice starts in [`buffer`](Self::buffer), in bytes.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The slice's length in bytes.
    #[must_use]
    pub fn byte_len(&self) -> u64 {
        self.len
    }

    /// Whether the slice is its whole buffer.
    #[must_use]
    pub fn is_whole(&self) -> bool {
        self.offset == 0 && self.len == self.buffer.byte_len()
    }

    /// The buffer, when the slice is the whole of it (a handle a kernel can
    /// bind for exactly these bytes).
    #[must_use]
    pub fn as_whole(&self) -> Option<&GpuBufferHandle> {
        self.is_whole().then_some(&self.buffer)
    }

    /// Downloads exactly the slice's bytes into `out`
    /// ([`GpuBufferHandle::readback_range`]).
    ///
    /// # Errors
    /// As [`GpuBufferHandle::readback_range`].
    pub fn readback(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.buffer
            .readback_range(device, queue, self.offset, self.len, out)
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
        self.buffer
            .readback_range_async(device, queue, self.offset, self.len, out)
            .await
    }

    /// Downloads exactly the slice's bytes into `out` without naming the
    /// device and queue ([`GpuBufferHandle::read_range`]).
    ///
    /// # Errors
    /// As [`GpuBufferHandle::read_range`].
    pub fn read(&self, out: &mut Vec<u8>) -> Result<(), BackendError> {
        self.buffer.read_range(self.offset, self.len, out)
    }

    /// A handle of just these bytes: the buffer itself (a clone of the
    /// handle) when the slice is whole, else a fresh buffer of
    /// [`byte_len`](Self::byte_len) bytes and the same usages, filled by a
    /// GPU-side copy submitted to `queue` (work submitted after it sees the
    /// bytes; nothing waits).
    ///
    /// # Errors
    /// [`ApiMisuse::MissingUsage`] when the buffer cannot be copied from
    /// (no `COPY_SRC`); the device and queue checks of the handle's
    /// transfers; allocation errors.
    pub fn to_buffer(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<GpuBufferHandle, BackendError> {
        if self.is_whole() {
            return Ok(self.buffer.clone());
        }
        let shared = self.buffer.shared();
        let queue = shared.check(device, queue)?;
        let usage = self.buffer.usage();
        if !usage.contains(wgpu::BufferUsages::COPY_SRC) {
            return Err(ApiMisuse::MissingUsage {
                required: wgpu::BufferUsages::COPY_SRC,
                actual: usage,
            }
            .into());
        }
        if !self.offset.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT) {
            // A GPU copy starts on a 4-byte boundary: go through the host.
            let mut bytes = Vec::new();
            self.readback(device, queue, &mut bytes)?;
            return GpuBufferHandle::upload(device, queue, &bytes, usage);
        }
        let out =
            GpuBufferHandle::alloc_on(shared, self.len, usage | wgpu::BufferUsages::COPY_DST)?;
        // Whole 4-byte words: the rounded length stays inside both
        // allocations (each rounded up to 4; the source range starts
        // aligned and ends inside the logical length).
        let n = self.len.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        if n > 0 {
            exec::scoped_now(&shared.device, || {
                let mut encoder =
                    shared
                        .device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("hurray slice to buffer"),
                        });
                encoder.copy_buffer_to_buffer(
                    self.buffer.buffer(),
                    self.offset,
                    out.buffer(),
                    0,
                    n,
                );
                queue.submit([encoder.finish()]);
            })?;
        }
        Ok(out)
    }
}
