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
//!   packed into chunks of imported host memory (small tensors share a
//!   chunk, large ones span several); host threads (the worker pool) copy
//!   the file's pages into chunk `i + 1` while the copy engine pulls chunk
//!   `i` by DMA, with [`DEPTH`](crate::transfer) chunks in flight, each chunk
//!   one submission of many `copy_buffer_to_buffer`. (NVIDIA's driver refuses
//!   to import mmap'd file pages, so the one host copy is unavoidable
//!   there.) Without DMA staging each buffer is written with the ordinary
//!   engine (mapped staging), in file order.
//! * **Progress** is reported after every completed chunk (or buffer, on the
//!   fallback path) through [`LoadOptions::progress`].
//! * [`save_file`] reads each buffer back and writes the file through
//!   `hurray_io::file::create`: a temporary name, `fsync`, rename, directory sync.
//!   Descriptors are re-tagged back to host memory (`cpu`).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use hurray_core::{BufferHandle, DescriptorError, DeviceTag, MemoryClass, SyncMode, TensorView};
use wgpu::BufferUsages;

use crate::device::{self, DeviceShared};
use crate::exec::{self, block_on};
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
}

impl std::fmt::Debug for LoadOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("names", &self.names)
            .field("usage", &self.usage)
            .finish_non_exhaustive()
    }
}

impl Default for LoadOptions<'_> {
    fn default() -> Self {
        Self {
            names: None,
            usage: BufferUsages::STORAGE,
            progress: None,
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
/// past `src` are zero padding).
struct Piece<'f> {
    src: &'f [u8],
    at: usize,
    len: usize,
    target: usize,
    to: u64,
}

/// A chunk: its pieces, and the progress reached once it is done.
struct Chunk<'f> {
    pieces: Vec<Piece<'f>>,
    fill: usize,
    bytes_done: u64,
    tensors_done: usize,
}

/// The chunk size of a DMA load.
const LOAD_CHUNK: usize = 32 << 20;
/// Host copies are cut into items of at most this size, spread over the
/// worker pool.
const ITEM: usize = 1 << 20;

/// Cuts `buffers` (`(target, bytes, tensor index)`, in load order) into
/// chunks of at most [`LOAD_CHUNK`] bytes of chunk space.
fn plan<'f>(buffers: &[(usize, &'f [u8], usize)], tensors: usize) -> Vec<Chunk<'f>> {
    let mut chunks = Vec::new();
    let mut cur = Chunk {
        pieces: Vec::new(),
        fill: 0,
        bytes_done: 0,
        tensors_done: 0,
    };
    let mut done = 0u64;
    // The last buffer index of each tensor: a tensor is done with it.
    let mut last_of = vec![usize::MAX; tensors];
    for (i, (_, _, t)) in buffers.iter().enumerate() {
        if let Some(slot) = last_of.get_mut(*t) {
            *slot = i;
        }
    }
    let mut tensors_done = last_of.iter().filter(|l| **l == usize::MAX).count();
    for (i, &(target, bytes, t)) in buffers.iter().enumerate() {
        let padded = bytes.len().next_multiple_of(4);
        let mut pos = 0;
        while pos < padded {
            if cur.fill == LOAD_CHUNK {
                cur.bytes_done = done;
                cur.tensors_done = tensors_done;
                chunks.push(std::mem::replace(
                    &mut cur,
                    Chunk {
                        pieces: Vec::new(),
                        fill: 0,
                        bytes_done: 0,
                        tensors_done: 0,
                    },
                ));
            }
            let take = (padded - pos).min(LOAD_CHUNK - cur.fill);
            let src = bytes.get(pos..(pos + take).min(bytes.len())).unwrap_or(&[]);
            done += src.len() as u64;
            cur.pieces.push(Piece {
                src,
                at: cur.fill,
                len: take,
                target,
                to: pos as u64,
            });
            cur.fill += take;
            pos += take;
        }
        if last_of.get(t) == Some(&i) {
            tensors_done += 1;
        }
    }
    cur.bytes_done = done;
    cur.tensors_done = tensors_done;
    if !cur.pieces.is_empty() {
        chunks.push(cur);
    }
    chunks
}

/// A host copy: a region of a chunk, and the file bytes it starts with (the
/// rest of the region is zero padding).
#[cfg(target_os = "linux")]
type CopyItem<'d, 'f> = (&'d mut [u8], &'f [u8]);

