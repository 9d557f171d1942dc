//! The process-wide worker pool for host copies.
//!
//! ## Contract
//!
//! * One pool per process, started on first use with
//!   [`worker_threads`] threads: by default the machine's parallelism, at most
//!   [`DEFAULT_MAX_THREADS`]; [`set_worker_threads`] chooses the size before
//!   the first transfer. No thread is ever spawned per call.
//! * The queue is bounded: at most [`MAX_QUEUED`] pieces wait in the pool at
//!   once, process-wide. A call that finds the queue full copies its pieces
//!   on its own thread instead of waiting, so any number of concurrent
//!   callers adds no thread and no unbounded queue.
//! * A piece that panics (a bug in hurray) makes [`run`] return
//!   [`BackendError::Bug`]; a panic of a caller's closure run as a piece is
//!   re-raised on the calling thread, as `std::thread::scope` does.
//! * The calling thread always runs one piece itself, and `run` returns only
//!   after every piece has finished, so pieces may borrow the caller's data.
//! * On `wasm32` (the browser's WebGPU) there is no pool: pieces run in order
//!   on the calling thread.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{ApiMisuse, BackendError};

/// The largest default pool. Copies into DMA staging (ordinary host memory)
/// keep scaling past eight threads on the H200's 16-core host: a 256 MiB
/// write ran at 23.0 GB/s with 8 threads and 29.6 with 16 (`docs/perf.md`),
/// and the file loader's page-cache copies need 16 to approach PCIe.
pub const DEFAULT_MAX_THREADS: usize = 16;
/// The most pieces waiting in the pool at once, process-wide.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const MAX_QUEUED: usize = 64;

static REQUESTED: AtomicUsize = AtomicUsize::new(0);
#[cfg(not(target_arch = "wasm32"))]
static QUEUED: AtomicUsize = AtomicUsize::new(0);

#[cfg(not(target_arch = "wasm32"))]
static POOL: OnceLock<Option<rayon_core::ThreadPool>> = OnceLock::new();
#[cfg(target_arch = "wasm32")]
static POOL: OnceLock<Option<()>> = OnceLock::new();

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(DEFAULT_MAX_THREADS))
}

/// Sets the size of the host-copy worker pool. Call it before the first
/// transfer; `0` restores the default (the machine's parallelism, at most
/// [`DEFAULT_MAX_THREADS`]).
///
/// ```
/// hurray_gpu::set_worker_threads(2)?;
/// assert_eq!(hurray_gpu::worker_threads(), 2);
/// # Ok::<(), hurray_gpu::BackendError>(())
/// ```
///
/// # Errors
/// [`ApiMisuse::PoolStarted`] when the pool already runs with another size.
pub fn set_worker_threads(threads: usize) -> Result<(), BackendError> {
    let wanted = if threads == 0 {
        default_threads()
    } else {
        threads
    };
    if POOL.get().is_some() {
        let running = worker_threads();
        return if running == wanted {
            Ok(())
        } else {
            Err(ApiMisuse::PoolStarted { threads: running }.into())
        };
    }
    REQUESTED.store(wanted, Ordering::SeqCst);
    // Start it now, so that the size cannot change under a racing transfer.
    #[cfg(not(target_arch = "wasm32"))]
    let _ = pool();
    let running = worker_threads();
    if running == wanted {
        Ok(())
    } else {
        Err(ApiMisuse::PoolStarted { threads: running }.into())
    }
}

