//! # hurray-rs-gpu (library `hurray_gpu`)
//!
//! GPU buffers for hurray, on [`wgpu`] (re-exported, so users get the
//! matching version): [`GpuBufferHandle`] uploads, allocates, writes and
//! reads back buffers, keeps a process-wide registry of live buffers by id,
//! and describes itself as a [`hurray_core::BufferHandle`]; [`GpuKernel`]
//! runs WGSL compute kernels over them.
//!
//! ## Contract
//!
//! * **No call panics** on bad arguments, wgpu failures or a lost device:
//!   every wgpu call this crate makes runs inside validation, out-of-memory
//!   and internal error scopes, a panic inside `Device::poll` (wgpu's answer
//!   to a fatal device error) is caught, and a panic on a worker thread is
//!   reported as [`BackendError::Bug`]. Only a panic of a closure you pass
//!   (`read_mapped`, `write_mapped`, `read_with`, `write_with`) reaches you, as with `std::thread::scope`.
//! * **Errors name the party at fault** ([`BackendError`]): your misuse
//!   ([`ApiMisuse`], checked before anything is encoded), wgpu's refusal
//!   ([`WgpuError`], with wgpu's cause chain), the device, or hurray itself.
//! * **A handle stays on its device.** A device's identity is hurray's own
//!   (one shared state per device, compared by pointer), given by a
//!   [`GpuContext`] or taken on the first call that names the device. Every
//!   call has a short form that names no device or queue and uses the
//!   handle's, kernel's or context's own ([`GpuContext::upload`],
//!   [`GpuBufferHandle::read`], [`GpuBufferHandle::write_at`],
//!   [`GpuKernel::launch`], …), and the seed's form that names them: there
//!   another device or queue than the handle's is [`ApiMisuse::WrongDevice`]
//!   / [`ApiMisuse::WrongQueue`]. hurray never mixes objects of two devices
//!   or instances. How a `&wgpu::Device` is matched exactly: `ARCHITECTURE.md`
//!   and ADR-112.
//! * **Non-blocking first.** Every transfer, [`GpuBufferHandle::to_buffer_handle`]
//!   and (Linux) `export` have an `_async` form that never blocks on the GPU:
//!   it waits for wgpu callbacks, which run when *someone
//!   polls the device* — your event loop (`device.poll(wgpu::PollType::Poll)`,
//!   [`GpuContext::poll`]), a helper thread, or the browser. The blocking
//!   forms (the seed API) run the async ones and poll by themselves: they spin
//!   briefly, then sleep in the driver, never longer than 60 s in all.
//! * **Bounded resources.** Host copies run on one process-wide worker pool
//!   ([`set_worker_threads`], [`worker_threads`]) with a bounded queue; no
//!   thread is spawned per call. Idle staging memory is capped process-wide
//!   ([`set_staging_cap`], [`staging_stats`]). Dropping the last clone of a
//!   handle frees its GPU memory at once, even if kernels cached bind groups
//!   for it.
//! * **Unsafe lives in five places**: `transfer::read::read_to_vec`, one
//!   `Vec::set_len` after the copies' own count says a readback filled the
//!   spare capacity; `external/vk.rs` (Linux), the Vulkan external-memory
//!   calls; `external/host.rs` (Linux), host memory imported for DMA (the
//!   device opened with `VK_EXT_external_memory_host`, the import, the page
//!   allocation, the host copies); `external/semaphore.rs` (Linux), timeline
//!   semaphores shared as fds (ADR-117); and `share/socket.rs` (Linux), the
//!   `SCM_RIGHTS` calls. Each block is argued where it stands. Everything
//!   else is safe.
//! * **Host memory the GPU reaches by DMA** (Linux, Vulkan with
//!   `VK_EXT_external_memory_host`): [`GpuContext::new`] opens the device
//!   with the extension where offered; transfers of 1 MiB and more then
//!   stage through imported host memory (the copy engines read and write it
//!   directly, as CUDA's pinned copies), else through mapped staging
//!   buffers — automatic, reported by [`staging_stats`]. `HostBuffer` gives
//!   the same memory to you as a copy source and destination.
//! * **Sharing without copies** (Linux, Vulkan): `alloc_exportable` memory
//!   goes to another device, process or API as an opaque file descriptor
//!   plus a hurray descriptor (`SharedBuffer`); a received message is
//!   validated whole before `GpuBufferHandle::import` touches it. `export`
//!   waits for the queue (`ProducerSynced`); `export_event` waits for
//!   nothing and sends a timeline semaphore the consumer waits for on its
//!   GPU (`Event`; Vulkan with `VK_KHR_external_semaphore_fd`, which
//!   [`GpuContext::new`] enables where offered, else it falls back to
//!   `export`: `event_sync` says which).
//!
//! Details: `docs/impl/gpu-readback.md`, `docs/impl/gpu-transfers.md`,
//! `docs/impl/gpu-share.md`, `docs/robustness.md`.
//!
//! ```no_run
//! use hurray_gpu::{GpuBufferHandle, GpuContext, wgpu::BufferUsages};
//!
//! let ctx = GpuContext::new()?;
//! let data: Vec<u32> = (0..1024).collect();
//! // The short form: the context is the device, the handle knows its own.
//! let h = ctx.upload_slice(&data, BufferUsages::COPY_SRC)?;
//! assert_eq!(h.element_count(), 1024);
//! assert_eq!(h.read_vec::<u32>()?, data);
//! // The seed's form names the device and queue, which must be the handle's.
//! let h = GpuBufferHandle::upload_slice(&ctx.device, &ctx.queue, &data, BufferUsages::COPY_SRC)?;
//! assert_eq!(h.readback_vec::<u32>(&ctx.device, &ctx.queue)?, data);
//!
//! // The same read without blocking: poll the device while the future runs.
//! let read = h.read_vec_async::<u32>();
//! let mut read = std::pin::pin!(read);
//! let waker = std::task::Waker::noop();
//! let values = loop {
//!     ctx.poll()?;
//!     if let std::task::Poll::Ready(r) = read.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
//!         break r?;
//!     }
//! };
//! assert_eq!(values, data);
//! # Ok::<(), hurray_gpu::BackendError>(())
//! ```
#![deny(unsafe_code)]
#![deny(missing_docs)]
// On the browser's wasm32, wgpu objects are neither `Send` nor `Sync`; the
// crate keeps one shape (`Arc`) on every target.
#![cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]

