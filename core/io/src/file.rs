//! `.hrry` files by path.
//!
//! ```
//! use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
//! use hurray_core::file::WriterOptions;
//!
//! let dir = std::env::temp_dir().join(format!("hurray-io-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("model.hrry");
//!
//! let buffers = [BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
//! let mut desc = [0u8; 64];
//! let n = TensorDescriptor::row_major(ElementType::Float32, &[16], &buffers).encode(&mut desc)?;
//! let desc = TensorView::parse(&desc[..n])?;
//!
//! let mut w = hurray_io::file::create(&path, WriterOptions::default())?;
//! w.write_tensor("weights", &desc, &[&[0u8; 64]])?;
//! w.finish(&[])?; // synced and renamed into place
//!
//! let mut file = hurray_io::file::open(&path)?;
//! let view = file.view()?;
//! assert_eq!(view.get("weights").unwrap().buffer(0).unwrap().len(), 64);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use hurray_core::TensorView;
use hurray_core::file::{
    FileError, FileIndex, FileOptions, FileView, FileWriter, IndexEntry, IndexStore, KvValue,
    Misuse, WriteError, WriterOptions,
};
use memmap2::Mmap;

/// Why a file operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused (open, map, write, sync, rename).
    Io(io::Error),
    /// The file's bytes break a rule of the format.
    File(FileError),
    /// The caller's write was refused before it was written.
    Misuse(Misuse),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::File(e) => write!(f, "{e}"),
            Self::Misuse(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::File(e) => Some(e),
            Self::Misuse(_) => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<FileError> for Error {
    fn from(e: FileError) -> Self {
        Self::File(e)
    }
}

impl From<WriteError<io::Error>> for Error {
    fn from(e: WriteError<io::Error>) -> Self {
        match e {
            WriteError::Sink(Some(e)) => Self::Io(e),
            WriteError::Sink(None) => Self::Io(io::ErrorKind::WriteZero.into()),
            WriteError::Misuse(m) => Self::Misuse(m),
        }
    }
}

/// The core's file options with the CPU's CRC-32C instructions (SSE 4.2,
/// ARMv8 CRC; a table elsewhere), through the `crc32c` crate.
#[must_use]
pub fn options() -> FileOptions<'static> {
    FileOptions {
        crc32c: crc32c::crc32c_append,
        ..FileOptions::STRICT
    }
}

/// Opens `bytes` as a [`FileIndex`] with a name table sized from the
/// checked index (lookups O(log n), any index order) and the hardware CRC.
/// `table` is cleared and reused.
///
/// # Errors
/// The first rule the file breaks.
pub fn index<'a>(bytes: &'a [u8], table: &'a mut Vec<u32>) -> Result<FileIndex<'a>, FileError> {
    let n = FileIndex::table_len(bytes)?;
    table.clear();
    table.resize(n, 0);
    FileIndex::parse_with(bytes, &options(), table)
}

/// [`index`], then file order, overlaps, every descriptor and composite:
/// a [`FileView`].
///
/// # Errors
/// The first rule the file breaks.
pub fn view<'a>(bytes: &'a [u8], table: &'a mut Vec<u32>) -> Result<FileView<'a>, FileError> {
    let n = FileIndex::table_len(bytes)?;
    table.clear();
    table.resize(n, 0);
    FileView::parse_with(bytes, &options(), table)
}

/// A `.hrry` file mapped into memory.
#[derive(Debug)]
pub struct MappedFile {
    map: Mmap,
    table: Vec<u32>,
}

/// Maps the file at `path` (nothing is validated until
/// [`MappedFile::index`] or [`MappedFile::view`]).
///
/// # Errors
/// The file cannot be opened or mapped.
pub fn open(path: impl AsRef<Path>) -> Result<MappedFile, Error> {
    let file = fs::File::open(path)?;
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes can change if
    // another process writes the file while it is mapped; a `&[u8]` over
    // them would then see bytes change under it. We hand the bytes only to
    // the core's validators and accessors, which read each byte through
    // bounds-checked safe code and never rely on two reads agreeing for
    // memory safety (a changed byte can make a later accessor return
    // different or no data, never read out of bounds). Files are written
    // by this crate under a temporary name and renamed, so a reader never
    // maps a file that is still being written by us.
    #[allow(unsafe_code)]
    let map = unsafe { Mmap::map(&file)? };
    Ok(MappedFile {
        map,
        table: Vec::new(),
    })
}

