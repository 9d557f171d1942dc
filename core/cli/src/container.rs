//! Files and streams: what `hurray inspect`, `ls`, `verify` and `cat`
//! read from them.
//!
//! * A file is validated whole first ([`FileView`]: every reader MUST of
//!   the file format, every descriptor, every composite), then read in
//!   place; a tensor's bytes are slices of the mapped file.
//! * A stream is read once, front to back, through `hurray_io`'s
//!   [`StreamReader`] (the core's sans-I/O decoder in a fixed input
//!   buffer): the decoder
//!   checks every stream MUST (composites included) and hands out buffer
//!   bytes as slices of that buffer, so memory does not grow with the
//!   stream. [`walk_stream`] accepts the end of the input only where the
//!   decoder does (between two top-level tensors).
//!
//! JSON (`--json`, one object per input, stable): for a file `{"format":
//! "file", "file", "version": [major, minor], "alignment", "tensors":
//! [...], "kv": {...}}`, for a stream `{"format": "stream", "file",
//! "tensors": [...]}`. Each element of `tensors` is one tensor in the order
//! its bytes appear (a composite's head, then its members): `name`,
//! `descriptor_offset`, `data_offset`, `data_length` (files only), `index`
//! (streams only), `element_type` (the spec's lower-case name),
//! `element_type_tag`, `shape` (`u64::MAX` for a dynamic dimension),
//! `layout_tag`, `buffer_byte_sizes`, `data_sha256` (SHA-256 of the
//! buffers' bytes, concatenated in table order, without the padding
//! between them), and for a composite head `"composite": true` and
//! `members`. KV values: strings, numbers (non-finite floats as `"NaN"`,
//! `"inf"`, `"-inf"`), booleans, bytes as lower-case hex, arrays as lists.

use std::io::{self, Read};
use std::ops::ControlFlow;

use hurray_core::file::{FileError, FileIndex, FileOptions, FileView, KvValue, Tensor};
use hurray_core::layout::Layout;
use hurray_core::stream::{Event, StreamError, StreamLimits};
use hurray_core::{ReadOptions, TensorView};
use hurray_io::stream::{ReadError, StreamReader};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::descriptor::type_name;
use crate::progress::Progress;

/// The longest descriptor a stream may hold here (the decoder's buffer).
pub const MAX_STREAM_DESCRIPTOR: usize = 1 << 20;
/// Scratch for a stream's open composites.
pub const COMPOSITE_SCRATCH: usize = 1 << 20;
/// Bytes read from a stream at a time.
pub const READ_CHUNK: usize = 1 << 20;

/// One tensor of a file or a stream, for `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TensorRecord {
    /// Its name (files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its position in the stream, from 0 (streams).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// The spec's lower-case name of its element type.
    pub element_type: &'static str,
    /// The element type's code.
    pub element_type_tag: u8,
    /// Its shape (`u64::MAX` for a dynamic dimension).
    pub shape: Vec<u64>,
    /// Its layout's code.
    pub layout_tag: u8,
    /// Absolute offset of its descriptor (files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub descriptor_offset: Option<u64>,
    /// Absolute offset of its first buffer (files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_offset: Option<u64>,
    /// Bytes from its first buffer's start to its last one's end (files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_length: Option<u64>,
    /// Each buffer's `byte_size`, in table order.
    pub buffer_byte_sizes: Vec<u64>,
    /// SHA-256 of its buffers' bytes in table order, lower-case hex.
    pub data_sha256: String,
    /// Whether it is a composite head.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub composite: bool,
    /// A composite head's member count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<u32>,
}

