//! Helpers shared by the root package's integration tests.

use std::io::Write as _;
use std::path::PathBuf;

/// The repository root.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The manifest of the shared conformance corpus: `HURRAY_CONFORMANCE_DIR`
/// (a directory holding `manifest.json`, or the manifest itself), else
/// `../shared/conformance/manifest.json` beside the repository.
///
/// `None` (after printing `SKIPPED <test>: …`) when there is none, which is
/// an error — a panic — when `HURRAY_REQUIRE_CONFORMANCE=1` (CI) or when
/// `HURRAY_CONFORMANCE_DIR` names a place without one.
pub(crate) fn shared_manifest(test: &str) -> Option<PathBuf> {
    let (manifest, from_env) = match std::env::var_os("HURRAY_CONFORMANCE_DIR") {
        Some(d) => {
            let p = PathBuf::from(d);
            (
                if p.is_file() {
                    p
                } else {
                    p.join("manifest.json")
                },
                true,
            )
        }
        None => (root().join("../shared/conformance/manifest.json"), false),
    };
    if manifest.is_file() {
        return Some(manifest);
    }
    let required = std::env::var_os("HURRAY_REQUIRE_CONFORMANCE").is_some_and(|v| v == "1");
    assert!(
        !required && !from_env,
        "conformance manifest {} not found (HURRAY_REQUIRE_CONFORMANCE=1 or \
         HURRAY_CONFORMANCE_DIR set)",
        manifest.display()
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: no conformance manifest at {}",
        manifest.display()
    );
    None
}
