//! The 16-byte buffer handle entry: its raw wire view and its validated value.
//!
//! [`BufferHandleEntry`] is the one definition of the wire layout
//! (ADR-018 § 3): a `#[repr(C)]` zerocopy struct of little-endian fields with
//! no padding, size 16 and alignment 1, asserted below at compile time. Any
//! 16 bytes are a valid `BufferHandleEntry`; reading its fields never fails.
//!
//! [`BufferHandle`] is the validated value. The only ways to get one are the
//! constructors and [`BufferHandle::from_bytes`] / [`BufferHandleEntry::decode`],
//! which check every rule of `docs/spec/buffer-protocol.md`; so a reader holding
//! a `BufferHandle` may assume all of them.

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::field::wire_struct;

use crate::MIN_BUFFER_ALIGNMENT;
use crate::codes::{DeviceTag, MemoryClass, SyncMode};
use crate::error::{Error, Result};
use crate::interop::{self, InteropError};

/// Length of one buffer handle entry on the wire, in bytes.
pub const ENTRY_LEN: usize = 16;

wire_struct! {
    /// The raw, unvalidated wire form of a buffer handle (ADR-018 § 3): the
    /// fields of [`BufferHandle`]'s layout table, in order.
    ///
    /// Any 16 bytes form a `BufferHandleEntry`; call [`decode`](Self::decode) to
    /// validate it. A slice of entries can be viewed in place with zerocopy:
    ///
    /// ```
    /// use hurray_core::BufferHandleEntry;
    /// use zerocopy::FromBytes;
    ///
    /// let bytes = [0u8; 32];
    /// let entries = <[BufferHandleEntry]>::ref_from_bytes(&bytes[..]).unwrap();
    /// assert_eq!(entries.len(), 2);
    /// assert_eq!(entries[0].alignment.get(), 0);
    /// assert!(entries[0].decode().is_err()); // alignment 0 is not a power of two
    /// ```
    #[derive(
        FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy, PartialEq, Eq, Hash,
    )]
    #[repr(C)]
    pub struct BufferHandleEntry {
        /// Size of the buffer in bytes; 0 for an empty buffer.
        pub byte_size: U64,
        /// Alignment of the buffer's base address in bytes.
        pub alignment: U32,
        /// [`DeviceTag`] code.
        pub device_tag: u8,
        /// [`SyncMode`] code.
        pub sync_mode: u8,
        /// [`MemoryClass`] code (ADR-020).
        pub memory_class: u8,
        /// Reserved; must be zero.
        pub reserved: u8 as "_reserved",
    }
}

// The layout table above, proven at compile time.
assert_eq_size!(BufferHandleEntry, [u8; ENTRY_LEN]);
assert_eq_align!(BufferHandleEntry, u8);
const_assert_eq!(core::mem::offset_of!(BufferHandleEntry, byte_size), 0);
const_assert_eq!(core::mem::offset_of!(BufferHandleEntry, alignment), 8);
const_assert_eq!(core::mem::offset_of!(BufferHandleEntry, device_tag), 12);
const_assert_eq!(core::mem::offset_of!(BufferHandleEntry, sync_mode), 13);
const_assert_eq!(core::mem::offset_of!(BufferHandleEntry, memory_class), 14);
const_assert_eq!(core::mem::offset_of!(BufferHandleEntry, reserved), 15);

impl BufferHandleEntry {
    /// Views 16 bytes as an entry (no copy, no check).
    #[must_use]
    #[inline]
    pub const fn from_array(bytes: [u8; ENTRY_LEN]) -> Self {
        zerocopy::transmute!(bytes)
    }

    /// The 16 wire bytes of this entry.
    #[must_use]
    #[inline]
    pub const fn to_array(self) -> [u8; ENTRY_LEN] {
        zerocopy::transmute!(self)
    }

