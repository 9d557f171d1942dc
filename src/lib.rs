//! # hurray (package `hurray-rs`)
//!
//! Describe and move tensor buffers between firmware, accelerator hosts and
//! desktop GPU code.
//!
//! This facade re-exports [`hurray_core`] at its root: the 16-byte buffer
//! handle, the tensor descriptor and their zero-copy views, usable in
//! `no_std` firmware without an allocator.
//!
//! Features (additive: any combination builds, `--all-features` included):
//! * `defmt` — `defmt::Format` for every public type of the core.
//! * `std` — `From<hurray::Error> for std::io::Error`.
//! * `gpu` — the wgpu-backed `gpu` module, [`hurray_gpu`](https://docs.rs/hurray-rs-gpu)
//!   (implies `std`).
//!
//! ```
//! use hurray::{BufferHandle, DeviceTag, SyncMode};
//!
//! let handle = BufferHandle::new(1024, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?;
//! assert_eq!(BufferHandle::from_bytes(&handle.to_bytes())?, handle);
//! # Ok::<(), hurray::Error>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use hurray_core::*;

/// GPU buffers on wgpu: the [`hurray_gpu`] crate (feature `gpu`).
#[cfg(feature = "gpu")]
pub use hurray_gpu as gpu;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
