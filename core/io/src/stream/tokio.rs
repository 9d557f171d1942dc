//! The tokio shells: [`AsyncStreamReader`] over an [`AsyncRead`],
//! [`AsyncStreamWriter`] over an [`AsyncWrite`]. The same core machine as
//! the blocking ones; only the waiting differs.

use std::io;

use hurray_core::TensorView;
use hurray_core::stream::{self, Event, StreamDecoder, WriteError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::read::{Options, ReadError};

/// Reads a hurray stream from an [`AsyncRead`], as the core decoder's
/// events (see [`StreamReader`](super::StreamReader): the same buffers,
/// the same events).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use hurray_io::stream::{AsyncStreamReader, Event};
///
/// let mut r = AsyncStreamReader::new(&b""[..]);
/// assert!(r.next_event().await?.is_none()); // an empty stream is valid
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncStreamReader<'o, R> {
    inner: R,
    dec: StreamDecoder<'o, Vec<u8>, Vec<u8>>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    done: bool,
}

impl<R: AsyncRead + Unpin> AsyncStreamReader<'static, R> {
    /// A reader with [`Options::DEFAULT`].
    pub fn new(inner: R) -> Self {
        Self::with_options(inner, Options::DEFAULT)
    }
}

impl<'o, R: AsyncRead + Unpin> AsyncStreamReader<'o, R> {
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

    /// The core decoder.
    pub const fn decoder(&self) -> &StreamDecoder<'o, Vec<u8>, Vec<u8>> {
        &self.dec
    }

    /// Gives back the source.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next event, or `None` once the source ended cleanly.
    ///
    /// # Errors
    /// As [`StreamReader::next_event`](super::StreamReader::next_event).
    pub async fn next_event(&mut self) -> Result<Option<Event<'_, '_>>, ReadError> {
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
            self.start = 0;
            self.end = 0;
            let n = self.inner.read(&mut self.buf).await?;
            self.end = n.min(self.buf.len());
            if n == 0 {
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
}

/// A sink that takes every byte and keeps none: the core writer runs its
/// checks over it, and the async shell then writes the same bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Checks;

impl embedded_io::ErrorType for Checks {
    type Error = core::convert::Infallible;
}

impl embedded_io::Write for Checks {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

fn io_err(e: WriteError<core::convert::Infallible>) -> WriteError<io::Error> {
    match e {
        WriteError::SinkFull => WriteError::SinkFull,
        WriteError::BufferCount { expected, found } => WriteError::BufferCount { expected, found },
        WriteError::BufferSize {
            buffer,
            expected,
            found,
        } => WriteError::BufferSize {
            buffer,
            expected,
            found,
        },
        WriteError::DataOverrun { remaining, found } => {
            WriteError::DataOverrun { remaining, found }
        }
        WriteError::DataIncomplete { remaining } => WriteError::DataIncomplete { remaining },
        WriteError::NoOpenTensor => WriteError::NoOpenTensor,
        WriteError::Composite(c) => WriteError::Composite(c),
        WriteError::ScratchTooSmall { needed, available } => {
            WriteError::ScratchTooSmall { needed, available }
        }
        // `Sink(Infallible)` cannot be built; any variant added later is
        // reported as the caller's misuse it will be.
        _ => WriteError::NoOpenTensor,
    }
}

/// Writes a hurray stream to an [`AsyncWrite`]: the core writer checks
/// every call (over a sink that keeps nothing) before the shell writes the
/// same bytes, so a refused call writes nothing.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
/// use hurray_io::stream::{AsyncStreamReader, AsyncStreamWriter, Event};
///
/// let handles = [BufferHandle::new(4, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut d = [0u8; 64];
/// let n = TensorDescriptor::row_major(ElementType::UInt8, &[4], &handles).encode(&mut d)?;
/// let view = TensorView::parse(&d[..n])?;
/// let mut w = AsyncStreamWriter::new(Vec::new());
/// w.write_tensor(&view, &[&[1, 2, 3, 4]]).await?;
/// let bytes = w.finish().await?;
///
/// let mut r = AsyncStreamReader::new(&bytes[..]);
/// let mut events = 0;
/// while let Some(_) = r.next_event().await? {
///     events += 1;
/// }
/// assert_eq!(events, 3); // descriptor, data, end
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncStreamWriter<W> {
    inner: W,
    checks: stream::StreamWriter<Checks, Vec<u8>>,
}

impl<W: AsyncWrite + Unpin> AsyncStreamWriter<W> {
    /// A writer to `inner`, with 64 KiB of composite scratch.
    pub fn new(inner: W) -> Self {
        Self::with_scratch(inner, 64 << 10)
    }

    /// A writer to `inner` with `scratch` bytes for the composite rules.
    pub fn with_scratch(inner: W, scratch: usize) -> Self {
        Self {
            inner,
            checks: stream::StreamWriter::new(Checks, vec![0; scratch]),
        }
    }

    /// Bytes written so far.
    pub const fn position(&self) -> u64 {
        self.checks.position()
    }

    /// Writes one tensor.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::write_tensor`].
    pub async fn write_tensor(
        &mut self,
        view: &TensorView<'_>,
        buffers: &[&[u8]],
    ) -> Result<(), WriteError<io::Error>> {
        self.checks.write_tensor(view, buffers).map_err(io_err)?;
        self.inner
            .write_all(view.as_bytes())
            .await
            .map_err(WriteError::Sink)?;
        for b in buffers {
            self.inner.write_all(b).await.map_err(WriteError::Sink)?;
        }
        Ok(())
    }

    /// Opens a tensor for its data in pieces.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::begin_tensor`].
    pub async fn begin_tensor(
        &mut self,
        view: &TensorView<'_>,
    ) -> Result<(), WriteError<io::Error>> {
        self.checks.begin_tensor(view).map_err(io_err)?;
        self.inner
            .write_all(view.as_bytes())
            .await
            .map_err(WriteError::Sink)
    }

    /// The next bytes of the open tensor's data.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::write_data`].
    pub async fn write_data(&mut self, bytes: &[u8]) -> Result<(), WriteError<io::Error>> {
        self.checks.write_data(bytes).map_err(io_err)?;
        self.inner.write_all(bytes).await.map_err(WriteError::Sink)
    }

    /// Ends the open tensor.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::end_tensor`].
    pub fn end_tensor(&mut self) -> Result<(), WriteError<io::Error>> {
        self.checks.end_tensor().map_err(io_err)
    }

    /// Ends the stream, flushes and gives back the sink.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::finish`].
    pub async fn finish(mut self) -> Result<W, WriteError<io::Error>> {
        self.checks.finish().map_err(io_err)?;
        self.inner.flush().await.map_err(WriteError::Sink)?;
        Ok(self.inner)
    }
}
