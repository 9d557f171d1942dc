//! Conformance: every descriptor of a conformance manifest decodes to the
//! properties under its `expect`, re-encodes to the same bytes, and the
//! `hurray inspect` command reports the same values. Our corpus' manifest also states
//! each descriptor's layout, quantization and statistics fields, written by
//! the generator from the values it built the vector with (not from the
//! encoder's bytes), and the decoded ones must hold them.
//!
//! * Our own corpus, `tests/conformance/` (written by
//!   `examples/write_vectors.rs`), always; and the committed copy must be
//!   exactly what the generator writes today.
//! * The public corpus' vectors in `../shared/conformance/` (relative to the
//!   repository root; `HURRAY_CONFORMANCE_DIR` overrides the directory, or
//!   names a manifest file) when present. When absent the test prints
//!   `SKIPPED shared_corpus_conforms: …`, unless `HURRAY_REQUIRE_CONFORMANCE=1`
//!   makes that a failure (CI sets it).

#[allow(dead_code, unreachable_pub)]
mod common;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../examples/write_vectors.rs"]
mod write_vectors;

// The `hurray` command's descriptor inspection (`hurray inspect`).
use hurray_cli::descriptor as inspect;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use hurray::layout::Layout;
use hurray::{
    BufferHandle, DescriptorBuilder, DescriptorErrorKind, DeviceTag, ElementType, EncodeError,
    MemoryClass, ReadOptions, SyncMode, TensorDescriptor, TensorView,
};
use write_vectors::{Expect, Manifest};

use common::root;

fn our_corpus() -> PathBuf {
    root().join("tests/conformance")
}

/// The expected properties of a view, read through the library's API.
fn expect_of(view: &TensorView<'_>) -> Expect {
    let (major, minor) = view.version();
    Expect {
        version_major: major,
        version_minor: minor,
        element_type_tag: view.element_type().code(),
        element_type: write_vectors::type_name(view.element_type()).to_owned(),
        shape: view.shape().iter().collect(),
        byte_offset: view.byte_offset(),
        layout_tag: view.layout().tag(),
        buffer_byte_sizes: view.buffers().iter().map(BufferHandle::byte_size).collect(),
        has_quantization: view.quantization().is_some(),
        has_shard: view.shard().is_some(),
        // The sections' fields are compared key by key through the inspect
        // tool's record (below), which reads them through the same API.
        layout: None,
        quantization: None,
        statistics: None,
    }
}

/// Whether `have` holds everything `want` states: every key of an object
/// (recursively; `have` may say more), arrays element by element, other
/// values equal. The manifest writes down the fields it checks.
fn holds(have: &serde_json::Value, want: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match (have, want) {
        (V::Object(h), V::Object(w)) => w
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| holds(hv, v))),
        (V::Array(h), V::Array(w)) => {
            h.len() == w.len() && h.iter().zip(w).all(|(a, b)| holds(a, b))
        }
        _ => have == want,
    }
}

/// Re-encodes what `view` describes through [`TensorDescriptor`] (every
/// layout and section), borrowed from the view (`TensorView::descriptor`).
fn reencode(view: &TensorView<'_>) -> Result<Vec<u8>, EncodeError> {
    let desc: TensorDescriptor<'_> = view.descriptor();
    let mut out = vec![0u8; desc.encoded_len()];
    let n = desc.encode(&mut out)?;
    out.truncate(n);
    Ok(out)
}

/// What one manifest run covered.
#[derive(Debug, Default)]
struct Report {
    vectors: usize,
    reencoded: usize,
    rebuilt: usize,
    /// Layout tags the builder cannot hold.
    builder_unsupported: BTreeSet<u8>,
    files_skipped: usize,
    failures: Vec<String>,
}

