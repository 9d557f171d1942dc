//! Control messages: `ERROR`, `PING`/`PONG`, and the RDMA handshake pair
//! (`RDMA_REGISTER`, `RDMA_READY`), which this implementation decodes but
//! never negotiates.
//!
//! [`ErrorMessage::decode`] accepts any code (unknown ones are kept as
//! [`ErrorCode::Other`]) and checks the text is UTF-8; [`Ping::decode`]
//! wants exactly 8 bytes (`[NP-PING-1]`). Nothing here can panic or
//! allocate.

use crate::error::EncodeError;

use super::codes::ErrorCode;
use super::cursor::{Reader, Writer};
use super::error::NetError;
use super::request::invalid;

/// The longest `ERROR` text this implementation sends (`[NP-ERROR-2]`).
pub const MAX_ERROR_TEXT: usize = 256;

/// The payload of `ERROR`.
///
/// ```
/// use hurray_core::net::{ErrorCode, ErrorMessage};
/// let e = ErrorMessage { code: ErrorCode::UnknownTensor, text: "no such tensor" };
/// let mut buf = [0u8; 64];
/// let n = e.encode(&mut buf)?;
/// assert_eq!(ErrorMessage::decode(&buf[..n]).unwrap(), e);
/// # Ok::<(), hurray_core::EncodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ErrorMessage<'a> {
    /// The code.
    pub code: ErrorCode,
    /// Human-readable text.
    pub text: &'a str,
}

impl<'a> ErrorMessage<'a> {
    /// Decodes an error payload.
    ///
    /// # Errors
    /// Truncation, text not UTF-8, or trailing bytes.
    pub fn decode(payload: &'a [u8]) -> Result<Self, NetError> {
        let mut r = Reader::new(payload);
        let code = ErrorCode::from_code(r.u32()?);
        let text = r.str32("message")?;
        r.finish()?;
        Ok(Self { code, text })
    }

    /// Payload bytes on the wire (the text cut to [`MAX_ERROR_TEXT`] bytes
    /// at a character boundary).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        clip(self.text).len().saturating_add(8)
    }

    /// Writes the payload; a text longer than [`MAX_ERROR_TEXT`] is cut at
    /// a character boundary.
    ///
    /// # Errors
    /// [`EncodeError::OutputTooSmall`].
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let text = clip(self.text);
        let mut w = Writer::new(out, text.len().saturating_add(8))?;
        w.u32(self.code.code());
        w.u32(u32::try_from(text.len()).unwrap_or(u32::MAX));
        w.put(text.as_bytes());
        w.finish()
    }
}

/// `text` cut to at most [`MAX_ERROR_TEXT`] bytes, on a char boundary.
fn clip(text: &str) -> &str {
    if text.len() <= MAX_ERROR_TEXT {
        return text;
    }
    let mut end = MAX_ERROR_TEXT;
    while end > 0 && !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    text.get(..end).unwrap_or("")
}

/// The payload of `PING` and `PONG`: an 8-byte opaque token; a `PONG`
/// echoes its `PING`'s (`[NP-PING-1]`).
///
/// ```
/// use hurray_core::net::Ping;
/// assert_eq!(Ping::decode(&7u64.to_le_bytes()).unwrap(), Ping(7));
/// assert!(Ping::decode(&[]).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ping(pub u64);

impl Ping {
    /// Payload bytes on the wire.
    pub const LEN: usize = 8;

    /// Decodes an 8-byte token.
    ///
    /// # Errors
    /// Any other payload length ([`InvalidValue`](super::NetErrorKind::InvalidValue)
    /// of `payload_length`, at byte 8).
    pub fn decode(payload: &[u8]) -> Result<Self, NetError> {
        match <[u8; 8]>::try_from(payload) {
            Ok(b) => Ok(Self(u64::from_le_bytes(b))),
            Err(_) => Err(invalid(8, "payload_length", payload.len() as u64)),
        }
    }

    /// The 8 payload bytes.
    #[must_use]
    #[inline]
    pub const fn to_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }
}

/// The payload of `RDMA_REGISTER` (decoded so it can be refused precisely;
/// this implementation never advertises RDMA, `[NP-RDMA-1]`).
///
/// ```
/// use hurray_core::net::RdmaRegister;
/// let mut p = [0u8; 24];
/// p[16] = 4; // rkey length 4 but no bytes: truncated
/// assert!(RdmaRegister::decode(&p[..20]).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RdmaRegister<'a> {
    /// Address of the registered region on the sender's side.
    pub remote_addr: u64,
    /// Size of the region.
    pub length: u64,
    /// The opaque memory key.
    pub rkey: &'a [u8],
}

impl<'a> RdmaRegister<'a> {
    /// Decodes a registration payload.
    ///
    /// # Errors
    /// Truncation or trailing bytes.
    pub fn decode(payload: &'a [u8]) -> Result<Self, NetError> {
        let mut r = Reader::new(payload);
        let remote_addr = r.u64()?;
        let length = r.u64()?;
        let rkey = r.bytes32()?;
        r.finish()?;
        Ok(Self {
            remote_addr,
            length,
            rkey,
        })
    }
}
