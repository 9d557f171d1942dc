//! # hurray-rs-interop (library `hurray_interop`)
//!
//! hurray tensors as DLPack 1.x managed tensors and as Arrow C Device
//! `fixed_shape_tensor` arrays, and back: zero-copy, with the ownership
//! rules of both protocols kept exactly.
//!
//! `hurray_core` describes memory but never holds a pointer; this crate is
//! where a descriptor meets an address. It is the only crate with the raw
//! `#[repr(C)]` interchange structs ([`dlpack::ffi`], [`arrow::ffi`],
//! mirroring the vendored upstream headers in `include/vendor/`) and the
//! `unsafe` that reads them; every block argues its case in a `// SAFETY:`
//! comment.
//!
//! ## Contract
//!
//! * **Exports** are safe functions: they validate the hurray view, refuse
//!   what the protocol cannot express with an [`ExportError`], and never
//!   dereference the data address they are given. The protocol object owns
//!   a caller-supplied *owner* that keeps the memory alive and is dropped
//!   exactly once, by the deleter / last release callback.
//! * **Imports** are `unsafe fn`s whose contract is the protocol's own
//!   (pointers are what the protocol says they are); every field *value* may
//!   be hostile and yields an [`ImportError`], never a panic or undefined
//!   behaviour. An import takes ownership in every case: on error the
//!   producer's deleter has run; on success it runs when the [`Imported`]
//!   is dropped. Imports allocate nothing: the descriptor is written into
//!   the caller's buffer ([`DescriptorBuf`], [`MAX_DESCRIPTOR_LEN`] bytes).
//! * An imported descriptor is what `TensorView::parse` accepts, so
//!   everything downstream reads one kind of value.
//!
//! ```
//! use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
//! use hurray_interop::{dlpack, DescriptorBuf, ImportOptions};
//!
//! #[repr(align(64))]
//! struct Block([u8; 64]);
//! let block = Box::new(Block([7; 64]));
//! let handles = [BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
//! let mut bytes = [0u8; 128];
//! let n = TensorDescriptor::row_major(ElementType::UInt8, &[8, 8], &handles).encode(&mut bytes)?;
//! let view = TensorView::parse(&bytes[..n])?;
//!
//! // Export (the Box is the owner), then import as any consumer would.
//! let data = block.0.as_ptr().cast_mut().cast();
//! let managed = dlpack::export_versioned(&view, data, block, &Default::default())?;
//! let mut buf = DescriptorBuf::new();
//! // SAFETY: a managed tensor we own, from a well-behaved producer.
//! let imported = unsafe { dlpack::import_versioned(managed.into_raw(), buf.as_mut_slice(), &ImportOptions::DEFAULT)? };
//! assert_eq!(imported.view().element_count(), Some(64));
//! assert!(imported.is_read_only());
//! drop(imported); // calls the deleter, which drops the Box
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
// Producer values never reach an `unwrap`, `expect` or `panic!` (tests may).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod arrow;
mod describe;
pub mod dlpack;
mod error;
mod imported;

pub use describe::{DescriptorBuf, MAX_DESCRIPTOR_LEN, MAX_NDIM, PrivateDevice, describe_strided};
pub use error::{ExportError, ImportError};
pub use imported::{ImportOptions, Imported, ProducerGuard, ProducerKind};