/// Copies a chunk's pieces into `dst` (chunk space), zero-filling the
/// padding, over the worker pool.
#[cfg(target_os = "linux")]
fn fill_chunk(dst: &mut [u8], pieces: &[Piece<'_>]) -> Result<(), BackendError> {
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
    let mut groups: Vec<std::sync::Mutex<Vec<CopyItem<'_, '_>>>> = Vec::new();
    let mut group = Vec::new();
    let mut bytes = 0;
    for item in items {
        bytes += item.0.len();
        group.push(item);
        if bytes >= per {
            groups.push(std::sync::Mutex::new(std::mem::take(&mut group)));
            bytes = 0;
        }
    }
    if !group.is_empty() {
        groups.push(std::sync::Mutex::new(group));
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
    options: LoadOptions<'_>,
) -> Result<Loaded, LoadError> {
    let shared = device::shared(device, Some(queue));
    let queue = shared.check(device, queue)?.clone();
    let mut file = hurray_io::file::open(path)?;
    let view = file.view()?;
    block_on(device, load_view(&shared, &queue, &view, options))
}

/// Loads the tensors of an already validated [`FileView`](hurray_core::file::FileView)
/// (see [`load_file`]); the async form, which never blocks on the GPU (poll
/// the device while it runs).
///
/// # Errors
/// As [`load_file`].
pub async fn load_view_async(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    view: &hurray_core::file::FileView<'_>,
    options: LoadOptions<'_>,
) -> Result<Loaded, LoadError> {
    let shared = device::shared(device, Some(queue));
    let queue = shared.check(device, queue)?.clone();
    load_view(&shared, &queue, view, options).await
}

async fn load_view(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    view: &hurray_core::file::FileView<'_>,
    mut options: LoadOptions<'_>,
) -> Result<Loaded, LoadError> {
    let device = &shared.device;
    let tag = device_tag(device)?;
    // Resolve and check everything before allocating.
    let chosen: Vec<hurray_core::file::Tensor<'_>> = match &options.names {
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
    // Allocate, and list every buffer's bytes in load order.
    let mut handles: Vec<Vec<GpuBufferHandle>> = Vec::with_capacity(chosen.len());
    let mut flat: Vec<(usize, &[u8], usize)> = Vec::new();
    let mut targets: Vec<GpuBufferHandle> = Vec::new();
    let mut total = 0u64;
    for (ti, t) in chosen.iter().enumerate() {
        let mut hs = Vec::new();
        for bytes in t.buffers() {
            let h = GpuBufferHandle::alloc(device, bytes.len() as u64, usage)?;
            total += bytes.len() as u64;
            if !bytes.is_empty() {
                flat.push((targets.len(), bytes, ti));
                targets.push(h.clone());
            }
            hs.push(h);
        }
        handles.push(hs);
    }
    let tensors_total = chosen.len();
    #[cfg(target_os = "linux")]
    let dma = crate::transfer::dma::use_for(shared, crate::transfer::dma::DMA_MIN);
    #[cfg(not(target_os = "linux"))]
    let dma = false;
    if dma {
        #[cfg(target_os = "linux")]
        load_dma(
            shared,
            queue,
            &flat,
            &targets,
            tensors_total,
            total,
            &mut options,
        )
        .await?;
    } else {
        let mut done = 0u64;
        for (ti, t) in chosen.iter().enumerate() {
            let tensors_done = ti + 1;
            for (h, bytes) in handles.get(ti).into_iter().flatten().zip(t.buffers()) {
                if !bytes.is_empty() {
                    h.write_async(device, queue, 0, bytes).await?;
                    done += bytes.len() as u64;
                }
            }
            if let Some(p) = options.progress.as_mut() {
                p(Progress {
                    bytes_done: done,
                    bytes_total: total,
                    tensors_done,
                    tensors_total,
                });
            }
        }
        exec::idle(device, Some(queue)).await?;
    }
    let tensors = chosen
        .iter()
        .zip(descriptors)
        .zip(handles)
        .map(|((t, descriptor), buffers)| LoadedTensor {
            name: t.name().to_owned(),
            descriptor,
            buffers,
        })
        .collect();
    Ok(Loaded {
        tensors,
        bytes: total,
        dma,
    })
}

/// The DMA path of [`load_view`].
#[cfg(target_os = "linux")]
async fn load_dma(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    flat: &[(usize, &[u8], usize)],
    targets: &[GpuBufferHandle],
    tensors_total: usize,
    total: u64,
    options: &mut LoadOptions<'_>,
) -> Result<(), LoadError> {
    use crate::transfer::chunk::DEPTH;
    let device = &shared.device;
    let chunks = plan(flat, tensors_total);
    let class = LOAD_CHUNK;
    let mut in_flight: VecDeque<(exec::Receiver<()>, u64, usize)> = VecDeque::new();
    let report = |options: &mut LoadOptions<'_>, bytes_done, tensors_done| {
        if let Some(p) = options.progress.as_mut() {
            p(Progress {
                bytes_done,
                bytes_total: total,
                tensors_done,
                tensors_total,
            });
        }
    };
    for chunk in &chunks {
        if in_flight.len() >= DEPTH {
            if let Some((rx, b, t)) = in_flight.pop_front() {
                let _ = rx.await;
                report(options, b, t);
            }
        }
        let mut staging = shared.dma.take(device, class)?;
        fill_chunk(
            staging
                .bytes_mut()
                .get_mut(..chunk.fill)
                .ok_or(BackendError::Bug("load chunk larger than its staging"))?,
            &chunk.pieces,
        )?;
        let (tx, mut rx) = exec::oneshot(None);
        let weak = Arc::downgrade(shared);
        let index = exec::scoped(device, || {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("hurray load"),
            });
            for p in &chunk.pieces {
                if let Some(t) = targets.get(p.target) {
                    encoder.copy_buffer_to_buffer(
                        staging.buffer(),
                        p.at as u64,
                        t.buffer(),
                        p.to,
                        p.len as u64,
                    );
                }
            }
            let index = queue.submit([encoder.finish()]);
            queue.on_submitted_work_done(move || {
                if let Some(s) = weak.upgrade() {
                    s.dma.give(staging);
                }
                tx.send(());
            });
            index
        })
        .await?;
        rx.set_hint(index);
        in_flight.push_back((rx, chunk.bytes_done, chunk.tensors_done));
    }
    while let Some((rx, b, t)) = in_flight.pop_front() {
        if rx.await.is_none() {
            return Err(BackendError::Map("a load chunk's completion was dropped".into()).into());
        }
        report(options, b, t);
    }
    Ok(())
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

// Chunk offsets and piece lengths stay multiples of 4 (wgpu's copy unit).
const _: () = assert!(LOAD_CHUNK.is_multiple_of(4) && ITEM.is_multiple_of(4));
