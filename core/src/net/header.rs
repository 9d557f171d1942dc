//! The 12-byte message header and the incremental frame parser.
//!
//! [`MessageHeader`] is the wire layout (a zerocopy struct, size asserted at
//! compile time); any 12 bytes are one. [`Frame::parse`] is the httparse-like
//! entry point: given the bytes received so far it answers
//! [`Status::Partial`] (with how many bytes the message needs in all) or
//! [`Status::Complete`] with the whole frame. It checks `payload_length`
//! against the caller's maximum as soon as the header is there, before
//! waiting for (or reserving room for) a single payload byte, and never
//! panics on any input. It does not judge the message type: that is
//! [`Message::decode`](super::Message::decode)'s job, so that a receiver can
//! still step over a message of an unknown type.

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::U32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::codes::MessageType;
use super::error::{NetError, NetErrorKind};

/// Length of the message header in bytes.
pub const MESSAGE_HEADER_LEN: usize = 12;

/// The raw message header (`docs/spec/network.md` § Transport and
/// framing), offsets asserted below.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy, PartialEq, Eq, Hash,
)]
#[repr(C)]
pub struct MessageHeader {
    /// Message type code.
    pub message_type: U32,
    /// Stream id; `0` is the connection (`docs/spec/network.md` § Streams).
    pub stream_id: U32,
    /// Payload length in bytes, header excluded.
    pub payload_length: U32,
}

assert_eq_size!(MessageHeader, [u8; MESSAGE_HEADER_LEN]);
assert_eq_align!(MessageHeader, u8);
const_assert_eq!(core::mem::offset_of!(MessageHeader, message_type), 0);
const_assert_eq!(core::mem::offset_of!(MessageHeader, stream_id), 4);
const_assert_eq!(core::mem::offset_of!(MessageHeader, payload_length), 8);

/// Byte offset of `payload_length` (where a size error points).
pub(crate) const PAYLOAD_LENGTH_OFFSET: u32 = 8;

impl MessageHeader {
    /// A header for `message_type` on `stream_id` with `payload_length`.
    #[must_use]
    #[inline]
    pub const fn new(message_type: MessageType, stream_id: u32, payload_length: u32) -> Self {
        Self {
            message_type: U32::new(message_type.code()),
            stream_id: U32::new(stream_id),
            payload_length: U32::new(payload_length),
        }
    }

    /// The 12 wire bytes.
    #[must_use]
    #[inline]
    pub const fn to_array(self) -> [u8; MESSAGE_HEADER_LEN] {
        zerocopy::transmute!(self)
    }

    /// The header in 12 wire bytes.
    #[must_use]
    #[inline]
    pub const fn from_array(bytes: [u8; MESSAGE_HEADER_LEN]) -> Self {
        zerocopy::transmute!(bytes)
    }

    /// The message type, `None` when the code is unknown.
    #[must_use]
    #[inline]
    pub const fn kind(&self) -> Option<MessageType> {
        MessageType::from_code(self.message_type.get())
    }
}

/// Progress of an incremental parse (httparse's shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Status<T> {
    /// Done: the value (which says how many bytes it consumed).
    Complete(T),
    /// More bytes are needed: `needed` is the length of the whole message
    /// when the header has arrived (already checked against the maximum),
    /// else the header's length.
    Partial {
        /// Bytes the message needs in all, from its first byte.
        needed: usize,
    },
}

impl<T> Status<T> {
    /// The value, if complete.
    #[must_use]
    #[inline]
    pub fn complete(self) -> Option<T> {
        match self {
            Self::Complete(t) => Some(t),
            Self::Partial { .. } => None,
        }
    }
}

/// One whole message: its header and its payload, borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    header: MessageHeader,
    payload: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Parses the message at the start of `bytes`, refusing a payload longer
    /// than `max_payload` as soon as the header is readable.
    ///
    /// The same input split anywhere gives the same result: `Partial` until
    /// the whole message is there, then `Complete`.
    ///
    /// ```
    /// use hurray_core::net::{Frame, Status};
    ///
    /// let ping = [0x0A, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0xEE];
    /// assert_eq!(Frame::parse(&ping[..5], 64), Ok(Status::Partial { needed: 12 }));
    /// assert_eq!(Frame::parse(&ping[..13], 64), Ok(Status::Partial { needed: 20 }));
    /// let Status::Complete(frame) = Frame::parse(&ping, 64)? else { unreachable!() };
    /// assert_eq!(frame.len(), 20); // the byte after the message is not consumed
    /// assert_eq!(frame.payload(), &[1, 2, 3, 4, 5, 6, 7, 8]);
    /// # Ok::<(), hurray_core::net::NetError>(())
    /// ```
    ///
    /// # Errors
    /// [`NetErrorKind::TooLarge`] at byte 8 when `payload_length >
    /// max_payload`.
    pub fn parse(bytes: &'a [u8], max_payload: u32) -> Result<Status<Self>, NetError> {
        let Ok((header, rest)) = MessageHeader::read_from_prefix(bytes) else {
            return Ok(Status::Partial {
                needed: MESSAGE_HEADER_LEN,
            });
        };
        let length = header.payload_length.get();
        if length > max_payload {
            let kind = NetErrorKind::TooLarge {
                length,
                max: max_payload,
            };
            return Err(NetError::new(PAYLOAD_LENGTH_OFFSET, kind));
        }
        // `length <= max_payload: u32` fits usize on every target we build
        // (16-bit targets are not supported by the core).
        let len = length as usize;
        match rest.get(..len) {
            Some(payload) => Ok(Status::Complete(Self { header, payload })),
            None => Ok(Status::Partial {
                needed: MESSAGE_HEADER_LEN.saturating_add(len),
            }),
        }
    }

    /// The raw header.
    #[must_use]
    #[inline]
    pub const fn header(&self) -> MessageHeader {
        self.header
    }

    /// The raw message type code.
    #[must_use]
    #[inline]
    pub const fn message_type(&self) -> u32 {
        self.header.message_type.get()
    }

    /// The stream id.
    #[must_use]
    #[inline]
    pub const fn stream_id(&self) -> u32 {
        self.header.stream_id.get()
    }

    /// The payload.
    #[must_use]
    #[inline]
    pub const fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// Bytes the message occupies (header and payload): what to consume.
    #[must_use]
    #[inline]
    #[allow(clippy::len_without_is_empty)] // a frame is never empty: 12 bytes at least
    pub const fn len(&self) -> usize {
        MESSAGE_HEADER_LEN.saturating_add(self.payload.len())
    }
}
