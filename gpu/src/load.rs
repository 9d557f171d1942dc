//! Model files into GPU buffers, and GPU buffers into model files.
//!
//! ## Contract
//!
//! * **The whole file is checked first.** [`load_file`] maps the `.hrry` file
//!   (`hurray_io::file::open`), validates its index, every descriptor and every
//!   composite ([`hurray_io::file::MappedFile::view`]), resolves the names asked
//!   for, and checks every buffer against the device's `max_buffer_size`
//!   before it allocates a byte on the GPU. A name that is missing is
//!   [`LoadError::NotFound`]; a buffer larger than the device allows is
//!   [`LoadError::TooLarge`].
//! * **Too large is an error, not a split.** A tensor's buffer becomes one
//!   `wgpu::Buffer`, which is what a kernel binds and what the re-tagged
//!   descriptor describes. Splitting it would hand back pieces that neither
//!   the descriptor nor a kernel can address as one buffer; so a buffer
//!   above `max_buffer_size` (wgpu's limit, itself under the driver's
//!   `maxMemoryAllocationSize`: ~4 GiB on the H200, 2 GiB on lavapipe) is
//!   refused, by name, with both sizes.
//! * **Descriptors say where the data lives now.** Each loaded tensor keeps
//!   its descriptor with every buffer entry re-tagged: the device's tag
//!   (`vulkan`, `metal`, `webgpu`), [`MemoryClass::Standard`],
//!   [`SyncMode::ProducerSynced`] (the load returns after the GPU has every
//!   byte), sizes and alignments unchanged; the result is parsed again
//!   (validated) before it is returned.
//! * **Pipelined.** With DMA staging (Linux, Vulkan with
//!   `VK_EXT_external_memory_host`) the bytes of consecutive buffers are
//!   packed into 8 MiB chunks of imported host memory (small tensors share
//!   a chunk, large ones span several). [`load_file`] runs a ring of such
//!   chunks (one per copy thread plus four in flight, at most 256 MiB, kept
//!   by the device's staging pool for the next load): worker threads
//!   (`std::thread::scope`, [`worker_threads`](crate::worker_threads) of
//!   them) each take the next chunk and a free slot, copy the file's pages
//!   into it, record its copies into one command buffer and submit it
//!   themselves; the slot comes back from the submission's completion
//!   callback. No worker waits for another, nor for the whole queue. The
//!   calling thread meanwhile allocates the GPU buffers in file order (a
//!   worker waits only until its chunk's buffers exist), then polls the
//!   device and reports progress. (NVIDIA's driver refuses to import mmap'd
//!   file pages, so the one host copy is unavoidable there.)
//!   [`load_view_async`], which must not block, fills one chunk at a time
//!   over the worker pool with four in flight. Without DMA staging each
//!   buffer is written with the ordinary engine (mapped staging), in file
//!   order.
//! * **Reuse.** [`LoadOptions::reuse`] loads into the buffers of a previous
//!   load where name, sizes, usages and device match: no allocation, which
//!   on the H200 is about half of a cold 4 GiB load (`docs/perf.md`).
//!   [`Loaded::times`] splits a load into validation, allocation and copy.
//! * **Progress** is reported after every completed chunk (chunks complete
//!   in any order; what is reported done only grows), or after every
//!   tensor on the fallback path, through [`LoadOptions::progress`], on the
//!   calling thread.
//! * **Errors stop the load.** A worker's or the GPU's error stops every
//!   worker (at its next chunk, or within a poll interval while it waits);
//!   chunks in flight finish on the GPU, their staging freed by their
//!   callbacks; the buffers allocated so far are dropped.
//! * [`save_file`] reads each buffer back and writes the file through
//!   `hurray_io::file::create`: a temporary name, `fsync`, rename, directory sync.
//!   Descriptors are re-tagged back to host memory (`cpu`).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use hurray_core::{BufferHandle, DescriptorError, DeviceTag, MemoryClass, SyncMode, TensorView};
use wgpu::BufferUsages;

use crate::device::{self, DeviceShared};
use crate::exec::{self, block_on};
#[cfg(target_os = "linux")]
use crate::external::host::Staging;
use crate::{BackendError, GpuBufferHandle};

/// Where a load stands, for [`LoadOptions::progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Bytes the GPU has (buffer bytes, padding excluded).
    pub bytes_done: u64,
    /// Bytes of every buffer loaded.
    pub bytes_total: u64,
    /// Tensors whose every byte the GPU has.
    pub tensors_done: usize,
    /// Tensors loaded.
    pub tensors_total: usize,
}

/// What [`load_file`] loads, and how.
pub struct LoadOptions<'a> {
    names: Option<Vec<String>>,
    usage: BufferUsages,
    progress: Option<Box<dyn FnMut(Progress) + 'a>>,
    reuse: Option<Loaded>,
}

impl std::fmt::Debug for LoadOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("names", &self.names)
            .field("usage", &self.usage)
            .field("reuse", &self.reuse.as_ref().map(|l| l.tensors.len()))
            .finish_non_exhaustive()
    }
}

impl Default for LoadOptions<'_> {
    fn default() -> Self {
        Self {
            names: None,
            usage: BufferUsages::STORAGE,
            progress: None,
            reuse: None,
        }
    }
}

impl<'a> LoadOptions<'a> {
    /// Loads only these tensors (by name, in the order given) instead of
    /// all of them (file order).
    #[must_use]
    pub fn only<S: AsRef<str>>(mut self, names: &[S]) -> Self {
        self.names = Some(names.iter().map(|s| s.as_ref().to_owned()).collect());
        self
    }

