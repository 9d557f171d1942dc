//! The protocol's code spaces: message types, `ERROR` codes, capability
//! flags and request flags. Unknown codes are data: decoders return the raw
//! value, never a transmuted enum.

use core::fmt;

use crate::codes::{code_enum, flag_set};

code_enum! {
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
    /// assert_eq!(MessageType::TensorData.name(), "TENSOR_DATA");
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum MessageType: u32, ALL, pub fn from_code {
        /// `0x01`: client → server, opens the session.
        ClientHello = 0x01 => "CLIENT_HELLO",
        /// `0x02`: server → client, accepts the session.
        ServerHello = 0x02 => "SERVER_HELLO",
        /// `0x03`: client → server, asks for a tensor.
        TensorRequest = 0x03 => "TENSOR_REQUEST",
        /// `0x04`: the descriptor of a tensor (or shard) about to be sent.
        TensorDescriptor = 0x04 => "TENSOR_DESCRIPTOR",
        /// `0x05`: a run of the tensor's bytes.
        TensorData = 0x05 => "TENSOR_DATA",
        /// `0x06`: every data frame of the tensor has been sent.
        TensorDataEnd = 0x06 => "TENSOR_DATA_END",
        /// `0x07`: client → server, pushes a tensor.
        TensorPut = 0x07 => "TENSOR_PUT",
        /// `0x08`: server → client, the pushed tensor was accepted.
        TensorPutAck = 0x08 => "TENSOR_PUT_ACK",
        /// `0x09`: either way, ends a stream (or, on stream 0, the connection).
        Error = 0x09 => "ERROR",
        /// `0x0A`: either way, keepalive request.
        Ping = 0x0A => "PING",
        /// `0x0B`: either way, keepalive answer.
        Pong = 0x0B => "PONG",
        /// `0x0C`: RDMA memory registration (never negotiated here).
        RdmaRegister = 0x0C => "RDMA_REGISTER",
        /// `0x0D`: RDMA readiness (never negotiated here).
        RdmaReady = 0x0D => "RDMA_READY",
    }
}

impl MessageType {
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

code_enum! {
    /// An `ERROR` code. The spec's eight codes, our implementation-defined ones
    /// (from its `0xF0`–`0xFE` range, `docs/spec/network.md` § Errors), and any
    /// other value a peer sends, kept as [`Other`](Self::Other).
    ///
    /// ```
    /// use hurray_core::net::ErrorCode;
    /// assert_eq!(ErrorCode::from_code(2), ErrorCode::UnknownTensor);
    /// assert_eq!(ErrorCode::from_code(0x1234), ErrorCode::Other(0x1234));
    /// assert_eq!(ErrorCode::Busy.code(), 0xF2);
    /// assert_eq!(ErrorCode::Other(7).name(), "OTHER");
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum ErrorCode: u32, NAMED, fn named {
        /// `0x01`: incompatible protocol versions.
        ProtocolVersionMismatch = 0x01 => "PROTOCOL_VERSION_MISMATCH",
        /// `0x02`: no tensor has the requested key.
        UnknownTensor = 0x02 => "UNKNOWN_TENSOR",
        /// `0x03`: no acceptable layout could be served.
        LayoutUnavailable = 0x03 => "LAYOUT_UNAVAILABLE",
        /// `0x04`: transcoding refused, the buffer would be too large.
        TranscodeLimitExceeded = 0x04 => "TRANSCODE_LIMIT_EXCEEDED",
        /// `0x05`: the requested device is not available.
        DeviceUnavailable = 0x05 => "DEVICE_UNAVAILABLE",
        /// `0x06`: a malformed or out-of-place message.
        InvalidMessage = 0x06 => "INVALID_MESSAGE",
        /// `0x07`: `payload_length` exceeds the receiver's maximum.
        MessageTooLarge = 0x07 => "MESSAGE_TOO_LARGE",
        /// `0x08`: shard descriptors are inconsistent.
        ShardMismatch = 0x08 => "SHARD_MISMATCH",
        /// `0xF0` (ours): a handshake, idle or request timer expired.
        Timeout = 0xF0 => "TIMEOUT",
        /// `0xF1` (ours): no valid access token was presented.
        Unauthorized = 0xF1 => "UNAUTHORIZED",
        /// `0xF2` (ours): a limit was reached (streams, connections, store).
        Busy = 0xF2 => "BUSY",
        /// `0xF3` (ours): the server failed on its side (I/O, storage).
        Internal = 0xF3 => "INTERNAL",
        ..
        /// Any other code, kept as received.
        Other(u32) => "OTHER",
    }
}

impl ErrorCode {
    /// The code for a wire value (every value has one).
    #[must_use]
    #[inline]
    pub const fn from_code(code: u32) -> Self {
        match Self::named(code) {
            Some(named) => named,
            None => Self::Other(code),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#x})", self.name(), self.code())
    }
}

flag_set! {
    /// Capability flags of a hello (`capability_flags`, bits 0–3; 4–63 reserved).
    ///
    /// ```
    /// use hurray_core::net::Capabilities;
    /// let caps = Capabilities::TRANSCODING.union(Capabilities::PARALLEL_STREAMS);
    /// assert_eq!(caps.bits(), 0b11);
    /// assert!(caps.contains(Capabilities::PARALLEL_STREAMS));
    /// ```
    pub struct Capabilities(u64): manual {
        /// No capability.
        const NONE = 0;
        /// Bit 0: transcodes to a requested layout on the fly.
        const TRANSCODING = 1 << 0;
        /// Bit 1: multi-stream parallel shard transfers.
        const PARALLEL_STREAMS = 1 << 1;
        /// Bit 2: RDMA data plane.
        const RDMA_DATA_PLANE = 1 << 2;
        /// Bit 3: GPUDirect writes (implies bit 2).
        const RDMA_GPUDIRECT = 1 << 3;
    }
}

impl Capabilities {
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
}

flag_set! {
    /// Flags of a `TENSOR_REQUEST` (`request_flags`, bits 0–1; 2–31 reserved).
    ///
    /// ```
    /// use hurray_core::net::RequestFlags;
    /// assert_eq!(RequestFlags::from_bits(4), None);
    /// assert!(RequestFlags::from_bits(3).unwrap().contains(RequestFlags::PARALLEL_OK));
    /// ```
    pub struct RequestFlags(u32) {
        /// No flag.
        const NONE = 0;
        /// Bit 0: the server may transcode to a preferred layout.
        const ALLOW_TRANSCODE = 1 << 0;
        /// Bit 1: the client accepts the tensor as parallel shards.
        const PARALLEL_OK = 1 << 1;
    }
}
