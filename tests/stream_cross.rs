//! Streams across the two implementations: our writer and decoder against
//! the reference's `StreamWriter` and `StreamReader` (registry `hurray-io`
//! 0.1.0, depended on as `reference_io`), through the harness of
//! `tests/differential/stream.rs` (shared with the `stream_differential`
//! fuzz target).
//!
//! * Every stream our writer produces — every descriptor of our
//!   conformance corpus that stands alone, with patterned data, and
//!   composites of each rule, nested — is read by the reference's
//!   `StreamReader` to the same tensors, field by field and byte for byte.
//! * Every stream the reference's `StreamWriter` produces from the same
//!   tensors (generated here) is read by our decoder to the same tensors,
//!   and is the very bytes our writer produces.
//! * The documented stream case where we are stricter (composites nested
//!   deeper than 8) is reached and recognised.

#[allow(dead_code, unreachable_pub)]
mod common;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../examples/write_vectors.rs"]
mod write_vectors;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "differential/mod.rs"]
mod differential;

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "differential/stream.rs"]
mod stream_diff;

use hurray::layout::{CombineOp, CompositeHead, CompositionRule};
use hurray::{
    BufferHandle, DeviceTag, ElementType, LayoutSpec, MemberRole, SyncMode, TensorDescriptor,
    TensorView,
};
use hurray_io::stream::{StreamReader, StreamWriter};
use reference_io::stream::{CompositeNode, StreamWriter as TheirWriter};
use stream_diff::{StreamStricter, StreamVerdict, stream_differ};

/// A tensor to stream: descriptor bytes and its buffers.
#[derive(Clone)]
struct Item {
    descriptor: Vec<u8>,
    buffers: Vec<Vec<u8>>,
}

fn item(descriptor: Vec<u8>, seed: u8) -> Item {
    let view = TensorView::parse(&descriptor).expect("our corpus parses");
    let buffers = view
        .buffers()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            (0..h.byte_size())
                .map(|k| (k as u8).wrapping_mul(13).wrapping_add(seed ^ i as u8))
                .collect()
        })
        .collect();
    Item {
        descriptor,
        buffers,
    }
}

fn enc(d: &TensorDescriptor<'_>) -> Vec<u8> {
    let mut out = vec![0u8; d.encoded_len()];
    let n = d.encode(&mut out).unwrap();
    out.truncate(n);
    out
}

fn cpu(size: u64) -> BufferHandle {
    BufferHandle::new(size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

fn head(rule: CompositionRule, op: CombineOp, members: u32, shape: &[u64]) -> Vec<u8> {
    enc(&TensorDescriptor::new(
        ElementType::Float32,
        shape,
        LayoutSpec::Composite(CompositeHead {
            rule,
            combine_op: op,
            member_count: members,
        }),
        &[],
    ))
}

fn member(shape: &[u64], parent: &[u64], offset: &[u64], role: Option<MemberRole>) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    let buffers = [cpu(n * 4)];
    let mut d = TensorDescriptor::row_major(ElementType::Float32, shape, &buffers)
        .with_shard(parent, offset);
    d.member_role = role;
    enc(&d)
}

/// Every strict corpus descriptor that stands alone (not a composite head)
/// with at most 1 MiB of data.
fn corpus_items() -> Vec<Item> {
    let corpus = write_vectors::corpus();
    let items: Vec<Item> = corpus
        .strict
        .iter()
        .filter(|v| v.bytes[15] != 0x0B)
        .filter(|v| {
            let view = TensorView::parse(&v.bytes).unwrap();
            view.buffers().iter().map(|h| h.byte_size()).sum::<u64>() <= 1 << 20
        })
        .enumerate()
        .map(|(i, v)| item(v.bytes.clone(), i as u8))
        .collect();
    assert!(items.len() > 80, "{} corpus tensors", items.len());
    items
}

/// A group holding a partition (2 members) and an overlay (base + one
/// correction), then a plain tensor: 1 + (1 + 2) + (1 + 2) + 1 tensors.
fn composite_items() -> Vec<Item> {
    let p = [4u64, 4];
    vec![
        item(head(CompositionRule::Group, CombineOp::None, 3, &[1]), 1),
        item(head(CompositionRule::Partition, CombineOp::None, 2, &p), 2),
        item(member(&[4, 2], &p, &[0, 0], None), 3),
        item(member(&[4, 2], &p, &[0, 2], None), 4),
        item(head(CompositionRule::Overlay, CombineOp::Replace, 2, &p), 5),
        item(member(&p, &p, &[0, 0], Some(MemberRole::Base)), 6),
        item(
            member(&[2, 2], &p, &[1, 1], Some(MemberRole::Correction)),
            7,
        ),
        item(member(&[3], &[3], &[0], None).clone(), 8),
    ]
}

fn write_ours(items: &[Item]) -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new());
    for it in items {
        let view = TensorView::parse(&it.descriptor).unwrap();
        let buffers: Vec<&[u8]> = it.buffers.iter().map(Vec::as_slice).collect();
        w.write_tensor(&view, &buffers).unwrap();
    }
    w.finish().unwrap()
}

