//! Sharing GPU buffers without copies: exportable Vulkan memory, handed to
//! another device, process or API as an opaque file descriptor plus a hurray
//! descriptor (Linux).
//!
//! ## Contract
//!
//! * **Export.** [`GpuBufferHandle::alloc_exportable`] allocates a buffer
//!   whose memory Vulkan can export (`VK_KHR_external_memory_fd`, opaque fd,
//!   one dedicated device-local allocation) and wraps it as an ordinary
//!   handle: every transfer and kernel works on it. [`GpuBufferHandle::export`]
//!   returns a [`SharedBuffer`]: a file descriptor for the memory, its
//!   allocation size and memory type, the device's identity, and the hurray
//!   descriptor of the tensor it holds.
//! * **Sync: `ProducerSynced`.** An export waits until all work submitted to
//!   the device has completed (as [`GpuBufferHandle::to_buffer_handle`]
//!   does), so the memory holds its final contents when the message leaves.
//!   A consumer that writes must likewise finish its work before the
//!   producer reads again. No semaphore travels (the format's `Event` mode
//!   is not offered here).
//! * **Protocol.** [`SharedBuffer::send`] writes one message (a 56-byte
//!   header and the descriptor) on a Unix stream socket with the fd attached
//!   (`SCM_RIGHTS`); [`SharedBuffer::recv`] reads exactly one message and
//!   validates all of it — the header, the descriptor with
//!   `TensorView::parse`, the one fd, the sizes against each other and
//!   against the fd — before anything is imported. Hostile messages are
//!   [`ShareError`]s, never panics; every fd that came with a refused message
//!   is closed. The layout is in `docs/impl/gpu-share.md`.
//! * **Import.** [`GpuBufferHandle::import`] checks that the message comes
//!   from the same physical device and driver (Vulkan's `deviceUUID` and
//!   `driverUUID`; [`ShareError::DeviceMismatch`] otherwise), that its memory
//!   type can back the buffer, then imports the memory and wraps it as a
//!   handle. The same memory, no copy.
//! * **Unsupported is an error, not a panic.** A device of another backend,
//!   a driver without the extension or without Vulkan 1.1, or one that
//!   cannot export storage buffers, answers [`ShareError::Unsupported`].
//! * **Shorter signatures.** [`GpuContext::alloc_exportable`] and
//!   [`GpuContext::import`] name no device or queue: the context is the
//!   device (its identity, not a lookup).
//! * **Rooms.** The memory itself is `external`'s (Vulkan calls through
//!   `ash`); the socket calls are in [`socket`] (`sendmsg`/`recvmsg` through
//!   `libc`), each `unsafe` block argued there. Sharing calls the handle
//!   (`GpuBufferHandle::from_parts`) and external memory; neither calls
//!   sharing.
//!
//! Wrapped memory is freed by wgpu with the last clone of the handle; the
//! producer's memory lives on while any imported handle or unclosed fd
//! references it (Vulkan counts the references).

mod socket;
mod wire;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use hurray_core::{BufferHandle, ElementType, TensorDescriptor, TensorView};
use zerocopy::{FromBytes, IntoBytes};

pub use wire::MAX_DESCRIPTOR_LEN;

use crate::ApiMisuse;
use crate::GpuContext;
use crate::device::{self, DeviceShared};
use crate::exec::block_on;
use crate::external::{
    self, DeviceIdentity, ExternalMemory, Memory, MessageError, SHARED_USAGE, ShareError,
    Unsupported,
};
use crate::handle::{self, GpuBufferHandle, Parts};
use wire::{HEADER_LEN, Header};

/// A buffer's memory as one message: a file descriptor, the allocation it
/// refers to, and the hurray descriptor of the tensor in it.
///
/// Made by [`GpuBufferHandle::export`] (or
/// [`export_descriptor`](GpuBufferHandle::export_descriptor)) and by
/// [`SharedBuffer::recv`], each of which validated everything: the
/// descriptor parses and names exactly one non-empty, Vulkan-tagged,
/// `ProducerSynced` buffer that fits the allocation.
#[derive(Debug)]
pub struct SharedBuffer {
    fd: OwnedFd,
    memory: Memory,
    buffer: BufferHandle,
    descriptor: Box<[u8]>,
}

