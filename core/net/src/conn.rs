//! The read side of a connection: one buffer, bounded by the maximum
//! message size, filled until the session has a whole message; reads wait
//! at most until a deadline.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, BufWriter, ReadHalf, WriteHalf};
use tokio::time::Instant;

/// A connection's byte stream: TCP, or TLS over TCP (feature `tls`).
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Transport for T {}

/// A connection, whichever its transport.
pub(crate) type Io = Box<dyn Transport>;

/// The read side of a connection.
pub(crate) type Reader = ReadHalf<Io>;

/// The buffered write side of a connection.
pub(crate) type Writer = BufWriter<WriteHalf<Io>>;

/// Bytes received and not yet handled, in one bounded buffer.
pub(crate) struct Inbox {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// What a read brought.
pub(crate) enum Read {
    /// Some bytes.
    Bytes,
    /// The peer closed its side.
    Eof,
    /// The deadline passed first.
    Deadline,
}

impl Inbox {
    /// An inbox holding at most `cap` bytes (a whole largest message).
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: vec![0; cap.max(64)],
            start: 0,
            end: 0,
        }
    }

    /// The bytes not yet handled.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Drops `n` handled bytes.
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes (the session wants `needed` in all, which the
    /// session has already checked against the maximum) before `deadline`.
    pub(crate) async fn fill<R: AsyncRead + Unpin>(
        &mut self,
        rd: &mut R,
        needed: usize,
        deadline: Option<Instant>,
    ) -> io::Result<Read> {
        if self.start + needed > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if needed > self.buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "message larger than the inbox",
            ));
        }
        let read = rd.read(&mut self.buf[self.end..]);
        let n = match deadline {
            Some(d) => match tokio::time::timeout_at(d, read).await {
                Ok(r) => r?,
                Err(_) => return Ok(Read::Deadline),
            },
            None => read.await?,
        };
        if n == 0 {
            return Ok(Read::Eof);
        }
        self.end += n;
        Ok(Read::Bytes)
    }
}
