//! [`StreamWriter`]: tensors to a [`Write`].

use std::io::{self, Write};

use hurray_core::TensorView;
use hurray_core::stream::{self, WriteError};

/// An [`std::io::Write`] as an [`embedded_io::Write`] sink (the core
/// writer's trait): `Interrupted` is retried, every other error is passed
/// on.
#[derive(Debug)]
pub struct IoSink<W>(pub W);

impl<W> embedded_io::ErrorType for IoSink<W> {
    type Error = io::Error;
}

impl<W: Write> embedded_io::Write for IoSink<W> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, io::Error> {
        loop {
            match self.0.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    fn flush(&mut self) -> Result<(), io::Error> {
        self.0.flush()
    }
}

/// Writes a hurray stream to `W`: the core [`StreamWriter`](stream::StreamWriter)
/// (every check) over an [`IoSink`], with 64 KiB of composite scratch.
/// Wrap a file or socket in a [`BufWriter`](std::io::BufWriter): each
/// descriptor and buffer is one `write` call.
#[derive(Debug)]
pub struct StreamWriter<W: Write> {
    inner: stream::StreamWriter<IoSink<W>, Vec<u8>>,
}

impl<W: Write> StreamWriter<W> {
    /// A writer to `inner`.
    pub fn new(inner: W) -> Self {
        Self::with_scratch(inner, 64 << 10)
    }

    /// A writer to `inner` with `scratch` bytes for the composite rules.
    pub fn with_scratch(inner: W, scratch: usize) -> Self {
        Self {
            inner: stream::StreamWriter::new(IoSink(inner), vec![0; scratch]),
        }
    }

    /// Bytes written so far.
    pub const fn position(&self) -> u64 {
        self.inner.position()
    }

    /// The core writer (tensors, depth).
    pub const fn core(&self) -> &stream::StreamWriter<IoSink<W>, Vec<u8>> {
        &self.inner
    }

    /// Writes one tensor (see [`stream::StreamWriter::write_tensor`]).
    ///
    /// # Errors
    /// As the core writer's, the sink's error being an [`io::Error`].
    pub fn write_tensor(
        &mut self,
        view: &TensorView<'_>,
        buffers: &[&[u8]],
    ) -> Result<(), WriteError<io::Error>> {
        self.inner.write_tensor(view, buffers)
    }

    /// Opens a tensor for its data in pieces.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::begin_tensor`].
    pub fn begin_tensor(&mut self, view: &TensorView<'_>) -> Result<(), WriteError<io::Error>> {
        self.inner.begin_tensor(view)
    }

    /// The next bytes of the open tensor's data.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::write_data`].
    pub fn write_data(&mut self, bytes: &[u8]) -> Result<(), WriteError<io::Error>> {
        self.inner.write_data(bytes)
    }

    /// Ends the open tensor.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::end_tensor`].
    pub fn end_tensor(&mut self) -> Result<(), WriteError<io::Error>> {
        self.inner.end_tensor()
    }

    /// Ends the stream (no open tensor or composite), flushes and gives back
    /// the sink.
    ///
    /// # Errors
    /// As [`stream::StreamWriter::finish`].
    pub fn finish(mut self) -> Result<W, WriteError<io::Error>> {
        self.inner.finish()?;
        Ok(self.inner.into_inner().0)
    }
}
