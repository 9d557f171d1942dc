//! [`StreamWriter`]: writes a hurray stream to an [`embedded_io::Write`]
//! sink, checking what it is given against the descriptors it writes.

use embedded_io::Write;

use crate::descriptor::TensorView;

use super::composite::{OpenComposites, Overflow};
use super::error::WriteError;

/// Writes tensors one after the other: each descriptor's bytes, then its
/// buffers' bytes in table order, with nothing between (the stream of
/// `docs/spec/stream.md`).
///
/// Before a byte of a tensor is written, the writer checks that the
/// buffers given match the descriptor's table (count and each size) and
/// that the descriptor fits the composite it belongs to (the rules the
/// decoder checks, in the same scratch layout); [`finish`](Self::finish)
/// refuses to end inside a tensor or a composite. A tensor's data may also
/// be written in pieces ([`begin_tensor`](Self::begin_tensor),
/// [`write_data`](Self::write_data), [`end_tensor`](Self::end_tensor)), as
/// firmware producing samples would.
///
/// ```
/// use hurray_core::stream::StreamWriter;
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
///
/// let buffers = [BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut bytes = [0u8; 64];
/// let n = TensorDescriptor::row_major(ElementType::UInt8, &[8], &buffers).encode(&mut bytes)?;
/// let view = TensorView::parse(&bytes[..n])?;
///
/// let mut out = [0u8; 128];
/// let mut sink = &mut out[..];
/// let mut w = StreamWriter::new(&mut sink, &mut []);
/// w.write_tensor(&view, &[&[1, 2, 3, 4, 5, 6, 7, 8]])?;
/// assert!(w.write_tensor(&view, &[&[1, 2, 3]]).is_err()); // 3 bytes, the table says 8
/// assert_eq!(w.finish()?, ());
/// assert_eq!(w.position(), n as u64 + 8);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct StreamWriter<W: Write, S: AsMut<[u8]>> {
    sink: W,
    scratch: S,
    composites: OpenComposites,
    /// Data bytes the open tensor still takes (`None`: no tensor open).
    open: Option<u64>,
    pos: u64,
    tensors: u64,
}

impl<W: Write, S: AsMut<[u8]>> StreamWriter<W, S> {
    /// A writer to `sink`; `composites` is scratch for the composite rules
    /// (as [`StreamDecoder::new`](super::StreamDecoder::new); `&mut []`
    /// when no partition or overlay is written).
    pub const fn new(sink: W, composites: S) -> Self {
        Self {
            sink,
            scratch: composites,
            composites: OpenComposites::new(),
            open: None,
            pos: 0,
            tensors: 0,
        }
    }

    /// Bytes written so far.
    #[must_use]
    #[inline]
    pub const fn position(&self) -> u64 {
        self.pos
    }

    /// Tensors begun so far.
    #[must_use]
    #[inline]
    pub const fn tensors(&self) -> u64 {
        self.tensors
    }

    /// The sink.
    pub const fn sink(&mut self) -> &mut W {
        &mut self.sink
    }

    /// Gives back the sink (whatever was written stays written).
    pub fn into_inner(self) -> W {
        self.sink
    }

    /// Composites open around the next tensor (0 at top level).
    #[must_use]
    #[inline]
    pub const fn depth(&self) -> usize {
        self.composites.depth()
    }

    /// Whether a tensor is open for data.
    #[must_use]
    #[inline]
    pub const fn in_tensor(&self) -> bool {
        self.open.is_some()
    }

    fn put(&mut self, mut bytes: &[u8]) -> Result<(), WriteError<W::Error>> {
        while !bytes.is_empty() {
            let n = self.sink.write(bytes).map_err(WriteError::Sink)?;
            if n == 0 {
                return Err(WriteError::SinkFull);
            }
            let n = n.min(bytes.len());
            self.pos = self.pos.saturating_add(n as u64);
            bytes = bytes.get(n..).unwrap_or_default();
        }
        Ok(())
    }

