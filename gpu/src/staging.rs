//! Staging buffers: per-device pools under one process-wide cap.
//!
//! ## Contract
//!
//! * Each device has two pools (in its `DeviceShared`): *read* staging
//!   (`MAP_READ | COPY_DST`, idle and unmapped) and *write* staging
//!   (`MAP_WRITE | COPY_SRC`, idle and **mapped**, ready to be filled: a write
//!   never waits for a mapping). Buffers are keyed by size class
//!   ([`size_class`]): powers of two from 256 B up to [`CHUNK`], multiples of
//!   [`CHUNK`] above, never above the device's `max_buffer_size`.
//! * A buffer enters a pool only in the state above; one whose map failed is
//!   dropped. The idle buffers of all pools together never exceed the
//!   process-wide cap ([`set_staging_cap`], default [`DEFAULT_STAGING_CAP`]):
//!   a buffer that does not fit evicts idle buffers of other classes first,
//!   and is dropped if it is larger than the cap itself.
//! * [`staging_stats`] reports what the pools hold and what transfers hold.
//!   Pools are per device because wgpu objects of one instance must never
//!   reach another instance's device (wgpu-core panics on that), and they die
//!   with the device's last handle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use wgpu::BufferUsages;

use crate::BackendError;
use crate::exec::scoped;

/// Long transfers are pipelined in chunks of this size.
pub(crate) const CHUNK: u64 = 8 << 20;
/// The smallest staging buffer.
const MIN_CLASS: u64 = 256;
/// Idle buffers kept per size class and pool.
const MAX_PER_CLASS: usize = 8;
/// The default process-wide cap on idle staging memory.
pub const DEFAULT_STAGING_CAP: u64 = 512 << 20;

static CAP: AtomicU64 = AtomicU64::new(DEFAULT_STAGING_CAP);
static POOLED: AtomicU64 = AtomicU64::new(0);
static POOLED_BUFFERS: AtomicU64 = AtomicU64::new(0);
static IN_USE: AtomicU64 = AtomicU64::new(0);
static DMA_TRANSFERS: AtomicU64 = AtomicU64::new(0);
static MAPPED_TRANSFERS: AtomicU64 = AtomicU64::new(0);

/// Counts one staged transfer (read or write above the small-write path) by
/// the staging it took: imported host memory (`dma`) or mapped buffers.
pub(crate) fn count_transfer(dma: bool) {
    let c = if dma {
        &DMA_TRANSFERS
    } else {
        &MAPPED_TRANSFERS
    };
    c.fetch_add(1, Ordering::Relaxed);
}

/// What the staging pools hold, process-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StagingStats {
    /// Bytes of idle staging buffers kept for reuse (all devices).
    pub pooled_bytes: u64,
    /// How many idle staging buffers are kept.
    pub pooled_buffers: u64,
    /// Bytes of staging buffers that transfers hold right now (in flight).
    pub in_use_bytes: u64,
    /// The cap on `pooled_bytes` (and, separately, on `dma_pooled_bytes`).
    pub cap_bytes: u64,
    /// Bytes of idle DMA staging (host memory imported with
    /// `VK_EXT_external_memory_host`) kept for reuse (all devices).
    pub dma_pooled_bytes: u64,
    /// Transfers (reads, writes, uploads; since the process started) that
    /// staged through host memory the GPU reaches by DMA: those of 1 MiB or
    /// more on a device opened with `VK_EXT_external_memory_host`.
    pub dma_transfers: u64,
    /// Transfers that staged through mapped staging buffers (every other
    /// staged transfer: below 1 MiB, or a device without the extension).
    pub mapped_transfers: u64,
}

/// What the staging pools hold right now.
///
/// ```
/// let s = hurray_gpu::staging_stats();
/// assert!(s.pooled_bytes <= s.cap_bytes);
/// ```
#[must_use]
pub fn staging_stats() -> StagingStats {
    StagingStats {
        pooled_bytes: POOLED.load(Ordering::Acquire),
        pooled_buffers: POOLED_BUFFERS.load(Ordering::Acquire),
        in_use_bytes: IN_USE.load(Ordering::Acquire),
        cap_bytes: CAP.load(Ordering::Acquire),
        #[cfg(target_os = "linux")]
        dma_pooled_bytes: crate::transfer::dma::DMA_POOLED.load(Ordering::Acquire),
        #[cfg(not(target_os = "linux"))]
        dma_pooled_bytes: 0,
        dma_transfers: DMA_TRANSFERS.load(Ordering::Relaxed),
        mapped_transfers: MAPPED_TRANSFERS.load(Ordering::Relaxed),
    }
}

/// Sets the process-wide cap on idle staging memory (bytes; default
/// [`DEFAULT_STAGING_CAP`]). Idle buffers above a lowered cap are freed as
/// buffers come back to the pools; [`GpuBufferHandle::trim_staging`](crate::GpuBufferHandle::trim_staging)
/// frees a device's idle buffers at once. `0` disables pooling.
pub fn set_staging_cap(bytes: u64) {
    CAP.store(bytes, Ordering::Release);
}

/// The two pools of one device.
#[derive(Default)]
pub(crate) struct Pools {
    read: Mutex<Free>,
    write: Mutex<Free>,
}

/// Idle buffers of one pool, by size class, oldest first.
#[derive(Default)]
struct Free {
    lists: HashMap<u64, Vec<wgpu::Buffer>>,
    bytes: u64,
}

/// Which pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `MAP_READ | COPY_DST`, kept unmapped.
    Read,
    /// `MAP_WRITE | COPY_SRC`, kept mapped.
    Write,
}