    /// The usages of the buffers made (default `STORAGE`); `COPY_SRC |
    /// COPY_DST` are always added.
    #[must_use]
    pub fn usage(mut self, usage: BufferUsages) -> Self {
        self.usage = usage;
        self
    }

    /// Calls `f` as the load advances (on the calling thread).
    #[must_use]
    pub fn progress(mut self, f: impl FnMut(Progress) + 'a) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// Loads into the buffers of a previous load where they fit (the same
    /// tensor name, the same number of buffers of the same sizes, the
    /// usages asked for, the same device) instead of allocating: a model
    /// loaded again (a new checkpoint of the same shapes) then costs no
    /// allocation, as PyTorch's caching allocator makes a second
    /// `safetensors` load cost none. The bytes of those buffers are
    /// overwritten; a clone of one of their handles held elsewhere sees the
    /// new bytes. Buffers that do not fit are dropped (freed once no handle
    /// holds them). [`Loaded::reused`] counts the tensors that reused theirs.
    #[must_use]
    pub fn reuse(mut self, previous: Loaded) -> Self {
        self.reuse = Some(previous);
        self
    }
}

/// A tensor on the GPU: its name, its descriptor (re-tagged for where its
/// buffers live) and one buffer per entry of its buffer table.
#[derive(Debug, Clone)]
pub struct LoadedTensor {
    name: String,
    descriptor: Vec<u8>,
    buffers: Vec<GpuBufferHandle>,
}

impl LoadedTensor {
    /// A tensor from its parts: `descriptor` is validated, and each buffer
    /// must hold exactly its table entry's `byte_size`.
    ///
    /// # Errors
    /// [`LoadError::Descriptor`] when the descriptor is invalid;
    /// [`LoadError::BufferMismatch`] when the buffers do not match its table.
    pub fn new(
        name: impl Into<String>,
        descriptor: &[u8],
        buffers: Vec<GpuBufferHandle>,
    ) -> Result<Self, LoadError> {
        let name = name.into();
        let view = TensorView::parse(descriptor).map_err(|e| LoadError::Descriptor {
            name: name.clone(),
            error: e,
        })?;
        let table = view.buffers();
        if table.len() != buffers.len()
            || table
                .iter()
                .zip(&buffers)
                .any(|(h, b)| h.byte_size() != b.byte_len())
        {
            return Err(LoadError::BufferMismatch { name });
        }
        Ok(Self {
            name,
            descriptor: descriptor.to_vec(),
            buffers,
        })
    }

    /// A tensor whose bytes arrived in host form (a descriptor from a file
    /// or from the network, its buffer entries naming the host) and now
    /// live in `buffers` on `device`: the descriptor is re-tagged as
    /// [`load_file`] re-tags (the device's backend, standard memory,
    /// producer-synced; sizes and alignments kept), then checked as
    /// [`new`](Self::new) checks it.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`LoadError::Backend`] with
    /// [`BackendError::NoDeviceTag`] for a backend hurray has no device tag
    /// for.
    pub fn retagged(
        name: impl Into<String>,
        descriptor: &[u8],
        buffers: Vec<GpuBufferHandle>,
        device: &wgpu::Device,
    ) -> Result<Self, LoadError> {
        let name = name.into();
        let view = TensorView::parse(descriptor).map_err(|e| LoadError::Descriptor {
            name: name.clone(),
            error: e,
        })?;
        let tag = device_tag(device)?;
        let out = retag(
            &name,
            &view,
            tag,
            MemoryClass::Standard,
            SyncMode::ProducerSynced,
        )?;
        Self::new(name, &out, buffers)
    }

    /// The tensor's name in the file.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The descriptor's bytes.
    #[must_use]
    pub fn descriptor_bytes(&self) -> &[u8] {
        &self.descriptor
    }

    /// The descriptor (validated when the tensor was made).
    ///
    /// # Errors
    /// Never in practice: the bytes were validated and are immutable.
    pub fn descriptor(&self) -> Result<TensorView<'_>, DescriptorError> {
        TensorView::parse(&self.descriptor)
    }

    /// The GPU buffers, in buffer-table order.
    #[must_use]
    pub fn buffers(&self) -> &[GpuBufferHandle] {
        &self.buffers
    }
}

/// What [`load_file`] brought onto the GPU.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Loaded {
    /// The tensors, in file order (or the order of [`LoadOptions::only`]).
    pub tensors: Vec<LoadedTensor>,
    /// Bytes of every buffer loaded.
    pub bytes: u64,
    /// Whether the bytes went through DMA staging (else mapped staging).
    pub dma: bool,
    /// Tensors loaded into buffers taken over from [`LoadOptions::reuse`].
    pub reused: usize,
    /// How long each phase took.
    pub times: LoadTimes,
}

/// How long each phase of a load took (for `hurray load` and benchmarks:
/// which phase a rate is made of).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadTimes {
    /// Mapping and validating the file (zero for [`load_view_async`], whose
    /// caller did that).
    pub validate: Duration,
    /// Resolving names, re-tagging descriptors, allocating GPU buffers (or
    /// taking them over from [`LoadOptions::reuse`]).
    pub allocate: Duration,
    /// Moving the bytes, until the GPU holds every one. [`load_file`]
    /// overlaps allocation with the copies: this is the rest of the load
    /// once the calling thread stopped allocating (so the three phases add
    /// up to the whole).
    pub copy: Duration,
}

