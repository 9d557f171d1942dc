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
//! * **Too large is an error, not a split.** A tensor's buffer lives in one
//!   `wgpu::Buffer` (its own, or a slab it shares, below), which is what a
//!   kernel binds and what the re-tagged descriptor describes. Splitting it would hand back pieces that neither
//!   the descriptor nor a kernel can address as one buffer; so a buffer
//!   above `max_buffer_size` (wgpu's limit, itself under the driver's
//!   `maxMemoryAllocationSize`: ~4 GiB on the H200, 2 GiB on lavapipe) is
//!   refused, by name, with both sizes.
//! * **Small buffers share slabs** (ADR-116). Buffers smaller than
//!   [`LoadOptions::pack_below`] (default 1 MiB) whose descriptor asks for
//!   at most 4 KiB alignment get no `wgpu::Buffer` of their own: in load
//!   order they are packed into *slabs*, each at the next offset that is a
//!   multiple of its descriptor's alignment and of the device's storage
//!   binding offset alignment (so a slice can be bound as a range). A slab
//!   ends where the next buffer would take it past
//!   [`LoadOptions::slab_size`] (default 64 MiB, never above
//!   `max_buffer_size`); buffers of their own in between do not end it. The
//!   staging chunks hold the slab's bytes in the slab's layout (the host
//!   copy gathers the buffers from the file, zero-filling the alignment
//!   padding), so each chunk reaches a slab with one GPU copy whatever the
//!   tensor count, and a load of 10,000 small tensors allocates a few slabs.
//!   A tensor's buffers are [`GpuSlice`]s: a whole buffer, or its range of a
//!   slab ([`LoadedTensor::buffers`]; reads return exactly its bytes;
//!   [`GpuSlice::to_buffer`] copies it into a buffer of its own where a
//!   kernel needs a whole handle). Handles keep their meaning: one whole
//!   buffer from offset 0. Empty buffers share one empty buffer.
//!   `pack_below(0)` gives every buffer its own, as before.
//! * **Descriptors say where the data lives now.** Each loaded tensor keeps
//!   its descriptor with every buffer entry re-tagged: the device's tag
//!   (`vulkan`, `metal`, `webgpu`), [`MemoryClass::Standard`],
//!   [`SyncMode::ProducerSynced`] (the load returns after the GPU has every
//!   byte), sizes and alignments unchanged; the result is parsed again
//!   (validated) before it is returned.
//! * **Per-tensor host work off the critical path** (ADR-122, ADR-123). A
//!   whole file's validation hands each tensor out as it checks it
//!   ([`FileView::parse_with_each`](hurray_core::file::FileView::parse_with_each):
//!   no second parse). With four or more worker threads, a file of 1,024
//!   tensors or more is validated in parts over the worker pool
//!   ([`FileView::parse_in_parts`](hurray_core::file::FileView::parse_in_parts):
//!   parts of 512 tensors or more, at most one per thread), each part's
//!   thread then re-tagging its descriptors and listing its buffers; the
//!   calling thread plans the slabs from the lists, in file order. A
//!   smaller file is validated on the calling thread while two helper
//!   threads (`std::thread::scope`) plan the GPU buffers and re-tag the
//!   descriptors. Either way their errors (a buffer too large) wait for
//!   the validation's, which come first. With fewer threads, the
//!   calling thread does that work after the validation. [`LoadOptions::only`]
//!   looks its names up after the validation and re-tags over the worker
//!   pool. A load's names and descriptors live in one text each, shared by
//!   its [`LoadedTensor`]s (no allocation per tensor); with DMA staging
//!   they are built while the copies run. The mapping is unmapped on the
//!   worker pool once the result is ready. [`LoadTimes`] says how long each
//!   part took.
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
//!   buffer of its own and each slab is written with the ordinary engine
//!   (mapped staging), in file order.
//! * **Reuse.** [`LoadOptions::reuse`] loads into the buffers of a previous
//!   load where they fit: its slabs, in order, where sizes, usages and
//!   device match (the same file layout), and its own buffers by tensor
//!   name where name, sizes, usages and device match: no allocation, which
//!   on the H200 is about half of a cold 4 GiB load (`docs/perf.md`).
//!   [`Loaded::times`] splits a load into validation, allocation and copy.
//! * **Progress** is reported after every completed chunk (chunks complete
//!   in any order; what is reported done only grows; a slab's tensors and
//!   bytes count once the whole slab is on the GPU), or after every buffer
//!   or slab on the fallback path, through [`LoadOptions::progress`], on
//!   the calling thread.
//! * **Errors stop the load.** A worker's or the GPU's error stops every
//!   worker (at its next chunk, or within a poll interval while it waits);
//!   chunks in flight finish on the GPU, their staging freed by their
//!   callbacks; the buffers allocated so far are dropped.
//! * [`save_file`] reads each buffer (exactly its slice) back and writes the file through
//!   `hurray_io::file::create`: a temporary name, `fsync`, rename, directory sync.
//!   Descriptors are re-tagged back to host memory (`cpu`).

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use hurray_core::{BufferHandle, DescriptorError, DeviceTag, MemoryClass, SyncMode, TensorView};
use wgpu::BufferUsages;

use crate::device::{self, DeviceShared};
use crate::exec::{self, block_on};
#[cfg(target_os = "linux")]
use crate::external::host::Staging;
use crate::{BackendError, GpuBufferHandle, GpuSlice};

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
    pack_below: u64,
    slab_size: u64,
}

/// The default of [`LoadOptions::pack_below`]: buffers under 1 MiB share
/// slabs.
pub const DEFAULT_PACK_BELOW: u64 = 1 << 20;
/// The default size of a slab, [`LoadOptions::slab_size`]: 64 MiB, within
/// every driver's largest allocation, few enough per file (four for 256 MiB
/// of small tensors) that allocation stays a few calls, and small enough
/// that the copies into the first slab start after one such allocation
/// (~1.1 ms for 64 MiB on the H200, `docs/perf.md`) while the calling
/// thread allocates the next.
pub const DEFAULT_SLAB_SIZE: u64 = 64 << 20;

impl std::fmt::Debug for LoadOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("names", &self.names)
            .field("usage", &self.usage)
            .field("reuse", &self.reuse.as_ref().map(|l| l.tensors.len()))
            .field("pack_below", &self.pack_below)
            .field("slab_size", &self.slab_size)
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
            pack_below: DEFAULT_PACK_BELOW,
            slab_size: DEFAULT_SLAB_SIZE,
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

    /// Loads into the buffers of a previous load where they fit instead of
    /// allocating: its slabs ([`pack_below`](Self::pack_below)) in order
    /// while their sizes match this load's (the same file layout), and its
    /// buffers of their own by tensor name (the same number of buffers of
    /// the same sizes); the usages asked for, the same device. A model
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

    /// Packs every buffer smaller than `bytes` (default
    /// [`DEFAULT_PACK_BELOW`], 1 MiB) into shared GPU buffers, *slabs*,
    /// instead of giving it a `wgpu::Buffer` of its own; `0` turns packing
    /// off. Each packed buffer starts at a multiple of its descriptor's
    /// alignment and of the device's storage offset alignment; each staging
    /// chunk reaches a slab with one GPU copy whatever the number of
    /// tensors, and a load allocates a few slabs instead of one buffer per
    /// tensor. A packed buffer is a [`GpuSlice`] of its slab
    /// ([`LoadedTensor::buffers`]); [`GpuSlice::to_buffer`] makes a buffer of
    /// its own where one is needed. Buffers of `bytes` or more, and those
    /// whose descriptor asks for more than 4 KiB alignment, keep a buffer
    /// each.
    #[must_use]
    pub fn pack_below(mut self, bytes: u64) -> Self {
        self.pack_below = bytes;
        self
    }

    /// The largest slab (default [`DEFAULT_SLAB_SIZE`], 64 MiB; never
    /// more than the device's `max_buffer_size`): a slab ends where the
    /// next packed buffer would take it past this size.
    #[must_use]
    pub fn slab_size(mut self, bytes: u64) -> Self {
        self.slab_size = bytes;
        self
    }
}

/// A tensor on the GPU: its name, its descriptor (re-tagged for where its
/// buffers live) and, per entry of its buffer table, the GPU bytes that hold
/// it: a whole buffer, or a range of a slab shared with other tensors
/// ([`LoadOptions::pack_below`]).
///
/// The tensors of one load share one allocation for their names and one for
/// their descriptors (a tensor keeps both alive); a tensor of one buffer
/// holds its slice inline.
#[derive(Clone)]
pub struct LoadedTensor {
    texts: Arc<Texts>,
    name: Range<usize>,
    descriptor: Range<usize>,
    buffers: Slices,
}

