//! The share message: a fixed 56-byte header, a 16-byte sync block when the
//! header's [`FLAG_TIMELINE`] is set, then a hurray descriptor; one file
//! descriptor travels with it (`SCM_RIGHTS`), or two with a semaphore (the
//! memory's, then the timeline semaphore's).
//!
//! ## Contract
//!
//! [`check`] is the only way bytes become a message's checked parts (the
//! [`Memory`] it states and its descriptor's one [`BufferHandle`]). It reads the
//! header through [`Header`] (a zerocopy view: no pointer casts, no
//! alignment needs), then the descriptor with `TensorView::parse`, and
//! refuses, with a [`MessageError`] or the descriptor's [`DescriptorError`](hurray_core::DescriptorError):
//! a bad magic, version, handle type, flag or reserved byte; a sync block
//! with an unknown semaphore handle type, a non-zero reserved byte or a wait
//! value of 0; a descriptor that is not exactly one valid hurray descriptor;
//! one that describes other than one non-empty, Vulkan-tagged buffer whose
//! sync mode is `ProducerSynced` without a semaphore and `Event` with one; an
//! allocation of zero bytes or one smaller than the buffer. Nothing in it
//! panics on any input. After `check`, a reader may assume all of that.
//!
//! A message without a semaphore is byte for byte what version 1 readers
//! from before the sync block read; one with a semaphore sets a flag bit they
//! refuse (`MessageError::Flags`), so an old reader never mistakes an `Event`
//! buffer for a finished one.

use hurray_core::{BufferHandle, DeviceTag, SyncMode, TensorView};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::external::{DeviceIdentity, Memory, MessageError, ShareError};

/// The header's first four bytes.
pub(crate) const MAGIC: [u8; 4] = *b"HRSB";
/// The protocol version this crate writes and reads.
pub(crate) const VERSION: u8 = 1;
/// Handle type 1: a Vulkan `VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT` fd.
pub(crate) const HANDLE_OPAQUE_FD: u8 = 1;
/// Flag bit 0: the memory is a dedicated allocation for the buffer
/// (`VkMemoryDedicatedAllocateInfo`); an importer must import it dedicated
/// too (CUDA: `cudaExternalMemoryDedicated`).
pub(crate) const FLAG_DEDICATED: u8 = 1;
/// Flag bit 1: a timeline semaphore travels with the memory (the second
/// fd) and a [`SyncBlock`] follows the header; the buffer is `Event`-synced.
pub(crate) const FLAG_TIMELINE: u8 = 2;
/// Every flag bit this version defines.
const KNOWN_FLAGS: u8 = FLAG_DEDICATED | FLAG_TIMELINE;
/// Semaphore handle type 1: a Vulkan timeline semaphore as an opaque fd
/// (`VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT`; CUDA's
/// `cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd`).
pub(crate) const SEMAPHORE_TIMELINE_OPAQUE_FD: u8 = 1;

/// The header, field by field (little-endian): this struct *is* the layout.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Header {
    /// `"HRSB"`.
    pub(crate) magic: [u8; 4],
    /// [`VERSION`].
    pub(crate) version: u8,
    /// [`HANDLE_OPAQUE_FD`].
    pub(crate) handle_type: u8,
    /// [`FLAG_DEDICATED`] or 0.
    pub(crate) flags: u8,
    /// 0.
    pub(crate) reserved: u8,
    /// Bytes of the descriptor after the header.
    pub(crate) descriptor_len: U32,
    /// The Vulkan memory type the memory was allocated from.
    pub(crate) memory_type_index: U32,
    /// `VkMemoryAllocateInfo::allocationSize` of the exported memory.
    pub(crate) allocation_size: U64,
    /// The exporting device's `deviceUUID`.
    pub(crate) device_uuid: [u8; 16],
    /// The exporting device's `driverUUID`.
    pub(crate) driver_uuid: [u8; 16],
}

/// Bytes of the header.
pub(crate) const HEADER_LEN: usize = 56;
const _: () = assert!(size_of::<Header>() == HEADER_LEN);

/// The sync block, after the header when [`FLAG_TIMELINE`] is set
/// (little-endian): what the consumer waits for before touching the memory.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct SyncBlock {
    /// The value the timeline semaphore reaches when the producer's work on
    /// the buffer is done (at least 1).
    pub(crate) wait_value: U64,
    /// [`SEMAPHORE_TIMELINE_OPAQUE_FD`].
    pub(crate) handle_type: u8,
    /// 0.
    pub(crate) reserved: [u8; 7],
}

/// Bytes of the sync block.
pub(crate) const SYNC_LEN: usize = 16;
const _: () = assert!(size_of::<SyncBlock>() == SYNC_LEN);

impl SyncBlock {
    /// The block of a message whose consumer waits for `wait_value`.
    pub(crate) fn new(wait_value: u64) -> Self {
        Self {
            wait_value: U64::new(wait_value),
            handle_type: SEMAPHORE_TIMELINE_OPAQUE_FD,
            reserved: [0; 7],
        }
    }

    /// Checks the block; returns the value to wait for.
    pub(crate) fn check(&self) -> Result<u64, MessageError> {
        if self.handle_type != SEMAPHORE_TIMELINE_OPAQUE_FD {
            return Err(MessageError::SemaphoreHandleType(self.handle_type));
        }
        if let Some(&b) = self.reserved.iter().find(|&&b| b != 0) {
            return Err(MessageError::Reserved(b));
        }
        match self.wait_value.get() {
            0 => Err(MessageError::ZeroWaitValue),
            v => Ok(v),
        }
    }
}

