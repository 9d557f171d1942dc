//! [`FileView`]: a whole file's bytes, validated once, then read by name
//! or in order without a copy.

use core::cmp::Ordering;
use core::mem::offset_of;

use zerocopy::FromBytes;
use zerocopy::little_endian::U64;

use super::entry::{INDEX_COUNT_LEN, IndexEntry, MIN_ENTRY_LEN, read_entry, split_entry};
use super::error::{FileError, FileErrorKind, Section};
use super::header::{FILE_HEADER_LEN, FILE_MAGIC, FileFlags, FileHeader};
use super::kv::{DEFAULT_MAX_KV_ENTRIES, KvSection};
use super::sort::heapsort;
use super::trailer::{TRAILER_LEN, Trailer};
use super::{align_up, crc32c_append};
use crate::composite::{
    CompositeError, CompositeErrorKind, CompositeValidator, MAX_COMPOSITE_DEPTH,
};
use crate::descriptor::{FixedHeader, HEADER_LEN, Layout, ReadOptions, TensorView};

/// Indexes of at most this many entries are checked without a caller table
/// even when they are neither sorted by name nor in file order (pairwise).
pub const SMALL_INDEX: u64 = 64;
/// The most members of one partition composite the view tracks.
pub const MAX_PARTITION_MEMBERS: usize = 64;

/// What a file reader accepts and how it checks the index CRC.
#[derive(Debug, Clone, Copy)]
pub struct FileOptions<'o> {
    /// Options for every descriptor of the file.
    pub descriptor: ReadOptions<'o>,
    /// The most KV entries accepted.
    pub max_kv_entries: u32,
    /// CRC-32C, continuing from a previous value (`crc(a ++ b) ==
    /// f(crc(a), b)`, starting from 0). The default is the core's portable
    /// one; `hurray_io` passes a hardware one.
    pub crc32c: fn(u32, &[u8]) -> u32,
}

impl FileOptions<'static> {
    /// Strict descriptors, [`DEFAULT_MAX_KV_ENTRIES`], the portable CRC.
    pub const STRICT: Self = Self {
        descriptor: ReadOptions::STRICT,
        max_kv_entries: DEFAULT_MAX_KV_ENTRIES,
        crc32c: crc32c_append,
    };
}

impl Default for FileOptions<'_> {
    fn default() -> Self {
        FileOptions::STRICT
    }
}

/// A hurray file whose header, trailer, KV section and index are
/// validated, opened in one pass over the index without reading a
/// descriptor or a data byte; each tensor is checked against its entry as
/// it is handed out. See [`FileView`] for the fully validated file.
///
/// ```
/// use hurray_core::file::{FileIndex, FileWriter, WriterOptions, IndexEntry};
/// let mut index = [IndexEntry::default(); 1];
/// let file = FileWriter::new(Vec::new(), WriterOptions::default(), &mut index)?.finish(&[])?;
/// let idx = FileIndex::parse(&file)?;
/// assert!(idx.is_empty());
/// assert!(idx.get("missing")?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FileIndex<'a> {
    bytes: &'a [u8],
    header: &'a FileHeader,
    flags: FileFlags,
    alignment: u32,
    index: &'a [u8],
    index_offset: u64,
    count: u32,
    kv: KvSection<'a>,
    options: ReadOptions<'a>,
    /// Entry offsets (in `index`) sorted by name, when a table was given.
    by_name: Option<&'a [u32]>,
    /// Entry offsets in file order, when the index is not in file order.
    file_order: Option<&'a [u32]>,
    /// Whether index order is file order.
    in_file_order: bool,
}

/// Where the sections lie, from the header and trailer alone.
struct Layout0<'a> {
    header: &'a FileHeader,
    flags: FileFlags,
    index: &'a [u8],
    index_offset: u64,
    count: u64,
    kv: Option<(&'a [u8], u64)>,
    region_end: u64,
    trailer_at: u64,
    stored_crc: u32,
}

const fn at(offset: u64, kind: FileErrorKind) -> FileError {
    FileError::new(offset, kind)
}

/// An error `n` bytes past `base` (a section's offset).
const fn past(base: u64, n: u64, kind: FileErrorKind) -> FileError {
    at(base.saturating_add(n), kind)
}

fn slice_at(bytes: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    bytes.get(start..end)
}

