//! Every message as one validated value: [`Message::decode`] turns a
//! [`Frame`] into a [`Message`] (or the first fault, with its offset), and
//! [`Message::encode`] writes header and payload. A frame's type is judged
//! here, not by the framer, so that an unknown type can be refused while
//! the byte stream stays in step.

use zerocopy::IntoBytes;

use crate::error::EncodeError;

use super::codes::MessageType;
use super::control::{ErrorMessage, Ping, RdmaRegister};
use super::cursor::{Reader, Writer};
use super::error::{NetError, NetErrorKind};
use super::header::{Frame, MESSAGE_HEADER_LEN, MessageHeader};
use super::hello::Hello;
use super::request::TensorRequest;
use super::transfer::{DataFrame, DescriptorMessage, TensorPut};

/// A decoded message.
///
/// ```
/// use hurray_core::net::{Frame, Message, Ping, Status};
///
/// let mut buf = [0u8; 32];
/// let n = Message::Ping(Ping(42)).encode(0, &mut buf)?;
/// let Status::Complete(frame) = Frame::parse(&buf[..n], 1024).unwrap() else { unreachable!() };
/// assert_eq!(Message::decode(&frame).unwrap(), Message::Ping(Ping(42)));
/// # Ok::<(), hurray_core::EncodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(clippy::large_enum_variant)] // values live on the stack one at a time
pub enum Message<'a> {
    /// `CLIENT_HELLO`.
    ClientHello(Hello<'a>),
    /// `SERVER_HELLO`.
    ServerHello(Hello<'a>),
    /// `TENSOR_REQUEST`.
    TensorRequest(TensorRequest<'a>),
    /// `TENSOR_DESCRIPTOR`.
    TensorDescriptor(DescriptorMessage<'a>),
    /// `TENSOR_DATA`.
    TensorData(DataFrame<'a>),
    /// `TENSOR_DATA_END`.
    TensorDataEnd,
    /// `TENSOR_PUT`.
    TensorPut(TensorPut<'a>),
    /// `TENSOR_PUT_ACK`.
    TensorPutAck,
    /// `ERROR`.
    Error(ErrorMessage<'a>),
    /// `PING`.
    Ping(Ping),
    /// `PONG`.
    Pong(Ping),
    /// `RDMA_REGISTER`.
    RdmaRegister(RdmaRegister<'a>),
    /// `RDMA_READY`.
    RdmaReady,
}

impl<'a> Message<'a> {
    /// Decodes and validates the message in `frame`.
    ///
    /// # Errors
    /// [`NetErrorKind::UnknownType`] at byte 0, or the payload's first fault.
    pub fn decode(frame: &Frame<'a>) -> Result<Self, NetError> {
        let code = frame.message_type();
        let Some(kind) = MessageType::from_code(code) else {
            return Err(NetError::new(0, NetErrorKind::UnknownType(code)));
        };
        Self::decode_payload(kind, frame.payload())
    }

    /// Decodes a payload of a known type.
    ///
    /// # Errors
    /// The payload's first fault, with its message offset.
    pub fn decode_payload(kind: MessageType, p: &'a [u8]) -> Result<Self, NetError> {
        Ok(match kind {
            MessageType::ClientHello => Self::ClientHello(Hello::decode(p)?),
            MessageType::ServerHello => Self::ServerHello(Hello::decode(p)?),
            MessageType::TensorRequest => Self::TensorRequest(TensorRequest::decode(p)?),
            MessageType::TensorDescriptor => Self::TensorDescriptor(DescriptorMessage::decode(p)?),
            MessageType::TensorData => Self::TensorData(DataFrame::decode(p)?),
            MessageType::TensorDataEnd => empty(p, Self::TensorDataEnd)?,
            MessageType::TensorPut => Self::TensorPut(TensorPut::decode(p)?),
            MessageType::TensorPutAck => empty(p, Self::TensorPutAck)?,
            MessageType::Error => Self::Error(ErrorMessage::decode(p)?),
            MessageType::Ping => Self::Ping(Ping::decode(p)?),
            MessageType::Pong => Self::Pong(Ping::decode(p)?),
            MessageType::RdmaRegister => Self::RdmaRegister(RdmaRegister::decode(p)?),
            MessageType::RdmaReady => empty(p, Self::RdmaReady)?,
        })
    }

    /// The message's type.
    #[must_use]
    pub const fn message_type(&self) -> MessageType {
        match self {
            Self::ClientHello(_) => MessageType::ClientHello,
            Self::ServerHello(_) => MessageType::ServerHello,
            Self::TensorRequest(_) => MessageType::TensorRequest,
            Self::TensorDescriptor(_) => MessageType::TensorDescriptor,
            Self::TensorData(_) => MessageType::TensorData,
            Self::TensorDataEnd => MessageType::TensorDataEnd,
            Self::TensorPut(_) => MessageType::TensorPut,
            Self::TensorPutAck => MessageType::TensorPutAck,
            Self::Error(_) => MessageType::Error,
            Self::Ping(_) => MessageType::Ping,
            Self::Pong(_) => MessageType::Pong,
            Self::RdmaRegister(_) => MessageType::RdmaRegister,
            Self::RdmaReady => MessageType::RdmaReady,
        }
    }

    /// Payload bytes on the wire.
    #[must_use]
    pub fn payload_len(&self) -> usize {
        match self {
            Self::ClientHello(h) | Self::ServerHello(h) => h.encoded_len(),
            Self::TensorRequest(r) => r.encoded_len(),
            Self::TensorDescriptor(d) => d.encoded_len(),
            Self::TensorData(d) => 8usize.saturating_add(d.data.len()),
            Self::TensorPut(p) => p.encoded_len(),
            Self::Error(e) => e.encoded_len(),
            Self::Ping(_) | Self::Pong(_) => Ping::LEN,
            Self::RdmaRegister(r) => 20usize.saturating_add(r.rkey.len()),
            Self::TensorDataEnd | Self::TensorPutAck | Self::RdmaReady => 0,
        }
    }

    /// Bytes on the wire, header included.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        MESSAGE_HEADER_LEN.saturating_add(self.payload_len())
    }

    /// Writes header and payload for `stream_id`; returns the bytes written.
    ///
    /// # Errors
    /// [`EncodeError::OutputTooSmall`], a payload over 4 GiB, or the
    /// payload encoder's error.
    pub fn encode(&self, stream_id: u32, out: &mut [u8]) -> Result<usize, EncodeError> {
        let len = self.payload_len();
        let total = self.encoded_len();
        let too_small = |available: usize| EncodeError::OutputTooSmall {
            needed: total as u64,
            available: available as u64,
        };
        if out.len() < total {
            return Err(too_small(out.len()));
        }
        let plen = u32::try_from(len).map_err(|_| super::hello::too_long("payload"))?;
        let available = out.len();
        let Some((head, body)) = out.split_at_mut_checked(MESSAGE_HEADER_LEN) else {
            return Err(too_small(available));
        };
        let header = MessageHeader::new(self.message_type(), stream_id, plen);
        header.write_to_prefix(head).map_err(|_| too_small(0))?;
        let n = match self {
            Self::ClientHello(h) | Self::ServerHello(h) => h.encode(body)?,
            Self::TensorRequest(r) => r.encode(body)?,
            Self::TensorDescriptor(d) => d.encode(body)?,
            Self::TensorData(d) => {
                let mut w = Writer::new(body, len)?;
                w.u64(d.offset);
                w.put(d.data);
                w.finish()?
            }
            Self::TensorPut(p) => p.encode(body)?,
            Self::Error(e) => e.encode(body)?,
            Self::Ping(t) | Self::Pong(t) => {
                let mut w = Writer::new(body, len)?;
                w.put(&t.to_bytes());
                w.finish()?
            }
            Self::RdmaRegister(r) => {
                let rk = u32::try_from(r.rkey.len()).map_err(|_| super::hello::too_long("rkey"))?;
                let mut w = Writer::new(body, len)?;
                w.u64(r.remote_addr);
                w.u64(r.length);
                w.u32(rk);
                w.put(r.rkey);
                w.finish()?
            }
            Self::TensorDataEnd | Self::TensorPutAck | Self::RdmaReady => 0,
        };
        Ok(MESSAGE_HEADER_LEN.saturating_add(n))
    }
}

/// Writes only the 20 bytes that precede a `TENSOR_DATA` frame's data
/// (header and `byte_offset_in_buffer`), so a sender can write the data
/// itself from where it lies (an mmap, a device buffer) without a copy.
///
/// ```
/// use hurray_core::net::{Frame, Message, Status, data_frame_prefix};
/// let data = [1u8, 2, 3];
/// let prefix = data_frame_prefix(7, 100, data.len() as u32);
/// let mut wire = prefix.to_vec();
/// wire.extend_from_slice(&data);
/// let Status::Complete(f) = Frame::parse(&wire, 64).unwrap() else { unreachable!() };
/// let Message::TensorData(d) = Message::decode(&f).unwrap() else { unreachable!() };
/// assert_eq!((f.stream_id(), d.offset, d.data), (7, 100, &data[..]));
/// ```
#[must_use]
pub const fn data_frame_prefix(stream_id: u32, offset: u64, data_len: u32) -> [u8; 20] {
    let mut out = [0u8; 20];
    let payload_len = data_len.saturating_add(8);
    let h = MessageHeader::new(MessageType::TensorData, stream_id, payload_len).to_array();
    let (a, b) = out.split_at_mut(MESSAGE_HEADER_LEN);
    a.copy_from_slice(&h);
    b.copy_from_slice(&offset.to_le_bytes());
    out
}

/// `message` when its payload `p` is empty, as it must be.
fn empty<'a>(p: &[u8], message: Message<'a>) -> Result<Message<'a>, NetError> {
    Reader::new(p).finish().map(|()| message)
}