impl SharedBuffer {
    /// The descriptor, parsed.
    #[must_use]
    pub fn descriptor(&self) -> TensorView<'_> {
        match TensorView::parse(&self.descriptor) {
            Ok(view) => view,
            // Every constructor parsed these very bytes (they are never
            // modified), and parsing is deterministic.
            Err(_) => unreachable!("a SharedBuffer's descriptor was validated when it was made"),
        }
    }

    /// The descriptor's bytes.
    #[must_use]
    pub fn descriptor_bytes(&self) -> &[u8] {
        &self.descriptor
    }

    /// The descriptor's one buffer: its logical size, alignment, device tag
    /// (Vulkan) and sync mode (`ProducerSynced`).
    #[must_use]
    pub fn buffer(&self) -> BufferHandle {
        self.buffer
    }

    /// `allocationSize` of the exported memory (at least the buffer's size).
    #[must_use]
    pub fn allocation_size(&self) -> u64 {
        self.memory.allocation_size
    }

    /// The Vulkan memory type the memory was allocated from.
    #[must_use]
    pub fn memory_type_index(&self) -> u32 {
        self.memory.memory_type_index
    }

    /// Whether the memory is a dedicated allocation (an importer must
    /// import it as one: Vulkan's `VkMemoryDedicatedAllocateInfo`, CUDA's
    /// `cudaExternalMemoryDedicated`).
    #[must_use]
    pub fn is_dedicated(&self) -> bool {
        self.memory.dedicated
    }

    /// The exporting device and driver.
    #[must_use]
    pub fn identity(&self) -> DeviceIdentity {
        self.memory.identity
    }

    /// The file descriptor (an opaque Vulkan memory handle).
    #[must_use]
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The file descriptor, to hand to another API (CUDA's
    /// `cudaImportExternalMemory` with `cudaExternalMemoryHandleTypeOpaqueFd`
    /// takes ownership of it).
    #[must_use]
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }

    /// A copy with a duplicate file descriptor (`dup`), e.g. to import the
    /// memory twice.
    ///
    /// # Errors
    /// [`ShareError::Io`] when the process is out of file descriptors.
    pub fn try_clone(&self) -> Result<Self, ShareError> {
        Ok(Self {
            fd: self.fd.try_clone().map_err(|e| ShareError::io("dup", &e))?,
            memory: self.memory,
            buffer: self.buffer,
            descriptor: self.descriptor.clone(),
        })
    }

    /// Writes this message on `socket`, the fd attached to its first byte.
    ///
    /// # Errors
    /// [`ShareError::Io`] when the socket refuses (a closed peer is
    /// `BrokenPipe`; no `SIGPIPE` is raised).
    pub fn send(&self, socket: &UnixStream) -> Result<(), ShareError> {
        let len = u32::try_from(self.descriptor.len()).map_err(|_| {
            ShareError::Message(MessageError::DescriptorTooLong {
                len: u32::MAX,
                max: MAX_DESCRIPTOR_LEN,
            })
        })?;
        let header = Header::new(&self.memory, len);
        let mut message = Vec::with_capacity(HEADER_LEN + self.descriptor.len());
        message.extend_from_slice(header.as_bytes());
        message.extend_from_slice(&self.descriptor);
        let socket = socket.as_fd();
        let mut sent = socket::send_with_fd(socket, &message, Some(self.fd.as_fd()))
            .map_err(|e| ShareError::io("sendmsg", &e))?;
        while let Some(rest) = message.get(sent..).filter(|r| !r.is_empty()) {
            let n = socket::send_with_fd(socket, rest, None)
                .map_err(|e| ShareError::io("sendmsg", &e))?;
            if n == 0 {
                let e = std::io::Error::from(std::io::ErrorKind::WriteZero);
                return Err(ShareError::io("sendmsg", &e));
            }
            sent += n;
        }
        Ok(())
    }

    /// Reads exactly one message from `socket` and validates it before
    /// anything else: the header, the descriptor (`TensorView::parse`), the
    /// one fd, and the sizes (the buffer fits the stated allocation, which
    /// fits the memory behind the fd where the kernel knows its size).
    ///
    /// Blocks until the message is complete; set a read timeout on the
    /// socket to bound the wait. After an error the stream may be in the
    /// middle of a message: close it.
    ///
    /// # Errors
    /// [`ShareError::Message`] and [`ShareError::Descriptor`] for a message
    /// that breaks the protocol (every fd that came with it is closed),
    /// [`ShareError::Io`] when the socket fails.
    pub fn recv(socket: &UnixStream) -> Result<Self, ShareError> {
        let socket = socket.as_fd();
        let mut fds = Vec::new();
        let mut truncated_control = false;
        let mut header = [0u8; HEADER_LEN];
        let mut reader = Reader {
            socket,
            fds: &mut fds,
            truncated_control: &mut truncated_control,
        };
        reader.fill(&mut header, 0, HEADER_LEN)?;
        let header = Header::read_from_bytes(&header)
            .map_err(|_| crate::BackendError::Bug("a 56-byte array is not a header"))?;
        let len = header.check()?;
        let mut descriptor = vec![0u8; len].into_boxed_slice();
        reader.fill(&mut descriptor, HEADER_LEN, HEADER_LEN + len)?;
        let (memory, buffer) = wire::check(&header, &descriptor)?;
        let fd = match (fds.len(), truncated_control) {
            (0, false) => return Err(MessageError::NoFd.into()),
            (1, false) => fds.pop(),
            (count, _) => return Err(MessageError::ExtraFds { count }.into()),
        };
        let fd = fd.ok_or(crate::BackendError::Bug("one fd counted, none held"))?;
        if let Some(fd_size) = fd_size(&fd)? {
            if fd_size < memory.allocation_size {
                return Err(MessageError::AllocationLargerThanFd {
                    allocation: memory.allocation_size,
                    fd_size,
                }
                .into());
            }
        }
        Ok(Self {
            fd,
            memory,
            buffer,
            descriptor,
        })
    }
}