/// Header, trailer and section bounds: no section's bytes are read yet.
fn locate(bytes: &[u8]) -> Result<Layout0<'_>, FileError> {
    let available = bytes.len() as u64;
    let needed = (FILE_HEADER_LEN + TRAILER_LEN) as u64;
    let truncated = at(0, FileErrorKind::Truncated { needed, available });
    if available < needed {
        // The magic is still checked first when there are eight bytes.
        if bytes.get(..8).is_some_and(|m| m != FILE_MAGIC) {
            return Err(at(0, FileErrorKind::BadMagic));
        }
        return Err(truncated);
    }
    let Ok((header, _)) = FileHeader::ref_from_prefix(bytes) else {
        return Err(truncated);
    };
    let flags = header.check()?;
    let trailer_at = available.saturating_sub(TRAILER_LEN as u64);
    let Ok((_, trailer)) = Trailer::ref_from_suffix(bytes) else {
        return Err(truncated);
    };
    trailer.check(trailer_at)?;
    let stored_crc = trailer.index_crc32c.get();
    if !flags.contains(FileFlags::HAS_INDEX_CRC32C) && stored_crc != 0 {
        let kind = FileErrorKind::CrcWithoutFlag(stored_crc);
        return Err(past(trailer_at, Trailer::CRC_AT, kind));
    }
    let first = header.first_descriptor_offset.get();
    let first_at = offset_of!(FileHeader, first_descriptor_offset) as u64;
    let bad_first = at(first_at, FileErrorKind::BadFirstDescriptorOffset(first));
    if first > trailer_at {
        return Err(bad_first);
    }
    // The index: 8-aligned, after the header, before the trailer.
    let index_offset = trailer.index_offset.get();
    let index_length = trailer.index_length.get();
    let misplaced = |kind| Err(at(trailer_at, kind));
    if !index_offset.is_multiple_of(8) {
        return misplaced(FileErrorKind::SectionMisaligned(Section::Index));
    }
    let index_end = index_offset.checked_add(index_length);
    let index_ok = index_offset >= first
        && index_length >= INDEX_COUNT_LEN as u64
        && index_length <= u64::from(u32::MAX)
        && index_end.is_some_and(|e| e <= trailer_at);
    let index = match slice_at(bytes, index_offset, index_length) {
        Some(index) if index_ok => index,
        _ => return misplaced(FileErrorKind::SectionOutOfBounds(Section::Index)),
    };
    // The KV section: both location fields zero, or both set; the flag,
    // when set, requires one (a reference writer omits the flag).
    let kv_offset = trailer.kv_offset.get();
    let kv_length = u64::from(trailer.kv_length.get());
    let kv_at = trailer_at.saturating_add(Trailer::KV_AT);
    let kv = match (kv_offset, kv_length) {
        (0, 0) if !flags.contains(FileFlags::HAS_KV_METADATA) => None,
        (0, _) | (_, 0) => return Err(at(kv_at, FileErrorKind::KvLocation)),
        (o, l) => {
            if !o.is_multiple_of(8) {
                return Err(at(kv_at, FileErrorKind::SectionMisaligned(Section::Kv)));
            }
            let fits = o >= first && o.checked_add(l).is_some_and(|e| e <= index_offset);
            match slice_at(bytes, o, l) {
                Some(s) if fits => Some((s, o)),
                _ => return Err(at(kv_at, FileErrorKind::SectionOutOfBounds(Section::Kv))),
            }
        }
    };
    let region_end = kv.map_or(index_offset, |(_, o)| o);
    if first > region_end {
        return Err(bad_first);
    }
    // Entries take at least 34 bytes (an empty name is reported as such);
    // a missing count (the bounds above rule it out) fails as too large.
    let room = (index_length.saturating_sub(INDEX_COUNT_LEN as u64))
        .checked_div(MIN_ENTRY_LEN.saturating_sub(1) as u64)
        .unwrap_or(0);
    let count = U64::read_from_prefix(index).map_or(u64::MAX, |(c, _)| c.get());
    if count > room {
        return Err(at(index_offset, FileErrorKind::IndexLength));
    }
    Ok(Layout0 {
        header,
        flags,
        index,
        index_offset,
        count,
        kv,
        region_end,
        trailer_at,
        stored_crc,
    })
}

/// A tensor of a [`FileView`]: its index entry, its validated descriptor
/// and its data.
#[derive(Debug, Clone, Copy)]
pub struct Tensor<'a> {
    entry: IndexEntry<'a>,
    descriptor: TensorView<'a>,
    data: &'a [u8],
    alignment: u32,
}

impl<'a> Tensor<'a> {
    /// The tensor's name.
    #[must_use]
    pub const fn name(&self) -> &'a str {
        self.entry.name
    }

    /// Its index entry.
    #[must_use]
    pub const fn entry(&self) -> &IndexEntry<'a> {
        &self.entry
    }

    /// Its validated descriptor.
    #[must_use]
    pub const fn descriptor(&self) -> &TensorView<'a> {
        &self.descriptor
    }

    /// Its whole data region (`data_length` bytes from `data_offset`,
    /// padding between buffers included).
    #[must_use]
    pub const fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The bytes of buffer `i` (in buffer-table order).
    #[must_use]
    pub fn buffer(&self, i: u32) -> Option<&'a [u8]> {
        self.buffers().nth(usize::try_from(i).ok()?)
    }

    /// The bytes of each buffer, in buffer-table order.
    #[must_use]
    pub const fn buffers(&self) -> Buffers<'a> {
        Buffers {
            tensor: *self,
            next: 0,
            at: 0,
        }
    }
}

/// Iterator over a [`Tensor`]'s buffers.
#[derive(Debug, Clone)]
pub struct Buffers<'a> {
    tensor: Tensor<'a>,
    next: u32,
    at: u64,
}

impl<'a> Iterator for Buffers<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let handle = self.tensor.descriptor.buffers().get(self.next as usize)?;
        let size = handle.byte_size();
        let s = slice_at(self.tensor.data, self.at, size)?;
        self.next = self.next.saturating_add(1);
        let end = self.at.saturating_add(size);
        self.at = align_up(end, u64::from(self.tensor.alignment))?;
        Some(s)
    }
}

/// Bytes a tensor's buffers occupy from the first's start to the last's
/// end, each starting on `alignment`; `None` on overflow.
fn data_extent(view: &TensorView<'_>, alignment: u64) -> Option<u64> {
    let mut end: u64 = 0;
    for (i, h) in view.buffers().iter().enumerate() {
        let start = if i == 0 { 0 } else { align_up(end, alignment)? };
        end = start.checked_add(h.byte_size())?;
    }
    Some(end)
}

