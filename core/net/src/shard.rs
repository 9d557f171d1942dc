//! Parallel transfers (`docs/spec/network.md` [NP-SHARD-1..4]): how the
//! server cuts a tensor into shards, and how the client places each shard's
//! bytes straight into one preallocated destination.
//!
//! The server cuts only what it can send without a copy: a dense
//! row-major (or column-major) tensor of whole-byte elements in one buffer,
//! along its slowest axis, so every shard is one contiguous byte range of
//! the mapped file. Anything else is sent whole.
//!
//! The client trusts no shard: each shard's descriptor was validated by the
//! session (its box lies inside its parent), is checked against the first
//! shard's parent shape, element type and layout before a byte of it is
//! placed, and once every shard is in, `check_shards` proves they tile the
//! parent (no overlap, no gap). A destination is discarded (a file's
//! temporary name removed) when any check fails.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hurray_core::{
    BufferHandle, BuilderLayout, DescriptorBuilder, ElementType, Layout, TensorView,
};

use crate::Error;

/// Highest rank the shard builder handles (a larger one is sent whole).
const RANK: usize = 32;

/// Bytes per element of a whole-byte element type.
fn element_bytes(t: ElementType) -> Option<u64> {
    match t.bits() {
        Some(b) if b > 0 && b % 8 == 0 => Some(u64::from(b / 8)),
        _ => None,
    }
}

/// Whether the layout is row-major (`Some(true)`), column-major
/// (`Some(false)`), or neither.
fn dense_order(view: &TensorView<'_>) -> Option<bool> {
    match view.layout() {
        Layout::RowMajor => Some(true),
        Layout::ColumnMajor => Some(false),
        _ => None,
    }
}

/// One shard the server sends: its descriptor and its byte range in the
/// tensor's buffer.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub(crate) descriptor: Vec<u8>,
    pub(crate) range: Range<usize>,
}

/// Cuts `view` into `count` shards along its slowest axis, or `None` when
/// it cannot be (not dense row- or column-major, several buffers, a sub-byte
/// or private element type, a quantization or shard section, a byte offset,
/// rank 0 or above 32, fewer than `count` slices along that axis).
pub(crate) fn plan(view: &TensorView<'_>, count: u32) -> Option<Vec<Piece>> {
    let row_major = dense_order(view)?;
    let e = element_bytes(view.element_type())?;
    let buffers = view.buffers();
    if count < 2
        || buffers.len() != 1
        || view.quantization().is_some()
        || view.shard().is_some()
        || view.byte_offset() != 0
        || view.is_dynamic()
    {
        return None;
    }
    let handle = buffers.get(0)?;
    let shape: Vec<u64> = view.shape().iter().collect();
    let rank = shape.len();
    if rank == 0 || rank > RANK {
        return None;
    }
    let axis = if row_major { 0 } else { rank - 1 };
    let extent = shape[axis];
    if extent < u64::from(count) {
        return None;
    }
    let volume = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    let slice_bytes = (volume / extent).checked_mul(e)?;
    if volume.checked_mul(e)? != handle.byte_size() {
        return None;
    }
    let mut pieces = Vec::new();
    let mut start = 0u64;
    for i in 0..u64::from(count) {
        // Slices split as evenly as the extent allows.
        let end = extent * (i + 1) / u64::from(count);
        let mut sub = shape.clone();
        sub[axis] = end - start;
        let mut offset = vec![0u64; rank];
        offset[axis] = start;
        let bytes = sub[axis].checked_mul(slice_bytes)?;
        let mut b = dense_builder(view, &sub, row_major, bytes)?;
        b.set_shard(&shape, &offset).ok()?;
        b.set_extension_type(view.extension_type());
        let mut out = vec![0u8; 4096];
        let n = b.encode(&mut out).ok()?;
        out.truncate(n);
        let lo = usize::try_from(start.checked_mul(slice_bytes)?).ok()?;
        let hi = usize::try_from(end.checked_mul(slice_bytes)?).ok()?;
        pieces.push(Piece {
            descriptor: out,
            range: lo..hi,
        });
        start = end;
    }
    Some(pieces)
}

