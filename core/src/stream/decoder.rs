//! [`StreamDecoder`]: the sans-I/O reader of a hurray stream.
//!
//! The caller owns every buffer: a descriptor buffer (one descriptor is
//! held at a time), a composite scratch (heads' shapes and partition
//! boxes), and the input chunks it feeds. The decoder copies descriptor
//! bytes only; buffer bytes are handed back as slices of the caller's input.

use zerocopy::FromBytes;

use crate::descriptor::{HEADER_LEN, TensorView};
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::handle::{BufferHandleEntry, ENTRY_LEN};
use crate::{DESCRIPTOR_MAGIC, SyncMode, VERSION_MAJOR, copy_at};

use super::composite::{OpenComposites, Overflow};
use super::error::{Phase, StreamError, StreamErrorKind};
use super::limits::StreamLimits;

/// Bytes of a descriptor that give its length: magic, version,
/// `descriptor_length` (`docs/spec/metadata.md` § Fixed Header).
pub const PREFIX_LEN: usize = 10;

/// What [`StreamDecoder::decode`] found.
///
/// Apart from how `Data` is cut (at the caller's chunk boundaries), the
/// events of a stream are the same however its bytes are split.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Event<'d, 'i> {
    /// Every input byte was taken in; feed more (or call
    /// [`finish`](StreamDecoder::finish) at the end of the input).
    NeedMore,
    /// A descriptor was read and validated (limits and composite rules
    /// included); its buffers' bytes follow. Borrowed from the decoder's
    /// descriptor buffer.
    Descriptor(TensorView<'d>),
    /// Bytes of buffer `buffer` of the current tensor, starting at byte
    /// `offset` of that buffer: a slice of the caller's input, not a copy.
    /// Never empty.
    Data {
        /// The buffer's index in the descriptor's table.
        buffer: u32,
        /// Where in the buffer these bytes start.
        offset: u64,
        /// The bytes.
        bytes: &'i [u8],
    },
    /// The current tensor's last buffer byte has been handed out (right
    /// after its descriptor when it has no data: a composite head, an
    /// empty tensor).
    TensorEnd,
    /// The innermost open composite received its last member and passed
    /// its close-time checks (coverage of a partition).
    CompositeEnd {
        /// Its member count.
        members: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Collecting a descriptor (`have` bytes so far).
    Descriptor,
    /// Handing out buffer bytes.
    Data,
    /// The current tensor ended; composites may close.
    Close,
}

/// What [`StreamDecoder::step`] found: an [`Event`] that borrows
/// nothing, for shells that own their buffers (a refill loop cannot hand
/// out a borrowing event it may have to drop). The descriptor is
/// [`StreamDecoder::current`]; a `Data` piece is the last `len` bytes the
/// call took from its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// As [`Event::NeedMore`].
    NeedMore,
    /// As [`Event::Descriptor`]: read it with [`StreamDecoder::current`].
    Descriptor,
    /// As [`Event::Data`]: the bytes are `input[used - len..used]`.
    Data {
        /// The buffer's index in the descriptor's table.
        buffer: u32,
        /// Where in the buffer these bytes start.
        offset: u64,
        /// How many bytes (never 0).
        len: usize,
    },
    /// As [`Event::TensorEnd`].
    TensorEnd,
    /// As [`Event::CompositeEnd`].
    CompositeEnd {
        /// Its member count.
        members: u32,
    },
}

/// The sans-I/O stream decoder: see the [module documentation](super)
/// for its contract and an example.
///
/// `D` holds the descriptor, `S` the open composites (`&mut [u8]`,
/// `[u8; N]` or, on a host, `Vec<u8>`); `'o` is the lifetime of the reader
/// options' private layout ids.
#[derive(Debug)]
pub struct StreamDecoder<'o, D, S> {
    desc: D,
    scratch: S,
    composites: OpenComposites,
    limits: StreamLimits<'o>,
    state: State,
    failed: Option<StreamError>,
    /// The first bytes of the current descriptor, until its length is known.
    prefix: [u8; PREFIX_LEN],
    /// Bytes of the current descriptor collected.
    have: usize,
    /// Its `descriptor_length` once known (0 before).
    len: usize,
    /// Stream bytes taken in so far.
    pos: u64,
    /// Where the current descriptor starts.
    start: u64,
    /// Descriptors started so far (the current one's index + 1).
    tensors: u64,
    /// Where the buffer table lies in the descriptor, and its length.
    table_at: usize,
    buffers: u32,
    /// The buffer being handed out and the bytes of it handed out.
    buffer: u32,
    offset: u64,
}

