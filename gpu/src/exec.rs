//! Waiting for the GPU without blocking, and the blocking driver built on it.
//!
//! ## Contract
//!
//! * The async engine never blocks on the GPU: it awaits [`Receiver`]s that
//!   wgpu callbacks (map callbacks) fill. Those callbacks run inside
//!   `Device::poll` (native) or from the browser's event loop (WebGPU), so an
//!   async caller must have the device polled — see the crate docs.
//! * [`block_on`] runs such a future on the calling thread and drives the
//!   device itself: it spins on `poll(Poll)` for up to [`SPIN`] (a few tens of
//!   µs are typical for a small transfer; a sleeping wait would cost another
//!   ~25 µs of wake-up on the H200), then waits in slices of [`WAIT_SLICE`],
//!   for at most [`WAIT_LIMIT`] in all ([`BackendError::PollTimeout`]).
//! * No call here waits on a device that is lost: a wait on a submission the
//!   device dropped returns at once (`WrongSubmissionIndex`), and
//!   [`is_lost`] probes with a zero timeout. A panic inside `Device::poll`
//!   (wgpu panics on fatal device errors) becomes [`BackendError::DeviceLost`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::BackendError;

/// How long [`block_on`] spins on `poll(Poll)` before it sleeps in the driver.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const SPIN: Duration = Duration::from_micros(200);
/// One sleeping wait of [`block_on`] (then it checks its deadline).
#[cfg(not(target_arch = "wasm32"))]
const WAIT_SLICE: Duration = Duration::from_millis(100);
/// The longest [`block_on`] waits for one GPU event.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// A one-shot slot shared by a [`Sender`] and a [`Receiver`].
struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    closed: bool,
}

type Shared<T> = Arc<Mutex<Slot<T>>>;

fn lock<T>(s: &Shared<T>) -> MutexGuard<'_, Slot<T>> {
    // Each critical section moves one value or waker: poisoning cannot leave
    // the slot inconsistent.
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The sending half: a wgpu callback owns it.
pub(crate) struct Sender<T>(Shared<T>);

/// The receiving half: resolves to the sent value, or `None` when the sender
/// was dropped without sending.
pub(crate) struct Receiver<T> {
    slot: Shared<T>,
    /// The submission whose completion delivers the value, for [`block_on`].
    hint: Option<wgpu::SubmissionIndex>,
}

/// A fresh one-shot channel; `hint` is the submission that will deliver it.
pub(crate) fn oneshot<T>(hint: Option<wgpu::SubmissionIndex>) -> (Sender<T>, Receiver<T>) {
    let slot = Arc::new(Mutex::new(Slot {
        value: None,
        waker: None,
        closed: false,
    }));
    (Sender(Arc::clone(&slot)), Receiver { slot, hint })
}

impl<T> Sender<T> {
    /// Delivers `value` and wakes the receiver.
    pub(crate) fn send(self, value: T) {
        let waker = {
            let mut s = lock(&self.0);
            s.value = Some(value);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut s = lock(&self.0);
            s.closed = true;
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Receiver<T> {
    /// Sets the submission that delivers the value (known only after submit).
    pub(crate) fn set_hint(&mut self, hint: wgpu::SubmissionIndex) {
        self.hint = Some(hint);
    }
}

impl<T> Future for Receiver<T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut s = lock(&self.slot);
        if let Some(v) = s.value.take() {
            return Poll::Ready(Some(v));
        }
        if s.closed {
            return Poll::Ready(None);
        }
        s.waker = Some(cx.waker().clone());
        drop(s);
        WAIT_FOR.with(|w| w.set(self.hint.clone()));
        Poll::Pending
    }
}

thread_local! {
    /// The submission the last pending [`Receiver`] polled on this thread
    /// waits for: [`block_on`] waits on exactly that one.
    static WAIT_FOR: std::cell::Cell<Option<wgpu::SubmissionIndex>> =
        const { std::cell::Cell::new(None) };
}

/// Runs `f` inside validation, out-of-memory and internal error scopes;
/// awaits their results (ready at once on native backends).
pub(crate) async fn scoped<R>(
    device: &wgpu::Device,
    f: impl FnOnce() -> R,
) -> Result<R, BackendError> {
    // The guards are not `Send`: they are pushed and popped in this block,
    // and only the (sendable) results are awaited.
    let (out, pops) = {
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        (out, [validation.pop(), oom.pop(), internal.pop()])
    };
    for pop in pops {
        if let Some(e) = pop.await {
            return Err(e.into());
        }
    }
    Ok(out)
}

/// [`scoped`] for synchronous callers. On native backends the scopes' results
/// are ready at once; on the browser's WebGPU they arrive later and are not
/// reported here (the async forms report them): `f` has run, so its result
/// is returned.
pub(crate) fn scoped_now<R>(
    device: &wgpu::Device,
    f: impl FnOnce() -> R,
) -> Result<R, BackendError> {
    let (out, pops) = {
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        (out, [validation.pop(), oom.pop(), internal.pop()])
    };
    for pop in pops {
        let mut pop = std::pin::pin!(pop);
        // Pending only on WebGPU, whose scopes answer through a promise.
        if let Poll::Ready(Some(e)) = pop.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            return Err(e.into());
        }
    }
    Ok(out)
}

