//! The errors of the network protocol: [`NetError`] (a message's bytes are
//! malformed: a [`NetErrorKind`] and the byte offset of the field at fault,
//! counted from the first byte of the message header), [`SessionError`] (a
//! peer broke the session's rules: which stream, what, and the `ERROR` code
//! the session answers with), and [`ApiMisuse`] (the application asked a
//! session for something its state does not allow).
//!
//! Every type is `Copy`, and `Display` writes literal text without
//! allocating.

use core::fmt;

use crate::error::{DescriptorError, EncodeError, located_error};

use super::codes::ErrorCode;

located_error! {
    /// A message was rejected by its decoder: what was wrong and where.
    ///
    /// The offset counts from the first byte of the message header, so a field
    /// of the payload at payload offset `p` is reported at `12 + p`.
    ///
    /// ```
    /// use hurray_core::net::{Frame, NetErrorKind, Status};
    ///
    /// // A header announcing a 4 GiB payload is refused before anything is read.
    /// let bytes = [3, 0, 0, 0, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
    /// let err = Frame::parse(&bytes, 1 << 20).unwrap_err();
    /// assert_eq!(err.offset(), 8);
    /// assert_eq!(err.kind(), NetErrorKind::TooLarge { length: u32::MAX, max: 1 << 20 });
    /// assert_eq!(err.kind().error_code(), hurray_core::net::ErrorCode::MessageTooLarge);
    /// ```
    pub struct NetError(u32, NetErrorKind), " of the message";
    /// An error of `kind` at byte `offset` of the message.
    new;
    /// The byte offset of the field at fault, from the start of the header.
    offset;
    source NetErrorKind::Descriptor(e) => e;
}

/// What is wrong with a message's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum NetErrorKind {
    /// The payload ends before a field it must contain.
    Truncated {
        /// Bytes needed from the start of the message.
        needed: u64,
        /// Bytes the message has.
        available: u64,
    },
    /// `payload_length` exceeds the receiver's maximum message size.
    TooLarge {
        /// The declared `payload_length`.
        length: u32,
        /// The receiver's maximum.
        max: u32,
    },
    /// The `message_type` is not one this implementation knows (private
    /// extension types included: we have agreed on none) or is `0xFF`.
    UnknownType(u32),
    /// The payload holds bytes after its last field.
    TrailingBytes {
        /// Bytes the fields occupy, header included.
        expected: u64,
        /// Bytes the message has.
        found: u64,
    },
    /// A string field is not UTF-8.
    NotUtf8 {
        /// The field.
        field: &'static str,
    },
    /// Reserved bits of a bit field are set.
    ReservedBits {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// A field holds a value the protocol (or our stricter reading of it,
    /// `docs/spec/network.md`) does not allow.
    InvalidValue {
        /// The field.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// The embedded tensor descriptor is invalid (its offset is relative to
    /// the descriptor's first byte; [`NetError::offset`] is that byte).
    Descriptor(DescriptorError),
}

impl NetErrorKind {
    /// The `ERROR` code a receiver answers this fault with:
    /// `MESSAGE_TOO_LARGE` for [`TooLarge`](Self::TooLarge),
    /// `INVALID_MESSAGE` for everything else.
    #[must_use]
    #[inline]
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            Self::TooLarge { .. } => ErrorCode::MessageTooLarge,
            _ => ErrorCode::InvalidMessage,
        }
    }
}

impl fmt::Display for NetErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { needed, available } => {
                write!(f, "truncated: {needed} bytes needed, {available} available")
            }
            Self::TooLarge { length, max } => write!(
                f,
                "payload of {length} bytes exceeds the maximum message size {max}"
            ),
            Self::UnknownType(t) => write!(f, "unknown message type {t:#010x}"),
            Self::TrailingBytes { expected, found } => {
                write!(f, "{found} bytes where the fields occupy {expected}")
            }
            Self::NotUtf8 { field } => write!(f, "{field} is not UTF-8"),
            Self::ReservedBits { field, value } => {
                write!(f, "reserved bits set in {field} ({value:#x})")
            }
            Self::InvalidValue { field, value } => {
                write!(f, "{field} has the invalid value {value}")
            }
            Self::Descriptor(e) => write!(f, "tensor descriptor {e}"),
        }
    }
}

/// A peer broke a rule of the session: the stream it concerns (`0` for the
/// connection), what it did, and the `ERROR` code the session sends back.
///
/// When a session's `handle` returns one, the `ERROR` message is already
/// queued (take it with `poll_transmit`), and the connection is over:
/// [`ServerSession::is_closed`](super::ServerSession::is_closed) /
/// [`ClientSession::is_closed`](super::ClientSession::is_closed) is true.
/// Faults confined to one stream are reported as events instead, and the
/// connection goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SessionError {
    /// The stream at fault; `0` is the connection itself.
    pub stream_id: u32,
    /// What the peer did.
    pub kind: SessionErrorKind,
}

impl SessionError {
    /// The `ERROR` code answering this fault.
    #[must_use]
    #[inline]
    pub const fn error_code(&self) -> ErrorCode {
        self.kind.error_code()
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stream {}: {}", self.stream_id, self.kind)
    }
}

impl core::error::Error for SessionError {}

