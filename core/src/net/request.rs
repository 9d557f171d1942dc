//! `TENSOR_REQUEST`: a key, layout preferences, a device, an alignment and
//! flags.
//!
//! [`TensorRequest::decode`] checks `[NP-KEY-1]`, `[NP-LAYOUT-1]` and
//! `[NP-REQUEST-1]` (`docs/spec/network.md`), and that no byte is left over.
//! Nothing here can panic or allocate.

use crate::codes::DeviceTag;
use crate::error::EncodeError;

use super::codes::RequestFlags;
use super::cursor::{Reader, Writer};
use super::error::{NetError, NetErrorKind};
use super::hello::{LayoutList, read_entries, too_long};

/// The longest tensor key, in bytes (`[NP-KEY-1]`).
pub const MAX_KEY_LEN: usize = 1024;

/// Reads a tensor key: a `uint32` length (where a bad one is reported),
/// then 1 to [`MAX_KEY_LEN`] bytes of UTF-8.
pub(crate) fn read_key<'a>(r: &mut Reader<'a>) -> Result<&'a str, NetError> {
    let at = r.offset();
    let key = r.str32("tensor_key")?;
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(invalid(at, "tensor_key length", key.len() as u64));
    }
    Ok(key)
}

/// The payload of `TENSOR_REQUEST`.
///
/// ```
/// use hurray_core::net::{LayoutList, RequestFlags, TensorRequest};
///
/// let req = TensorRequest {
///     key: "weights/layer0",
///     preferred_layouts: LayoutList::tags(&[0x02, 0x01]).unwrap(),
///     preferred_device: 0x00,
///     min_alignment: 64,
///     flags: RequestFlags::ALLOW_TRANSCODE,
/// };
/// let mut buf = [0u8; 64];
/// let n = req.encode(&mut buf)?;
/// assert_eq!(TensorRequest::decode(&buf[..n]).unwrap(), req);
/// # Ok::<(), hurray_core::EncodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorRequest<'a> {
    /// The tensor's key.
    pub key: &'a str,
    /// Layouts in preference order; empty: no preference.
    pub preferred_layouts: LayoutList<'a>,
    /// Preferred device tag code (a valid tag).
    pub preferred_device: u8,
    /// Minimum buffer alignment in bytes (a power of two).
    pub min_alignment: u32,
    /// Request flags.
    pub flags: RequestFlags,
}

impl<'a> TensorRequest<'a> {
    /// Decodes and validates a request payload.
    ///
    /// # Errors
    /// The first field at fault, with its message offset.
    pub fn decode(payload: &'a [u8]) -> Result<Self, NetError> {
        let mut r = Reader::new(payload);
        let key = read_key(&mut r)?;
        let count = r.u16()?;
        let preferred_layouts = read_entries(&mut r, count)?;
        let at = r.offset();
        let preferred_device = r.u8()?;
        if DeviceTag::from_code(preferred_device).is_none() {
            return Err(invalid(at, "preferred_device", u64::from(preferred_device)));
        }
        let at = r.offset();
        let min_alignment = r.u32()?;
        if !min_alignment.is_power_of_two() {
            return Err(invalid(at, "min_alignment", u64::from(min_alignment)));
        }
        let at = r.offset();
        let bits = r.u32()?;
        let Some(flags) = RequestFlags::from_bits(bits) else {
            return Err(reserved_bits(at, "request_flags", u64::from(bits)));
        };
        r.finish()?;
        Ok(Self {
            key,
            preferred_layouts,
            preferred_device,
            min_alignment,
            flags,
        })
    }

    /// Payload bytes on the wire.
    #[must_use]
    pub const fn encoded_len(&self) -> usize {
        self.key
            .len()
            .saturating_add(self.preferred_layouts.encoded_len())
            .saturating_add(4 + 1 + 4 + 4)
    }

    /// Writes the payload.
    ///
    /// # Errors
    /// [`EncodeError::OutputTooSmall`]; [`EncodeError::LengthMismatch`] for a
    /// key longer than [`MAX_KEY_LEN`] or empty.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let key_len = key_len(self.key)?;
        let mut w = Writer::new(out, self.encoded_len())?;
        w.u32(key_len);
        w.put(self.key.as_bytes());
        self.preferred_layouts.write(&mut w);
        w.u8(self.preferred_device);
        w.u32(self.min_alignment);
        w.u32(self.flags.bits());
        w.finish()
    }
}

/// A key's length for the wire, refused when the decoder would refuse it.
pub(crate) fn key_len(key: &str) -> Result<u32, EncodeError> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(too_long("tensor_key"));
    }
    u32::try_from(key.len()).map_err(|_| too_long("tensor_key"))
}

/// The error of a field holding a value it may not.
pub(crate) const fn invalid(at: u32, field: &'static str, value: u64) -> NetError {
    NetError::new(at, NetErrorKind::InvalidValue { field, value })
}

/// [`NetErrorKind::ReservedBits`] of `field` (`value`) at `at`.
pub(crate) const fn reserved_bits(at: u32, field: &'static str, value: u64) -> NetError {
    NetError::new(at, NetErrorKind::ReservedBits { field, value })
}
