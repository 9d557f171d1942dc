//! Whether a GPU test can run on this machine: the one place that decides,
//! for every GPU test of the workspace (integration tests include it as
//! `common::gate`, unit tests and the facade's tests by `#[path]`).
//!
//! A test asks for what it needs — an adapter, an adapter that can share
//! memory, a second device — by handing the probe's result to [`need`]. When
//! the probe failed, the test prints `SKIPPED <test>: <why>` past the test
//! harness's capture and returns, so `cargo test --workspace` passes on a
//! machine without a Vulkan driver (wgpu then takes GL, or finds nothing).
//! With `HURRAY_REQUIRE_GPU=1` (CI on lavapipe, the H200 runs) a missing
//! capability fails the test instead: there every GPU test must run.
// `pub` for the integration tests, which reach it through `common::gate`;
// the unit tests and the facade include it privately.
#![allow(dead_code, unreachable_pub)]

use std::fmt::Display;
use std::io::Write;

/// Whether `HURRAY_REQUIRE_GPU=1` makes a missing capability a failure.
pub fn required() -> bool {
    std::env::var_os("HURRAY_REQUIRE_GPU").is_some_and(|v| v == "1")
}

/// `Some(value)` when the probe succeeded; otherwise [`skip`] with the
/// probe's error (whose text says what is missing: "no GPU adapter: …",
/// "sharing unsupported: …") and `None`.
pub fn need<T, E: Display>(test: &str, probe: Result<T, E>) -> Option<T> {
    match probe {
        Ok(v) => Some(v),
        Err(why) => {
            skip(test, &why);
            None
        }
    }
}

/// As [`need`], but only an error for which `missing` holds means the
/// capability is absent; any other error is a real failure and fails the test.
///
/// # Panics
/// On an error that is not `missing`, and as [`skip`].
pub fn need_if<T, E: Display>(
    test: &str,
    probe: Result<T, E>,
    missing: impl FnOnce(&E) -> bool,
) -> Option<T> {
    match probe {
        Err(e) if !missing(&e) => panic!("{test}: the capability probe failed: {e}"),
        probe => need(test, probe),
    }
}

/// Prints `SKIPPED <test>: <why>` on standard error, or panics when
/// `HURRAY_REQUIRE_GPU=1`.
///
/// # Panics
/// When `HURRAY_REQUIRE_GPU=1`: the capability is then required.
pub fn skip(test: &str, why: &dyn Display) {
    assert!(!required(), "{test}: HURRAY_REQUIRE_GPU=1 but {why}");
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}
