//! [`FileWriter`]: a hurray file in one forward pass over an
//! [`embedded_io::Write`] sink, keeping only the index entries, in the
//! caller's storage (`docs/spec/file-format.md` § Writer protocol).
//!
//! Layout written (the spec's, where the reference writer differs:
//! `docs/spec/README.md`): the 64-byte header with the first descriptor at
//! 64; per tensor its descriptor, zero padding to the data alignment, each
//! buffer followed by zero padding to the data alignment, then to 8 — and
//! for a composite head (no buffers) no data padding at all; the KV section
//! when declared; the index (sorted by name when asked); the trailer with
//! the index CRC-32C. Every call checks its arguments before writing a
//! byte of it; a name used twice is found at [`FileWriter::finish`], which
//! then writes no index and no trailer.

use embedded_io::Write;
use zerocopy::IntoBytes;
use zerocopy::little_endian::{U16, U32, U64};

use super::entry::IndexEntry;
use super::error::{Misuse, WriteError};
use super::header::{
    FileFlags, FileHeader, MIN_DATA_ALIGNMENT, UNKNOWN_TENSOR_COUNT, alignment_ok,
};
use super::kv::{KvArray, KvValue, payload_len};
use super::sort::heapsort;
use super::trailer::{TRAILER_MAGIC, Trailer};
use super::{align_up, crc32c_append};
use crate::composite::MAX_COMPOSITE_DEPTH;
use crate::descriptor::{Layout, TensorView};

/// Where a [`FileWriter`] keeps its index entries: a caller's slice (or
/// array) of slots, or any growable store a std layer provides.
pub trait IndexStore<'n> {
    /// Makes room for `len` entries; `false` when it cannot (by default:
    /// whether the slots already number that many).
    fn reserve_to(&mut self, len: usize) -> bool {
        len <= self.slots().len()
    }
    /// The slots (at least as many as the last successful
    /// [`reserve_to`](Self::reserve_to)).
    fn slots(&mut self) -> &mut [IndexEntry<'n>];
}

impl<'n> IndexStore<'n> for &mut [IndexEntry<'n>] {
    fn slots(&mut self) -> &mut [IndexEntry<'n>] {
        self
    }
}

impl<'n, const N: usize> IndexStore<'n> for &mut [IndexEntry<'n>; N] {
    fn slots(&mut self) -> &mut [IndexEntry<'n>] {
        &mut self[..]
    }
}

/// How a [`FileWriter`] lays out its file.
#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    /// `data_buffer_alignment`: a power of two in 4 KiB..=2 MiB.
    pub alignment: u32,
    /// Write the index sorted by name and set `SORTED_INDEX`.
    pub sorted_index: bool,
    /// A KV section will be written (sets `HAS_KV_METADATA`, which the
    /// header must carry before the section is known).
    pub has_kv: bool,
    /// `tensor_count_hint` ([`UNKNOWN_TENSOR_COUNT`] by default).
    pub tensor_count_hint: u64,
    /// CRC-32C continued (see [`FileOptions`](super::FileOptions)).
    pub crc32c: fn(u32, &[u8]) -> u32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            alignment: MIN_DATA_ALIGNMENT,
            sorted_index: false,
            has_kv: false,
            tensor_count_hint: UNKNOWN_TENSOR_COUNT,
            crc32c: crc32c_append,
        }
    }
}

type Res<T, W> = Result<T, WriteError<<W as embedded_io::ErrorType>::Error>>;

/// Zero bytes for padding.
static ZEROS: [u8; 256] = [0; 256];