impl std::fmt::Debug for LoadedTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTensor")
            .field("name", &self.name())
            .field("descriptor", &self.descriptor_bytes())
            .field("buffers", &self.buffers())
            .finish()
    }
}

/// The names and descriptors of tensors, each a range of one text: a
/// load's tensors share one (no allocation per tensor).
#[derive(Debug, Default)]
struct Texts {
    names: String,
    descriptors: Vec<u8>,
}

/// A tensor's GPU bytes: one slice inline (the common case: no allocation
/// per tensor), or a table of them.
#[derive(Debug, Clone)]
enum Slices {
    One(GpuSlice),
    Many(Vec<GpuSlice>),
}

impl Slices {
    fn as_slice(&self) -> &[GpuSlice] {
        match self {
            Self::One(s) => std::slice::from_ref(s),
            Self::Many(v) => v,
        }
    }

    fn from_vec(mut v: Vec<GpuSlice>) -> Self {
        match v.pop() {
            Some(s) if v.is_empty() => Self::One(s),
            Some(s) => {
                v.push(s);
                Self::Many(v)
            }
            None => Self::Many(v),
        }
    }
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
        Self::from_slices(
            name,
            descriptor,
            buffers.into_iter().map(GpuSlice::whole).collect(),
        )
    }

    /// A tensor whose buffers are ranges of GPU buffers (as [`load_file`]
    /// makes for packed tensors): `descriptor` is validated, and each slice
    /// must hold exactly its table entry's `byte_size`.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_slices(
        name: impl Into<String>,
        descriptor: &[u8],
        buffers: Vec<GpuSlice>,
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
        let texts = Texts {
            names: name,
            descriptors: descriptor.to_vec(),
        };
        Ok(Self {
            name: 0..texts.names.len(),
            descriptor: 0..texts.descriptors.len(),
            texts: Arc::new(texts),
            buffers: Slices::from_vec(buffers),
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
        self.texts.names.get(self.name.clone()).unwrap_or_default()
    }

    /// The descriptor's bytes.
    #[must_use]
    pub fn descriptor_bytes(&self) -> &[u8] {
        self.texts
            .descriptors
            .get(self.descriptor.clone())
            .unwrap_or_default()
    }

    /// The descriptor (validated when the tensor was made).
    ///
    /// # Errors
    /// Never in practice: the bytes were validated and are immutable.
    pub fn descriptor(&self) -> Result<TensorView<'_>, DescriptorError> {
        TensorView::parse(self.descriptor_bytes())
    }

    /// The GPU bytes of each buffer, in buffer-table order: a whole
    /// buffer ([`GpuSlice::as_whole`]) or a packed tensor's range of its
    /// slab. Each reads back exactly the buffer's bytes
    /// ([`GpuSlice::readback`]); [`GpuSlice::to_buffer`] gives a buffer of
    /// its own.
    #[must_use]
    pub fn buffers(&self) -> &[GpuSlice] {
        self.buffers.as_slice()
    }

    /// Whether any buffer of the tensor is a range of a larger GPU buffer
    /// (a slab shared with other buffers) rather than a whole one.
    #[must_use]
    pub fn is_packed(&self) -> bool {
        self.buffers().iter().any(|b| !b.is_whole())
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
    /// Tensors loaded into buffers taken over from [`LoadOptions::reuse`]
    /// (own buffers, or the slabs of the previous load).
    pub reused: usize,
    /// How long each phase took.
    pub times: LoadTimes,
    /// Slabs allocated or reused ([`LoadOptions::pack_below`]); 0 when
    /// nothing was packed.
    pub slabs: usize,
    /// Buffers packed into slabs (empty buffers not counted).
    pub packed: usize,
    /// The slabs themselves, in load order: taken over by a later load's
    /// [`LoadOptions::reuse`].
    slab_buffers: Vec<GpuBufferHandle>,
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
    /// taking them over from [`LoadOptions::reuse`]): the calling thread's
    /// time between the validation and the copies, plus its time
    /// allocating beside the copies.
    pub allocate: Duration,
    /// Moving the bytes, until the GPU holds every one. [`load_file`]
    /// overlaps allocation with the copies: this is the rest of the load
    /// once the calling thread stopped allocating (so the three phases and
    /// [`build`](Self::build) add up to the whole).
    pub copy: Duration,
    /// Building the [`LoadedTensor`]s once every GPU buffer exists: beside
    /// the copies ([`load_file`] with DMA staging) or after them; outside
    /// the three phases above, so that the four add up to the whole.
    pub build: Duration,
    /// Listing the tensors to load: the names of [`LoadOptions::only`]
    /// looked up, or the file walked in file order. Zero for a whole file
    /// through [`load_file`], whose validation hands its tensors out
    /// ([`FileView::parse_with_each`](hurray_core::file::FileView::parse_with_each)).
    /// Part of `allocate`.
    pub list: Duration,
    /// Re-tagging every descriptor for the device. For a whole file
    /// through [`load_file`] with four or more worker threads, a helper
    /// thread's time beside the validation, or (a file validated in parts)
    /// the longest part's time re-tagging and listing its buffers after
    /// checking them (inside `validate`, not `allocate`); otherwise part of
    /// `allocate` (over the worker pool).
    pub retag: Duration,
    /// Planning the GPU buffers (slabs, buffers of their own) and taking
    /// over those of [`LoadOptions::reuse`]. For a whole file through
    /// [`load_file`] with four or more worker threads, the planning is a
    /// helper thread's time beside the validation, or (a file validated in
    /// parts) the calling thread's time planning from the parts' lists and
    /// joining their texts after them (inside `validate`); the take-over is
    /// always part of `allocate`.
    pub plan: Duration,
    /// Part of `allocate`: creating the GPU buffers (`create_buffer`, the
    /// driver's memory allocation); zero when every buffer was reused.
    pub gpu_allocate: Duration,
    /// The copy threads of [`load_file`]'s DMA path (zero elsewhere): where
    /// their time went, summed over the threads.
    pub workers: WorkerTimes,
}

/// Where the copy threads of a DMA load spent their time, summed over the
/// threads ([`LoadTimes::workers`]): with `T` threads, each field divided
/// by `T` is a mean thread's share of the copy phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerTimes {
    /// Copying the file's bytes into staging.
    pub fill: Duration,
    /// Recording and submitting the chunks' GPU copies.
    pub submit: Duration,
    /// Waiting for a free staging slot (the GPU behind).
    pub wait_slot: Duration,
    /// Waiting for a chunk's GPU buffers to be allocated.
    pub wait_buffer: Duration,
}

impl Loaded {
    /// The tensor named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&LoadedTensor> {
        self.tensors.iter().find(|t| t.name() == name)
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
    let mut out = vec![0u8; view.as_bytes().len()];
    retag_into(&mut out, name, view, tag, class, sync)?;
    Ok(out)
}

/// [`retag`] into `out`, which has the descriptor's length.
fn retag_into(
    out: &mut [u8],
    name: &str,
    view: &TensorView<'_>,
    tag: DeviceTag,
    class: MemoryClass,
    sync: SyncMode,
) -> Result<(), LoadError> {
    let whole = view.as_bytes();
    let table = view.buffers();
    let bad = |error| LoadError::Descriptor {
        name: name.to_owned(),
        error,
    };
    // The table is a sub-slice of the descriptor (zero-copy views): its
    // position is the difference of the two addresses.
    let at = (table.as_bytes().as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
    if out.len() != whole.len() {
        return Err(LoadError::Backend(BackendError::Bug(
            "a re-tagged descriptor's room has another length",
        )));
    }
    out.copy_from_slice(whole);
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
    TensorView::parse(out).map_err(bad)?;
    Ok(())
}

/// One piece of a chunk: bytes of the file for `[at, at + len)` of chunk
/// space, bound for `target`'s buffer at `to` (`len` a multiple of 4; bytes
/// past `src` are zero padding); `run` is the run it belongs to.
struct Piece<'f> {
    src: &'f [u8],
    at: usize,
    len: usize,
    target: usize,
    to: u64,
    run: usize,
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

/// One buffer's bytes bound for a GPU buffer: `bytes` go to `target` at
/// `to`, followed by zeros up to `span` bytes (a multiple of 4: the next
/// packed buffer's place in a slab, or the buffer rounded up to 4); `run`
/// is the run (a buffer of its own, or a slab) it belongs to.
#[derive(Clone, Copy)]
struct Flat<'f> {
    target: usize,
    bytes: &'f [u8],
    run: usize,
    to: u64,
    span: usize,
}