/// The number of threads of the host-copy worker pool (started or not).
#[must_use]
pub fn worker_threads() -> usize {
    match REQUESTED.load(Ordering::SeqCst) {
        0 => default_threads(),
        n => n,
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn pool() -> Option<&'static rayon_core::ThreadPool> {
    POOL.get_or_init(|| {
        let threads = worker_threads();
        REQUESTED.store(threads, Ordering::SeqCst);
        // One thread is the caller: the pool needs one fewer.
        if threads <= 1 {
            return None;
        }
        rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads - 1)
            .thread_name(|i| format!("hurray-copy-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `piece(i)` for every `i < pieces`, on the pool and this thread, and
/// returns when all are done. See the module contract.
///
/// # Errors
/// [`BackendError::Bug`] when a piece panicked.
pub(crate) fn run(
    pieces: usize,
    piece: impl Fn(usize) + wgpu::WasmNotSync,
) -> Result<(), BackendError> {
    let guarded = |i: usize| -> Result<(), Box<dyn std::any::Any + Send>> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| piece(i)))
    };
    #[cfg(not(target_arch = "wasm32"))]
    if pieces > 1 {
        if let Some(pool) = pool() {
            let extra = pieces - 1;
            let queued = QUEUED.fetch_add(extra, Ordering::AcqRel);
            if queued + extra <= MAX_QUEUED {
                let failed = std::sync::Mutex::new(None);
                pool.in_place_scope(|s| {
                    for i in 1..pieces {
                        let (guarded, failed) = (&guarded, &failed);
                        s.spawn(move |_| {
                            if let Err(p) = guarded(i) {
                                if let Ok(mut f) = failed.lock() {
                                    f.get_or_insert(p);
                                }
                            }
                        });
                    }
                    if let Err(p) = guarded(0) {
                        if let Ok(mut f) = failed.lock() {
                            f.get_or_insert(p);
                        }
                    }
                });
                QUEUED.fetch_sub(extra, Ordering::AcqRel);
                return match failed.into_inner() {
                    Ok(None) => Ok(()),
                    Ok(Some(p)) => resume_or_bug(p),
                    Err(_) => Err(BackendError::Bug("a copy worker's result was lost")),
                };
            }
            QUEUED.fetch_sub(extra, Ordering::AcqRel);
        }
    }
    for i in 0..pieces {
        if let Err(p) = guarded(i) {
            return resume_or_bug(p);
        }
    }
    Ok(())
}

/// Runs `f` on the pool without waiting for it: work whose result nobody
/// waits for, such as releasing a large mapping (a file loader's `munmap`
/// costs milliseconds). On this thread when there is no pool. A panic in
/// `f` is caught and dropped (rayon would abort the process). Not on
/// `wasm32`, whose loads map no file.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn detach(f: impl FnOnce() + Send + 'static) {
    let guarded = move || {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    };
    if let Some(pool) = pool() {
        pool.spawn(guarded);
        return;
    }
    guarded();
}

/// A panic payload marked as the caller's own (from a closure the caller
/// passed): re-raised. Any other panic is hurray's bug.
pub(crate) struct CallerPanic(pub(crate) Box<dyn std::any::Any + Send>);

fn resume_or_bug(p: Box<dyn std::any::Any + Send>) -> Result<(), BackendError> {
    match p.downcast::<CallerPanic>() {
        Ok(caller) => std::panic::resume_unwind(caller.0),
        Err(_) => Err(BackendError::Bug("a copy worker panicked")),
    }
}

/// Runs a caller's closure inside a piece: its panic is tagged so that
/// [`run`] re-raises it on the calling thread instead of calling it a bug.
pub(crate) fn caller<R>(f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => std::panic::panic_any(CallerPanic(p)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn detached_work_runs_once_and_a_panic_in_it_is_contained() {
        let (tx, rx) = std::sync::mpsc::channel();
        detach(|| panic!("contained"));
        detach(move || tx.send(7).unwrap());
        assert_eq!(
            rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap(),
            7
        );
    }

    #[test]
    fn every_piece_runs_once() {
        let hits: Vec<AtomicUsize> = (0..10).map(|_| AtomicUsize::new(0)).collect();
        run(10, |i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_panicking_piece_is_a_bug_error_not_a_panic() {
        let r = run(4, |i| assert!(i != 2, "injected worker panic"));
        assert_eq!(r, Err(BackendError::Bug("a copy worker panicked")));
        // The pool still works afterwards.
        run(4, |_| ()).unwrap();
    }

    #[test]
    fn a_caller_closure_panic_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            let _ = run(4, |i| caller(|| assert!(i != 3, "the caller's own panic")));
        });
        let payload = r.unwrap_err();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(msg.contains("the caller's own panic"), "{msg}");
    }
}