impl Loaded {
    /// The tensor named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&LoadedTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// Why a load or a save failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The file cannot be opened, mapped, read or written, or breaks a rule
    /// of the format (with the byte offset, inside).
    File(hurray_io::file::Error),
    /// No tensor of this name in the file.
    NotFound(String),
    /// A buffer is larger than one GPU buffer may be on this device.
    TooLarge {
        /// The tensor.
        name: String,
        /// Its buffer (table index).
        buffer: usize,
        /// The buffer's size.
        bytes: u64,
        /// The device's `max_buffer_size`.
        max: u64,
    },
    /// A descriptor could not be re-tagged (or is invalid).
    Descriptor {
        /// The tensor.
        name: String,
        /// What its descriptor breaks.
        error: DescriptorError,
    },
    /// The buffers given for a tensor do not match its descriptor's table.
    BufferMismatch {
        /// The tensor.
        name: String,
    },
    /// The GPU side failed (or the device has no hurray device tag).
    Backend(BackendError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(e) => write!(f, "{e}"),
            Self::NotFound(n) => write!(f, "no tensor named {n:?} in the file"),
            Self::TooLarge {
                name,
                buffer,
                bytes,
                max,
            } => write!(
                f,
                "tensor {name:?} buffer {buffer} has {bytes} bytes; one GPU buffer on this device holds at most {max}"
            ),
            Self::Descriptor { name, error } => write!(f, "tensor {name:?}: {error}"),
            Self::BufferMismatch { name } => write!(
                f,
                "tensor {name:?}: the buffers do not match the descriptor's buffer table"
            ),
            Self::Backend(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::File(e) => Some(e),
            Self::Backend(e) => Some(e),
            _ => None,
        }
    }
}

impl From<hurray_io::file::Error> for LoadError {
    fn from(e: hurray_io::file::Error) -> Self {
        Self::File(e)
    }
}

impl From<hurray_core::file::FileError> for LoadError {
    fn from(e: hurray_core::file::FileError) -> Self {
        Self::File(e.into())
    }
}

impl From<BackendError> for LoadError {
    fn from(e: BackendError) -> Self {
        Self::Backend(e)
    }
}

/// The hurray device tag of a wgpu device's backend.
fn device_tag(device: &wgpu::Device) -> Result<DeviceTag, BackendError> {
    match device.adapter_info().backend {
        wgpu::Backend::Vulkan => Ok(DeviceTag::Vulkan),
        wgpu::Backend::Metal => Ok(DeviceTag::Metal),
        wgpu::Backend::BrowserWebGpu => Ok(DeviceTag::WebGpu),
        other => Err(BackendError::NoDeviceTag(other)),
    }
}

/// `view`'s bytes with every buffer entry re-tagged (`tag`, `class`,
/// `sync`; size and alignment kept), validated again.
fn retag(
    name: &str,
    view: &TensorView<'_>,
    tag: DeviceTag,
    class: MemoryClass,
    sync: SyncMode,
) -> Result<Vec<u8>, LoadError> {
    let whole = view.as_bytes();
    let table = view.buffers();
    let bad = |error| LoadError::Descriptor {
        name: name.to_owned(),
        error,
    };
    // The table is a sub-slice of the descriptor (zero-copy views): its
    // position is the difference of the two addresses.
    let at = (table.as_bytes().as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
    let mut out = whole.to_vec();
    for (i, h) in table.iter().enumerate() {
        let new = if h.is_empty() {
            BufferHandle::empty(tag)
        } else {
            BufferHandle::with_memory_class(h.byte_size(), h.alignment(), tag, sync, class)
                .map_err(|_| {
                    LoadError::Backend(BackendError::Bug("a re-tagged buffer entry is invalid"))
                })?
        };
        let from = at + i * 16;
        out.get_mut(from..from + 16)
            .ok_or(LoadError::Backend(BackendError::Bug(
                "buffer table outside its descriptor",
            )))?
            .copy_from_slice(&new.to_bytes());
    }
    TensorView::parse(&out).map_err(bad)?;
    Ok(out)
}

/// One piece of a chunk: bytes of the file for `[at, at + len)` of chunk
/// space, bound for `target`'s buffer at `to` (`len` a multiple of 4; bytes
/// past `src` are zero padding); `tensor` is the tensor it belongs to.
struct Piece<'f> {
    src: &'f [u8],
    at: usize,
    len: usize,
    target: usize,
    to: u64,
    tensor: usize,
}

/// A chunk: its pieces, packed from offset 0, and how far they fill it.
struct Chunk<'f> {
    pieces: Vec<Piece<'f>>,
    fill: usize,
}

/// The chunk size of a DMA load. One host thread fills one chunk, so it
/// is small enough for every thread to have its own with slots to spare
/// (16 threads + 4 in flight = 160 MiB of imported memory), and large
/// enough that a submission's fixed cost (~20–30 µs on the H200) stays
/// small beside its copy (8 MiB: ~160 µs at 50 GB/s) and beside one
/// thread's host copy of it (~1.5 ms).
const LOAD_CHUNK: usize = 8 << 20;
/// Host copies of the async path are cut into items of at most this size,
/// spread over the worker pool.
const ITEM: usize = 1 << 20;
/// The most copy threads of one load, whatever `worker_threads()` says:
/// 16 already copy faster than PCIe moves on the H200's host (memcpy 69.8
/// GB/s, `docs/perf.md`); more only add staging slots.
const MAX_LOAD_THREADS: usize = 32;

