//! The data plane: `TENSOR_DESCRIPTOR`, `TENSOR_DATA`, `TENSOR_DATA_END`,
//! and `TENSOR_PUT` (which carries a descriptor the other way).
//!
//! Both descriptor-carrying decoders validate the embedded descriptor with
//! the strict reader ([`TensorView`]), then `[NP-DATA-1]`, `[NP-SYNC-1]`,
//! `[NP-SHARD-1]` and `[NP-PUT-1]` (`docs/spec/network.md`). A descriptor
//! error keeps its own offset (from the descriptor's first byte) and is
//! reported at the message offset where the descriptor starts. Nothing here
//! can panic or allocate.

use static_assertions::{assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::SyncMode;
use crate::descriptor::{Layout, TensorView};
use crate::error::{DescriptorError, EncodeError};
use crate::layout::tag;

use super::cursor::{Reader, Writer};
use super::error::{NetError, NetErrorKind};
use super::request::{invalid, key_len, read_key};

/// The message offset of the payload's first byte.
const HEADER_AT: u32 = 12;

/// The most shards one parallel transfer may have (`[NP-SHARD-1]`): the
/// size of a shard block of stream ids.
pub const MAX_SHARDS: u32 = 256;

/// Bytes a `TENSOR_DATA` payload spends before its data.
pub const DATA_PREFIX_LEN: usize = 8;

/// The transport fields after the descriptor in `TENSOR_DESCRIPTOR`
/// (`docs/spec/network.md` § The data plane), in wire order.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct TransportFields {
    /// Bytes the data frames will carry.
    pub total_data_bytes: U64,
    /// This shard's index; 0 when not sharded.
    pub shard_index: U32,
    /// Shards in the transfer; 1 when not sharded.
    pub total_shards: U32,
}

assert_eq_size!(TransportFields, [u8; 16]);
const_assert_eq!(core::mem::offset_of!(TransportFields, total_shards), 12);

/// The bytes the data plane carries for a descriptor: the sum of its
/// buffers' sizes (`None` on overflow).
#[must_use]
pub fn data_bytes(view: &TensorView<'_>) -> Option<u64> {
    view.buffers()
        .iter()
        .try_fold(0u64, |acc, b| acc.checked_add(b.byte_size()))
}

const fn descriptor_error(at: u32, e: DescriptorError) -> NetError {
    NetError::new(at, NetErrorKind::Descriptor(e))
}

/// The rules every descriptor on the wire obeys: producer-synced buffers
/// (`[NP-SYNC-1]`) and a `total_data_bytes` equal to its buffers
/// (`[NP-DATA-1]`). `at` is the message offset of `total_data_bytes`,
/// `desc_at` that of the descriptor.
fn check_transport(
    view: &TensorView<'_>,
    total: u64,
    at: u32,
    desc_at: u32,
) -> Result<(), NetError> {
    for b in view.buffers().iter() {
        let sync = b.sync_mode();
        if sync != SyncMode::ProducerSynced {
            return Err(invalid(desc_at, "sync_mode", u64::from(sync.code())));
        }
    }
    match data_bytes(view) {
        Some(sum) if sum == total => Ok(()),
        _ => Err(invalid(at, "total_data_bytes", total)),
    }
}

/// The payload of `TENSOR_DESCRIPTOR`.
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
/// use hurray_core::net::DescriptorMessage;
///
/// let buffers = [BufferHandle::new(48, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut d = [0u8; 64];
/// let view = TensorDescriptor::row_major(ElementType::Float32, &[3, 4], &buffers).encode_view(&mut d)?;
/// let msg = DescriptorMessage { descriptor: view, total_data_bytes: 48, shard_index: 0, total_shards: 1 };
/// let mut buf = [0u8; 128];
/// let n = msg.encode(&mut buf)?;
/// assert_eq!(DescriptorMessage::decode(&buf[..n]).unwrap().total_data_bytes, 48);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DescriptorMessage<'a> {
    /// The validated descriptor.
    pub descriptor: TensorView<'a>,
    /// Bytes the data frames carry (the sum of the buffers' sizes).
    pub total_data_bytes: u64,
    /// Shard index, below `total_shards`.
    pub shard_index: u32,
    /// Shards in the transfer, 1 to [`MAX_SHARDS`].
    pub total_shards: u32,
}

