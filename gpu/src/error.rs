//! The error types of the GPU crate.
//!
//! Every error names the party at fault:
//!
//! * [`BackendError::ApiMisuse`] — the caller broke a rule of this crate's API
//!   (a range outside the buffer, a buffer of another device, …). These are
//!   checked before anything reaches wgpu; retrying the same call fails again.
//! * [`BackendError::Wgpu`] — wgpu refused or failed a call this crate made
//!   (validation, out of memory, internal), with wgpu's message and its chain
//!   of causes ([`std::error::Error::source`]).
//! * [`BackendError::DeviceLost`], [`BackendError::Map`],
//!   [`BackendError::PollTimeout`] — the device or the driver failed.
//! * [`BackendError::Bug`] — an invariant of hurray itself failed (including a
//!   panic on one of its worker threads): a bug in hurray, please report it.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

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
    /// The caller broke a rule of this crate's API; nothing was sent to the GPU.
    ApiMisuse(ApiMisuse),
    /// wgpu reported an error for a call this crate made.
    Wgpu(WgpuError),
    /// The host could not allocate memory for the result.
    OutOfHostMemory {
        /// Bytes that were requested.
        bytes: u64,
    },
    /// Mapping a staging buffer failed.
    Map(String),
    /// The device was lost or destroyed.
    DeviceLost(String),
    /// Waiting for the GPU took longer than the wait limit (60 s).
    PollTimeout,
    /// The buffer's adapter backend has no hurray device tag (DX12, GL, noop).
    NoDeviceTag(wgpu::Backend),
    /// An invariant of hurray failed, or one of its worker threads panicked:
    /// a bug in hurray. Please report it with this message.
    Bug(&'static str),
}

/// A rule of this crate's API that the caller broke.
///
/// Checked before any GPU work; nothing was submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiMisuse {
    /// The buffer lacks a usage the operation needs (`COPY_SRC` to read back,
    /// `COPY_DST` to write, `INDIRECT` for indirect dispatch).
    MissingUsage {
        /// The usage the operation needs.
        required: BufferUsages,
        /// The buffer's actual usage flags.
        actual: BufferUsages,
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
    /// The byte length is not a whole number of elements of the type.
    ElementSize {
        /// The byte length.
        byte_len: u64,
        /// `size_of::<T>()`.
        element_size: usize,
    },
    /// A write must start on a 4-byte boundary and end on one or at the
    /// buffer's logical end (GPU copies move whole 4-byte words).
    UnalignedWrite {
        /// Requested start.
        offset: u64,
        /// Requested length.
        len: u64,
    },
    /// The buffer (or kernel) belongs to another device or instance than the
    /// one passed (or than the other resources of the call).
    WrongDevice,
    /// The queue passed is not the queue of the buffer's device.
    WrongQueue,
    /// A call that names no queue, on a buffer whose device hurray has never
    /// seen with its queue (the seed's `alloc` names only the device): make
    /// the device's first call one that names its queue (a
    /// [`GpuContext`](crate::GpuContext), `upload`, or any transfer given the
    /// device and queue).
    UnknownQueue,
    /// A buffer range of zero bytes cannot be bound.
    EmptyRange,
    /// A workgroup count exceeds `max_compute_workgroups_per_dimension`.
    TooManyWorkgroups {
        /// The requested counts.
        workgroups: [u32; 3],
        /// The device limit.
        max: u32,
    },
    /// An indirect-dispatch offset that is not a multiple of 4.
    IndirectOffset {
        /// The offset given.
        offset: u64,
    },
    /// Inline uniforms cannot be recorded into a caller's encoder.
    RecordedUniform,
    /// Resources were given for an entry point that binds no `@group(0)`.
    NoBindGroup {
        /// How many resources were given.
        resources: usize,
    },
    /// The buffer (it has `MAP_READ`) is mapped by another read right now.
    MappedElsewhere,
    /// The worker pool was already started with another size.
    PoolStarted {
        /// The size it runs with.
        threads: usize,
    },
    /// A blocking call on a target that cannot block (the browser's WebGPU):
    /// use the `_async` form.
    CannotBlock,
    /// Host memory to import for DMA (`HostBuffer`) must start and end on
    /// the driver's import alignment (a page, 4 KiB or more).
    UnalignedHostMemory {
        /// The slice's address.
        address: u64,
        /// Its length.
        len: u64,
        /// The alignment the driver needs.
        align: u64,
    },
}