/// Writes a hurray file in one forward pass.
///
/// ```
/// use hurray_core::file::{FileView, FileWriter, IndexEntry, KvValue, WriterOptions};
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
///
/// let buffers = [BufferHandle::new(16, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut desc = [0u8; 64];
/// let n = TensorDescriptor::row_major(ElementType::Int8, &[16], &buffers).encode(&mut desc)?;
/// let desc = TensorView::parse(&desc[..n])?;
///
/// let mut index = [IndexEntry::default(); 2]; // the only state kept per tensor
/// let options = WriterOptions { sorted_index: true, has_kv: true, ..Default::default() };
/// let mut w = FileWriter::new(Vec::new(), options, &mut index)?;
/// w.write_tensor("b", &desc, &[&[1; 16]])?;
/// w.write_tensor("a", &desc, &[&[2; 16]])?;
/// let file = w.finish(&[("arch", KvValue::String("tiny"))])?;
///
/// let view = FileView::parse(&file)?;
/// assert_eq!(view.iter().map(|t| t.name()).collect::<Vec<_>>(), ["a", "b"]);
/// assert_eq!(view.kv().get("arch"), Some(KvValue::String("tiny")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileWriter<'n, W: Write, S: IndexStore<'n>> {
    sink: W,
    options: WriterOptions,
    offset: u64,
    crc: u32,
    entries: S,
    _names: core::marker::PhantomData<&'n str>,
    len: usize,
    /// Members still expected by each open composite, innermost last.
    open: [u32; MAX_COMPOSITE_DEPTH as usize],
    depth: usize,
}

