//! # hurray-gpu
//!
//! GPU buffers for hurray, on [`wgpu`] (re-exported, so users get the
//! matching version): [`GpuBufferHandle`] uploads, allocates and reads back
//! buffers, keeps a process-wide registry of live buffers by id, and
//! describes itself as a [`hurray_core::BufferHandle`].
//!
//! ## Contract
//!
//! * No call panics on bad arguments or on wgpu failures: every wgpu call this
//!   crate makes runs inside validation and out-of-memory error scopes, and
//!   every failure comes back as a [`BackendError`].
//! * Readback arguments (usage, range, overflow) are checked before anything
//!   is encoded; a zero-length read touches no GPU.
//! * Readbacks reuse staging buffers from a per-buffer pool and pipeline large
//!   reads in chunks (`docs/impl/gpu-readback.md`).
//!
//! ```no_run
//! use hurray_gpu::{GpuBufferHandle, GpuContext, wgpu::BufferUsages};
//!
//! let ctx = GpuContext::new()?;
//! let data: Vec<u32> = (0..1024).collect();
//! let h = GpuBufferHandle::upload_slice(&ctx.device, &ctx.queue, &data, BufferUsages::COPY_SRC)?;
//! assert_eq!(h.element_count(), 1024);
//! assert_eq!(h.readback_vec::<u32>(&ctx.device, &ctx.queue)?, data);
//! # Ok::<(), hurray_gpu::BackendError>(())
//! ```
// One `unsafe` block (`copy::append`, a `Vec::set_len` after a checked fill),
// argued in its SAFETY comment; everything else is safe.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod context;
mod copy;
mod error;
mod handle;
mod kernel;
mod registry;
mod resource;
mod staging;

pub use context::GpuContext;
pub use error::BackendError;
pub use handle::GpuBufferHandle;
pub use kernel::{CacheStats, GpuKernel, MAX_CACHED};
pub use registry::resident_count;
pub use resource::GpuResource;
pub use wgpu;
