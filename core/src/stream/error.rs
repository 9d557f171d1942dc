//! The stream's errors: [`StreamError`] for what a decoder refuses (a
//! [`StreamErrorKind`] at a byte offset of the stream, in a numbered tensor)
//! and [`WriteError`] for what a writer refuses or its sink fails at.

use core::fmt;

use crate::composite::CompositeError;
use crate::error::DescriptorError;
use crate::error::error_enum;

/// A stream was rejected: what was wrong, the byte offset of the stream
/// where it was found, and the tensor (0-based, in stream order, composite
/// heads and members counted) it belongs to.
///
/// The same bytes give the same error however they were split into chunks.
///
/// ```
/// use hurray_core::stream::{StreamDecoder, StreamErrorKind};
///
/// let (mut d, mut c) = ([0u8; 64], [0u8; 0]);
/// let mut dec = StreamDecoder::new(&mut d, &mut c);
/// let err = dec.decode(b"HRAY\x01\x00\x14\x00\x00\x00").unwrap_err();
/// assert_eq!(err.offset(), 0);
/// assert_eq!(err.tensor(), 0);
/// assert!(matches!(err.kind(), StreamErrorKind::Descriptor(_)));
/// assert_eq!(err.to_string(), "stream byte 0, tensor 0: at byte 0: bad magic [48, 52, 41, 59], expected \"HRRY\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StreamError {
    offset: u64,
    tensor: u64,
    kind: StreamErrorKind,
}

impl StreamError {
    /// An error of `kind` at stream byte `offset`, in tensor `tensor`.
    #[must_use]
    #[inline]
    pub const fn new(offset: u64, tensor: u64, kind: StreamErrorKind) -> Self {
        Self {
            offset,
            tensor,
            kind,
        }
    }

    /// What was wrong.
    #[must_use]
    #[inline]
    pub const fn kind(&self) -> StreamErrorKind {
        self.kind
    }

    /// The byte offset, from the start of the stream, of the field at fault
    /// (for a descriptor error: the descriptor's start plus the error's own
    /// offset; for an early end: the end of the stream).
    #[must_use]
    #[inline]
    pub const fn offset(&self) -> u64 {
        self.offset
    }

    /// The tensor at fault, counted from 0 in stream order.
    #[must_use]
    #[inline]
    pub const fn tensor(&self) -> u64 {
        self.tensor
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stream byte {}, tensor {}: {}",
            self.offset, self.tensor, self.kind
        )
    }
}

impl core::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match &self.kind {
            StreamErrorKind::Descriptor(e) => Some(e),
            StreamErrorKind::Composite(e) => Some(e),
            _ => None,
        }
    }
}

error_enum! {
    /// Where in the stream an early end was found.
    pub enum Phase {
        /// Inside a descriptor.
        Descriptor => "a descriptor";
        /// Inside a tensor's buffer bytes.
        Data => "a tensor's buffers";
        /// Between tensors, with a composite still waiting for members.
        Composite => "a composite (torn)";
    }
}

error_enum! {
    /// What is wrong with a stream.
    #[non_exhaustive]
    pub enum StreamErrorKind {
        /// A descriptor is invalid (its own offset counts from the
        /// descriptor's first byte; the stream offset is absolute).
        Descriptor(e: DescriptorError) => "{e}";
        /// A composite breaks a rule of its head (a torn composite included).
        Composite(e: CompositeError) => "{e}";
        /// A descriptor is longer than the caller's limit (or descriptor buffer).
        DescriptorTooLong {
            /// Its `descriptor_length`.
            length: u32,
            /// The limit.
            limit: u32,
        } => "descriptor of {length} bytes exceeds the limit {limit}";
        /// A buffer is larger than the caller's limit.
        BufferTooLarge {
            /// The buffer's index in its table.
            buffer: u32,
            /// Its declared size.
            size: u64,
            /// The limit.
            limit: u64,
        } => "buffer {buffer} of {size} bytes exceeds the limit {limit}";
        /// The stream would be longer than the caller's limit.
        TotalTooLarge {
            /// The length the stream would reach (saturated at `u64::MAX`).
            needed: u64,
            /// The limit.
            limit: u64,
        } => "stream of {needed} bytes exceeds the limit {limit}";
        /// A buffer's sync mode is not `ProducerSynced` where the caller
        /// requires it (a stream that crossed machines).
        NotProducerSynced {
            /// The buffer's index in its table.
            buffer: u32,
            /// Its sync-mode code.
            sync_mode: u8,
        } => "buffer {buffer} has sync mode {sync_mode:#04x}, not ProducerSynced";
        /// A partition composite's member boxes do not fit the caller's
        /// composite scratch.
        ScratchTooSmall {
            /// Bytes of scratch needed.
            needed: u64,
            /// Bytes of scratch there are.
            available: u64,
        } => "composite scratch of {available} bytes, {needed} needed";
        /// The stream ended somewhere other than between two top-level tensors.
        UnexpectedEof {
            /// Inside what.
            inside: Phase,
        } => "stream ends inside {inside}";
    }
}

error_enum! {
    /// Why a [`StreamWriter`](super::StreamWriter) refused a call or stopped.
    ///
    /// `Sink` is the sink's own failure; every other variant is the caller's
    /// (nothing of the refused tensor was written, except where noted).
    #[non_exhaustive]
    pub enum WriteError<E> {
        /// The sink failed; the stream is cut where it stopped.
        Sink(e: E) => "sink failed: {e:?}";
        /// The sink accepted no byte of a non-empty write (a full sink).
        SinkFull => "sink accepted no bytes";
        /// As many buffers must be given as the descriptor's table declares.
        BufferCount {
            /// Entries in the table.
            expected: u32,
            /// Buffers given.
            found: u64,
        } => "{found} buffers given, the table declares {expected}";
        /// A buffer's length is not the size its table entry declares.
        BufferSize {
            /// The buffer's index.
            buffer: u32,
            /// The declared size.
            expected: u64,
            /// The length given.
            found: u64,
        } => "buffer {buffer} is {found} bytes, its table entry declares {expected}";
        /// More data than the open tensor's buffers hold.
        DataOverrun {
            /// Bytes the tensor still takes.
            remaining: u64,
            /// Bytes given.
            found: u64,
        } => "{found} data bytes given, the tensor takes {remaining} more";
        /// A tensor's data is not complete (a new tensor, or the end, came
        /// before its last byte).
        DataIncomplete {
            /// Bytes still owed.
            remaining: u64,
        } => "the open tensor still takes {remaining} data bytes";
        /// Data given while no tensor is open.
        NoOpenTensor => "data given while no tensor is open";
        /// The tensor breaks a rule of the composite it belongs to, or the
        /// stream ends before a composite's members.
        Composite(e: CompositeError) => "{e}";
        /// A partition's member boxes do not fit the writer's scratch.
        ScratchTooSmall {
            /// Bytes of scratch needed.
            needed: u64,
            /// Bytes of scratch there are.
            available: u64,
        } => "composite scratch of {available} bytes, {needed} needed";
    }
}

impl<E: fmt::Debug> core::error::Error for WriteError<E> {}