    /// Validates this entry.
    ///
    /// Checks, in this order (the first failure is reported): device tag code,
    /// sync mode code, memory class code, reserved byte, then the rules of
    /// [`BufferHandle::with_memory_class`] (alignment, the CPU sync rule, the
    /// per-device memory classes).
    ///
    /// # Errors
    /// The [`Error`] of the first rule broken.
    #[inline]
    pub const fn decode(&self) -> Result<BufferHandle> {
        let Some(device_tag) = DeviceTag::from_code(self.device_tag) else {
            return Err(Error::InvalidDeviceTag(self.device_tag));
        };
        let Some(sync_mode) = SyncMode::from_code(self.sync_mode) else {
            return Err(Error::InvalidSyncMode(self.sync_mode));
        };
        let Some(memory_class) = MemoryClass::from_code(self.memory_class) else {
            return Err(Error::InvalidMemoryClass(self.memory_class));
        };
        if self.reserved != 0 {
            return Err(Error::ReservedNonZero(self.reserved));
        }
        BufferHandle::with_memory_class(
            self.byte_size.get(),
            self.alignment.get(),
            device_tag,
            sync_mode,
            memory_class,
        )
    }
}

/// A declaration of a buffer's size, alignment, device location, and sync mode.
///
/// A `BufferHandle` is the in-memory representation of the 16-byte buffer
/// handle entry in the tensor descriptor's buffer table (see
/// `docs/spec/metadata.md` § Buffer Table). It carries the metadata needed to
/// locate and access a buffer but does not itself hold a pointer — the actual
/// memory address is communicated out-of-band via the interchange protocol or
/// the C ABI (see `docs/impl/c-ffi.md`).
///
/// # Wire layout (ADR-018 § 3, ADR-020)
///
/// | Offset | Field          | Type       | Size |
/// |-------:|----------------|------------|-----:|
/// | 0      | `byte_size`    | uint64 LE  | 8    |
/// | 8      | `alignment`    | uint32 LE  | 4    |
/// | 12     | `device_tag`   | uint8      | 1    |
/// | 13     | `sync_mode`    | uint8      | 1    |
/// | 14     | `memory_class` | uint8      | 1    |
/// | 15     | `_reserved`    | uint8      | 1    |
///
/// The layout is defined once, by [`BufferHandleEntry`].
///
/// # Alignment rules
///
/// * `alignment` MUST be a power of two.
/// * For non-empty buffers (`byte_size > 0`): `alignment` MUST be at least
///   [`MIN_BUFFER_ALIGNMENT`] (64 bytes).
/// * For empty buffers (`byte_size == 0`): any power-of-two alignment is
///   valid, including 1. A reader MUST NOT dereference the pointer of an
///   empty buffer.
///
/// See `docs/spec/buffer-protocol.md` § Alignment for the normative rules.
///
/// # Examples
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, MemoryClass, SyncMode, MIN_BUFFER_ALIGNMENT};
///
/// // Non-empty CPU buffer, minimum SIMD alignment, default Standard class.
/// let handle = BufferHandle::new(1024, MIN_BUFFER_ALIGNMENT, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
/// assert_eq!(handle.byte_size(), 1024);
/// assert_eq!(handle.alignment(), 64);
/// assert_eq!(handle.device_tag(), DeviceTag::Cpu);
/// assert_eq!(handle.sync_mode(), SyncMode::ProducerSynced);
/// assert_eq!(handle.memory_class(), MemoryClass::Standard);
/// assert!(!handle.is_empty());
///
/// // CUDA buffer with Unified memory class.
/// let unified = BufferHandle::with_memory_class(
///     4096, 4096, DeviceTag::Cuda, SyncMode::ProducerSynced, MemoryClass::Unified,
/// ).unwrap();
/// assert_eq!(unified.memory_class(), MemoryClass::Unified);
///
/// // Empty buffer — alignment 1 is valid.
/// let empty = BufferHandle::empty(DeviceTag::Cuda);
/// assert!(empty.is_empty());
/// assert_eq!(empty.alignment(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferHandle {
    byte_size: u64,
    alignment: u32,
    device_tag: DeviceTag,
    sync_mode: SyncMode,
    memory_class: MemoryClass,
}

