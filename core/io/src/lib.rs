//! # hurray-rs-io (library `hurray_io`)
//!
//! std I/O for hurray-rs, a thin shell over the `no_std` core:
//!
//! * [`file`](mod@file) — `.hrry` files by path: opened through a memory map and
//!   validated by the core's [`FileIndex`](hurray_core::file::FileIndex) /
//!   [`FileView`](hurray_core::file::FileView) (with the CPU's CRC-32C
//!   instructions and an O(log n) name table), and written by the core's
//!   [`FileWriter`](hurray_core::file::FileWriter) under a temporary name,
//!   synced, then renamed, so a crash never leaves a torn file under the
//!   final name.
#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod file;