/// Cuts `buffers` (`(target, bytes, tensor index)`, in load order) into
/// chunks of at most `size` bytes of chunk space: small buffers share a
/// chunk (one submission copies them all), large ones span several.
fn plan<'f>(buffers: &[(usize, &'f [u8], usize)], size: usize) -> Vec<Chunk<'f>> {
    let mut chunks = Vec::new();
    let mut cur = Chunk {
        pieces: Vec::new(),
        fill: 0,
    };
    for &(target, bytes, tensor) in buffers {
        let padded = bytes.len().next_multiple_of(4);
        let mut pos = 0;
        while pos < padded {
            if cur.fill == size {
                chunks.push(std::mem::replace(
                    &mut cur,
                    Chunk {
                        pieces: Vec::new(),
                        fill: 0,
                    },
                ));
            }
            let take = (padded - pos).min(size - cur.fill);
            let src = bytes.get(pos..(pos + take).min(bytes.len())).unwrap_or(&[]);
            cur.pieces.push(Piece {
                src,
                at: cur.fill,
                len: take,
                target,
                to: pos as u64,
                tensor,
            });
            cur.fill += take;
            pos += take;
        }
    }
    if !cur.pieces.is_empty() {
        chunks.push(cur);
    }
    chunks
}

/// Copies a chunk's pieces into `dst` (chunk space), zero-filling the
/// padding, on this thread.
#[cfg(target_os = "linux")]
fn fill_chunk(dst: &mut [u8], pieces: &[Piece<'_>]) -> Result<(), BackendError> {
    for p in pieces {
        let region = dst
            .get_mut(p.at..p.at + p.len)
            .ok_or(BackendError::Bug("a load piece overruns its chunk"))?;
        let (body, pad) = region.split_at_mut(p.src.len().min(p.len));
        body.copy_from_slice(p.src.get(..body.len()).unwrap_or(&[]));
        pad.fill(0);
    }
    Ok(())
}

/// A host copy: a region of a chunk, and the file bytes it starts with (the
/// rest of the region is zero padding).
#[cfg(target_os = "linux")]
type CopyItem<'d, 'f> = (&'d mut [u8], &'f [u8]);

/// Copies a chunk's pieces into `dst` (chunk space), zero-filling the
/// padding, over the worker pool.
#[cfg(target_os = "linux")]
fn fill_chunk_pool(dst: &mut [u8], pieces: &[Piece<'_>]) -> Result<(), BackendError> {
    // Items of at most ITEM bytes, in chunk order, cut from `dst` in turn.
    let mut items: Vec<(&mut [u8], &[u8])> = Vec::new();
    let mut rest = dst;
    let mut at = 0;
    for p in pieces {
        if p.at != at {
            return Err(BackendError::Bug("load pieces are not contiguous"));
        }
        let (mut region, tail) = std::mem::take(&mut rest)
            .split_at_mut_checked(p.len)
            .ok_or(BackendError::Bug("a load piece overruns its chunk"))?;
        rest = tail;
        at += p.len;
        let mut src = p.src;
        while !region.is_empty() {
            let n = region.len().min(ITEM);
            let (head, r) = region.split_at_mut(n);
            region = r;
            let m = n.min(src.len());
            let (s, t) = src.split_at(m);
            src = t;
            items.push((head, s));
        }
    }
    let workers = crate::pool::worker_threads().max(1);
    let total: usize = items.iter().map(|(d, _)| d.len()).sum();
    let per = total.div_ceil(workers).max(ITEM);
    // Contiguous groups of about `per` bytes, one per worker.
    let mut groups: Vec<Mutex<Vec<CopyItem<'_, '_>>>> = Vec::new();
    let mut group = Vec::new();
    let mut bytes = 0;
    for item in items {
        bytes += item.0.len();
        group.push(item);
        if bytes >= per {
            groups.push(Mutex::new(std::mem::take(&mut group)));
            bytes = 0;
        }
    }
    if !group.is_empty() {
        groups.push(Mutex::new(group));
    }
    crate::pool::run(groups.len(), |g| {
        let taken = groups
            .get(g)
            .and_then(|m| m.lock().ok().map(|mut v| std::mem::take(&mut *v)));
        for (d, s) in taken.into_iter().flatten() {
            let (body, pad) = d.split_at_mut(s.len().min(d.len()));
            body.copy_from_slice(s.get(..body.len()).unwrap_or(&[]));
            pad.fill(0);
        }
    })
}

/// Loads a `.hrry` file's tensors into GPU buffers. See the module contract.
///
/// ```no_run
/// use hurray_gpu::{GpuContext, LoadOptions, load_file};
///
/// let ctx = GpuContext::new()?;
/// let loaded = load_file(&ctx.device, &ctx.queue, "model.hrry", LoadOptions::default())?;
/// for t in &loaded.tensors {
///     println!("{}: {} buffer(s)", t.name(), t.buffers().len());
/// }
/// // Load it again into the same buffers (no allocation).
/// let again = load_file(&ctx.device, &ctx.queue, "model.hrry", LoadOptions::default().reuse(loaded))?;
/// assert_eq!(again.reused, again.tensors.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`LoadError`]: the file's own errors first, then names and sizes, all
/// before anything is allocated on the GPU; then the GPU's.
pub fn load_file(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    path: impl AsRef<Path>,
    mut options: LoadOptions<'_>,
) -> Result<Loaded, LoadError> {
    let started = Instant::now();
    let shared = device::shared(device, Some(queue));
    let queue = shared.check(device, queue)?.clone();
    let mut file = hurray_io::file::open(path)?;
    let view = file.view()?;
    let validate = started.elapsed();
    let mut prepared = prepare(&shared, &view, &mut options)?;
    let copy_started = Instant::now();
    #[cfg(target_os = "linux")]
    if prepared.dma {
        let allocating = load_dma_threads(&shared, &queue, &prepared, &mut options)?;
        // Allocation overlapped the copies: the copy phase is what remains.
        prepared.allocate += allocating;
        let copy = copy_started.elapsed().saturating_sub(allocating);
        return prepared.finish(validate, copy);
    }
    prepared.allocate_all(&shared)?;
    let copy_started = Instant::now();
    block_on(
        device,
        load_mapped(&shared, &queue, &prepared, &mut options),
    )?;
    let copy = copy_started.elapsed();
    prepared.finish(validate, copy)
}

/// Loads the tensors of an already validated [`FileView`](hurray_core::file::FileView)
/// (see [`load_file`]); the async form, which never blocks on the GPU (poll
/// the device while it runs). Its host copies run on the worker pool, one
/// chunk at a time between awaits; [`load_file`], which may block, runs
/// them on dedicated threads that never wait for the submitting thread.
///
/// # Errors
/// As [`load_file`].
pub async fn load_view_async(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    view: &hurray_core::file::FileView<'_>,
    mut options: LoadOptions<'_>,
) -> Result<Loaded, LoadError> {
    let shared = device::shared(device, Some(queue));
    let queue = shared.check(device, queue)?.clone();
    let mut prepared = prepare(&shared, view, &mut options)?;
    prepared.allocate_all(&shared)?;
    let copy_started = Instant::now();
    #[cfg(target_os = "linux")]
    if prepared.dma {
        load_dma(&shared, &queue, &prepared, &mut options).await?;
        let copy = copy_started.elapsed();
        return prepared.finish(Duration::ZERO, copy);
    }
    load_mapped(&shared, &queue, &prepared, &mut options).await?;
    let copy = copy_started.elapsed();
    prepared.finish(Duration::ZERO, copy)
}

/// A load with every check passed: the buffers to fill, allocated or not.
struct Prepared<'f> {
    chosen: Vec<hurray_core::file::Tensor<'f>>,
    descriptors: Vec<Vec<u8>>,
    /// Every buffer of every tensor, in load order: its size, and its
    /// handle once allocated (at once when taken over from
    /// [`LoadOptions::reuse`]).
    sizes: Vec<u64>,
    slots: Vec<OnceLock<GpuBufferHandle>>,
    /// Every non-empty buffer, in load order: `(slot, bytes, tensor)`.
    flat: Vec<(usize, &'f [u8], usize)>,
    usage: BufferUsages,
    total: u64,
    reused: usize,
    /// Time spent resolving, re-tagging and taking over buffers.
    allocate: Duration,
    dma: bool,
}

impl Prepared<'_> {
    /// Allocates slot `i` unless it holds a buffer already.
    fn allocate_slot(&self, shared: &Arc<DeviceShared>, i: usize) -> Result<(), BackendError> {
        let (Some(slot), Some(&len)) = (self.slots.get(i), self.sizes.get(i)) else {
            return Err(BackendError::Bug("load slot index"));
        };
        if slot.get().is_none() {
            let _ = slot.set(GpuBufferHandle::alloc_on(shared, len, self.usage)?);
        }
        Ok(())
    }

    /// Allocates every buffer now (the paths that do not overlap allocation
    /// with copies).
    fn allocate_all(&mut self, shared: &Arc<DeviceShared>) -> Result<(), BackendError> {
        let started = Instant::now();
        for i in 0..self.slots.len() {
            self.allocate_slot(shared, i)?;
        }
        self.allocate += started.elapsed();
        Ok(())
    }

    /// The buffer of slot `i`, once allocated.
    fn target(&self, i: usize) -> Option<&GpuBufferHandle> {
        self.slots.get(i).and_then(OnceLock::get)
    }

    fn finish(self, validate: Duration, copy: Duration) -> Result<Loaded, LoadError> {
        let mut slots = self.slots.into_iter();
        let mut tensors = Vec::with_capacity(self.chosen.len());
        for (t, descriptor) in self.chosen.iter().zip(self.descriptors) {
            let buffers = (0..t.buffers().count())
                .map(|_| slots.next().and_then(OnceLock::into_inner))
                .collect::<Option<Vec<_>>>()
                .ok_or(BackendError::Bug("a loaded buffer was never allocated"))?;
            tensors.push(LoadedTensor {
                name: t.name().to_owned(),
                descriptor,
                buffers,
            });
        }
        Ok(Loaded {
            tensors,
            bytes: self.total,
            dma: self.dma,
            reused: self.reused,
            times: LoadTimes {
                validate,
                allocate: self.allocate,
                copy,
            },
        })
    }
}

/// Resolves the names, checks every size, re-tags every descriptor, and
/// takes over the fitting buffers of [`LoadOptions::reuse`]; allocates
/// nothing.
fn prepare<'f>(
    shared: &Arc<DeviceShared>,
    view: &hurray_core::file::FileView<'f>,
    options: &mut LoadOptions<'_>,
) -> Result<Prepared<'f>, LoadError> {
    let started = Instant::now();
    let device = &shared.device;
    let tag = device_tag(device)?;
    // Resolve and check everything before allocating.
    let chosen: Vec<hurray_core::file::Tensor<'f>> = match &options.names {
        Some(names) => names
            .iter()
            .map(|n| view.get(n).ok_or_else(|| LoadError::NotFound(n.clone())))
            .collect::<Result<_, _>>()?,
        None => view.iter_file_order().collect(),
    };
    let max = shared.limits.max_buffer_size;
    let mut descriptors = Vec::with_capacity(chosen.len());
    for t in &chosen {
        for (i, h) in t.descriptor().buffers().iter().enumerate() {
            if h.byte_size() > max {
                return Err(LoadError::TooLarge {
                    name: t.name().to_owned(),
                    buffer: i,
                    bytes: h.byte_size(),
                    max,
                });
            }
        }
        descriptors.push(retag(
            t.name(),
            t.descriptor(),
            tag,
            MemoryClass::Standard,
            SyncMode::ProducerSynced,
        )?);
    }
    let usage = options.usage | BufferUsages::COPY_SRC | BufferUsages::COPY_DST;
    // Buffers of a previous load, by tensor name.
    let mut previous: HashMap<String, Vec<GpuBufferHandle>> = options
        .reuse
        .take()
        .map(|l| l.tensors.into_iter().map(|t| (t.name, t.buffers)).collect())
        .unwrap_or_default();
    let mut sizes = Vec::new();
    let mut slots = Vec::new();
    let mut flat: Vec<(usize, &'f [u8], usize)> = Vec::new();
    let mut total = 0u64;
    let mut reused = 0;
    for (ti, t) in chosen.iter().enumerate() {
        let fits = |old: &Vec<GpuBufferHandle>| {
            old.len() == t.buffers().count()
                && old.iter().zip(t.buffers()).all(|(h, b)| {
                    h.byte_len() == b.len() as u64
                        && h.usage().contains(usage)
                        && h.device() == device
                })
        };
        let mut old = previous.remove(t.name()).filter(fits).map(Vec::into_iter);
        if old.is_some() {
            reused += 1;
        }
        for bytes in t.buffers() {
            let slot = OnceLock::new();
            if let Some(h) = old.as_mut().and_then(Iterator::next) {
                let _ = slot.set(h);
            }
            if !bytes.is_empty() {
                flat.push((slots.len(), bytes, ti));
            }
            total += bytes.len() as u64;
            sizes.push(bytes.len() as u64);
            slots.push(slot);
        }
    }
    #[cfg(target_os = "linux")]
    let dma = crate::transfer::dma::use_for(shared, crate::transfer::dma::DMA_MIN);
    #[cfg(not(target_os = "linux"))]
    let dma = false;
    Ok(Prepared {
        chosen,
        descriptors,
        sizes,
        slots,
        flat,
        usage,
        total,
        reused,
        allocate: started.elapsed(),
        dma,
    })
}