impl BufferHandle {
    /// Creates a new `BufferHandle` with the given size, alignment, device, and sync mode.
    ///
    /// The memory class is [`MemoryClass::Standard`]. This is a `const fn`:
    /// a handle in a `const` item is validated at compile time.
    ///
    /// # Errors
    ///
    /// * [`Error::AlignmentNotPowerOfTwo`] — `alignment` is not a power of two.
    /// * [`Error::AlignmentBelowMinimum`] — `byte_size > 0` and `alignment` is
    ///   less than [`MIN_BUFFER_ALIGNMENT`] (64).
    /// * [`Error::InvalidSyncMode`] — `device_tag` is [`DeviceTag::Cpu`] and
    ///   `sync_mode` is not [`SyncMode::ProducerSynced`] (CPU buffers MUST use
    ///   `SYNC_PRODUCER_SYNCED` per the spec).
    /// * [`Error::MemoryClassNotAllowed`] / [`Error::InvalidDeviceTag`] — as
    ///   for [`BufferHandle::with_memory_class`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, Error, SyncMode, MIN_BUFFER_ALIGNMENT};
    ///
    /// // Valid: non-empty CPU buffer with minimum SIMD alignment.
    /// assert!(BufferHandle::new(512, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).is_ok());
    ///
    /// // Valid: CUDA buffer with Event sync.
    /// assert!(BufferHandle::new(512, 64, DeviceTag::Cuda, SyncMode::Event).is_ok());
    ///
    /// // Valid: empty buffer with alignment 1.
    /// assert!(BufferHandle::new(0, 1, DeviceTag::Cpu, SyncMode::ProducerSynced).is_ok());
    ///
    /// // Error: alignment is not a power of two.
    /// assert!(matches!(
    ///     BufferHandle::new(512, 3, DeviceTag::Cpu, SyncMode::ProducerSynced),
    ///     Err(Error::AlignmentNotPowerOfTwo { alignment: 3 })
    /// ));
    ///
    /// // Error: non-empty buffer with alignment below the 64-byte minimum.
    /// assert!(matches!(
    ///     BufferHandle::new(512, 32, DeviceTag::Cpu, SyncMode::ProducerSynced),
    ///     Err(Error::AlignmentBelowMinimum { alignment: 32, minimum: 64 })
    /// ));
    ///
    /// // Error: CPU buffer with non-ProducerSynced mode.
    /// assert!(matches!(
    ///     BufferHandle::new(512, 64, DeviceTag::Cpu, SyncMode::Event),
    ///     Err(Error::InvalidSyncMode(0x01))
    /// ));
    /// ```
    #[inline]
    pub const fn new(
        byte_size: u64,
        alignment: u32,
        device_tag: DeviceTag,
        sync_mode: SyncMode,
    ) -> Result<Self> {
        Self::with_memory_class(
            byte_size,
            alignment,
            device_tag,
            sync_mode,
            MemoryClass::Standard,
        )
    }

    /// Creates a new `BufferHandle` with an explicit memory class.
    ///
    /// Identical to [`BufferHandle::new`] but accepts a [`MemoryClass`] value.
    /// Use this constructor when the buffer's memory class is not
    /// [`MemoryClass::Standard`] (e.g., CUDA managed memory, Metal shared
    /// storage, or peer-to-peer memory).
    ///
    /// # Errors
    ///
    /// * [`Error::AlignmentNotPowerOfTwo`] — `alignment` is not a power of two.
    /// * [`Error::AlignmentBelowMinimum`] — `byte_size > 0` and `alignment < 64`.
    /// * [`Error::InvalidSyncMode`] — `device_tag` is [`DeviceTag::Cpu`] and
    ///   `sync_mode` is not [`SyncMode::ProducerSynced`].
    /// * [`Error::MemoryClassNotAllowed`] — the device does not allow this
    ///   class (`docs/spec/buffer-protocol.md` § Per-Device Validity), e.g.
    ///   `PeerToPeer` on a CPU buffer.
    /// * [`Error::InvalidDeviceTag`] / [`Error::InvalidMemoryClass`] — a
    ///   hand-built `Private` value whose code is outside `0xF0`–`0xFE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, MemoryClass, SyncMode};
    ///
    /// // CUDA unified (managed) memory buffer.
    /// let handle = BufferHandle::with_memory_class(
    ///     4096, 4096, DeviceTag::Cuda, SyncMode::ProducerSynced, MemoryClass::Unified,
    /// ).unwrap();
    /// assert_eq!(handle.memory_class(), MemoryClass::Unified);
    ///
    /// // CPU host-pinned buffer.
    /// let pinned = BufferHandle::with_memory_class(
    ///     512, 64, DeviceTag::Cpu, SyncMode::ProducerSynced, MemoryClass::HostPinned,
    /// ).unwrap();
    /// assert_eq!(pinned.memory_class(), MemoryClass::HostPinned);
    /// ```
    #[inline]
    pub const fn with_memory_class(
        byte_size: u64,
        alignment: u32,
        device_tag: DeviceTag,
        sync_mode: SyncMode,
        memory_class: MemoryClass,
    ) -> Result<Self> {
        if let Some(error) = code_error(device_tag, memory_class) {
            return Err(error);
        }
        if !alignment.is_power_of_two() {
            return Err(Error::AlignmentNotPowerOfTwo { alignment });
        }
        if byte_size > 0 && alignment < MIN_BUFFER_ALIGNMENT {
            return Err(Error::AlignmentBelowMinimum {
                alignment,
                minimum: MIN_BUFFER_ALIGNMENT,
            });
        }
        if matches!(device_tag, DeviceTag::Cpu) && !matches!(sync_mode, SyncMode::ProducerSynced) {
            return Err(Error::InvalidSyncMode(sync_mode.code()));
        }
        if !device_tag.allows(memory_class) {
            return Err(Error::MemoryClassNotAllowed {
                device_tag,
                memory_class,
            });
        }
        Ok(Self {
            byte_size,
            alignment,
            device_tag,
            sync_mode,
            memory_class,
        })
    }

