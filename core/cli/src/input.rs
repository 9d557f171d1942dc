//! Opening an input and telling what it is, by its first bytes.
//!
//! * `HRRYFILE` — a hurray **file**: mapped into memory when it is a
//!   regular file (nothing is read but what the checks and the command
//!   need), read whole otherwise (standard input, a pipe).
//! * `HRRY` followed by a `descriptor_length` equal to the input's length,
//!   or longer (a truncated descriptor) — one tensor **descriptor** (the bytes are read to at most
//!   [`DESCRIPTOR_READ_AHEAD`] + 1 bytes to find out, never more).
//! * Anything else — a **stream** (the canonical multi-tensor encoding:
//!   descriptors each followed by their buffers' bytes), read sequentially
//!   in bounded memory; bytes that are not a stream get the stream
//!   decoder's typed error at byte 0.
//!
//! `-` is standard input. No input length or field read here sizes an
//! allocation: read-ahead is capped, a file is mapped rather than copied.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use hurray_io::file::MappedFile;

/// The longest input still taken as a lone descriptor when its length
/// field matches: longer ones are read as streams (`--format descriptor`
/// reads any length).
pub const DESCRIPTOR_READ_AHEAD: u32 = 1 << 20;

/// The three inputs the command reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One `HRRY` tensor descriptor.
    Descriptor,
    /// A hurray stream.
    Stream,
    /// A `HRRYFILE` file.
    File,
}

/// A file's bytes: mapped, or read (standard input, a pipe).
#[derive(Debug)]
pub enum FileBytes {
    /// Mapped from a regular file.
    Mapped(MappedFile),
    /// Read whole.
    Owned(Vec<u8>),
}

impl FileBytes {
    /// The bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        match self {
            Self::Mapped(m) => m.bytes(),
            Self::Owned(v) => v,
        }
    }
}

/// An opened input.
pub enum Input {
    /// One descriptor, read whole.
    Descriptor(Vec<u8>),
    /// A stream: a reader positioned at its first byte, and its length when
    /// known (a regular file), for progress.
    Stream(Box<dyn Read>, Option<u64>),
    /// A file.
    File(FileBytes),
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Descriptor(b) => write!(f, "Descriptor({} bytes)", b.len()),
            Self::Stream(_, len) => write!(f, "Stream({len:?})"),
            Self::File(b) => write!(f, "File({} bytes)", b.bytes().len()),
        }
    }
}

impl Input {
    /// What the input is.
    #[must_use]
    pub const fn kind(&self) -> Kind {
        match self {
            Self::Descriptor(_) => Kind::Descriptor,
            Self::Stream(..) => Kind::Stream,
            Self::File(_) => Kind::File,
        }
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// What the first bytes say (`prefix` holds at most 10 bytes).
#[must_use]
pub fn sniff(prefix: &[u8]) -> Kind {
    if prefix.starts_with(b"HRRYFILE") {
        Kind::File
    } else {
        // A descriptor is told from a stream by its length (see `open`).
        Kind::Stream
    }
}

/// Opens `path` (`-`: standard input) and tells what it is, or reads it
/// as `forced`.
///
/// # Errors
/// The input cannot be opened or read.
pub fn open(path: &Path, forced: Option<Kind>) -> io::Result<Input> {
    let (mut reader, regular_len): (Box<dyn Read>, Option<u64>) = if path.as_os_str() == "-" {
        (Box::new(io::stdin().lock()), None)
    } else {
        let f = File::open(path)?;
        let meta = f.metadata()?;
        if meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a directory",
            ));
        }
        let len = meta.is_file().then_some(meta.len());
        (Box::new(f), len)
    };
    let mut prefix = [0u8; 10];
    let n = read_full(&mut reader, &mut prefix)?;
    let prefix = &prefix[..n];
    let kind = forced.unwrap_or_else(|| sniff(prefix));
    match kind {
        Kind::File => {
            if regular_len.is_some() {
                drop(reader);
                // A regular file: map it (a 4 GiB file costs no copy).
                return hurray_io::file::open(path)
                    .map(|m| Input::File(FileBytes::Mapped(m)))
                    .map_err(|e| io::Error::other(e.to_string()));
            }
            let mut all = prefix.to_vec();
            reader.read_to_end(&mut all)?;
            Ok(Input::File(FileBytes::Owned(all)))
        }
        Kind::Descriptor => {
            let mut all = prefix.to_vec();
            reader.read_to_end(&mut all)?;
            Ok(Input::Descriptor(all))
        }
        Kind::Stream => {
            // `HRRY` and a length equal to the whole input: one descriptor.
            if forced.is_none() && n == 10 && prefix.starts_with(b"HRRY") {
                let declared = u32::from_le_bytes([prefix[6], prefix[7], prefix[8], prefix[9]]);
                if (10..=DESCRIPTOR_READ_AHEAD).contains(&declared) {
                    // Read one byte past the declared length, at most.
                    let mut ahead = prefix.to_vec();
                    (&mut reader)
                        .take(u64::from(declared) + 1 - 10)
                        .read_to_end(&mut ahead)?;
                    // Exactly its length: one descriptor. Shorter: a
                    // truncated descriptor (a stream cannot end inside its
                    // first one either), which the descriptor reader
                    // reports most precisely.
                    if ahead.len() <= declared as usize {
                        return Ok(Input::Descriptor(ahead));
                    }
                    return Ok(Input::Stream(
                        Box::new(io::Cursor::new(ahead).chain(reader)),
                        regular_len,
                    ));
                }
            }
            Ok(Input::Stream(
                Box::new(io::Cursor::new(prefix.to_vec()).chain(reader)),
                regular_len,
            ))
        }
    }
}