impl<'a> FileIndex<'a> {
    /// Opens a file with the default options and no table, reading its
    /// header, trailer, KV section and index but no descriptor and no data:
    /// the header, the trailer (magic first), the sections' bounds, the
    /// index CRC, every KV entry, every index entry alone, names unique
    /// (and sorted when flagged), every descriptor and data range inside
    /// the tensor region and aligned, and — when the index is in file order
    /// or small — no two tensors overlapping (for any other order that
    /// takes a sort, which [`FileView::parse_with`] does). Each
    /// descriptor is then checked against its entry when it is handed out
    /// ([`get`](Self::get)); [`verify`](Self::verify) checks them all and
    /// the composites. Lookups by name are linear without a table; an
    /// index of more than [`SMALL_INDEX`] entries that is not sorted by
    /// name needs one ([`parse_with`](Self::parse_with)).
    ///
    /// # Errors
    /// The first rule the file breaks, at its absolute offset.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FileError> {
        Self::parse_with(bytes, &FileOptions::STRICT, &mut [])
    }

    /// Slots of the table [`parse_with`](Self::parse_with) needs for
    /// O(log n) lookups and any index order: twice the entry count, read
    /// after the header, trailer and index bounds are checked (so at most
    /// a fraction of the file's length).
    ///
    /// # Errors
    /// As [`parse`](Self::parse), for the header, trailer and bounds.
    pub fn table_len(bytes: &[u8]) -> Result<usize, FileError> {
        let l = locate(bytes)?;
        usize::try_from(l.count)
            .ok()
            .and_then(|n| n.checked_mul(2))
            .ok_or(at(l.index_offset, FileErrorKind::IndexLength))
    }

    /// [`parse`](Self::parse) with options and a table of
    /// [`table_len`](Self::table_len) `u32` slots (or an empty one). With a
    /// table, lookups by name are O(log n) and any index order is checked
    /// in O(n log n).
    ///
    /// # Errors
    /// As [`parse`](Self::parse); [`FileErrorKind::NeedsTable`] when the
    /// index needs a table and none was given,
    /// [`FileErrorKind::TableTooSmall`] when the one given is too small.
    pub fn parse_with(
        bytes: &'a [u8],
        options: &FileOptions<'a>,
        table: &'a mut [u32],
    ) -> Result<Self, FileError> {
        Self::open(bytes, options, table, false)
    }

    /// The open; `full` also puts an index that is not in file order into
    /// file order through the table (an O(n log n) sort) and checks the
    /// tensors do not overlap, which [`FileView`] needs.
    fn open(
        bytes: &'a [u8],
        options: &FileOptions<'a>,
        table: &'a mut [u32],
        full: bool,
    ) -> Result<Self, FileError> {
        let l = locate(bytes)?;
        if l.flags.contains(FileFlags::HAS_INDEX_CRC32C) {
            let (stored, computed) = (l.stored_crc, (options.crc32c)(0, l.index));
            if computed != stored {
                let kind = FileErrorKind::CrcMismatch { stored, computed };
                return Err(past(l.trailer_at, Trailer::CRC_AT, kind));
            }
        }
        let kv = match l.kv {
            Some((s, o)) => KvSection::parse(s, o, options.max_kv_entries)?,
            None => KvSection::default(),
        };
        let Ok(count) = u32::try_from(l.count) else {
            return Err(at(l.index_offset, FileErrorKind::IndexLength));
        };
        let n = count as usize;
        let use_table = !table.is_empty();
        if use_table && table.len() < n.saturating_mul(2) {
            let needed = l.count.saturating_mul(2);
            return Err(at(l.index_offset, FileErrorKind::TableTooSmall { needed }));
        }
        let alignment = l.header.data_buffer_alignment.get();
        let first = l.header.first_descriptor_offset.get();
        let sorted = l.flags.contains(FileFlags::SORTED_INDEX);
        let mid = if use_table { n } else { 0 };
        let (names, rest) = table.split_at_mut_checked(mid).unwrap_or_default();

        // One pass over the index: each entry alone, the name order, and
        // whether index order is file order.
        let mut pos = INDEX_COUNT_LEN;
        let mut prev_name: &[u8] = &[];
        let mut in_file_order = true;
        // Whether the names ascend strictly in index order (so are unique)
        // without the flag that promises it: a writer that wrote them in
        // name order (`hurray convert` of a safetensors file does).
        let mut ascending = true;
        let mut prev_end = first;
        for i in 0..n {
            let (e, next) = read_entry(l.index, pos, l.index_offset)?;
            let entry_at = l.index_offset.saturating_add(pos as u64);
            if i > 0 && e.name.as_bytes() <= prev_name {
                if sorted {
                    let kind = if e.name.as_bytes() == prev_name {
                        FileErrorKind::DuplicateName
                    } else {
                        FileErrorKind::NotSorted
                    };
                    return Err(at(entry_at, kind));
                }
                ascending = false;
            }
            prev_name = e.name.as_bytes();
            check_entry_bounds(&e, first, l.region_end, entry_at)?;
            in_file_order &= e.descriptor_offset >= prev_end;
            prev_end = e.extent_end();
            // pos < index.len() <= u32::MAX (checked in `locate`).
            #[allow(clippy::cast_possible_truncation)]
            let here = pos as u32;
            if let Some(slot) = names.get_mut(i) {
                *slot = here;
            }
            // The file-order half starts as index order (sorted below when
            // that is not file order): any position of it is then one read
            // away, which a check in parts needs.
            if let Some(slot) = rest.get_mut(i).filter(|_| full) {
                *slot = here;
            }
            pos = next;
        }
        if pos != l.index.len() {
            return Err(past(l.index_offset, pos as u64, FileErrorKind::IndexLength));
        }
        let index = l.index;
        let name_of = |off: u32| split_entry(index, off as usize).map_or(&[][..], |(n, _, _)| n);
        let desc_of = |off: u32| {
            split_entry(index, off as usize).map_or(0, |(_, f, _)| f.descriptor_offset.get())
        };

        // Names are unique: free when sorted (flagged, or found ascending
        // with a table to fill: the table is then sorted as it stands);
        // else through the table, or pairwise for a small index.
        let unique = sorted || (ascending && use_table);
        let needs_table = needs_table(l.index_offset, l.count);
        if !unique {
            if use_table {
                heapsort(names, |a, b| name_of(a).cmp(name_of(b)));
                // (Pairs by zip: `windows` keeps a panic path at opt-level "s".)
                for (&a, &b) in names.iter().zip(names.iter().skip(1)) {
                    if name_of(a) == name_of(b) {
                        let off = u64::from(a.max(b));
                        return Err(past(l.index_offset, off, FileErrorKind::DuplicateName));
                    }
                }
            } else if l.count <= SMALL_INDEX {
                check_unique_pairwise(index, n, l.index_offset)?;
            } else {
                return Err(needs_table);
            }
        }
        // File order: the index's, or sorted through the table, or found
        // by scanning a small index.
        let file_order = if !full {
            None
        } else if use_table {
            // Index order, written by the pass above.
            let order = rest.get_mut(..n).unwrap_or_default();
            if !in_file_order {
                heapsort(order, |a, b| desc_of(a).cmp(&desc_of(b)));
            }
            Some(&*order)
        } else if in_file_order || l.count <= SMALL_INDEX {
            None
        } else {
            return Err(needs_table);
        };
        let view = FileIndex {
            bytes,
            header: l.header,
            flags: l.flags,
            alignment,
            index,
            index_offset: l.index_offset,
            count,
            kv,
            options: options.descriptor,
            by_name: if use_table { Some(&*names) } else { None },
            file_order,
            in_file_order,
        };
        if !in_file_order && (full || view.count_is_small()) {
            view.check_overlaps()?;
        }
        Ok(view)
    }

    /// Checks what [`parse`](Self::parse) left for later — every
    /// descriptor against its entry and data region, and every composite —
    /// and returns the fully validated [`FileView`].
    ///
    /// # Errors
    /// The first rule a tensor or composite breaks;
    /// [`FileErrorKind::NeedsTable`] when the index is neither in file order
    /// nor small (open it with [`FileView::parse_with`], which sorts it).
    pub fn verify(self) -> Result<FileView<'a>, FileError> {
        self.verify_each(|_| {})
    }

    /// [`verify`](Self::verify), handing each tensor to `each` as soon as
    /// its own checks pass, in file order (a composite's head before its
    /// members): the descriptors the check parsed, without parsing them
    /// again (what [`FileView::iter_file_order`] does per tensor). Every
    /// tensor is handed out once; the file is valid only if this returns
    /// `Ok` (a later tensor or a composite's rule can still fail, after
    /// earlier tensors were handed out).
    ///
    /// ```
    /// use hurray_core::file::{FileIndex, FileWriter, WriterOptions, IndexEntry};
    /// let mut index = [IndexEntry::default(); 1];
    /// let file = FileWriter::new(Vec::new(), WriterOptions::default(), &mut index)?.finish(&[])?;
    /// let mut seen = 0;
    /// let view = FileIndex::parse(&file)?.verify_each(|_| seen += 1)?;
    /// assert_eq!(seen, view.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`verify`](Self::verify).
    pub fn verify_each(self, mut each: impl FnMut(Tensor<'a>)) -> Result<FileView<'a>, FileError> {
        self.file_order_known()?;
        self.check_tensors(&mut each)?;
        Ok(FileView { index: self })
    }

    /// No two tensors overlap, walking an index not in file order in file
    /// order (an index in file order was checked as it was read).
    fn check_overlaps(&self) -> Result<(), FileError> {
        let mut order = self.order(self.needs_scan());
        let mut prev_end = 0u64;
        while order.i < self.count {
            let off = order.next().ok_or(self.misplaced())?;
            self.place(off, &mut prev_end)?;
        }
        Ok(())
    }

    /// The entry at `off`, and its offset in the file, placed after
    /// `prev_end` (then moved to the end of its extent): no two tensors
    /// overlap.
    fn place(&self, off: u32, prev_end: &mut u64) -> Result<(IndexEntry<'a>, u64), FileError> {
        let entry_at = self.index_offset.saturating_add(u64::from(off));
        let (e, _) = read_entry(self.index, off as usize, self.index_offset)?;
        if e.descriptor_offset < *prev_end {
            return Err(at(entry_at, FileErrorKind::DescriptorPlacement));
        }
        *prev_end = e.extent_end();
        Ok((e, entry_at))
    }

    /// A tensor the file order should have reached but did not (an order
    /// that ends early, or a part's first position past it).
    const fn misplaced(&self) -> FileError {
        at(self.index_offset, FileErrorKind::DescriptorPlacement)
    }

    /// Every descriptor and data region, in file order, with composites.
    fn check_tensors(&self, each: &mut impl FnMut(Tensor<'a>)) -> Result<(), FileError> {
        let first = self.header.first_descriptor_offset.get();
        self.check_run(self.order(self.needs_scan()), first, self.count, each)
    }

    /// The tensors at file-order positions `order.i..end`, placed after
    /// `prev_end`, with their composites' members (which may lie past
    /// `end`: checked here, handed out by the part they lie in).
    fn check_run(
        &self,
        mut order: FileOrder<'a>,
        mut prev_end: u64,
        end: u32,
        each: &mut impl FnMut(Tensor<'a>),
    ) -> Result<(), FileError> {
        while order.i < end {
            let pos = order.i;
            let off = order.next().ok_or(self.misplaced())?;
            self.check_tree(off, pos, end, &mut order, &mut prev_end, 1, each)?;
        }
        Ok(())
    }

    /// The tensor at file-order position `pos` (entry `off`) and, when it
    /// is a composite, its members (read on from `order`); each is handed
    /// to `each` when its position is below `limit` (a part's end: the
    /// members past it are checked here and handed out by the next part).
    #[allow(clippy::too_many_arguments)]
    fn check_tree(
        &self,
        off: u32,
        pos: u32,
        limit: u32,
        order: &mut FileOrder<'a>,
        prev_end: &mut u64,
        depth: u8,
        each: &mut impl FnMut(Tensor<'a>),
    ) -> Result<TensorView<'a>, FileError> {
        let (e, entry_at) = self.place(off, prev_end)?;
        let t = self.check_tensor(&e, entry_at)?;
        let view = t.descriptor;
        if pos < limit {
            each(t);
        }
        if let Layout::Composite(_) = view.layout() {
            let here = e.descriptor_offset;
            let fail = |err: CompositeError| at(here, FileErrorKind::Composite(err));
            if depth > MAX_COMPOSITE_DEPTH {
                let kind = CompositeErrorKind::NestingTooDeep;
                return Err(fail(CompositeError::at(u32::MAX, kind)));
            }
            let mut v = CompositeValidator::<MAX_PARTITION_MEMBERS>::new(&view).map_err(fail)?;
            while v.remaining() > 0 {
                let at = order.i;
                let Some(next) = order.next() else { break };
                let deeper = depth.saturating_add(1);
                let member = self.check_tree(next, at, limit, order, prev_end, deeper, each)?;
                v.push(&member).map_err(fail)?;
            }
            v.finish().map_err(fail)?;
        }
        Ok(view)
    }

    /// One tensor: its descriptor against its entry, its data region.
    fn check_tensor(&self, e: &IndexEntry<'a>, entry_at: u64) -> Result<Tensor<'a>, FileError> {
        let d_at = e.descriptor_offset;
        let desc = slice_at(self.bytes, d_at, u64::from(e.descriptor_length))
            .ok_or(at(entry_at, FileErrorKind::DescriptorPlacement))?;
        // The index's length must be the descriptor's own.
        if let Ok((h, _)) = FixedHeader::ref_from_prefix(desc) {
            let (index, descriptor) = (e.descriptor_length, h.descriptor_length.get());
            if h.magic == crate::descriptor::DESCRIPTOR_MAGIC && descriptor != index {
                let length_at = offset_of!(FixedHeader, descriptor_length) as u64;
                let kind = FileErrorKind::DescriptorLength { index, descriptor };
                return Err(past(d_at, length_at, kind));
            }
        }
        let view = TensorView::parse_with(desc, &self.options)
            .map_err(|err| at(d_at, FileErrorKind::Descriptor(err)))?;
        let alignment = u64::from(self.alignment);
        let has_buffers = !view.buffers().is_empty();
        if has_buffers && !e.data_offset.is_multiple_of(alignment) {
            return Err(at(entry_at, FileErrorKind::DataPlacement));
        }
        let expected =
            data_extent(&view, alignment).ok_or(at(entry_at, FileErrorKind::DataPlacement))?;
        let index = e.data_length;
        if expected != index {
            return Err(at(entry_at, FileErrorKind::DataLength { index, expected }));
        }
        let data = slice_at(self.bytes, e.data_offset, e.data_length)
            .ok_or(at(entry_at, FileErrorKind::DataPlacement))?;
        Ok(Tensor {
            entry: *e,
            descriptor: view,
            data,
            alignment: self.alignment,
        })
    }

    const fn order(&self, scan: bool) -> FileOrder<'a> {
        FileOrder {
            index: self.index,
            table: self.file_order,
            scan,
            count: self.count,
            pos: INDEX_COUNT_LEN,
            i: 0,
            last: None,
        }
    }

    /// The tensor of the entry at `off`, its descriptor checked against
    /// the entry.
    fn tensor_at(&self, off: u32) -> Result<Tensor<'a>, FileError> {
        let (e, _) = read_entry(self.index, off as usize, self.index_offset)?;
        self.check_tensor(&e, self.index_offset.saturating_add(u64::from(off)))
    }

    /// The tensor named `name`, its descriptor checked against its entry:
    /// O(log n) with a table, else a linear scan of the index (stopping
    /// early when it is sorted). `Ok(None)` when there is none.
    ///
    /// # Errors
    /// The first rule the tensor's descriptor or data region breaks.
    pub fn get(&self, name: &str) -> Result<Option<Tensor<'a>>, FileError> {
        self.find(name).map(|off| self.tensor_at(off)).transpose()
    }

    /// The offset in the index of the entry named `name`.
    fn find(&self, name: &str) -> Option<u32> {
        let key = name.as_bytes();
        let index = self.index;
        let name_of = |off: u32| split_entry(index, off as usize).map(|(n, _, _)| n);
        if let Some(table) = self.by_name {
            let i = table
                .binary_search_by(|&off| name_of(off).map_or(Ordering::Less, |n| n.cmp(key)))
                .ok()?;
            return table.get(i).copied();
        }
        let sorted = self.flags.contains(FileFlags::SORTED_INDEX);
        let mut pos = INDEX_COUNT_LEN;
        for _ in 0..self.count {
            let (n, _, next) = split_entry(index, pos)?;
            if n == key {
                return u32::try_from(pos).ok();
            }
            if sorted && n > key {
                return None;
            }
            pos = next;
        }
        None
    }

    /// The tensors in index order, each checked as by [`get`](Self::get).
    #[must_use]
    pub const fn iter(&self) -> Tensors<'a> {
        Tensors {
            view: *self,
            order: FileOrder {
                table: None,
                ..self.order(false)
            },
        }
    }

    /// The tensors in file order (ascending descriptor offset: a
    /// composite's head, then its members), each checked as by
    /// [`get`](Self::get). One [`FileErrorKind::NeedsTable`] error when
    /// the index is neither in file order nor small (a [`FileView`] always
    /// knows its file order).
    #[must_use]
    pub const fn iter_file_order(&self) -> Tensors<'a> {
        Tensors {
            view: *self,
            order: self.order(self.needs_scan()),
        }
    }

    /// [`FileErrorKind::NeedsTable`] for this index.
    const fn needs_table(&self) -> FileError {
        needs_table(self.index_offset, self.count as u64)
    }

    /// `Ok` when file order can be walked (the index's own, a sorted table,
    /// or a scan of a small index), else [`FileErrorKind::NeedsTable`].
    const fn file_order_known(&self) -> Result<(), FileError> {
        if self.in_file_order || self.file_order.is_some() || self.count_is_small() {
            return Ok(());
        }
        Err(self.needs_table())
    }

    const fn count_is_small(&self) -> bool {
        self.count as u64 <= SMALL_INDEX
    }

    const fn needs_scan(&self) -> bool {
        self.file_order.is_none() && !self.in_file_order
    }
}

