//! The errors of sharing: what the adapter cannot do, what a message broke,
//! and what the driver or the socket refused.

use std::error::Error;
use std::fmt;

use hurray_core::{DescriptorError, EncodeError};

use crate::BackendError;

/// Why a buffer could not be exported, sent, received or imported.
///
/// Each variant names the party at fault: the platform or adapter
/// ([`Unsupported`](Self::Unsupported)), the peer that sent a message
/// ([`Message`](Self::Message), [`Descriptor`](Self::Descriptor),
/// [`DeviceMismatch`](Self::DeviceMismatch), [`MemoryType`](Self::MemoryType)),
/// the caller ([`NotExportable`](Self::NotExportable),
/// [`DescriptorMismatch`](Self::DescriptorMismatch), [`Encode`](Self::Encode)),
/// the driver ([`Vulkan`](Self::Vulkan)), the operating system
/// ([`Io`](Self::Io)), or wgpu / hurray-gpu ([`Backend`](Self::Backend)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShareError {
    /// This adapter, backend or driver cannot share memory as an opaque file
    /// descriptor. Nothing was allocated.
    Unsupported(Unsupported),
    /// A received message broke the protocol; nothing was imported and every
    /// file descriptor that came with it is closed.
    Message(MessageError),
    /// The message's descriptor is not a valid hurray descriptor
    /// (`TensorView::parse` refused it).
    Descriptor(DescriptorError),
    /// The buffer was exported by another physical device or driver than the
    /// importing one: its memory cannot be imported here.
    DeviceMismatch {
        /// The importing device's `deviceUUID` and `driverUUID`.
        local: DeviceIdentity,
        /// The identity the message names.
        remote: DeviceIdentity,
    },
    /// The memory type the producer allocated from cannot back the buffer on
    /// this device.
    MemoryType {
        /// The message's memory type index.
        index: u32,
        /// The memory types (bit `i` for type `i`) this device allows for the
        /// buffer.
        allowed: u32,
    },
    /// `export` on a buffer that was neither allocated with
    /// `alloc_exportable` nor imported.
    NotExportable,
    /// The descriptor given to `export_descriptor` does not describe this
    /// buffer (its buffer 0 is not [`to_buffer_handle`]'s, or it has more
    /// than one buffer).
    ///
    /// [`to_buffer_handle`]: crate::GpuBufferHandle::to_buffer_handle
    DescriptorMismatch,
    /// `signal_event` or `wait_event` on a buffer without a timeline
    /// semaphore (never exported with `export_event`, nor imported from an
    /// `Event` message that carried one).
    NoSemaphore,
    /// The descriptor for an export could not be encoded (a shape that does
    /// not fit the buffer, …).
    Encode(EncodeError),
    /// A Vulkan call failed.
    Vulkan {
        /// The Vulkan function.
        call: &'static str,
        /// Its `VkResult` (negative: an error code).
        result: i32,
    },
    /// A system call on the socket or the file descriptor failed.
    Io {
        /// The system call.
        call: &'static str,
        /// What `std::io` calls the failure.
        kind: std::io::ErrorKind,
        /// The `errno` value, if there was one.
        errno: Option<i32>,
    },
    /// wgpu or hurray-gpu failed (creating the wgpu buffer, clearing it,
    /// waiting for the queue).
    Backend(BackendError),
}

/// Why this adapter cannot share memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unsupported {
    /// The device is not a Vulkan device (Metal, DX12, GL, WebGPU): only
    /// Vulkan exports memory as a file descriptor.
    Backend(wgpu::Backend),
    /// The device was created without a Vulkan extension sharing needs
    /// (wgpu enables `VK_KHR_external_memory_fd` whenever the adapter offers it).
    Extension(&'static str),
    /// Sharing needs Vulkan 1.1 (device identity, external memory queries).
    VulkanVersion {
        /// The instance's API version (`VK_MAKE_API_VERSION`).
        instance: u32,
        /// The physical device's API version.
        device: u32,
    },
    /// The driver cannot export (or import) storage buffers as opaque file
    /// descriptors.
    HandleType {
        /// The driver's `VkExternalMemoryFeatureFlags` for such buffers.
        features: u32,
    },
    /// A buffer of zero bytes: Vulkan cannot allocate or share one.
    Empty,
    /// The driver cannot export and import timeline semaphores as opaque
    /// file descriptors (`Event` sync falls back to waiting for the queue).
    SemaphoreHandleType {
        /// The driver's `VkExternalSemaphoreFeatureFlags` for them.
        features: u32,
    },
}