/// Cuts `buffers` (in load order) into chunks of at most `size` bytes of
/// chunk space: small buffers share a chunk, large ones span several.
/// Consecutive buffers of one slab are contiguous in chunk space and in the
/// slab, so that a chunk reaches a slab with one GPU copy
/// ([`submit_chunk`] merges them).
fn plan<'f>(buffers: &[Flat<'f>], size: usize) -> Vec<Chunk<'f>> {
    let mut chunks = Vec::new();
    let mut cur = Chunk {
        pieces: Vec::new(),
        fill: 0,
    };
    for &Flat {
        target,
        bytes,
        run,
        to,
        span,
    } in buffers
    {
        let padded = span;
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
                to: to + pos as u64,
                run,
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
    let file = hurray_io::file::open(path)?;
    let result = load_mapped_file(&shared, &queue, &file, started, &mut options);
    // Unmapping costs about a microsecond per mapped page (every page of a
    // whole-file load): done on the worker pool, once the result is ready.
    crate::pool::detach(move || drop(file));
    result
}

/// [`load_file`] of the mapped `file`, from its validation on; `started`
/// when the load began.
fn load_mapped_file(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    file: &hurray_io::file::MappedFile,
    started: Instant,
    options: &mut LoadOptions<'_>,
) -> Result<Loaded, LoadError> {
    let device = &shared.device;
    let bytes = file.bytes();
    let mut table = vec![0u32; hurray_core::file::FileIndex::table_len(bytes)?];
    // Loading the whole file: each tensor as the validation hands it out
    // (in file order, its descriptor parsed once) is planned and re-tagged
    // by helpers while the validation goes on.
    // (A device without a tag fails in `prepare`, after the file's checks.)
    // On hosts of few cores, the validation lists them, and the calling
    // thread plans and re-tags after it.
    let whole = options.names.is_none();
    let tag = device_tag(device).ok().filter(|_| whole);
    let beside = crate::pool::worker_threads() >= BESIDE_MIN_THREADS;
    let parts = table.len() / 2 / PART_TENSORS;
    let (view, early) = match tag {
        Some(tag) if beside && parts >= 2 => {
            let (view, early) = validate_in_parts(shared, bytes, &mut table, tag, options, parts)?;
            (view, Before::Planned(Box::new(early)))
        }
        Some(tag) if beside => {
            let (view, early) = plan_beside_validation(shared, bytes, &mut table, tag, options)?;
            (view, Before::Planned(Box::new(early)))
        }
        _ => {
            let mut listed = Vec::new();
            let view = hurray_core::file::FileView::parse_with_each(
                bytes,
                &hurray_io::file::options(),
                &mut table,
                |t| {
                    if whole {
                        listed.push(t);
                    }
                },
            )?;
            (
                view,
                if whole {
                    Before::Listed(listed)
                } else {
                    Before::Nothing
                },
            )
        }
    };
    let validate = started.elapsed();
    let mut prepared = prepare(shared, &view, early, options)?;
    let copy_started = Instant::now();
    #[cfg(target_os = "linux")]
    if prepared.dma {
        let run = load_dma_threads(shared, queue, &prepared, options)?;
        // Allocation and building overlapped the copies: the copy phase is
        // what remains.
        prepared.times.allocate += run.allocating;
        prepared.times.gpu_allocate += run.creating;
        prepared.times.workers = run.workers;
        let beside = run.allocating + run.built.as_ref().map_or(Duration::ZERO, |b| b.1);
        let copy = copy_started.elapsed().saturating_sub(beside);
        return prepared.finish(validate, copy, run.built);
    }
    prepared.allocate_all(shared)?;
    let copy_started = Instant::now();
    block_on(device, load_mapped(shared, queue, &prepared, options))?;
    let copy = copy_started.elapsed();
    prepared.finish(validate, copy, None)
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
    let mut prepared = prepare(&shared, view, Before::Nothing, &mut options)?;
    prepared.allocate_all(&shared)?;
    let copy_started = Instant::now();
    #[cfg(target_os = "linux")]
    if prepared.dma {
        load_dma(&shared, &queue, &prepared, &mut options).await?;
        let copy = copy_started.elapsed();
        return prepared.finish(Duration::ZERO, copy, None);
    }
    load_mapped(&shared, &queue, &prepared, &mut options).await?;
    let copy = copy_started.elapsed();
    prepared.finish(Duration::ZERO, copy, None)
}

/// A load with every check passed: the buffers to fill, allocated or not.
struct Prepared<'f> {
    /// How many tensors are loaded.
    tensors: usize,
    /// Their names and re-tagged descriptors.
    texts: Arc<Texts>,
    /// Per tensor: its ranges of `texts` and of `parts`.
    items: Vec<Item>,
    /// The GPU buffers to fill, in allocation order: first one per run (in
    /// load order: run `i` fills target `i`), then the empty buffers.
    targets: Vec<Target>,
    /// Every buffer of every tensor, in tensor then table order: where its
    /// bytes live.
    parts: Vec<Part>,
    /// Every non-empty buffer, in load order, bound for its target: what
    /// [`plan`] cuts into chunks.
    flat: Vec<Flat<'f>>,
    /// Per run (target `i` is filled by run `i`): whether it fills a slab,
    /// the buffer bytes it carries, its tensors.
    runs: Vec<RunInfo>,
    usage: BufferUsages,
    total: u64,
    reused: usize,
    slabs: usize,
    packed: usize,
    /// Time spent so far: `allocate` (resolving, re-tagging, planning and
    /// taking over buffers, then allocating) and its parts.
    times: LoadTimes,
    dma: bool,
}

/// One loaded tensor's name and descriptor (ranges of the load's
/// [`Texts`]) and its buffers (a range of [`Prepared::parts`]).
struct Item {
    name: Range<usize>,
    descriptor: Range<usize>,
    parts: Range<usize>,
}

/// A GPU buffer a load fills: its logical size, whether it is a slab, and
/// its handle once allocated (at once when taken over from
/// [`LoadOptions::reuse`]).
struct Target {
    size: u64,
    slab: bool,
    slot: OnceLock<GpuBufferHandle>,
}

/// Where one tensor buffer's bytes live: `len` bytes of `target` from
/// `offset` (0 for a buffer of its own).
#[derive(Clone, Copy)]
struct Part {
    target: usize,
    offset: u64,
    len: u64,
}

/// A run's bookkeeping for progress: the buffers bound for one target.
struct RunInfo {
    /// A slab (its bytes count as done once the whole run is), else one
    /// tensor buffer (its bytes count piece by piece).
    slab: bool,
    /// Buffer bytes the run carries (padding excluded).
    payload: u64,
    /// Its tensors, once per buffer.
    tensors: Vec<usize>,
}

impl Prepared<'_> {
    /// Allocates target `i` unless it holds a buffer already; returns the
    /// time spent creating the buffer (zero when it held one).
    fn allocate_slot(
        &self,
        shared: &Arc<DeviceShared>,
        i: usize,
    ) -> Result<Duration, BackendError> {
        let Some(t) = self.targets.get(i) else {
            return Err(BackendError::Bug("load slot index"));
        };
        if t.slot.get().is_some() {
            return Ok(Duration::ZERO);
        }
        let started = Instant::now();
        let _ = t
            .slot
            .set(GpuBufferHandle::alloc_on(shared, t.size, self.usage)?);
        Ok(started.elapsed())
    }

    /// Allocates every buffer now (the paths that do not overlap allocation
    /// with copies).
    fn allocate_all(&mut self, shared: &Arc<DeviceShared>) -> Result<(), BackendError> {
        let started = Instant::now();
        for i in 0..self.targets.len() {
            self.times.gpu_allocate += self.allocate_slot(shared, i)?;
        }
        self.times.allocate += started.elapsed();
        Ok(())
    }

    /// The buffer of target `i`, once allocated.
    fn target(&self, i: usize) -> Option<&GpuBufferHandle> {
        self.targets.get(i).and_then(|t| t.slot.get())
    }

    /// The loaded tensors, once every target is allocated (before or after
    /// the copies: they are handed out only once the GPU has every byte).
    fn build(&self) -> Result<Vec<LoadedTensor>, BackendError> {
        let never = || BackendError::Bug("a loaded buffer was never allocated");
        let handles = self
            .targets
            .iter()
            .map(|t| t.slot.get())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(never)?;
        let slice = |part: &Part| -> Result<GpuSlice, BackendError> {
            let h = *handles.get(part.target).ok_or_else(never)?;
            // Own buffers are whole; a packed part lies inside its slab by
            // construction (the slab spans every part placed in it).
            if part.offset == 0 && part.len == h.byte_len() {
                Ok(GpuSlice::whole(h.clone()))
            } else {
                GpuSlice::new(h.clone(), part.offset, part.len)
            }
        };
        let mut tensors = Vec::with_capacity(self.tensors);
        for item in &self.items {
            let parts = self.parts.get(item.parts.clone()).ok_or_else(never)?;
            let buffers = match parts {
                [one] => Slices::One(slice(one)?),
                many => Slices::Many(many.iter().map(slice).collect::<Result<_, _>>()?),
            };
            tensors.push(LoadedTensor {
                texts: Arc::clone(&self.texts),
                name: item.name.clone(),
                descriptor: item.descriptor.clone(),
                buffers,
            });
        }
        Ok(tensors)
    }

    /// The result: `built` (with the time it took) when the tensors were
    /// built beside the copies, else built now.
    fn finish(
        self,
        validate: Duration,
        copy: Duration,
        built: Option<(Vec<LoadedTensor>, Duration)>,
    ) -> Result<Loaded, LoadError> {
        let (tensors, build) = match built {
            Some(b) => b,
            None => {
                let started = Instant::now();
                let tensors = self.build()?;
                (tensors, started.elapsed())
            }
        };
        let slab_buffers = self
            .targets
            .into_iter()
            .filter(|t| t.slab)
            .filter_map(|t| t.slot.into_inner())
            .collect();
        Ok(Loaded {
            tensors,
            bytes: self.total,
            dma: self.dma,
            reused: self.reused,
            times: LoadTimes {
                validate,
                copy,
                build,
                ..self.times
            },
            slabs: self.slabs,
            packed: self.packed,
            slab_buffers,
        })
    }
}