/// [`FileErrorKind::NeedsTable`]: the index at `index_offset` is neither
/// in file order nor small, and no table was given.
const fn needs_table(index_offset: u64, entries: u64) -> FileError {
    at(index_offset, FileErrorKind::NeedsTable { entries })
}

/// Checks an entry's ranges against the file alone.
fn check_entry_bounds(
    e: &IndexEntry<'_>,
    first: u64,
    region_end: u64,
    entry_at: u64,
) -> Result<(), FileError> {
    let d = e.descriptor_offset;
    let d_end = d.checked_add(u64::from(e.descriptor_length));
    let desc_ok = d.is_multiple_of(8)
        && d >= first
        && e.descriptor_length as usize >= HEADER_LEN
        && d_end.is_some_and(|end| end <= region_end);
    if !desc_ok {
        return Err(at(entry_at, FileErrorKind::DescriptorPlacement));
    }
    let data_end = e.data_offset.checked_add(e.data_length);
    let data_ok = d_end.is_some_and(|de| e.data_offset >= de)
        && data_end.is_some_and(|end| end <= region_end);
    if !data_ok {
        return Err(at(entry_at, FileErrorKind::DataPlacement));
    }
    Ok(())
}

/// Pairwise name uniqueness for an index of at most [`SMALL_INDEX`]
/// entries.
fn check_unique_pairwise(index: &[u8], n: usize, base: u64) -> Result<(), FileError> {
    let mut a = INDEX_COUNT_LEN;
    for i in 0..n {
        let Some((name, _, next)) = split_entry(index, a) else {
            return Ok(());
        };
        let mut b = next;
        for _ in i.saturating_add(1)..n {
            let Some((other, _, after)) = split_entry(index, b) else {
                break;
            };
            if other == name {
                return Err(past(base, b as u64, FileErrorKind::DuplicateName));
            }
            b = after;
        }
        a = next;
    }
    Ok(())
}

