//! The one bounded reader and writer every payload codec walks its fields
//! with. Every read checks the remaining length first and reports the
//! message offset of the field it could not read; nothing here can panic.

use zerocopy::FromBytes;

use crate::error::EncodeError;

use super::error::{NetError, NetErrorKind};
use super::header::MESSAGE_HEADER_LEN;

/// A cursor over a payload; offsets are reported from the message's first
/// header byte.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) const fn new(payload: &'a [u8]) -> Self {
        Self {
            bytes: payload,
            pos: 0,
        }
    }

    /// The message offset of the next unread byte.
    pub(crate) fn offset(&self) -> u32 {
        let at = self.pos.saturating_add(MESSAGE_HEADER_LEN);
        u32::try_from(at).unwrap_or(u32::MAX)
    }

    fn truncated(&self, want: usize) -> NetError {
        let available = self.bytes.len().saturating_add(MESSAGE_HEADER_LEN) as u64;
        let needed = self.pos.saturating_add(want);
        let needed = needed.saturating_add(MESSAGE_HEADER_LEN) as u64;
        NetError::new(self.offset(), NetErrorKind::Truncated { needed, available })
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], NetError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.truncated(n))?;
        let s = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.truncated(n))?;
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn read<T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable>(
        &mut self,
    ) -> Result<T, NetError> {
        let n = core::mem::size_of::<T>();
        let s = self.take(n)?;
        T::read_from_bytes(s).map_err(|_| self.truncated(n))
    }

    pub(crate) fn u8(&mut self) -> Result<u8, NetError> {
        self.read::<u8>()
    }

    pub(crate) fn u16(&mut self) -> Result<u16, NetError> {
        Ok(self.read::<zerocopy::little_endian::U16>()?.get())
    }

    pub(crate) fn u32(&mut self) -> Result<u32, NetError> {
        Ok(self.read::<zerocopy::little_endian::U32>()?.get())
    }

    pub(crate) fn u64(&mut self) -> Result<u64, NetError> {
        Ok(self.read::<zerocopy::little_endian::U64>()?.get())
    }

    /// A `uint32` length prefix and that many UTF-8 bytes.
    pub(crate) fn str32(&mut self, field: &'static str) -> Result<&'a str, NetError> {
        let at = self.offset();
        let bytes = self.bytes32()?;
        core::str::from_utf8(bytes)
            .map_err(|_| NetError::new(at.saturating_add(4), NetErrorKind::NotUtf8 { field }))
    }

    /// A `uint32` length prefix and that many bytes.
    pub(crate) fn bytes32(&mut self) -> Result<&'a [u8], NetError> {
        let len = self.u32()?;
        // A u32 always fits usize here (no 16-bit targets).
        self.take(len as usize)
    }

    /// A `uint16` count and that many bytes.
    pub(crate) fn bytes16(&mut self) -> Result<&'a [u8], NetError> {
        let len = self.u16()?;
        self.take(usize::from(len))
    }

    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or(&[])
    }

    pub(crate) const fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Fails with `TrailingBytes` unless every byte was read.
    pub(crate) fn finish(&self) -> Result<(), NetError> {
        if self.is_empty() {
            return Ok(());
        }
        let expected = self.pos.saturating_add(MESSAGE_HEADER_LEN) as u64;
        let found = self.bytes.len().saturating_add(MESSAGE_HEADER_LEN) as u64;
        let kind = NetErrorKind::TrailingBytes { expected, found };
        Err(NetError::new(self.offset(), kind))
    }
}

/// A bounded writer: every write checks the room left first.
pub(crate) struct Writer<'o> {
    out: &'o mut [u8],
    pos: usize,
    needed: usize,
}

impl<'o> Writer<'o> {
    pub(crate) const fn new(out: &'o mut [u8], needed: usize) -> Result<Self, EncodeError> {
        if out.len() < needed {
            let (needed, available) = (needed as u64, out.len() as u64);
            return Err(EncodeError::OutputTooSmall { needed, available });
        }
        Ok(Self {
            out,
            pos: 0,
            needed,
        })
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) {
        crate::copy_at(self.out, self.pos, bytes);
        self.pos = self.pos.saturating_add(bytes.len());
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.put(&v.to_le_bytes());
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.put(&v.to_le_bytes());
    }

    /// The bytes written; equals the `needed` length the caller computed
    /// (checked, so a length formula and its writer cannot drift apart
    /// unnoticed).
    pub(crate) fn finish(self) -> Result<usize, EncodeError> {
        if self.pos != self.needed {
            return Err(EncodeError::LengthMismatch {
                what: "encoded message",
                len: u32::try_from(self.pos).unwrap_or(u32::MAX),
                expected: u32::try_from(self.needed).unwrap_or(u32::MAX),
            });
        }
        Ok(self.pos)
    }
}
