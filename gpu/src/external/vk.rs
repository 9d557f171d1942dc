//! The Vulkan calls of external memory (`ash`), and nothing else: the
//! Vulkan objects behind a wgpu device, the buffers and memory hurray
//! allocates or imports outside wgpu's allocator, and their hand-over to
//! wgpu.
//!
//! Each `unsafe` block argues its own soundness from what is in sight. The
//! safe functions here rely on no caller for soundness; the one function
//! whose soundness needs something of its caller, [`Vk::hand_to_wgpu`], is
//! an `unsafe fn` with a `# Safety` section.
//!
//! ## Ownership
//!
//! * A [`Vk`] borrows the wgpu device it was taken from, so the Vulkan device,
//!   physical device and instance handles it copies stay valid while it
//!   lives (wgpu destroys them only with the last `wgpu::Device`).
//! * An [`Allocation`] owns a `VkBuffer` bound to a `VkDeviceMemory` until
//!   [`Vk::hand_to_wgpu`] moves both into wgpu (which destroys the buffer and
//!   frees the memory when the wgpu buffer is destroyed); dropped before
//!   that, it destroys and frees them itself.
//! * An imported file descriptor belongs to the driver once
//!   `vkAllocateMemory` succeeds with it (Vulkan's rule for
//!   `VkImportMemoryFdInfoKHR`); on failure it is still ours and is closed.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};

use ash::vk;
use wgpu::hal::api::Vulkan;

use super::error::{DeviceIdentity, MessageError, ShareError, Unsupported};

/// The one handle type sharing uses: an opaque POSIX file descriptor.
const HANDLE: vk::ExternalMemoryHandleTypeFlags = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;

/// The Vulkan usage of every shared buffer: exactly what wgpu-hal maps
/// [`super::SHARED_USAGE`] (`STORAGE | COPY_SRC | COPY_DST`) to, so that
/// the buffer supports every use wgpu makes of it.
const VK_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw(),
);

/// The Vulkan objects behind one wgpu device.
pub(super) struct Vk<'a> {
    device: &'a wgpu::Device,
    instance: ash::Instance,
    raw: ash::Device,
    physical: vk::PhysicalDevice,
    fd_fns: ash::khr::external_memory_fd::Device,
    /// The physical device's `deviceUUID` and `driverUUID`.
    pub(super) identity: DeviceIdentity,
}

/// A buffer and the memory bound to it, owned until [`Vk::hand_to_wgpu`].
pub(super) struct Allocation<'v, 'a> {
    vk: &'v Vk<'a>,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// The buffer's size.
    pub(super) size: u64,
    /// The memory's `allocationSize`.
    pub(super) allocation_size: u64,
    /// The memory's type index.
    pub(super) memory_type_index: u32,
}

impl Drop for Allocation<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: `buffer` and `memory` were created on `vk.raw` by
        // `Vk::allocate`/`Vk::import`, are owned by this value alone (they
        // were never handed to wgpu: `hand_to_wgpu` forgets the value after
        // moving them), and no GPU work uses them (only wgpu submits work,
        // and it never saw them). Destroying the buffer before freeing its
        // memory is the order Vulkan requires.
        unsafe {
            self.vk.raw.destroy_buffer(self.buffer, None);
            self.vk.raw.free_memory(self.memory, None);
        }
    }
}

/// The `VkResult` of a failed call as a [`ShareError`].
fn vk_error(call: &'static str) -> impl Fn(vk::Result) -> ShareError {
    move |r| ShareError::Vulkan {
        call,
        result: r.as_raw(),
    }
}

