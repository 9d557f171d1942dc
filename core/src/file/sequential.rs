//! [`SequentialReader`]: a file read forward without seeking, in bounded
//! memory (`docs/spec/file-format.md` § Sequential reader), for firmware
//! that reads flash or an SD card block by block.
//!
//! Sans-I/O and incremental (httparse's shape): the caller feeds chunks of
//! any size, the reader says how many bytes it consumed and at most one
//! event per call. It holds the header and one descriptor at a time in the
//! caller's buffer and passes data through as slices of the caller's input,
//! never copying it. Every boundary comes from offset arithmetic: the
//! header, padding to `first_descriptor_offset`, each descriptor (strict
//! [`TensorView`]), padding to the data alignment, each buffer, padding.
//! Padding must be zero. Between tensors it accepts the spec's padding (to
//! the data alignment) and the reference writer's (to 8), which differ only
//! in zero bytes before the next descriptor (no descriptor starts with a
//! zero byte). The tensor region ends after `tensor_count_hint` tensors, or
//! at the end offset the caller read from the trailer; what follows (KV
//! section, index, trailer) is left to the random-access reader. Composite
//! rules, which need several descriptors at once, are not checked here.
//!
//! ```
//! use hurray_core::file::{FileWriter, IndexEntry, SeqEvent, SequentialReader, WriterOptions};
//! use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
//!
//! let buffers = [BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
//! let mut d = [0u8; 64];
//! let n = TensorDescriptor::row_major(ElementType::UInt8, &[8], &buffers).encode(&mut d)?;
//! let mut index = [IndexEntry::default(); 1];
//! let options = WriterOptions { tensor_count_hint: 1, ..Default::default() };
//! let mut w = FileWriter::new(Vec::new(), options, &mut index)?;
//! w.write_tensor("x", &TensorView::parse(&d[..n])?, &[&[9; 8]])?;
//! let file = w.finish(&[])?;
//!
//! let mut buf = [0u8; 256];
//! let mut r = SequentialReader::new(&mut buf, None);
//! let (mut input, mut data) = (&file[..], Vec::new());
//! loop {
//!     let (used, event) = r.feed(&input[..input.len().min(100)])?; // 100-byte blocks
//!     input = &input[used..];
//!     match event {
//!         Some(SeqEvent::Data { bytes, .. }) => data.extend_from_slice(bytes),
//!         Some(SeqEvent::End { .. }) => break,
//!         _ => {}
//!     }
//! }
//! assert_eq!(data, [9; 8]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use zerocopy::FromBytes;
use zerocopy::little_endian::U32;

use super::align_up;
use super::error::{FileError, FileErrorKind};
use super::header::{FILE_HEADER_LEN, FileHeader, UNKNOWN_TENSOR_COUNT};
use crate::descriptor::{FixedHeader, HEADER_LEN, TensorView};

/// Where a descriptor's `descriptor_length` lies, and the bytes read before
/// it is known.
const LEN_AT: usize = core::mem::offset_of!(FixedHeader, descriptor_length);
const LEN_END: usize = LEN_AT + 4;

/// What the sequential reader found.
#[derive(Debug)]
pub enum SeqEvent<'x> {
    /// The header, checked.
    Header(FileHeader),
    /// A tensor's descriptor, checked, at `offset` in the file.
    Descriptor {
        /// Its offset in the file.
        offset: u64,
        /// The descriptor (borrowed from the reader's buffer).
        view: TensorView<'x>,
    },
    /// A chunk of buffer `buffer` of the current tensor, starting at
    /// `offset` within that buffer.
    Data {
        /// Index in the buffer table.
        buffer: u32,
        /// Offset of the chunk within the buffer.
        offset: u64,
        /// The bytes (borrowed from the input).
        bytes: &'x [u8],
    },
    /// The current tensor's data is complete.
    TensorEnd,
    /// The tensor region is over; `offset` is where it ended.
    End {
        /// The first byte after the region.
        offset: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    /// Zeros up to `first_descriptor_offset`.
    PadToFirst {
        first: u64,
    },
    /// At a tensor boundary; zeros allowed up to `limit`.
    Between {
        limit: u64,
    },
    Descriptor,
    Data {
        buffer: u32,
        left: u64,
        done: u64,
    },
    /// Zeros to the data alignment, then buffer `next` (or, past the
    /// last, the tensor's end).
    PadToBuffer {
        next: u32,
    },
    PadToEight,
    Done,
}

/// A forward-only reader of a file's tensor region; see the module
/// documentation.
#[derive(Debug)]
pub struct SequentialReader<'b> {
    buf: &'b mut [u8],
    state: State,
    offset: u64,
    filled: usize,
    alignment: u64,
    remaining: Option<u64>,
    end: Option<u64>,
    desc_at: u64,
    /// Buffers of the descriptor read last.
    buffers: usize,
}