/// The slab being filled: its target (and run), its size so far, and the
/// index in `flat` of its last buffer (whose span grows to the next one).
struct OpenSlab {
    target: usize,
    fill: u64,
    last: usize,
}

/// The largest alignment a packed buffer may ask for (a file's data
/// alignment is at least this): larger ones get a buffer of their own.
const MAX_PACKED_ALIGN: u64 = 4096;

/// One buffer to place: (file offset, bytes, part index, tensor index, its
/// descriptor's alignment).
type Entry<'f> = (usize, &'f [u8], usize, usize, u64);

/// The GPU buffers of a load (own buffers and slabs), planned tensor by
/// tensor in load order; allocates nothing.
struct Planner<'f> {
    /// The file's first byte's address (buffers are sub-slices of it).
    base: usize,
    max: u64,
    slab_cap: u64,
    pack_below: u64,
    /// Where a packed buffer may start in a slab: its descriptor's
    /// alignment, and never less than a storage binding's offset alignment
    /// (so a slice can be bound as a range of its slab).
    min_align: u64,
    targets: Vec<Target>,
    parts: Vec<Part>,
    flat: Vec<Flat<'f>>,
    runs: Vec<RunInfo>,
    open: Option<OpenSlab>,
    empties: Vec<usize>,
    packed: usize,
    slabs: usize,
    total: u64,
    /// Per tensor, its range of `parts`.
    tensor_parts: Vec<Range<usize>>,
}

impl<'f> Planner<'f> {
    fn new(shared: &DeviceShared, file: &'f [u8], options: &LoadOptions<'_>) -> Self {
        let max = shared.limits.max_buffer_size;
        let slab_cap = options.slab_size.min(max);
        Self {
            base: file.as_ptr() as usize,
            max,
            slab_cap,
            pack_below: if slab_cap == 0 { 0 } else { options.pack_below },
            min_align: u64::from(shared.limits.min_storage_buffer_offset_alignment).max(4),
            targets: Vec::new(),
            parts: Vec::new(),
            flat: Vec::new(),
            runs: Vec::new(),
            open: None,
            empties: Vec::new(),
            packed: 0,
            slabs: 0,
            total: 0,
            tensor_parts: Vec::new(),
        }
    }

    /// The next tensor: its sizes checked, a part per buffer; its buffers
    /// placed now (`later` is `None`: tensors arrive in file order) or
    /// pushed to `later` (sorted into file order, then [`place`](Self::place)d).
    fn add(
        &mut self,
        t: &hurray_core::file::Tensor<'f>,
        mut later: Option<&mut Vec<Entry<'f>>>,
    ) -> Result<(), LoadError> {
        let ti = self.tensor_parts.len();
        let first = self.parts.len();
        for (i, (bytes, h)) in t.buffers().zip(t.descriptor().buffers().iter()).enumerate() {
            if h.byte_size() > self.max {
                return Err(LoadError::TooLarge {
                    name: t.name().to_owned(),
                    buffer: i,
                    bytes: h.byte_size(),
                    max: self.max,
                });
            }
            let entry = self.entry(bytes, ti, u64::from(h.alignment()));
            match later.as_mut() {
                Some(l) => l.push(entry),
                None => self.place(entry)?,
            }
        }
        self.tensor_parts.push(first..self.parts.len());
        Ok(())
    }