/// Entry offsets in file order: the index's own order, a sorted table, or
/// (small indexes) a scan for the next larger descriptor offset.
#[derive(Debug, Clone)]
struct FileOrder<'a> {
    index: &'a [u8],
    table: Option<&'a [u32]>,
    scan: bool,
    count: u32,
    pos: usize,
    i: u32,
    last: Option<(u64, usize)>,
}

impl Iterator for FileOrder<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.i >= self.count {
            return None;
        }
        let found = if let Some(t) = self.table {
            *t.get(self.i as usize)?
        } else if self.scan {
            // The entry after the last in (descriptor offset, position)
            // order: ties are visited too, so overlaps are seen.
            let mut best: Option<(u64, usize)> = None;
            let mut p = INDEX_COUNT_LEN;
            for _ in 0..self.count {
                let (_, f, next) = split_entry(self.index, p)?;
                let key = (f.descriptor_offset.get(), p);
                let above = self.last.is_none_or(|l| key > l);
                if above && best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
                p = next;
            }
            let key = best?;
            self.last = Some(key);
            u32::try_from(key.1).ok()?
        } else {
            let p = self.pos;
            let (_, _, next) = split_entry(self.index, p)?;
            self.pos = next;
            u32::try_from(p).ok()?
        };
        self.i = self.i.saturating_add(1);
        Some(found)
    }
}

