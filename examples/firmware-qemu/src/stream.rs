//! Descriptors arriving as a byte stream, split at arbitrary points (as a
//! UART's receive interrupt delivers them), reassembled in a fixed-capacity
//! buffer: no allocator, no copy beyond the one into the buffer.
//!
//! # Contract
//!
//! [`Reassembler::push`] takes any bytes and [`Reassembler::next`] never
//! panics: a frame is either decoded (a view into the buffer), rejected with
//! the decoder's typed error, or too large for the buffer
//! ([`StreamError::FrameTooLarge`]). After a rejection the reassembler skips
//! the frame's declared length when the header can be trusted to frame it,
//! and drops what it holds otherwise (resynchronising on a corrupted header
//! is the transport's job). Descriptors follow each other back to back.

use crate::cases::{self, DecodeError, View};

/// Why the stream yielded no descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum StreamError {
    /// The decoder rejected the frame.
    Descriptor(DecodeError),
    /// The frame declares more bytes than the buffer holds; they are skipped.
    FrameTooLarge {
        /// Bytes the frame needs.
        needed: u64,
        /// The buffer's capacity.
        capacity: usize,
    },
}

/// Reassembles descriptors from arbitrary chunks in an `N`-byte buffer.
#[derive(Debug, Default)]
pub struct Reassembler<const N: usize> {
    buf: heapless::Vec<u8, N>,
    /// Bytes of the last frame handed out, removed on the next call.
    consumed: usize,
    /// Bytes still to drop from the input (the rest of a too-large frame).
    skip: u64,
}

impl<const N: usize> Reassembler<N> {
    /// An empty reassembler.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            buf: heapless::Vec::new(),
            consumed: 0,
            skip: 0,
        }
    }

    /// Takes bytes from `chunk` while there is room; returns how many it took
    /// (all of them, unless the buffer is full: then call [`next`](Self::next)
    /// and push the rest).
    pub fn push(&mut self, chunk: &[u8]) -> usize {
        self.drain();
        let dropped = usize::try_from(self.skip)
            .unwrap_or(usize::MAX)
            .min(chunk.len());
        self.skip -= dropped as u64;
        let rest = chunk.get(dropped..).unwrap_or(&[]);
        let room = N - self.buf.len();
        let take = room.min(rest.len());
        // `take <= room`: the extension cannot fail.
        let _ = self.buf.extend_from_slice(rest.get(..take).unwrap_or(&[]));
        dropped + take
    }

    /// The next complete frame, or `None` until more bytes arrive.
    pub fn next(&mut self) -> Option<Result<View<'_>, StreamError>> {
        self.drain();
        if self.buf.is_empty() {
            return None;
        }
        let held = self.buf.len();
        match cases::decode_prefix(&self.buf) {
            Ok(view) => {
                self.consumed = cases::frame(&view).len();
                Some(Ok(view))
            }
            Err(e) => match cases::more_needed(&e) {
                Some(needed) if needed > held as u64 && needed > N as u64 => {
                    self.skip = needed - held as u64;
                    self.consumed = held;
                    Some(Err(StreamError::FrameTooLarge {
                        needed,
                        capacity: N,
                    }))
                }
                Some(needed) if needed > held as u64 => None,
                _ => {
                    self.consumed = cases::declared_len(&self.buf).map_or(held, |n| n.min(held));
                    Some(Err(StreamError::Descriptor(e)))
                }
            },
        }
    }

    /// Bytes held and not yet handed out.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.buf.len() - self.consumed
    }

    /// Removes the frame handed out last.
    fn drain(&mut self) {
        let n = core::mem::take(&mut self.consumed).min(self.buf.len());
        self.buf.copy_within(n.., 0);
        self.buf.truncate(self.buf.len() - n);
    }
}