impl<'n, W: Write, S: IndexStore<'n>> FileWriter<'n, W, S> {
    /// Writes the header and returns the writer; `entries` keeps one
    /// [`IndexEntry`] per tensor to come.
    ///
    /// # Errors
    /// [`Misuse::BadAlignment`], or the sink's error.
    pub fn new(sink: W, options: WriterOptions, entries: S) -> Res<Self, W> {
        let a = options.alignment;
        if !alignment_ok(a) {
            return Err(Misuse::BadAlignment(a).into());
        }
        let mut flags = FileFlags::HAS_INDEX_CRC32C;
        if options.sorted_index {
            flags = flags.union(FileFlags::SORTED_INDEX);
        }
        if options.has_kv {
            flags = flags.union(FileFlags::HAS_KV_METADATA);
        }
        let mut w = Self {
            sink,
            options,
            offset: 0,
            crc: 0,
            entries,
            _names: core::marker::PhantomData,
            len: 0,
            open: [0; MAX_COMPOSITE_DEPTH as usize],
            depth: 0,
        };
        let header = FileHeader::new(flags, a, options.tensor_count_hint);
        w.put(header.as_bytes())?;
        Ok(w)
    }

    /// Bytes written so far.
    #[must_use]
    pub const fn position(&self) -> u64 {
        self.offset
    }

    /// Tensors written so far.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether no tensor was written yet.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn put(&mut self, mut bytes: &[u8]) -> Res<(), W> {
        let Some(end) = self.offset.checked_add(bytes.len() as u64) else {
            return Err(Misuse::TooLarge.into());
        };
        while !bytes.is_empty() {
            match self.sink.write(bytes) {
                Ok(0) => return Err(WriteError::Sink(None)),
                Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
                Err(e) => return Err(WriteError::Sink(Some(e))),
            }
        }
        self.offset = end;
        Ok(())
    }

    /// Writes zeros up to the next multiple of `alignment`.
    fn pad(&mut self, alignment: u64) -> Res<(), W> {
        let Some(target) = align_up(self.offset, alignment) else {
            return Err(Misuse::TooLarge.into());
        };
        while self.offset < target {
            let n = target.saturating_sub(self.offset).min(ZEROS.len() as u64);
            #[allow(clippy::cast_possible_truncation)]
            self.put(ZEROS.get(..n as usize).unwrap_or_default())?;
        }
        Ok(())
    }

    /// Writes bytes of the index, continuing its CRC.
    fn put_index(&mut self, bytes: &[u8]) -> Res<(), W> {
        self.crc = (self.options.crc32c)(self.crc, bytes);
        self.put(bytes)
    }

    /// Writes one tensor: `descriptor` (already validated) and one byte
    /// slice per buffer of its table, of exactly its `byte_size`. A
    /// composite head is written with no buffers; the next
    /// `member_count` tensors are its members.
    ///
    /// # Errors
    /// [`Misuse::BadName`], [`Misuse::IndexFull`],
    /// [`Misuse::BufferMismatch`], [`Misuse::NestingTooDeep`] (nothing
    /// written), or the sink's error.
    pub fn write_tensor(
        &mut self,
        name: &'n str,
        descriptor: &TensorView<'_>,
        buffers: &[&[u8]],
    ) -> Res<(), W> {
        if name.is_empty() || name.len() > usize::from(u16::MAX) {
            return Err(Misuse::BadName.into());
        }
        if !self.entries.reserve_to(self.len.saturating_add(1)) {
            #[allow(clippy::cast_possible_truncation)]
            let capacity = self.entries.slots().len().min(u32::MAX as usize) as u32;
            return Err(Misuse::IndexFull { capacity }.into());
        }
        let table = descriptor.buffers();
        if table.len() != buffers.len() {
            #[allow(clippy::cast_possible_truncation)]
            let first = table.len().min(buffers.len()) as u32;
            return Err(Misuse::BufferMismatch(first).into());
        }
        for (i, (h, b)) in (0u32..).zip(table.iter().zip(buffers)) {
            if h.byte_size() != b.len() as u64 {
                return Err(Misuse::BufferMismatch(i).into());
            }
        }
        let members = match descriptor.layout() {
            Layout::Composite(h) => h.member_count,
            _ => 0,
        };
        // Composite bookkeeping, checked before anything is written.
        // This tensor is a member of the innermost open composite; every
        // composite whose last member it is closes (a nested head counted
        // as its parent's member when it was written).
        let mut open = self.open;
        let mut depth = self.depth;
        if let Some(top) = open.get_mut(depth.wrapping_sub(1)) {
            *top = top.saturating_sub(1);
        }
        while depth > 0 && open.get(depth.saturating_sub(1)) == Some(&0) {
            depth = depth.saturating_sub(1);
        }
        if members > 0 {
            if depth >= MAX_COMPOSITE_DEPTH as usize {
                return Err(Misuse::NestingTooDeep.into());
            }
            if let Some(slot) = open.get_mut(depth) {
                *slot = members;
            }
            depth = depth.saturating_add(1);
        }

        let descriptor_offset = self.offset;
        let bytes = descriptor.as_bytes();
        self.put(bytes)?;
        let alignment = u64::from(self.options.alignment);
        // A head has no data and no data padding.
        if !buffers.is_empty() {
            self.pad(alignment)?;
        }
        let data_offset = self.offset;
        let mut data_end = data_offset;
        for b in buffers {
            self.put(b)?;
            data_end = self.offset;
            self.pad(alignment)?;
        }
        self.pad(8)?;
        if let Some(slot) = self.entries.slots().get_mut(self.len) {
            #[allow(clippy::cast_possible_truncation)]
            let descriptor_length = bytes.len() as u32;
            *slot = IndexEntry {
                name,
                descriptor_offset,
                descriptor_length,
                data_offset,
                data_length: data_end.saturating_sub(data_offset),
            };
        }
        self.len = self.len.saturating_add(1);
        self.open = open;
        self.depth = depth;
        Ok(())
    }

    /// Writes the KV section (when declared in the options), the index and
    /// the trailer, flushes, and returns the sink.
    ///
    /// # Errors
    /// [`Misuse::TornComposite`], [`Misuse::DuplicateName`],
    /// [`Misuse::BadName`] / [`Misuse::BadKv`] for a key or value, KV
    /// given without `has_kv` ([`Misuse::BadKv`]), or the sink's error.
    pub fn finish(mut self, kv: &[(&str, KvValue<'_>)]) -> Res<W, W> {
        // The innermost open composite, if any, still expects members.
        if let Some(&missing) = self.depth.checked_sub(1).and_then(|top| self.open.get(top)) {
            return Err(Misuse::TornComposite { missing }.into());
        }
        if !kv.is_empty() && !self.options.has_kv {
            return Err(Misuse::BadKv.into());
        }
        let kv_len = check_kv(kv)?;
        let len = self.len;
        let entries = self.entries.slots().get_mut(..len).unwrap_or_default();
        // Names are unique: sort by name, compare neighbours, and restore
        // write order unless the index is to be sorted.
        heapsort(entries, |a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        let next = entries.iter().skip(1);
        if entries.iter().zip(next).any(|(a, b)| a.name == b.name) {
            return Err(Misuse::DuplicateName.into());
        }
        if !self.options.sorted_index {
            heapsort(entries, |a, b| {
                a.descriptor_offset.cmp(&b.descriptor_offset)
            });
        }

        let (kv_offset, kv_length) = if self.options.has_kv {
            let at = self.offset;
            self.write_kv(kv)?;
            self.pad(8)?;
            (at, kv_len)
        } else {
            (0, 0)
        };
        let index_offset = self.offset;
        self.put_index(U64::new(len as u64).as_bytes())?;
        for i in 0..len {
            let Some(e) = self.entries.slots().get(i).copied() else {
                break;
            };
            #[allow(clippy::cast_possible_truncation)]
            self.put_index(U16::new(e.name.len() as u16).as_bytes())?;
            self.put_index(e.name.as_bytes())?;
            self.put_index(e.fields().as_bytes())?;
        }
        let index_length = self.offset.saturating_sub(index_offset);
        let trailer = Trailer {
            index_offset: U64::new(index_offset),
            index_length: U64::new(index_length),
            kv_offset: U64::new(kv_offset),
            kv_length: U32::new(kv_length),
            index_crc32c: U32::new(self.crc),
            reserved: [0; 4],
            magic: TRAILER_MAGIC,
        };
        self.put(trailer.as_bytes())?;
        self.sink.flush().map_err(|e| WriteError::Sink(Some(e)))?;
        Ok(self.sink)
    }

    fn write_kv(&mut self, kv: &[(&str, KvValue<'_>)]) -> Res<(), W> {
        #[allow(clippy::cast_possible_truncation)]
        self.put(U32::new(kv.len() as u32).as_bytes())?;
        for (key, value) in kv {
            #[allow(clippy::cast_possible_truncation)]
            self.put(U16::new(key.len() as u16).as_bytes())?;
            self.put(key.as_bytes())?;
            self.put(&[value.tag()])?;
            self.write_payload(value)?;
        }
        Ok(())
    }

    fn write_payload(&mut self, value: &KvValue<'_>) -> Res<(), W> {
        #[allow(clippy::cast_possible_truncation)]
        let sized = |n: usize| U32::new(n as u32);
        match *value {
            KvValue::String(s) => self.write_payload(&KvValue::Bytes(s.as_bytes())),
            KvValue::Bytes(b) => {
                self.put(sized(b.len()).as_bytes())?;
                self.put(b)
            }
            KvValue::Int64(v) => self.put(&v.to_le_bytes()),
            KvValue::Uint64(v) => self.put(&v.to_le_bytes()),
            KvValue::Float64(v) => self.put(&v.to_le_bytes()),
            KvValue::Bool(v) => self.put(&[u8::from(v)]),
            KvValue::Array(a) => {
                self.put(&[a.element_tag()])?;
                self.put(sized(a.len()).as_bytes())?;
                if let KvArray::Encoded { bytes, .. } = a {
                    return self.put(bytes);
                }
                for v in a.iter() {
                    self.write_payload(&v)?;
                }
                Ok(())
            }
        }
    }
}

/// Checks the KV entries (keys 1..=65535 bytes and unique, values
/// encodable, encoded arrays valid) and returns the section's length.
fn check_kv(kv: &[(&str, KvValue<'_>)]) -> Result<u32, Misuse> {
    let mut total: u64 = 4;
    for (i, (key, value)) in kv.iter().enumerate() {
        if key.is_empty() || key.len() > usize::from(u16::MAX) {
            return Err(Misuse::BadName);
        }
        if kv.iter().take(i).any(|(k, _)| k == key) {
            return Err(Misuse::DuplicateName);
        }
        let payload = payload_len(value).ok_or(Misuse::BadKv)?;
        total = total
            .checked_add(3_u64.saturating_add(key.len() as u64))
            .and_then(|t| t.checked_add(payload))
            .ok_or(Misuse::BadKv)?;
    }
    u32::try_from(total).map_err(|_| Misuse::BadKv)
}