    /// A new part (not yet placed) for buffer `bytes` of tensor `ti`, and
    /// its entry for [`place`](Self::place). The buffers are sub-slices of
    /// the file (zero-copy views): their offset is the difference of the
    /// two addresses.
    fn entry(&mut self, bytes: &'f [u8], ti: usize, align: u64) -> Entry<'f> {
        let at = (bytes.as_ptr() as usize).wrapping_sub(self.base);
        let pi = self.parts.len();
        self.parts.push(Part {
            target: usize::MAX,
            offset: 0,
            len: 0,
        });
        (at, bytes, pi, ti, align)
    }

    /// The next tensor, in file order, from its buffers listed (bytes and
    /// alignment, sizes already checked: [`PartOut::prepare`]).
    fn add_listed(&mut self, bufs: &[(&'f [u8], u64)]) -> Result<(), LoadError> {
        let ti = self.tensor_parts.len();
        let first = self.parts.len();
        for &(bytes, align) in bufs {
            let entry = self.entry(bytes, ti, align);
            self.place(entry)?;
        }
        self.tensor_parts.push(first..self.parts.len());
        Ok(())
    }

    /// Places one buffer, in load order: in the open slab, a new slab, or a
    /// buffer of its own.
    fn place(&mut self, (_, bytes, pi, ti, align): Entry<'f>) -> Result<(), LoadError> {
        let len = bytes.len() as u64;
        self.total += len;
        let Some(part) = self.parts.get_mut(pi) else {
            return Err(BackendError::Bug("load part index").into());
        };
        part.len = len;
        if bytes.is_empty() {
            self.empties.push(pi);
            return Ok(());
        }
        let (targets, runs, flat) = (&mut self.targets, &mut self.runs, &mut self.flat);
        if self.pack_below > 0 && len < self.pack_below && align <= MAX_PACKED_ALIGN {
            let align = align.max(self.min_align);
            let slab_cap = self.slab_cap;
            // Its place in the open slab, or a new slab.
            let place = self.open.as_ref().and_then(|s| {
                let at = s.fill.checked_next_multiple_of(align)?;
                (at.checked_add(len)? <= slab_cap).then_some(at)
            });
            let at = match (place, self.open.as_mut()) {
                (Some(at), Some(s)) => {
                    // The previous buffer's zero padding runs up to here.
                    if let Some(prev) = flat.get_mut(s.last) {
                        prev.span = usize::try_from(at - prev.to)
                            .map_err(|_| BackendError::Bug("slab offset"))?;
                    }
                    at
                }
                _ => {
                    if len > slab_cap {
                        return Err(BackendError::Bug("a packed buffer larger than a slab").into());
                    }
                    self.open = Some(OpenSlab {
                        target: targets.len(),
                        fill: 0,
                        last: 0,
                    });
                    targets.push(Target {
                        size: 0,
                        slab: true,
                        slot: OnceLock::new(),
                    });
                    runs.push(RunInfo {
                        slab: true,
                        payload: 0,
                        tensors: Vec::new(),
                    });
                    self.slabs += 1;
                    0
                }
            };
            let Some(s) = self.open.as_mut() else {
                return Err(BackendError::Bug("no open slab").into());
            };
            s.fill = at + len;
            s.last = flat.len();
            if let (Some(t), Some(r)) = (targets.get_mut(s.target), runs.get_mut(s.target)) {
                t.size = s.fill;
                r.payload += len;
                r.tensors.push(ti);
            }
            part.target = s.target;
            part.offset = at;
            flat.push(Flat {
                target: s.target,
                bytes,
                run: s.target,
                to: at,
                span: bytes.len().next_multiple_of(4),
            });
            self.packed += 1;
        } else {
            part.target = targets.len();
            targets.push(Target {
                size: len,
                slab: false,
                slot: OnceLock::new(),
            });
            flat.push(Flat {
                target: part.target,
                bytes,
                run: runs.len(),
                to: 0,
                span: bytes.len().next_multiple_of(4),
            });
            runs.push(RunInfo {
                slab: false,
                payload: len,
                tensors: vec![ti],
            });
        }
        Ok(())
    }

    /// Empty buffers: one shared empty buffer when packing, else one each
    /// (as a buffer of their own, reusable by name).
    fn close(&mut self) {
        if self.empties.is_empty() {
            return;
        }
        let targets = &mut self.targets;
        let shared_empty = (self.pack_below > 0).then(|| {
            targets.push(Target {
                size: 0,
                slab: false,
                slot: OnceLock::new(),
            });
            targets.len() - 1
        });
        for pi in std::mem::take(&mut self.empties) {
            let target = shared_empty.unwrap_or_else(|| {
                targets.push(Target {
                    size: 0,
                    slab: false,
                    slot: OnceLock::new(),
                });
                targets.len() - 1
            });
            if let Some(p) = self.parts.get_mut(pi) {
                p.target = target;
            }
        }
    }
}

/// Each tensor's name and re-tagged descriptor, appended tensor by tensor
/// into one text each (the helper of a load planned beside its validation).
struct Retagger {
    tag: DeviceTag,
    names: String,
    descriptors: Vec<u8>,
    spans: Vec<Spans>,
}

impl Retagger {
    fn add(&mut self, t: &hurray_core::file::Tensor<'_>) -> Result<(), LoadError> {
        let n = self.names.len();
        self.names.push_str(t.name());
        let d = self.descriptors.len();
        let len = t.descriptor().as_bytes().len();
        self.descriptors.resize(d + len, 0);
        let room = self
            .descriptors
            .get_mut(d..)
            .ok_or(LoadError::Backend(BackendError::Bug("re-tag room")))?;
        retag_into(
            room,
            t.name(),
            t.descriptor(),
            self.tag,
            MemoryClass::Standard,
            SyncMode::ProducerSynced,
        )?;
        self.spans.push((n..self.names.len(), d..d + len));
        Ok(())
    }
}

/// What a load of a whole file listed, planned and re-tagged beside the
/// file's validation ([`plan_beside_validation`]).
struct Early<'f> {
    chosen: Vec<hurray_core::file::Tensor<'f>>,
    planner: Planner<'f>,
    texts: Texts,
    spans: Vec<Spans>,
    /// Time the helpers spent planning, and re-tagging.
    plan: Duration,
    retag: Duration,
}

/// Tensors handed from the validation to the helpers at a time.
const BATCH: usize = 256;

/// Validates `bytes` as a file ([`FileView::parse_with_each`](hurray_core::file::FileView::parse_with_each))
/// while two helper threads plan the GPU buffers and re-tag the
/// descriptors of the tensors it hands out, in batches: for a load of the
/// whole file, the per-tensor host work then hides behind the validation
/// (which must finish first: its error wins over the helpers').
fn plan_beside_validation<'f>(
    shared: &DeviceShared,
    bytes: &'f [u8],
    table: &'f mut [u32],
    tag: DeviceTag,
    options: &LoadOptions<'_>,
) -> Result<(hurray_core::file::FileView<'f>, Early<'f>), LoadError> {
    use std::sync::mpsc;
    type Batch<'f> = Arc<Vec<hurray_core::file::Tensor<'f>>>;
    let (plan_tx, plan_rx) = mpsc::channel::<Batch<'f>>();
    let (tag_tx, tag_rx) = mpsc::channel::<Batch<'f>>();
    let mut planner = Planner::new(shared, bytes, options);
    let mut retagger = Retagger {
        tag,
        names: String::new(),
        descriptors: Vec::new(),
        spans: Vec::new(),
    };
    std::thread::scope(|s| {
        let planning = s.spawn(move || {
            let mut chosen = Vec::new();
            let mut busy = Duration::ZERO;
            let mut failed = None;
            for batch in plan_rx {
                let started = Instant::now();
                for t in batch.iter() {
                    if failed.is_none() {
                        failed = planner.add(t, None).err();
                    }
                }
                chosen.extend_from_slice(&batch);
                busy += started.elapsed();
            }
            let started = Instant::now();
            planner.close();
            busy += started.elapsed();
            (chosen, planner, busy, failed)
        });
        let retagging = s.spawn(move || {
            let mut busy = Duration::ZERO;
            let mut failed = None;
            for batch in tag_rx {
                let started = Instant::now();
                for t in batch.iter() {
                    if failed.is_none() {
                        failed = retagger.add(t).err();
                    }
                }
                busy += started.elapsed();
            }
            (retagger, busy, failed)
        });
        let mut batch = Vec::with_capacity(BATCH);
        let send = |batch: Vec<_>| {
            let b = Arc::new(batch);
            let _ = plan_tx.send(Arc::clone(&b));
            let _ = tag_tx.send(b);
        };
        let view = hurray_core::file::FileView::parse_with_each(
            bytes,
            &hurray_io::file::options(),
            table,
            |t| {
                batch.push(t);
                if batch.len() == BATCH {
                    send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
                }
            },
        );
        if !batch.is_empty() {
            send(batch);
        }
        drop((plan_tx, tag_tx));
        let planned = planning.join();
        let retagged = retagging.join();
        let view = view?;
        let bug = |_| LoadError::Backend(BackendError::Bug("a load helper panicked"));
        let (chosen, planner, plan, failed) = planned.map_err(bug)?;
        if let Some(e) = failed {
            return Err(e);
        }
        let (retagger, retag, failed) = retagged.map_err(bug)?;
        if let Some(e) = failed {
            return Err(e);
        }
        Ok((
            view,
            Early {
                chosen,
                planner,
                texts: Texts {
                    names: retagger.names,
                    descriptors: retagger.descriptors,
                },
                spans: retagger.spans,
                plan,
                retag,
            },
        ))
    })
}

/// The fewest tensors of one part when [`load_file`] validates a whole
/// file in parts ([`validate_in_parts`]): a file of fewer than twice this
/// many is validated on one thread, its tensors planned and re-tagged
/// beside it ([`plan_beside_validation`]).
const PART_TENSORS: usize = 512;

/// What one part of a file's validation ([`validate_in_parts`]) handed out
/// and prepared: its tensors, their names and re-tagged descriptors (one
/// text each, ranges relative to them), and every buffer's bytes and
/// alignment for the planner (read from the descriptors while they are
/// still in this thread's cache), with each tensor's end in `bufs`.
#[derive(Default)]
struct PartOut<'f> {
    tensors: Vec<hurray_core::file::Tensor<'f>>,
    texts: Texts,
    spans: Vec<Spans>,
    bufs: Vec<(&'f [u8], u64)>,
    ends: Vec<usize>,
    /// The first error of the re-tagging or the size checks.
    failed: Option<LoadError>,
    busy: Duration,
}

impl<'f> PartOut<'f> {
    /// Re-tags the part's descriptors and lists its buffers, checking each
    /// against the device's `max_buffer_size`; stops at the first error.
    fn prepare(&mut self, tag: DeviceTag, max: u64) {
        let started = Instant::now();
        let mut retagger = Retagger {
            tag,
            names: String::new(),
            descriptors: Vec::new(),
            spans: Vec::with_capacity(self.tensors.len()),
        };
        self.ends.reserve(self.tensors.len());
        self.bufs.reserve(self.tensors.len());
        for t in &self.tensors {
            if let Err(e) = retagger.add(t) {
                self.failed = Some(e);
                break;
            }
            for (i, (bytes, h)) in t.buffers().zip(t.descriptor().buffers().iter()).enumerate() {
                if h.byte_size() > max {
                    self.failed = Some(LoadError::TooLarge {
                        name: t.name().to_owned(),
                        buffer: i,
                        bytes: h.byte_size(),
                        max,
                    });
                    break;
                }
                self.bufs.push((bytes, u64::from(h.alignment())));
            }
            if self.failed.is_some() {
                break;
            }
            self.ends.push(self.bufs.len());
        }
        self.texts = Texts {
            names: retagger.names,
            descriptors: retagger.descriptors,
        };
        self.spans = retagger.spans;
        self.busy = started.elapsed();
    }
}

/// Validates `bytes` as a file cut into `parts` ranges of its file order
/// ([`FileView::parse_in_parts`](hurray_core::file::FileView::parse_in_parts))
/// over the worker pool: each part's thread checks its tensors, then
/// re-tags their descriptors and lists their buffers (sizes checked),
/// while the descriptors are still in its cache; the page faults of the
/// file's mapping, which the validation takes first, are spread over the
/// threads too. The file's own error (the first part's, in file order)
/// wins over the parts' size and re-tag errors. This thread then plans
/// the GPU buffers from the lists (in file order: slabs as one thread
/// would pack them) and joins the texts.
fn validate_in_parts<'f>(
    shared: &DeviceShared,
    bytes: &'f [u8],
    table: &'f mut [u32],
    tag: DeviceTag,
    options: &LoadOptions<'_>,
    parts: usize,
) -> Result<(hurray_core::file::FileView<'f>, Early<'f>), LoadError> {
    type Slot<'f> = Mutex<
        Option<(
            Result<hurray_core::file::PartChecked, hurray_core::file::FileError>,
            PartOut<'f>,
        )>,
    >;
    let parts = u32::try_from(parts.min(crate::pool::worker_threads().max(1))).unwrap_or(1);
    let split = hurray_core::file::FileView::parse_in_parts(
        bytes,
        &hurray_io::file::options(),
        table,
        parts,
    )?;
    let max = shared.limits.max_buffer_size;
    let slots: Vec<Slot<'f>> = (0..split.len()).map(|_| Mutex::new(None)).collect();
    let n = split.index().len() as usize;
    crate::pool::run(slots.len(), |k| {
        let Ok(part) = u32::try_from(k) else { return };
        let mut out = PartOut {
            tensors: Vec::with_capacity(n / slots.len().max(1) + 1),
            ..PartOut::default()
        };
        let checked = split.check(part, |t| out.tensors.push(t));
        if checked.is_ok() {
            out.prepare(tag, max);
        }
        if let Some(slot) = slots.get(k) {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some((checked, out));
        }
    })?;
    let mut outs = Vec::with_capacity(slots.len());
    let mut checked = Vec::with_capacity(slots.len());
    for slot in slots {
        let Some((c, out)) = slot.into_inner().unwrap_or_else(PoisonError::into_inner) else {
            return Err(BackendError::Bug("a validation part never ran").into());
        };
        checked.push(c);
        outs.push(out);
    }
    // The file's error first, then the parts' own, in file order.
    let view = split.finish(checked)?;
    if let Some(e) = outs.iter_mut().find_map(|o| o.failed.take()) {
        return Err(e);
    }
    let started = Instant::now();
    let mut planner = Planner::new(shared, bytes, options);
    let (names_len, descriptors_len) = outs.iter().fold((0, 0), |(a, b), o| {
        (a + o.texts.names.len(), b + o.texts.descriptors.len())
    });
    let mut texts = Texts {
        names: String::with_capacity(names_len),
        descriptors: Vec::with_capacity(descriptors_len),
    };
    let mut spans = Vec::with_capacity(n);
    let mut chosen = Vec::with_capacity(n);
    let mut retag = Duration::ZERO;
    for o in &outs {
        let mut from = 0;
        for &end in &o.ends {
            planner.add_listed(o.bufs.get(from..end).unwrap_or_default())?;
            from = end;
        }
        let (dn, dd) = (texts.names.len(), texts.descriptors.len());
        spans.extend(
            o.spans
                .iter()
                .map(|(a, b)| (a.start + dn..a.end + dn, b.start + dd..b.end + dd)),
        );
        texts.names.push_str(&o.texts.names);
        texts.descriptors.extend_from_slice(&o.texts.descriptors);
        chosen.extend_from_slice(&o.tensors);
        retag = retag.max(o.busy);
    }
    planner.close();
    Ok((
        view,
        Early {
            chosen,
            planner,
            texts,
            spans,
            plan: started.elapsed(),
            retag,
        },
    ))
}