    /// Writes one tensor: `view`'s bytes, then `buffers` (one slice per
    /// table entry, each exactly its declared size).
    ///
    /// # Errors
    /// [`WriteError::BufferCount`] / [`WriteError::BufferSize`] when the
    /// buffers do not match the table, [`WriteError::Composite`] when the
    /// tensor breaks its composite's rules, [`WriteError::DataIncomplete`]
    /// when a tensor begun with [`begin_tensor`](Self::begin_tensor) is not
    /// complete (nothing written in these cases); [`WriteError::Sink`] when
    /// the sink fails.
    pub fn write_tensor(
        &mut self,
        view: &TensorView<'_>,
        buffers: &[&[u8]],
    ) -> Result<(), WriteError<W::Error>> {
        let table = view.buffers();
        if buffers.len() != table.len() {
            return Err(WriteError::BufferCount {
                expected: u32::try_from(table.len()).unwrap_or(u32::MAX),
                found: buffers.len() as u64,
            });
        }
        for (i, (h, b)) in (0u32..).zip(table.iter().zip(buffers)) {
            if h.byte_size() != b.len() as u64 {
                return Err(WriteError::BufferSize {
                    buffer: i,
                    expected: h.byte_size(),
                    found: b.len() as u64,
                });
            }
        }
        self.begin_tensor(view)?;
        for b in buffers {
            self.write_data(b)?;
        }
        self.end_tensor()
    }

    /// Writes `view`'s bytes and opens the tensor for its data, which
    /// [`write_data`](Self::write_data) then takes in any pieces (all
    /// buffers back to back, in table order).
    ///
    /// # Errors
    /// As [`write_tensor`](Self::write_tensor).
    pub fn begin_tensor(&mut self, view: &TensorView<'_>) -> Result<(), WriteError<W::Error>> {
        if let Some(remaining) = self.open {
            return Err(WriteError::DataIncomplete { remaining });
        }
        let data = view
            .buffers()
            .iter()
            .fold(0u64, |n, h| n.saturating_add(h.byte_size()));
        self.composites
            .push(self.scratch.as_mut(), view)
            .map_err(|o| match o {
                Overflow::Rule(e) => WriteError::Composite(e),
                Overflow::Scratch { needed, available } => {
                    WriteError::ScratchTooSmall { needed, available }
                }
            })?;
        self.tensors = self.tensors.saturating_add(1);
        self.open = Some(data);
        self.put(view.as_bytes())
    }

    /// Writes the next `bytes` of the open tensor's data.
    ///
    /// # Errors
    /// [`WriteError::NoOpenTensor`], [`WriteError::DataOverrun`] (nothing
    /// written), [`WriteError::Sink`].
    pub fn write_data(&mut self, bytes: &[u8]) -> Result<(), WriteError<W::Error>> {
        let Some(remaining) = self.open else {
            return Err(WriteError::NoOpenTensor);
        };
        let found = bytes.len() as u64;
        if found > remaining {
            return Err(WriteError::DataOverrun { remaining, found });
        }
        self.open = Some(remaining.saturating_sub(found));
        self.put(bytes)
    }

    /// Ends the open tensor (its data must be complete) and closes the
    /// composites it completes.
    ///
    /// # Errors
    /// [`WriteError::DataIncomplete`], [`WriteError::NoOpenTensor`],
    /// [`WriteError::Composite`] when a partition closes with a gap.
    pub fn end_tensor(&mut self) -> Result<(), WriteError<W::Error>> {
        match self.open {
            None => return Err(WriteError::NoOpenTensor),
            Some(0) => self.open = None,
            Some(remaining) => return Err(WriteError::DataIncomplete { remaining }),
        }
        while self.composites.top_is_complete() {
            self.composites
                .close_top(self.scratch.as_mut())
                .map_err(WriteError::Composite)?;
        }
        Ok(())
    }

    /// Ends the stream: no tensor may be open and no composite may wait
    /// for members; then flushes the sink.
    ///
    /// # Errors
    /// [`WriteError::DataIncomplete`], [`WriteError::Composite`] (torn),
    /// [`WriteError::Sink`].
    pub fn finish(&mut self) -> Result<(), WriteError<W::Error>> {
        if let Some(remaining) = self.open {
            return Err(WriteError::DataIncomplete { remaining });
        }
        if let Some(torn) = self.composites.torn() {
            return Err(WriteError::Composite(torn));
        }
        self.sink.flush().map_err(WriteError::Sink)
    }
}