/// The path without DMA staging: each buffer written by the ordinary
/// engine (mapped staging), in file order.
async fn load_mapped(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    p: &Prepared<'_>,
    options: &mut LoadOptions<'_>,
) -> Result<(), LoadError> {
    let device = &shared.device;
    let tensors_total = p.chosen.len();
    let mut done = 0u64;
    for (i, &(slot, bytes, ti)) in p.flat.iter().enumerate() {
        let h = p
            .target(slot)
            .ok_or(BackendError::Bug("a loaded buffer was never allocated"))?;
        h.write_async(device, queue, 0, bytes).await?;
        done += bytes.len() as u64;
        // The tensor's last buffer: it is done (and every tensor before it).
        let last = p.flat.get(i + 1).is_none_or(|next| next.2 != ti);
        if last {
            report(
                options,
                Progress {
                    bytes_done: done,
                    bytes_total: p.total,
                    tensors_done: if i + 1 == p.flat.len() {
                        tensors_total
                    } else {
                        ti + 1
                    },
                    tensors_total,
                },
            );
        }
    }
    if p.flat.is_empty() {
        report(
            options,
            Progress {
                bytes_done: 0,
                bytes_total: p.total,
                tensors_done: tensors_total,
                tensors_total,
            },
        );
    }
    exec::idle(device, Some(queue)).await?;
    Ok(())
}

