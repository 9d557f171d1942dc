//! What hurray keeps per device: its identity, its queue, its staging pools,
//! and the teardown lock.
//!
//! ## Identity
//!
//! Inside hurray a device *is* its [`DeviceShared`]: one `Arc` per wgpu
//! device, taken once — by [`GpuContext`](crate::GpuContext) (which
//! [`register`]s the device it creates without any lookup, or looks up the
//! device given to `from_device`), or on the first seed call that names the
//! device — held by every handle, kernel and context of it, and compared
//! with `Arc::ptr_eq`: exact, and one pointer compare. The shorter API
//! (`GpuContext::upload`, `GpuBufferHandle::read`, `GpuKernel::launch`, …)
//! takes no `&wgpu::Device` or `&wgpu::Queue` and never leaves it.
//!
//! Only the seed's signatures, which name a device by `&wgpu::Device`, need
//! the way back from a wgpu device to its `DeviceShared`. wgpu 30's
//! `Device: Eq + Hash` is exact on the browser's WebGPU (a process-wide
//! counter given at creation, shared by clones), but on native backends it
//! compares wgpu-core's `(index, epoch)` id, which is per *instance*: the
//! first devices of two instances compare equal, and wgpu offers no safe way
//! to reach the instance or the device's own allocation. So [`shared`]
//! matches the registered devices by `==` and, on native backends, confirms
//! an equal id with [`same_device`], a probe of the two devices'
//! error-scope stacks, which clones share and two devices never do. A
//! `&wgpu::Device` passed with a handle is checked against the handle's
//! own by `==`, plus the probe only while hurray knows another device with
//! that id ([`DeviceShared::check`]).
//!
//! ## Queue
//!
//! A wgpu device has exactly one queue. The first queue seen with a device
//! (from [`GpuContext`](crate::GpuContext), or the caller's first call) is
//! kept, and every later queue must compare equal to it
//! ([`ApiMisuse::WrongQueue`]); hurray then submits to the kept queue. The
//! calls that name no queue submit to the kept one
//! ([`DeviceShared::own_queue`]).
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
    /// DMA staging (imported host memory), where the device allows it.
    #[cfg(target_os = "linux")]
    pub(crate) dma: crate::transfer::dma::DmaPool,
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

/// The state of `device`, found among the registered devices or created on
/// first sight. `queue`, when given, is recorded as its queue if none is
/// known yet. Only the seed's signatures, which name a device by
/// `&wgpu::Device`, come here; see the module docs for how the match is exact.
pub(crate) fn shared(device: &wgpu::Device, queue: Option<&wgpu::Queue>) -> Arc<DeviceShared> {
    // Found and created under the list's lock, so that one device never gets
    // two states. (Dropping an upgraded state here may run its teardown; that
    // never takes this lock.)
    let s = devices(|list| {
        list.retain(|w| w.strong_count() > 0);
        let found = list
            .iter()
            .filter_map(Weak::upgrade)
            .find(|s| is_registered_as(device, s));
        found.unwrap_or_else(|| register_in(list, device))
    });
    if let Some(q) = queue {
        let _ = s.queue.set(q.clone());
    }
    s
}

/// The state of a device hurray has just created (so no registered state
/// can be it): registered without any lookup. The queue is recorded.
pub(crate) fn register(device: &wgpu::Device, queue: &wgpu::Queue) -> Arc<DeviceShared> {
    let s = devices(|list| {
        list.retain(|w| w.strong_count() > 0);
        register_in(list, device)
    });
    let _ = s.queue.set(queue.clone());
    s
}

/// Whether the caller's `device` is the registered state `s`'s device.
///
/// On the browser's WebGPU, wgpu 30 gives every device a process-wide
/// counter as its `==` identity (`backend/webgpu.rs`, `Identifier`), shared
/// by clones and never reused: `==` is exact. On native backends `==`
/// compares wgpu-core's `(index, epoch)` in *one instance's* registry, so
/// two instances' devices may be equal; the error-scope probe then decides.
#[cfg(target_arch = "wasm32")]
fn is_registered_as(device: &wgpu::Device, s: &DeviceShared) -> bool {
    s.device == *device
}

