//! What an import returns: the validated view, the buffer's address, and a
//! guard that hands the tensor back to its producer exactly once.

use core::ffi::c_void;
use core::ptr;

use hurray_core::{SyncMode, TensorView};

use crate::arrow::ffi::{ArrowDeviceArray, ArrowSchema};
use crate::describe::PrivateDevice;
use crate::dlpack::ffi::{DLManagedTensor, DLManagedTensorVersioned};

/// How an import builds its buffer handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions<'a> {
    /// The sync mode to declare for memory that is not CPU memory: what the
    /// caller arranged with the producer. DLPack's Python protocol
    /// (`__dlpack__(stream=…)`) orders the producer's work before the
    /// consumer's stream ([`SyncMode::ConsumerStream`]); a producer that
    /// synchronised before handing over gives [`SyncMode::ProducerSynced`]
    /// (the default). CPU memory is always `ProducerSynced`; an Arrow array
    /// with a `sync_event` is always `Event`.
    pub device_sync: SyncMode,
    /// Device codes the caller maps to private hurray tags.
    pub private_devices: &'a [PrivateDevice],
}

impl ImportOptions<'static> {
    /// `ProducerSynced`, no private devices.
    pub const DEFAULT: Self = Self {
        device_sync: SyncMode::ProducerSynced,
        private_devices: &[],
    };
}

impl Default for ImportOptions<'_> {
    fn default() -> Self {
        ImportOptions::DEFAULT
    }
}

/// Which protocol object a [`ProducerGuard`] hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ProducerKind {
    /// A `DLManagedTensorVersioned` (its deleter).
    DlpackVersioned = 1,
    /// A legacy `DLManagedTensor` (its deleter).
    DlpackLegacy = 2,
    /// An `ArrowDeviceArray` and its `ArrowSchema` (both release callbacks).
    Arrow = 3,
}

/// Owns an imported protocol object; dropping it calls the producer's
/// deleter (DLPack) or release callbacks (Arrow) exactly once.
#[derive(Debug)]
pub struct ProducerGuard {
    kind: ProducerKind,
    object: *mut c_void,
    schema: *mut c_void,
}

impl ProducerGuard {
    /// A guard over a DLPack or Arrow object.
    ///
    /// # Safety
    /// `object` (and, for [`ProducerKind::Arrow`], `schema`) is null or
    /// points to an object of the kind's type that the caller owns, whose
    /// `deleter`/`release` field is null or may be called once with it, and
    /// that stays valid until then. Nobody else calls that deleter.
    #[must_use]
    pub const unsafe fn new(kind: ProducerKind, object: *mut c_void, schema: *mut c_void) -> Self {
        Self {
            kind,
            object,
            schema,
        }
    }

    /// The kind of object.
    #[must_use]
    pub const fn kind(&self) -> ProducerKind {
        self.kind
    }

    /// The managed tensor or Arrow device array.
    #[must_use]
    pub const fn object(&self) -> *mut c_void {
        self.object
    }

    /// The Arrow schema (null for DLPack).
    #[must_use]
    pub const fn schema(&self) -> *mut c_void {
        self.schema
    }

    /// Gives up ownership without calling anything: the caller becomes
    /// responsible for the deleter (for example a C caller, through
    /// [`ProducerGuard::new`] and a later drop).
    #[must_use]
    pub fn into_raw(self) -> (ProducerKind, *mut c_void, *mut c_void) {
        let parts = (self.kind, self.object, self.schema);
        core::mem::forget(self);
        parts
    }

    /// Calls the deleter / release callbacks now (what dropping does).
    pub fn release(mut self) {
        self.release_in_place();
    }