/// Checks every descriptor of the manifest at `path`.
fn check_manifest(path: &Path) -> Report {
    let dir = path.parent().expect("a manifest lies in a directory");
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let manifest: Manifest = serde_json::from_slice(&text)
        .unwrap_or_else(|e| panic!("{}: not a conformance manifest: {e}", path.display()));
    // The same manifest untyped, to compare every `expect` key, known or not.
    let raw: serde_json::Value = serde_json::from_slice(&text).expect("parsed once already");
    assert!(
        manifest.format_version.starts_with("1."),
        "{}: format_version {}",
        path.display(),
        manifest.format_version
    );
    let options = manifest.reader_options.unwrap_or_default();
    let options: ReadOptions<'_> = options.to_read_options();
    let mut report = Report {
        files_skipped: manifest.files.len(),
        ..Report::default()
    };
    for (i, v) in manifest.descriptors.iter().enumerate() {
        report.vectors += 1;
        let mut fail = |msg: String| report.failures.push(format!("{}: {msg}", v.file));
        let bytes = match std::fs::read(dir.join(&v.file)) {
            Ok(b) => b,
            Err(e) => {
                fail(format!("cannot read: {e}"));
                continue;
            }
        };
        let view = match TensorView::parse_with(&bytes, &options) {
            Ok(view) => view,
            Err(e) => {
                fail(format!("rejected: {e} [{:?}]", e.kind()));
                continue;
            }
        };
        // Every expect field, through the library's API...
        let mut got = expect_of(&view);
        got.layout.clone_from(&v.expect.layout);
        got.quantization.clone_from(&v.expect.quantization);
        got.statistics.clone_from(&v.expect.statistics);
        if got != v.expect {
            fail(format!("decoded {got:?}, manifest expects {:?}", v.expect));
        }
        // ...and through the inspect tool, key by key (a key the tool does
        // not report is a failure too).
        let record = serde_json::to_value(inspect::record(&v.file, &view)).expect("serializes");
        let expect = raw["descriptors"][i]["expect"]
            .as_object()
            .expect("expect is an object");
        for (key, want) in expect {
            match record.get(key) {
                Some(have) if holds(have, want) => {}
                Some(have) => fail(format!("inspect --json: {key} is {have}, expected {want}")),
                None => fail(format!("inspect --json has no key {key}")),
            }
        }
        // The annotated dump walks every byte exactly once.
        let rows = inspect::annotate(&view);
        let mut at = 0;
        for r in &rows {
            if r.offset != at || r.bytes.is_empty() {
                fail(format!(
                    "dump row {} at {} (expected {at})",
                    r.field, r.offset
                ));
                break;
            }
            at += r.bytes.len();
        }
        if at != bytes.len() {
            fail(format!("dump covers {at} of {} bytes", bytes.len()));
        }
        // Re-encoding reproduces the bytes (a 1.0 encoder writes minor 0).
        if view.version() == (1, 0) {
            match reencode(&view) {
                Ok(again) if again == bytes => report.reencoded += 1,
                Ok(again) => fail(format!(
                    "re-encoded through TensorDescriptor to {} different bytes",
                    again.len()
                )),
                Err(e) => fail(format!("re-encoding through TensorDescriptor fails: {e}")),
            }
            match DescriptorBuilder::<64, 255>::from_view(&view) {
                Ok(b) => {
                    let mut out = vec![0u8; bytes.len() + 64];
                    match b.encode(&mut out) {
                        Ok(n) if out[..n] == bytes[..] => report.rebuilt += 1,
                        Ok(n) => fail(format!("the builder re-encodes to {n} different bytes")),
                        Err(e) => fail(format!("the builder cannot re-encode: {e}")),
                    }
                }
                // Tiled and private layouts, private schemes.
                Err(EncodeError::Unsupported { .. }) => {
                    report.builder_unsupported.insert(view.layout().tag());
                }
                Err(e) => fail(format!("DescriptorBuilder::from_view: {e}")),
            }
        }
    }
    report
}

fn assert_clean(name: &str, r: &Report) {
    assert!(
        r.failures.is_empty(),
        "{name}: {} failures among {} vectors:\n  {}",
        r.failures.len(),
        r.vectors,
        r.failures.join("\n  ")
    );
    assert!(r.vectors > 0, "{name}: the manifest lists no descriptor");
}

/// Every file under `dir`, relative to it.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.insert(path.strip_prefix(base).expect("under base").to_path_buf());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn committed_corpus_is_what_the_generator_writes() {
    let dir = our_corpus();
    let files = write_vectors::files();
    let regenerate = "regenerate with `cargo run --example write_vectors -- tests/conformance` \
                      (after deleting the directory) and review the diff";
    let generated: BTreeSet<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    let on_disk = tree(&dir);
    assert_eq!(
        on_disk, generated,
        "tests/conformance/ holds other files than the generator writes; {regenerate}"
    );
    for (path, bytes) in &files {
        let committed = std::fs::read(dir.join(path)).expect("listed above");
        assert!(
            committed == *bytes,
            "tests/conformance/{} differs from the generator's output; {regenerate}",
            path.display()
        );
    }
}

#[test]
fn our_corpus_conforms() {
    let strict = check_manifest(&our_corpus().join("manifest.json"));
    assert_clean("tests/conformance/manifest.json", &strict);
    // Every strict vector re-encodes, both ways where the builder can.
    assert_eq!(strict.reencoded, strict.vectors);
    assert!(strict.rebuilt > 0);
    assert!(
        strict.builder_unsupported.is_subset(&[0x04].into()),
        "only tiled layouts are beyond the builder: {strict:?}"
    );

    let permissive = check_manifest(&our_corpus().join("permissive/manifest.json"));
    assert_clean("tests/conformance/permissive/manifest.json", &permissive);
    assert_eq!(permissive.reencoded, permissive.vectors);
}