/// Takes up to `want - *have` bytes of `rest` into `dst` at `*have`,
/// counting them in `have` and `pos`; returns how many.
#[inline(always)]
fn collect(dst: &mut [u8], have: &mut usize, pos: &mut u64, want: usize, rest: &[u8]) -> usize {
    let take = want.saturating_sub(*have).min(rest.len());
    copy_at(dst, *have, rest.get(..take).unwrap_or_default());
    *have = have.saturating_add(take);
    *pos = pos.saturating_add(take as u64);
    take
}

impl<'o, D: AsRef<[u8]> + AsMut<[u8]>, S: AsRef<[u8]> + AsMut<[u8]>> StreamDecoder<'o, D, S> {
    /// A decoder with [`StreamLimits::DEFAULT`]: descriptors up to
    /// `descriptor.len()` bytes; `composites` holds open composites' heads'
    /// shapes and partition boxes (`8 × rank` bytes per partition or
    /// overlay head, `16 × rank` per partition member; `&mut []` when the
    /// stream has no partition or overlay).
    #[must_use]
    pub const fn new(descriptor: D, composites: S) -> Self {
        Self::with_limits(descriptor, composites, StreamLimits::DEFAULT)
    }

    /// A decoder with the caller's `limits`.
    #[must_use]
    pub const fn with_limits(descriptor: D, composites: S, limits: StreamLimits<'o>) -> Self {
        Self {
            desc: descriptor,
            scratch: composites,
            composites: OpenComposites::new(),
            limits,
            state: State::Descriptor,
            failed: None,
            prefix: [0; PREFIX_LEN],
            have: 0,
            len: 0,
            pos: 0,
            start: 0,
            tensors: 0,
            table_at: 0,
            buffers: 0,
            buffer: 0,
            offset: 0,
        }
    }

    /// Stream bytes taken in so far.
    #[must_use]
    #[inline]
    pub const fn position(&self) -> u64 {
        self.pos
    }

    /// Descriptors started so far: the current tensor's index plus one.
    #[must_use]
    #[inline]
    pub const fn tensors(&self) -> u64 {
        self.tensors
    }

    /// Composites open around the current position (0 at top level; a
    /// head counts from its descriptor on).
    #[must_use]
    #[inline]
    pub const fn depth(&self) -> usize {
        self.composites.depth()
    }

    /// The error that stopped the decoder, if one did (every later call
    /// returns it again).
    #[must_use]
    #[inline]
    pub const fn error(&self) -> Option<StreamError> {
        self.failed
    }

