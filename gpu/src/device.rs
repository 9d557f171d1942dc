//! What hurray keeps per device: its identity, its queue, its staging pools,
//! and the teardown lock.
//!
//! ## Identity
//!
//! `wgpu::Device`'s `==` compares ids that are per *instance*: the first
//! device of two instances compares equal. Handing one instance's objects to
//! another's device makes wgpu-core look the ids up in the wrong registry (and
//! panic). So a device is identified by its [`DeviceShared`] (one per wgpu
//! device, found through [`shared`]). New devices are told apart from known
//! ones with [`same_device`]: `==` first, then — when the ids agree — a probe
//! of the two devices' error-scope stacks, which clones share and two devices
//! never do. The probe touches only the two devices' own scope stacks, never
//! one device's object on another. A `&wgpu::Device` a caller passes with a
//! handle is checked by `==`, plus the probe only while hurray knows two
//! devices with equal ids ([`DeviceShared::check`]).
//!
//! ## Queue
//!
//! A wgpu device has exactly one queue. The first queue seen with a device
//! (from [`GpuContext`](crate::GpuContext), or the caller's first call) is
//! kept, and every later queue must compare equal to it
//! ([`ApiMisuse::WrongQueue`]); hurray then submits to the kept queue.
//!
//! ## Teardown
//!
//! NVIDIA's Vulkan driver (580.159.04 on the H200) deadlocks when two threads
//! destroy devices at the same time (`docs/robustness.md`). Every hurray type
//! whose drop may release a device (the context, the per-device state, buffer
//! handles, kernels) holds a [`TeardownStart`] as its first field and a
//! [`TeardownEnd`] as its last: fields drop in declaration order, so the
//! fields between them drop under one process-wide lock (re-entrant per
//! thread).

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use crate::staging::Pools;
use crate::{ApiMisuse, BackendError};

static TEARDOWN: Mutex<()> = Mutex::new(());

thread_local! {
    static HELD: Cell<usize> = const { Cell::new(0) };
    static GUARD: Cell<Option<MutexGuard<'static, ()>>> = const { Cell::new(None) };
}

/// The first field of a type whose drop may release a device: takes the
/// teardown lock (see the module docs).
#[derive(Debug, Default, Clone)]
pub(crate) struct TeardownStart;

/// The last field of such a type: releases the teardown lock.
#[derive(Debug, Default, Clone)]
pub(crate) struct TeardownEnd;

impl Drop for TeardownStart {
    fn drop(&mut self) {
        let depth = HELD.with(Cell::get);
        if depth == 0 {
            let guard = TEARDOWN.lock().unwrap_or_else(PoisonError::into_inner);
            GUARD.with(|g| g.set(Some(guard)));
        }
        HELD.with(|h| h.set(depth + 1));
    }
}

impl Drop for TeardownEnd {
    fn drop(&mut self) {
        let depth = HELD.with(Cell::get);
        match depth {
            0 => {}
            1 => {
                HELD.with(|h| h.set(0));
                GUARD.with(|g| drop(g.take()));
            }
            n => HELD.with(|h| h.set(n - 1)),
        }
    }
}

/// Per-device state shared by every handle and kernel of one wgpu device.
pub(crate) struct DeviceShared {
    _start: TeardownStart,
    pub(crate) device: wgpu::Device,
    queue: OnceLock<wgpu::Queue>,
    pub(crate) staging: Pools,
    /// The device was created with `MAPPABLE_PRIMARY_BUFFERS`.
    pub(crate) mappable_primary: bool,
    /// Another known device (of another instance) has the same id, so `==`
    /// cannot tell them apart and [`check`](Self::check) must probe.
    ambiguous: std::sync::atomic::AtomicBool,
    pub(crate) limits: wgpu::Limits,
    _end: TeardownEnd,
}

impl std::fmt::Debug for DeviceShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceShared")
            .field("mappable_primary", &self.mappable_primary)
            .finish_non_exhaustive()
    }
}

#[cfg(not(target_arch = "wasm32"))]
static DEVICES: Mutex<Vec<Weak<DeviceShared>>> = Mutex::new(Vec::new());

/// Runs `f` on the list of known devices.
#[cfg(not(target_arch = "wasm32"))]
fn devices<R>(f: impl FnOnce(&mut Vec<Weak<DeviceShared>>) -> R) -> R {
    f(&mut DEVICES.lock().unwrap_or_else(PoisonError::into_inner))
}