#[test]
fn a_strict_reader_refuses_the_permissive_corpus() {
    let corpus = write_vectors::corpus();
    assert!(!corpus.permissive.is_empty());
    for v in &corpus.permissive {
        let err = TensorView::parse(&v.bytes).expect_err(&v.stem);
        assert!(
            matches!(
                err.kind(),
                DescriptorErrorKind::UnknownExtensionLayout(write_vectors::PRIVATE_LAYOUT_ID)
                    | DescriptorErrorKind::PrivateCodeRefused {
                        field: hurray_core::FieldName::SchemeTag,
                        ..
                    }
            ),
            "{}: {err}",
            v.stem
        );
    }
}

/// The corpus has a vector for every layout, element type, section, scheme,
/// device, sync mode and memory class (so a deleted vector cannot go
/// unnoticed).
#[test]
fn our_corpus_covers_every_code() {
    let corpus = write_vectors::corpus();
    let options = write_vectors::permissive_options();
    let mut layouts = BTreeSet::new();
    let mut types = BTreeSet::new();
    let mut flags = 0u32;
    let mut schemes = BTreeSet::new();
    let mut devices = BTreeSet::new();
    let mut syncs = BTreeSet::new();
    let mut classes = BTreeSet::new();
    let mut rules = BTreeSet::new();
    let mut edge = BTreeMap::<&str, bool>::new();
    for v in corpus.strict.iter().chain(&corpus.permissive) {
        let view = TensorView::parse_with(&v.bytes, &options.to_read_options()).expect(&v.stem);
        layouts.insert(view.layout().tag());
        types.insert(view.element_type().code());
        flags |= view.flags().bits();
        if let Some(q) = view.quantization() {
            schemes.insert(q.scheme.tag());
        }
        if let Layout::Composite(h) = view.layout() {
            rules.insert(h.rule.code());
        }
        for b in view.buffers().iter() {
            devices.insert(b.device_tag().code());
            syncs.insert(b.sync_mode().code());
            classes.insert(b.memory_class().code());
        }
        *edge.entry("rank 0").or_default() |= view.rank() == 0;
        *edge.entry("empty").or_default() |= view.element_count() == Some(0);
        *edge.entry("dynamic").or_default() |= view.is_dynamic();
        let mut s = [0i64; 64];
        if let (Layout::Strided(_), Some(s)) = (view.layout(), view.strides(&mut s)) {
            *edge.entry("negative stride").or_default() |= s.iter().any(|&x| x < 0);
            *edge.entry("zero stride").or_default() |= s.contains(&0);
        }
        if let Layout::Tiled(t) = view.layout() {
            *edge.entry("nested tiles").or_default() |= t.depth() > 1;
            *edge.entry("strided tiles").or_default() |= t
                .levels()
                .any(|l| l.outer_strides.is_some() && l.inner_strides.is_some());
        }
        *edge.entry("page-aligned CUDA").or_default() |= view
            .buffers()
            .iter()
            .any(|b| b.device_tag() == DeviceTag::Cuda && b.alignment() >= 4096);
        *edge.entry("page-aligned Vulkan").or_default() |= view
            .buffers()
            .iter()
            .any(|b| b.device_tag() == DeviceTag::Vulkan && b.alignment() >= 4096);
        *edge.entry("overlay member").or_default() |= view.member_role().is_some();
    }
    let want_layouts: BTreeSet<u8> = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x40, 0xF0,
    ]
    .into();
    assert_eq!(layouts, want_layouts);
    for t in ElementType::BUILT_IN {
        assert!(types.contains(&t.code()), "no vector of type {}", t.name());
    }
    assert!(types.iter().any(|&c| hurray::is_private_code(c)));
    assert_eq!(flags, hurray::Flags::DEFINED, "every optional section");
    assert_eq!(schemes, [1, 2, 3, 4, 5, 0xF5].into());
    assert_eq!(rules, [1, 2, 3].into());
    for d in DeviceTag::NAMED {
        assert!(devices.contains(&d.code()), "no buffer on {}", d.name());
    }
    assert!(devices.iter().any(|&c| hurray::is_private_code(c)));
    for s in SyncMode::ALL {
        assert!(
            syncs.contains(&s.code()),
            "no buffer with sync {}",
            s.name()
        );
    }
    for m in MemoryClass::NAMED {
        assert!(classes.contains(&m.code()), "no buffer in {}", m.name());
    }
    assert!(classes.iter().any(|&c| hurray::is_private_code(c)));
    for (what, seen) in edge {
        assert!(seen, "no vector for the edge case {what}");
    }
    let schemes_seen: BTreeSet<&str> = corpus
        .strict
        .iter()
        .filter_map(|v| {
            TensorView::parse(&v.bytes)
                .ok()?
                .quantization()
                .map(|q| q.scheme.name())
        })
        .collect();
    assert_eq!(schemes_seen.len(), 5);
}