/// Records chunk `chunk`'s copies from `staging` into the buffers of `p`
/// and submits them; the completion callback hands `staging` to `done`
/// (the GPU has finished with it by then). Safe to call from any thread
/// (wgpu's error scopes are per thread).
#[cfg(target_os = "linux")]
fn submit_chunk(
    shared: &DeviceShared,
    queue: &wgpu::Queue,
    chunk: &Chunk<'_>,
    p: &Prepared<'_>,
    staging: Staging,
    done: impl FnOnce(Staging) + Send + 'static,
) -> Result<wgpu::SubmissionIndex, BackendError> {
    let device = &shared.device;
    let mut missing = false;
    let index = exec::scoped_now(device, || {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("hurray load"),
        });
        for piece in &chunk.pieces {
            match p.target(piece.target) {
                Some(t) => encoder.copy_buffer_to_buffer(
                    staging.buffer(),
                    piece.at as u64,
                    t.buffer(),
                    piece.to,
                    piece.len as u64,
                ),
                None => missing = true,
            }
        }
        let index = queue.submit([encoder.finish()]);
        queue.on_submitted_work_done(move || done(staging));
        index
    })?;
    if missing {
        return Err(BackendError::Bug("a load chunk's buffer was not allocated"));
    }
    Ok(index)
}

/// Calls `options`' progress callback.
fn report(options: &mut LoadOptions<'_>, progress: Progress) {
    if let Some(f) = options.progress.as_mut() {
        f(progress);
    }
}

