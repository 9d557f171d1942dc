//! The process-wide resident registry: id -> live buffer.
//!
//! Ids come from a process-wide counter that starts at 1 and is never reset,
//! so an id is never 0 and never reused. The registry holds only `Weak`
//! references: it never keeps a buffer alive, and once the last
//! `GpuBufferHandle` clone is dropped the id resolves to `None` forever (the
//! entry is removed by the buffer's own `Drop`, and a lookup racing with that
//! drop fails to upgrade the `Weak`, so no buffer is ever resurrected).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use crate::handle::Inner;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Buffers dropped so far; caches sweep dead ids when this changes.
static DROPS: AtomicU64 = AtomicU64::new(0);
static RESIDENT: LazyLock<Mutex<HashMap<u64, Weak<Inner>>>> = LazyLock::new(Mutex::default);

fn table() -> MutexGuard<'static, HashMap<u64, Weak<Inner>>> {
    // A panic while the lock was held cannot leave the map inconsistent
    // (every operation is a single insert/remove/get), so poisoning is ignored.
    RESIDENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A fresh id: never 0, never returned twice in this process.
pub(crate) fn next_id() -> u64 {
    // 2^64 ids at one per nanosecond last 584 years; wrapping is not a concern.
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

pub(crate) fn register(id: u64, inner: &Arc<Inner>) {
    table().insert(id, Arc::downgrade(inner));
}

pub(crate) fn unregister(id: u64) {
    table().remove(&id);
    DROPS.fetch_add(1, Ordering::Release);
}

/// How many buffers have been dropped in this process.
pub(crate) fn drop_count() -> u64 {
    DROPS.load(Ordering::Acquire)
}

/// Whether a buffer with this id is still alive.
pub(crate) fn is_resident(id: u64) -> bool {
    table().get(&id).is_some_and(|w| w.strong_count() > 0)
}

pub(crate) fn resolve(id: u64) -> Option<Arc<Inner>> {
    table().get(&id).and_then(Weak::upgrade)
}

/// Number of live buffers in the registry (diagnostics and leak tests).
#[must_use]
pub fn resident_count() -> usize {
    table().len()
}
