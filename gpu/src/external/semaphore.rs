//! Timeline semaphores shared as file descriptors (Linux, Vulkan
//! `VK_KHR_external_semaphore_fd` + timeline semaphores): the `Event` sync
//! mode of a shared buffer. This file holds **every** `unsafe` of that
//! feature, each block argued where it stands (ADR-117).
//!
//! ## What it does
//!
//! * A [`Timeline`] is one `VkSemaphore` of type `TIMELINE`, created
//!   exportable as an opaque fd ([`Timeline::exportable`]) or imported from
//!   a peer's fd ([`Timeline::import`]). [`Timeline::export_fd`] hands a new
//!   fd for it (the payload is shared by reference: every fd, every import,
//!   CUDA's `cudaImportExternalSemaphore` included, is the same semaphore).
//! * [`Timeline::signal`] makes the semaphore reach a new value once every
//!   piece of work submitted to the queue *before the call* has completed,
//!   **without waiting on the host**: the signal is staged on wgpu-hal's queue
//!   (`Queue::add_signal_semaphore`) and an empty `Queue::submit` carries it.
//!   Vulkan defines the first synchronization scope of a semaphore signal made
//!   by `vkQueueSubmit` as every command of its batch **and every command
//!   earlier in submission order** on that queue, so the value is reached
//!   exactly when the work that wrote the buffer (submitted before) is done,
//!   and no later work is waited for.
//! * [`Timeline::wait`] makes every piece of work submitted *after the call*
//!   wait, on the GPU, until the semaphore reaches a value: the wait is staged
//!   (`Queue::add_wait_semaphore`, all stages) and carried by a submission
//!   whose one command buffer holds a global memory barrier (all commands,
//!   all memory writes → all reads and writes). The wait's second scope holds
//!   the barrier; the barrier's second scope holds every later command in
//!   submission order; so the chain reaches all later work, whatever wgpu
//!   records in it (the canonical "wait, then barrier" chain of Vulkan's
//!   synchronization examples).
//!
//! ## Why wgpu's own staging lists, not a `vkQueueSubmit` of ours
//!
//! `vkQueueSubmit` needs the `VkQueue` externally synchronized, and wgpu-core
//! holds its own locks (not reachable from outside) around its submissions:
//! a submit of ours could race one of wgpu's, which is undefined behaviour.
//! wgpu-hal's staged semaphores are consumed *inside* wgpu's next submission,
//! under wgpu's locks. Should another thread's submission take a staged
//! operation first, it still lies between the call and ours in submission
//! order: a signal on it still follows all the earlier work; a wait on it
//! gates that submission and everything after it ("later in submission
//! order" for a `vkQueueSubmit` wait), ours included.
//!
//! ## Ownership and lifetime
//!
//! A `Timeline` keeps a clone of the `wgpu::Device`, so the `VkDevice` it was
//! made on outlives it. Dropping it waits (bounded, [`exec::wait_for`]) for the
//! last wgpu submission that signalled or waited on it, then destroys the
//! semaphore: Vulkan forbids destroying a semaphore a pending batch uses. If
//! that wait fails (device lost, or a peer that never signals, so the queue
//! never gets there), the semaphore is leaked, never destroyed under a
//! pending batch. Other processes' imports hold the payload by themselves.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::{Mutex, PoisonError};

use ash::vk;
use wgpu::hal::api::Vulkan;

use super::error::{ShareError, Unsupported};
use crate::exec;

/// The extension this file needs (wgpu-hal does not enable it).
pub(crate) const EXTENSION: &CStr = ash::khr::external_semaphore_fd::NAME;
/// The one handle type: an opaque POSIX file descriptor.
const HANDLE: vk::ExternalSemaphoreHandleTypeFlags =
    vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD;

/// Whether `adapter` lists `VK_KHR_external_semaphore_fd` (Vulkan only).
pub(crate) fn adapter_supports(adapter: &wgpu::Adapter) -> bool {
    // SAFETY: `as_hal` asks that the adapter not be destroyed through the
    // guard; it is only read (one extension lookup) and dropped at once.
    let hal = unsafe { adapter.as_hal::<Vulkan>() };
    hal.is_some_and(|a| {
        a.physical_device_capabilities()
            .supports_extension(EXTENSION)
    })
}

/// The Vulkan objects a timeline needs, copied out of a wgpu device.
struct Raw {
    raw: ash::Device,
    fd_fns: ash::khr::external_semaphore_fd::Device,
}