/// The reference's tensors for our items.
fn theirs(items: &[Item]) -> Vec<reference::TensorDescriptor> {
    items
        .iter()
        .map(|it| {
            reference::TensorDescriptor::decode(&it.descriptor)
                .expect("the reference decodes our corpus")
        })
        .collect()
}

#[test]
fn the_reference_reads_every_stream_our_writer_produces() {
    for (name, items) in [
        ("corpus", corpus_items()),
        ("composites", composite_items()),
    ] {
        let stream = write_ours(&items);
        assert_eq!(
            stream_differ(&stream),
            Ok(StreamVerdict::Agree(items.len())),
            "{name}"
        );
        // Field by field and byte for byte, item by item.
        let (read, end) = stream_diff::reference(&stream);
        end.unwrap();
        for (i, (it, (t, bufs))) in items.iter().zip(&read).enumerate() {
            differential::same_values(&TensorView::parse(&it.descriptor).unwrap(), t)
                .unwrap_or_else(|e| panic!("{name} {i}: {e}"));
            assert_eq!(&it.buffers, bufs, "{name} {i}");
            assert_eq!(t.encode().unwrap(), it.descriptor, "{name} {i}: re-encoded");
        }
        // Read in small chunks through our std shell: the same tensors.
        let mut r = StreamReader::with_options(
            &stream[..],
            hurray_io::stream::Options {
                input_buffer: 7,
                ..hurray_io::stream::Options::DEFAULT
            },
        );
        let mut n = 0;
        while let Some(t) = r.next_tensor().unwrap() {
            assert_eq!(t.descriptor, items[n].descriptor);
            assert_eq!(t.buffers, items[n].buffers);
            n += 1;
        }
        assert_eq!(n, items.len());
    }
}

#[test]
fn our_decoder_reads_every_stream_the_reference_writer_produces() {
    // Plain tensors, one `write_tensor` each.
    let items = corpus_items();
    let descs = theirs(&items);
    let mut wire = Vec::new();
    pollster::block_on(async {
        let mut w = TheirWriter::new(&mut wire);
        for (it, d) in items.iter().zip(&descs) {
            let bufs: Vec<&[u8]> = it.buffers.iter().map(Vec::as_slice).collect();
            w.write_tensor(d, &bufs).await.unwrap();
        }
        w.finish().await.unwrap();
    });
    assert_eq!(stream_differ(&wire), Ok(StreamVerdict::Agree(items.len())));
    assert!(
        wire == write_ours(&items),
        "both writers write the same bytes"
    );

    // Composites through `write_composite` (nested: a group holding a
    // partition and an overlay).
    let items = composite_items();
    let d = theirs(&items);
    let bufs: Vec<Vec<&[u8]>> = items
        .iter()
        .map(|it| it.buffers.iter().map(Vec::as_slice).collect())
        .collect();
    let leaf = |i: usize| CompositeNode::Tensor {
        descriptor: &d[i],
        buffers: &bufs[i],
    };
    let partition = [leaf(2), leaf(3)];
    let overlay = [leaf(5), leaf(6)];
    let group = [
        CompositeNode::Composite {
            head: &d[1],
            members: &partition,
        },
        CompositeNode::Composite {
            head: &d[4],
            members: &overlay,
        },
        leaf(7),
    ];
    let mut wire = Vec::new();
    pollster::block_on(async {
        let mut w = TheirWriter::new(&mut wire);
        w.write_composite(&d[0], &group).await.unwrap();
        w.finish().await.unwrap();
    });
    assert!(
        wire == write_ours(&items),
        "both writers write the same composite bytes"
    );
    let (read, end) = stream_diff::ours(&wire);
    end.unwrap();
    assert_eq!(read.len(), items.len());
    for (r, it) in read.iter().zip(&items) {
        assert_eq!(r.descriptor, it.descriptor);
        assert_eq!(r.buffers, it.buffers);
    }
}