/// What every shard of one transfer must share, and the parent tensor the
/// client writes: taken from the first shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parent {
    /// The parent's descriptor (for a whole tensor: its own).
    pub(crate) descriptor: Vec<u8>,
    /// Bytes of the parent's data (every buffer, back to back).
    pub(crate) total: u64,
    /// Sharded: parent shape, element bytes, row-major or not.
    geometry: Option<(Vec<u64>, u64, bool)>,
}

impl Parent {
    /// The parent of `shard` (a validated descriptor): itself when it
    /// carries no shard section, else a dense tensor of the parent shape
    /// with the shard's element type, layout and extension type (the
    /// shard's statistics describe the shard only and are dropped).
    /// With `total_shards` 1 the tensor is whole, even when it carries a
    /// shard section (a shard stored on its own).
    pub(crate) fn of(
        shard: &TensorView<'_>,
        total_data_bytes: u64,
        total_shards: u32,
    ) -> Result<Self, Error> {
        let mismatch = Error::Limit("a shard the client cannot place");
        let Some(s) = shard.shard().filter(|_| total_shards > 1) else {
            return Ok(Self {
                descriptor: shard.as_bytes().to_vec(),
                total: total_data_bytes,
                geometry: None,
            });
        };
        let row_major = dense_order(shard).ok_or(mismatch)?;
        let e = element_bytes(shard.element_type())
            .ok_or(Error::Limit("a shard the client cannot place"))?;
        let buffers = shard.buffers();
        let handle = buffers
            .get(0)
            .ok_or(Error::Limit("a shard the client cannot place"))?;
        if buffers.len() != 1 || shard.byte_offset() != 0 || shard.quantization().is_some() {
            return Err(Error::Limit("a shard the client cannot place"));
        }
        let parent: Vec<u64> = s.parent_shape.iter().collect();
        if parent.len() > RANK {
            return Err(Error::Limit("a shard the client cannot place"));
        }
        let total = parent
            .iter()
            .try_fold(e, |a, &d| a.checked_mul(d))
            .ok_or(Error::Limit("tensor size"))?;
        let h = BufferHandle::with_memory_class(
            total,
            handle.alignment(),
            handle.device_tag(),
            handle.sync_mode(),
            handle.memory_class(),
        )
        .map_err(|_| Error::Limit("tensor size"))?;
        let mut b = DescriptorBuilder::<RANK, 1>::new(shard.element_type());
        let bad = |_| Error::Limit("a shard the client cannot place");
        b.set_shape(&parent).map_err(bad)?;
        b.set_layout(if row_major {
            BuilderLayout::RowMajor
        } else {
            BuilderLayout::ColumnMajor
        });
        b.push_buffer(h).map_err(bad)?;
        b.set_extension_type(shard.extension_type());
        let mut out = vec![0u8; 4096];
        let n = b.encode(&mut out).map_err(bad)?;
        out.truncate(n);
        Ok(Self {
            descriptor: out,
            total,
            geometry: Some((parent, e, row_major)),
        })
    }

    /// Where the bytes of `shard` go in the parent; SHARD_MISMATCH-worthy
    /// (`Err`) when it does not belong to this parent.
    pub(crate) fn placement(&self, shard: &TensorView<'_>, total: u64) -> Result<Placement, ()> {
        let Some((parent, e, row_major)) = &self.geometry else {
            // A whole tensor: only itself belongs.
            return if shard.as_bytes() == self.descriptor.as_slice() {
                Ok(Placement::identity(self.total))
            } else {
                Err(())
            };
        };
        let s = shard.shard().ok_or(())?;
        if !s.parent_shape.iter().eq(parent.iter().copied())
            || element_bytes(shard.element_type()) != Some(*e)
            || shard.element_type()
                != TensorView::parse(&self.descriptor)
                    .map_err(|_| ())?
                    .element_type()
            || dense_order(shard) != Some(*row_major)
            || shard.buffers().len() != 1
            || shard.byte_offset() != 0
        {
            return Err(());
        }
        // Axes from slowest to fastest.
        let mut dims: Vec<(u64, u64, u64)> = shard
            .shape()
            .iter()
            .zip(s.shard_offset.iter())
            .zip(parent.iter())
            .map(|((n, o), &p)| (n, o, p))
            .collect();
        if !row_major {
            dims.reverse();
        }
        let volume = dims
            .iter()
            .try_fold(*e, |a, d| a.checked_mul(d.0))
            .ok_or(())?;
        if volume != total {
            return Err(());
        }
        Ok(Placement::boxed(&dims, *e))
    }
}