/// What a load did beside or right after the validation.
enum Before<'f> {
    /// Nothing: [`prepare`] lists the tensors.
    Nothing,
    /// Every tensor of the file, in file order, as the validation handed
    /// them out.
    Listed(Vec<hurray_core::file::Tensor<'f>>),
    /// Listed, planned and re-tagged beside the validation.
    Planned(Box<Early<'f>>),
}

/// The fewest worker threads with which [`load_file`] plans and re-tags a
/// whole file on helper threads beside its validation: on fewer cores the
/// helpers only take the validation's (measured on the 2-core CI box: the
/// validation's wall time doubled, the load gained nothing), so the
/// calling thread does that work after it.
const BESIDE_MIN_THREADS: usize = 4;

/// Resolves the names, checks every size, plans the GPU buffers (own
/// buffers and slabs), re-tags every descriptor (over the worker pool), and
/// takes over the fitting buffers of [`LoadOptions::reuse`]; allocates
/// nothing. `early`: all of that but the take-over, done beside the
/// validation ([`plan_beside_validation`]) for a load of the whole file.
fn prepare<'f>(
    shared: &Arc<DeviceShared>,
    view: &hurray_core::file::FileView<'f>,
    early: Before<'f>,
    options: &mut LoadOptions<'_>,
) -> Result<Prepared<'f>, LoadError> {
    let started = Instant::now();
    let device = &shared.device;
    let usage = options.usage | BufferUsages::COPY_SRC | BufferUsages::COPY_DST;
    let mut times = LoadTimes::default();
    let (chosen, planner, texts, spans) = match early {
        Before::Planned(e) => {
            let e = *e;
            times.plan = e.plan;
            times.retag = e.retag;
            (e.chosen, e.planner, e.texts, e.spans)
        }
        before => {
            let tag = device_tag(device)?;
            // Resolve and check everything before allocating.
            let handed = matches!(before, Before::Listed(_));
            let chosen: Vec<hurray_core::file::Tensor<'f>> = match (&options.names, before) {
                (Some(names), _) => names
                    .iter()
                    .map(|n| view.get(n).ok_or_else(|| LoadError::NotFound(n.clone())))
                    .collect::<Result<_, _>>()?,
                (None, Before::Listed(listed)) => listed,
                (None, _) => view.iter_file_order().collect(),
            };
            // (Nothing to list when the validation handed them out.)
            if !handed {
                times.list = started.elapsed();
            }
            let planning = Instant::now();
            let mut planner = Planner::new(shared, view.as_bytes(), options);
            let mut entries = Vec::with_capacity(chosen.len());
            for t in &chosen {
                planner.add(t, Some(&mut entries))?;
            }
            // Load order: file order (the order of `only` may differ), for
            // the page cache's read-ahead.
            if !entries.is_sorted_by_key(|e| e.0) {
                entries.sort_by_key(|e| e.0);
            }
            for e in entries {
                planner.place(e)?;
            }
            planner.close();
            times.plan = planning.elapsed();
            // Every name and re-tagged descriptor, into one text each.
            let retagging = Instant::now();
            let (texts, spans) = retag_all(&chosen, tag)?;
            times.retag = retagging.elapsed();
            (chosen, planner, texts, spans)
        }
    };
    let taking_over = Instant::now();
    let Planner {
        mut targets,
        parts,
        flat,
        runs,
        packed,
        slabs,
        total,
        tensor_parts,
        pack_below,
        ..
    } = planner;
    let mut reused = 0;
    // Take over the fitting buffers of a previous load: its slabs in order
    // (the same size), its own buffers by tensor name and table index.
    if let Some(previous) = options.reuse.take() {
        let fits = |h: &GpuBufferHandle, size: u64| {
            h.byte_len() == size && h.usage().contains(usage) && h.device() == device
        };
        let slab_ids: std::collections::HashSet<u64> = previous
            .slab_buffers
            .iter()
            .map(GpuBufferHandle::id)
            .collect();
        let mut old_slabs = previous.slab_buffers.into_iter();
        for t in targets.iter_mut().filter(|t| t.slab) {
            match old_slabs.next() {
                Some(h) if fits(&h, t.size) => {
                    let _ = t.slot.set(h);
                }
                _ => break,
            }
        }
        // By name: the previous load's tensor at the same place when the
        // names agree (a reload of the same file), else looked up (once).
        let mut by_name: Option<HashMap<&str, usize>> = None;
        let mut taken = vec![false; previous.tensors.len()];
        for (ti, (t, range)) in chosen.iter().zip(&tensor_parts).enumerate() {
            let n = range.len();
            let mine = parts.get(range.clone()).unwrap_or(&[]);
            let same_place = previous.tensors.get(ti).filter(|o| o.name() == t.name());
            let found = match same_place {
                Some(_) => Some(ti),
                None => by_name
                    .get_or_insert_with(|| {
                        previous
                            .tensors
                            .iter()
                            .enumerate()
                            .map(|(i, o)| (o.name(), i))
                            .collect()
                    })
                    .get(t.name())
                    .copied(),
            };
            let Some(oi) = found.filter(|&i| taken.get(i) == Some(&false)) else {
                continue;
            };
            if let Some(flag) = taken.get_mut(oi) {
                *flag = true;
            }
            let Some(old) = previous.tensors.get(oi).map(LoadedTensor::buffers) else {
                continue;
            };
            let mut all = old.len() == n;
            for (i, part) in mine.iter().enumerate() {
                let Some(target) = targets.get(part.target) else {
                    all = false;
                    continue;
                };
                if target.slab {
                    // Packed: reused with its slab.
                    all &= target.slot.get().is_some();
                    continue;
                }
                if part.len == 0 && pack_below > 0 {
                    // The shared empty buffer: nothing to reuse.
                    continue;
                }
                let own = old
                    .get(i)
                    .and_then(GpuSlice::as_whole)
                    .filter(|h| fits(h, target.size) && !slab_ids.contains(&h.id()));
                match own {
                    Some(h) if target.slot.get().is_none() => {
                        let _ = target.slot.set(h.clone());
                    }
                    _ => all = false,
                }
            }
            if all {
                reused += 1;
            }
        }
    }
    times.plan += taking_over.elapsed();
    let items = spans
        .into_iter()
        .zip(tensor_parts)
        .map(|((name, descriptor), parts)| Item {
            name,
            descriptor,
            parts,
        })
        .collect();
    #[cfg(target_os = "linux")]
    let dma = crate::transfer::dma::use_for(shared, crate::transfer::dma::DMA_MIN);
    #[cfg(not(target_os = "linux"))]
    let dma = false;
    Ok(Prepared {
        tensors: chosen.len(),
        texts: Arc::new(texts),
        items,
        targets,
        parts,
        flat,
        runs,
        usage,
        total,
        reused,
        slabs,
        packed,
        times: LoadTimes {
            allocate: started.elapsed(),
            ..times
        },
        dma,
    })
}