/// Tracks which tensors are complete as chunks complete (in any order).
#[cfg(target_os = "linux")]
struct Tally {
    /// Pieces not yet on the GPU, per tensor.
    left: Vec<usize>,
    progress: Progress,
}

#[cfg(target_os = "linux")]
impl Tally {
    fn new(chunks: &[Chunk<'_>], tensors_total: usize, bytes_total: u64) -> Self {
        let mut left = vec![0usize; tensors_total];
        for p in chunks.iter().flat_map(|c| &c.pieces) {
            if let Some(l) = left.get_mut(p.tensor) {
                *l += 1;
            }
        }
        // Tensors with no bytes at all are done from the start.
        let tensors_done = left.iter().filter(|l| **l == 0).count();
        Self {
            left,
            progress: Progress {
                bytes_done: 0,
                bytes_total,
                tensors_done,
                tensors_total,
            },
        }
    }

    fn complete(&mut self, chunk: &Chunk<'_>) -> Progress {
        for p in &chunk.pieces {
            self.progress.bytes_done += p.src.len() as u64;
            if let Some(l) = self.left.get_mut(p.tensor) {
                let was = *l;
                *l = was.saturating_sub(1);
                if was == 1 {
                    self.progress.tensors_done += 1;
                }
            }
        }
        self.progress
    }
}

/// The DMA path of [`load_view_async`]: one chunk at a time filled over
/// the worker pool, [`DEPTH`](crate::transfer) in flight.
#[cfg(target_os = "linux")]
async fn load_dma(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    p: &Prepared<'_>,
    options: &mut LoadOptions<'_>,
) -> Result<(), LoadError> {
    use crate::transfer::chunk::DEPTH;
    let device = &shared.device;
    let chunks = plan(&p.flat, LOAD_CHUNK);
    let mut tally = Tally::new(&chunks, p.chosen.len(), p.total);
    let mut in_flight: VecDeque<(exec::Receiver<()>, usize)> = VecDeque::new();
    for (k, chunk) in chunks.iter().enumerate() {
        if in_flight.len() >= DEPTH {
            if let Some((rx, j)) = in_flight.pop_front() {
                let _ = rx.await;
                if let Some(c) = chunks.get(j) {
                    report(options, tally.complete(c));
                }
            }
        }
        let mut staging = shared.dma.take(device, LOAD_CHUNK)?;
        let dst = staging
            .bytes_mut()
            .get_mut(..chunk.fill)
            .ok_or(BackendError::Bug("load chunk larger than its staging"))?;
        fill_chunk_pool(dst, &chunk.pieces)?;
        let (tx, mut rx) = exec::oneshot(None);
        let weak = Arc::downgrade(shared);
        let index = submit_chunk(shared, queue, chunk, p, staging, move |s| {
            if let Some(sh) = weak.upgrade() {
                sh.dma.give(s);
            }
            tx.send(());
        })?;
        rx.set_hint(index);
        in_flight.push_back((rx, k));
    }
    while let Some((rx, j)) = in_flight.pop_front() {
        if rx.await.is_none() {
            return Err(BackendError::Map("a load chunk's completion was dropped".into()).into());
        }
        if let Some(c) = chunks.get(j) {
            report(options, tally.complete(c));
        }
    }
    Ok(())
}

/// The DMA path of [`load_file`]: a ring of imported staging chunks;
/// worker threads (`std::thread::scope`) each take the next chunk of the
/// plan and a free slot of the ring, copy the file's pages into it, record
/// its copies and submit them (wgpu's queue and error scopes are
/// thread-safe); a slot comes back to the ring from its submission's
/// completion callback. Meanwhile this thread allocates the GPU buffers in
/// load order (a worker waits only until its chunk's buffers exist), then
/// polls the device and reports progress. No thread waits for another's
/// chunk: the only waits are for a free slot (the GPU is behind), or a
/// buffer (allocation is behind). Returns the time spent allocating.
#[cfg(target_os = "linux")]
fn load_dma_threads(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    p: &Prepared<'_>,
    options: &mut LoadOptions<'_>,
) -> Result<Duration, LoadError> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc::{self, RecvTimeoutError};