/// Reads whole byte ranges of one message, collecting the fds that come.
struct Reader<'s, 'v> {
    socket: BorrowedFd<'s>,
    fds: &'v mut Vec<OwnedFd>,
    truncated_control: &'v mut bool,
}

impl Reader<'_, '_> {
    /// Fills `buf`, which starts at byte `before` of a message of
    /// `expected` bytes.
    fn fill(&mut self, buf: &mut [u8], before: usize, expected: usize) -> Result<(), ShareError> {
        let mut got = 0;
        while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
            let (n, truncated) = socket::recv_with_fds(self.socket, rest, self.fds)
                .map_err(|e| ShareError::io("recvmsg", &e))?;
            *self.truncated_control |= truncated;
            // More than one fd is a refusal whatever follows: stop at once
            // rather than let a peer pile descriptors into this process.
            if self.fds.len() > 1 || *self.truncated_control {
                return Err(MessageError::ExtraFds {
                    count: self.fds.len(),
                }
                .into());
            }
            if n == 0 {
                return Err(MessageError::Truncated {
                    got: before + got,
                    expected,
                }
                .into());
            }
            got += n;
        }
        Ok(())
    }
}

/// The size of the memory behind `fd`, where the kernel knows it (a memfd
/// or other regular file); `None` for a device's opaque handle.
fn fd_size(fd: &OwnedFd) -> Result<Option<u64>, ShareError> {
    let dup = fd.try_clone().map_err(|e| ShareError::io("dup", &e))?;
    let meta = std::fs::File::from(dup)
        .metadata()
        .map_err(|e| ShareError::io("fstat", &e))?;
    Ok(meta.file_type().is_file().then_some(meta.len()))
}