/// How a shard's bytes (in its own dense order) map onto the parent's.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    /// Bytes of one contiguous run (the fast axes the shard spans whole,
    /// times the first partial one).
    run: u64,
    /// The outer axes: (shard extent, shard offset, parent stride in bytes),
    /// slowest first.
    outer: Vec<(u64, u64, u64)>,
    /// Byte offset in the parent of the run's own axes' start.
    base: u64,
}

impl Placement {
    fn identity(total: u64) -> Self {
        Self {
            run: total.max(1),
            outer: Vec::new(),
            base: 0,
        }
    }

    /// `dims`: (shard extent, offset, parent extent), slowest first.
    fn boxed(dims: &[(u64, u64, u64)], e: u64) -> Self {
        // Parent strides, fastest axis last.
        let mut strides = vec![0u64; dims.len()];
        let mut acc = e;
        for (i, d) in dims.iter().enumerate().rev() {
            strides[i] = acc;
            acc = acc.saturating_mul(d.2);
        }
        // Fast axes the shard covers whole merge into one run, and so does
        // the first axis it does not.
        let mut k = dims.len();
        let mut run = e;
        while k > 0 {
            let (n, o, p) = dims[k - 1];
            run = run.saturating_mul(n);
            k -= 1;
            if !(o == 0 && n == p) {
                break;
            }
        }
        let base = dims[k..]
            .iter()
            .zip(&strides[k..])
            .fold(0u64, |a, (d, s)| a.saturating_add(d.1.saturating_mul(*s)));
        let outer = dims[..k]
            .iter()
            .zip(&strides[..k])
            .map(|(d, &s)| (d.0, d.1, s))
            .collect();
        Self {
            run: run.max(1),
            outer,
            base,
        }
    }

    /// Calls `put(parent_offset, bytes)` for the pieces of `bytes`, which
    /// start at byte `at` of the shard.
    pub(crate) fn scatter(
        &self,
        mut at: u64,
        mut bytes: &[u8],
        put: &mut dyn FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        while !bytes.is_empty() {
            let run_index = at / self.run;
            let within = at % self.run;
            // The run's outer index, fastest outer axis last.
            let mut rest = run_index;
            let mut off = self.base;
            for &(n, o, stride) in self.outer.iter().rev() {
                let i = rest % n.max(1);
                rest /= n.max(1);
                off = off.saturating_add(o.saturating_add(i).saturating_mul(stride));
            }
            let take = usize::try_from(self.run - within)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            put(off + within, &bytes[..take])?;
            bytes = &bytes[take..];
            at += take as u64;
        }
        Ok(())
    }
}

/// Where fetched bytes land: any offset, from any connection's task
/// ([`fetch_parallel_with`](crate::fetch_parallel_with)).
///
/// ```
/// use std::sync::Mutex;
/// use hurray_net::Destination;
///
/// /// Records what was written where.
/// struct Log(Mutex<Vec<(u64, usize)>>);
/// impl Destination for Log {
///     fn write_at(&self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
///         self.0.lock().unwrap().push((offset, bytes.len()));
///         Ok(())
///     }
/// }
/// let log = Log(Mutex::new(Vec::new()));
/// log.write_at(8, &[1, 2])?;
/// assert_eq!(log.0.lock().unwrap()[0], (8, 2));
/// # Ok::<(), std::io::Error>(())
/// ```
pub trait Destination: Send + Sync {
    /// Writes `bytes` at `offset` of the tensor's data (every buffer back to
    /// back).
    ///
    /// # Errors
    /// The write failed, or reaches past the data.
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()>;
}