// The browser's wasm32 has one thread, and its wgpu objects are not `Send`.
#[cfg(target_arch = "wasm32")]
thread_local! {
    static DEVICES: std::cell::RefCell<Vec<Weak<DeviceShared>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` on the list of known devices.
#[cfg(target_arch = "wasm32")]
fn devices<R>(f: impl FnOnce(&mut Vec<Weak<DeviceShared>>) -> R) -> R {
    DEVICES.with(|d| f(&mut d.borrow_mut()))
}

/// The state of `device`, created on first sight. `queue`, when given, is
/// recorded as its queue if none is known yet.
pub(crate) fn shared(device: &wgpu::Device, queue: Option<&wgpu::Queue>) -> Arc<DeviceShared> {
    // Found and created under the list's lock, so that one device never gets
    // two states. (Dropping an upgraded state here may run its teardown; that
    // never takes this lock.)
    let s = devices(|list| {
        list.retain(|w| w.strong_count() > 0);
        let found = list
            .iter()
            .filter_map(Weak::upgrade)
            .find(|s| same_device(&s.device, device));
        found.unwrap_or_else(|| {
            let twins: Vec<_> = list
                .iter()
                .filter_map(Weak::upgrade)
                .filter(|s| s.device == *device)
                .collect();
            for t in &twins {
                t.ambiguous.store(true, Ordering::Release);
            }
            let s = Arc::new(DeviceShared {
                _start: TeardownStart,
                device: device.clone(),
                queue: OnceLock::new(),
                staging: Pools::default(),
                mappable_primary: device
                    .features()
                    .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
                ambiguous: std::sync::atomic::AtomicBool::new(!twins.is_empty()),
                limits: device.limits(),
                _end: TeardownEnd,
            });
            list.push(Arc::downgrade(&s));
            s
        })
    });
    if let Some(q) = queue {
        let _ = s.queue.set(q.clone());
    }
    s
}

impl DeviceShared {
    /// Checks that `device` is this device and `queue` its queue, and returns
    /// the queue to submit to.
    ///
    /// `==` settles it unless hurray knows another device with the same id
    /// (another instance's); only then is the exact (and slower, ~1 µs)
    /// [`same_device`] probe run. A device hurray has never seen whose id
    /// happens to equal this one's is taken for this one — harmless, since
    /// hurray only ever uses its own recorded device and queue.
    pub(crate) fn check<'a>(
        &'a self,
        device: &wgpu::Device,
        queue: &'a wgpu::Queue,
    ) -> Result<&'a wgpu::Queue, BackendError> {
        let same = if self.ambiguous.load(Ordering::Acquire) {
            same_device(&self.device, device)
        } else {
            self.device == *device
        };
        if !same {
            return Err(ApiMisuse::WrongDevice.into());
        }
        self.check_queue(queue)
    }

    /// Checks that `queue` is this device's queue (recording it if none is
    /// known yet) and returns the queue to submit to.
    pub(crate) fn check_queue<'a>(
        &'a self,
        queue: &'a wgpu::Queue,
    ) -> Result<&'a wgpu::Queue, BackendError> {
        let kept = self.queue.get_or_init(|| queue.clone());
        if kept == queue {
            Ok(kept)
        } else {
            Err(ApiMisuse::WrongQueue.into())
        }
    }

    /// The queue hurray knows for this device, if any.
    pub(crate) fn queue(&self) -> Option<&wgpu::Queue> {
        self.queue.get()
    }

    /// The largest staging or chunk size this device allows: its
    /// `max_buffer_size` rounded down to the copy granularity, at least 4
    /// (a device below 4 can hold no non-empty buffer at all).
    pub(crate) fn max_staging(&self) -> u64 {
        let max = self.limits.max_buffer_size;
        (max - max % wgpu::COPY_BUFFER_ALIGNMENT).max(wgpu::COPY_BUFFER_ALIGNMENT)
    }
}

/// Whether `a` and `b` are the same wgpu device (clones of one another).
///
/// `==` compares per-instance ids, so equal ids may still be two devices of
/// two instances. Clones share one error-scope stack per thread; two devices
/// never do. The probe pushes a scope on `a` (index `i`), one on `b`, and
/// another on `a`: that last index is `i + 2` when the stack is shared and
/// `i + 1` when it is not — exact either way. The scopes are popped in
/// reverse order, which is correct for one shared stack and for two.
/// Safety of the crate does not rest on this check: hurray only ever uses the
/// device and queue a handle was made with; the check reports the mistake.
pub(crate) fn same_device(a: &wgpu::Device, b: &wgpu::Device) -> bool {
    if a != b {
        return false;
    }
    let g1 = a.push_error_scope(wgpu::ErrorFilter::Internal);
    let g2 = b.push_error_scope(wgpu::ErrorFilter::Internal);
    let g3 = a.push_error_scope(wgpu::ErrorFilter::Internal);
    let shared = match (scope_index(&g1), scope_index(&g3)) {
        (Some(i), Some(k)) => k == i + 2,
        // Unreadable indices (another wgpu version): trust the ids.
        _ => true,
    };
    drop(g3.pop());
    drop(g2.pop());
    drop(g1.pop());
    shared
}

/// The stack index of an error scope (its position, from 0), read from the
/// guard's `Debug` output (`ErrorScopeGuard { device: …, index: N, popped:
/// false }`): wgpu keeps the field private. `DebugStruct` writes a field's
/// name, then `": "`, then its value, each in one piece; the pieces are
/// matched as they are written, nothing is stored.
fn scope_index(guard: &wgpu::ErrorScopeGuard) -> Option<u64> {
    #[derive(Default)]
    struct Scan {
        /// 0: looking for the name, 1: saw `index`, 2: saw `index: `.
        state: u8,
        value: Option<u64>,
    }
    impl std::fmt::Write for Scan {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.state = match (self.state, s) {
                (_, "index") => 1,
                (1, ": ") => 2,
                (2, digits) => {
                    self.value = digits.parse().ok();
                    0
                }
                _ => 0,
            };
            Ok(())
        }
    }
    let mut scan = Scan::default();
    std::fmt::write(&mut scan, format_args!("{guard:?}")).ok()?;
    scan.value
}