    /// Creates an empty `BufferHandle` (zero bytes) on the given device.
    ///
    /// The alignment is set to 1 — the minimum valid power-of-two for an
    /// empty buffer — and `sync_mode` is always [`SyncMode::ProducerSynced`].
    /// This constructor is infallible, so it keeps a hand-built
    /// [`DeviceTag::Private`] whose code lies outside `0xF0`–`0xFE` as
    /// given (the fallible constructors refuse one): its wire entry then
    /// carries a code [`BufferHandleEntry::decode`] refuses, and
    /// [`TensorDescriptor::encode`](crate::TensorDescriptor::encode) refuses
    /// the handle with that error rather than write bytes no parser reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode};
    ///
    /// let handle = BufferHandle::empty(DeviceTag::Cpu);
    /// assert!(handle.is_empty());
    /// assert_eq!(handle.byte_size(), 0);
    /// assert_eq!(handle.alignment(), 1);
    /// assert_eq!(handle.device_tag(), DeviceTag::Cpu);
    /// assert_eq!(handle.sync_mode(), SyncMode::ProducerSynced);
    /// ```
    #[must_use]
    #[inline]
    pub const fn empty(device_tag: DeviceTag) -> Self {
        Self {
            byte_size: 0,
            alignment: 1,
            device_tag,
            sync_mode: SyncMode::ProducerSynced,
            memory_class: MemoryClass::Standard,
        }
    }

    /// Decodes and validates the 16 wire bytes of a handle.
    ///
    /// No input can make this panic. Rules are checked in the order given by
    /// [`BufferHandleEntry::decode`].
    ///
    /// # Errors
    ///
    /// Every error of [`BufferHandle::with_memory_class`], plus
    /// [`Error::InvalidDeviceTag`], [`Error::InvalidSyncMode`] and
    /// [`Error::InvalidMemoryClass`] for unknown codes (carrying the raw
    /// byte) and [`Error::ReservedNonZero`] when byte 15 is not zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, Error, SyncMode};
    ///
    /// let mut bytes = [0u8; 16];
    /// bytes[0..8].copy_from_slice(&1024u64.to_le_bytes());
    /// bytes[8..12].copy_from_slice(&64u32.to_le_bytes());
    /// bytes[12] = DeviceTag::Cuda.code();
    /// bytes[13] = SyncMode::Event.code();
    /// let handle = BufferHandle::from_bytes(&bytes).unwrap();
    /// assert_eq!(handle.byte_size(), 1024);
    /// assert_eq!(handle.to_bytes(), bytes);
    ///
    /// bytes[13] = 0x07;
    /// assert_eq!(BufferHandle::from_bytes(&bytes), Err(Error::InvalidSyncMode(0x07)));
    /// ```
    #[inline]
    pub const fn from_bytes(bytes: &[u8; ENTRY_LEN]) -> Result<Self> {
        BufferHandleEntry::from_array(*bytes).decode()
    }