impl GpuBufferHandle {
    /// Allocates a buffer of `len` bytes whose memory can be exported
    /// ([`export`](Self::export)) to another device, process or API.
    ///
    /// The buffer has [`SHARED_USAGE`] and zero contents, and is an ordinary
    /// handle otherwise. Its memory is one dedicated, device-local Vulkan
    /// allocation (`VK_KHR_external_memory_fd`, opaque fd), created on the
    /// device wgpu created (wgpu enables the extension wherever the adapter
    /// offers it).
    ///
    /// ```no_run
    /// use hurray_core::ElementType;
    /// use hurray_gpu::{GpuBufferHandle, GpuContext, SharedBuffer};
    /// use std::os::unix::net::UnixStream;
    ///
    /// let ctx = GpuContext::new()?;
    /// let h = GpuBufferHandle::alloc_exportable(&ctx.device, &ctx.queue, 4096)?;
    /// let (a, b) = UnixStream::pair()?;
    /// h.export(ElementType::Float32, &[1024])?.send(&a)?;
    /// // In the consumer (here the same process, a second device would do):
    /// let shared = SharedBuffer::recv(&b)?;
    /// let same = GpuBufferHandle::import(&ctx.device, &ctx.queue, shared)?;
    /// assert_eq!(same.byte_len(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`ShareError::Unsupported`] when the device cannot export memory (or
    /// `len` is 0), [`ShareError::Backend`] with [`ApiMisuse`] for a size over
    /// the device's `max_buffer_size` or a queue of another device,
    /// [`ShareError::Vulkan`] when the driver refuses the allocation.
    pub fn alloc_exportable(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        len: u64,
    ) -> Result<Self, ShareError> {
        if len == 0 {
            return Err(Unsupported::Empty.into());
        }
        let shared = device::shared(device, Some(queue));
        shared.check_queue(queue)?;
        Self::alloc_exportable_on(&shared, len)
    }

    /// [`alloc_exportable`](Self::alloc_exportable) on a device state hurray
    /// holds.
    fn alloc_exportable_on(shared: &Arc<DeviceShared>, len: u64) -> Result<Self, ShareError> {
        if len == 0 {
            return Err(Unsupported::Empty.into());
        }
        let queue = shared.own_queue()?;
        let size = handle::allocation_len(shared, len)?;
        let element_count = usize::try_from(len).map_err(|_| ApiMisuse::Overflow)?;
        let (buffer, external) = external::allocate_exportable(shared, queue, size)?;
        Ok(Self::from_parts(Parts {
            shared: Arc::clone(shared),
            buffer,
            byte_len: len,
            allocation_len: size,
            element_count,
            usage: SHARED_USAGE,
            external: Some(external),
        }))
    }

    /// Exports this buffer as a row-major tensor of `shape` and
    /// `element_type`: waits for the device's queue (`ProducerSynced`),
    /// then returns the memory's fd (a new one each call) with the
    /// descriptor.
    ///
    /// # Errors
    /// [`ShareError::NotExportable`] for a buffer not made by
    /// [`alloc_exportable`](Self::alloc_exportable) or
    /// [`import`](Self::import); [`ShareError::Encode`] when the tensor
    /// does not fit the buffer; [`ShareError::Backend`] when waiting for the
    /// GPU fails.
    pub fn export(
        &self,
        element_type: ElementType,
        shape: &[u64],
    ) -> Result<SharedBuffer, ShareError> {
        block_on(self.device(), self.export_async(element_type, shape))
    }

    /// The async form of [`export`](Self::export): never blocks (the wait
    /// for the device's queue is a callback, which needs the device to be
    /// polled, as every `_async` transfer).
    ///
    /// # Errors
    /// As [`export`](Self::export).
    pub async fn export_async(
        &self,
        element_type: ElementType,
        shape: &[u64],
    ) -> Result<SharedBuffer, ShareError> {
        let external = self.external().ok_or(ShareError::NotExportable)?;
        let handles = [self.to_buffer_handle_async().await?];
        let desc = TensorDescriptor::row_major(element_type, shape, &handles);
        let mut bytes = vec![0u8; desc.encoded_len()];
        let n = desc.encode(&mut bytes)?;
        bytes.truncate(n);
        share(external, handles[0], bytes.into_boxed_slice())
    }

    /// Exports this buffer with a descriptor you encoded (any layout), whose
    /// one buffer must be [`to_buffer_handle`](Self::to_buffer_handle)'s.
    /// Waits for the device's queue (`ProducerSynced`).
    ///
    /// # Errors
    /// As [`export`](Self::export); [`ShareError::Descriptor`] when the bytes
    /// are no valid descriptor, [`ShareError::DescriptorMismatch`] when it
    /// does not describe this buffer alone.
    pub fn export_descriptor(&self, descriptor: &[u8]) -> Result<SharedBuffer, ShareError> {
        block_on(self.device(), self.export_descriptor_async(descriptor))
    }