/// A received message broke the protocol (see `docs/impl/gpu-share.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageError {
    /// The peer closed the connection before the message was complete.
    Truncated {
        /// Bytes received.
        got: usize,
        /// Bytes the message needs.
        expected: usize,
    },
    /// The header does not start with `"HRSB"`.
    Magic([u8; 4]),
    /// A protocol version this reader does not know.
    Version(u8),
    /// A handle type this reader does not know (1 is the only one: a Vulkan
    /// opaque file descriptor).
    HandleType(u8),
    /// Flag bits this reader does not know.
    Flags(u8),
    /// A reserved byte is not zero.
    Reserved(u8),
    /// The descriptor is longer than the protocol allows.
    DescriptorTooLong {
        /// Its stated length.
        len: u32,
        /// The limit, [`MAX_DESCRIPTOR_LEN`](crate::MAX_DESCRIPTOR_LEN).
        max: u32,
    },
    /// No file descriptor came with the message.
    NoFd,
    /// More file descriptors came with the message than it announces (1, or
    /// 2 with a semaphore; all closed), or
    /// the kernel dropped some for lack of room (`MSG_CTRUNC`).
    ExtraFds {
        /// How many arrived.
        count: usize,
    },
    /// The descriptor must describe exactly one buffer, the shared one.
    BufferCount(usize),
    /// The descriptor's buffer is not tagged Vulkan (its raw device code).
    DeviceTag(u8),
    /// The descriptor's buffer's sync mode (its raw code) does not match the
    /// message: `ProducerSynced` without a semaphore, `Event` with one.
    SyncMode(u8),
    /// The message says a timeline semaphore comes with it, but only one
    /// file descriptor came (all closed).
    NoSemaphoreFd,
    /// A semaphore handle type this reader does not know (1 is the only one:
    /// a Vulkan timeline semaphore as an opaque file descriptor).
    SemaphoreHandleType(u8),
    /// The value to wait for is 0: a timeline semaphore starts at 0, so it
    /// would wait for nothing.
    ZeroWaitValue,
    /// The descriptor's buffer is empty: there is nothing to share.
    EmptyBuffer,
    /// The stated allocation size is zero.
    ZeroAllocation,
    /// The descriptor's buffer (rounded up to 4 bytes) is larger than the
    /// stated allocation.
    BufferLargerThanAllocation {
        /// The buffer's size in bytes, rounded up to 4.
        buffer: u64,
        /// The stated allocation size.
        allocation: u64,
    },
    /// The stated allocation is larger than the memory behind the file
    /// descriptor (checked where the kernel knows the size: memfd-backed
    /// memory, as software drivers export).
    AllocationLargerThanFd {
        /// The stated allocation size.
        allocation: u64,
        /// The file descriptor's size.
        fd_size: u64,
    },
}

/// A physical device and driver, as Vulkan names them: memory exported by one
/// can be imported only by the same pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceIdentity {
    /// `VkPhysicalDeviceIDProperties::deviceUUID` (CUDA's `cudaDeviceProp::uuid`
    /// for the same NVIDIA GPU).
    pub device_uuid: [u8; 16],
    /// `VkPhysicalDeviceIDProperties::driverUUID`.
    pub driver_uuid: [u8; 16],
}