impl fmt::Display for ApiMisuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingUsage { required, actual } => {
                write!(f, "buffer usage {actual:?} lacks {required:?}")
            }
            Self::RangeOutOfBounds {
                offset,
                len,
                byte_len,
            } => write!(
                f,
                "range [{offset}, +{len}) is outside the buffer's {byte_len} logical bytes"
            ),
            Self::Overflow => write!(f, "offset or length overflows"),
            Self::TooLarge { requested, max } => write!(
                f,
                "{requested} bytes exceed the device's max_buffer_size {max}"
            ),
            Self::ElementSize {
                byte_len,
                element_size,
            } => write!(
                f,
                "{byte_len} bytes are not a whole number of {element_size}-byte elements"
            ),
            Self::UnalignedWrite { offset, len } => write!(
                f,
                "write [{offset}, +{len}) must start and end on a 4-byte boundary (or end at the buffer's end)"
            ),
            Self::WrongDevice => write!(
                f,
                "the buffer or kernel belongs to another device or instance"
            ),
            Self::WrongQueue => write!(f, "the queue is not the queue of the buffer's device"),
            Self::UnknownQueue => write!(
                f,
                "no queue is known for the buffer's device yet: name it once (a GpuContext, upload, or a transfer given the queue)"
            ),
            Self::EmptyRange => write!(f, "a buffer range of 0 bytes cannot be bound"),
            Self::TooManyWorkgroups { workgroups, max } => write!(
                f,
                "{workgroups:?} workgroups exceed max_compute_workgroups_per_dimension {max}"
            ),
            Self::IndirectOffset { offset } => {
                write!(f, "indirect offset {offset} is not a multiple of 4")
            }
            Self::RecordedUniform => write!(
                f,
                "inline uniforms cannot be recorded; use dispatch() or bind a uniform buffer"
            ),
            Self::NoBindGroup { resources } => write!(
                f,
                "the entry point binds no @group(0) but {resources} resources were given"
            ),
            Self::MappedElsewhere => {
                write!(f, "the buffer is mapped by another read right now")
            }
            Self::PoolStarted { threads } => {
                write!(f, "the worker pool already runs with {threads} threads")
            }
            Self::UnalignedHostMemory {
                address,
                len,
                align,
            } => write!(
                f,
                "host memory at {address:#x} of {len} bytes is not aligned to {align} bytes (address and length)"
            ),
            Self::CannotBlock => write!(
                f,
                "this target cannot block on the GPU; use the _async form"
            ),
        }
    }
}

impl Error for ApiMisuse {}

impl From<ApiMisuse> for BackendError {
    fn from(m: ApiMisuse) -> Self {
        Self::ApiMisuse(m)
    }
}

/// The kind of error wgpu reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WgpuErrorKind {
    /// A validation error: wgpu refused the call.
    Validation,
    /// The GPU (or the driver) ran out of memory.
    OutOfMemory,
    /// An internal error of wgpu or the driver.
    Internal,
}

/// An error wgpu reported for a call this crate made: its kind, its message,
/// and the chain of causes behind it (through [`Error::source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WgpuError {
    kind: WgpuErrorKind,
    description: String,
    source: Option<Arc<Cause>>,
}

impl WgpuError {
    /// The kind of error.
    #[must_use]
    pub const fn kind(&self) -> WgpuErrorKind {
        self.kind
    }

    /// wgpu's message, with the causes it lists.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl fmt::Display for WgpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            WgpuErrorKind::Validation => "validation error",
            WgpuErrorKind::OutOfMemory => "out of memory",
            WgpuErrorKind::Internal => "internal error",
        };
        write!(f, "wgpu {kind}: {}", self.description)
    }
}

impl Error for WgpuError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|c| c as &(dyn Error + 'static))
    }
}

/// One link of a wgpu error's cause chain, kept as text: wgpu's own sources
/// are neither `Clone` nor `Sync`.
#[derive(Debug, PartialEq, Eq)]
struct Cause {
    text: String,
    next: Option<Arc<Cause>>,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.next.as_deref().map(|c| c as &(dyn Error + 'static))
    }
}

/// The cause chain starting at `e`, as text links.
fn chain(e: Option<&(dyn Error + 'static)>) -> Option<Arc<Cause>> {
    let mut texts = Vec::new();
    let mut cur = e;
    while let Some(err) = cur {
        texts.push(err.to_string());
        cur = err.source();
    }
    texts
        .into_iter()
        .rev()
        .fold(None, |next, text| Some(Arc::new(Cause { text, next })))
}

impl From<wgpu::Error> for WgpuError {
    fn from(e: wgpu::Error) -> Self {
        let source = chain(e.source());
        let (kind, description) = match e {
            wgpu::Error::OutOfMemory { .. } => {
                (WgpuErrorKind::OutOfMemory, "out of memory".to_owned())
            }
            wgpu::Error::Validation { description, .. } => (WgpuErrorKind::Validation, description),
            wgpu::Error::Internal { description, .. } => (WgpuErrorKind::Internal, description),
        };
        Self {
            kind,
            description,
            source,
        }
    }
}

impl From<wgpu::Error> for BackendError {
    fn from(e: wgpu::Error) -> Self {
        Self::Wgpu(e.into())
    }
}

impl BackendError {
    /// Whether the caller is at fault ([`BackendError::ApiMisuse`]).
    #[must_use]
    pub const fn is_misuse(&self) -> bool {
        matches!(self, Self::ApiMisuse(_))
    }

    /// The misuse, if the caller is at fault.
    #[must_use]
    pub const fn misuse(&self) -> Option<ApiMisuse> {
        match self {
            Self::ApiMisuse(m) => Some(*m),
            _ => None,
        }
    }

    /// The wgpu error, if wgpu reported one.
    #[must_use]
    pub const fn wgpu(&self) -> Option<&WgpuError> {
        match self {
            Self::Wgpu(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAdapter(m) => write!(f, "no GPU adapter: {m}"),
            Self::RequestDevice(m) => write!(f, "device request failed: {m}"),
            Self::ApiMisuse(m) => write!(f, "API misuse: {m}"),
            Self::Wgpu(e) => write!(f, "{e}"),
            Self::OutOfHostMemory { bytes } => {
                write!(f, "could not allocate {bytes} bytes of host memory")
            }
            Self::Map(m) => write!(f, "buffer mapping failed: {m}"),
            Self::DeviceLost(m) => write!(f, "device lost: {m}"),
            Self::PollTimeout => write!(f, "timed out waiting for the GPU"),
            Self::NoDeviceTag(b) => write!(f, "backend {b:?} has no hurray device tag"),
            Self::Bug(m) => write!(f, "hurray bug (please report): {m}"),
        }
    }
}

impl Error for BackendError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::ApiMisuse(m) => Some(m),
            Self::Wgpu(e) => Some(e),
            _ => None,
        }
    }
}
