//! The error type of the GPU crate.

use std::fmt;

use wgpu::BufferUsages;

/// Why a GPU operation failed.
///
/// Every failure of a wgpu call made by this crate comes back as one of these
/// (wgpu validation errors are captured with error scopes, never left to the
/// default uncaptured-error handler, which panics).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendError {
    /// No adapter could be found (no GPU, no software driver).
    NoAdapter(String),
    /// The adapter refused to create a device.
    RequestDevice(String),
    /// A readback was asked of a buffer created without `COPY_SRC`.
    NotCopyReadable {
        /// The buffer's actual usage flags.
        usage: BufferUsages,
    },
    /// `offset + len` exceeds the buffer's logical length.
    RangeOutOfBounds {
        /// Requested start.
        offset: u64,
        /// Requested length.
        len: u64,
        /// The buffer's logical length in bytes.
        byte_len: u64,
    },
    /// A length or offset computation overflowed (`offset + len`, a rounded
    /// allocation size, or a byte count of typed elements).
    Overflow,
    /// A buffer larger than the device's `max_buffer_size`.
    TooLarge {
        /// Bytes requested (after rounding to the copy granularity).
        requested: u64,
        /// The device limit.
        max: u64,
    },
    /// The typed readback's byte length is not a multiple of the element size.
    ElementSize {
        /// The buffer's logical length in bytes.
        byte_len: u64,
        /// `size_of::<T>()`.
        element_size: usize,
    },
    /// The device was lost or destroyed.
    DeviceLost(String),
    /// wgpu reported a validation error.
    Validation(String),
    /// wgpu reported that it ran out of memory.
    OutOfMemory,
    /// wgpu reported an internal error.
    Internal(String),
    /// Mapping a staging buffer failed.
    Map(String),
    /// Waiting for the GPU took longer than the poll timeout.
    PollTimeout,
    /// The buffer's adapter backend has no hurray device tag (DX12, GL, noop).
    NoDeviceTag(wgpu::Backend),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAdapter(m) => write!(f, "no GPU adapter: {m}"),
            Self::RequestDevice(m) => write!(f, "device request failed: {m}"),
            Self::NotCopyReadable { usage } => {
                write!(
                    f,
                    "buffer usage {usage:?} lacks COPY_SRC; it cannot be read back"
                )
            }
            Self::RangeOutOfBounds {
                offset,
                len,
                byte_len,
            } => write!(
                f,
                "range [{offset}, +{len}) is outside the buffer's {byte_len} logical bytes"
            ),
            Self::Overflow => write!(f, "offset or length overflows u64"),
            Self::TooLarge { requested, max } => {
                write!(
                    f,
                    "{requested} bytes exceed the device's max_buffer_size {max}"
                )
            }
            Self::ElementSize {
                byte_len,
                element_size,
            } => write!(
                f,
                "{byte_len} bytes are not a whole number of {element_size}-byte elements"
            ),
            Self::DeviceLost(m) => write!(f, "device lost: {m}"),
            Self::Validation(m) => write!(f, "wgpu validation error: {m}"),
            Self::OutOfMemory => write!(f, "GPU out of memory"),
            Self::Internal(m) => write!(f, "wgpu internal error: {m}"),
            Self::Map(m) => write!(f, "buffer mapping failed: {m}"),
            Self::PollTimeout => write!(f, "timed out waiting for the GPU"),
            Self::NoDeviceTag(b) => write!(f, "backend {b:?} has no hurray device tag"),
        }
    }
}

impl std::error::Error for BackendError {}

impl From<wgpu::Error> for BackendError {
    fn from(e: wgpu::Error) -> Self {
        match e {
            wgpu::Error::OutOfMemory { .. } => Self::OutOfMemory,
            wgpu::Error::Validation { description, .. } => Self::Validation(description),
            wgpu::Error::Internal { description, .. } => Self::Internal(description),
        }
    }
}