/// The generator's element type table (the spec's, written out) agrees
/// with the library's codes, names and widths.
#[test]
fn the_generators_type_table_is_the_librarys() {
    assert_eq!(write_vectors::TYPES.len(), ElementType::BUILT_IN.len());
    for &(code, name, bits) in write_vectors::TYPES {
        let t = ElementType::from_code(code).expect("a built-in code");
        assert_eq!(t.name(), name);
        assert_eq!(t.bits(), Some(bits));
        for n in [0, 1, 3, 4, 5, 15, 1000] {
            assert_eq!(t.storage_bytes(n), Some(write_vectors::spec_bytes(bits, n)));
        }
    }
}

/// A file name that needs escaping comes back intact from the JSON line.
#[test]
fn inspect_json_escapes_file_names() {
    let v = &write_vectors::corpus().strict[0];
    let view = TensorView::parse(&v.bytes).expect("valid");
    let name = "dir/\"quoted\" back\\slash\nnewline\u{1}\u{e9}.bin";
    let line = serde_json::to_string(&inspect::record(name, &view)).expect("serializes");
    assert!(!line.contains('\n'), "one object per line");
    let back: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
    assert_eq!(back["file"], name);
    assert_eq!(back["shape"], serde_json::json!(v.expect.shape));
}

/// A dynamic dimension is the number `u64::MAX`, not a float or a string.
#[test]
fn inspect_json_writes_dynamic_dims_as_integers() {
    let corpus = write_vectors::corpus();
    let v = corpus
        .strict
        .iter()
        .find(|v| v.stem == "edge_dynamic_f32_dx4")
        .expect("in the corpus");
    let view = TensorView::parse(&v.bytes).expect("valid");
    let line = serde_json::to_string(&inspect::record("x", &view)).expect("serializes");
    assert!(
        line.contains("\"shape\":[18446744073709551615,4]"),
        "{line}"
    );
    assert!(line.contains("\"element_count\":null"), "{line}");
}

/// The annotated dump names every field of a quantized, sharded descriptor
/// and its bytes.
#[test]
fn inspect_dump_annotates_every_field() {
    let corpus = write_vectors::corpus();
    let v = corpus
        .strict
        .iter()
        .find(|v| v.stem == "sections_quant_shard_stats_member")
        .expect("in the corpus");
    let view = TensorView::parse(&v.bytes).expect("valid");
    let text = inspect::dump("x.bin", &view).expect("dumps");
    for needle in [
        "     0  48 52 52 59",
        "magic",
        "flags",
        "quantization + shard + statistics + composite member",
        "buffer[2].memory_class",
        "quant.zero_point_buffer_index",
        "buffer 2",
        "shard.shard_offset[0]",
        "statistics.value_min",
        "composite_member.member_role",
        "correction",
    ] {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
}

#[test]
fn shared_corpus_conforms() {
    let Some(manifest) = common::shared_manifest("shared_corpus_conforms") else {
        return;
    };
    let report = check_manifest(&manifest);
    assert_clean(&manifest.display().to_string(), &report);
    let _ = writeln!(
        std::io::stderr(),
        "shared_corpus_conforms: {} descriptors of {} decoded, compared and re-encoded \
         ({} through the builder); {} container-file vectors not checked",
        report.vectors,
        manifest.display(),
        report.rebuilt,
        report.files_skipped
    );
}

/// Single-byte mutants of every corpus vector: whatever the strict reader
/// still accepts, the dump walks exactly and re-encoding reproduces.
#[test]
fn accepted_mutants_dump_and_reencode_exactly() {
    let corpus = write_vectors::corpus();
    let mut accepted = 0;
    for v in &corpus.strict {
        for at in 0..v.bytes.len() {
            for delta in [1u8, 0x80, 0xFF] {
                let mut m = v.bytes.clone();
                m[at] = m[at].wrapping_add(delta);
                let Ok(view) = TensorView::parse(&m) else {
                    continue;
                };
                accepted += 1;
                let rows = inspect::annotate(&view);
                assert_eq!(
                    rows.iter().map(|r| r.bytes.len()).sum::<usize>(),
                    m.len(),
                    "{} byte {at} +{delta}",
                    v.stem
                );
                // A 1.0 encoder writes minor version 0.
                if view.version() != (1, 0) {
                    continue;
                }
                let again = reencode(&view)
                    .unwrap_or_else(|e| panic!("{} byte {at} +{delta}: {e}", v.stem));
                assert!(
                    again == m,
                    "{} byte {at} +{delta}: re-encodes differently",
                    v.stem
                );
            }
        }
    }
    assert!(accepted > 0);
}
