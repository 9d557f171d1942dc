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

use crate::error::{DescriptorError, EncodeError, error_enum, located_error};

use super::codes::ErrorCode;

/// [`error_enum!`](crate::error::error_enum) for the faults a session answers
/// with an `ERROR`: each variant also gives, after its text and a `;`, the
/// `ERROR` code and the text the session sends beside it (`error_code`,
/// `wire_text`).
macro_rules! coded_error_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident: codes {
            $(
                $(#[$vmeta:meta])*
                $variant:ident
                $( ( $($tbind:ident: $tty:ty),* ) )?
                $( { $( $(#[$fmeta:meta])* $field:ident: $fty:ty, )* } )?
                => $fmt:literal; $code:expr, $text:literal,
            )*
        }
    ) => {
        $crate::error::error_enum! {
            $(#[$meta])*
            pub enum $name {
                $(
                    $(#[$vmeta])*
                    $variant $( ( $($tbind: $tty),* ) )? $( { $( $(#[$fmeta])* $field: $fty, )* } )?
                    => $fmt;
                )*
            }
        }

        #[allow(unused_variables)] // a variant's code or text may not use its fields
        impl $name {
            /// The `ERROR` code a session sends for this fault.
            #[must_use]
            pub const fn error_code(&self) -> ErrorCode {
                match self {
                    $( Self::$variant $( ( $($tbind),* ) )? $( { $($field),* } )? => $code, )*
                }
            }

            /// The text sent with an `ERROR` the session writes itself.
            pub(crate) const fn wire_text(&self) -> &'static str {
                match self {
                    $( Self::$variant $( ( $($tbind),* ) )? $( { $($field),* } )? => $text, )*
                }
            }
        }
    };
}

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

error_enum! {
    /// What is wrong with a message's bytes.
    #[non_exhaustive]
    pub enum NetErrorKind {
        /// The payload ends before a field it must contain.
        Truncated {
            /// Bytes needed from the start of the message.
            needed: u64,
            /// Bytes the message has.
            available: u64,
        } => "truncated: {needed} bytes needed, {available} available";
        /// `payload_length` exceeds the receiver's maximum message size.
        TooLarge {
            /// The declared `payload_length`.
            length: u32,
            /// The receiver's maximum.
            max: u32,
        } => "payload of {length} bytes exceeds the maximum message size {max}";
        /// The `message_type` is not one this implementation knows (private
        /// extension types included: we have agreed on none) or is `0xFF`.
        UnknownType(t: u32) => "unknown message type {t:#010x}";
        /// The payload holds bytes after its last field.
        TrailingBytes {
            /// Bytes the fields occupy, header included.
            expected: u64,
            /// Bytes the message has.
            found: u64,
        } => "{found} bytes where the fields occupy {expected}";
        /// A string field is not UTF-8.
        NotUtf8 {
            /// The field.
            field: &'static str,
        } => "{field} is not UTF-8";
        /// Reserved bits of a bit field are set.
        ReservedBits {
            /// The field.
            field: &'static str,
            /// Its value.
            value: u64,
        } => "reserved bits set in {field} ({value:#x})";
        /// A field holds a value the protocol (or our stricter reading of it,
        /// `docs/spec/network.md`) does not allow.
        InvalidValue {
            /// The field.
            field: &'static str,
            /// The value found.
            value: u64,
        } => "{field} has the invalid value {value}";
        /// The embedded tensor descriptor is invalid (its offset is relative to
        /// the descriptor's first byte; [`NetError::offset`] is that byte).
        Descriptor(e: DescriptorError) => "tensor descriptor {e}";
    }
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
    /// The fault `kind` on `stream`.
    pub(crate) const fn on(stream: u32, kind: SessionErrorKind) -> Self {
        Self {
            stream_id: stream,
            kind,
        }
    }

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

coded_error_enum! {
    /// What a peer did against the session's rules (`docs/spec/network.md`).
    #[non_exhaustive]
    pub enum SessionErrorKind: codes {
        /// The message's bytes are malformed.
        Malformed(e: NetError) => "malformed message: {e}";
            e.kind().error_code(), "malformed message",
        /// A message of this type may not arrive in this state or direction.
        Unexpected {
            /// The raw `message_type`.
            message_type: u32,
        } => "message type {message_type:#x} not allowed here";
            ErrorCode::InvalidMessage, "message not allowed in this state",
        /// A message that belongs to a stream arrived on stream 0, or a
        /// connection message (hello, ping, pong) on another stream.
        WrongStream {
            /// The raw `message_type`.
            message_type: u32,
        } => "message type {message_type:#x} on the wrong stream";
            ErrorCode::InvalidMessage, "message on the wrong stream",
        /// A message names a stream that is not open.
        UnknownStream => "stream is not open";
            ErrorCode::InvalidMessage, "stream is not open",
        /// A request or put names a stream that is already open, or one reserved
        /// for the shards of an open parallel request.
        StreamInUse => "stream is already open or reserved";
            ErrorCode::InvalidMessage, "stream id in use",
        /// The peer opened more streams than the session holds at once.
        TooManyStreams {
            /// The session's capacity.
            max: u32,
        } => "more than {max} streams open";
            ErrorCode::Busy, "too many streams open",
        /// The peer's protocol version cannot be spoken.
        VersionMismatch {
            /// The version the peer announced.
            version: u32,
        } => "protocol version {version} is not spoken";
            ErrorCode::ProtocolVersionMismatch, "protocol version not supported",
        /// A data frame does not start where the previous one ended.
        DataOutOfOrder {
            /// The offset expected.
            expected: u64,
            /// The offset found.
            found: u64,
        } => "data frame at offset {found}, expected {expected}";
            ErrorCode::InvalidMessage, "data frame out of order",
        /// Data frames exceed `total_data_bytes`.
        DataOverrun {
            /// `total_data_bytes` of the descriptor.
            total: u64,
            /// Where the frame would end.
            end: u64,
        } => "data frame ends at {end}, past total_data_bytes {total}";
            ErrorCode::InvalidMessage, "data frame past total_data_bytes or empty",
        /// `TENSOR_DATA_END` arrived before `total_data_bytes` were sent.
        DataShort {
            /// `total_data_bytes` of the descriptor.
            total: u64,
            /// Bytes received.
            received: u64,
        } => "data end after {received} of {total} bytes";
            ErrorCode::InvalidMessage, "data ended before total_data_bytes",
        /// A shard descriptor does not fit its parallel transfer (index and
        /// stream disagree, `total_shards` changed, sharding not negotiated).
        ShardMismatch => "shard does not fit its parallel transfer";
            ErrorCode::ShardMismatch, "shard descriptors are inconsistent",
        /// The response places the buffers on a device the client did not list.
        DeviceRefused {
            /// The device tag of the buffers.
            device_tag: u8,
        } => "buffers on device {device_tag:#04x}, not one the client accepts";
            ErrorCode::DeviceUnavailable, "device not accepted",
        /// A `PONG` echoed no outstanding `PING`.
        UnsolicitedPong => "pong without a ping";
            ErrorCode::InvalidMessage, "pong without ping",
        /// The peer sent no message within the handshake, idle or request time.
        Timeout => "timed out";
            ErrorCode::Timeout, "timed out",
        /// The peer presented no valid access token.
        Unauthorized => "no valid access token";
            ErrorCode::Unauthorized, "unauthorized",
        /// The peer closed the connection with an `ERROR` on stream 0.
        PeerError {
            /// Its code.
            code: ErrorCode,
        } => "peer closed the connection: {code}";
            *code, "peer error",
    }
}

error_enum! {
    /// The application asked a session for something its state forbids (the
    /// caller's fault, never the peer's): the session is unchanged.
    #[non_exhaustive]
    pub enum ApiMisuse {
        /// The session is not (or no longer) established.
        NotEstablished => "session not established";
        /// The stream id is 0, open already, or reserved for shards.
        StreamUnavailable(s: u32) => "stream {s} cannot be opened";
        /// The stream is not open, or not in a state where this message goes.
        WrongState(s: u32) => "stream {s} does not accept this message now";
        /// Every stream slot is in use.
        NoFreeStream => "every stream slot is in use";
        /// The bytes would break the transfer's order or its declared total.
        OutOfOrder(s: u32) => "stream {s}: data out of order or past its total";
        /// The message does not fit the peer's maximum message size.
        TooLargeForPeer {
            /// The payload length.
            length: u64,
            /// The peer's maximum.
            max: u32,
        } => "payload of {length} bytes exceeds the peer's maximum {max}";
        /// An argument is invalid (the field named).
        InvalidArgument(what: &'static str) => "invalid argument: {what}";
        /// The output buffer is too small, or a descriptor was invalid.
        Encode(e: EncodeError) => "{e}";
    }
}

impl core::error::Error for ApiMisuse {}

impl From<EncodeError> for ApiMisuse {
    #[inline]
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}
