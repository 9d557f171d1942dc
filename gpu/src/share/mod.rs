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
//! * **Sync: `ProducerSynced`.** [`GpuBufferHandle::export`] waits until all
//!   work submitted to the device has completed (as
//!   [`GpuBufferHandle::to_buffer_handle`] does), so the memory holds its
//!   final contents when the message leaves. A consumer that writes must
//!   likewise finish its work before the producer reads again.
//! * **Sync: `Event`.** [`GpuBufferHandle::export_event`] waits for nothing:
//!   the buffer's timeline semaphore (`VK_KHR_external_semaphore_fd`, made
//!   exportable on first use) is signalled on the GPU once the work
//!   submitted before the call is done, and the message carries the
//!   semaphore's fd and the value to wait for ([`SharedBuffer::wait_value`]).
//!   An importer waits for it on the GPU before its own work
//!   ([`GpuBufferHandle::import`] does it), CUDA with
//!   `cudaWaitExternalSemaphoresAsync`. Either side hands the buffer back
//!   with [`GpuBufferHandle::signal_event`] (a new value, signalled after
//!   its work) and [`GpuBufferHandle::wait_event`] (the other side's value).
//!   Where the device cannot share timeline semaphores
//!   ([`event_sync`](crate::event_sync) says why), `export_event` is
//!   `export`: it waits for the queue and sends no semaphore. ADR-117 argues
//!   why the signal follows exactly the work before it.
//! * **Protocol.** [`SharedBuffer::send`] writes one message (a 56-byte
//!   header, a 16-byte sync block with a semaphore, and the descriptor) on a
//!   Unix stream socket with the fd attached (`SCM_RIGHTS`; two fds with a
//!   semaphore); [`SharedBuffer::recv`] reads exactly one message and
//!   validates all of it — the header, the sync block, the descriptor with
//!   `TensorView::parse`, the fds, the sizes against each other and
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

use hurray_core::{BufferHandle, ElementType, SyncMode, TensorDescriptor, TensorView};
use zerocopy::{FromBytes, IntoBytes};

pub use wire::MAX_DESCRIPTOR_LEN;

use crate::ApiMisuse;
use crate::GpuContext;
use crate::device::{self, DeviceShared};
use crate::exec::block_on;
use crate::external::semaphore::{self, Timeline};
use crate::external::{
    self, DeviceIdentity, ExternalMemory, Memory, MessageError, SHARED_USAGE, ShareError,
    Unsupported,
};
use crate::handle::{self, GpuBufferHandle, Parts};
use wire::{HEADER_LEN, Header, SYNC_LEN, SyncBlock};

/// A buffer's memory as one message: a file descriptor, the allocation it
/// refers to, and the hurray descriptor of the tensor in it.
///
/// Made by [`GpuBufferHandle::export`] (or
/// [`export_descriptor`](GpuBufferHandle::export_descriptor)) and by
/// [`SharedBuffer::recv`], each of which validated everything: the
/// descriptor parses and names exactly one non-empty, Vulkan-tagged buffer
/// that fits the allocation, `ProducerSynced`, or `Event` with a timeline
/// semaphore and the value to wait for.
#[derive(Debug)]
pub struct SharedBuffer {
    fd: OwnedFd,
    memory: Memory,
    buffer: BufferHandle,
    descriptor: Box<[u8]>,
    semaphore: Option<Semaphore>,
}

/// The timeline semaphore of an `Event` message and the value to wait for.
#[derive(Debug)]
struct Semaphore {
    fd: OwnedFd,
    wait_value: u64,
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
    /// (Vulkan) and sync mode (`ProducerSynced`, or `Event` with a
    /// semaphore).
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

    /// How the consumer learns that the producer's work on the memory is
    /// done: `ProducerSynced` (it was, before the message left) or `Event`
    /// (wait for [`wait_value`](Self::wait_value) on
    /// [`semaphore_fd`](Self::semaphore_fd)).
    #[must_use]
    pub fn sync_mode(&self) -> SyncMode {
        self.buffer.sync_mode()
    }