/// Checks that `device` can export and import timeline semaphores as opaque
/// fds: Vulkan, the extension enabled, Vulkan 1.2 with the
/// `timelineSemaphore` feature (which wgpu-hal enables wherever it exists),
/// and the driver's external semaphore properties.
fn raw_of(device: &wgpu::Device) -> Result<Raw, ShareError> {
    let (instance, api, raw, physical) = {
        // SAFETY: the guard is only read (handles and tables copied out) and
        // dropped at the end of this block; nothing is destroyed through it.
        let hal = unsafe { device.as_hal::<Vulkan>() };
        let Some(hal) = hal else {
            return Err(Unsupported::Backend(device.adapter_info().backend).into());
        };
        if !hal.enabled_device_extensions().contains(&EXTENSION) {
            return Err(Unsupported::Extension("VK_KHR_external_semaphore_fd").into());
        }
        let shared = hal.shared_instance();
        (
            shared.raw_instance().clone(),
            shared.instance_api_version(),
            hal.raw_device().clone(),
            hal.raw_physical_device(),
        )
    };
    // SAFETY: `physical` is `instance`'s (both from the same live wgpu-hal
    // device); the call only writes the returned struct.
    let props = unsafe { instance.get_physical_device_properties(physical) };
    if api < vk::API_VERSION_1_2 || props.api_version < vk::API_VERSION_1_2 {
        return Err(Unsupported::VulkanVersion {
            instance: api,
            device: props.api_version,
        }
        .into());
    }
    let mut timeline = vk::PhysicalDeviceTimelineSemaphoreFeatures::default();
    let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut timeline);
    // SAFETY: Vulkan 1.2 on instance and device (checked above) makes
    // `vkGetPhysicalDeviceFeatures2` core and the timeline features struct a
    // valid core member of its chain; both live on this frame.
    unsafe { instance.get_physical_device_features2(physical, &mut features) };
    if timeline.timeline_semaphore != vk::TRUE {
        return Err(Unsupported::Extension("timelineSemaphore").into());
    }
    let mut kind =
        vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
    let info = vk::PhysicalDeviceExternalSemaphoreInfo::default()
        .handle_type(HANDLE)
        .push_next(&mut kind);
    let mut out = vk::ExternalSemaphoreProperties::default();
    // SAFETY: a core 1.1 query (1.2 checked above) on this instance's
    // physical device; `SemaphoreTypeCreateInfo` is a valid (core 1.2)
    // member of its input chain; all structs live on this frame.
    unsafe {
        instance.get_physical_device_external_semaphore_properties(physical, &info, &mut out);
    };
    let need = vk::ExternalSemaphoreFeatureFlags::EXPORTABLE
        | vk::ExternalSemaphoreFeatureFlags::IMPORTABLE;
    if !out.external_semaphore_features.contains(need)
        || !out.compatible_handle_types.contains(HANDLE)
    {
        return Err(Unsupported::SemaphoreHandleType {
            features: out.external_semaphore_features.as_raw(),
        }
        .into());
    }
    let fd_fns = ash::khr::external_semaphore_fd::Device::new(&instance, &raw);
    Ok(Raw { raw, fd_fns })
}

/// Whether `device` can share timeline semaphores (see [`raw_of`]).
///
/// # Errors
/// [`ShareError::Unsupported`] naming what is missing.
pub(crate) fn check(device: &wgpu::Device) -> Result<(), ShareError> {
    raw_of(device).map(|_| ())
}

/// The `VkResult` of a failed call as a [`ShareError`].
fn vk_error(call: &'static str) -> impl Fn(vk::Result) -> ShareError {
    move |r| ShareError::Vulkan {
        call,
        result: r.as_raw(),
    }
}

/// What was last done with a timeline on this device.
#[derive(Debug, Default)]
struct State {
    /// The highest value signalled or waited for here: the next signal goes
    /// above it (timeline values only grow).
    value: u64,
    /// The last wgpu submission that carried a signal or wait of it.
    last: Option<wgpu::SubmissionIndex>,
}

/// One timeline semaphore of a wgpu device, shareable as an opaque fd.
pub(crate) struct Timeline {
    device: wgpu::Device,
    raw: ash::Device,
    fd_fns: ash::khr::external_semaphore_fd::Device,
    semaphore: vk::Semaphore,
    state: Mutex<State>,
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeline")
            .field("semaphore", &self.semaphore)
            .finish_non_exhaustive()
    }
}

