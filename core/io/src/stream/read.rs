//! [`StreamReader`]: a [`Read`] as stream events.

use std::io::{self, Read};

use hurray_core::TensorView;
use hurray_core::stream::{Event, Step, StreamDecoder, StreamError, StreamLimits};

/// What a reader allocates, once, when it is made (never more, whatever
/// the stream says), and the core's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'o> {
    /// Bytes read from the source at a time; a `Data` event is at most
    /// this long.
    pub input_buffer: usize,
    /// The longest descriptor accepted (the descriptor buffer's length).
    pub descriptor_buffer: usize,
    /// Scratch for open composites' heads and partition boxes.
    pub composite_scratch: usize,
    /// The core decoder's limits.
    pub limits: StreamLimits<'o>,
}

impl Options<'static> {
    /// 64 KiB of input, descriptors up to 64 KiB, 64 KiB of composite
    /// scratch (a rank-2 partition of 2,000 members), no other limit.
    pub const DEFAULT: Self = Self {
        input_buffer: 64 << 10,
        descriptor_buffer: 64 << 10,
        composite_scratch: 64 << 10,
        limits: StreamLimits::DEFAULT,
    };
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options::DEFAULT
    }
}

/// Why a [`StreamReader`] stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// The source failed.
    Io(io::Error),
    /// The stream is invalid (typed, with its byte offset).
    Stream(StreamError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "reading the stream: {e}"),
            Self::Stream(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Stream(e) => Some(e),
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<StreamError> for ReadError {
    fn from(e: StreamError) -> Self {
        Self::Stream(e)
    }
}

impl From<ReadError> for io::Error {
    /// A stream error is `InvalidData`, with the typed error as its source.
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Io(e) => e,
            ReadError::Stream(e) => io::Error::new(io::ErrorKind::InvalidData, e),
        }
    }
}

/// One tensor collected by [`StreamReader::next_tensor`]: its descriptor's
/// bytes and each buffer's bytes (owned copies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// The descriptor's bytes (validated).
    pub descriptor: Vec<u8>,
    /// Each buffer's bytes, in table order.
    pub buffers: Vec<Vec<u8>>,
    /// Composites open around it, itself included if it is a head.
    pub depth: usize,
    /// Composites its end completed (innermost first): their member counts.
    pub closes: Vec<u32>,
}

impl Tensor {
    /// The descriptor as a view.
    ///
    /// # Panics
    /// Never for a `Tensor` from [`StreamReader::next_tensor`] (the bytes
    /// were validated with the reader's options); bytes changed since, or
    /// private codes the strict reader refuses, may fail.
    pub fn view(&self) -> Result<TensorView<'_>, hurray_core::DescriptorError> {
        TensorView::parse(&self.descriptor)
    }
}

/// Reads a hurray stream from `R`, as the core decoder's events.
///
/// The reader owns three buffers, sized by [`Options`] when it is made;
/// the stream never makes it allocate more. `Data` events are slices of
/// its input buffer (no copy beyond the one `read` makes).
#[derive(Debug)]
pub struct StreamReader<'o, R> {
    inner: R,
    dec: StreamDecoder<'o, Vec<u8>, Vec<u8>>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    done: bool,
}

impl<R: Read> StreamReader<'static, R> {
    /// A reader with [`Options::DEFAULT`].
    pub fn new(inner: R) -> Self {
        Self::with_options(inner, Options::DEFAULT)
    }
}

impl<'o, R: Read> StreamReader<'o, R> {
    /// A reader with the caller's options.
    pub fn with_options(inner: R, options: Options<'o>) -> Self {
        Self {
            inner,
            dec: StreamDecoder::with_limits(
                vec![0; options.descriptor_buffer],
                vec![0; options.composite_scratch],
                options.limits,
            ),
            buf: vec![0; options.input_buffer.max(1)],
            start: 0,
            end: 0,
            done: false,
        }
    }

    /// The core decoder (position, tensors, depth, the current descriptor).
    pub const fn decoder(&self) -> &StreamDecoder<'o, Vec<u8>, Vec<u8>> {
        &self.dec
    }

    /// Gives back the source.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Reads more input once the decoder has taken all of it; `false` at
    /// the end of the source.
    fn refill(&mut self) -> io::Result<bool> {
        self.start = 0;
        self.end = 0;
        loop {
            match self.inner.read(&mut self.buf) {
                Ok(n) => {
                    self.end = n.min(self.buf.len());
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The next event, or `None` once the source ended cleanly between
    /// two top-level tensors.
    ///
    /// # Errors
    /// [`ReadError::Io`] from the source; [`ReadError::Stream`] when the
    /// stream is invalid or ends early (then every later call fails).
    pub fn next_event(&mut self) -> Result<Option<Event<'_, '_>>, ReadError> {
        if self.done {
            return Ok(None);
        }
        // Refill until the decoder is sure to give an event for the window
        // (or an error): that one `decode` call, outside the loop, can hand
        // out an event that borrows the window and the descriptor buffer.
        while !self
            .dec
            .ready(self.buf.get(self.start..self.end).unwrap_or_default())
        {
            let window = self.buf.get(self.start..self.end).unwrap_or_default();
            // Not ready: the decoder takes the whole window in (a partial
            // descriptor) and asks for more.
            let (used, _) = self.dec.step(window)?;
            self.start = self.start.saturating_add(used);
            if !self.refill()? {
                self.dec.finish()?;
                self.done = true;
                return Ok(None);
            }
        }
        let window = self.buf.get(self.start..self.end).unwrap_or_default();
        let (used, event) = self.dec.decode(window)?;
        self.start = self.start.saturating_add(used);
        Ok(Some(event))
    }

    /// The next whole tensor, its buffers copied out (bounded by the
    /// limits' `max_buffer_bytes` and `max_total_bytes`: set them before
    /// reading an untrusted stream this way), or `None` at the end.
    ///
    /// # Errors
    /// As [`next_event`](Self::next_event).
    pub fn next_tensor(&mut self) -> Result<Option<Tensor>, ReadError> {
        let mut tensor: Option<Tensor> = None;
        loop {
            let Some(event) = self.next_event()? else {
                // `None` comes only between two top-level tensors.
                return Ok(None);
            };
            match event {
                Event::Descriptor(view) => {
                    let buffers = view.buffers().iter().map(|_| Vec::new()).collect();
                    tensor = Some(Tensor {
                        descriptor: view.as_bytes().to_vec(),
                        buffers,
                        depth: self.dec.depth(),
                        closes: Vec::new(),
                    });
                }
                Event::Data { buffer, bytes, .. } => {
                    if let Some(b) = tensor
                        .as_mut()
                        .and_then(|t| t.buffers.get_mut(buffer as usize))
                    {
                        b.extend_from_slice(bytes);
                    }
                }
                Event::TensorEnd => {
                    let mut t = tensor.take().ok_or_else(|| {
                        io::Error::other("hurray_io: a tensor ended before its descriptor")
                    })?;
                    // Settle the composites this tensor completes (an empty
                    // input only closes composites; it takes no byte).
                    while let (_, Step::CompositeEnd { members }) = self.dec.step(&[])? {
                        t.closes.push(members);
                    }
                    return Ok(Some(t));
                }
                _ => {}
            }
        }
    }
}