impl MappedFile {
    /// The mapped bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Validates the header, trailer, KV section and index (one pass over
    /// the index, no data byte read) and returns the [`FileIndex`].
    ///
    /// # Errors
    /// The first rule the file breaks.
    pub fn index(&mut self) -> Result<FileIndex<'_>, FileError> {
        index(&self.map, &mut self.table)
    }

    /// Validates the whole file and returns the [`FileView`].
    ///
    /// # Errors
    /// The first rule the file breaks.
    pub fn view(&mut self) -> Result<FileView<'_>, FileError> {
        view(&self.map, &mut self.table)
    }
}

/// An `embedded_io::Write` over a `std::io::Write`.
#[derive(Debug)]
pub struct StdSink<W>(pub W);

impl<W: io::Write> embedded_io::ErrorType for StdSink<W> {
    type Error = io::Error;
}

impl<W: io::Write> embedded_io::Write for StdSink<W> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, io::Error> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> Result<(), io::Error> {
        self.0.flush()
    }
}

/// Growable index storage for the core writer.
#[derive(Debug, Default)]
pub struct VecStore<'n>(pub Vec<IndexEntry<'n>>);

impl<'n> IndexStore<'n> for VecStore<'n> {
    fn reserve_to(&mut self, len: usize) -> bool {
        if self.0.len() < len {
            self.0.resize(len, IndexEntry::default());
        }
        true
    }
    fn slots(&mut self) -> &mut [IndexEntry<'n>] {
        &mut self.0
    }
}

/// A file being written under a temporary name beside its final path.
#[derive(Debug)]
pub struct PathWriter<'n> {
    writer: Option<FileWriter<'n, StdSink<BufWriter<fs::File>>, VecStore<'n>>>,
    temp: PathBuf,
    dest: PathBuf,
}

/// Starts writing a file that will appear at `path` only once
/// [`PathWriter::finish`] has synced it (a temporary name until then,
/// removed if the writer is dropped unfinished).
///
/// # Errors
/// The temporary file cannot be created, or the options are invalid.
pub fn create<'n>(path: impl AsRef<Path>, options: WriterOptions) -> Result<PathWriter<'n>, Error> {
    let dest = path.as_ref().to_path_buf();
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    let temp = dest.with_file_name(name);
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let mut out = PathWriter {
        writer: None,
        temp,
        dest,
    };
    out.writer = Some(FileWriter::new(
        StdSink(BufWriter::with_capacity(1 << 20, file)),
        options,
        VecStore::default(),
    )?);
    Ok(out)
}

impl<'n> PathWriter<'n> {
    /// Writes one tensor (see [`FileWriter::write_tensor`]).
    ///
    /// # Errors
    /// As [`FileWriter::write_tensor`].
    pub fn write_tensor(
        &mut self,
        name: &'n str,
        descriptor: &TensorView<'_>,
        buffers: &[&[u8]],
    ) -> Result<(), Error> {
        match self.writer.as_mut() {
            Some(w) => Ok(w.write_tensor(name, descriptor, buffers)?),
            None => Err(Error::Io(io::ErrorKind::Other.into())),
        }
    }

    /// Writes the KV section, index and trailer, syncs the file, renames
    /// it to its final path and syncs the directory.
    ///
    /// # Errors
    /// As [`FileWriter::finish`], or the sync or rename failed (the
    /// temporary file is then removed).
    pub fn finish(mut self, kv: &[(&str, KvValue<'_>)]) -> Result<(), Error> {
        let Some(w) = self.writer.take() else {
            return Err(Error::Io(io::ErrorKind::Other.into()));
        };
        let StdSink(buffered) = w.finish(kv)?;
        let file = buffered.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&self.temp, &self.dest)?;
        if let Some(dir) = self.dest.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // Make the rename durable; not every platform can open a directory.
            if let Ok(d) = fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        self.temp = PathBuf::new();
        Ok(())
    }
}

impl Drop for PathWriter<'_> {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}
