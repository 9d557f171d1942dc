//! `GpuKernel`: a WGSL compute entry point, its bind-group cache, and
//! direct and indirect dispatch.
//!
//! ## Binding model
//!
//! The resources of a dispatch bind, in order, to `@group(0) @binding(0..n)`
//! of the shader; the pipeline layout is derived from the shader, and wgpu's
//! validation (captured in error scopes) reports any mismatch in count, type
//! or usage as a [`BackendError`].
//!
//! ## Cache
//!
//! Bind groups are cached by a *signature*: for each binding, the buffer's
//! process-wide id with the bound range, or, for inline uniform data, the
//! binding slot and size (the data goes to a per-kernel uniform buffer that is
//! rewritten on every dispatch). A whole buffer and a range are keyed apart,
//! and a range of zero bytes is refused ([`ApiMisuse::EmptyRange`]). Ids are
//! never reused, so a signature can never match a different buffer. A bound
//! buffer knows which caches hold bind groups naming it; when its last handle
//! drops, it removes exactly those entries (and frees its memory), so no
//! cache keeps a dead buffer's memory alive and no dispatch sweeps. The cache
//! never holds more than [`MAX_CACHED`] bind groups.
//!
//! ## Devices
//!
//! A kernel belongs to the device it was compiled on, by identity (the
//! device state's `Arc`, compared with `Arc::ptr_eq`): every resource of a
//! dispatch must be a buffer of that device ([`ApiMisuse::WrongDevice`]), and
//! a queue passed to [`GpuKernel::dispatch`] must be the device's
//! ([`ApiMisuse::WrongQueue`]), checked before anything is encoded.
//! [`GpuKernel::launch`] names no queue and submits to the device's own.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::device::{self, DeviceShared, TeardownEnd, TeardownStart};
use crate::exec::{lost_or, scoped_now};
use crate::handle::Evict;
use crate::{ApiMisuse, BackendError, GpuBufferHandle, GpuResource};

/// Inline uniform data is bound as a buffer of at least 16 bytes, padded to 16.
fn padded_len(data: &[u8]) -> u64 {
    (data.len() as u64).max(16).next_multiple_of(16)
}

/// Most bind groups one kernel caches; past this the cache is cleared.
pub const MAX_CACHED: usize = 1024;

/// Hit and miss counts of a kernel's bind-group cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Dispatches that reused a cached bind group.
    pub hits: u64,
    /// Dispatches that created a bind group.
    pub misses: u64,
    /// Bind groups in the cache now.
    pub entries: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// A whole buffer, by id.
    Whole(u64),
    /// A range of a buffer: id, offset, size (never 0).
    Range(u64, u64, u64),
    /// Inline uniform data of this many (padded) bytes.
    Uniform(u64),
}

impl Key {
    fn names(&self, id: u64) -> bool {
        matches!(self, Self::Whole(b) | Self::Range(b, ..) if *b == id)
    }
}

/// The bind groups of one kernel, by signature.
#[derive(Default)]
struct Cache {
    groups: Mutex<HashMap<Vec<Key>, wgpu::BindGroup>>,
}