/// Host memory, allocated once at the tensor's size.
#[derive(Debug)]
pub(crate) struct Memory(pub(crate) Mutex<Vec<u8>>);

impl Destination for Memory {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut v = self.0.lock().map_err(|_| io::Error::other("poisoned"))?;
        let at = usize::try_from(offset).map_err(|_| io::Error::other("offset"))?;
        v.get_mut(at..at.saturating_add(bytes.len()))
            .ok_or_else(|| io::Error::other("write past the tensor"))?
            .copy_from_slice(bytes);
        Ok(())
    }
}

/// A `.hrry` file being received: written whole first (data as holes)
/// under a temporary name, then filled in place; [`OutFile::commit`]
/// syncs and renames it, dropping it unfinished removes it.
#[derive(Debug)]
pub(crate) struct OutFile {
    file: File,
    /// (start in the data, length, offset in the file) per buffer.
    buffers: Vec<(u64, u64, u64)>,
    temp: PathBuf,
    dest: PathBuf,
    done: bool,
}

/// A `Write` that turns writes of the placeholder zeros into holes.
struct Holes<W> {
    inner: W,
    zeros: Range<usize>,
}

impl<W: Write + Seek> Write for Holes<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let p = buf.as_ptr() as usize;
        if !buf.is_empty() && self.zeros.contains(&p) && p + buf.len() <= self.zeros.end {
            let n = i64::try_from(buf.len()).map_err(|_| io::Error::other("length"))?;
            self.inner.seek(SeekFrom::Current(n))?;
            return Ok(buf.len());
        }
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl OutFile {
    /// Creates the file for one tensor named `name` with `descriptor`
    /// (validated), its data still to come.
    pub(crate) fn create(path: &Path, name: &str, descriptor: &[u8]) -> Result<Self, Error> {
        let view = TensorView::parse(descriptor).map_err(|_| Error::Limit("descriptor"))?;
        let mut file_name = path.file_name().unwrap_or_default().to_os_string();
        file_name.push(format!(".tmp-{}", std::process::id()));
        let temp = path.with_file_name(file_name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp)?;
        let mut out = Self {
            file,
            buffers: Vec::new(),
            temp,
            dest: path.to_path_buf(),
            done: false,
        };
        // The placeholder: never touched, so never resident (calloc'd pages).
        let sizes: Vec<u64> = view.buffers().iter().map(|b| b.byte_size()).collect();
        let largest = usize::try_from(sizes.iter().copied().max().unwrap_or(0))
            .map_err(|_| Error::Limit("tensor size"))?;
        let zeros = vec![0u8; largest];
        let parts: Vec<&[u8]> = sizes.iter().map(|&s| &zeros[..s as usize]).collect();
        let range = zeros.as_ptr() as usize..zeros.as_ptr() as usize + zeros.len();
        let sink = hurray_io::file::StdSink(Holes {
            inner: io::BufWriter::with_capacity(1 << 16, out.file.try_clone()?),
            zeros: range,
        });
        let mut w = hurray_core::file::FileWriter::new(
            sink,
            hurray_core::file::WriterOptions::default(),
            hurray_io::file::VecStore::default(),
        )
        .map_err(|_| Error::Limit("file writer"))?;
        w.write_tensor(name, &view, &parts)
            .map_err(|_| Error::Limit("writing the file"))?;
        let hurray_io::file::StdSink(mut holes) = w
            .finish(&[])
            .map_err(|_| Error::Limit("writing the file"))?;
        holes.flush()?;
        drop(holes);
        drop(zeros);
        // Where each buffer landed, read back from the file itself.
        let mut mapped = hurray_io::file::open(&out.temp)?;
        let base = mapped.bytes().as_ptr() as usize;
        let index = mapped.index().map_err(hurray_io::file::Error::from)?;
        let t = index
            .get(name)
            .map_err(hurray_io::file::Error::from)?
            .ok_or(Error::Limit("written file lacks its tensor"))?;
        let mut start = 0u64;
        for b in t.buffers() {
            let at = (b.as_ptr() as usize - base) as u64;
            out.buffers.push((start, b.len() as u64, at));
            start += b.len() as u64;
        }
        Ok(out)
    }

    /// Syncs the file, renames it to its final path, syncs the directory.
    pub(crate) fn commit(mut self) -> Result<(), Error> {
        self.file.sync_all()?;
        std::fs::rename(&self.temp, &self.dest)?;
        if let Some(dir) = self.dest.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        self.done = true;
        Ok(())
    }
}