    /// The value the timeline semaphore reaches when the producer's work on
    /// the memory is done; `None` for a `ProducerSynced` message.
    #[must_use]
    pub fn wait_value(&self) -> Option<u64> {
        self.semaphore.as_ref().map(|s| s.wait_value)
    }

    /// The timeline semaphore's file descriptor (a Vulkan opaque fd; CUDA
    /// imports it with `cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd`);
    /// `None` for a `ProducerSynced` message.
    #[must_use]
    pub fn semaphore_fd(&self) -> Option<BorrowedFd<'_>> {
        self.semaphore.as_ref().map(|s| s.fd.as_fd())
    }

    /// The memory's file descriptor and, for an `Event` message, the
    /// semaphore's with the value to wait for: to hand both to another API.
    #[must_use]
    pub fn into_fds(self) -> (OwnedFd, Option<(OwnedFd, u64)>) {
        (self.fd, self.semaphore.map(|s| (s.fd, s.wait_value)))
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
        let semaphore = match &self.semaphore {
            Some(s) => Some(Semaphore {
                fd: s.fd.try_clone().map_err(|e| ShareError::io("dup", &e))?,
                wait_value: s.wait_value,
            }),
            None => None,
        };
        Ok(Self {
            fd: self.fd.try_clone().map_err(|e| ShareError::io("dup", &e))?,
            memory: self.memory,
            buffer: self.buffer,
            descriptor: self.descriptor.clone(),
            semaphore,
        })
    }

    /// Writes this message on `socket`, the fd (the memory's, then the
    /// semaphore's for an `Event` message) attached to its first byte.
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
        let header = Header::new(&self.memory, len, self.semaphore.is_some());
        let mut message = Vec::with_capacity(HEADER_LEN + SYNC_LEN + self.descriptor.len());
        message.extend_from_slice(header.as_bytes());
        let mut fds = vec![self.fd.as_fd()];
        if let Some(s) = &self.semaphore {
            message.extend_from_slice(SyncBlock::new(s.wait_value).as_bytes());
            fds.push(s.fd.as_fd());
        }
        message.extend_from_slice(&self.descriptor);
        let socket = socket.as_fd();
        let mut sent = socket::send_with_fds(socket, &message, &fds)
            .map_err(|e| ShareError::io("sendmsg", &e))?;
        while let Some(rest) = message.get(sent..).filter(|r| !r.is_empty()) {
            let n = socket::send_with_fds(socket, rest, &[])
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
    /// anything else: the header, the sync block when the header announces a
    /// semaphore, the descriptor (`TensorView::parse`), the fds (one, or two
    /// with a semaphore), and the sizes (the buffer fits the stated
    /// allocation, which fits the memory behind the fd where the kernel knows
    /// its size).
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
        let sync_len = if header.has_timeline() { SYNC_LEN } else { 0 };
        let total = HEADER_LEN + sync_len + len;
        let sync = if header.has_timeline() {
            let mut block = [0u8; SYNC_LEN];
            reader.fill(&mut block, HEADER_LEN, total)?;
            Some(
                SyncBlock::read_from_bytes(&block)
                    .map_err(|_| crate::BackendError::Bug("a 16-byte array is not a sync block"))?,
            )
        } else {
            None
        };
        let mut descriptor = vec![0u8; len].into_boxed_slice();
        reader.fill(&mut descriptor, HEADER_LEN + sync_len, total)?;
        let checked = wire::check(&header, sync.as_ref(), &descriptor)?;
        let (memory, buffer) = (checked.memory, checked.buffer);
        let want = if checked.wait_value.is_some() { 2 } else { 1 };
        match (fds.len(), truncated_control) {
            (0, false) => return Err(MessageError::NoFd.into()),
            (1, false) if want == 2 => return Err(MessageError::NoSemaphoreFd.into()),
            (n, false) if n == want => {}
            (count, _) => return Err(MessageError::ExtraFds { count }.into()),
        }
        let semaphore_fd = if want == 2 { fds.pop() } else { None };
        let fd = fds.pop();
        let fd = fd.ok_or(crate::BackendError::Bug("one fd counted, none held"))?;
        let semaphore = match (semaphore_fd, checked.wait_value) {
            (Some(fd), Some(wait_value)) => Some(Semaphore { fd, wait_value }),
            (None, None) => None,
            _ => return Err(crate::BackendError::Bug("a semaphore fd without its value").into()),
        };
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
            semaphore,
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
            // More fds than any message carries is a refusal whatever
            // follows: stop at once rather than let a peer pile descriptors
            // into this process.
            if self.fds.len() > socket::MAX_SEND_FDS || *self.truncated_control {
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
        share(external, handles[0], bytes.into_boxed_slice(), None)
    }

    /// Exports this buffer as a row-major tensor of `shape` and
    /// `element_type` with `Event` sync: waits for nothing. The buffer's
    /// timeline semaphore (made exportable on first use) reaches a new value
    /// on the GPU once all the work submitted to its queue before this call
    /// is done (the work that wrote the buffer included), and the message
    /// carries the semaphore's fd and that value ([`SharedBuffer::wait_value`]).
    ///
    /// Where the device cannot share timeline semaphores
    /// ([`event_sync`](crate::event_sync) says why: not Vulkan, no
    /// `VK_KHR_external_semaphore_fd` on a device you created, an old
    /// driver), this is [`export`](Self::export): it waits for the queue and
    /// the message is `ProducerSynced`, without a semaphore. Read
    /// [`SharedBuffer::sync_mode`] to know which you got.
    ///
    /// ```no_run
    /// use hurray_core::{ElementType, SyncMode};
    /// use hurray_gpu::{GpuContext, SharedBuffer};
    /// use std::os::unix::net::UnixStream;
    ///
    /// let ctx = GpuContext::new()?;
    /// let h = ctx.alloc_exportable(4096)?;
    /// h.write(&ctx.device, &ctx.queue, 0, &[7; 4096])?; // queued, not waited for
    /// let message = h.export_event(ElementType::UInt8, &[4096])?;
    /// assert_eq!(message.sync_mode() == SyncMode::Event, ctx.event_sync());
    /// let (a, b) = UnixStream::pair()?;
    /// message.send(&a)?;
    /// // The consumer's import waits for the value on its GPU, not on its host.
    /// let same = ctx.import(SharedBuffer::recv(&b)?)?;
    /// assert_eq!(same.readback_vec::<u8>(&ctx.device, &ctx.queue)?, vec![7; 4096]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`export`](Self::export); [`ShareError::Vulkan`] when the driver
    /// refuses the semaphore or its fd.
    pub fn export_event(
        &self,
        element_type: ElementType,
        shape: &[u64],
    ) -> Result<SharedBuffer, ShareError> {
        let external = self.external().ok_or(ShareError::NotExportable)?;
        let device = self.device();
        if semaphore::check(device).is_err() {
            return self.export(element_type, shape);
        }
        let handle = self.buffer_handle_now(SyncMode::Event)?;
        let handles = [handle];
        let desc = TensorDescriptor::row_major(element_type, shape, &handles);
        let mut bytes = vec![0u8; desc.encoded_len()];
        let n = desc.encode(&mut bytes)?;
        bytes.truncate(n);
        let timeline = external.timeline_or_new(device)?;
        let fd = timeline.export_fd()?;
        let queue = self.shared().own_queue()?;
        let wait_value = timeline.signal(queue)?;
        share(
            external,
            handle,
            bytes.into_boxed_slice(),
            Some(Semaphore { fd, wait_value }),
        )
    }

    /// Signals this buffer's timeline semaphore with a new value, returned,
    /// once all the work submitted to its queue before this call is done;
    /// waits for nothing. Send the value to the other side, which waits for
    /// it before it touches the buffer again (CUDA:
    /// `cudaWaitExternalSemaphoresAsync`; hurray: [`wait_event`](Self::wait_event)).
    ///
    /// # Errors
    /// [`ShareError::NoSemaphore`] for a buffer without a timeline semaphore
    /// (never exported with [`export_event`](Self::export_event) nor
    /// imported from an `Event` message).
    pub fn signal_event(&self) -> Result<u64, ShareError> {
        let timeline = self.timeline()?;
        timeline.signal(self.shared().own_queue()?)
    }

    /// Makes all work submitted to this buffer's queue after this call wait,
    /// on the GPU, until its timeline semaphore reaches `value` (one the
    /// other side signalled when its work on the buffer was done); waits for
    /// nothing on the host.
    ///
    /// # Errors
    /// As [`signal_event`](Self::signal_event).
    pub fn wait_event(&self, value: u64) -> Result<(), ShareError> {
        let timeline = self.timeline()?;
        timeline.wait(self.shared().own_queue()?, value)
    }

    /// The highest value of this buffer's timeline semaphore signalled or
    /// waited for on this device (0 before any); `None` without a semaphore.
    #[must_use]
    pub fn event_value(&self) -> Option<u64> {
        self.external()?.timeline().map(|t| t.value())
    }

    fn timeline(&self) -> Result<Arc<Timeline>, ShareError> {
        self.external()
            .and_then(ExternalMemory::timeline)
            .ok_or(ShareError::NoSemaphore)
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
        share(external, own, descriptor.into(), None)
    }

    /// Imports a buffer another device, process or API exported, on
    /// `device`: no copy, the same memory.
    ///
    /// For an `Event` message ([`SharedBuffer::wait_value`] is `Some`), the
    /// timeline semaphore is imported too, and all work submitted to the
    /// queue after the import waits on the GPU until it reaches the value:
    /// the host waits for nothing. The handle keeps the semaphore
    /// ([`signal_event`](Self::signal_event), [`wait_event`](Self::wait_event)).
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
    /// device. For an `Event` message, [`ShareError::Unsupported`] when
    /// `device` cannot import timeline semaphores (a device you created
    /// without `VK_KHR_external_semaphore_fd`), and [`ShareError::Vulkan`]
    /// when the driver refuses the semaphore's fd.
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
        // The semaphore first: a device that cannot import it refuses the
        // message before any memory is imported.
        let timeline = match shared_buffer.semaphore {
            Some(s) => {
                let queue = shared.own_queue()?;
                let t = Timeline::import(&shared.device, s.fd)?;
                Some((t, queue, s.wait_value))
            }
            None => None,
        };
        let (buffer, external) =
            external::import(shared, shared_buffer.fd, size, shared_buffer.memory)?;
        if let Some((t, queue, value)) = timeline {
            // Before any work on the buffer can be submitted (the handle is
            // not returned yet): every later submission waits for `value`.
            t.wait(queue, value)?;
            external.set_timeline(Arc::new(t));
        }
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

    /// Whether `Event` exports on this device carry a timeline semaphore
    /// ([`GpuBufferHandle::export_event`]), rather than wait for the queue;
    /// [`event_sync`](crate::event_sync) says why not.
    #[must_use]
    pub fn event_sync(&self) -> bool {
        semaphore::check(&self.device).is_ok()
    }
}

/// A message for `external` memory with `descriptor`, whose one buffer is
/// `buffer` (checked by the caller), `Event`-synced by `semaphore` if given.
fn share(
    external: &ExternalMemory,
    buffer: BufferHandle,
    descriptor: Box<[u8]>,
    semaphore: Option<Semaphore>,
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
        semaphore,
    })
}

#[cfg(test)]
mod tests;