impl Cache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<Key>, wgpu::BindGroup>> {
        // Each critical section is one map operation: poisoning is ignored.
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Evict for Cache {
    fn evict(&self, id: u64) {
        self.lock()
            .retain(|sig, _| !sig.iter().any(|k| k.names(id)));
    }
}

/// A compiled WGSL compute entry point.
///
/// ```no_run
/// use hurray_gpu::{GpuBufferHandle, GpuContext, GpuKernel, GpuResource, wgpu::BufferUsages};
///
/// let ctx = GpuContext::new()?;
/// let kernel = GpuKernel::new(&ctx.device, r#"
///     @group(0) @binding(0) var<storage, read_write> data: array<u32>;
///     @compute @workgroup_size(64)
///     fn double(@builtin(global_invocation_id) id: vec3<u32>) {
///         if id.x < arrayLength(&data) { data[id.x] = data[id.x] * 2u; }
///     }
/// "#, "double")?;
/// let values: Vec<u32> = (0..100).collect();
/// let buf = GpuBufferHandle::upload_slice(
///     &ctx.device, &ctx.queue, &values, BufferUsages::STORAGE | BufferUsages::COPY_SRC,
/// )?;
/// kernel.dispatch(&ctx.queue, &[GpuResource::from(&buf)], [2, 1, 1])?;
/// let doubled: Vec<u32> = buf.readback_vec(&ctx.device, &ctx.queue)?;
/// assert_eq!(doubled[99], 198);
/// # Ok::<(), hurray_gpu::BackendError>(())
/// ```
pub struct GpuKernel {
    _start: TeardownStart,
    shared: Arc<DeviceShared>,
    pipeline: wgpu::ComputePipeline,
    layout: Option<wgpu::BindGroupLayout>,
    entry_point: String,
    cache: Arc<Cache>,
    uniforms: Mutex<HashMap<(usize, u64), wgpu::Buffer>>,
    /// Held from writing inline uniforms to submitting: the uniform buffers
    /// are per kernel, so two dispatches with different data must not interleave.
    dispatching: Mutex<()>,
    hits: AtomicU64,
    misses: AtomicU64,
    _end: TeardownEnd,
}

impl std::fmt::Debug for GpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuKernel")
            .field("entry_point", &self.entry_point)
            .field("cache", &self.cache_stats())
            .finish_non_exhaustive()
    }
}

impl GpuKernel {
    /// Compiles `wgsl` and builds the compute pipeline of `entry_point`.
    ///
    /// # Errors
    /// [`BackendError::Wgpu`] (validation) when the WGSL does not compile or
    /// has no such compute entry point (the message carries wgpu's diagnostic).
    pub fn new(device: &wgpu::Device, wgsl: &str, entry_point: &str) -> Result<Self, BackendError> {
        Self::on(device::shared(device, None), wgsl, entry_point)
    }