/// The longest descriptor a message may carry. A one-buffer descriptor of
/// rank 64 with strides and every section is well under it.
pub const MAX_DESCRIPTOR_LEN: u32 = 4096;

impl Header {
    /// The header of a message carrying `descriptor_len` descriptor bytes,
    /// and a semaphore when `timeline`.
    pub(crate) fn new(memory: &Memory, descriptor_len: u32, timeline: bool) -> Self {
        let dedicated = if memory.dedicated { FLAG_DEDICATED } else { 0 };
        let timeline = if timeline { FLAG_TIMELINE } else { 0 };
        Self {
            magic: MAGIC,
            version: VERSION,
            handle_type: HANDLE_OPAQUE_FD,
            flags: dedicated | timeline,
            reserved: 0,
            descriptor_len: U32::new(descriptor_len),
            memory_type_index: U32::new(memory.memory_type_index),
            allocation_size: U64::new(memory.allocation_size),
            device_uuid: memory.identity.device_uuid,
            driver_uuid: memory.identity.driver_uuid,
        }
    }

    /// Checks every field that can be checked without the descriptor, and
    /// returns the descriptor's length.
    pub(crate) fn check(&self) -> Result<usize, MessageError> {
        if self.magic != MAGIC {
            return Err(MessageError::Magic(self.magic));
        }
        if self.version != VERSION {
            return Err(MessageError::Version(self.version));
        }
        if self.handle_type != HANDLE_OPAQUE_FD {
            return Err(MessageError::HandleType(self.handle_type));
        }
        if self.flags & !KNOWN_FLAGS != 0 {
            return Err(MessageError::Flags(self.flags));
        }
        if self.reserved != 0 {
            return Err(MessageError::Reserved(self.reserved));
        }
        let len = self.descriptor_len.get();
        if len > MAX_DESCRIPTOR_LEN {
            return Err(MessageError::DescriptorTooLong {
                len,
                max: MAX_DESCRIPTOR_LEN,
            });
        }
        if self.allocation_size.get() == 0 {
            return Err(MessageError::ZeroAllocation);
        }
        // `len <= 4096` fits every `usize`.
        usize::try_from(len).map_err(|_| MessageError::DescriptorTooLong {
            len,
            max: MAX_DESCRIPTOR_LEN,
        })
    }

    /// Whether a sync block and a semaphore fd follow (checked flags).
    pub(crate) fn has_timeline(&self) -> bool {
        self.flags & FLAG_TIMELINE != 0
    }

    /// The memory the header states.
    pub(crate) fn memory(&self) -> Memory {
        Memory {
            allocation_size: self.allocation_size.get(),
            memory_type_index: self.memory_type_index.get(),
            dedicated: self.flags & FLAG_DEDICATED != 0,
            identity: DeviceIdentity {
                device_uuid: self.device_uuid,
                driver_uuid: self.driver_uuid,
            },
        }
    }
}

/// What a checked message states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checked {
    /// The memory.
    pub(crate) memory: Memory,
    /// The descriptor's one buffer.
    pub(crate) buffer: BufferHandle,
    /// The value to wait for on the semaphore, when one comes.
    pub(crate) wait_value: Option<u64>,
}

/// Checks a whole message: `header`, its `sync` block (present exactly when
/// the header says so), then `descriptor`.
pub(crate) fn check(
    header: &Header,
    sync: Option<&SyncBlock>,
    descriptor: &[u8],
) -> Result<Checked, ShareError> {
    let len = header.check()?;
    let wait_value = match (header.has_timeline(), sync) {
        (true, Some(block)) => Some(block.check()?),
        (false, None) => None,
        (true, None) | (false, Some(_)) => {
            return Err(ShareError::Backend(crate::BackendError::Bug(
                "the sync block was read against the header's flag",
            )));
        }
    };
    if descriptor.len() != len {
        return Err(MessageError::Truncated {
            got: HEADER_LEN.saturating_add(descriptor.len()),
            expected: HEADER_LEN.saturating_add(len),
        }
        .into());
    }
    let view = TensorView::parse(descriptor)?;
    let sync_mode = if wait_value.is_some() {
        SyncMode::Event
    } else {
        SyncMode::ProducerSynced
    };
    let buffer = one_buffer(&view, sync_mode)?;
    let memory = header.memory();
    let rounded = buffer
        .byte_size()
        .checked_next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
        .unwrap_or(u64::MAX);
    if rounded > memory.allocation_size {
        return Err(MessageError::BufferLargerThanAllocation {
            buffer: rounded,
            allocation: memory.allocation_size,
        }
        .into());
    }
    Ok(Checked {
        memory,
        buffer,
        wait_value,
    })
}

/// The descriptor's one buffer: non-empty, Vulkan, of `sync_mode`.
pub(crate) fn one_buffer(
    view: &TensorView<'_>,
    sync_mode: SyncMode,
) -> Result<BufferHandle, MessageError> {
    let table = view.buffers();
    let buffer = match (table.len(), table.get(0)) {
        (1, Some(b)) => b,
        (n, _) => return Err(MessageError::BufferCount(n)),
    };
    if buffer.device_tag() != DeviceTag::Vulkan {
        return Err(MessageError::DeviceTag(buffer.device_tag().code()));
    }
    if buffer.sync_mode() != sync_mode {
        return Err(MessageError::SyncMode(buffer.sync_mode().code()));
    }
    if buffer.is_empty() {
        return Err(MessageError::EmptyBuffer);
    }
    Ok(buffer)
}