    /// The descriptor whose data is being handed out, from its
    /// [`Event::Descriptor`] until the next descriptor starts.
    #[must_use]
    pub fn current(&self) -> Option<TensorView<'_>> {
        if self.state == State::Descriptor || self.failed.is_some() {
            return None;
        }
        let bytes = self.desc.as_ref().get(..self.len)?;
        TensorView::parse_with(bytes, &self.limits.read).ok()
    }

    const fn fail(&mut self, offset: u64, kind: StreamErrorKind) -> StreamError {
        let e = StreamError::new(offset, self.tensors.saturating_sub(1), kind);
        self.failed = Some(e);
        e
    }

    fn size_of(&self, buffer: u32) -> u64 {
        let at = (buffer as usize)
            .saturating_mul(ENTRY_LEN)
            .saturating_add(self.table_at);
        let bytes = self.desc.as_ref().get(at..).unwrap_or_default();
        BufferHandleEntry::ref_from_prefix(bytes).map_or(0, |(e, _)| e.byte_size.get())
    }

    /// Bytes of the current tensor's data not yet handed out.
    fn data_left(&self) -> u64 {
        (self.buffer..self.buffers)
            .fold(0u64, |n, i| n.saturating_add(self.size_of(i)))
            .saturating_sub(self.offset)
    }

    /// Whether [`decode`](Self::decode) would report something other than
    /// [`Event::NeedMore`] for `input` (an event, or an error), without
    /// taking anything in.
    ///
    /// A shell that owns its input buffer uses it to refill until the
    /// next `decode` is sure to hand out an event, and so can return that
    /// borrowing event from its loop (`hurray_io::stream::StreamReader`).
    #[must_use]
    pub fn ready(&self, input: &[u8]) -> bool {
        if self.failed.is_some() {
            return true;
        }
        match self.state {
            State::Data => self.data_left() == 0 || !input.is_empty(),
            State::Close if self.composites.top_is_complete() => true,
            State::Close => self.descriptor_ready(0, 0, input),
            State::Descriptor => self.descriptor_ready(self.have, self.len, input),
        }
    }

    /// Whether `input` completes (or breaks) the descriptor being collected:
    /// `have` bytes of it taken, its length `len` (0 while unknown).
    fn descriptor_ready(&self, have: usize, len: usize, input: &[u8]) -> bool {
        if len > 0 {
            return input.len() >= len.saturating_sub(have);
        }
        let missing = PREFIX_LEN.saturating_sub(have);
        if input.len() < missing {
            return false;
        }
        // The prefix is complete with this input: its length field, or an
        // error from `check_prefix`, decides.
        let mut p = [0u8; PREFIX_LEN];
        copy_at(&mut p, 0, self.prefix.get(..have).unwrap_or_default());
        copy_at(&mut p, have, input.get(..missing).unwrap_or_default());
        match self.check_prefix(p, self.start_if_new(have)) {
            Ok(length) => input.len() >= (length as usize).saturating_sub(have),
            Err(_) => true,
        }
    }

    /// Where a descriptor with `have` bytes taken starts.
    const fn start_if_new(&self, have: usize) -> u64 {
        if have == 0 { self.pos } else { self.start }
    }

    /// Takes in `input` and reports the next event, with the number of
    /// input bytes it took (0 for `TensorEnd` and `CompositeEnd`; all of
    /// them for `NeedMore`). Feed the rest of the input again until
    /// `NeedMore`.
    ///
    /// # Errors
    /// The first fault of the stream ([`StreamErrorKind`]); the decoder
    /// then stays failed and returns the same error.
    #[inline]
    pub fn decode<'d, 'i>(
        &'d mut self,
        input: &'i [u8],
    ) -> Result<(usize, Event<'d, 'i>), StreamError> {
        let (used, step) = self.advance(input)?;
        match step {
            Step::NeedMore => Ok((used, Event::NeedMore)),
            Step::TensorEnd => Ok((used, Event::TensorEnd)),
            Step::CompositeEnd { members } => Ok((used, Event::CompositeEnd { members })),
            Step::Data {
                buffer,
                offset,
                len,
            } => {
                let bytes = input
                    .get(used.saturating_sub(len)..used)
                    .unwrap_or_default();
                Ok((
                    used,
                    Event::Data {
                        buffer,
                        offset,
                        bytes,
                    },
                ))
            }
            Step::Descriptor => self.accept(used),
        }
    }

    /// Reads the complete descriptor now in the buffer, checks it against
    /// the limits and the open composites, and hands it out.
    #[inline(always)]
    fn accept<'d, 'i>(&'d mut self, used: usize) -> Result<(usize, Event<'d, 'i>), StreamError> {
        let start = self.start;
        let len = self.len;
        let tensor = self.tensors.saturating_sub(1);
        let Self {
            desc,
            scratch,
            composites,
            limits,
            failed,
            ..
        } = self;
        let desc: &'d D = desc;
        let bytes: &'d [u8] = desc.as_ref().get(..len).unwrap_or_default();
        match check(bytes, start, composites, scratch.as_mut(), limits) {
            Ok((view, table_at)) => {
                let buffers = u32::try_from(view.buffers().len()).unwrap_or(u32::MAX);
                self.table_at = table_at;
                self.buffers = buffers;
                self.buffer = 0;
                self.offset = 0;
                self.state = State::Data;
                Ok((used, Event::Descriptor(view)))
            }
            Err((offset, kind)) => {
                let e = StreamError::new(offset, tensor, kind);
                *failed = Some(e);
                Err(e)
            }
        }
    }

    /// As [`decode`](Self::decode), but the event borrows nothing (see
    /// [`Step`]). A `Descriptor` step has been validated in full.
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn step(&mut self, input: &[u8]) -> Result<(usize, Step), StreamError> {
        let (used, step) = self.advance(input)?;
        if step == Step::Descriptor {
            self.accept(used)?;
        }
        Ok((used, step))
    }

    /// The machine: everything but checking and handing out a descriptor.
    fn advance(&mut self, input: &[u8]) -> Result<(usize, Step), StreamError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut used = 0usize;
        loop {
            let rest = input.get(used..).unwrap_or_default();
            match self.state {
                State::Descriptor => {
                    if self.have == 0 && rest.is_empty() {
                        return Ok((used, Step::NeedMore));
                    }
                    if self.have == 0 {
                        self.start = self.pos;
                        self.tensors = self.tensors.saturating_add(1);
                    }
                    if self.len == 0 {
                        let (have, pos) = (&mut self.have, &mut self.pos);
                        let take = collect(&mut self.prefix, have, pos, PREFIX_LEN, rest);
                        used = used.saturating_add(take);
                        if self.have < PREFIX_LEN {
                            return Ok((used, Step::NeedMore));
                        }
                        let p = self.prefix;
                        let checked = self.check_prefix(p, self.start);
                        let length = checked.map_err(|(at, kind)| self.fail(at, kind))?;
                        copy_at(self.desc.as_mut(), 0, &p);
                        self.len = length as usize;
                        continue;
                    }
                    let (have, pos) = (&mut self.have, &mut self.pos);
                    let take = collect(self.desc.as_mut(), have, pos, self.len, rest);
                    used = used.saturating_add(take);
                    if self.have < self.len {
                        return Ok((used, Step::NeedMore));
                    }
                    return Ok((used, Step::Descriptor));
                }
                State::Data => {
                    if self.buffer >= self.buffers {
                        self.state = State::Close;
                        return Ok((used, Step::TensorEnd));
                    }
                    let size = self.size_of(self.buffer);
                    let left = size.saturating_sub(self.offset);
                    if left == 0 {
                        self.buffer = self.buffer.saturating_add(1);
                        self.offset = 0;
                        continue;
                    }
                    if rest.is_empty() {
                        return Ok((used, Step::NeedMore));
                    }
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(rest.len());
                    let offset = self.offset;
                    self.offset = self.offset.saturating_add(take as u64);
                    self.pos = self.pos.saturating_add(take as u64);
                    used = used.saturating_add(take);
                    return Ok((
                        used,
                        Step::Data {
                            buffer: self.buffer,
                            offset,
                            len: take,
                        },
                    ));
                }
                State::Close => {
                    if self.composites.top_is_complete() {
                        let pos = self.pos;
                        return match self.composites.close_top(self.scratch.as_ref()) {
                            Ok(members) => Ok((used, Step::CompositeEnd { members })),
                            Err(e) => Err(self.fail(pos, StreamErrorKind::Composite(e))),
                        };
                    }
                    self.state = State::Descriptor;
                    self.have = 0;
                    self.len = 0;
                }
            }
        }
    }

    /// Checks the first [`PREFIX_LEN`] bytes of a descriptor that starts at
    /// stream byte `start`: magic, major version, a length that can hold a
    /// header and fits the limits. Returns that length, or where and what
    /// is wrong.
    fn check_prefix(&self, p: [u8; PREFIX_LEN], start: u64) -> Result<u32, (u64, StreamErrorKind)> {
        let desc_err = |at: u32, kind| StreamErrorKind::Descriptor(DescriptorError::new(at, kind));
        let [m0, m1, m2, m3, major, minor, l0, l1, l2, l3] = p;
        let magic = [m0, m1, m2, m3];
        if magic != DESCRIPTOR_MAGIC {
            return Err((start, desc_err(0, DescriptorErrorKind::BadMagic(magic))));
        }
        if major != VERSION_MAJOR {
            let kind = DescriptorErrorKind::UnsupportedVersion { major, minor };
            return Err((start.saturating_add(4), desc_err(4, kind)));
        }
        let length = u32::from_le_bytes([l0, l1, l2, l3]);
        let at_len = start.saturating_add(6);
        if (length as usize) < HEADER_LEN {
            let kind = DescriptorErrorKind::LengthMismatch {
                declared: length,
                consumed: 20, // HEADER_LEN
            };
            return Err((at_len, desc_err(6, kind)));
        }
        let room = u32::try_from(self.desc.as_ref().len()).unwrap_or(u32::MAX);
        let limit = self.limits.max_descriptor_len.min(room);
        if length > limit {
            return Err((at_len, StreamErrorKind::DescriptorTooLong { length, limit }));
        }
        let end = start.saturating_add(u64::from(length));
        if end > self.limits.max_total_bytes {
            let kind = StreamErrorKind::TotalTooLarge {
                needed: end,
                limit: self.limits.max_total_bytes,
            };
            return Err((at_len, kind));
        }
        Ok(length)
    }

    /// Declares the end of the input: `Ok` only between two top-level
    /// tensors. Events not yet taken are settled first (a composite that
    /// is complete is closed, with its close-time checks).
    ///
    /// # Errors
    /// [`StreamErrorKind::UnexpectedEof`] inside a descriptor or a tensor's
    /// data; [`StreamErrorKind::Composite`] with
    /// [`CompositeErrorKind::Torn`](crate::CompositeErrorKind::Torn) inside
    /// a composite; the decoder's earlier error, if it failed.
    pub fn finish(&mut self) -> Result<(), StreamError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let inside = match self.state {
            State::Descriptor if self.have > 0 => Some(Phase::Descriptor),
            State::Data if self.data_left() > 0 => Some(Phase::Data),
            _ => None,
        };
        if let Some(inside) = inside {
            return Err(self.fail(self.pos, StreamErrorKind::UnexpectedEof { inside }));
        }
        while self.composites.top_is_complete() {
            if let Err(e) = self.composites.close_top(self.scratch.as_ref()) {
                return Err(self.fail(self.pos, StreamErrorKind::Composite(e)));
            }
        }
        if let Some(torn) = self.composites.torn() {
            return Err(self.fail(self.pos, StreamErrorKind::Composite(torn)));
        }
        self.state = State::Descriptor;
        self.have = 0;
        self.len = 0;
        Ok(())
    }
}

