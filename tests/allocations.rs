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

/// A small file from our writer: dense, multi-buffer and composite tensors,
/// KV of every scalar type, a sorted index.
fn small_file(index: &mut [hurray_core::file::IndexEntry<'static>], out: &mut [u8]) -> usize {
    use hurray::layout::{CombineOp, CompositeHead, CompositionRule};
    use hurray::{BufferHandle, DeviceTag, ElementType, LayoutSpec, SyncMode};
    use hurray_core::file::{FileWriter, KvValue, WriterOptions};
    let h = [BufferHandle::new(16, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut d = [0u8; 128];
    let n = TensorDescriptor::row_major(ElementType::Float32, &[2, 2], &h)
        .encode(&mut d)
        .unwrap();
    let mut g = [0u8; 128];
    let gn = TensorDescriptor::new(
        ElementType::Float32,
        &[4],
        LayoutSpec::Composite(CompositeHead {
            rule: CompositionRule::Group,
            combine_op: CombineOp::None,
            member_count: 1,
        }),
        &[],
    )
    .encode(&mut g)
    .unwrap();
    let options = WriterOptions {
        sorted_index: true,
        has_kv: true,
        ..Default::default()
    };
    let total = out.len();
    let mut sink: &mut [u8] = out;
    let mut w = FileWriter::new(&mut sink, options, index).unwrap();
    w.write_tensor("g", &TensorView::parse(&g[..gn]).unwrap(), &[])
        .unwrap();
    w.write_tensor("w", &TensorView::parse(&d[..n]).unwrap(), &[&[1; 16]])
        .unwrap();
    w.write_tensor("b", &TensorView::parse(&d[..n]).unwrap(), &[&[2; 16]])
        .unwrap();
    w.finish(&[
        ("s", KvValue::String("x")),
        ("i", KvValue::Int64(-1)),
        ("t", KvValue::Bool(true)),
    ])
    .unwrap();
    total - sink.len()
}

#[test]
fn the_file_writer_view_and_sequential_reader_allocate_nothing() {
    use hurray_core::file::{
        FileIndex, FileOptions, FileView, IndexEntry, SeqEvent, SequentialReader,
    };
    let mut out = vec![0u8; 1 << 16];
    let mut index = [IndexEntry::default(); 4];
    let (len, writes) = count(|| small_file(&mut index, &mut out));
    assert_eq!(writes, 0, "the writer allocates");
    let file = &out[..len];
    let (names, opens) = count(|| {
        let view = FileView::parse(file).unwrap();
        let mut n = 0;
        for t in view.iter_file_order() {
            n += t.buffers().count() + t.name().len();
        }
        n += view.kv().iter().count();
        n
    });
    assert!(names > 0);
    assert_eq!(opens, 0, "the view allocates");
    let mut table = [0u32; 8];
    let (found, lookups) = count(|| {
        let idx = FileIndex::parse_with(file, &FileOptions::STRICT, &mut table).unwrap();
        idx.get("w").unwrap().map(|t| t.data().len())
    });
    assert_eq!(found, Some(16));
    assert_eq!(lookups, 0, "a lookup allocates");
    let end = {
        let t = file.len() - 40;
        u64::from_le_bytes(file[t + 16..t + 24].try_into().unwrap())
    };
    let mut buf = [0u8; 256];
    let (events, reads) = count(|| {
        let mut r = SequentialReader::new(&mut buf, Some(end));
        let mut input = file;
        let mut events = 0;
        while let Ok((used, ev)) = r.feed(&input[..input.len().min(100)]) {
            input = &input[used..];
            let end = matches!(ev, Some(SeqEvent::End { .. }));
            if ev.is_some() {
                events += 1;
            } else if used == 0 {
                break;
            }
            if end {
                break;
            }
        }
        events
    });
    assert!(events >= 7, "{events}");
    assert_eq!(reads, 0, "the sequential reader allocates");
    // Every single-byte mutant of the file opens without allocating.
    let mut m = file.to_vec();
    for i in (0..m.len()).step_by(if cfg!(miri) { 997 } else { 7 }) {
        m[i] ^= 0x5A;
        let (_, n) = count(|| FileView::parse(&m).map(|v| v.len()));
        assert_eq!(n, 0, "mutant at {i} allocates");
        m[i] ^= 0x5A;
    }
}
