//! Cross-decoding: our decoder against the format's reference decoder
//! (registry `hurray-core` 0.1.0, depended on as `reference`), through the
//! harness of `tests/differential/mod.rs` (shared with the differential fuzz
//! target).
//!
//! * Every descriptor our encoder writes — the conformance corpus of
//!   `examples/write_vectors.rs` and the race's benchmark shapes — is
//!   decoded by the reference to the same values, field by field; for the
//!   benchmark shapes both encoders write the same bytes.
//! * Every vector of the shared public corpus (`../shared/conformance/`, or
//!   `HURRAY_CONFORMANCE_DIR`, found as `tests/conformance.rs` finds it) is
//!   decoded by both to the same values, and by the reference to the values
//!   its manifest expects.
//! * Every documented case where we are stricter (`Stricter`, one per row of
//!   the table in `docs/spec/README.md`) is reached by a fixture the
//!   reference accepts and we reject, and recognised as that case; the
//!   enum and the table list the same cases with the same requirements.

#[allow(dead_code, unreachable_pub)]
mod common;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../examples/write_vectors.rs"]
mod write_vectors;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "differential/mod.rs"]
mod differential;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "differential/shapes.rs"]
mod shapes;

use std::collections::BTreeSet;
use std::io::Write as _;

use differential::{Stricter, Verdict, differ, same_values};
use hurray::TensorView;
use write_vectors::Manifest;

use common::root;

#[test]
fn our_corpus_decodes_the_same_in_the_reference() {
    let corpus = write_vectors::corpus();
    assert!(corpus.strict.len() > 100);
    for v in &corpus.strict {
        assert_eq!(differ(&v.bytes), Ok(Verdict::Agree), "{}", v.stem);
    }
    // The permissive corpus: the reference takes a private layout with any
    // id and never reads a private scheme (outside block-paged). Our strict
    // reader refuses both, as documented; with the agreements the corpus
    // names, both read the same values.
    let options = write_vectors::permissive_options();
    for v in &corpus.permissive {
        let case = match differ(&v.bytes) {
            Ok(Verdict::Stricter(case, _)) => case,
            other => panic!("{}: {other:?}", v.stem),
        };
        assert!(
            matches!(
                case,
                Stricter::UnknownExtensionLayout | Stricter::QuantRules
            ),
            "{}: {case:?}",
            v.stem
        );
        let ours = TensorView::parse_with(&v.bytes, &options.to_read_options()).expect(&v.stem);
        let theirs = reference::TensorDescriptor::decode(&v.bytes).expect(&v.stem);
        same_values(&ours, &theirs).unwrap_or_else(|e| panic!("{}: {e}", v.stem));
    }
}

#[test]
fn both_encoders_write_the_benchmark_shapes_alike() {
    for shape in shapes::race_shapes() {
        let ours = shape.encode_ours().expect(shape.name);
        let theirs = shape.reference.encode().expect(shape.name);
        assert!(ours == theirs, "{}: the encoders differ", shape.name);
        assert_eq!(differ(&ours), Ok(Verdict::Agree), "{}", shape.name);
    }
}

#[test]
fn shared_corpus_decodes_the_same_in_both() {
    let Some(manifest) = common::shared_manifest("shared_corpus_decodes_the_same_in_both") else {
        return;
    };
    let dir = manifest.parent().expect("a manifest lies in a directory");
    let text = std::fs::read(&manifest).expect("readable");
    let manifest_value: Manifest = serde_json::from_slice(&text).expect("a conformance manifest");
    assert!(!manifest_value.descriptors.is_empty());
    for v in &manifest_value.descriptors {
        let bytes = std::fs::read(dir.join(&v.file)).expect(&v.file);
        assert_eq!(differ(&bytes), Ok(Verdict::Agree), "{}", v.file);
        // The reference's reading is the manifest's (ours is checked
        // against it by tests/conformance.rs).
        let t = reference::TensorDescriptor::decode(&bytes).expect(&v.file);
        let e = &v.expect;
        assert_eq!(
            (t.version_major, t.version_minor),
            (e.version_major, e.version_minor),
            "{}",
            v.file
        );
        assert_eq!(t.element_type.tag(), e.element_type_tag, "{}", v.file);
        assert_eq!(t.shape.dims(), &e.shape[..], "{}", v.file);
        assert_eq!(t.byte_offset, e.byte_offset, "{}", v.file);
        assert_eq!(t.layout.tag(), e.layout_tag, "{}", v.file);
        let sizes: Vec<u64> = t.buffers.iter().map(|b| b.byte_size()).collect();
        assert_eq!(sizes, e.buffer_byte_sizes, "{}", v.file);
        assert_eq!(t.quantization.is_some(), e.has_quantization, "{}", v.file);
        assert_eq!(t.shard.is_some(), e.has_shard, "{}", v.file);
    }
    let _ = writeln!(
        std::io::stderr(),
        "shared_corpus_decodes_the_same_in_both: {} descriptors of {} agree field by field",
        manifest_value.descriptors.len(),
        manifest.display()
    );
}