/// Validates a whole descriptor of the stream: the descriptor itself, each
/// buffer against the limits, the stream's total, and the open composites.
/// Returns the view and where its buffer table lies; on error the stream
/// offset and kind.
#[inline(always)]
fn check<'d>(
    bytes: &'d [u8],
    start: u64,
    composites: &mut OpenComposites,
    scratch: &mut [u8],
    limits: &StreamLimits<'_>,
) -> Result<(TensorView<'d>, usize), (u64, StreamErrorKind)> {
    let view = TensorView::parse_with(bytes, &limits.read).map_err(|e| {
        (
            start.saturating_add(u64::from(e.offset())),
            StreamErrorKind::Descriptor(e),
        )
    })?;
    let table = view.buffers().as_bytes();
    // The table is a sub-slice of `bytes`: its offset is the difference of
    // the two addresses (no pointer is dereferenced).
    let table_at = (table.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
    let mut total = start.saturating_add(bytes.len() as u64);
    // The raw entries: already validated, read without decoding again.
    for (i, e) in (0u32..).zip(view.buffers().entries()) {
        let entry = (i as usize)
            .saturating_mul(ENTRY_LEN)
            .saturating_add(table_at);
        let at = start.saturating_add(entry as u64);
        let size = e.byte_size.get();
        if limits.require_producer_synced && e.sync_mode != SyncMode::ProducerSynced.code() {
            let kind = StreamErrorKind::NotProducerSynced {
                buffer: i,
                sync_mode: e.sync_mode,
            };
            let sync_at = core::mem::offset_of!(BufferHandleEntry, sync_mode) as u64;
            return Err((at.saturating_add(sync_at), kind));
        }
        if size > limits.max_buffer_bytes {
            let kind = StreamErrorKind::BufferTooLarge {
                buffer: i,
                size,
                limit: limits.max_buffer_bytes,
            };
            return Err((at, kind));
        }
        total = total.saturating_add(size);
        if total > limits.max_total_bytes {
            let kind = StreamErrorKind::TotalTooLarge {
                needed: total,
                limit: limits.max_total_bytes,
            };
            return Err((at, kind));
        }
    }
    composites.push(scratch, &view).map_err(|o| {
        let kind = match o {
            Overflow::Rule(e) => StreamErrorKind::Composite(e),
            Overflow::Scratch { needed, available } => {
                StreamErrorKind::ScratchTooSmall { needed, available }
            }
        };
        (start, kind)
    })?;
    Ok((view, table_at))
}