impl fmt::Display for DeviceIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device ")?;
        for b in self.device_uuid {
            write!(f, "{b:02x}")?;
        }
        write!(f, " driver ")?;
        for b in self.driver_uuid {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Backend(b) => write!(f, "the {b:?} backend cannot export memory"),
            Self::Extension(e) => write!(f, "the device was created without {e}"),
            Self::VulkanVersion { instance, device } => write!(
                f,
                "Vulkan 1.1 is needed (instance {}.{}, device {}.{})",
                instance >> 22,
                (instance >> 12) & 0x3ff,
                device >> 22,
                (device >> 12) & 0x3ff
            ),
            Self::HandleType { features } => write!(
                f,
                "the driver cannot share storage buffers as opaque fds (features {features:#x})"
            ),
            Self::Empty => write!(f, "a buffer of 0 bytes cannot be shared"),
            Self::SemaphoreHandleType { features } => write!(
                f,
                "the driver cannot share timeline semaphores as opaque fds (features {features:#x})"
            ),
        }
    }
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { got, expected } => write!(
                f,
                "the peer closed the connection after {got} of {expected} bytes"
            ),
            Self::Magic(m) => write!(f, "bad magic {m:02x?} (expected \"HRSB\")"),
            Self::Version(v) => write!(f, "unknown protocol version {v}"),
            Self::HandleType(t) => write!(f, "unknown handle type {t}"),
            Self::Flags(b) => write!(f, "unknown flag bits {b:#04x}"),
            Self::Reserved(b) => write!(f, "reserved byte is {b:#04x}, not 0"),
            Self::DescriptorTooLong { len, max } => {
                write!(f, "descriptor of {len} bytes exceeds {max}")
            }
            Self::NoFd => write!(f, "no file descriptor came with the message"),
            Self::ExtraFds { count } => write!(
                f,
                "{count} file descriptors came with the message (or some were dropped); expected 1, or 2 with a semaphore"
            ),
            Self::BufferCount(n) => write!(f, "the descriptor has {n} buffers; expected 1"),
            Self::DeviceTag(t) => write!(f, "the buffer's device tag {t:#04x} is not Vulkan"),
            Self::SyncMode(s) => write!(
                f,
                "the buffer's sync mode {s:#04x} does not match the message (ProducerSynced without a semaphore, Event with one)"
            ),
            Self::NoSemaphoreFd => write!(
                f,
                "the message announces a semaphore but only the memory's fd came"
            ),
            Self::SemaphoreHandleType(t) => write!(f, "unknown semaphore handle type {t}"),
            Self::ZeroWaitValue => write!(f, "the value to wait for is 0"),
            Self::EmptyBuffer => write!(f, "the descriptor's buffer is empty"),
            Self::ZeroAllocation => write!(f, "the allocation size is 0"),
            Self::BufferLargerThanAllocation { buffer, allocation } => write!(
                f,
                "a buffer of {buffer} bytes does not fit an allocation of {allocation}"
            ),
            Self::AllocationLargerThanFd {
                allocation,
                fd_size,
            } => write!(
                f,
                "an allocation of {allocation} bytes exceeds the {fd_size} bytes behind the fd"
            ),
        }
    }
}

impl fmt::Display for ShareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(u) => write!(f, "sharing unsupported: {u}"),
            Self::Message(m) => write!(f, "bad share message: {m}"),
            Self::Descriptor(d) => write!(f, "bad descriptor in share message: {d}"),
            Self::DeviceMismatch { local, remote } => write!(
                f,
                "the buffer comes from another GPU or driver ({remote}; this one is {local})"
            ),
            Self::MemoryType { index, allowed } => write!(
                f,
                "memory type {index} cannot back the buffer here (allowed {allowed:#b})"
            ),
            Self::NotExportable => write!(
                f,
                "the buffer was not allocated exportable (alloc_exportable) nor imported"
            ),
            Self::DescriptorMismatch => write!(
                f,
                "the descriptor's one buffer must be this buffer's to_buffer_handle()"
            ),
            Self::NoSemaphore => write!(
                f,
                "the buffer has no timeline semaphore (export_event it, or import an Event message)"
            ),
            Self::Encode(e) => write!(f, "the export's descriptor cannot be encoded: {e}"),
            Self::Vulkan { call, result } => write!(f, "{call} failed: VkResult {result}"),
            Self::Io { call, kind, errno } => match errno {
                Some(n) => write!(f, "{call} failed: {kind} (errno {n})"),
                None => write!(f, "{call} failed: {kind}"),
            },
            Self::Backend(e) => write!(f, "{e}"),
        }
    }
}

impl Error for Unsupported {}
impl Error for MessageError {}

impl Error for ShareError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Unsupported(u) => Some(u),
            Self::Message(m) => Some(m),
            Self::Descriptor(d) => Some(d),
            Self::Encode(e) => Some(e),
            Self::Backend(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Unsupported> for ShareError {
    fn from(u: Unsupported) -> Self {
        Self::Unsupported(u)
    }
}

impl From<MessageError> for ShareError {
    fn from(m: MessageError) -> Self {
        Self::Message(m)
    }
}

impl From<DescriptorError> for ShareError {
    fn from(d: DescriptorError) -> Self {
        Self::Descriptor(d)
    }
}

impl From<EncodeError> for ShareError {
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}

impl From<crate::ApiMisuse> for ShareError {
    fn from(m: crate::ApiMisuse) -> Self {
        Self::Backend(m.into())
    }
}

impl From<BackendError> for ShareError {
    fn from(e: BackendError) -> Self {
        Self::Backend(e)
    }
}

impl ShareError {
    /// A failed system call, from its `std::io::Error`.
    pub(crate) fn io(call: &'static str, e: &std::io::Error) -> Self {
        Self::Io {
            call,
            kind: e.kind(),
            errno: e.raw_os_error(),
        }
    }
}
