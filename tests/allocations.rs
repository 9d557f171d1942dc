//! Heap allocations per decode, counted by a counting global allocator
//! (`tests/differential/counting.rs`): a count, never a time.
//!
//! * Ours: none, for any input — the benchmark shapes, every descriptor of
//!   our corpus, every single-byte mutant of them whether accepted or
//!   rejected, and every encode into a caller's buffer.
//! * The reference decoder (registry `hurray-core` 0.1.0, pinned): exactly
//!   the allocations its code makes for the benchmark shapes (one vector
//!   for the shape, one for the buffer table, one per layout array and one
//!   for the quantization bytes), so that the figure `examples/race.rs`
//!   prints and `docs/perf.md` records is checked on every run.

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../examples/write_vectors.rs"]
mod write_vectors;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "differential/shapes.rs"]
mod shapes;

#[allow(dead_code, unreachable_pub, missing_docs, unsafe_code)]
#[path = "differential/counting.rs"]
mod counting;

use counting::count;
use hurray::{TensorDescriptor, TensorView};

#[test]
fn decoding_the_benchmark_shapes_allocates_nothing_here_and_this_much_there() {
    // What the reference's decoder allocates for each shape: the shape
    // vector, the buffer vector, and the strides or quantization bytes.
    let reference_allocations = [
        ("dense f32 [256, 256]", 2),
        ("int4 [256, 256] per-block", 3),
        ("CSR f32 [1024, 1024]", 2),
        ("strided f32 rank 8", 3),
    ];
    let shapes = shapes::race_shapes();
    assert_eq!(shapes.len(), reference_allocations.len());
    for (shape, (name, expected)) in shapes.iter().zip(reference_allocations) {
        assert_eq!(shape.name, name);
        let bytes = shape.encode_ours().expect(name);
        let (view, ours) = count(|| TensorView::parse(&bytes).map(|v| v.element_count()));
        assert!(view.is_ok(), "{name}");
        assert_eq!(ours, 0, "{name}: our decode allocates");
        let (theirs, n) = count(|| reference::TensorDescriptor::decode(&bytes));
        assert!(theirs.is_ok(), "{name}");
        assert_eq!(
            n, expected,
            "{name}: the reference's allocations per decode"
        );
    }
}

#[test]
fn encoding_into_a_callers_buffer_allocates_nothing() {
    for shape in shapes::race_shapes() {
        let d: TensorDescriptor<'_> = shape.ours();
        let mut out = vec![0u8; d.encoded_len()];
        let (n, allocations) = count(|| d.encode(&mut out));
        assert_eq!(n, Ok(out.len()), "{}", shape.name);
        assert_eq!(allocations, 0, "{}: our encode allocates", shape.name);
    }
}

#[test]
fn no_input_makes_our_decoder_allocate() {
    let corpus = write_vectors::corpus();
    let mut decodes = 0u64;
    let mut accepted = 0u64;
    for v in corpus.strict.iter().chain(&corpus.permissive) {
        let mut m = v.bytes.clone();
        for at in 0..m.len() {
            for delta in [0u8, 1, 0x80] {
                let was = m[at];
                m[at] = was.wrapping_add(delta);
                let (ok, n) = count(|| TensorView::parse(&m).is_ok());
                assert_eq!(n, 0, "{} byte {at} +{delta}", v.stem);
                decodes += 1;
                accepted += u64::from(ok);
                m[at] = was;
            }
        }
    }
    assert!(accepted > 0 && accepted < decodes);
}
