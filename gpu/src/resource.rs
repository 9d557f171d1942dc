//! `GpuResource`: what a compute dispatch binds.

use std::sync::Arc;

use zerocopy::{Immutable, IntoBytes};

use crate::{ApiMisuse, BackendError, GpuBufferHandle};

/// A bindable resource of a compute dispatch.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum GpuResource {
    /// A whole buffer.
    Buffer(GpuBufferHandle),
    /// A byte range of a buffer.
    BufferRange {
        /// The buffer.
        buffer: GpuBufferHandle,
        /// Start of the range in bytes.
        offset: u64,
        /// Length of the range in bytes.
        size: u64,
    },
    /// Small inline uniform data, uploaded at dispatch time.
    Uniform(Arc<[u8]>),
}

impl GpuResource {
    /// A byte range of `buffer`.
    ///
    /// # Errors
    /// [`ApiMisuse::EmptyRange`] for `size == 0` (a binding of no bytes),
    /// [`ApiMisuse::RangeOutOfBounds`] when the range exceeds the buffer's
    /// logical length, [`ApiMisuse::Overflow`] when `offset + size` overflows.
    pub fn range(buffer: &GpuBufferHandle, offset: u64, size: u64) -> Result<Self, BackendError> {
        if size == 0 {
            return Err(ApiMisuse::EmptyRange.into());
        }
        let end = offset.checked_add(size).ok_or(ApiMisuse::Overflow)?;
        if end > buffer.byte_len() {
            return Err(ApiMisuse::RangeOutOfBounds {
                offset,
                len: size,
                byte_len: buffer.byte_len(),
            }
            .into());
        }
        Ok(Self::BufferRange {
            buffer: buffer.clone(),
            offset,
            size,
        })
    }

    /// Inline uniform data from any plain-data value.
    #[must_use]
    pub fn uniform<T: IntoBytes + Immutable + ?Sized>(value: &T) -> Self {
        Self::Uniform(Arc::from(value.as_bytes()))
    }
}

impl From<GpuBufferHandle> for GpuResource {
    fn from(handle: GpuBufferHandle) -> Self {
        Self::Buffer(handle)
    }
}

impl From<&GpuBufferHandle> for GpuResource {
    fn from(handle: &GpuBufferHandle) -> Self {
        Self::Buffer(handle.clone())
    }
}
