//! # hurray-rs-cli (library `hurray_cli`, binary `hurray`)
//!
//! The logic of the `hurray` command, which reads hurray tensor
//! descriptors, streams and `.hrry` files (told apart by their first bytes,
//! [`input`]) and shows, lists, checks or extracts what they hold. The
//! binary (`src/main.rs`) parses the command line and maps results to exit
//! statuses; everything it prints is built here, so the workspace's tests
//! check the same code.
//!
//! `convert` turns a safetensors file into a `.hrry` file; `load` (feature
//! `gpu`, off by default so the default command stays free of wgpu) loads
//! a file onto the GPU and reports the rate.
//!
//! Nothing here panics on any input bytes: every decoder used is the
//! core's (typed errors with byte offsets), and this crate adds only
//! reading, hashing and printing. [`net`] holds `serve`, `get` and `put`,
//! thin shells over `hurray-rs-net`.

pub mod container;
pub mod convert;
pub mod descriptor;
pub mod input;
#[cfg(feature = "gpu")]
pub mod load;
pub mod net;
pub mod progress;