impl Timeline {
    /// A new timeline semaphore (value 0) on `device`, created exportable as
    /// an opaque fd.
    ///
    /// # Errors
    /// [`ShareError::Unsupported`] when the device cannot share timeline
    /// semaphores, [`ShareError::Vulkan`] when the driver refuses.
    pub(crate) fn exportable(device: &wgpu::Device) -> Result<Self, ShareError> {
        let r = raw_of(device)?;
        let mut export = vk::ExportSemaphoreCreateInfo::default().handle_types(HANDLE);
        let semaphore = create(&r, Some(&mut export))?;
        Ok(Self::wrap(device, r, semaphore))
    }

    /// Imports `fd`, a timeline semaphore a peer exported as an opaque fd, on
    /// `device`. The fd is consumed: the driver owns it on success, it is
    /// closed on failure.
    ///
    /// # Errors
    /// As [`exportable`](Self::exportable); [`ShareError::Vulkan`]
    /// (`vkImportSemaphoreFdKHR`) when the fd is no timeline semaphore the
    /// driver accepts.
    pub(crate) fn import(device: &wgpu::Device, fd: OwnedFd) -> Result<Self, ShareError> {
        let r = raw_of(device)?;
        let semaphore = create(&r, None)?;
        let info = vk::ImportSemaphoreFdInfoKHR::default()
            .semaphore(semaphore)
            .handle_type(HANDLE)
            .fd(fd.as_raw_fd());
        // SAFETY: `semaphore` was just created on this device with the
        // timeline type and is used by no batch; the extension is enabled
        // (`raw_of`), so the function is loaded; `fd` is open (owned here)
        // through the call. A fd that is no compatible semaphore payload is
        // the driver's to refuse (`VK_ERROR_INVALID_EXTERNAL_HANDLE`).
        match unsafe { r.fd_fns.import_semaphore_fd(&info) } {
            Ok(()) => {
                // Vulkan: a successful import from a file descriptor moves
                // its ownership to the driver; it must not be closed here.
                let _ = fd.into_raw_fd();
                Ok(Self::wrap(device, r, semaphore))
            }
            Err(e) => {
                drop(fd);
                // SAFETY: created just above on this device, used by no
                // batch (the import failed), destroyed once.
                unsafe { r.raw.destroy_semaphore(semaphore, None) };
                Err(vk_error("vkImportSemaphoreFdKHR")(e))
            }
        }
    }

    fn wrap(device: &wgpu::Device, r: Raw, semaphore: vk::Semaphore) -> Self {
        Self {
            device: device.clone(),
            raw: r.raw,
            fd_fns: r.fd_fns,
            semaphore,
            state: Mutex::new(State::default()),
        }
    }

    /// A new fd for the semaphore (the caller owns it).
    ///
    /// # Errors
    /// [`ShareError::Vulkan`] when the driver refuses (an imported semaphore
    /// whose payload cannot be exported again, for one).
    pub(crate) fn export_fd(&self) -> Result<OwnedFd, ShareError> {
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(self.semaphore)
            .handle_type(HANDLE);
        // SAFETY: the semaphore is live (owned by `self`) and on this
        // device; the extension is enabled (`raw_of`). Opaque fds have
        // reference transference, so exporting has no effect on the payload
        // and needs no pending signal (Vulkan's `vkGetSemaphoreFdKHR` rules
        // on pending signals concern copy transference only). A driver that
        // cannot export this payload answers an error.
        let fd = unsafe { self.fd_fns.get_semaphore_fd(&info) }
            .map_err(vk_error("vkGetSemaphoreFdKHR"))?;
        if fd < 0 {
            return Err(vk_error("vkGetSemaphoreFdKHR")(
                vk::Result::ERROR_INVALID_EXTERNAL_HANDLE,
            ));
        }
        // SAFETY: on success `vkGetSemaphoreFdKHR` returns a new file
        // descriptor that the application owns and must close.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The highest value signalled or waited for on this device.
    pub(crate) fn value(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .value
    }

    /// Has the semaphore reach a new value, returned, when every piece of
    /// work submitted to `queue` before this call has completed. Never waits
    /// on the host.
    ///
    /// # Errors
    /// [`ShareError::Unsupported`] for a queue that is not a Vulkan one.
    pub(crate) fn signal(&self, queue: &wgpu::Queue) -> Result<u64, ShareError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let value = state
            .value
            .checked_add(1)
            .ok_or(crate::ApiMisuse::Overflow)?;
        {
            // SAFETY: the guard is only used to stage one signal (wgpu-hal
            // consumes it in the next submission, under wgpu's own queue
            // locks) and dropped at the end of this block; the raw queue is
            // not destroyed. The semaphore is a timeline semaphore of this
            // queue's device (`queue` is checked by the callers to be the
            // device's), and `value` exceeds every value signalled or waited
            // for here, so the staged signal is a valid timeline signal.
            let hal = unsafe { queue.as_hal::<Vulkan>() };
            let Some(hal) = hal else {
                return Err(Unsupported::Backend(self.device.adapter_info().backend).into());
            };
            hal.add_signal_semaphore(self.semaphore, Some(value));
        }
        // Held `state` through the submit: two signals of one timeline go
        // to the queue in the order of their values.
        let index = queue.submit([]);
        state.value = value;
        state.last = Some(index);
        Ok(value)
    }

