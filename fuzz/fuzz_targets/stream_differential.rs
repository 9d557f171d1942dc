//! Any bytes as a stream through our decoder and the reference's
//! `StreamReader` (registry `hurray-io` 0.1.0, as `reference_io`): every
//! tensor both finish is equal field by field and byte for byte; where
//! only the reference accepts, our rejection is a documented case
//! (`StreamStricter`). Anything else is a finding, and a crash. The harness
//! is `tests/differential/stream.rs`, shared with `tests/stream_cross.rs`.
#![no_main]

#[path = "../../tests/differential/mod.rs"]
#[allow(dead_code)]
mod differential;

#[path = "../../tests/differential/stream.rs"]
#[allow(dead_code)]
mod stream_diff;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(finding) = stream_diff::stream_differ(data) {
        panic!("{finding}");
    }
});