    let device = &shared.device;
    let chunks = plan(&p.flat, LOAD_CHUNK);
    let n = chunks.len();
    let threads = crate::pool::worker_threads()
        .clamp(1, MAX_LOAD_THREADS)
        .min(n.max(1));
    let slots = (threads + crate::transfer::chunk::DEPTH)
        .min(crate::transfer::dma::RING_BYTES / LOAD_CHUNK)
        .min(n);
    let (free_tx, free_rx) = mpsc::channel::<Staging>();
    for _ in 0..slots {
        let _ = free_tx.send(shared.dma.take(device, LOAD_CHUNK)?);
    }
    let free_rx = Mutex::new(free_rx);
    // Submitted chunks (or a worker's error), and completed ones.
    let (sent_tx, sent_rx) = mpsc::channel::<Result<(), BackendError>>();
    let (done_tx, done_rx) = mpsc::channel::<usize>();
    let next = AtomicUsize::new(0);
    // Slots allocated so far (a prefix, in load order).
    let allocated = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut tally = Tally::new(&chunks, p.chosen.len(), p.total);
    let mut allocating = Duration::ZERO;
    let result = std::thread::scope(|s| {
        for _ in 0..threads.min(n) {
            let (sent_tx, free_tx, done_tx) = (sent_tx.clone(), free_tx.clone(), done_tx.clone());
            let (chunks, next, stop, free_rx, allocated) =
                (&chunks, &next, &stop, &free_rx, &allocated);
            s.spawn(move || {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(chunk) = chunks.get(k) else { return };
                    // A free slot, unless the load stopped; poll the device
                    // meanwhile, so that completions come back.
                    let mut staging = loop {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        let got = free_rx
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .recv_timeout(Duration::from_micros(500));
                        match got {
                            Ok(st) => break st,
                            Err(RecvTimeoutError::Timeout) => {
                                let _ = exec::poll(device, wgpu::PollType::Poll);
                            }
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    };
                    let filled = match staging.bytes_mut().get_mut(..chunk.fill) {
                        Some(dst) => fill_chunk(dst, &chunk.pieces),
                        None => Err(BackendError::Bug("load chunk larger than its staging")),
                    };
                    // Its buffers exist once the allocated prefix covers its
                    // last piece's slot. A stopped load ends here, silently:
                    // whoever stopped it reports why.
                    let need = chunk.pieces.last().map_or(0, |pc| pc.target + 1);
                    while filled.is_ok() && allocated.load(Ordering::Acquire) < need {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    let sent = filled.and_then(|()| {
                        let (free, done) = (free_tx.clone(), done_tx.clone());
                        submit_chunk(shared, queue, chunk, p, staging, move |st| {
                            // The slot first: a chunk counts as done once its
                            // slot is back.
                            let _ = free.send(st);
                            let _ = done.send(k);
                        })
                        .map(drop)
                    });
                    let failed = sent.is_err();
                    if failed {
                        // The calling thread stops allocating, too.
                        stop.store(true, Ordering::Release);
                    }
                    if sent_tx.send(sent).is_err() || failed {
                        return;
                    }
                }
            });
        }
        drop(sent_tx);
        let mut drive = || -> Result<(), LoadError> {
            // Allocate every buffer, in load order.
            let started = Instant::now();
            for i in 0..p.slots.len() {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                p.allocate_slot(shared, i)?;
                allocated.store(i + 1, Ordering::Release);
            }
            allocating = started.elapsed();
            if n == 0 {
                report(options, tally.progress);
            }
            let mut submitted = 0;
            let mut completed = 0;
            while completed < n {
                for r in sent_rx.try_iter() {
                    r?;
                    submitted += 1;
                }
                if submitted < n {
                    match sent_rx.recv_timeout(Duration::from_micros(200)) {
                        Ok(r) => {
                            r?;
                            submitted += 1;
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => {
                            return Err(BackendError::Bug("load workers stopped early").into());
                        }
                    }
                    exec::poll(device, wgpu::PollType::Poll)?;
                } else {
                    // Everything is submitted: sleep in the driver until the
                    // queue is idle.
                    exec::poll(
                        device,
                        wgpu::PollType::Wait {
                            submission_index: None,
                            timeout: Some(exec::WAIT_LIMIT),
                        },
                    )?;
                }
                for k in done_rx.try_iter() {
                    completed += 1;
                    if let Some(c) = chunks.get(k) {
                        report(options, tally.complete(c));
                    }
                }
            }
            Ok(())
        };
        let r = drive();
        // Workers waiting for a slot or a buffer see this at once.
        stop.store(true, Ordering::Release);
        r
    });
    // Back to the pool: every slot is idle once every chunk completed (on
    // an error, slots still in flight are dropped by their callbacks).
    drop(free_tx);
    let free_rx = free_rx.into_inner().unwrap_or_else(PoisonError::into_inner);
    for st in free_rx.try_iter() {
        shared.dma.give(st);
    }
    result.map(|()| allocating)
}

/// Writes GPU tensors into a `.hrry` file at `path` (see the module
/// contract): each buffer is read back, each descriptor re-tagged to host
/// memory (`cpu`, standard, producer-synced), and the file appears at
/// `path` only once it is complete and synced.
///
/// # Errors
/// [`LoadError::File`] when the file cannot be written (the temporary file
/// is removed), the GPU's errors.
pub fn save_file(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    path: impl AsRef<Path>,
    tensors: &[LoadedTensor],
) -> Result<(), LoadError> {
    let mut writer = hurray_io::file::create(path, hurray_core::file::WriterOptions::default())?;
    let mut out = Vec::new();
    for t in tensors {
        let view = t.descriptor().map_err(|error| LoadError::Descriptor {
            name: t.name.clone(),
            error,
        })?;
        let host = retag(
            &t.name,
            &view,
            DeviceTag::Cpu,
            MemoryClass::Standard,
            SyncMode::ProducerSynced,
        )?;
        let host_view = TensorView::parse(&host).map_err(|error| LoadError::Descriptor {
            name: t.name.clone(),
            error,
        })?;
        let mut bytes: Vec<Vec<u8>> = Vec::with_capacity(t.buffers.len());
        for b in &t.buffers {
            if b.byte_len() == 0 {
                bytes.push(Vec::new());
            } else {
                b.readback(device, queue, &mut out)?;
                bytes.push(std::mem::take(&mut out));
            }
        }
        let slices: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        writer.write_tensor(&t.name, &host_view, &slices)?;
    }
    writer.finish(&[])?;
    Ok(())
}

// Chunk offsets and piece lengths stay multiples of 4 (wgpu's copy unit);
// a load chunk is a DMA staging size class (a multiple of 1 MiB).
const _: () = assert!(LOAD_CHUNK.is_multiple_of(1 << 20) && ITEM.is_multiple_of(4));
