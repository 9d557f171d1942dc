//! The transfer engine: bytes between host memory and a GPU buffer, in both
//! directions, asynchronously.
//!
//! ## Contract
//!
//! * **What it is given.** A [`Source`] or [`Target`]: a buffer, its device
//!   state and the queue to submit to, with a range the handle already
//!   checked (usage, bounds, overflow, alignment). The engine never sees a
//!   caller's device or queue, so it cannot mix two devices' objects.
//! * **One plan for both directions.** [`chunk`] cuts a transfer into
//!   chunks of staging memory ([`crate::staging`]), [`chunk::DEPTH`] in
//!   flight; [`copy`] moves the host side over the worker pool
//!   ([`crate::pool`]); [`read`] and [`write`](mod@write) drive the GPU side.
//! * **Never blocks on the GPU.** Every wait is an `.await` on a wgpu
//!   callback; the blocking forms are `exec::block_on` over these futures.
//! * **DMA staging** (Linux, Vulkan, a device opened with
//!   `VK_EXT_external_memory_host`): transfers from 1 MiB up stage through
//!   imported host memory ([`dma`]) instead of mapped staging buffers; the
//!   choice is automatic and counted in `staging_stats`.
//! * **Unsafe:** one block, in [`read::read_to_vec`], sets a `Vec`'s length
//!   after the copies' own count says its spare capacity was written; one
//!   function, in [`nontemporal`], copies with non-temporal stores.
//!
//! This is the seam for other sources of bytes (issue 21's file loader):
//! a new source fills staging chunks through [`copy`] and [`write`](mod@write) as the
//! upload path does.

pub(crate) mod chunk;
pub(crate) mod copy;
#[cfg(target_os = "linux")]
pub(crate) mod dma;
#[cfg(target_os = "linux")]
pub(crate) mod nontemporal;
pub(crate) mod read;
pub(crate) mod write;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::device::DeviceShared;

/// The buffer a read comes from, with its device state.
pub(crate) struct Source<'a> {
    pub(crate) buffer: &'a wgpu::Buffer,
    pub(crate) shared: &'a Arc<DeviceShared>,
    pub(crate) queue: &'a wgpu::Queue,
    /// The buffer itself can be mapped for reading (`MAP_READ` usage).
    pub(crate) direct: bool,
    /// Set while the buffer itself is mapped by a direct read.
    pub(crate) mapping: &'a AtomicBool,
}

/// The buffer a write goes to, with its device state.
pub(crate) struct Target<'a> {
    pub(crate) buffer: &'a wgpu::Buffer,
    pub(crate) shared: &'a Arc<DeviceShared>,
    pub(crate) queue: &'a wgpu::Queue,
}