/// Iterator over a [`FileIndex`]'s tensors, each checked on the way out.
#[derive(Debug, Clone)]
pub struct Tensors<'a> {
    view: FileIndex<'a>,
    order: FileOrder<'a>,
}

impl<'a> Iterator for Tensors<'a> {
    type Item = Result<Tensor<'a>, FileError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.order.scan && !self.view.count_is_small() {
            // File order is unknown and a scan would be quadratic.
            self.order.count = 0;
            return Some(Err(self.view.needs_table()));
        }
        let off = self.order.next()?;
        Some(self.view.tensor_at(off))
    }
}

/// A whole file, fully validated: [`FileIndex`]'s checks, then every
/// descriptor (a strict [`TensorView`]) against its entry, every data
/// region's length and alignment, and every composite assembled in file
/// order and checked when its last member arrives (torn, too deep or
/// breaking its rule: an error). Its accessors cannot fail.
///
/// ```
/// use hurray_core::file::{FileView, FileWriter, WriterOptions, IndexEntry};
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
///
/// // Write a one-tensor file into a Vec...
/// let data = [7u8; 64];
/// let buffers = [BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let mut desc = [0u8; 64];
/// let n = TensorDescriptor::row_major(ElementType::Float32, &[4, 4], &buffers).encode(&mut desc)?;
/// let mut index = [IndexEntry::default(); 4];
/// let mut w = FileWriter::new(Vec::new(), WriterOptions::default(), &mut index)?;
/// w.write_tensor("w", &TensorView::parse(&desc[..n])?, &[&data])?;
/// let file = w.finish(&[])?;
///
/// // ...and read it back.
/// let view = FileView::parse(&file)?;
/// let t = view.get("w").unwrap();
/// assert!(t.descriptor().shape().iter().eq([4, 4]));
/// assert_eq!(t.buffer(0), Some(&data[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FileView<'a> {
    index: FileIndex<'a>,
}