    /// [`new`](Self::new) on a device state hurray holds.
    pub(crate) fn on(
        shared: Arc<DeviceShared>,
        wgsl: &str,
        entry_point: &str,
    ) -> Result<Self, BackendError> {
        let device = &shared.device;
        let pipeline = scoped_now(device, || {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(entry_point),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry_point),
                layout: None,
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            })
        })?;
        // A shader without group 0 has no layout to fetch; that is only an
        // error if a dispatch later passes resources.
        let layout = scoped_now(device, || pipeline.get_bind_group_layout(0)).ok();
        Ok(Self {
            _start: TeardownStart,
            shared,
            pipeline,
            layout,
            entry_point: entry_point.to_owned(),
            cache: Arc::default(),
            uniforms: Mutex::default(),
            dispatching: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            _end: TeardownEnd,
        })
    }

    /// The entry point's name.
    #[must_use]
    pub fn entry_point(&self) -> &str {
        &self.entry_point
    }

    /// Cache hit/miss counts and current size.
    #[must_use]
    pub fn cache_stats(&self) -> CacheStats {
        let entries = self.cache.lock().len();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries,
        }
    }

    /// Drops every cached bind group.
    pub fn clear_cache(&self) {
        self.cache.lock().clear();
    }

    /// Dispatches `workgroups` = `[x, y, z]` workgroups over `resources`.
    ///
    /// # Errors
    /// * [`ApiMisuse::TooManyWorkgroups`] when a count exceeds the device's
    ///   `max_compute_workgroups_per_dimension`, [`ApiMisuse::WrongDevice`] /
    ///   [`ApiMisuse::WrongQueue`] for a buffer or queue of another device
    ///   (all checked before encoding);
    /// * [`BackendError::Wgpu`] when the resources do not match the shader's
    ///   bindings;
    /// * [`BackendError::DeviceLost`] when the device is gone.
    pub fn dispatch(
        &self,
        queue: &wgpu::Queue,
        resources: &[GpuResource],
        workgroups: [u32; 3],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        self.check_workgroups(workgroups)?;
        let queue = self.shared.check_queue(queue)?;
        self.run(queue, resources, |pass| {
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2])
        })
    }

    /// Dispatches `workgroups` over `resources` on the kernel's device's own
    /// queue: [`dispatch`](Self::dispatch) without naming the queue.
    ///
    /// ```no_run
    /// use hurray_gpu::{GpuContext, wgpu::BufferUsages};
    ///
    /// let ctx = GpuContext::new()?;
    /// let k = ctx.kernel(
    ///     "@group(0) @binding(0) var<storage, read_write> d: array<u32>;
    ///      @compute @workgroup_size(1) fn one(@builtin(global_invocation_id) i: vec3<u32>) { d[i.x] = 1u; }",
    ///     "one",
    /// )?;
    /// let h = ctx.alloc_elements::<u32>(4, BufferUsages::STORAGE | BufferUsages::COPY_SRC)?;
    /// k.launch(&[(&h).into()], [4, 1, 1])?;
    /// assert_eq!(h.read_vec::<u32>()?, [1; 4]);
    /// # Ok::<(), hurray_gpu::BackendError>(())
    /// ```
    ///
    /// # Errors
    /// As [`dispatch`](Self::dispatch), without the queue check;
    /// [`ApiMisuse::UnknownQueue`] for a kernel made by [`new`](Self::new)
    /// on a device whose queue hurray has never seen.
    pub fn launch(
        &self,
        resources: &[GpuResource],
        workgroups: [u32; 3],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        self.check_workgroups(workgroups)?;
        let queue = self.shared.own_queue()?;
        self.run(queue, resources, |pass| {
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2])
        })
    }

    /// Dispatches with the workgroup counts read by the GPU from `args` at
    /// `offset`: three `u32` (x, y, z), as written by an earlier pass.
    ///
    /// # Errors
    /// * [`ApiMisuse::MissingUsage`] when `args` lacks `INDIRECT` usage,
    ///   [`ApiMisuse::IndirectOffset`] when `offset` is not a multiple of 4,
    ///   [`ApiMisuse::RangeOutOfBounds`] when `offset + 12` exceeds `args`,
    ///   [`ApiMisuse::WrongDevice`] (all checked before encoding);
    /// * [`BackendError::Wgpu`] when the resources do not match;
    /// * [`BackendError::DeviceLost`] when the device is gone.
    pub fn dispatch_indirect(
        &self,
        queue: &wgpu::Queue,
        resources: &[GpuResource],
        args: &GpuBufferHandle,
        offset: u64,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let buffer = self.check_indirect(args, offset)?;
        let queue = self.shared.check_queue(queue)?;
        self.run(queue, resources, |pass| {
            pass.dispatch_workgroups_indirect(&buffer, offset)
        })
    }

    /// [`dispatch_indirect`](Self::dispatch_indirect) on the kernel's
    /// device's own queue, as [`launch`](Self::launch).
    ///
    /// # Errors
    /// As [`dispatch_indirect`](Self::dispatch_indirect), without the queue
    /// check; [`ApiMisuse::UnknownQueue`] as for [`launch`](Self::launch).
    pub fn launch_indirect(
        &self,
        resources: &[GpuResource],
        args: &GpuBufferHandle,
        offset: u64,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let buffer = self.check_indirect(args, offset)?;
        let queue = self.shared.own_queue()?;
        self.run(queue, resources, |pass| {
            pass.dispatch_workgroups_indirect(&buffer, offset)
        })
    }

    /// Checks an indirect dispatch's arguments buffer before anything is
    /// encoded; returns the buffer.
    fn check_indirect(
        &self,
        args: &GpuBufferHandle,
        offset: u64,
    ) -> Result<wgpu::Buffer, BackendError> {
        if !Arc::ptr_eq(args.shared(), &self.shared) {
            return Err(ApiMisuse::WrongDevice.into());
        }
        let usage = args.usage();
        if !usage.contains(wgpu::BufferUsages::INDIRECT) {
            return Err(ApiMisuse::MissingUsage {
                required: wgpu::BufferUsages::INDIRECT,
                actual: usage,
            }
            .into());
        }
        if !offset.is_multiple_of(4) {
            return Err(ApiMisuse::IndirectOffset { offset }.into());
        }
        let end = offset.checked_add(12).ok_or(ApiMisuse::Overflow)?;
        if end > args.byte_len() {
            return Err(ApiMisuse::RangeOutOfBounds {
                offset,
                len: 12,
                byte_len: args.byte_len(),
            }
            .into());
        }
        Ok(args.buffer().clone())
    }

    /// Refuses workgroup counts over the device limit, before anything is encoded.
    fn check_workgroups(&self, workgroups: [u32; 3]) -> Result<(), BackendError> {
        let max = self.shared.limits.max_compute_workgroups_per_dimension;
        if workgroups.iter().any(|&n| n > max) {
            return Err(ApiMisuse::TooManyWorkgroups { workgroups, max }.into());
        }
        Ok(())
    }

    /// Every buffer resource must live on the kernel's device.
    fn check_resources(&self, resources: &[GpuResource]) -> Result<(), BackendError> {
        let foreign = resources.iter().any(|r| match r {
            GpuResource::Buffer(b) | GpuResource::BufferRange { buffer: b, .. } => {
                !Arc::ptr_eq(b.shared(), &self.shared)
            }
            GpuResource::Uniform(_) => false,
        });
        if foreign {
            return Err(ApiMisuse::WrongDevice.into());
        }
        Ok(())
    }

    fn run(
        &self,
        queue: &wgpu::Queue,
        resources: &[GpuResource],
        dispatch: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        self.check_resources(resources)?;
        let device = &self.shared.device;
        let _serial = resources
            .iter()
            .any(|r| matches!(r, GpuResource::Uniform(_)))
            .then(|| {
                self.dispatching
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            });
        let group = if resources.is_empty() {
            None
        } else {
            Some(self.bind_group(queue, resources)?)
        };
        scoped_now(device, || {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(&self.entry_point),
            });
            self.encode_pass(&mut encoder, group.as_ref(), dispatch);
            queue.submit([encoder.finish()])
        })
        .map_err(|e| lost_or(device, queue, e))
    }

    fn encode_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        group: Option<&wgpu::BindGroup>,
        dispatch: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(&self.entry_point),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        if let Some(group) = group {
            pass.set_bind_group(0, group, &[]);
        }
        dispatch(&mut pass);
    }

    /// Records a dispatch into the caller's `encoder` instead of submitting
    /// it, so that many dispatches share one submission.
    ///
    /// Inline uniforms ([`GpuResource::Uniform`]) are refused here: their
    /// data lives in a per-kernel buffer written at record time, so several
    /// recorded dispatches would all see the last data. Bind a uniform buffer
    /// instead, or use [`dispatch`](Self::dispatch).
    ///
    /// The encoder must come from the kernel's device (wgpu cannot tell
    /// hurray which device an encoder belongs to).
    ///
    /// # Errors
    /// As [`dispatch`](Self::dispatch), plus [`ApiMisuse::RecordedUniform`]
    /// for an inline uniform. Validation errors of the recorded commands
    /// surface when the caller submits the encoder (inside the caller's error
    /// scope).
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        resources: &[GpuResource],
        workgroups: [u32; 3],
    ) -> Result<(), BackendError> {
        self.check_workgroups(workgroups)?;
        if resources
            .iter()
            .any(|r| matches!(r, GpuResource::Uniform(_)))
        {
            return Err(ApiMisuse::RecordedUniform.into());
        }
        self.check_resources(resources)?;
        let group = if resources.is_empty() {
            None
        } else {
            // No uniform: the queue is not used.
            Some(self.bind_group_without_uniforms(resources)?)
        };
        scoped_now(&self.shared.device, || {
            self.encode_pass(encoder, group.as_ref(), |pass| {
                pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
            });
        })
    }

    /// The cached bind group for `resources`, or a new one; inline uniform
    /// data is written to the kernel's uniform buffers first.
    fn bind_group(
        &self,
        queue: &wgpu::Queue,
        resources: &[GpuResource],
    ) -> Result<wgpu::BindGroup, BackendError> {
        for (slot, r) in resources.iter().enumerate() {
            if let GpuResource::Uniform(data) = r {
                self.write_uniform(queue, slot, padded_len(data), data)?;
            }
        }
        self.bind_group_without_uniforms(resources)
    }

    /// The cached bind group for `resources` (uniform buffers already written).
    fn bind_group_without_uniforms(
        &self,
        resources: &[GpuResource],
    ) -> Result<wgpu::BindGroup, BackendError> {
        let keys: Vec<Key> = resources
            .iter()
            .map(|r| match r {
                GpuResource::Buffer(b) => Key::Whole(b.id()),
                GpuResource::BufferRange {
                    buffer,
                    offset,
                    size,
                } => Key::Range(buffer.id(), *offset, *size),
                GpuResource::Uniform(data) => Key::Uniform(padded_len(data)),
            })
            .collect();
        if let Some(g) = self.cache.lock().get(&keys) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(g.clone());
        }
        let group = self.create_bind_group(resources, &keys)?;
        self.misses.fetch_add(1, Ordering::Relaxed);
        // The buffers learn that this cache names them before the entry
        // exists, so a buffer dropped in between finds (and removes) it.
        let cache: Arc<dyn Evict> = self.cache.clone();
        for r in resources {
            if let GpuResource::Buffer(b) | GpuResource::BufferRange { buffer: b, .. } = r {
                b.note_bound(&cache);
            }
        }
        let mut groups = self.cache.lock();
        if groups.len() >= MAX_CACHED {
            groups.clear();
        }
        groups.insert(keys, group.clone());
        Ok(group)
    }

    fn write_uniform(
        &self,
        queue: &wgpu::Queue,
        slot: usize,
        padded: u64,
        data: &[u8],
    ) -> Result<(), BackendError> {
        let mut uniforms = self
            .uniforms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let device = &self.shared.device;
        let buffer = match uniforms.get(&(slot, padded)) {
            Some(b) => b,
            None => {
                let b = scoped_now(device, || {
                    device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("hurray inline uniform"),
                        size: padded,
                        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                })?;
                uniforms.entry((slot, padded)).or_insert(b)
            }
        };
        let mut bytes = data.to_vec();
        bytes.resize(usize::try_from(padded).map_err(|_| ApiMisuse::Overflow)?, 0);
        scoped_now(device, || queue.write_buffer(buffer, 0, &bytes))
    }

    fn create_bind_group(
        &self,
        resources: &[GpuResource],
        keys: &[Key],
    ) -> Result<wgpu::BindGroup, BackendError> {
        let Some(layout) = &self.layout else {
            return Err(ApiMisuse::NoBindGroup {
                resources: resources.len(),
            }
            .into());
        };
        let uniforms = self
            .uniforms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entries = Vec::with_capacity(resources.len());
        for (slot, (r, key)) in resources.iter().zip(keys).enumerate() {
            let binding = u32::try_from(slot).map_err(|_| ApiMisuse::Overflow)?;
            let resource = match (r, key) {
                (GpuResource::Buffer(b), _) => b.buffer().as_entire_binding(),
                (
                    GpuResource::BufferRange {
                        buffer,
                        offset,
                        size,
                    },
                    _,
                ) => {
                    let size = NonZeroU64::new(*size).ok_or(ApiMisuse::EmptyRange)?;
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: buffer.buffer(),
                        offset: *offset,
                        size: Some(size),
                    })
                }
                (GpuResource::Uniform(_), Key::Uniform(padded)) => uniforms
                    .get(&(slot, *padded))
                    .ok_or(BackendError::Bug("inline uniform buffer missing"))?
                    .as_entire_binding(),
                (GpuResource::Uniform(_), _) => {
                    return Err(BackendError::Bug("bind-group signature mismatch"));
                }
            };
            entries.push(wgpu::BindGroupEntry { binding, resource });
        }
        let device = &self.shared.device;
        scoped_now(device, || {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&self.entry_point),
                layout,
                entries: &entries,
            })
        })
    }
}
