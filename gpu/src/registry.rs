//! A process-wide registry: id -> live object, by weak reference.
//!
//! Ids come from a process-wide counter that starts at 1 and is never reset,
//! so an id is never 0 and never reused. The registry holds only `Weak`
//! references: it never keeps an object alive, and once the last strong
//! reference is dropped the id resolves to `None` forever (the owner removes
//! the entry in its `Drop`, and a lookup racing with that drop fails to
//! upgrade the `Weak`, so nothing is ever resurrected).
//!
//! The registry knows nothing of what it stores: the buffer handle module
//! owns its registry and its entries.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh id: never 0, never returned twice in this process.
pub(crate) fn next_id() -> u64 {
    // 2^64 ids at one per nanosecond last 584 years; wrapping is not a concern.
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Live objects by id.
pub(crate) struct Registry<T> {
    table: Mutex<HashMap<u64, Weak<T>>>,
}

impl<T> Registry<T> {
    /// An empty registry.
    pub(crate) fn new() -> Self {
        Self {
            table: Mutex::new(HashMap::new()),
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<u64, Weak<T>>> {
        // A panic while the lock was held cannot leave the map inconsistent
        // (every operation is a single insert/remove/get), so poisoning is ignored.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn register(&self, id: u64, object: &Arc<T>) {
        self.table().insert(id, Arc::downgrade(object));
    }

    pub(crate) fn unregister(&self, id: u64) {
        self.table().remove(&id);
    }

    pub(crate) fn resolve(&self, id: u64) -> Option<Arc<T>> {
        let weak = self.table().get(&id).cloned();
        // Upgraded outside the lock: if this is the last reference, its drop
        // (which unregisters) must not run under the lock.
        weak.and_then(|w| w.upgrade())
    }

    pub(crate) fn len(&self) -> usize {
        self.table().len()
    }
}
