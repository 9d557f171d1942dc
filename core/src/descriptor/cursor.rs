//! The one cursor that walks a descriptor's parts in order, and its writing
//! twin.
//!
//! [`Reader`] hands out zerocopy views of the next `n` bytes and never reads
//! past its limit (the declared `descriptor_length`): every read is
//! `split_at_checked`-style, so no input can make it panic. Positions are
//! `u32` because a descriptor's length is a `u32`.

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::FieldName;
use crate::error::{DescriptorError, DescriptorErrorKind, EncodeError};

/// Reads the fields of one descriptor, front to back.
///
/// It holds the bytes not yet read, and the descriptor's length to tell
/// where they begin: a read is one `split_at_checked` of the rest, with no
/// position to bound again and no sum that could overflow.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    /// The bytes after the last read, up to the descriptor's end.
    rest: &'a [u8],
    /// The descriptor's length (`descriptor_length`, a `u32`).
    len: u32,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`, which are at most a
    /// `descriptor_length` (a `u32`) long: a longer slice reads as its
    /// first `u32::MAX` bytes.
    pub(crate) const fn new(bytes: &'a [u8]) -> Self {
        #[allow(clippy::cast_possible_truncation)] // below u32::MAX here
        let (rest, len) = if bytes.len() > u32::MAX as usize {
            match bytes.split_at_checked(u32::MAX as usize) {
                Some((head, _)) => (head, u32::MAX),
                None => (bytes, 0), // cannot happen: longer than that
            }
        } else {
            (bytes, bytes.len() as u32)
        };
        Self { rest, len }
    }

    /// Current position, in bytes from the start of the descriptor.
    #[allow(clippy::cast_possible_truncation)]
    pub(crate) const fn pos(&self) -> u32 {
        // `rest` is a tail of the `len` bytes: no wrap.
        self.len.wrapping_sub(self.rest.len() as u32)
    }

    /// An error located at the current position.
    pub(crate) const fn err(&self, kind: DescriptorErrorKind) -> DescriptorError {
        DescriptorError::new(self.pos(), kind)
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DescriptorError> {
        match self.rest.split_at_checked(n) {
            Some((head, rest)) => {
                self.rest = rest;
                Ok(head)
            }
            None => Err(self.overrun(n)),
        }
    }

    /// The next value of type `T` (an unaligned zerocopy struct).
    pub(crate) fn take<T>(&mut self) -> Result<&'a T, DescriptorError>
    where
        T: FromBytes + KnownLayout + Immutable + Unaligned,
    {
        match T::ref_from_prefix(self.rest) {
            Ok((value, rest)) => {
                self.rest = rest;
                Ok(value)
            }
            Err(_) => Err(self.overrun(size_of::<T>())),
        }
    }

    /// The next `count` values of type `T`.
    pub(crate) fn take_slice<T>(&mut self, count: u64) -> Result<&'a [T], DescriptorError>
    where
        T: FromBytes + KnownLayout + Immutable + Unaligned,
    {
        let len = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(size_of::<T>()));
        let Some(len) = len else {
            return Err(self.overrun(usize::MAX));
        };
        let head = self.bytes(len)?;
        // `head.len()` is a whole number of `T`s and `T` is `Unaligned`, so
        // this cannot fail; the error arm is unreachable.
        <[T]>::ref_from_bytes(head).map_err(|_| self.overrun(0))
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DescriptorError> {
        Ok(*self.take::<u8>()?)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DescriptorError> {
        Ok(self.take::<U32>()?.get())
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DescriptorError> {
        Ok(self.take::<U64>()?.get())
    }

    /// `n` reserved bytes that must all be zero.
    pub(crate) fn reserved(&mut self, n: usize, field: FieldName) -> Result<(), DescriptorError> {
        let at = self.pos();
        let bytes = self.bytes(n)?;
        if bytes.iter().any(|&b| b != 0) {
            return Err(DescriptorError::reserved(at, field));
        }
        Ok(())
    }

    /// The error for wanting `n` more bytes than there are: the length
    /// the descriptor would need (`u32::MAX` past it).
    fn overrun(&self, n: usize) -> DescriptorError {
        let needed = u32::try_from(n)
            .ok()
            .and_then(|n| self.pos().checked_add(n))
            .unwrap_or(u32::MAX);
        self.err(DescriptorErrorKind::LengthMismatch {
            declared: self.len,
            consumed: needed,
        })
    }
}

/// Writes a descriptor front to back into a caller's slice; a write past its
/// end is recorded, not performed, so the encoder can report the full
/// length needed.
#[derive(Debug)]
pub(crate) struct Writer<'o> {
    out: &'o mut [u8],
    pos: usize,
}

impl<'o> Writer<'o> {
    #[inline]
    pub(crate) const fn new(out: &'o mut [u8]) -> Self {
        Self { out, pos: 0 }
    }

    #[inline]
    pub(crate) const fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        // `dst` is exactly `bytes.len()` long, so the copy cannot panic.
        if let Some(dst) = self.rest().and_then(|r| r.get_mut(..bytes.len())) {
            dst.copy_from_slice(bytes);
        }
        self.pos = self.pos.saturating_add(bytes.len());
    }

    /// A fixed-size write: the copy is `N` byte moves, not a `memcpy` call.
    #[inline]
    pub(crate) fn array<const N: usize>(&mut self, bytes: [u8; N]) {
        if let Some(dst) = self.rest().and_then(|r| r.first_chunk_mut::<N>()) {
            *dst = bytes;
        }
        self.pos = self.pos.saturating_add(N);
    }

    /// The unwritten rest of the output (`None` once a write did not fit).
    #[inline]
    fn rest(&mut self) -> Option<&mut [u8]> {
        self.out.get_mut(self.pos..)
    }

    #[inline]
    pub(crate) fn value<T: IntoBytes + Immutable>(&mut self, value: &T) {
        self.bytes(value.as_bytes());
    }

    #[inline]
    pub(crate) fn u8(&mut self, v: u8) {
        self.array([v]);
    }

    #[inline]
    pub(crate) fn u32(&mut self, v: u32) {
        self.array(v.to_le_bytes());
    }

    #[inline]
    pub(crate) fn u64(&mut self, v: u64) {
        self.array(v.to_le_bytes());
    }

    pub(crate) fn zeros(&mut self, n: usize) {
        for _ in 0..n {
            self.u8(0);
        }
    }

    /// Overwrites 4 bytes at `at` (a length prefix written earlier).
    #[inline]
    pub(crate) fn patch_u32(&mut self, at: usize, v: u32) {
        if let Some(dst) = self
            .out
            .get_mut(at..)
            .and_then(|r| r.first_chunk_mut::<4>())
        {
            *dst = v.to_le_bytes();
        }
    }

    /// The number of bytes written, or the error if they did not fit.
    #[inline]
    pub(crate) const fn finish(self) -> Result<usize, EncodeError> {
        if self.pos > self.out.len() {
            return Err(EncodeError::OutputTooSmall {
                needed: self.pos as u64,
                available: self.out.len() as u64,
            });
        }
        Ok(self.pos)
    }
}
