//! The share message: a fixed 56-byte header, then a hurray descriptor; one
//! file descriptor travels with it (`SCM_RIGHTS`).
//!
//! ## Contract
//!
//! [`check`] is the only way bytes become a message's checked parts (the
//! [`Memory`] it states and its descriptor's one [`BufferHandle`]). It reads the
//! header through [`Header`] (a zerocopy view: no pointer casts, no
//! alignment needs), then the descriptor with `TensorView::parse`, and
//! refuses, with a [`MessageError`] or the descriptor's [`DescriptorError`](hurray_core::DescriptorError):
//! a bad magic, version, handle type, flag or reserved byte; a descriptor
//! that is not exactly one valid hurray descriptor; one that describes other
//! than one non-empty, Vulkan-tagged, `ProducerSynced` buffer; an allocation
//! of zero bytes or one smaller than the buffer. Nothing in it panics on any
//! input. After `check`, a reader may assume all of that.

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
/// Every flag bit this version defines.
const KNOWN_FLAGS: u8 = FLAG_DEDICATED;

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

/// The longest descriptor a message may carry. A one-buffer descriptor of
/// rank 64 with strides and every section is well under it.
pub const MAX_DESCRIPTOR_LEN: u32 = 4096;

impl Header {
    /// The header of a message carrying `descriptor_len` descriptor bytes.
    pub(crate) fn new(memory: &Memory, descriptor_len: u32) -> Self {
        Self {
            magic: MAGIC,
            version: VERSION,
            handle_type: HANDLE_OPAQUE_FD,
            flags: if memory.dedicated { FLAG_DEDICATED } else { 0 },
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

/// Checks a whole message: `header` then `descriptor`. Returns the memory it
/// states and the descriptor's one buffer.
pub(crate) fn check(
    header: &Header,
    descriptor: &[u8],
) -> Result<(Memory, BufferHandle), ShareError> {
    let len = header.check()?;
    if descriptor.len() != len {
        return Err(MessageError::Truncated {
            got: HEADER_LEN.saturating_add(descriptor.len()),
            expected: HEADER_LEN.saturating_add(len),
        }
        .into());
    }
    let view = TensorView::parse(descriptor)?;
    let buffer = one_buffer(&view)?;
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
    Ok((memory, buffer))
}

/// The descriptor's one buffer: non-empty, Vulkan, `ProducerSynced`.
pub(crate) fn one_buffer(view: &TensorView<'_>) -> Result<BufferHandle, MessageError> {
    let table = view.buffers();
    let buffer = match (table.len(), table.get(0)) {
        (1, Some(b)) => b,
        (n, _) => return Err(MessageError::BufferCount(n)),
    };
    if buffer.device_tag() != DeviceTag::Vulkan {
        return Err(MessageError::DeviceTag(buffer.device_tag().code()));
    }
    if buffer.sync_mode() != SyncMode::ProducerSynced {
        return Err(MessageError::SyncMode(buffer.sync_mode().code()));
    }
    if buffer.is_empty() {
        return Err(MessageError::EmptyBuffer);
    }
    Ok(buffer)
}