    /// Encodes this handle into its 16 wire bytes (ADR-018 § 3).
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag};
    ///
    /// let bytes = BufferHandle::empty(DeviceTag::Vulkan).to_bytes();
    /// assert_eq!(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x04, 0, 0, 0]);
    /// ```
    #[must_use]
    #[inline]
    pub const fn to_bytes(self) -> [u8; ENTRY_LEN] {
        self.to_entry().to_array()
    }

    /// This handle as a raw wire entry.
    #[must_use]
    #[inline(always)] // a few moves: the encoder's entry loop stays a loop
    pub const fn to_entry(self) -> BufferHandleEntry {
        BufferHandleEntry {
            byte_size: U64::new(self.byte_size),
            alignment: U32::new(self.alignment),
            device_tag: self.device_tag.code(),
            sync_mode: self.sync_mode.code(),
            memory_class: self.memory_class.code(),
            reserved: 0,
        }
    }

    /// Returns the size of the buffer in bytes.
    ///
    /// A value of 0 denotes an empty buffer whose backing pointer MUST NOT be
    /// dereferenced.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode};
    ///
    /// let handle = BufferHandle::new(4096, 4096, DeviceTag::Cuda, SyncMode::Event).unwrap();
    /// assert_eq!(handle.byte_size(), 4096);
    /// ```
    #[must_use]
    #[inline]
    pub const fn byte_size(self) -> u64 {
        self.byte_size
    }

    /// Returns the minimum alignment of the buffer's base address in bytes.
    ///
    /// Always a power of two. For non-empty buffers, always at least
    /// [`MIN_BUFFER_ALIGNMENT`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode, PAGE_ALIGNMENT};
    ///
    /// let handle = BufferHandle::new(8192, PAGE_ALIGNMENT, DeviceTag::Cuda, SyncMode::Event).unwrap();
    /// assert_eq!(handle.alignment(), 4096);
    /// ```
    #[must_use]
    #[inline]
    pub const fn alignment(self) -> u32 {
        self.alignment
    }

    /// Returns the [`DeviceTag`] identifying the memory space this buffer resides in.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode};
    ///
    /// let handle = BufferHandle::new(256, 64, DeviceTag::Metal, SyncMode::Event).unwrap();
    /// assert_eq!(handle.device_tag(), DeviceTag::Metal);
    /// ```
    #[must_use]
    #[inline]
    pub const fn device_tag(self) -> DeviceTag {
        self.device_tag
    }

    /// Returns the [`SyncMode`] describing the producer–consumer ordering
    /// guarantee for this buffer.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode};
    ///
    /// let handle = BufferHandle::new(1024, 64, DeviceTag::Cuda, SyncMode::ConsumerStream).unwrap();
    /// assert_eq!(handle.sync_mode(), SyncMode::ConsumerStream);
    ///
    /// // CPU buffers are always ProducerSynced.
    /// let cpu = BufferHandle::new(1024, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
    /// assert_eq!(cpu.sync_mode(), SyncMode::ProducerSynced);
    /// ```
    #[must_use]
    #[inline]
    pub const fn sync_mode(self) -> SyncMode {
        self.sync_mode
    }

    /// Returns the [`MemoryClass`] describing how this buffer is accessible.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, MemoryClass, SyncMode};
    ///
    /// // new() defaults to Standard.
    /// let handle = BufferHandle::new(1024, 64, DeviceTag::Cuda, SyncMode::ProducerSynced).unwrap();
    /// assert_eq!(handle.memory_class(), MemoryClass::Standard);
    ///
    /// // with_memory_class() sets an explicit class.
    /// let unified = BufferHandle::with_memory_class(
    ///     1024, 64, DeviceTag::Cuda, SyncMode::ProducerSynced, MemoryClass::Unified,
    /// ).unwrap();
    /// assert_eq!(unified.memory_class(), MemoryClass::Unified);
    /// ```
    #[must_use]
    #[inline]
    pub const fn memory_class(self) -> MemoryClass {
        self.memory_class
    }

    /// Returns `true` if this buffer has zero bytes (`byte_size == 0`).
    ///
    /// Readers MUST NOT dereference the pointer of an empty buffer. In C ABI
    /// contexts an empty buffer MAY be represented by a null pointer.
    ///
    /// # Examples
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode};
    ///
    /// assert!(BufferHandle::empty(DeviceTag::Cpu).is_empty());
    /// assert!(!BufferHandle::new(1, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap().is_empty());
    /// ```
    #[must_use]
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.byte_size == 0
    }

    /// Whether `address` satisfies this handle's alignment.
    ///
    /// The out-of-band base pointer of a non-empty buffer MUST pass this
    /// check (`docs/spec/buffer-protocol.md` § Alignment). An empty buffer
    /// accepts any address, null included, because it is never dereferenced.
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode};
    ///
    /// let h = BufferHandle::new(128, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
    /// assert!(h.is_address_aligned(0x1000));
    /// assert!(!h.is_address_aligned(0x1010));
    /// assert!(BufferHandle::empty(DeviceTag::Cpu).is_address_aligned(0));
    /// ```
    #[must_use]
    #[inline]
    pub const fn is_address_aligned(self, address: u64) -> bool {
        // `alignment` is a nonzero power of two, so `alignment - 1` cannot wrap.
        self.is_empty() || address & (self.alignment as u64).wrapping_sub(1) == 0
    }

    /// The DLPack `DLDeviceType` of this buffer's (device tag, memory class).
    ///
    /// # Errors
    /// [`InteropError::NoDeviceCode`] when DLPack has no code for the pair.
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, MemoryClass, SyncMode};
    ///
    /// let h = BufferHandle::with_memory_class(
    ///     64, 64, DeviceTag::Cuda, SyncMode::Event, MemoryClass::HostPinned,
    /// ).unwrap();
    /// assert_eq!(h.dlpack_device_type(), Ok(3)); // kDLCUDAHost
    /// ```
    #[inline]
    pub const fn dlpack_device_type(self) -> core::result::Result<i32, InteropError> {
        interop::to_dlpack(self.device_tag, self.memory_class)
    }

    /// The Arrow C Device `ArrowDeviceType` of this buffer's (device tag, memory class).
    ///
    /// # Errors
    /// [`InteropError::NoDeviceCode`] when Arrow has no code for the pair.
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, SyncMode};
    ///
    /// let h = BufferHandle::new(64, 64, DeviceTag::Rocm, SyncMode::Event).unwrap();
    /// assert_eq!(h.arrow_device_type(), Ok(10)); // ARROW_DEVICE_ROCM
    /// ```
    #[inline]
    pub const fn arrow_device_type(self) -> core::result::Result<i32, InteropError> {
        interop::to_arrow(self.device_tag, self.memory_class)
    }
}