#[test]
fn composites_nested_deeper_than_eight_are_the_documented_stricter_case() {
    let g = head(CompositionRule::Group, CombineOp::None, 1, &[1]);
    let leaf = item(member(&[1], &[1], &[0], None), 0);
    for (levels, want) in [
        (8, StreamVerdict::Agree(9)),
        (9, StreamVerdict::Stricter(StreamStricter::CompositeDepth)),
        (64, StreamVerdict::Stricter(StreamStricter::CompositeDepth)),
        (65, StreamVerdict::BothReject),
    ] {
        let mut s = g.repeat(levels);
        s.extend_from_slice(&leaf.descriptor);
        s.extend_from_slice(&leaf.buffers[0]);
        assert_eq!(stream_differ(&s), Ok(want), "{levels} levels");
    }
}

#[test]
fn a_descriptor_the_reference_accepts_and_we_refuse_is_explained_in_a_stream() {
    // A plain tensor both read alike...
    let t = enc(&TensorDescriptor::new(
        ElementType::Float32,
        &[2],
        LayoutSpec::RowMajor,
        &[cpu(8)],
    ));
    let mut s = t.clone();
    s.extend_from_slice(&[0; 8]);
    assert_eq!(stream_differ(&s), Ok(StreamVerdict::Agree(1)));
    // ...then one with version_major = 0, which only the reference reads ([MD-VERSION-1]).
    let mut bad = t.clone();
    bad[4] = 0;
    s.extend_from_slice(&bad);
    s.extend_from_slice(&[0; 8]);
    assert_eq!(
        stream_differ(&s),
        Ok(StreamVerdict::Stricter(StreamStricter::Descriptor(
            differential::Stricter::VersionMajorZero
        )))
    );
}

#[test]
fn broken_streams_are_rejected_by_both() {
    let stream = write_ours(&composite_items());
    // Every proper prefix is rejected by both (torn, or cut inside a tensor).
    for cut in (0..stream.len()).step_by(3).skip(1) {
        assert_eq!(
            stream_differ(&stream[..cut]),
            Ok(StreamVerdict::BothReject),
            "cut at {cut}"
        );
    }
}

#[test]
fn the_committed_stream_fuzz_seeds_agree_or_are_documented() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/stream_differential");
    let mut verdicts = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let verdict = stream_differ(&bytes).unwrap_or_else(|f| panic!("{}: {f}", path.display()));
        let key = match verdict {
            StreamVerdict::Agree(_) => "agree",
            StreamVerdict::BothReject => "both reject",
            StreamVerdict::Stricter(_) => "stricter",
            StreamVerdict::ReferenceUnsafe => "kept from the reference",
        };
        *verdicts.entry(key).or_insert(0) += 1;
    }
    // Valid streams, broken ones and the nesting case are all there.
    assert!(
        verdicts.get("agree").copied().unwrap_or(0) > 30,
        "{verdicts:?}"
    );
    assert!(
        verdicts.get("both reject").copied().unwrap_or(0) >= 5,
        "{verdicts:?}"
    );
    assert!(
        verdicts.get("stricter").copied().unwrap_or(0) >= 1,
        "{verdicts:?}"
    );
}