impl<'a> DescriptorMessage<'a> {
    /// A message for an unsharded tensor: `total_data_bytes` computed, one
    /// shard. `None` if the sizes overflow `u64`.
    #[must_use]
    pub fn unsharded(descriptor: TensorView<'a>) -> Option<Self> {
        Some(Self {
            descriptor,
            total_data_bytes: data_bytes(&descriptor)?,
            shard_index: 0,
            total_shards: 1,
        })
    }

    /// Decodes and validates a descriptor payload.
    ///
    /// # Errors
    /// The first rule broken, with its message offset.
    pub fn decode(payload: &'a [u8]) -> Result<Self, NetError> {
        let (descriptor, rest) =
            TensorView::parse_prefix(payload).map_err(|e| descriptor_error(HEADER_AT, e))?;
        let desc_len = payload.len().saturating_sub(rest.len());
        let at = HEADER_AT.saturating_add(u32::try_from(desc_len).unwrap_or(u32::MAX));
        let mut r = Reader::new(rest);
        let fields: TransportFields = r.read().map_err(|e| shift(e, desc_len))?;
        r.finish().map_err(|e| shift(e, desc_len))?;
        let msg = Self {
            descriptor,
            total_data_bytes: fields.total_data_bytes.get(),
            shard_index: fields.shard_index.get(),
            total_shards: fields.total_shards.get(),
        };
        msg.check(at)?;
        Ok(msg)
    }

    /// The transport rules; `at` is the message offset of the fields.
    fn check(&self, at: u32) -> Result<(), NetError> {
        check_transport(&self.descriptor, self.total_data_bytes, at, HEADER_AT)?;
        let (index, total) = (self.shard_index, self.total_shards);
        let bad_total = Err(invalid(at.saturating_add(12), "total_shards", total.into()));
        if total == 0 || total > MAX_SHARDS {
            return bad_total;
        }
        if index >= total {
            return Err(invalid(at.saturating_add(8), "shard_index", index.into()));
        }
        // A sharded transfer's descriptors are shard descriptors, never
        // composite heads ([NP-SHARD-1]).
        let composite = matches!(self.descriptor.layout(), Layout::Composite(_));
        if total > 1 && (self.descriptor.shard().is_none() || composite) {
            return bad_total;
        }
        Ok(())
    }

    /// Payload bytes on the wire.
    #[must_use]
    pub const fn encoded_len(&self) -> usize {
        self.descriptor.as_bytes().len().saturating_add(16)
    }

    /// Writes the payload, after checking the transport rules.
    ///
    /// # Errors
    /// [`EncodeError::OutputTooSmall`]; [`EncodeError::Invalid`] is never
    /// returned (the view is valid), but a transport rule broken is an
    /// [`EncodeError::LengthMismatch`] naming the field.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        if self.check(0).is_err() {
            return Err(EncodeError::LengthMismatch {
                what: "transport fields (total_data_bytes, shard_index, total_shards)",
                len: 0,
                expected: 0,
            });
        }
        let mut w = Writer::new(out, self.encoded_len())?;
        w.put(self.descriptor.as_bytes());
        w.u64(self.total_data_bytes);
        w.u32(self.shard_index);
        w.u32(self.total_shards);
        w.finish()
    }

    /// The member count a composite head binds (0 for any other tensor).
    #[must_use]
    pub const fn member_count(&self) -> u32 {
        match self.descriptor.layout() {
            Layout::Composite(c) => c.member_count,
            _ => 0,
        }
    }
}

/// Moves a reader error's offset past `n` bytes read before it.
fn shift(e: NetError, n: usize) -> NetError {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    NetError::new(e.offset().saturating_add(n), e.kind())
}

