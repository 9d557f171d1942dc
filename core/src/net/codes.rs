//! The protocol's code spaces: message types, `ERROR` codes, capability
//! flags and request flags. Unknown codes are data: decoders return the raw
//! value, never a transmuted enum.

use core::fmt;

/// The type of a message (`message_type`, the header's first field).
///
/// Only the thirteen public types exist here: we agree on no private
/// extension, so `0x000000F0`–`0x000000FE` are unknown like any other code.
///
/// ```
/// use hurray_core::net::MessageType;
/// assert_eq!(MessageType::from_code(0x0A), Some(MessageType::Ping));
/// assert_eq!(MessageType::from_code(0xFF), None);
/// assert_eq!(MessageType::TensorData.code(), 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MessageType {
    /// `0x01`: client → server, opens the session.
    ClientHello,
    /// `0x02`: server → client, accepts the session.
    ServerHello,
    /// `0x03`: client → server, asks for a tensor.
    TensorRequest,
    /// `0x04`: the descriptor of a tensor (or shard) about to be sent.
    TensorDescriptor,
    /// `0x05`: a run of the tensor's bytes.
    TensorData,
    /// `0x06`: every data frame of the tensor has been sent.
    TensorDataEnd,
    /// `0x07`: client → server, pushes a tensor.
    TensorPut,
    /// `0x08`: server → client, the pushed tensor was accepted.
    TensorPutAck,
    /// `0x09`: either way, ends a stream (or, on stream 0, the connection).
    Error,
    /// `0x0A`: either way, keepalive request.
    Ping,
    /// `0x0B`: either way, keepalive answer.
    Pong,
    /// `0x0C`: RDMA memory registration (never negotiated here).
    RdmaRegister,
    /// `0x0D`: RDMA readiness (never negotiated here).
    RdmaReady,
}

impl MessageType {
    /// The type for a wire code, `None` for every code this implementation
    /// does not know.
    #[must_use]
    #[inline]
    pub const fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0x01 => Self::ClientHello,
            0x02 => Self::ServerHello,
            0x03 => Self::TensorRequest,
            0x04 => Self::TensorDescriptor,
            0x05 => Self::TensorData,
            0x06 => Self::TensorDataEnd,
            0x07 => Self::TensorPut,
            0x08 => Self::TensorPutAck,
            0x09 => Self::Error,
            0x0A => Self::Ping,
            0x0B => Self::Pong,
            0x0C => Self::RdmaRegister,
            0x0D => Self::RdmaReady,
            _ => return None,
        })
    }

    /// The wire code.
    #[must_use]
    #[inline]
    pub const fn code(self) -> u32 {
        match self {
            Self::ClientHello => 0x01,
            Self::ServerHello => 0x02,
            Self::TensorRequest => 0x03,
            Self::TensorDescriptor => 0x04,
            Self::TensorData => 0x05,
            Self::TensorDataEnd => 0x06,
            Self::TensorPut => 0x07,
            Self::TensorPutAck => 0x08,
            Self::Error => 0x09,
            Self::Ping => 0x0A,
            Self::Pong => 0x0B,
            Self::RdmaRegister => 0x0C,
            Self::RdmaReady => 0x0D,
        }
    }

    /// The spec's name (`"TENSOR_DATA"`, …).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::ClientHello => "CLIENT_HELLO",
            Self::ServerHello => "SERVER_HELLO",
            Self::TensorRequest => "TENSOR_REQUEST",
            Self::TensorDescriptor => "TENSOR_DESCRIPTOR",
            Self::TensorData => "TENSOR_DATA",
            Self::TensorDataEnd => "TENSOR_DATA_END",
            Self::TensorPut => "TENSOR_PUT",
            Self::TensorPutAck => "TENSOR_PUT_ACK",
            Self::Error => "ERROR",
            Self::Ping => "PING",
            Self::Pong => "PONG",
            Self::RdmaRegister => "RDMA_REGISTER",
            Self::RdmaReady => "RDMA_READY",
        }
    }

    /// Whether the message belongs to the connection (stream 0) rather than
    /// to a stream: the hellos, `PING` and `PONG` (`[NP-STREAM-1]`).
    #[must_use]
    #[inline]
    pub const fn is_connection_message(self) -> bool {
        matches!(
            self,
            Self::ClientHello | Self::ServerHello | Self::Ping | Self::Pong
        )
    }
}

/// An `ERROR` code. The spec's eight codes, our implementation-defined ones
/// (from its `0xF0`–`0xFE` range, `docs/spec/network.md` § Errors), and any
/// other value a peer sends, kept as [`Other`](Self::Other).
///
/// ```
/// use hurray_core::net::ErrorCode;
/// assert_eq!(ErrorCode::from_code(2), ErrorCode::UnknownTensor);
/// assert_eq!(ErrorCode::from_code(0x1234), ErrorCode::Other(0x1234));
/// assert_eq!(ErrorCode::Busy.code(), 0xF2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorCode {
    /// `0x01`: incompatible protocol versions.
    ProtocolVersionMismatch,
    /// `0x02`: no tensor has the requested key.
    UnknownTensor,
    /// `0x03`: no acceptable layout could be served.
    LayoutUnavailable,
    /// `0x04`: transcoding refused, the buffer would be too large.
    TranscodeLimitExceeded,
    /// `0x05`: the requested device is not available.
    DeviceUnavailable,
    /// `0x06`: a malformed or out-of-place message.
    InvalidMessage,
    /// `0x07`: `payload_length` exceeds the receiver's maximum.
    MessageTooLarge,
    /// `0x08`: shard descriptors are inconsistent.
    ShardMismatch,
    /// `0xF0` (ours): a handshake, idle or request timer expired.
    Timeout,
    /// `0xF1` (ours): no valid access token was presented.
    Unauthorized,
    /// `0xF2` (ours): a limit was reached (streams, connections, store).
    Busy,
    /// `0xF3` (ours): the server failed on its side (I/O, storage).
    Internal,
    /// Any other code, kept as received.
    Other(u32),
}