impl<'b> SequentialReader<'b> {
    /// A reader keeping the header and one descriptor in `buf` (at least
    /// 64 bytes; as long as the longest descriptor expected). `region_end`
    /// is the tensor region's end when known (the trailer's `kv_offset`,
    /// else `index_offset`); without it the header's `tensor_count_hint`
    /// must be known.
    pub const fn new(buf: &'b mut [u8], region_end: Option<u64>) -> Self {
        Self {
            buf,
            state: State::Header,
            offset: 0,
            filled: 0,
            alignment: 1,
            remaining: None,
            end: region_end,
            desc_at: 0,
            buffers: 0,
        }
    }

    /// Bytes consumed so far: the file offset of the next byte.
    #[must_use]
    pub const fn offset(&self) -> u64 {
        self.offset
    }

    /// Consumes a prefix of `input` and returns its length and at most one
    /// event. `(n, None)` with `n == input.len()` means: feed more.
    ///
    /// # Errors
    /// The first rule broken; the reader is then stuck.
    pub fn feed<'x>(
        &'x mut self,
        input: &'x [u8],
    ) -> Result<(usize, Option<SeqEvent<'x>>), FileError> {
        let mut used = 0usize;
        loop {
            let rest = input.get(used..).unwrap_or_default();
            match self.state {
                State::Done => return Ok((used, None)),
                State::Header => {
                    used = used.saturating_add(self.fill(rest, FILE_HEADER_LEN)?);
                    if self.filled < FILE_HEADER_LEN {
                        return Ok((used, None));
                    }
                    let header = self
                        .buf
                        .get(..FILE_HEADER_LEN)
                        .and_then(|b| FileHeader::read_from_bytes(b).ok())
                        .ok_or(FileError::new(0, FileErrorKind::BadMagic))?;
                    header.check()?;
                    self.alignment = u64::from(header.data_buffer_alignment.get());
                    let hint = header.tensor_count_hint.get();
                    self.remaining = (hint != UNKNOWN_TENSOR_COUNT).then_some(hint);
                    if self.remaining.is_none() && self.end.is_none() {
                        return Err(FileError::new(
                            core::mem::offset_of!(FileHeader, tensor_count_hint) as u64,
                            FileErrorKind::NeedsTable { entries: hint },
                        ));
                    }
                    self.filled = 0;
                    self.state = State::PadToFirst {
                        first: header.first_descriptor_offset.get(),
                    };
                    return Ok((used, Some(SeqEvent::Header(header))));
                }
                State::PadToFirst { first } => {
                    used = used.saturating_add(self.zeros(rest, first)?);
                    if self.offset < first {
                        return Ok((used, None));
                    }
                    self.state = State::Between { limit: first };
                }
                State::Between { limit } => {
                    if self.remaining == Some(0) || self.end.is_some_and(|e| self.offset >= e) {
                        self.state = State::Done;
                        let offset = self.offset;
                        return Ok((used, Some(SeqEvent::End { offset })));
                    }
                    let Some(&b) = rest.first() else {
                        return Ok((used, None));
                    };
                    if b == 0 {
                        // Padding before the next descriptor, in 8-byte steps.
                        if self.offset >= limit {
                            return Err(FileError::new(self.offset, FileErrorKind::NonZeroPadding));
                        }
                        let target = align_up(self.offset.saturating_add(1), 8).unwrap_or(u64::MAX);
                        let target = self.end.map_or(target, |e| target.min(e));
                        used = used.saturating_add(self.zeros(rest, target)?);
                        continue;
                    }
                    if !self.offset.is_multiple_of(8) {
                        return Err(FileError::new(self.offset, FileErrorKind::NonZeroPadding));
                    }
                    self.desc_at = self.offset;
                    self.filled = 0;
                    self.state = State::Descriptor;
                }
                State::Descriptor => {
                    let want = if self.filled < LEN_END {
                        LEN_END
                    } else {
                        let len = self
                            .buf
                            .get(LEN_AT..LEN_END)
                            .and_then(|b| U32::read_from_bytes(b).ok())
                            .map_or(0, |v| v.get() as usize);
                        if len < HEADER_LEN || len > self.buf.len() {
                            let at = self.desc_at.saturating_add(LEN_AT as u64);
                            return Err(self.no_room(at, len));
                        }
                        len
                    };
                    used = used.saturating_add(self.fill(rest, want)?);
                    if self.filled < want {
                        return Ok((used, None));
                    }
                    if want == LEN_END {
                        continue;
                    }
                    let at = self.desc_at;
                    let bytes = self.buf.get(..self.filled).unwrap_or_default();
                    let view = TensorView::parse(bytes)
                        .map_err(|e| FileError::new(at, FileErrorKind::Descriptor(e)))?;
                    self.remaining = self.remaining.map(|r| r.saturating_sub(1));
                    self.buffers = view.buffers().len();
                    self.state = if self.buffers == 0 {
                        State::PadToEight
                    } else {
                        State::PadToBuffer { next: 0 }
                    };
                    return Ok((used, Some(SeqEvent::Descriptor { offset: at, view })));
                }
                State::Data { buffer, left, done } => {
                    if left == 0 {
                        self.state = State::PadToBuffer {
                            next: buffer.saturating_add(1),
                        };
                        continue;
                    }
                    if rest.is_empty() {
                        return Ok((used, None));
                    }
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(rest.len());
                    let bytes = rest.get(..n).unwrap_or_default();
                    used = used.saturating_add(n);
                    self.offset = self.offset.saturating_add(n as u64);
                    self.state = State::Data {
                        buffer,
                        left: left.saturating_sub(n as u64),
                        done: done.saturating_add(n as u64),
                    };
                    return Ok((
                        used,
                        Some(SeqEvent::Data {
                            buffer,
                            offset: done,
                            bytes,
                        }),
                    ));
                }
                State::PadToBuffer { next } => {
                    if next as usize >= self.buffers {
                        self.state = State::PadToEight;
                        return Ok((used, Some(SeqEvent::TensorEnd)));
                    }
                    let target = self.aligned(self.offset)?;
                    used = used.saturating_add(self.zeros(rest, target)?);
                    if self.offset < target {
                        return Ok((used, None));
                    }
                    self.state = self.start_buffer(next)?;
                }
                State::PadToEight => {
                    let target = align_up(self.offset, 8).unwrap_or(u64::MAX);
                    used = used.saturating_add(self.zeros(rest, target)?);
                    if self.offset < target {
                        return Ok((used, None));
                    }
                    let limit = self.aligned(self.offset)?;
                    self.state = State::Between { limit };
                    if self.buffers == 0 {
                        return Ok((used, Some(SeqEvent::TensorEnd)));
                    }
                }
            }
        }
    }

    fn aligned(&self, offset: u64) -> Result<u64, FileError> {
        align_up(offset, self.alignment).ok_or(FileError::new(offset, FileErrorKind::DataPlacement))
    }

    fn start_buffer(&self, i: u32) -> Result<State, FileError> {
        let size = TensorView::parse(self.buf.get(..self.filled).unwrap_or_default())
            .ok()
            .and_then(|v| v.buffers().get(i as usize))
            .map_or(0, |h| h.byte_size());
        let end = self.offset.checked_add(size);
        if self.end.is_some_and(|e| end.is_none_or(|x| x > e)) {
            return Err(FileError::new(self.desc_at, FileErrorKind::DataPlacement));
        }
        Ok(State::Data {
            buffer: i,
            left: size,
            done: 0,
        })
    }

    /// [`FileErrorKind::Truncated`] at `at`: `needed` bytes do not fit the
    /// buffer.
    const fn no_room(&self, at: u64, needed: usize) -> FileError {
        let available = self.buf.len() as u64;
        let needed = needed as u64;
        FileError::new(at, FileErrorKind::Truncated { needed, available })
    }

    /// Copies from `rest` into the buffer until it holds `want` bytes.
    fn fill(&mut self, rest: &[u8], want: usize) -> Result<usize, FileError> {
        let need = want.saturating_sub(self.filled);
        let n = need.min(rest.len());
        let (Some(dst), Some(src)) = (
            self.buf.get_mut(self.filled..self.filled.saturating_add(n)),
            rest.get(..n),
        ) else {
            return Err(self.no_room(self.offset, want));
        };
        crate::copy_at(dst, 0, src);
        self.filled = self.filled.saturating_add(n);
        self.offset = self.offset.saturating_add(n as u64);
        Ok(n)
    }

    /// Consumes zero bytes from `rest` up to file offset `target`.
    fn zeros(&mut self, rest: &[u8], target: u64) -> Result<usize, FileError> {
        let want = usize::try_from(target.saturating_sub(self.offset)).unwrap_or(usize::MAX);
        let n = want.min(rest.len());
        let chunk = rest.get(..n).unwrap_or_default();
        if let Some(i) = chunk.iter().position(|&b| b != 0) {
            let at = self.offset.saturating_add(i as u64);
            return Err(FileError::new(at, FileErrorKind::NonZeroPadding));
        }
        self.offset = self.offset.saturating_add(n as u64);
        Ok(n)
    }
}