/// Whether the caller's `device` is the registered state `s`'s device.
///
/// On native backends `==` compares wgpu-core's `(index, epoch)` in *one
/// instance's* registry, so two instances' devices may be equal; the
/// error-scope probe ([`same_device`]) decides those. The error is made on
/// the caller's device; when the probe cannot tell (that device is lost), a
/// fresh state is harmless.
#[cfg(not(target_arch = "wasm32"))]
fn is_registered_as(device: &wgpu::Device, s: &DeviceShared) -> bool {
    same_device(device, &s.device) == Some(true)
}

/// Creates and registers the state of `device`, which no registered state
/// is; marks the registered devices with an equal id as ambiguous.
fn register_in(list: &mut Vec<Weak<DeviceShared>>, device: &wgpu::Device) -> Arc<DeviceShared> {
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
        #[cfg(target_os = "linux")]
        dma: crate::transfer::dma::DmaPool::default(),
        mappable_primary: device
            .features()
            .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
        ambiguous: std::sync::atomic::AtomicBool::new(!twins.is_empty()),
        limits: device.limits(),
        _end: TeardownEnd,
    });
    list.push(Arc::downgrade(&s));
    s
}

impl DeviceShared {
    /// Checks that `device` is this device and `queue` its queue, and returns
    /// the queue to submit to: the seed's signatures' check.
    ///
    /// `==` settles it unless hurray knows another device with the same id
    /// (another instance's, native backends only); only then is the exact
    /// (and slower, ~1 µs) [`same_device`] probe run. A device hurray has
    /// never seen whose id happens to equal this one's passes — harmless,
    /// since hurray only ever uses its own recorded device and queue.
    pub(crate) fn check<'a>(
        &'a self,
        device: &wgpu::Device,
        queue: &'a wgpu::Queue,
    ) -> Result<&'a wgpu::Queue, BackendError> {
        if !self.is(device) {
            return Err(ApiMisuse::WrongDevice.into());
        }
        self.check_queue(queue)
    }

    /// Whether `device` is this device, as [`check`](Self::check) decides.
    fn is(&self, device: &wgpu::Device) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        if self.ambiguous.load(Ordering::Acquire) {
            // Undecided (a lost device reports no errors): accept; hurray
            // uses only its own device, where the loss then shows.
            return same_device(device, &self.device) != Some(false);
        }
        self.device == *device
    }

    /// The queue hurray recorded for this device, for the calls that name
    /// no queue.
    ///
    /// # Errors
    /// [`ApiMisuse::UnknownQueue`] when no call has named the device's
    /// queue yet (a handle made by the seed's `alloc` on a device hurray
    /// never saw with its queue).
    pub(crate) fn own_queue(&self) -> Result<&wgpu::Queue, BackendError> {
        self.queue
            .get()
            .ok_or_else(|| ApiMisuse::UnknownQueue.into())
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

    /// Bytes of idle staging kept for this device: mapped staging buffers
    /// and DMA staging.
    pub(crate) fn pooled_bytes(&self) -> u64 {
        #[cfg(target_os = "linux")]
        let dma = self.dma.bytes();
        #[cfg(not(target_os = "linux"))]
        let dma = 0;
        self.staging.bytes() + dma
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
/// two instances. What tells them apart is a rule of WebGPU's error scopes:
/// a device's errors go to the innermost open scope of *that device's*
/// stack (per thread), and clones share the stack. So the probe opens a
/// validation scope on `a`, then one on `b`, then makes one validation
/// error on `a` (a buffer with no usage, refused before any allocation):
/// when the two are one device the error lands in `b`'s scope, the
/// innermost of the shared stack; when they are two, it lands in `a`'s own.
/// The scopes are popped in reverse order, which is correct for one shared
/// stack and for two. Only public wgpu behaviour is read (no `Debug`
/// output); the probe touches each device's own objects only.
///
/// Safety of the crate does not rest on this check: hurray only ever uses
/// the device and queue a handle was made with; the check reports the
/// mistake.
///
/// Native backends only: the browser's WebGPU answers error scopes only
/// after the event loop runs, and needs no probe (its `==` is exact).
///
/// `None` when the probe cannot tell: `a` is lost or destroyed (a lost
/// device reports no errors). Callers make the error on the device more likely
/// to be alive: the caller's, not a registered one.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn same_device(a: &wgpu::Device, b: &wgpu::Device) -> Option<bool> {
    if a != b {
        return Some(false);
    }
    let on_a = a.push_error_scope(wgpu::ErrorFilter::Validation);
    let on_b = b.push_error_scope(wgpu::ErrorFilter::Validation);
    drop(a.create_buffer(&wgpu::BufferDescriptor {
        label: Some("hurray identity probe (refused on purpose)"),
        size: 4,
        usage: wgpu::BufferUsages::empty(),
        mapped_at_creation: false,
    }));
    let in_b = caught(on_b.pop());
    let in_a = caught(on_a.pop());
    match (in_b, in_a) {
        (Some(true), Some(false)) => Some(true),
        (Some(false), Some(true)) => Some(false),
        _ => None,
    }
}

/// Whether a popped error scope caught an error, if its result is ready
/// without waiting (always on native backends).
#[cfg(not(target_arch = "wasm32"))]
fn caught(pop: impl std::future::Future<Output = Option<wgpu::Error>>) -> Option<bool> {
    let mut pop = std::pin::pin!(pop);
    let waker = std::task::Waker::noop();
    match pop
        .as_mut()
        .poll(&mut std::task::Context::from_waker(waker))
    {
        std::task::Poll::Ready(e) => Some(e.is_some()),
        std::task::Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    use super::{TeardownEnd, TeardownStart};

    /// Counts the drops in progress, and the most ever at once.
    #[derive(Default)]
    struct Inside {
        now: AtomicUsize,
        most: AtomicUsize,
    }

    /// Stands for the wgpu objects of a device: the drops of outermost
    /// probes (one per thread at a time) are counted.
    struct Probe(Arc<Inside>, Option<Box<Guarded>>, bool);

    impl Drop for Probe {
        fn drop(&mut self) {
            let outer = self.2;
            if outer {
                let now = self.0.now.fetch_add(1, Ordering::SeqCst) + 1;
                self.0.most.fetch_max(now, Ordering::SeqCst);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            // A nested guarded value (a handle inside a context) re-enters
            // the lock on this thread without deadlocking.
            drop(self.1.take());
            if outer {
                self.0.now.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// The shape of every hurray type that may release a device.
    struct Guarded {
        _start: TeardownStart,
        _probe: Probe,
        _end: TeardownEnd,
    }

    fn guarded(inside: &Arc<Inside>, nested: bool) -> Guarded {
        let inner = nested.then(|| {
            Box::new(Guarded {
                _start: TeardownStart,
                _probe: Probe(Arc::clone(inside), None, false),
                _end: TeardownEnd,
            })
        });
        Guarded {
            _start: TeardownStart,
            _probe: Probe(Arc::clone(inside), inner, true),
            _end: TeardownEnd,
        }
    }

    /// The lavapipe-sized (in fact GPU-free) half of
    /// `devices::contexts_created_and_dropped_on_many_threads`: that test can
    /// fail only on a driver that deadlocks on concurrent device teardown
    /// (NVIDIA's); this one fails anywhere if the teardown lock stops
    /// serialising the drops, or stops being re-entrant.
    #[test]
    fn teardowns_on_many_threads_run_one_at_a_time_and_nest() {
        let inside = Arc::new(Inside::default());
        let start = Barrier::new(8);
        std::thread::scope(|s| {
            for t in 0..8 {
                let (inside, start) = (&inside, &start);
                s.spawn(move || {
                    let value = guarded(inside, t % 2 == 0);
                    start.wait();
                    drop(value);
                });
            }
        });
        assert_eq!(inside.now.load(Ordering::SeqCst), 0);
        // Never two threads' teardowns at once.
        assert_eq!(inside.most.load(Ordering::SeqCst), 1);
        // And the lock is free again: another thread's drop completes.
        std::thread::spawn(move || drop(guarded(&inside, true)))
            .join()
            .unwrap();
    }
}
