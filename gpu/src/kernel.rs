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
//! rewritten on every dispatch). Ids are never reused, so a signature can
//! never match a different buffer. When buffers are dropped, their entries
//! leave the cache at the kernel's next dispatch (the registry counts drops;
//! a kernel that sees the count change sweeps out entries naming dead ids),
//! and the cache never holds more than [`MAX_CACHED`] bind groups.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::staging::{self, scoped};
use crate::{BackendError, GpuBufferHandle, GpuResource, registry};

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
    /// Buffer id, offset, size (0 = whole buffer).
    Buffer(u64, u64, u64),
    /// Inline uniform data of this many (padded) bytes.
    Uniform(u64),
}

struct Cache {
    groups: HashMap<Vec<Key>, wgpu::BindGroup>,
    seen_drops: u64,
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
    device: wgpu::Device,
    pipeline: wgpu::ComputePipeline,
    layout: Option<wgpu::BindGroupLayout>,
    entry_point: String,
    cache: Mutex<Cache>,
    uniforms: Mutex<HashMap<(usize, u64), wgpu::Buffer>>,
    /// Held from writing inline uniforms to submitting: the uniform buffers
    /// are per kernel, so two dispatches with different data must not interleave.
    dispatching: Mutex<()>,
    hits: AtomicU64,
    misses: AtomicU64,
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
    /// [`BackendError::Validation`] when the WGSL does not compile or has no
    /// such compute entry point (the message carries wgpu's diagnostic).
    pub fn new(device: &wgpu::Device, wgsl: &str, entry_point: &str) -> Result<Self, BackendError> {
        let pipeline = scoped(device, || {
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
        let layout = scoped(device, || pipeline.get_bind_group_layout(0)).ok();
        Ok(Self {
            device: device.clone(),
            pipeline,
            layout,
            entry_point: entry_point.to_owned(),
            cache: Mutex::new(Cache {
                groups: HashMap::new(),
                seen_drops: registry::drop_count(),
            }),
            uniforms: Mutex::default(),
            dispatching: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
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
        let entries = self.cache.lock().map_or(0, |c| c.groups.len());
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries,
        }
    }

    /// Drops every cached bind group.
    pub fn clear_cache(&self) {
        if let Ok(mut c) = self.cache.lock() {
            c.groups.clear();
        }
    }

    /// Dispatches `workgroups` = `[x, y, z]` workgroups over `resources`.
    ///
    /// # Errors
    /// * [`BackendError::Validation`] when a count exceeds the device's
    ///   `max_compute_workgroups_per_dimension` (checked before encoding), or
    ///   when the resources do not match the shader's bindings;
    /// * [`BackendError::DeviceLost`] when the device is gone.
    pub fn dispatch(
        &self,
        queue: &wgpu::Queue,
        resources: &[GpuResource],
        workgroups: [u32; 3],
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        self.check_workgroups(workgroups)?;
        self.run(queue, resources, |pass| {
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2])
        })
    }

    /// Dispatches with the workgroup counts read by the GPU from `args` at
    /// `offset`: three `u32` (x, y, z), as written by an earlier pass.
    ///
    /// # Errors
    /// * [`BackendError::Validation`] when `args` lacks `INDIRECT` usage,
    ///   `offset` is not a multiple of 4, or `offset + 12` exceeds `args`
    ///   (all checked before encoding), or the resources do not match;
    /// * [`BackendError::DeviceLost`] when the device is gone.
    pub fn dispatch_indirect(
        &self,
        queue: &wgpu::Queue,
        resources: &[GpuResource],
        args: &GpuBufferHandle,
        offset: u64,
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        if !args.usage().contains(wgpu::BufferUsages::INDIRECT) {
            return Err(BackendError::Validation(format!(
                "indirect args buffer usage {:?} lacks INDIRECT",
                args.usage()
            )));
        }
        if !offset.is_multiple_of(4) {
            return Err(BackendError::Validation(format!(
                "indirect offset {offset} is not a multiple of 4"
            )));
        }
        let end = offset.checked_add(12).ok_or(BackendError::Overflow)?;
        if end > args.byte_len() {
            return Err(BackendError::RangeOutOfBounds {
                offset,
                len: 12,
                byte_len: args.byte_len(),
            });
        }
        let buffer = args.buffer_arc();
        self.run(queue, resources, |pass| {
            pass.dispatch_workgroups_indirect(&buffer, offset)
        })
    }

    /// Refuses workgroup counts over the device limit, before anything is encoded.
    fn check_workgroups(&self, workgroups: [u32; 3]) -> Result<(), BackendError> {
        let max = self.device.limits().max_compute_workgroups_per_dimension;
        match workgroups.iter().find(|&&n| n > max) {
            Some(&n) => Err(BackendError::Validation(format!(
                "{workgroups:?} workgroups: {n} exceeds max_compute_workgroups_per_dimension {max}"
            ))),
            None => Ok(()),
        }
    }

    fn run(
        &self,
        queue: &wgpu::Queue,
        resources: &[GpuResource],
        dispatch: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) -> Result<wgpu::SubmissionIndex, BackendError> {
        let device = &self.device;
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
        scoped(device, || {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(&self.entry_point),
            });
            self.encode_pass(&mut encoder, group.as_ref(), dispatch);
            queue.submit([encoder.finish()])
        })
        .map_err(|e| staging::lost_or(device, queue, e))
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
    /// # Errors
    /// As [`dispatch`](Self::dispatch), plus [`BackendError::Validation`] for
    /// an inline uniform. Validation errors of the recorded commands surface
    /// when the caller submits the encoder (inside the caller's error scope).
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
            return Err(BackendError::Validation(
                "inline uniforms cannot be recorded; use dispatch() or bind a uniform buffer"
                    .into(),
            ));
        }
        let group = if resources.is_empty() {
            None
        } else {
            // No uniform: the queue is not used.
            Some(self.bind_group_without_uniforms(resources)?)
        };
        scoped(&self.device, || {
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
                GpuResource::Buffer(b) => Key::Buffer(b.id(), 0, 0),
                GpuResource::BufferRange {
                    buffer,
                    offset,
                    size,
                } => Key::Buffer(buffer.id(), *offset, *size),
                GpuResource::Uniform(data) => Key::Uniform(padded_len(data)),
            })
            .collect();
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let drops = registry::drop_count();
        if drops != cache.seen_drops {
            cache.seen_drops = drops;
            cache.groups.retain(|sig, _| {
                sig.iter().all(|k| match k {
                    Key::Buffer(id, ..) => registry::is_resident(*id),
                    Key::Uniform(_) => true,
                })
            });
        }
        if let Some(g) = cache.groups.get(&keys) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(g.clone());
        }
        let group = self.create_bind_group(resources, &keys)?;
        self.misses.fetch_add(1, Ordering::Relaxed);
        if cache.groups.len() >= MAX_CACHED {
            cache.groups.clear();
        }
        cache.groups.insert(keys, group.clone());
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
        let device = &self.device;
        let buffer = match uniforms.get(&(slot, padded)) {
            Some(b) => b,
            None => {
                let b = scoped(device, || {
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
        bytes.resize(padded as usize, 0);
        scoped(device, || queue.write_buffer(buffer, 0, &bytes))
    }

    fn create_bind_group(
        &self,
        resources: &[GpuResource],
        keys: &[Key],
    ) -> Result<wgpu::BindGroup, BackendError> {
        let Some(layout) = &self.layout else {
            return Err(BackendError::Validation(format!(
                "entry point `{}` binds no @group(0) but {} resources were given",
                self.entry_point,
                resources.len()
            )));
        };
        let uniforms = self
            .uniforms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entries = Vec::with_capacity(resources.len());
        for (slot, (r, key)) in resources.iter().zip(keys).enumerate() {
            let binding = u32::try_from(slot).map_err(|_| BackendError::Overflow)?;
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
                    let size = NonZeroU64::new(*size).ok_or_else(|| {
                        BackendError::Validation(format!(
                            "binding {binding}: a buffer range of 0 bytes"
                        ))
                    })?;
                    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: buffer.buffer(),
                        offset: *offset,
                        size: Some(size),
                    })
                }
                (GpuResource::Uniform(_), Key::Uniform(padded)) => uniforms
                    .get(&(slot, *padded))
                    .ok_or_else(|| BackendError::Internal("inline uniform buffer missing".into()))?
                    .as_entire_binding(),
                (GpuResource::Uniform(_), _) => {
                    return Err(BackendError::Internal("signature mismatch".into()));
                }
            };
            entries.push(wgpu::BindGroupEntry { binding, resource });
        }
        let device = &self.device;
        scoped(device, || {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&self.entry_point),
                layout,
                entries: &entries,
            })
        })
    }
}