impl TryFrom<[u8; ENTRY_LEN]> for BufferHandle {
    type Error = Error;
    #[inline]
    fn try_from(bytes: [u8; ENTRY_LEN]) -> Result<Self> {
        Self::from_bytes(&bytes)
    }
}

/// The error for a `Private` device tag or memory class built by hand with
/// a code outside the private range (the parser refuses such a code);
/// `None` when both codes are ones the parser accepts. The fallible
/// constructors refuse such a handle with it, and the descriptor encoder
/// the one [`BufferHandle::empty`] cannot refuse.
#[inline]
pub(crate) const fn code_error(device_tag: DeviceTag, memory_class: MemoryClass) -> Option<Error> {
    if device_tag.is_private() && DeviceTag::from_code(device_tag.code()).is_none() {
        return Some(Error::InvalidDeviceTag(device_tag.code()));
    }
    if memory_class.is_private() && MemoryClass::from_code(memory_class.code()).is_none() {
        return Some(Error::InvalidMemoryClass(memory_class.code()));
    }
    None
}

impl From<BufferHandle> for [u8; ENTRY_LEN] {
    #[inline]
    fn from(h: BufferHandle) -> Self {
        h.to_bytes()
    }
}

impl From<BufferHandle> for BufferHandleEntry {
    #[inline]
    fn from(h: BufferHandle) -> Self {
        h.to_entry()
    }
}

impl TryFrom<&BufferHandleEntry> for BufferHandle {
    type Error = Error;
    #[inline]
    fn try_from(e: &BufferHandleEntry) -> Result<Self> {
        e.decode()
    }
}