    /// The async form of [`export_descriptor`](Self::export_descriptor):
    /// never blocks.
    ///
    /// # Errors
    /// As [`export_descriptor`](Self::export_descriptor).
    pub async fn export_descriptor_async(
        &self,
        descriptor: &[u8],
    ) -> Result<SharedBuffer, ShareError> {
        let external = self.external().ok_or(ShareError::NotExportable)?;
        let view = TensorView::parse(descriptor)?;
        let own = self.to_buffer_handle_async().await?;
        let table = view.buffers();
        if table.len() != 1 || table.get(0) != Some(own) {
            return Err(ShareError::DescriptorMismatch);
        }
        share(external, own, descriptor.into())
    }

    /// Imports a buffer another device, process or API exported, on
    /// `device`: no copy, the same memory.
    ///
    /// The handle has [`SHARED_USAGE`], the descriptor's buffer size as its
    /// [`byte_len`](Self::byte_len) (one element per byte), and can itself
    /// be exported again (it keeps the fd).
    ///
    /// # Errors
    /// [`ShareError::Unsupported`] when `device` cannot import;
    /// [`ShareError::DeviceMismatch`] when the memory comes from another
    /// physical device or driver; [`ShareError::MemoryType`] and
    /// [`ShareError::Message`] (`BufferLargerThanAllocation`) when the stated
    /// memory cannot back the buffer here; [`ShareError::Vulkan`] when the
    /// driver refuses the fd; [`ShareError::Backend`] for a queue of another
    /// device.
    pub fn import(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        shared_buffer: SharedBuffer,
    ) -> Result<Self, ShareError> {
        let shared = device::shared(device, Some(queue));
        shared.check_queue(queue)?;
        Self::import_on(&shared, shared_buffer)
    }

    /// [`import`](Self::import) on a device state hurray holds.
    fn import_on(
        shared: &Arc<DeviceShared>,
        shared_buffer: SharedBuffer,
    ) -> Result<Self, ShareError> {
        let byte_len = shared_buffer.buffer.byte_size();
        let size = handle::allocation_len(shared, byte_len)?;
        let element_count = usize::try_from(byte_len).map_err(|_| ApiMisuse::Overflow)?;
        let (buffer, external) =
            external::import(shared, shared_buffer.fd, size, shared_buffer.memory)?;
        Ok(Self::from_parts(Parts {
            shared: Arc::clone(shared),
            buffer,
            byte_len,
            allocation_len: size,
            element_count,
            usage: SHARED_USAGE,
            external: Some(external),
        }))
    }
}

/// Sharing through a context: the shorter signatures, which name no device
/// or queue.
impl GpuContext {
    /// Allocates an exportable buffer of `len` bytes on this device:
    /// [`GpuBufferHandle::alloc_exportable`] without naming the device and
    /// queue.
    ///
    /// # Errors
    /// As [`GpuBufferHandle::alloc_exportable`].
    pub fn alloc_exportable(&self, len: u64) -> Result<GpuBufferHandle, ShareError> {
        GpuBufferHandle::alloc_exportable_on(self.shared(), len)
    }

    /// Imports a buffer another device, process or API exported, on this
    /// device: [`GpuBufferHandle::import`] without naming the device and
    /// queue.
    ///
    /// # Errors
    /// As [`GpuBufferHandle::import`].
    pub fn import(&self, shared_buffer: SharedBuffer) -> Result<GpuBufferHandle, ShareError> {
        GpuBufferHandle::import_on(self.shared(), shared_buffer)
    }
}

/// A message for `external` memory with `descriptor`, whose one buffer is
/// `buffer` (checked by the caller).
fn share(
    external: &ExternalMemory,
    buffer: BufferHandle,
    descriptor: Box<[u8]>,
) -> Result<SharedBuffer, ShareError> {
    let len = u32::try_from(descriptor.len()).unwrap_or(u32::MAX);
    if len > MAX_DESCRIPTOR_LEN {
        return Err(MessageError::DescriptorTooLong {
            len,
            max: MAX_DESCRIPTOR_LEN,
        }
        .into());
    }
    Ok(SharedBuffer {
        fd: external.dup_fd()?,
        memory: external.memory(),
        buffer,
        descriptor,
    })
}

#[cfg(test)]
mod tests;