/// A staging buffer taken from (or made for) a pool; counts as in use until
/// dropped or given back.
pub(crate) struct Staging {
    pub(crate) buffer: wgpu::Buffer,
}

impl Staging {
    fn new(buffer: wgpu::Buffer) -> Self {
        IN_USE.fetch_add(buffer.size(), Ordering::AcqRel);
        Self { buffer }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        IN_USE.fetch_sub(self.buffer.size(), Ordering::AcqRel);
    }
}

fn lock(m: &Mutex<Free>) -> MutexGuard<'_, Free> {
    // Each critical section is one list operation plus its byte count:
    // poisoning cannot leave a pool inconsistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pools {
    fn pool(&self, kind: Kind) -> &Mutex<Free> {
        match kind {
            Kind::Read => &self.read,
            Kind::Write => &self.write,
        }
    }

    /// An idle buffer of exactly `class` bytes, if the pool has one.
    pub(crate) fn take_idle(&self, kind: Kind, class: u64) -> Option<Staging> {
        let mut p = lock(self.pool(kind));
        let b = p.lists.get_mut(&class).and_then(Vec::pop)?;
        p.bytes -= class;
        POOLED.fetch_sub(class, Ordering::AcqRel);
        POOLED_BUFFERS.fetch_sub(1, Ordering::AcqRel);
        drop(p);
        Some(Staging::new(b))
    }

    /// A pooled or new staging buffer of `class` bytes; a new write buffer is
    /// created mapped.
    pub(crate) async fn take(
        &self,
        device: &wgpu::Device,
        kind: Kind,
        class: u64,
    ) -> Result<Staging, BackendError> {
        if let Some(s) = self.take_idle(kind, class) {
            return Ok(s);
        }
        let (usage, label, mapped) = match kind {
            Kind::Read => (
                BufferUsages::MAP_READ | BufferUsages::COPY_DST,
                "hurray read staging",
                false,
            ),
            Kind::Write => (
                BufferUsages::MAP_WRITE | BufferUsages::COPY_SRC,
                "hurray write staging",
                true,
            ),
        };
        let buffer = scoped(device, || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: class,
                usage,
                mapped_at_creation: mapped,
            })
        })
        .await?;
        Ok(Staging::new(buffer))
    }

    /// Returns a buffer in its pool's state (read: unmapped; write: mapped),
    /// within the process-wide cap; drops it otherwise.
    pub(crate) fn give(&self, kind: Kind, staging: Staging) {
        let class = staging.buffer.size();
        let cap = CAP.load(Ordering::Acquire);
        if class > cap {
            return;
        }
        let mut p = lock(self.pool(kind));
        if p.lists
            .get(&class)
            .is_some_and(|l| l.len() >= MAX_PER_CLASS)
        {
            return;
        }
        // Make room: evict idle buffers of other classes of this pool, largest
        // first, while the process-wide total would exceed the cap.
        while POOLED.load(Ordering::Acquire) + class > cap {
            let victim = p
                .lists
                .iter()
                .filter(|(c, l)| **c != class && !l.is_empty())
                .map(|(c, _)| *c)
                .max();
            let Some(v) = victim else { break };
            if let Some(list) = p.lists.get_mut(&v) {
                if !list.is_empty() {
                    list.remove(0);
                    p.bytes -= v;
                    POOLED.fetch_sub(v, Ordering::AcqRel);
                    POOLED_BUFFERS.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
        if POOLED.load(Ordering::Acquire) + class > cap {
            return;
        }
        POOLED.fetch_add(class, Ordering::AcqRel);
        POOLED_BUFFERS.fetch_add(1, Ordering::AcqRel);
        p.bytes += class;
        p.lists
            .entry(class)
            .or_default()
            .push(staging.buffer.clone());
        // `staging` drops here: no longer in use.
    }

    /// Bytes of idle buffers in both pools.
    pub(crate) fn bytes(&self) -> u64 {
        lock(&self.read).bytes + lock(&self.write).bytes
    }

    /// Drops every idle buffer of both pools.
    pub(crate) fn clear(&self) {
        for m in [&self.read, &self.write] {
            let mut p = lock(m);
            let n: usize = p.lists.values().map(Vec::len).sum();
            POOLED.fetch_sub(p.bytes, Ordering::AcqRel);
            POOLED_BUFFERS.fetch_sub(n as u64, Ordering::AcqRel);
            p.lists.clear();
            p.bytes = 0;
        }
    }
}

impl Drop for Pools {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The staging size for `len` bytes on a device whose largest staging buffer
/// is `max` (a multiple of 4): the next power of two (at least 256) up to
/// [`CHUNK`], the next multiple of [`CHUNK`] above, or `len` rounded to 4
/// where that exceeds `max`.
pub(crate) fn size_class(len: u64, max: u64) -> u64 {
    let class = if len <= CHUNK {
        len.max(MIN_CLASS).next_power_of_two()
    } else {
        len.checked_next_multiple_of(CHUNK).unwrap_or(u64::MAX)
    };
    if class <= max {
        class
    } else {
        len.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT).min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_powers_of_two_then_chunks_and_never_above_max() {
        let max = 1 << 40;
        assert_eq!(size_class(1, max), 256);
        assert_eq!(size_class(257, max), 512);
        assert_eq!(size_class(CHUNK, max), CHUNK);
        assert_eq!(size_class(CHUNK + 1, max), 2 * CHUNK);
        // 100 MiB + 3 rounds to 104 MiB, not to 128 MiB.
        assert_eq!(size_class((100 << 20) + 3, max), 104 << 20);
        assert_eq!(size_class(5, 8), 8);
        assert_eq!(size_class(4, 4), 4);
        assert_eq!(size_class(3, 4), 4);
    }
}