impl ErrorCode {
    /// The code for a wire value (every value has one).
    #[must_use]
    #[inline]
    pub const fn from_code(code: u32) -> Self {
        match code {
            0x01 => Self::ProtocolVersionMismatch,
            0x02 => Self::UnknownTensor,
            0x03 => Self::LayoutUnavailable,
            0x04 => Self::TranscodeLimitExceeded,
            0x05 => Self::DeviceUnavailable,
            0x06 => Self::InvalidMessage,
            0x07 => Self::MessageTooLarge,
            0x08 => Self::ShardMismatch,
            0xF0 => Self::Timeout,
            0xF1 => Self::Unauthorized,
            0xF2 => Self::Busy,
            0xF3 => Self::Internal,
            other => Self::Other(other),
        }
    }

    /// The wire value.
    #[must_use]
    #[inline]
    pub const fn code(self) -> u32 {
        match self {
            Self::ProtocolVersionMismatch => 0x01,
            Self::UnknownTensor => 0x02,
            Self::LayoutUnavailable => 0x03,
            Self::TranscodeLimitExceeded => 0x04,
            Self::DeviceUnavailable => 0x05,
            Self::InvalidMessage => 0x06,
            Self::MessageTooLarge => 0x07,
            Self::ShardMismatch => 0x08,
            Self::Timeout => 0xF0,
            Self::Unauthorized => 0xF1,
            Self::Busy => 0xF2,
            Self::Internal => 0xF3,
            Self::Other(c) => c,
        }
    }

    /// The spec's name, or ours for the implementation-defined codes.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::ProtocolVersionMismatch => "PROTOCOL_VERSION_MISMATCH",
            Self::UnknownTensor => "UNKNOWN_TENSOR",
            Self::LayoutUnavailable => "LAYOUT_UNAVAILABLE",
            Self::TranscodeLimitExceeded => "TRANSCODE_LIMIT_EXCEEDED",
            Self::DeviceUnavailable => "DEVICE_UNAVAILABLE",
            Self::InvalidMessage => "INVALID_MESSAGE",
            Self::MessageTooLarge => "MESSAGE_TOO_LARGE",
            Self::ShardMismatch => "SHARD_MISMATCH",
            Self::Timeout => "TIMEOUT",
            Self::Unauthorized => "UNAUTHORIZED",
            Self::Busy => "BUSY",
            Self::Internal => "INTERNAL",
            Self::Other(_) => "OTHER",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#x})", self.name(), self.code())
    }
}

/// Capability flags of a hello (`capability_flags`, bits 0–3; 4–63 reserved).
///
/// ```
/// use hurray_core::net::Capabilities;
/// let caps = Capabilities::TRANSCODING.union(Capabilities::PARALLEL_STREAMS);
/// assert_eq!(caps.bits(), 0b11);
/// assert!(caps.contains(Capabilities::PARALLEL_STREAMS));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Capabilities(u64);

impl Capabilities {
    /// No capability.
    pub const NONE: Self = Self(0);
    /// Bit 0: transcodes to a requested layout on the fly.
    pub const TRANSCODING: Self = Self(1 << 0);
    /// Bit 1: multi-stream parallel shard transfers.
    pub const PARALLEL_STREAMS: Self = Self(1 << 1);
    /// Bit 2: RDMA data plane.
    pub const RDMA_DATA_PLANE: Self = Self(1 << 2);
    /// Bit 3: GPUDirect writes (implies bit 2).
    pub const RDMA_GPUDIRECT: Self = Self(1 << 3);
    /// The bits the protocol defines.
    pub const DEFINED: u64 = 0b1111;

    /// The flags of `bits`, `None` if a reserved bit is set or GPUDirect is
    /// claimed without the RDMA data plane.
    #[must_use]
    #[inline]
    pub const fn from_bits(bits: u64) -> Option<Self> {
        if bits & !Self::DEFINED != 0 || (bits & 0b1000 != 0 && bits & 0b0100 == 0) {
            return None;
        }
        Some(Self(bits))
    }

    /// The raw bits.
    #[must_use]
    #[inline]
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Both sets of flags.
    #[must_use]
    #[inline]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every flag of `other` is set.
    #[must_use]
    #[inline]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

/// Flags of a `TENSOR_REQUEST` (`request_flags`, bits 0–1; 2–31 reserved).
///
/// ```
/// use hurray_core::net::RequestFlags;
/// assert_eq!(RequestFlags::from_bits(4), None);
/// assert!(RequestFlags::from_bits(3).unwrap().contains(RequestFlags::PARALLEL_OK));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequestFlags(u32);

impl RequestFlags {
    /// No flag.
    pub const NONE: Self = Self(0);
    /// Bit 0: the server may transcode to a preferred layout.
    pub const ALLOW_TRANSCODE: Self = Self(1 << 0);
    /// Bit 1: the client accepts the tensor as parallel shards.
    pub const PARALLEL_OK: Self = Self(1 << 1);

    /// The flags of `bits`, `None` if a reserved bit is set.
    #[must_use]
    #[inline]
    pub const fn from_bits(bits: u32) -> Option<Self> {
        if bits & !0b11 != 0 {
            return None;
        }
        Some(Self(bits))
    }

    /// The raw bits.
    #[must_use]
    #[inline]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Both sets of flags.
    #[must_use]
    #[inline]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every flag of `other` is set.
    #[must_use]
    #[inline]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}