impl<'a> Vk<'a> {
    /// The Vulkan objects of `device`, checked for what sharing needs: the
    /// Vulkan backend, Vulkan 1.1 on instance and device, and
    /// `VK_KHR_external_memory_fd` enabled on the device.
    pub(super) fn of(device: &'a wgpu::Device) -> Result<Self, ShareError> {
        let (instance, api, raw, physical, enabled) = {
            // SAFETY: `as_hal` asks that the returned device not be
            // destroyed while wgpu uses it and that wgpu-hal's rules be
            // kept: the guard is only read here (handles and function
            // tables are copied out) and dropped at the end of this block;
            // nothing is destroyed.
            let hal = unsafe { device.as_hal::<Vulkan>() };
            let Some(hal) = hal else {
                return Err(Unsupported::Backend(device.adapter_info().backend).into());
            };
            let shared = hal.shared_instance();
            let enabled = hal
                .enabled_device_extensions()
                .contains(&ash::khr::external_memory_fd::NAME);
            (
                shared.raw_instance().clone(),
                shared.instance_api_version(),
                hal.raw_device().clone(),
                hal.raw_physical_device(),
                enabled,
            )
        };
        if !enabled {
            return Err(Unsupported::Extension("VK_KHR_external_memory_fd").into());
        }
        // SAFETY: `physical` is the physical device of `instance` (both
        // from the same wgpu-hal device, alive while `device` is); the call
        // only writes the returned struct.
        let props = unsafe { instance.get_physical_device_properties(physical) };
        if api < vk::API_VERSION_1_1 || props.api_version < vk::API_VERSION_1_1 {
            return Err(Unsupported::VulkanVersion {
                instance: api,
                device: props.api_version,
            }
            .into());
        }
        let mut ids = vk::PhysicalDeviceIDProperties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut ids);
        // SAFETY: Vulkan 1.1 on instance and device (checked above) makes
        // `vkGetPhysicalDeviceProperties2` a loaded core function, and
        // `PhysicalDeviceIDProperties` a valid core extension of its output
        // chain; both structs live on this stack frame through the call.
        unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
        let identity = DeviceIdentity {
            device_uuid: ids.device_uuid,
            driver_uuid: ids.driver_uuid,
        };
        let fd_fns = ash::khr::external_memory_fd::Device::new(&instance, &raw);
        Ok(Self {
            device,
            instance,
            raw,
            physical,
            fd_fns,
            identity,
        })
    }

    /// Checks that the driver can export (or import) storage buffers as
    /// opaque file descriptors.
    fn check_handle_type(&self, need: vk::ExternalMemoryFeatureFlags) -> Result<(), ShareError> {
        let info = vk::PhysicalDeviceExternalBufferInfo::default()
            .usage(VK_USAGE)
            .handle_type(HANDLE);
        let mut props = vk::ExternalBufferProperties::default();
        // SAFETY: a core Vulkan 1.1 function (version checked in `of`) on
        // this instance's physical device; `info` and `props` are valid,
        // chain-free structs on this frame.
        unsafe {
            self.instance
                .get_physical_device_external_buffer_properties(self.physical, &info, &mut props);
        };
        let features = props.external_memory_properties.external_memory_features;
        let types = props.external_memory_properties.compatible_handle_types;
        if features.contains(need) && types.contains(HANDLE) {
            Ok(())
        } else {
            Err(Unsupported::HandleType {
                features: features.as_raw(),
            }
            .into())
        }
    }

    /// A `VkBuffer` of `size` bytes that may be bound to opaque-fd memory,
    /// and its memory requirements.
    ///
    /// # Errors
    /// [`Unsupported::Empty`] for `size` 0 (Vulkan forbids empty buffers),
    /// [`ShareError::Vulkan`] when the driver refuses.
    fn create_buffer(&self, size: u64) -> Result<(vk::Buffer, vk::MemoryRequirements), ShareError> {
        if size == 0 {
            return Err(Unsupported::Empty.into());
        }
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(HANDLE);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(VK_USAGE)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: `raw` is a live device (see `Vk`); `info` is a valid create
        // info (non-zero size, checked just above; a core 1.1 extension
        // struct in its chain) living through the call.
        let buffer =
            unsafe { self.raw.create_buffer(&info, None) }.map_err(vk_error("vkCreateBuffer"))?;
        // SAFETY: `buffer` was just created on `raw` and is not destroyed.
        let requirements = unsafe { self.raw.get_buffer_memory_requirements(buffer) };
        Ok((buffer, requirements))
    }

    /// The size and memory types a shared buffer of `size` bytes requires.
    #[cfg(test)]
    pub(super) fn requirements(&self, size: u64) -> Result<(u64, u32), ShareError> {
        let (buffer, req) = self.create_buffer(size)?;
        self.destroy_buffer(buffer);
        Ok((req.size, req.memory_type_bits))
    }

    /// Destroys a buffer [`create_buffer`](Self::create_buffer) made, on a
    /// path where no memory was bound to it.
    fn destroy_buffer(&self, buffer: vk::Buffer) {
        // SAFETY: `buffer` was created on `raw` by `create_buffer`, is owned
        // by the caller alone, and no work ever used it.
        unsafe { self.raw.destroy_buffer(buffer, None) };
    }

    /// The memory types of the physical device.
    fn memory_properties(&self) -> vk::PhysicalDeviceMemoryProperties {
        // SAFETY: a core 1.0 query on this instance's physical device.
        unsafe {
            self.instance
                .get_physical_device_memory_properties(self.physical)
        }
    }

    /// Allocates and binds `size` bytes of device-local memory that can be
    /// exported as an opaque fd, as a dedicated allocation.
    pub(super) fn allocate(&self, size: u64) -> Result<Allocation<'_, 'a>, ShareError> {
        self.check_handle_type(vk::ExternalMemoryFeatureFlags::EXPORTABLE)?;
        let (buffer, req) = self.create_buffer(size)?;
        let Some(memory_type_index) =
            pick_memory_type(&self.memory_properties(), req.memory_type_bits)
        else {
            self.destroy_buffer(buffer);
            return Err(ShareError::MemoryType {
                index: u32::MAX,
                allowed: req.memory_type_bits,
            });
        };
        let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(HANDLE);
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let info = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(memory_type_index)
            .push_next(&mut export)
            .push_next(&mut dedicated);
        // SAFETY: a live device; `info` names a memory type the buffer
        // allows (from its requirements) at the size it requires, chains
        // two core 1.1 structs (export of a handle type the driver reported
        // exportable for this usage; dedicated to `buffer`, created on this
        // device), all alive through the call.
        let memory = match unsafe { self.raw.allocate_memory(&info, None) } {
            Ok(m) => m,
            Err(e) => {
                self.destroy_buffer(buffer);
                return Err(vk_error("vkAllocateMemory")(e));
            }
        };
        self.bind(buffer, memory, size, req.size, memory_type_index)
    }

    /// Binds `memory` to `buffer`; the result owns both (and on failure
    /// destroys both).
    fn bind(
        &self,
        buffer: vk::Buffer,
        memory: vk::DeviceMemory,
        size: u64,
        allocation_size: u64,
        memory_type_index: u32,
    ) -> Result<Allocation<'_, 'a>, ShareError> {
        let allocation = Allocation {
            vk: self,
            buffer,
            memory,
            size,
            allocation_size,
            memory_type_index,
        };
        // SAFETY: `buffer` has no memory bound yet; `memory` is a dedicated
        // allocation for it of at least its required size, from a type its
        // requirements allow (checked by both callers), bound at offset 0.
        unsafe { self.raw.bind_buffer_memory(buffer, memory, 0) }
            .map_err(vk_error("vkBindBufferMemory"))?;
        Ok(allocation)
    }

    /// A new file descriptor for `allocation`'s memory (the caller owns it).
    pub(super) fn export_fd(&self, allocation: &Allocation<'_, '_>) -> Result<OwnedFd, ShareError> {
        let info = vk::MemoryGetFdInfoKHR::default()
            .memory(allocation.memory)
            .handle_type(HANDLE);
        // SAFETY: `memory` is live (owned by `allocation`, which is
        // borrowed) and was allocated on this device with
        // `ExportMemoryAllocateInfo` naming `HANDLE`, which is what
        // `vkGetMemoryFdKHR` requires; the extension is enabled (checked in
        // `of`), so its function pointer is loaded.
        let fd =
            unsafe { self.fd_fns.get_memory_fd(&info) }.map_err(vk_error("vkGetMemoryFdKHR"))?;
        if fd < 0 {
            return Err(vk_error("vkGetMemoryFdKHR")(
                vk::Result::ERROR_INVALID_EXTERNAL_HANDLE,
            ));
        }
        // SAFETY: on success `vkGetMemoryFdKHR` returns a new file
        // descriptor that the application owns and must close; nothing else
        // holds it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Imports `fd` as the memory of a new buffer of `size` bytes. The fd is
    /// consumed: the driver owns it on success, it is closed on failure.
    pub(super) fn import(
        &self,
        fd: OwnedFd,
        size: u64,
        allocation_size: u64,
        memory_type_index: u32,
        dedicated: bool,
    ) -> Result<Allocation<'_, 'a>, ShareError> {
        self.check_handle_type(vk::ExternalMemoryFeatureFlags::IMPORTABLE)?;
        let (buffer, req) = self.create_buffer(size)?;
        if req.size > allocation_size {
            self.destroy_buffer(buffer);
            return Err(MessageError::BufferLargerThanAllocation {
                buffer: req.size,
                allocation: allocation_size,
            }
            .into());
        }
        let count = self.memory_properties().memory_type_count;
        let allowed = 1u32
            .checked_shl(memory_type_index)
            .is_some_and(|bit| memory_type_index < count && req.memory_type_bits & bit != 0);
        if !allowed {
            self.destroy_buffer(buffer);
            return Err(ShareError::MemoryType {
                index: memory_type_index,
                allowed: req.memory_type_bits,
            });
        }
        let mut import = vk::ImportMemoryFdInfoKHR::default()
            .handle_type(HANDLE)
            .fd(fd.as_raw_fd());
        let mut dedicated_info = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let mut info = vk::MemoryAllocateInfo::default()
            .allocation_size(allocation_size)
            .memory_type_index(memory_type_index)
            .push_next(&mut import);
        if dedicated {
            info = info.push_next(&mut dedicated_info);
        }
        // SAFETY: a live device; `info` imports an fd we own (open until the
        // call returns) as `HANDLE`, which the driver reported importable
        // for this usage, into a memory type the buffer allows, at a size no
        // smaller than the buffer needs; the dedicated struct (when the
        // producer's allocation was dedicated) names `buffer`, created on
        // this device with the same usage and size as the exporter's. Any
        // disagreement with the payload (another size or type) is the
        // driver's to refuse with `VK_ERROR_INVALID_EXTERNAL_HANDLE`; the
        // sizes a hostile peer can state were also checked against the fd
        // where the kernel knows its size (`SharedBuffer::recv`), which
        // makes refusals typed but is not needed for soundness. Every struct
        // lives through the call.
        let memory = match unsafe { self.raw.allocate_memory(&info, None) } {
            Ok(m) => {
                // Vulkan: a successful import transfers the fd's ownership
                // to the driver; it must not be closed here.
                let _ = fd.into_raw_fd();
                m
            }
            Err(e) => {
                drop(fd);
                self.destroy_buffer(buffer);
                return Err(vk_error("vkAllocateMemory")(e));
            }
        };
        self.bind(buffer, memory, size, allocation_size, memory_type_index)
    }

    /// Hands `allocation` to wgpu as a buffer of its size with
    /// [`SHARED_USAGE`](super::SHARED_USAGE), labelled `label`.
    ///
    /// # Safety
    /// wgpu takes the buffer as initialised and never clears it. The caller
    /// must make sure no GPU work reads the buffer before its contents are
    /// defined: memory imported from a producer holds the producer's data;
    /// a fresh allocation must be cleared (`clear_buffer`) in the first
    /// submission that uses it.
    pub(super) unsafe fn hand_to_wgpu(
        &self,
        allocation: Allocation<'_, '_>,
        label: &'static str,
    ) -> wgpu::Buffer {
        let (buffer, memory, size) = (allocation.buffer, allocation.memory, allocation.size);
        // wgpu owns them from here: `Allocation::drop` must not free them.
        std::mem::forget(allocation);
        let desc = wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: super::SHARED_USAGE,
            mapped_at_creation: false,
        };
        // SAFETY: `from_raw_managed` asks that wgpu may use the buffer and
        // the memory range as its own until it destroys them — they are
        // moved here and nothing else keeps them (the value owning them was
        // just forgotten) — that `offset..offset + size` lies in the
        // allocation — 0..size, bound at offset 0 to memory of at least
        // the buffer's required size (`bind`) — and that the buffer is not
        // mapped by wgpu — `desc.usage` (`SHARED_USAGE`) has no MAP flag.
        let hal = unsafe { wgpu::hal::vulkan::Buffer::from_raw_managed(buffer, memory, 0, size) };
        // SAFETY: `create_buffer_from_hal` asks that the hal buffer come from
        // this device (`raw` is `self.device`'s), respect `desc` (its size
        // is the buffer's; `SHARED_USAGE` is what wgpu-hal maps to
        // `VK_USAGE`, the usage `create_buffer` gave it; not mapped at
        // creation), be initialised (this function's `# Safety`: nothing
        // reads it before its contents are defined), and not be empty
        // (`size > 0`: an `Allocation` is only made over a buffer
        // `create_buffer` made, which refuses 0).
        unsafe { self.device.create_buffer_from_hal::<Vulkan>(hal, &desc) }
    }
}

/// The memory type for an exported buffer: device-local and not
/// host-visible if there is one, else device-local, else any allowed one.
fn pick_memory_type(props: &vk::PhysicalDeviceMemoryProperties, allowed: u32) -> Option<u32> {
    let count = props.memory_type_count.min(vk::MAX_MEMORY_TYPES as u32);
    let types: Vec<(u32, vk::MemoryPropertyFlags)> = props
        .memory_types
        .iter()
        .zip(0..count)
        .filter(|(_, i)| allowed & (1 << i) != 0)
        .map(|(t, i)| (i, t.property_flags))
        .collect();
    let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE;
    types
        .iter()
        .find(|(_, f)| f.contains(local) && !f.contains(host))
        .or_else(|| types.iter().find(|(_, f)| f.contains(local)))
        .or_else(|| types.first())
        .map(|(i, _)| *i)
}