/// A tensor's name and descriptor: ranges of its [`Texts`].
type Spans = (Range<usize>, Range<usize>);

/// The fewest tensors one piece of the parallel re-tag takes: below this,
/// handing a piece to the pool costs more than it saves.
const RETAG_PIECE: usize = 512;

/// Each tensor's name and re-tagged descriptor ([`retag`]: the device's
/// `tag`, standard memory, producer-synced), in order, in one [`Texts`],
/// with each tensor's ranges of it; pieces of tensors re-tagged over the
/// worker pool, each into its own rooms of the two texts. On errors, the
/// first tensor's.
fn retag_all(
    chosen: &[hurray_core::file::Tensor<'_>],
    tag: DeviceTag,
) -> Result<(Texts, Vec<Spans>), LoadError> {
    let bug = |what| LoadError::Backend(BackendError::Bug(what));
    let mut spans = Vec::with_capacity(chosen.len());
    let (mut names_len, mut descriptors_len) = (0usize, 0usize);
    for t in chosen {
        let (n, d) = (t.name().len(), t.descriptor().as_bytes().len());
        spans.push((
            names_len..names_len + n,
            descriptors_len..descriptors_len + d,
        ));
        names_len += n;
        descriptors_len += d;
    }
    let mut names = vec![0u8; names_len];
    let mut descriptors = vec![0u8; descriptors_len];
    let pieces = crate::pool::worker_threads()
        .min(chosen.len().div_ceil(RETAG_PIECE))
        .max(1);
    let per = chosen.len().div_ceil(pieces).max(1);
    // Each piece: its first tensor, its tensors, its rooms of the texts.
    type Work<'t, 'f> = (
        &'t [hurray_core::file::Tensor<'f>],
        &'t [Spans],
        &'t mut [u8],
        &'t mut [u8],
    );
    let mut work: Vec<Mutex<Option<Work<'_, '_>>>> = Vec::with_capacity(pieces);
    let (mut names_rest, mut descriptors_rest) = (&mut names[..], &mut descriptors[..]);
    for (ts, sp) in chosen.chunks(per).zip(spans.chunks(per)) {
        let (Some(first), Some(last)) = (sp.first(), sp.last()) else {
            continue;
        };
        let (n, d) = (last.0.end - first.0.start, last.1.end - first.1.start);
        let (n_room, n_rest) = std::mem::take(&mut names_rest)
            .split_at_mut_checked(n)
            .ok_or(bug("re-tag rooms"))?;
        let (d_room, d_rest) = std::mem::take(&mut descriptors_rest)
            .split_at_mut_checked(d)
            .ok_or(bug("re-tag rooms"))?;
        names_rest = n_rest;
        descriptors_rest = d_rest;
        work.push(Mutex::new(Some((ts, sp, n_room, d_room))));
    }
    // The first failing tensor (by its place in `chosen`), and its error.
    let failed: Mutex<Option<(usize, LoadError)>> = Mutex::new(None);
    crate::pool::run(work.len(), |i| {
        let Some((ts, sp, n_room, d_room)) = work
            .get(i)
            .and_then(|m| m.lock().ok().and_then(|mut w| w.take()))
        else {
            return;
        };
        let (Some(n0), Some(d0)) = (sp.first().map(|s| s.0.start), sp.first().map(|s| s.1.start))
        else {
            return;
        };
        for (k, (t, (n, d))) in ts.iter().zip(sp).enumerate() {
            let done = n_room
                .get_mut(n.start - n0..n.end - n0)
                .zip(d_room.get_mut(d.start - d0..d.end - d0))
                .ok_or(bug("re-tag rooms"))
                .and_then(|(n_out, d_out)| {
                    n_out.copy_from_slice(t.name().as_bytes());
                    retag_into(
                        d_out,
                        t.name(),
                        t.descriptor(),
                        tag,
                        MemoryClass::Standard,
                        SyncMode::ProducerSynced,
                    )
                });
            if let Err(e) = done {
                let at = i * per + k;
                let mut f = failed.lock().unwrap_or_else(PoisonError::into_inner);
                if f.as_ref().is_none_or(|(j, _)| at < *j) {
                    *f = Some((at, e));
                }
                return;
            }
        }
    })?;
    if let Some((_, e)) = failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(e);
    }
    let names = String::from_utf8(names).map_err(|_| bug("a tensor name is not UTF-8"))?;
    Ok((Texts { names, descriptors }, spans))
}