impl Destination for OutFile {
    fn write_at(&self, offset: u64, mut bytes: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut at = offset;
        for &(start, len, file_at) in &self.buffers {
            if bytes.is_empty() {
                break;
            }
            if at >= start && at < start + len {
                let take = usize::try_from(start + len - at)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                self.file
                    .write_all_at(&bytes[..take], file_at + (at - start))?;
                bytes = &bytes[take..];
                at += take as u64;
            }
        }
        if bytes.is_empty() {
            Ok(())
        } else {
            Err(io::Error::other("write past the tensor"))
        }
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// A builder for a dense row- or column-major tensor of `view`'s element
/// type and `shape`, in one buffer of `bytes` bytes that keeps the
/// alignment, device, sync mode and memory class of `view`'s first buffer;
/// `None` when `view` has no buffer or the values are refused. Shards and
/// transcoded tensors are both made from it.
pub(crate) fn dense_builder(
    view: &TensorView<'_>,
    shape: &[u64],
    row_major: bool,
    bytes: u64,
) -> Option<DescriptorBuilder<RANK, 1>> {
    let handle = view.buffers().get(0)?;
    let h = BufferHandle::with_memory_class(
        bytes,
        handle.alignment(),
        handle.device_tag(),
        handle.sync_mode(),
        handle.memory_class(),
    )
    .ok()?;
    let mut b = DescriptorBuilder::<RANK, 1>::new(view.element_type());
    b.set_shape(shape).ok()?;
    b.set_layout(if row_major {
        BuilderLayout::RowMajor
    } else {
        BuilderLayout::ColumnMajor
    });
    b.push_buffer(h).ok()?;
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places every shard of a 3-D box split, byte by byte, and compares
    /// with the parent's own order.
    #[test]
    fn placement_puts_every_byte_where_the_parent_has_it() {
        let parent = [4u64, 3, 5];
        let e = 2u64;
        // Shard: rows 1..3, cols 1..3, all of the last axis / part of it.
        for (shape, offset) in [
            ([2u64, 2, 5], [1u64, 1, 0]),
            ([2, 3, 5], [2, 0, 0]),
            ([1, 1, 2], [3, 2, 3]),
        ] {
            let dims: Vec<_> = (0..3).map(|i| (shape[i], offset[i], parent[i])).collect();
            let p = Placement::boxed(&dims, e);
            let n = shape.iter().product::<u64>() * e;
            let bytes: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let mut got = vec![None; (parent.iter().product::<u64>() * e) as usize];
            // Fed in odd-sized frames.
            let mut at = 0;
            for chunk in bytes.chunks(3) {
                p.scatter(at, chunk, &mut |o, b| {
                    for (k, &x) in b.iter().enumerate() {
                        got[o as usize + k] = Some(x);
                    }
                    Ok(())
                })
                .unwrap();
                at += chunk.len() as u64;
            }
            let mut k = 0u8;
            for i in 0..shape[0] {
                for j in 0..shape[1] {
                    for l in 0..shape[2] {
                        let flat = ((offset[0] + i) * parent[1] + offset[1] + j) * parent[2]
                            + offset[2]
                            + l;
                        for b in 0..e {
                            assert_eq!(got[(flat * e + b) as usize], Some(k));
                            k = k.wrapping_add(1);
                        }
                    }
                }
            }
            assert_eq!(got.iter().filter(|x| x.is_some()).count() as u64, n);
        }
    }
}
