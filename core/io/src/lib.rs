//! # hurray-rs-io (library `hurray_io`)
//!
//! The std layer of hurray: thin shells that move bytes between the
//! operating system and the sans-I/O machines of
//! [`hurray_core`] — no format rule lives here.
//!
//! * [`stream`] — read a hurray stream from any [`std::io::Read`] as events
//!   (a bounded input buffer, data handed out as slices of it), and write
//!   one to any [`std::io::Write`]; with the `tokio` feature, the same over
//!   `AsyncRead` / `AsyncWrite`.
//!
//! Every check is the core's: what a shell adds is the I/O, the buffers it
//! owns (sized once, never by the input) and the conversion of errors to
//! [`std::io::Error`] for callers that want one.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod stream;