/// The path without DMA staging: each buffer of its own written by the
/// ordinary engine (mapped staging), in load order; each slab assembled in
/// host memory once its last buffer is reached, then written whole.
async fn load_mapped(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    p: &Prepared<'_>,
    options: &mut LoadOptions<'_>,
) -> Result<(), LoadError> {
    let device = &shared.device;
    let mut tally = Tally::new(p, |_| 1);
    if p.flat.is_empty() {
        report(options, tally.progress);
    }
    // The index in `flat` of each run's last buffer.
    let mut last = vec![usize::MAX; p.runs.len()];
    for (i, f) in p.flat.iter().enumerate() {
        if let Some(l) = last.get_mut(f.run) {
            *l = i;
        }
    }
    // Slabs being assembled, by run.
    let mut images: HashMap<usize, Vec<u8>> = HashMap::new();
    for (i, f) in p.flat.iter().enumerate() {
        let h = p
            .target(f.target)
            .ok_or(BackendError::Bug("a loaded buffer was never allocated"))?;
        let slab = p.runs.get(f.run).is_some_and(|r| r.slab);
        if !slab {
            h.write_async(device, queue, f.to, f.bytes).await?;
            report(options, tally.piece(p, f.run, f.bytes.len() as u64));
            continue;
        }
        let image = images.entry(f.run).or_insert_with(|| {
            let size = p.targets.get(f.target).map_or(0, |t| t.size);
            vec![0u8; usize::try_from(size).unwrap_or(0)]
        });
        let at = usize::try_from(f.to).map_err(|_| BackendError::Bug("slab offset"))?;
        image
            .get_mut(at..at + f.bytes.len())
            .ok_or(BackendError::Bug("a packed buffer outside its slab"))?
            .copy_from_slice(f.bytes);
        if last.get(f.run) == Some(&i) {
            if let Some(image) = images.remove(&f.run) {
                h.write_async(device, queue, 0, &image).await?;
            }
            report(options, tally.piece(p, f.run, 0));
        }
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
        for (target, at, to, len) in copies(&chunk.pieces) {
            match p.target(target) {
                Some(t) => {
                    encoder.copy_buffer_to_buffer(staging.buffer(), at, t.buffer(), to, len);
                }
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

/// The GPU copies of a chunk's pieces, `(target, chunk offset, target
/// offset, len)`: pieces that follow each other both in the chunk and in
/// one target (the buffers of a slab) make one copy.
#[cfg(target_os = "linux")]
fn copies<'a>(pieces: &'a [Piece<'_>]) -> impl Iterator<Item = (usize, u64, u64, u64)> + 'a {
    let mut it = pieces.iter().peekable();
    std::iter::from_fn(move || {
        let first = it.next()?;
        let (target, at, to) = (first.target, first.at as u64, first.to);
        let mut len = first.len as u64;
        while let Some(next) =
            it.next_if(|n| n.target == target && n.at as u64 == at + len && n.to == to + len)
        {
            len += next.len as u64;
        }
        Some((target, at, to, len))
    })
}

/// Calls `options`' progress callback.
fn report(options: &mut LoadOptions<'_>, progress: Progress) {
    if let Some(f) = options.progress.as_mut() {
        f(progress);
    }
}

/// Tracks which tensors are complete as pieces of runs complete (in any
/// order).
struct Tally {
    /// Pieces not yet on the GPU, per run.
    run_left: Vec<usize>,
    /// Runs not yet complete, per tensor (once per buffer).
    tensor_left: Vec<usize>,
    progress: Progress,
}

impl Tally {
    /// `pieces(run)`: how many pieces run `run` was cut into.
    fn new(p: &Prepared<'_>, pieces: impl Fn(usize) -> usize) -> Self {
        let tensors_total = p.tensors;
        let mut tensor_left = vec![0usize; tensors_total];
        for &t in p.runs.iter().flat_map(|r| &r.tensors) {
            if let Some(l) = tensor_left.get_mut(t) {
                *l += 1;
            }
        }
        // Tensors with no bytes at all are done from the start.
        let tensors_done = tensor_left.iter().filter(|l| **l == 0).count();
        Self {
            run_left: (0..p.runs.len()).map(pieces).collect(),
            tensor_left,
            progress: Progress {
                bytes_done: 0,
                bytes_total: p.total,
                tensors_done,
                tensors_total,
            },
        }
    }

    /// Counts the pieces of `chunks`, per run.
    #[cfg(target_os = "linux")]
    fn for_chunks(p: &Prepared<'_>, chunks: &[Chunk<'_>]) -> Self {
        let mut per_run = vec![0usize; p.runs.len()];
        for piece in chunks.iter().flat_map(|c| &c.pieces) {
            if let Some(n) = per_run.get_mut(piece.run) {
                *n += 1;
            }
        }
        Self::new(p, |r| per_run.get(r).copied().unwrap_or(0))
    }

    /// One piece of run `run`, of `src_len` file bytes, is on the GPU.
    fn piece(&mut self, p: &Prepared<'_>, run: usize, src_len: u64) -> Progress {
        let Some(info) = p.runs.get(run) else {
            return self.progress;
        };
        if !info.slab {
            self.progress.bytes_done += src_len;
        }
        if let Some(l) = self.run_left.get_mut(run) {
            let was = *l;
            *l = was.saturating_sub(1);
            if was == 1 {
                // The run is complete: a slab's buffer bytes now count, and
                // its tensors are one run closer to done.
                if info.slab {
                    self.progress.bytes_done += info.payload;
                }
                for &t in &info.tensors {
                    if let Some(tl) = self.tensor_left.get_mut(t) {
                        let before = *tl;
                        *tl = before.saturating_sub(1);
                        if before == 1 {
                            self.progress.tensors_done += 1;
                        }
                    }
                }
            }
        }
        self.progress
    }

    /// Every piece of `chunk` is on the GPU.
    #[cfg(target_os = "linux")]
    fn complete(&mut self, p: &Prepared<'_>, chunk: &Chunk<'_>) -> Progress {
        for piece in &chunk.pieces {
            self.piece(p, piece.run, piece.src.len() as u64);
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
    let mut tally = Tally::for_chunks(p, &chunks);
    if chunks.is_empty() {
        report(options, tally.progress);
    }
    let mut in_flight: VecDeque<(exec::Receiver<()>, usize)> = VecDeque::new();
    for (k, chunk) in chunks.iter().enumerate() {
        if in_flight.len() >= DEPTH {
            if let Some((rx, j)) = in_flight.pop_front() {
                let _ = rx.await;
                if let Some(c) = chunks.get(j) {
                    report(options, tally.complete(p, c));
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
            report(options, tally.complete(p, c));
        }
    }
    Ok(())
}

/// What [`load_dma_threads`] did beside the copies.
#[cfg(target_os = "linux")]
struct DmaRun {
    /// Time the calling thread spent allocating (in order, while the
    /// copies ran).
    allocating: Duration,
    /// The part of it spent creating GPU buffers.
    creating: Duration,
    /// The loaded tensors, built while the copies ran, and how long that
    /// took.
    built: Option<(Vec<LoadedTensor>, Duration)>,
    /// The copy threads' time, summed.
    workers: WorkerTimes,
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
/// buffer (allocation is behind). Once every buffer exists, this thread
/// builds the loaded tensors while the copies run.
#[cfg(target_os = "linux")]
fn load_dma_threads(
    shared: &Arc<DeviceShared>,
    queue: &wgpu::Queue,
    p: &Prepared<'_>,
    options: &mut LoadOptions<'_>,
) -> Result<DmaRun, LoadError> {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::sync::mpsc::{self, RecvTimeoutError};

    let device = &shared.device;
    let workers = crate::pool::worker_threads().clamp(1, MAX_LOAD_THREADS);
    let size = LOAD_CHUNK;
    let chunks = plan(&p.flat, size);
    let n = chunks.len();
    let threads = workers.min(n.max(1));
    let slots = (threads + crate::transfer::chunk::DEPTH)
        .min(crate::transfer::dma::RING_BYTES / size)
        .min(n);
    let (free_tx, free_rx) = mpsc::channel::<Staging>();
    for _ in 0..slots {
        let _ = free_tx.send(shared.dma.take(device, size)?);
    }
    // Per copy thread: nanoseconds filling, submitting, waiting for a slot,
    // waiting for a buffer.
    let spent: [AtomicU64; 4] = Default::default();
    let free_rx = Mutex::new(free_rx);
    // Submitted chunks (or a worker's error), and completed ones.
    let (sent_tx, sent_rx) = mpsc::channel::<Result<(), BackendError>>();
    let (done_tx, done_rx) = mpsc::channel::<usize>();
    let next = AtomicUsize::new(0);
    // Slots allocated so far (a prefix, in load order).
    let allocated = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut tally = Tally::for_chunks(p, &chunks);
    let mut allocating = Duration::ZERO;
    let mut creating = Duration::ZERO;
    let mut built = None;
    let result = std::thread::scope(|s| {
        for _ in 0..threads.min(n) {
            let (sent_tx, free_tx, done_tx) = (sent_tx.clone(), free_tx.clone(), done_tx.clone());
            let (chunks, next, stop, free_rx, allocated, spent) =
                (&chunks, &next, &stop, &free_rx, &allocated, &spent);
            s.spawn(move || {
                let add = |i: usize, since: Instant| {
                    if let Some(a) = spent.get(i) {
                        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        a.fetch_add(ns, Ordering::Relaxed);
                    }
                };
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(chunk) = chunks.get(k) else { return };
                    let waiting = Instant::now();
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
                    add(2, waiting);
                    let filling = Instant::now();
                    let filled = match staging.bytes_mut().get_mut(..chunk.fill) {
                        Some(dst) => fill_chunk(dst, &chunk.pieces),
                        None => Err(BackendError::Bug("load chunk larger than its staging")),
                    };
                    add(0, filling);
                    let waiting = Instant::now();
                    // Its buffers exist once the allocated prefix covers its
                    // highest target (a slab may come before the buffers of
                    // their own that follow it in the file). A stopped load ends here, silently:
                    // whoever stopped it reports why.
                    let need = chunk
                        .pieces
                        .iter()
                        .map(|pc| pc.target + 1)
                        .max()
                        .unwrap_or(0);
                    while filled.is_ok() && allocated.load(Ordering::Acquire) < need {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    add(3, waiting);
                    let submitting = Instant::now();
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
                    add(1, submitting);
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
            for i in 0..p.targets.len() {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                creating += p.allocate_slot(shared, i)?;
                allocated.store(i + 1, Ordering::Release);
            }
            allocating = started.elapsed();
            // Every buffer exists (unless a worker stopped the load): the
            // tensors can be built while the copies run.
            if !stop.load(Ordering::Acquire) {
                let building = Instant::now();
                let tensors = p.build()?;
                built = Some((tensors, building.elapsed()));
            }
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
                        report(options, tally.complete(p, c));
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
    let [fill, submit, wait_slot, wait_buffer] =
        spent.map(|a| Duration::from_nanos(a.into_inner()));
    result.map(|()| DmaRun {
        allocating,
        creating,
        built,
        workers: WorkerTimes {
            fill,
            submit,
            wait_slot,
            wait_buffer,
        },
    })
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
            name: t.name().to_owned(),
            error,
        })?;
        let host = retag(
            t.name(),
            &view,
            DeviceTag::Cpu,
            MemoryClass::Standard,
            SyncMode::ProducerSynced,
        )?;
        let host_view = TensorView::parse(&host).map_err(|error| LoadError::Descriptor {
            name: t.name().to_owned(),
            error,
        })?;
        let mut bytes: Vec<Vec<u8>> = Vec::with_capacity(t.buffers().len());
        for b in t.buffers() {
            if b.byte_len() == 0 {
                bytes.push(Vec::new());
            } else {
                b.readback(device, queue, &mut out)?;
                bytes.push(std::mem::take(&mut out));
            }
        }
        let slices: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        writer.write_tensor(t.name(), &host_view, &slices)?;
    }
    writer.finish(&[])?;
    Ok(())
}

// Chunk offsets and piece lengths stay multiples of 4 (wgpu's copy unit);
// a load chunk is a DMA staging size class (a multiple of 1 MiB).
const _: () = assert!(LOAD_CHUNK.is_multiple_of(1 << 20) && ITEM.is_multiple_of(4));