    /// Makes every piece of work submitted to `queue` after this call wait,
    /// on the GPU, until the semaphore reaches `value`. Never waits on the
    /// host.
    ///
    /// # Errors
    /// [`ShareError::Unsupported`] for a queue that is not a Vulkan one.
    pub(crate) fn wait(&self, queue: &wgpu::Queue, value: u64) -> Result<(), ShareError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        {
            // SAFETY: as in `signal`: the guard only stages one wait, which
            // wgpu-hal puts on its next submission under its own locks.
            let hal = unsafe { queue.as_hal::<Vulkan>() };
            let Some(hal) = hal else {
                return Err(Unsupported::Backend(self.device.adapter_info().backend).into());
            };
            hal.add_wait_semaphore(
                self.semaphore,
                Some(value),
                vk::PipelineStageFlags::ALL_COMMANDS,
            );
        }
        let barrier = self.barrier();
        let index = queue.submit([barrier]);
        state.value = state.value.max(value);
        state.last = Some(index);
        Ok(())
    }

    /// A command buffer holding one global memory barrier: all commands
    /// before it, all their writes → all commands after it, all accesses.
    fn barrier(&self) -> wgpu::CommandBuffer {
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("hurray semaphore wait barrier"),
            });
        let raw = &self.raw;
        // SAFETY: `as_hal_mut` hands the open hal encoder of this (empty)
        // wgpu encoder; one pipeline barrier is recorded into its live
        // command buffer, referencing no resource (a global memory barrier
        // with core stage and access flags), and wgpu records nothing else
        // into this encoder. `raw` is the device the encoder belongs to.
        unsafe {
            encoder.as_hal_mut::<Vulkan, _, _>(|enc| {
                if let Some(enc) = enc {
                    let barrier = vk::MemoryBarrier::default()
                        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
                        .dst_access_mask(
                            vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
                        );
                    raw.cmd_pipeline_barrier(
                        enc.raw_handle(),
                        vk::PipelineStageFlags::ALL_COMMANDS,
                        vk::PipelineStageFlags::ALL_COMMANDS,
                        vk::DependencyFlags::empty(),
                        &[barrier],
                        &[],
                        &[],
                    );
                }
            });
        }
        encoder.finish()
    }
}

/// A timeline semaphore (value 0) on `r`'s device, with `export` chained.
fn create(
    r: &Raw,
    export: Option<&mut vk::ExportSemaphoreCreateInfo<'_>>,
) -> Result<vk::Semaphore, ShareError> {
    let mut kind = vk::SemaphoreTypeCreateInfo::default()
        .semaphore_type(vk::SemaphoreType::TIMELINE)
        .initial_value(0);
    let mut info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
    if let Some(export) = export {
        info = info.push_next(export);
    }
    // SAFETY: a live device (`raw_of`) with Vulkan 1.2 and the
    // `timelineSemaphore` feature (checked there; wgpu-hal enables it where
    // it exists); the chain holds core 1.2 / 1.1 structs (the type; the
    // export of a handle type the driver reported exportable for timeline
    // semaphores), all alive through the call.
    unsafe { r.raw.create_semaphore(&info, None) }.map_err(vk_error("vkCreateSemaphore"))
}

impl Drop for Timeline {
    fn drop(&mut self) {
        let last = self
            .state
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .last
            .take();
        if let Some(index) = last {
            if exec::wait_for(&self.device, index).is_err() {
                // A batch may still use it: leaking is sound, destroying
                // would not be.
                return;
            }
        }
        // SAFETY: the semaphore was created on `raw` (kept alive by
        // `self.device`) and is owned by `self` alone; every wgpu submission
        // that carried a signal or wait of it is `last` or earlier, and has
        // completed (waited for just above), so no pending batch uses it.
        unsafe { self.raw.destroy_semaphore(self.semaphore, None) };
    }
}