mod context;
mod device;
mod error;
mod exec;
#[cfg(target_os = "linux")]
mod external;
mod handle;
mod kernel;
#[cfg(not(target_arch = "wasm32"))]
mod load;
mod pool;
mod registry;
mod resource;
#[cfg(target_os = "linux")]
mod share;
mod slice;
mod staging;
mod transfer;

pub use context::{ContextOptions, GpuContext};
pub use error::{ApiMisuse, BackendError, WgpuError, WgpuErrorKind};
pub use exec::wait_for;
#[cfg(target_os = "linux")]
pub use external::{
    DeviceIdentity, HOST_PAGE, HostBuffer, MessageError, SHARED_USAGE, ShareError, Unsupported,
    device_identity, event_sync,
};
pub use handle::{GpuBufferHandle, resident_count};
pub use kernel::{CacheStats, GpuKernel, MAX_CACHED};
#[cfg(not(target_arch = "wasm32"))]
pub use load::{
    DEFAULT_PACK_BELOW, DEFAULT_SLAB_SIZE, LoadError, LoadOptions, LoadTimes, Loaded, LoadedTensor,
    Progress, WorkerTimes, load_file, load_view_async, save_file,
};
pub use pool::{DEFAULT_MAX_THREADS, set_worker_threads, worker_threads};
pub use resource::GpuResource;
#[cfg(target_os = "linux")]
pub use share::{MAX_DESCRIPTOR_LEN, SharedBuffer};
pub use slice::GpuSlice;
pub use staging::{DEFAULT_STAGING_CAP, StagingStats, set_staging_cap, staging_stats};
pub use wgpu;