/// `device.poll(ty)`, with a lost device and a panic inside wgpu reported as
/// [`BackendError::DeviceLost`] and a timeout as [`BackendError::PollTimeout`].
pub(crate) fn poll(device: &wgpu::Device, ty: wgpu::PollType) -> Result<(), BackendError> {
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device.poll(ty)));
    match polled {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(wgpu::PollError::Timeout)) => Err(BackendError::PollTimeout),
        // wgpu drops work on a lost or destroyed device silently (as WebGPU
        // specifies); a wait on such a submission is how that shows.
        Ok(Err(wgpu::PollError::WrongSubmissionIndex(..))) => Err(BackendError::DeviceLost(
            "the device dropped a submission (lost or destroyed)".into(),
        )),
        Err(_) => Err(BackendError::DeviceLost(
            "wgpu panicked in Device::poll (a fatal device error)".into(),
        )),
    }
}

/// Whether `device` is lost: an empty submission, then a wait on it with a
/// zero timeout (a lost device refuses the index at once). Never blocks.
pub(crate) fn is_lost(device: &wgpu::Device, queue: &wgpu::Queue) -> bool {
    let Ok(index) = scoped_now(device, || queue.submit([])) else {
        return false;
    };
    matches!(
        poll(
            device,
            wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: Some(Duration::ZERO),
            }
        ),
        Err(BackendError::DeviceLost(_))
    )
}

/// `error`, or [`BackendError::DeviceLost`] when it came from the backend and
/// the device turns out to be lost (wgpu reports work on a lost device as
/// validation or map failures of "invalid" objects).
pub(crate) fn lost_or(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    error: BackendError,
) -> BackendError {
    match error {
        BackendError::Wgpu(_) | BackendError::Map(_) if is_lost(device, queue) => {
            BackendError::DeviceLost(error.to_string())
        }
        _ => error,
    }
}

/// Resolves once all work submitted to `device` has completed.
///
/// With the device's `queue`: an empty submission, then
/// `Queue::on_submitted_work_done`, whose callback (delivered by a poll of
/// the device) resolves it. Without one: each time the future is polled it
/// polls the device without blocking and, until its queue is empty, asks to
/// be polled again.
pub(crate) async fn idle(
    device: &wgpu::Device,
    queue: Option<&wgpu::Queue>,
) -> Result<(), BackendError> {
    let Some(queue) = queue else {
        return std::future::poll_fn(|cx| {
            let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                device.poll(wgpu::PollType::Poll)
            }));
            match polled {
                Ok(Ok(status)) if status.is_queue_empty() => Poll::Ready(Ok(())),
                Ok(Ok(_)) => {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
                Ok(Err(_)) | Err(_) => Poll::Ready(Err(BackendError::DeviceLost(
                    "the device failed a poll (lost or destroyed)".into(),
                ))),
            }
        })
        .await;
    };
    let (tx, mut rx) = oneshot(None);
    let index = scoped(device, || {
        let index = queue.submit([]);
        queue.on_submitted_work_done(move || tx.send(()));
        index
    })
    .await?;
    rx.set_hint(index);
    rx.await
        .ok_or_else(|| BackendError::DeviceLost("the device dropped its queue's work".into()))
}

/// Runs `fut` to completion on this thread, driving `device` while it waits
/// (spin, then sleep in the driver). See the module docs.
///
/// # Errors
/// The future's own error, or [`BackendError::PollTimeout`] /
/// [`BackendError::DeviceLost`] from waiting. On the browser's WebGPU, which
/// cannot block, [`ApiMisuse::CannotBlock`](crate::ApiMisuse::CannotBlock)
/// unless the future completes without waiting.
pub(crate) fn block_on<T, E: From<BackendError>>(
    device: &wgpu::Device,
    fut: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let mut fut = std::pin::pin!(fut);
    let flag = Arc::new(Woken::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let mut deadline = None;
    loop {
        flag.reset();
        WAIT_FOR.with(std::cell::Cell::take);
        if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
            return r;
        }
        let hint = WAIT_FOR.with(std::cell::Cell::take);
        drive(device, &flag, hint, &mut deadline)?;
    }
}

