//! # hurray-rs-core (library `hurray_core`)
//!
//! The wire format of the hurray tensor format (github.com/pgillet/hurray),
//! read and written without `std`, an allocator or `unsafe`: the 16-byte
//! *buffer handle* that declares a buffer's size, alignment, device, sync
//! mode and memory class, and the *tensor descriptor* (`"HRRY"`) that
//! describes a tensor — element type, shape, layout, buffer table and
//! optional quantization, shard, statistics, extension type and composite
//! member sections.
//!
//! Every byte layout is a [`zerocopy`] struct whose size and field offsets
//! are asserted at compile time; handle validation is `const fn`.
//!
//! ## Contract of the decoders
//!
//! * [`BufferHandle::from_bytes`], [`BufferTable::parse`] and
//!   [`TensorView::parse`] accept **any** byte slice. They never panic,
//!   never allocate, never read out of bounds, and return a typed error that
//!   names the offending value (and, in a descriptor, the byte offset of the
//!   field at fault).
//! * They are stricter than the format's reference reader: every MUST of the
//!   spec that can be checked from the descriptor is checked
//!   (`docs/spec/README.md` lists where and why).
//! * After a decoder returns `Ok`, every accessor of the returned value is
//!   infallible and panic-free: the whole input has been validated once.
//! * The encoders ([`BufferHandle::to_bytes`], [`TensorDescriptor::encode`],
//!   [`DescriptorBuilder`]) only emit bytes that the decoders accept, and
//!   decoding then re-encoding an accepted input reproduces it byte for byte.
//!
//! The normative rules live in `docs/spec/`; each MUST there has a test
//! named after its identifier.
//!
//! ```
//! use hurray_core::{BufferHandle, DeviceTag, SyncMode, MIN_BUFFER_ALIGNMENT};
//!
//! // A handle can be built and checked at compile time...
//! const WEIGHTS: BufferHandle = match BufferHandle::new(
//!     4096, MIN_BUFFER_ALIGNMENT, DeviceTag::Cuda, SyncMode::Event,
//! ) {
//!     Ok(h) => h,
//!     Err(_) => panic!("invalid handle"),
//! };
//! // ...encoded into its 16 wire bytes, and decoded back.
//! let bytes = WEIGHTS.to_bytes();
//! assert_eq!(BufferHandle::from_bytes(&bytes), Ok(WEIGHTS));
//! assert_eq!(bytes[12], 0x01); // CUDA is device tag 0x01 in the hurray format
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// docs.rs: a badge naming the feature on every feature-gated item.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Untrusted bytes never reach an `unwrap`, an `expect`, a slice index or a
// `panic!` in library code (tests may use them freely).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]
#![warn(clippy::cast_possible_truncation)]
// House style #5: const and #[must_use] wherever they can be.
#![warn(clippy::missing_const_for_fn, clippy::must_use_candidate)]

#[cfg(feature = "std")]
extern crate std;

mod builder;
mod codes;
mod composite;
mod data;
#[cfg(feature = "defmt")]
mod defmt_impls;
mod descriptor;
mod element;
mod error;
pub mod field;
pub mod file;
mod handle;
pub mod interop;
pub mod net;
pub mod stream;
mod table;

pub use builder::{BuilderLayout, DescriptorBuilder};
pub use codes::{DeviceTag, MemoryClass, PRIVATE_FIRST, PRIVATE_LAST, SyncMode, is_private_code};
pub use composite::{
    CompositeError, CompositeErrorKind, CompositeValidator, MAX_COMPOSITE_DEPTH, read_composite,
};
pub use data::{DataError, DataErrorKind, validate_contents};
pub use descriptor::{
    Buffers, DESCRIPTOR_MAGIC, DYNAMIC, DimValues, Dims, ExtensionType, ExtensionTypeEntry, Field,
    FieldPath, FixedHeader, Flags, HEADER_LEN, Layout, LayoutSpec, MAX_RANK, MemberFields,
    MemberRole, NO_BUFFER, Quantization, ReadOptions, Scheme, Shard, Statistics, StatisticsEntry,
    StrideValues, Strides, TensorDescriptor, TensorView, VERSION_MAJOR, VERSION_MINOR, Values,
    ValuesIter, WordValues, Words,
};
pub use descriptor::{layout, quantization};
pub use element::{ElementType, Packing};
pub use error::{
    DescriptorError, DescriptorErrorKind, EncodeError, Error, FieldName, Quantity, Result,
};
pub use handle::{BufferHandle, BufferHandleEntry, ENTRY_LEN};
pub use table::{BufferTable, Iter};

/// Copies `src` into `dst` at `at` when it fits (it does wherever it is
/// called). The slice written is taken exactly `src.len()` long, so the
/// optimizer sees the lengths agree and `copy_from_slice` keeps no panic
/// path (the link-time proof checks this).
#[inline]
pub(crate) fn copy_at(dst: &mut [u8], at: usize, src: &[u8]) {
    if let Some(d) = dst.get_mut(at..).and_then(|d| d.get_mut(..src.len())) {
        d.copy_from_slice(src);
    }
}

/// The minimum alignment, in bytes, of a non-empty buffer's base address.
///
/// 64 bytes covers a cache line and the widest SIMD load of every supported
/// host (AVX-512), so a reader may use aligned vector loads on any non-empty
/// buffer. See `docs/spec/buffer-protocol.md` § Alignment.
///
/// ```
/// assert_eq!(hurray_core::MIN_BUFFER_ALIGNMENT, 64);
/// ```
pub const MIN_BUFFER_ALIGNMENT: u32 = 64;

/// A 4 KiB page alignment: the usual choice for buffers that are mapped,
/// pinned or shared with a device.
///
/// ```
/// assert_eq!(hurray_core::PAGE_ALIGNMENT, 4096);
/// ```
pub const PAGE_ALIGNMENT: u32 = 4096;
