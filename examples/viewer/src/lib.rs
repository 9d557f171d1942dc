//! # hurray-viewer: hurray files, streams and descriptors in the browser
//!
//! The page (`www/`) does the I/O: it reads `Blob.slice`s of the user's
//! file and hands them to these functions, which decode them with
//! `hurray_core` and answer in JSON (hand-written: the shapes are small and
//! fixed). Drawing runs on the browser's WebGPU through `hurray_gpu`
//! ([`draw`]): upload through `GpuBufferHandle`, one WGSL kernel that
//! decodes the element type, dequantizes, reduces min/max and maps colours,
//! and an async readback.
//!
//! ## Contract
//!
//! * Every function accepts **any** bytes: a broken input comes back as
//!   `{"error": {"kind", "offset", "text"}}` with the absolute byte offset,
//!   never as a panic (the release build aborts on panic, which would kill
//!   the page; nothing here indexes or unwraps on input-derived values).
//! * Nothing is allocated by a size read from the input before the core has
//!   validated it; the page bounds what it reads (see `www/viewer.js`).
//! * A file is opened from its header, trailer, index and KV section
//!   ([`file_plan`], [`file_index`]), then one descriptor per tensor
//!   ([`describe`]): no data byte is read until a tensor is drawn. Files
//!   the page reads whole (small ones) are also checked in full by
//!   [`FileView`](hurray_core::file::FileView) ([`verify_file`]).
//!
//! The host build (not wasm32) has only the pure functions, for the
//! fixture writer (`src/bin/viewer-fixtures.rs`) and tests.

pub mod decode;
pub mod json;
pub mod quant;
#[cfg(target_arch = "wasm32")]
mod web;

pub use decode::{describe, file_index, file_plan, stream_feed, verify_file};
pub use quant::{DrawPlan, Quant, cpu_min_max, draw_plan, window};