/// The getters of a [`FileIndex`] (`name -> type = |index| value`), and
/// the same getters of a [`FileView`], which answers them from its index.
macro_rules! index_getters {
    ($($(#[$doc:meta])* $name:ident -> $ty:ty = |$s:ident| $value:expr;)*) => {
        impl<'a> FileIndex<'a> {$(
            $(#[$doc])*
            #[must_use]
            pub const fn $name(&self) -> $ty {
                let $s = self;
                $value
            }
        )*}

        impl<'a> FileView<'a> {$(
            $(#[$doc])*
            #[must_use]
            pub const fn $name(&self) -> $ty {
                self.index.$name()
            }
        )*}
    };
}

index_getters! {
    /// Number of tensors.
    len -> u32 = |i| i.count;
    /// Whether the file holds no tensor.
    is_empty -> bool = |i| i.count == 0;
    /// The file header.
    header -> &'a FileHeader = |i| i.header;
    /// The file flags.
    flags -> FileFlags = |i| i.flags;
    /// `data_buffer_alignment`.
    alignment -> u32 = |i| i.alignment;
    /// The container version `(major, minor)`.
    version -> (u8, u8) = |i| (i.header.version_major, i.header.version_minor);
    /// The KV section (empty when the file has none).
    kv -> KvSection<'a> = |i| i.kv;
    /// The whole file's bytes.
    as_bytes -> &'a [u8] = |i| i.bytes;
}

impl<'a> FileView<'a> {
    /// Opens and fully validates a file with the default options and no
    /// table ([`FileIndex::parse`], then [`FileIndex::verify`]).
    ///
    /// # Errors
    /// The first rule the file breaks, at its absolute offset.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FileError> {
        FileIndex::parse(bytes)?.verify()
    }

    /// [`parse`](Self::parse) with options and a table (see
    /// [`FileIndex::parse_with`]).
    ///
    /// # Errors
    /// As [`FileIndex::parse_with`] and [`FileIndex::verify`].
    pub fn parse_with(
        bytes: &'a [u8],
        options: &FileOptions<'a>,
        table: &'a mut [u32],
    ) -> Result<Self, FileError> {
        FileIndex::open(bytes, options, table, true)?.verify()
    }

    /// [`parse_with`](Self::parse_with), handing each tensor to `each` as
    /// the validation reaches it, in file order (see
    /// [`FileIndex::verify_each`]): a caller that wants every tensor (a
    /// loader) collects them here instead of walking
    /// [`iter_file_order`](Self::iter_file_order), which parses each
    /// descriptor again. The file is valid only if this returns `Ok`.
    ///
    /// # Errors
    /// As [`parse_with`](Self::parse_with).
    pub fn parse_with_each(
        bytes: &'a [u8],
        options: &FileOptions<'a>,
        table: &'a mut [u32],
        each: impl FnMut(Tensor<'a>),
    ) -> Result<Self, FileError> {
        FileIndex::open(bytes, options, table, true)?.verify_each(each)
    }

    /// [`parse_with`](Self::parse_with) with the per-tensor checks cut
    /// into `parts` consecutive ranges of file order, to be run apart (on
    /// several threads: [`FileParts::check`]) and joined by
    /// [`FileParts::finish`]. The header, trailer, KV section and index are
    /// checked here, as by [`parse_with`](Self::parse_with) (the index's
    /// ranges, names and overlaps); what the parts check is each
    /// descriptor against its entry, each data region, and the composites.
    /// `parts` is clamped to 1..=the tensor count; a small index that is
    /// neither in file order nor given a table gets one part.
    ///
    /// ```
    /// use hurray_core::file::{FileView, FileWriter, FileOptions, WriterOptions, IndexEntry};
    /// let mut index = [IndexEntry::default(); 1];
    /// let file = FileWriter::new(Vec::new(), WriterOptions::default(), &mut index)?.finish(&[])?;
    /// let mut table = vec![0u32; hurray_core::file::FileIndex::table_len(&file)?];
    /// let parts = FileView::parse_in_parts(&file, &FileOptions::STRICT, &mut table, 4)?;
    /// let checked = (0..parts.len()).map(|k| parts.check(k, |_| {}));
    /// let view = parts.finish(checked)?;
    /// assert!(view.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`FileIndex::parse_with`]; [`FileErrorKind::NeedsTable`] as
    /// [`FileIndex::verify`].
    pub fn parse_in_parts(
        bytes: &'a [u8],
        options: &FileOptions<'a>,
        table: &'a mut [u32],
        parts: u32,
    ) -> Result<FileParts<'a>, FileError> {
        let index = FileIndex::open(bytes, options, table, true)?;
        index.file_order_known()?;
        let parts = if index.needs_scan() {
            1
        } else {
            parts.clamp(1, index.count.max(1))
        };
        Ok(FileParts { index, parts })
    }

    /// The validated index under this view.
    #[must_use]
    pub const fn index(&self) -> &FileIndex<'a> {
        &self.index
    }

    /// The tensor named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Tensor<'a>> {
        self.index.get(name).ok().flatten()
    }

    /// The tensors in index order.
    pub fn iter(&self) -> impl Iterator<Item = Tensor<'a>> + use<'a> {
        self.index.iter().filter_map(Result::ok)
    }

    /// The tensors in file order: a composite's head, then its members.
    pub fn iter_file_order(&self) -> impl Iterator<Item = Tensor<'a>> + use<'a> {
        self.index.iter_file_order().filter_map(Result::ok)
    }
}

/// A file whose index is checked and whose per-tensor checks are cut into
/// parts of its file order ([`FileView::parse_in_parts`]): each part is
/// checked on its own ([`check`](Self::check), from any thread), and
/// [`finish`](Self::finish) makes the [`FileView`] once every part passed.
///
/// The parts together check exactly what [`FileIndex::verify`] checks, and
/// report the same first error: a part starts at its first position (the
/// placement against the tensor just before it: the seam), and a
/// composite whose members run past its part's end is followed to its
/// last member by that part (the members are handed out by the part they
/// lie in). [`finish`](Self::finish) returns the error of the first part,
/// in file order, that failed.
#[derive(Debug, Clone, Copy)]
pub struct FileParts<'a> {
    index: FileIndex<'a>,
    parts: u32,
}

