//! What a stream reader accepts: the caller's bounds and reader options.

use crate::descriptor::ReadOptions;

/// The caller's bounds on a stream, each checked before the bytes it
/// bounds are taken in (a descriptor's length from its first 10 bytes, its
/// buffers' sizes from its table, before the descriptor is handed out).
///
/// The decoder itself never reserves memory for buffer bytes (it hands out
/// slices of the caller's input), so `max_buffer_bytes` and
/// `max_total_bytes` protect what the *caller* does with them: a reader
/// that collects each buffer in memory should set both.
///
/// ```
/// use hurray_core::stream::StreamLimits;
/// let limits = StreamLimits::DEFAULT.max_buffer_bytes(1 << 20).max_total_bytes(1 << 30);
/// assert_eq!(limits.max_buffer_bytes, 1 << 20);
/// assert_eq!(limits.max_descriptor_len, u32::MAX); // the descriptor buffer bounds it
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StreamLimits<'o> {
    /// The longest descriptor accepted (also bounded by the descriptor
    /// buffer the decoder is given).
    pub max_descriptor_len: u32,
    /// The largest buffer accepted.
    pub max_buffer_bytes: u64,
    /// The longest stream accepted, descriptors and data together.
    pub max_total_bytes: u64,
    /// Refuse buffers whose sync mode is not `ProducerSynced` (a stream
    /// that crossed machines carries no usable event or stream handle).
    pub require_producer_synced: bool,
    /// How each descriptor is read (private codes accepted).
    pub read: ReadOptions<'o>,
}

impl StreamLimits<'static> {
    /// No bound but the descriptor buffer's length; strict reading.
    pub const DEFAULT: Self = Self {
        max_descriptor_len: u32::MAX,
        max_buffer_bytes: u64::MAX,
        max_total_bytes: u64::MAX,
        require_producer_synced: false,
        read: ReadOptions::STRICT,
    };
}

impl Default for StreamLimits<'_> {
    fn default() -> Self {
        StreamLimits::DEFAULT
    }
}

impl<'o> StreamLimits<'o> {
    /// These limits with `max_descriptor_len` set.
    #[must_use]
    #[inline]
    pub const fn max_descriptor_len(mut self, bytes: u32) -> Self {
        self.max_descriptor_len = bytes;
        self
    }

    /// These limits with `max_buffer_bytes` set.
    #[must_use]
    #[inline]
    pub const fn max_buffer_bytes(mut self, bytes: u64) -> Self {
        self.max_buffer_bytes = bytes;
        self
    }

    /// These limits with `max_total_bytes` set.
    #[must_use]
    #[inline]
    pub const fn max_total_bytes(mut self, bytes: u64) -> Self {
        self.max_total_bytes = bytes;
        self
    }

    /// These limits, refusing buffers that are not `ProducerSynced`.
    #[must_use]
    #[inline]
    pub const fn require_producer_synced(mut self) -> Self {
        self.require_producer_synced = true;
        self
    }

    /// These limits with reader options `read`.
    #[must_use]
    #[inline]
    pub const fn with_read_options<'p>(self, read: ReadOptions<'p>) -> StreamLimits<'p> {
        StreamLimits {
            max_descriptor_len: self.max_descriptor_len,
            max_buffer_bytes: self.max_buffer_bytes,
            max_total_bytes: self.max_total_bytes,
            require_producer_synced: self.require_producer_synced,
            read,
        }
    }
}