/// What a peer did against the session's rules (`docs/spec/network.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SessionErrorKind {
    /// The message's bytes are malformed.
    Malformed(NetError),
    /// A message of this type may not arrive in this state or direction.
    Unexpected {
        /// The raw `message_type`.
        message_type: u32,
    },
    /// A message that belongs to a stream arrived on stream 0, or a
    /// connection message (hello, ping, pong) on another stream.
    WrongStream {
        /// The raw `message_type`.
        message_type: u32,
    },
    /// A message names a stream that is not open.
    UnknownStream,
    /// A request or put names a stream that is already open, or one reserved
    /// for the shards of an open parallel request.
    StreamInUse,
    /// The peer opened more streams than the session holds at once.
    TooManyStreams {
        /// The session's capacity.
        max: u32,
    },
    /// The peer's protocol version cannot be spoken.
    VersionMismatch {
        /// The version the peer announced.
        version: u32,
    },
    /// A data frame does not start where the previous one ended.
    DataOutOfOrder {
        /// The offset expected.
        expected: u64,
        /// The offset found.
        found: u64,
    },
    /// Data frames exceed `total_data_bytes`.
    DataOverrun {
        /// `total_data_bytes` of the descriptor.
        total: u64,
        /// Where the frame would end.
        end: u64,
    },
    /// `TENSOR_DATA_END` arrived before `total_data_bytes` were sent.
    DataShort {
        /// `total_data_bytes` of the descriptor.
        total: u64,
        /// Bytes received.
        received: u64,
    },
    /// A shard descriptor does not fit its parallel transfer (index and
    /// stream disagree, `total_shards` changed, sharding not negotiated).
    ShardMismatch,
    /// The response places the buffers on a device the client did not list.
    DeviceRefused {
        /// The device tag of the buffers.
        device_tag: u8,
    },
    /// A `PONG` echoed no outstanding `PING`.
    UnsolicitedPong,
    /// The peer sent no message within the handshake, idle or request time.
    Timeout,
    /// The peer presented no valid access token.
    Unauthorized,
    /// The peer closed the connection with an `ERROR` on stream 0.
    PeerError {
        /// Its code.
        code: ErrorCode,
    },
}

impl SessionErrorKind {
    /// The `ERROR` code a session sends for this fault.
    #[must_use]
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            Self::Malformed(e) => e.kind().error_code(),
            Self::VersionMismatch { .. } => ErrorCode::ProtocolVersionMismatch,
            Self::ShardMismatch => ErrorCode::ShardMismatch,
            Self::DeviceRefused { .. } => ErrorCode::DeviceUnavailable,
            Self::TooManyStreams { .. } => ErrorCode::Busy,
            Self::Timeout => ErrorCode::Timeout,
            Self::Unauthorized => ErrorCode::Unauthorized,
            Self::PeerError { code } => *code,
            _ => ErrorCode::InvalidMessage,
        }
    }
}

impl fmt::Display for SessionErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Malformed(e) => write!(f, "malformed message: {e}"),
            Self::Unexpected { message_type } => {
                write!(f, "message type {message_type:#x} not allowed here")
            }
            Self::WrongStream { message_type } => {
                write!(f, "message type {message_type:#x} on the wrong stream")
            }
            Self::UnknownStream => write!(f, "stream is not open"),
            Self::StreamInUse => write!(f, "stream is already open or reserved"),
            Self::TooManyStreams { max } => write!(f, "more than {max} streams open"),
            Self::VersionMismatch { version } => {
                write!(f, "protocol version {version} is not spoken")
            }
            Self::DataOutOfOrder { expected, found } => {
                write!(f, "data frame at offset {found}, expected {expected}")
            }
            Self::DataOverrun { total, end } => {
                write!(f, "data frame ends at {end}, past total_data_bytes {total}")
            }
            Self::DataShort { total, received } => {
                write!(f, "data end after {received} of {total} bytes")
            }
            Self::ShardMismatch => write!(f, "shard does not fit its parallel transfer"),
            Self::DeviceRefused { device_tag } => {
                write!(
                    f,
                    "buffers on device {device_tag:#04x}, not one the client accepts"
                )
            }
            Self::UnsolicitedPong => write!(f, "pong without a ping"),
            Self::Timeout => write!(f, "timed out"),
            Self::Unauthorized => write!(f, "no valid access token"),
            Self::PeerError { code } => write!(f, "peer closed the connection: {code}"),
        }
    }
}

/// The application asked a session for something its state forbids (the
/// caller's fault, never the peer's): the session is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ApiMisuse {
    /// The session is not (or no longer) established.
    NotEstablished,
    /// The stream id is 0, open already, or reserved for shards.
    StreamUnavailable(u32),
    /// The stream is not open, or not in a state where this message goes.
    WrongState(u32),
    /// Every stream slot is in use.
    NoFreeStream,
    /// The bytes would break the transfer's order or its declared total.
    OutOfOrder(u32),
    /// The message does not fit the peer's maximum message size.
    TooLargeForPeer {
        /// The payload length.
        length: u64,
        /// The peer's maximum.
        max: u32,
    },
    /// An argument is invalid (the field named).
    InvalidArgument(&'static str),
    /// The output buffer is too small, or a descriptor was invalid.
    Encode(EncodeError),
}

impl fmt::Display for ApiMisuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NotEstablished => write!(f, "session not established"),
            Self::StreamUnavailable(s) => write!(f, "stream {s} cannot be opened"),
            Self::WrongState(s) => write!(f, "stream {s} does not accept this message now"),
            Self::NoFreeStream => write!(f, "every stream slot is in use"),
            Self::OutOfOrder(s) => write!(f, "stream {s}: data out of order or past its total"),
            Self::TooLargeForPeer { length, max } => write!(
                f,
                "payload of {length} bytes exceeds the peer's maximum {max}"
            ),
            Self::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Self::Encode(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for ApiMisuse {}

impl From<EncodeError> for ApiMisuse {
    #[inline]
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}