impl TensorRecord {
    /// The fields a descriptor gives (the digest is filled in later).
    #[must_use]
    pub fn from_view(view: &TensorView<'_>) -> Self {
        let members = match view.layout() {
            Layout::Composite(h) => Some(h.member_count),
            _ => None,
        };
        Self {
            name: None,
            index: None,
            element_type: type_name(view.element_type()),
            element_type_tag: view.element_type().code(),
            shape: view.shape().iter().collect(),
            layout_tag: view.layout().tag(),
            descriptor_offset: None,
            data_offset: None,
            data_length: None,
            buffer_byte_sizes: view.buffers().iter().map(|b| b.byte_size()).collect(),
            data_sha256: String::new(),
            composite: members.is_some(),
            members,
        }
    }

    /// Total bytes of its buffers.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.buffer_byte_sizes
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// `[d0, d1, …]`, `?` for a dynamic dimension.
    #[must_use]
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> = self
            .shape
            .iter()
            .map(|&d| {
                if d == u64::MAX {
                    "?".to_owned()
                } else {
                    d.to_string()
                }
            })
            .collect();
        format!("[{}]", dims.join(", "))
    }
}

/// A file, for `--json`.
#[derive(Debug, Serialize)]
pub struct FileRecord {
    /// `"file"`.
    pub format: &'static str,
    /// The path it was read from.
    pub file: String,
    /// The container version.
    pub version: [u8; 2],
    /// `data_buffer_alignment`.
    pub alignment: u32,
    /// Every tensor, in file order.
    pub tensors: Vec<TensorRecord>,
    /// The KV metadata.
    pub kv: serde_json::Map<String, serde_json::Value>,
}

/// A stream, for `--json`.
#[derive(Debug, Serialize)]
pub struct StreamRecord {
    /// `"stream"`.
    pub format: &'static str,
    /// The path it was read from.
    pub file: String,
    /// Every tensor, in stream order.
    pub tensors: Vec<TensorRecord>,
}

/// Lower-case hex, no separator.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A KV value as JSON.
#[must_use]
pub fn kv_json(v: &KvValue<'_>) -> serde_json::Value {
    match v {
        KvValue::String(s) => (*s).into(),
        KvValue::Int64(i) => (*i).into(),
        KvValue::Uint64(u) => (*u).into(),
        KvValue::Float64(f) => crate::descriptor::float(*f),
        KvValue::Bool(b) => (*b).into(),
        KvValue::Bytes(b) => hex(b).into(),
        KvValue::Array(a) => serde_json::Value::Array(a.iter().map(|e| kv_json(&e)).collect()),
    }
}

/// The file options for `read`, with the CPU's CRC-32C.
#[must_use]
pub fn file_options<'o>(read: ReadOptions<'o>) -> FileOptions<'o> {
    FileOptions {
        descriptor: read,
        ..hurray_io::file::options()
    }
}

/// Validates a whole file (every MUST): the view.
///
/// # Errors
/// The first rule the file breaks, at its absolute offset.
pub fn file_view<'a>(
    bytes: &'a [u8],
    options: &FileOptions<'a>,
    table: &'a mut Vec<u32>,
) -> Result<FileView<'a>, FileError> {
    let n = FileIndex::table_len(bytes)?;
    table.clear();
    table.resize(n, 0);
    FileIndex::parse_with(bytes, options, table)?.verify()
}

/// One tensor of a validated file.
#[must_use]
pub fn file_tensor(t: &Tensor<'_>, progress: &Progress) -> TensorRecord {
    let mut r = TensorRecord::from_view(t.descriptor());
    let e = t.entry();
    r.name = Some(e.name.to_owned());
    r.descriptor_offset = Some(e.descriptor_offset);
    r.data_offset = Some(e.data_offset);
    r.data_length = Some(e.data_length);
    let mut h = Sha256::new();
    for b in t.buffers() {
        for piece in b.chunks(READ_CHUNK) {
            h.update(piece);
            progress.add(piece.len());
        }
    }
    r.data_sha256 = hex(&h.finalize());
    r
}