    fn release_in_place(&mut self) {
        let object = core::mem::replace(&mut self.object, ptr::null_mut());
        let schema = core::mem::replace(&mut self.schema, ptr::null_mut());
        match self.kind {
            ProducerKind::DlpackVersioned => {
                let m = object.cast::<DLManagedTensorVersioned>();
                if !m.is_null() {
                    // SAFETY: `new`'s contract: `m` points to a versioned
                    // managed tensor we own. Its `deleter` field sits at the
                    // same offset in every DLPack 1.x and later layout (the
                    // header promises the fields up to `flags` stay put), so
                    // reading it is valid whatever the major version. It is
                    // read once and called once: `object` was nulled above.
                    unsafe {
                        if let Some(deleter) = ptr::addr_of!((*m).deleter).read() {
                            deleter(m);
                        }
                    }
                }
            }
            ProducerKind::DlpackLegacy => {
                let m = object.cast::<DLManagedTensor>();
                if !m.is_null() {
                    // SAFETY: `new`'s contract: `m` points to a legacy managed
                    // tensor we own; its deleter is called once (`object`
                    // was nulled above, so a second release finds null).
                    unsafe {
                        if let Some(deleter) = ptr::addr_of!((*m).deleter).read() {
                            deleter(m);
                        }
                    }
                }
            }
            ProducerKind::Arrow => {
                let a = object.cast::<ArrowDeviceArray>();
                if !a.is_null() {
                    // SAFETY: `new`'s contract: `a` points to a device array
                    // we own. The Arrow spec's release protocol: call
                    // `release` if it is not null; the callback marks the
                    // struct released by nulling it. We null it ourselves as
                    // well, so a misbehaving producer is not called twice.
                    unsafe {
                        let release = ptr::addr_of_mut!((*a).array.release);
                        if let Some(f) = release.read() {
                            f(ptr::addr_of_mut!((*a).array));
                            release.write(None);
                        }
                    }
                }
                let s = schema.cast::<ArrowSchema>();
                if !s.is_null() {
                    // SAFETY: as for the array: a schema we own, released
                    // once and marked released.
                    unsafe {
                        let release = ptr::addr_of_mut!((*s).release);
                        if let Some(f) = release.read() {
                            f(s);
                            release.write(None);
                        }
                    }
                }
            }
        }
    }
}

impl Drop for ProducerGuard {
    fn drop(&mut self) {
        self.release_in_place();
    }
}

/// A tensor imported from DLPack or Arrow: a validated hurray descriptor
/// (in the caller's buffer), the address of its buffer 0, and the guard
/// that returns the tensor to its producer when this value is dropped.
///
/// Nothing here dereferences the data: the addresses are for the caller,
/// who reads or writes them on the device the descriptor names, and only
/// while this value lives (writing only if [`is_read_only`](Self::is_read_only)
/// is false).
#[derive(Debug)]
pub struct Imported<'d> {
    pub(crate) view: TensorView<'d>,
    pub(crate) base: *mut c_void,
    pub(crate) device_id: i64,
    pub(crate) read_only: bool,
    pub(crate) sync_event: *mut c_void,
    pub(crate) guard: ProducerGuard,
}

impl<'d> Imported<'d> {
    /// The validated descriptor.
    #[must_use]
    pub const fn view(&self) -> &TensorView<'d> {
        &self.view
    }

    /// The descriptor's bytes (what `TensorView::parse` accepts).
    #[must_use]
    pub const fn descriptor(&self) -> &'d [u8] {
        self.view.as_bytes()
    }

    /// The base address of buffer 0 (see `describe` for how it is chosen;
    /// it may lie up to 63 bytes below the first addressed byte, which is
    /// never addressed).
    #[must_use]
    pub const fn base(&self) -> *mut c_void {
        self.base
    }

    /// The address of element `[0, …, 0]`: `base + byte_offset`.
    #[must_use]
    pub fn first_element(&self) -> *mut c_void {
        // `byte_offset` is at most the buffer's byte_size, which the
        // producer's memory covers, so the sum stays within it; wrapping
        // arithmetic keeps the pointer's provenance without a bounds claim.
        self.base
            .wrapping_byte_add(usize::try_from(self.view.byte_offset()).unwrap_or(0))
    }

    /// The producer's device ordinal (DLPack `device_id`, Arrow
    /// `device_id`; Arrow uses -1 for "no device" on the CPU).
    #[must_use]
    pub const fn device_id(&self) -> i64 {
        self.device_id
    }

    /// Whether the producer forbade writes (DLPack
    /// `DLPACK_FLAG_BITMASK_READ_ONLY`; the legacy form and Arrow have no
    /// flag and are reported read-only: hurray's default for shared
    /// buffers).
    #[must_use]
    pub const fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Arrow's `sync_event` (null for DLPack and for producer-synced data).
    #[must_use]
    pub const fn sync_event(&self) -> *mut c_void {
        self.sync_event
    }

    /// The guard, for callers that keep the tensor past this value (a C
    /// caller); dropping it releases the producer's tensor.
    #[must_use]
    pub fn into_guard(self) -> ProducerGuard {
        self.guard
    }
}