/// Waits until the GPU has finished submission `index` of `device` (for
/// example the index a [`write`](crate::GpuBufferHandle::write) returned):
/// spins briefly on non-blocking polls, then sleeps in the driver, as the
/// blocking transfers do.
///
/// ```no_run
/// use hurray_gpu::{GpuBufferHandle, GpuContext, wgpu::BufferUsages};
///
/// let ctx = GpuContext::new()?;
/// let h = GpuBufferHandle::alloc(&ctx.device, 4, BufferUsages::COPY_DST)?;
/// let i = h.write(&ctx.device, &ctx.queue, 0, &[1, 2, 3, 4])?;
/// hurray_gpu::wait_for(&ctx.device, i)?; // the GPU holds the bytes now
/// # Ok::<(), hurray_gpu::BackendError>(())
/// ```
///
/// # Errors
/// [`BackendError::DeviceLost`] (also for an index the device never
/// accepted), [`BackendError::PollTimeout`] after 60 s; on the browser's
/// WebGPU, [`ApiMisuse::CannotBlock`](crate::ApiMisuse::CannotBlock).
#[cfg(not(target_arch = "wasm32"))]
pub fn wait_for(device: &wgpu::Device, index: wgpu::SubmissionIndex) -> Result<(), BackendError> {
    use std::time::Instant;
    let done = |timeout| match poll(
        device,
        wgpu::PollType::Wait {
            submission_index: Some(index.clone()),
            timeout: Some(timeout),
        },
    ) {
        Ok(()) => Ok(true),
        Err(BackendError::PollTimeout) => Ok(false),
        Err(e) => Err(e),
    };
    let start = Instant::now();
    while start.elapsed() < SPIN {
        if done(Duration::ZERO)? {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    while start.elapsed() < WAIT_LIMIT {
        if done(WAIT_SLICE)? {
            return Ok(());
        }
    }
    Err(BackendError::PollTimeout)
}

/// The browser's WebGPU cannot block.
///
/// # Errors
/// Always [`ApiMisuse::CannotBlock`](crate::ApiMisuse::CannotBlock).
#[cfg(target_arch = "wasm32")]
pub fn wait_for(_device: &wgpu::Device, _index: wgpu::SubmissionIndex) -> Result<(), BackendError> {
    Err(BackendError::ApiMisuse(crate::ApiMisuse::CannotBlock))
}

/// A waker that records that it was woken.
#[derive(Default)]
struct Woken(std::sync::atomic::AtomicBool);

impl Woken {
    fn reset(&self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
    #[cfg(not(target_arch = "wasm32"))]
    fn get(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl std::task::Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Polls `device` until `flag` is woken: spins, then waits on `hint` (or on
/// all submitted work) in slices.
#[cfg(not(target_arch = "wasm32"))]
fn drive(
    device: &wgpu::Device,
    flag: &Woken,
    hint: Option<wgpu::SubmissionIndex>,
    deadline: &mut Option<std::time::Instant>,
) -> Result<(), BackendError> {
    use std::time::Instant;
    let start = Instant::now();
    // Measured on the H200: a 4-byte round trip is ~25 µs spinning and
    // ~50 µs with a sleeping wait (`docs/impl/gpu-transfers.md`).
    while start.elapsed() < SPIN {
        poll(device, wgpu::PollType::Poll)?;
        if flag.get() {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    let deadline = *deadline.get_or_insert(start + WAIT_LIMIT);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(BackendError::PollTimeout);
        }
        match poll(
            device,
            wgpu::PollType::Wait {
                submission_index: hint.clone(),
                timeout: Some(left.min(WAIT_SLICE)),
            },
        ) {
            Ok(()) | Err(BackendError::PollTimeout) => {}
            Err(e) => return Err(e),
        }
        if flag.get() {
            return Ok(());
        }
        // The submission is done but its callback may be delivered by another
        // thread's poll that collected it: give that thread a moment.
        poll(device, wgpu::PollType::Poll)?;
        if flag.get() {
            return Ok(());
        }
        std::thread::yield_now();
    }
}

/// The browser's WebGPU cannot block: callbacks arrive from the event loop.
#[cfg(target_arch = "wasm32")]
fn drive(
    _device: &wgpu::Device,
    _flag: &Woken,
    _hint: Option<wgpu::SubmissionIndex>,
    _deadline: &mut Option<()>,
) -> Result<(), BackendError> {
    Err(BackendError::ApiMisuse(crate::ApiMisuse::CannotBlock))
}