/// A change to a corpus vector.
enum Edit {
    /// Overwrite bytes at an offset.
    Set(usize, &'static [u8]),
    /// Append bytes.
    Append(&'static [u8]),
}

/// A vector of our corpus, edited (offsets as `inspect` prints them).
fn edited(stem: &str, edits: &[Edit]) -> Vec<u8> {
    let path = root().join(format!("tests/conformance/descriptors/{stem}.bin"));
    let mut b = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for e in edits {
        match *e {
            Edit::Set(at, bytes) => b[at..at + bytes.len()].copy_from_slice(bytes),
            Edit::Append(bytes) => b.extend_from_slice(bytes),
        }
    }
    b
}

/// One input per documented case: the reference accepts it, we reject it,
/// and the harness names the case.
#[test]
fn every_stricter_case_is_reached_and_recognised() {
    use Edit::{Append, Set};
    use Stricter as S;
    const ROW: &str = "layout_row_major_f32_3x4";
    const CSR: &str = "layout_csr_f32_4x6";
    const COO3: &str = "layout_coo_f64_2x3x4_unsorted";
    const PAGED_Q: &str = "quant_per_block_block_paged_int8";
    const INT24: &str = "type_private_fe_int24";
    const STATS_COO: &str = "stats_coo_nnz";
    let cases: Vec<(S, Vec<u8>)> =
        vec![
            (S::VersionMajorZero, edited(ROW, &[Set(4, &[0])])),
            // Minor version 1, 8 more bytes declared than given.
            (
                S::LengthPastInput,
                edited(ROW, &[Set(5, &[1]), Set(6, &[69])]),
            ),
            (S::TrailingInput, edited(ROW, &[Append(&[0; 4])])),
            // Buffer 1 on CUDA, the others on the CPU.
            (S::NotColocated, edited(CSR, &[Set(89, &[0x01])])),
            // A CPU buffer in peer-to-peer memory.
            (S::MemoryClassNotAllowed, edited(ROW, &[Set(59, &[0x03])])),
            // A second buffer on a row-major tensor.
            (
                S::BufferCount,
                edited(
                    ROW,
                    &[
                        Set(6, &[77]),
                        Set(44, &[2]),
                        Append(&[48, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0]),
                    ],
                ),
            ),
            // 47 bytes for twelve float32.
            (S::BufferSizes, edited(ROW, &[Set(45, &[47])])),
            (S::ByteOffsetPastBuffer, edited(ROW, &[Set(36, &[52])])),
            (S::ByteOffsetNotZero, edited(CSR, &[Set(36, &[8])])),
            (S::ByteOffsetMisaligned, edited(ROW, &[Set(36, &[2])])),
            // A scalar in column-major order.
            (
                S::ScalarNotRowMajor,
                edited("edge_rank0_f32_scalar", &[Set(15, &[0x02])]),
            ),
            // The rank-3 COO tensor relabelled CSR (its unsorted flag and
            // reserved bytes make a valid CSR payload).
            (S::LayoutRank, edited(COO3, &[Set(15, &[0x07])])),
            (
                S::DynamicShard,
                edited("shard_f32_2x3_of_4x6", &[Set(61, &[0xFF; 8])]),
            ),
            // Per-channel along axis 0, which is made dynamic.
            (
                S::DynamicQuantAxis,
                edited("quant_per_channel_int8_4x8", &[Set(20, &[0xFF; 8])]),
            ),
            (
                S::PagedFields,
                edited("layout_block_paged_f16_key", &[Set(52, &[0; 4])]),
            ),
            // hilbert_rank 3 on a rank-2 tensor.
            (
                S::HilbertShape,
                edited("layout_hilbert_f32_4x4", &[Set(48, &[3])]),
            ),
            // 4 does not fit 1 Morton bit.
            (
                S::MortonShape,
                edited("layout_morton_f32_4x4", &[Set(44, &[1])]),
            ),
            // A per-tensor scale of 0.
            (
                S::QuantRules,
                edited("quant_per_tensor_int8_4x4", &[Set(69, &[0; 4])]),
            ),
            // A 15-byte scale buffer for 4 float32 scales.
            (
                S::QuantParameterSizes,
                edited("quant_per_channel_int8_4x8", &[Set(61, &[15])]),
            ),
            (S::SchemeVersionZero, edited(PAGED_Q, &[Set(154, &[0])])),
            // The SYMMETRIC flag cleared, the zero-point index left at none.
            (
                S::PerBlockAsymmetricWithoutZeroPoint,
                edited(PAGED_Q, &[Set(155, &[0])]),
            ),
            // Four more quantization bytes, one of them not zero.
            (
                S::QuantPadding,
                edited(
                    PAGED_Q,
                    &[Set(6, &[181]), Set(149, &[28]), Append(&[1, 0, 0, 0])],
                ),
            ),
            // MXFP blocks of 16 on pages of 32 (the fields after MXFP's
            // 16 bytes zeroed).
            (
                S::PagedQuantRules,
                edited(
                    PAGED_Q,
                    &[
                        Set(52, &[32]),
                        Set(153, &[0x05]),
                        Set(155, &[0]),
                        Set(169, &[0; 8]),
                    ],
                ),
            ),
            // sparsity_ratio 2.0.
            (
                S::StatisticsRange,
                edited(STATS_COO, &[Set(109, &[0, 0, 0, 0, 0, 0, 0, 0x40])]),
            ),
            // Statistics nnz 4, layout nnz 3.
            (S::StatisticsNnz, edited(STATS_COO, &[Set(101, &[4])])),
            // A sign bit on an integer type.
            (S::ExtensionTypeFields, edited(INT24, &[Set(60, &[1])])),
            // A 12-bit type.
            (S::ExtensionTypeWidth, edited(INT24, &[Set(53, &[12])])),
            (S::CooIsSorted, edited(COO3, &[Set(60, &[2])])),
            (
                S::OverlayWithoutMembers,
                edited("layout_composite_overlay_add", &[Set(48, &[0])]),
            ),
            (
                S::UnknownExtensionLayout,
                std::fs::read(root().join(
                    "tests/conformance/permissive/descriptors/permissive_layout_private_f0.bin",
                ))
                .expect("in the permissive corpus"),
            ),
            // Inner strides [1, 5] in a 4 x 4 tile reach element 18.
            (
                S::TileOverrun,
                edited("layout_tiled_f32_8x8_strided", &[Set(88, &[5])]),
            ),
            // Per-block affine on float32 storage.
            (S::PagedQuantFields, edited(PAGED_Q, &[Set(14, &[0x03])])),
            // 2^62 x 2^31 elements.
            (
                S::SizeOverflow,
                edited(
                    "edge_huge_u8_2p31x2p31",
                    &[Set(20, &[0, 0, 0, 0, 0, 0, 0, 0x40])],
                ),
            ),
        ];
    let mut reached = BTreeSet::new();
    for (case, bytes) in &cases {
        reference::TensorDescriptor::decode(bytes)
            .unwrap_or_else(|e| panic!("{case:?}: the reference rejects the fixture: {e:?}"));
        match differ(bytes) {
            Ok(Verdict::Stricter(found, _)) if found == *case => {}
            other => panic!("{case:?}: {other:?}"),
        }
        reached.insert(*case);
    }
    let all: BTreeSet<Stricter> = Stricter::ALL.iter().copied().collect();
    assert_eq!(reached, all, "a case without a fixture");
}

/// The `Stricter` enum and the spec's table list the same cases: each row's
/// requirements are one variant's, in the table's order, and each
/// requirement is defined in `docs/spec/`.
#[test]
fn the_spec_table_lists_every_stricter_case() {
    let readme = std::fs::read_to_string(root().join("docs/spec/README.md")).expect("the spec");
    let section = readme
        .split("## Where this implementation is stricter than the format's reference decoder")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the section");
    let ids = |cell: &str| -> Vec<String> {
        cell.split('[')
            .skip(1)
            .filter_map(|s| s.split(']').next())
            .map(str::to_owned)
            .collect()
    };
    let rows: Vec<Vec<String>> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Input |") && !l.starts_with("|---"))
        .map(|l| {
            ids(l
                .trim_end_matches('|')
                .rsplit('|')
                .next()
                .unwrap_or_default())
        })
        .collect();
    let documented: Vec<Vec<String>> = Stricter::ALL
        .iter()
        .map(|c| c.requirements().iter().map(|&s| s.to_owned()).collect())
        .collect();
    assert_eq!(rows, documented, "the table and the enum disagree");
    let spec: String = std::fs::read_dir(root().join("docs/spec"))
        .expect("docs/spec")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    for case in Stricter::ALL {
        for id in case.requirements() {
            assert!(
                spec.contains(&format!("- [{id}]")),
                "{case:?}: [{id}] is not a requirement of docs/spec"
            );
        }
    }
}

/// The differential fuzz target's committed seeds (its findings kept as
/// regressions, such as a block-paged pool of no slots whose row product
/// overflows: an empty pool, accepted by both) agree, or differ only in a
/// documented stricter case.
#[test]
fn the_differential_fuzz_seeds_agree() {
    let dir = root().join("fuzz/corpus/differential");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if let Err(finding) = differ(&bytes) {
            panic!("{}: {finding}", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 3, "{} seeds in {}", seen, dir.display());
}
