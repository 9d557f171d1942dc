//! Any bytes through our strict reader and the format's reference decoder
//! (registry `hurray-core` 0.1.0, as `reference`): where we accept, the
//! reference accepts with every field equal; where only the reference
//! accepts, our rejection is one of the documented cases where we are
//! stricter (`Stricter`, each naming the MUST it enforces). Anything else
//! is a finding, and a crash. The harness is `tests/differential/mod.rs`,
//! shared with the cross-decoding test (`tests/cross_decode.rs`).
//!
//! Seeds (CI): `fuzz/corpus/descriptor`, our conformance corpus
//! `tests/conformance/descriptors` and the shared public vectors
//! `../shared/conformance/descriptors`.
#![no_main]

#[path = "../../tests/differential/mod.rs"]
#[allow(dead_code)] // `Stricter::ALL` and `requirements` serve the tests
mod differential;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(finding) = differential::differ(data) {
        panic!("{finding}");
    }
});