/// A receipt: one part of a [`FileParts`] passed its checks. Only
/// [`FileParts::check`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartChecked {
    part: u32,
    parts: u32,
    /// The index's address: a receipt of another file's parts is refused.
    index_at: usize,
}

impl<'a> FileParts<'a> {
    /// Number of parts.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.parts
    }

    /// Whether there are no parts (never: at least one, even for a file
    /// without tensors).
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.parts == 0
    }

    /// The checked index (header, trailer, KV section, index entries),
    /// before any descriptor is read.
    #[must_use]
    pub const fn index(&self) -> &FileIndex<'a> {
        &self.index
    }

    /// The file-order positions of part `part`: `[start, end)`.
    fn bounds(&self, part: u32) -> (u32, u32) {
        let n = u64::from(self.index.count);
        let p = u64::from(self.parts.max(1));
        let cut = |k: u64| {
            n.saturating_mul(k)
                .checked_div(p)
                .and_then(|c| u32::try_from(c).ok())
                .unwrap_or(self.index.count)
        };
        let part = u64::from(part);
        (cut(part.min(p)), cut(part.saturating_add(1).min(p)))
    }

    /// Checks part `part` (`0..len()`): each of its tensors' descriptor
    /// against its entry and its data region, and each composite whose
    /// head lies in it (with all its members), as [`FileIndex::verify_each`]
    /// does, handing each tensor of the part to `each` in file order as
    /// soon as its own checks pass. A part out of range checks nothing (and
    /// its receipt makes [`finish`](Self::finish) check the whole file
    /// again).
    ///
    /// # Errors
    /// The first rule a tensor or composite of the part breaks.
    pub fn check(
        &self,
        part: u32,
        mut each: impl FnMut(Tensor<'a>),
    ) -> Result<PartChecked, FileError> {
        let receipt = PartChecked {
            part,
            parts: self.parts,
            index_at: self.index.index.as_ptr() as usize,
        };
        if part >= self.parts {
            return Ok(receipt);
        }
        let idx = &self.index;
        if self.parts == 1 {
            // The whole file: exactly the sequential check (which also
            // walks a small index by scanning).
            idx.check_tensors(&mut each)?;
            return Ok(receipt);
        }
        let (start, end) = self.bounds(part);
        let mut order = idx.order(false);
        let mut prev_end = idx.header.first_descriptor_offset.get();
        // The seam: the part's first tensor is placed after the tensor
        // before it (positions are one table read away when a table was
        // given, else walked).
        if start > 0 {
            let skip = start.saturating_sub(1);
            let before = match order.table {
                Some(_) => {
                    order.i = skip;
                    order.next()
                }
                None => order.nth(skip as usize),
            };
            idx.place(before.ok_or(idx.misplaced())?, &mut prev_end)?;
        }
        idx.check_run(order, prev_end, end, &mut each)?;
        Ok(receipt)
    }

    /// The fully validated [`FileView`], from the results of
    /// [`check`](Self::check) for parts `0, 1, …, len() - 1`, in that
    /// order: the first error among them, else the view. Results that are
    /// not exactly those parts' receipts (missing, out of order, of
    /// another file) make it check the whole file itself
    /// ([`FileIndex::verify`]), so that a view is never made unchecked.
    ///
    /// # Errors
    /// The first part's error, in file order (what
    /// [`FileIndex::verify`] reports).
    pub fn finish(
        self,
        checked: impl IntoIterator<Item = Result<PartChecked, FileError>>,
    ) -> Result<FileView<'a>, FileError> {
        let index_at = self.index.index.as_ptr() as usize;
        let mut next: u32 = 0;
        for r in checked {
            match r {
                Ok(c) if c.part == next && c.parts == self.parts && c.index_at == index_at => {
                    next = next.saturating_add(1);
                }
                Ok(_) => return self.index.verify(),
                Err(e) => return Err(e),
            }
        }
        if next == self.parts {
            Ok(FileView { index: self.index })
        } else {
            self.index.verify()
        }
    }
}