/// Everything a validated file holds, tensors in file order.
#[must_use]
pub fn file_record(path: &str, view: &FileView<'_>, progress: &Progress) -> FileRecord {
    let (major, minor) = view.version();
    FileRecord {
        format: "file",
        file: path.to_owned(),
        version: [major, minor],
        alignment: view.alignment(),
        tensors: view
            .iter_file_order()
            .map(|t| file_tensor(&t, progress))
            .collect(),
        kv: view
            .kv()
            .iter()
            .map(|(k, v)| (k.to_owned(), kv_json(&v)))
            .collect(),
    }
}

/// Why reading a stream stopped.
#[derive(Debug)]
pub enum StreamFailure {
    /// The source could not be read.
    Io(io::Error),
    /// The stream broke a rule (typed, with its stream offset).
    Invalid(StreamError),
}

/// What [`walk_stream`] reports, in stream order.
#[derive(Debug)]
pub enum Item<'b> {
    /// A tensor's descriptor was read and validated (its record, without
    /// its digest), as tensor `index`.
    Tensor(u64, TensorRecord),
    /// Bytes of the current tensor's buffers, in table order.
    Data(&'b [u8]),
    /// The current tensor's data is complete.
    End,
}

/// Reads a stream front to back through the std layer's
/// [`StreamReader`] (the core's decoder over a fixed input buffer), checking
/// every rule, and reports each
/// tensor, its bytes and its end to `on`; `on` may stop the walk early
/// ([`ControlFlow::Break`]), which skips the check of the rest.
///
/// # Errors
/// The first rule the stream breaks, or the source's error.
pub fn walk_stream(
    reader: &mut dyn Read,
    read: ReadOptions<'_>,
    progress: &Progress,
    mut on: impl FnMut(Item<'_>) -> ControlFlow<()>,
) -> Result<(), StreamFailure> {
    let options = hurray_io::stream::Options {
        input_buffer: READ_CHUNK,
        descriptor_buffer: MAX_STREAM_DESCRIPTOR,
        composite_scratch: COMPOSITE_SCRATCH,
        limits: StreamLimits {
            read,
            ..StreamLimits::DEFAULT
        },
    };
    // The std layer's reader: the core decoder over a fixed input buffer.
    let mut r = StreamReader::with_options(reader, options);
    let mut index = 0u64;
    let mut shown = 0u64;
    loop {
        let event = match r.next_event() {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(()),
            Err(ReadError::Io(e)) => return Err(StreamFailure::Io(e)),
            Err(ReadError::Stream(e)) => return Err(StreamFailure::Invalid(e)),
            Err(e) => return Err(StreamFailure::Io(io::Error::other(e.to_string()))),
        };
        let flow = match event {
            Event::Descriptor(view) => {
                let t = TensorRecord::from_view(&view);
                index += 1;
                on(Item::Tensor(index - 1, t))
            }
            Event::Data { bytes, .. } => on(Item::Data(bytes)),
            Event::TensorEnd => on(Item::End),
            _ => ControlFlow::Continue(()),
        };
        if flow.is_break() {
            return Ok(());
        }
        let at = r.decoder().position();
        progress.add(usize::try_from(at - shown).unwrap_or(usize::MAX));
        shown = at;
    }
}

/// Every tensor of a stream, with its digest.
///
/// # Errors
/// As [`walk_stream`].
pub fn stream_tensors(
    reader: &mut dyn Read,
    read: ReadOptions<'_>,
    progress: &Progress,
) -> Result<Vec<TensorRecord>, StreamFailure> {
    let mut out: Vec<TensorRecord> = Vec::new();
    let mut hasher = Sha256::new();
    walk_stream(reader, read, progress, |item| {
        match item {
            Item::Tensor(i, mut r) => {
                r.index = Some(i);
                out.push(r);
                hasher = Sha256::new();
            }
            Item::Data(b) => hasher.update(b),
            Item::End => {
                let digest = std::mem::take(&mut hasher).finalize();
                if let Some(last) = out.last_mut() {
                    last.data_sha256 = hex(&digest);
                }
            }
        }
        ControlFlow::Continue(())
    })?;
    Ok(out)
}
