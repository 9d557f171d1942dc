//! # hurray-rs-io (library `hurray_io`)
//!
//! std I/O for hurray-rs, thin shells that move bytes between the
//! operating system and the `no_std` [`hurray_core`] — no format rule lives
//! here:
//!
//! * [`file`](mod@file) — `.hrry` files by path: opened through a memory map and
//!   validated by the core's [`FileIndex`](hurray_core::file::FileIndex) /
//!   [`FileView`](hurray_core::file::FileView) (with the CPU's CRC-32C
//!   instructions and an O(log n) name table), and written by the core's
//!   [`FileWriter`](hurray_core::file::FileWriter) under a temporary name,
//!   synced, then renamed, so a crash never leaves a torn file under the
//!   final name.
//! * [`stream`] — read a hurray stream from any [`std::io::Read`] as events
//!   (a bounded input buffer, data handed out as slices of it), and write
//!   one to any [`std::io::Write`]; with the `tokio` feature, the same over
//!   `AsyncRead` / `AsyncWrite`.
//!
//! Every check is the core's: what a shell adds is the I/O, the buffers it
//! owns (sized once, never by the input) and the conversion of errors to
//! [`std::io::Error`] for callers that want one.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod file;
pub mod stream;