/// The payload of `TENSOR_DATA`: where the bytes go, and the bytes.
///
/// `offset` counts in the concatenation of the tensor's buffers in table
/// order (`[NP-DATA-2]`).
///
/// ```
/// use hurray_core::net::DataFrame;
/// let frame = DataFrame::decode(&[16, 0, 0, 0, 0, 0, 0, 0, 0xAB, 0xCD]).unwrap();
/// assert_eq!((frame.offset, frame.data), (16, &[0xAB, 0xCD][..]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DataFrame<'a> {
    /// `byte_offset_in_buffer`.
    pub offset: u64,
    /// The bytes.
    pub data: &'a [u8],
}

impl<'a> DataFrame<'a> {
    /// Decodes a data payload (8 bytes of offset, then data).
    ///
    /// # Errors
    /// [`NetErrorKind::Truncated`] below 8 bytes.
    pub fn decode(payload: &'a [u8]) -> Result<Self, NetError> {
        let mut r = Reader::new(payload);
        let offset = r.u64()?;
        Ok(Self {
            offset,
            data: r.remaining(),
        })
    }

    /// Where the frame's bytes end (`None` on overflow).
    #[must_use]
    #[inline]
    pub const fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.data.len() as u64)
    }
}

/// The payload of `TENSOR_PUT`.
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor};
/// use hurray_core::net::TensorPut;
///
/// let buffers = [BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut d = [0u8; 64];
/// let view = TensorDescriptor::row_major(ElementType::UInt8, &[8], &buffers).encode_view(&mut d)?;
/// let put = TensorPut { key: "x", descriptor: view, total_data_bytes: 8 };
/// let mut buf = [0u8; 128];
/// let n = put.encode(&mut buf)?;
/// assert_eq!(TensorPut::decode(&buf[..n]).unwrap().key, "x");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorPut<'a> {
    /// The key to store it under.
    pub key: &'a str,
    /// The validated descriptor.
    pub descriptor: TensorView<'a>,
    /// Bytes the data frames carry.
    pub total_data_bytes: u64,
}

impl<'a> TensorPut<'a> {
    /// Decodes and validates a put payload.
    ///
    /// # Errors
    /// The first rule broken, with its message offset.
    pub fn decode(payload: &'a [u8]) -> Result<Self, NetError> {
        let mut r = Reader::new(payload);
        let key = read_key(&mut r)?;
        let desc_at = r.offset().saturating_add(4);
        let bytes = r.bytes32()?;
        let descriptor = TensorView::parse(bytes).map_err(|e| descriptor_error(desc_at, e))?;
        if matches!(descriptor.layout(), Layout::Composite(_)) {
            return Err(invalid(desc_at, "layout_tag", u64::from(tag::COMPOSITE)));
        }
        let total_at = r.offset();
        let total_data_bytes = r.u64()?;
        r.finish()?;
        check_transport(&descriptor, total_data_bytes, total_at, desc_at)?;
        Ok(Self {
            key,
            descriptor,
            total_data_bytes,
        })
    }

    /// Payload bytes on the wire.
    #[must_use]
    pub const fn encoded_len(&self) -> usize {
        self.key
            .len()
            .saturating_add(self.descriptor.as_bytes().len())
            .saturating_add(4 + 4 + 8)
    }

    /// Writes the payload.
    ///
    /// # Errors
    /// [`EncodeError::OutputTooSmall`]; [`EncodeError::LengthMismatch`] for a
    /// bad key, a composite head, or a total other than the buffers' sizes.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let key_len = key_len(self.key)?;
        if matches!(self.descriptor.layout(), Layout::Composite(_))
            || check_transport(&self.descriptor, self.total_data_bytes, 0, 0).is_err()
        {
            return Err(EncodeError::LengthMismatch {
                what: "put descriptor (composite head, sync mode or total_data_bytes)",
                len: 0,
                expected: 0,
            });
        }
        let desc = self.descriptor.as_bytes();
        let desc_len =
            u32::try_from(desc.len()).map_err(|_| super::hello::too_long("descriptor"))?;
        let mut w = Writer::new(out, self.encoded_len())?;
        w.u32(key_len);
        w.put(self.key.as_bytes());
        w.u32(desc_len);
        w.put(desc);
        w.u64(self.total_data_bytes);
        w.finish()
    }
}
