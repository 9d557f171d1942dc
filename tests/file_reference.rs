//! Our file reader and writer held against the format's reference ones (the
//! registry's `hurray-io` 0.1.0, renamed `reference_io`):
//!
//! * every file our writer produces — sorted and unsorted index, KV of every
//!   type, multi-buffer and empty tensors, nested composites — is read by the
//!   reference's `FileReader`, index entry by index entry, descriptor byte
//!   for byte and buffer byte for byte;
//! * every file the reference's `FileWriter` produces from the same tensors
//!   is read by our `FileView` (and our sequential reader) to the same
//!   bytes;
//! * the public conformance file `basic.hrry` decodes to its manifest entry.

use hurray::layout::{CombineOp, CompositeHead, CompositionRule, Compressed};
use hurray::{
    BufferHandle, DeviceTag, ElementType, LayoutSpec, SyncMode, TensorDescriptor, TensorView,
};
use hurray_core::file::{
    FileView, FileWriter, IndexEntry, KvArray, KvValue, SeqEvent, SequentialReader, WriterOptions,
};
use reference_io::file as rf;

mod common;

fn cpu(size: u64) -> BufferHandle {
    BufferHandle::new(
        size,
        if size == 0 { 1 } else { 64 },
        DeviceTag::Cpu,
        SyncMode::ProducerSynced,
    )
    .unwrap()
}

fn enc(d: &TensorDescriptor<'_>) -> Vec<u8> {
    let mut b = vec![0u8; 1024];
    let n = d.encode(&mut b).unwrap();
    b.truncate(n);
    b
}

/// One tensor of the shared test set: name, descriptor bytes, buffers.
struct T {
    name: String,
    desc: Vec<u8>,
    buffers: Vec<Vec<u8>>,
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn le64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Dense, multi-buffer, empty and composite tensors (a group head holding a
/// partition head and a plain tensor: nesting).
fn tensor_set() -> Vec<T> {
    let dense = [cpu(48)];
    let csr = [cpu(12), cpu(24), cpu(32)];
    let empty = [cpu(0)];
    let half = [cpu(32)];
    let mut v = vec![
        T {
            name: "weights".into(),
            desc: enc(&TensorDescriptor::row_major(
                ElementType::Float32,
                &[3, 4],
                &dense,
            )),
            buffers: vec![bytes(48, 1)],
        },
        T {
            name: "sparse".into(),
            desc: enc(&TensorDescriptor::new(
                ElementType::Float32,
                &[3, 4],
                LayoutSpec::Csr(Compressed { nnz: 3 }),
                &csr,
            )),
            buffers: vec![bytes(12, 2), le64(&[1, 3, 0]), le64(&[0, 2, 2, 3])],
        },
        T {
            name: "empty".into(),
            desc: enc(&TensorDescriptor::row_major(
                ElementType::UInt8,
                &[0],
                &empty,
            )),
            buffers: vec![vec![]],
        },
    ];
    let head = |rule, n, shape: &[u64]| {
        enc(&TensorDescriptor::new(
            ElementType::Float32,
            shape,
            LayoutSpec::Composite(CompositeHead {
                rule,
                combine_op: CombineOp::None,
                member_count: n,
            }),
            &[],
        ))
    };
    v.push(T {
        name: "group".into(),
        desc: head(CompositionRule::Group, 2, &[4, 4]),
        buffers: vec![],
    });
    v.push(T {
        name: "group.tiles".into(),
        desc: head(CompositionRule::Partition, 2, &[4, 4]),
        buffers: vec![],
    });
    for (i, off) in [0u64, 2].into_iter().enumerate() {
        v.push(T {
            name: format!("group.tiles.{i}"),
            desc: enc(
                &TensorDescriptor::row_major(ElementType::Float32, &[4, 2], &half)
                    .with_shard(&[4, 4], &[0, off]),
            ),
            buffers: vec![bytes(32, 10 + i as u8)],
        });
    }
    v.push(T {
        name: "group.bias".into(),
        desc: enc(&TensorDescriptor::row_major(
            ElementType::Float32,
            &[3, 4],
            &dense,
        )),
        buffers: vec![bytes(48, 3)],
    });
    v.push(T {
        name: "z.last".into(),
        desc: enc(&TensorDescriptor::row_major(
            ElementType::Int8,
            &[5],
            &[cpu(5)],
        )),
        buffers: vec![bytes(5, 4)],
    });
    v
}

const STRINGS: [&str; 2] = ["a", "bc"];

fn our_kv() -> Vec<(&'static str, KvValue<'static>)> {
    vec![
        ("arch", KvValue::String("llama")),
        ("layers", KvValue::Int64(-32)),
        ("vocab", KvValue::Uint64(32000)),
        ("eps", KvValue::Float64(1e-5)),
        ("tied", KvValue::Bool(true)),
        ("blob", KvValue::Bytes(&[0, 1, 255])),
        ("dims", KvValue::Array(KvArray::Uint64(&[4096, 11008]))),
        ("names", KvValue::Array(KvArray::String(&STRINGS))),
    ]
}

fn ref_kv() -> Vec<(String, rf::KvValue)> {
    use rf::KvValue as V;
    vec![
        ("arch".into(), V::String("llama".into())),
        ("layers".into(), V::Int64(-32)),
        ("vocab".into(), V::Uint64(32000)),
        ("eps".into(), V::Float64(1e-5)),
        ("tied".into(), V::Bool(true)),
        ("blob".into(), V::Bytes(vec![0, 1, 255])),
        (
            "dims".into(),
            V::Array(vec![V::Uint64(4096), V::Uint64(11008)]),
        ),
        (
            "names".into(),
            V::Array(vec![V::String("a".into()), V::String("bc".into())]),
        ),
    ]
}

fn same_value(ours: &KvValue<'_>, theirs: &rf::KvValue) -> bool {
    use rf::KvValue as V;
    match (ours, theirs) {
        (KvValue::String(a), V::String(b)) => a == b,
        (KvValue::Int64(a), V::Int64(b)) => a == b,
        (KvValue::Uint64(a), V::Uint64(b)) => a == b,
        (KvValue::Float64(a), V::Float64(b)) => a.to_bits() == b.to_bits(),
        (KvValue::Bool(a), V::Bool(b)) => a == b,
        (KvValue::Bytes(a), V::Bytes(b)) => a == b,
        (KvValue::Array(a), V::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(&x, y))
        }
        _ => false,
    }
}

fn ours_write(set: &[T], sorted: bool, kv: bool) -> Vec<u8> {
    let mut index = vec![IndexEntry::default(); set.len()];
    let options = WriterOptions {
        sorted_index: sorted,
        has_kv: kv,
        ..Default::default()
    };
    let mut w = FileWriter::new(Vec::new(), options, &mut index[..]).unwrap();
    for t in set {
        let bufs: Vec<&[u8]> = t.buffers.iter().map(|b| &b[..]).collect();
        w.write_tensor(&t.name, &TensorView::parse(&t.desc).unwrap(), &bufs)
            .unwrap();
    }
    let pairs = if kv { our_kv() } else { Vec::new() };
    w.finish(&pairs).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

fn ref_write(set: &[T], sorted: bool, kv: bool) -> Vec<u8> {
    runtime().block_on(async {
        let options = rf::FileWriterOptions {
            data_buffer_alignment: 4096,
            sorted_index: sorted,
        };
        let mut w = rf::FileWriter::with_options(std::io::Cursor::new(Vec::new()), options)
            .await
            .unwrap();
        for t in set {
            let d = reference::TensorDescriptor::decode(&t.desc).unwrap();
            let bufs: Vec<&[u8]> = t.buffers.iter().map(|b| &b[..]).collect();
            w.write_tensor(&t.name, &d, &bufs).await.unwrap();
        }
        w.finish(if kv { ref_kv() } else { vec![] })
            .await
            .unwrap()
            .into_inner()
    })
}

#[test]
fn reference_reads_every_file_we_write() {
    let set = tensor_set();
    for (sorted, kv) in [(false, false), (true, true), (false, true)] {
        let file = ours_write(&set, sorted, kv);
        let view = FileView::parse(&file).unwrap();
        runtime().block_on(async {
            let mut r = rf::FileReader::open(std::io::Cursor::new(file.clone()))
                .await
                .unwrap();
            // The index, entry by entry, in index order.
            let ours: Vec<IndexEntry<'_>> = view.iter().map(|t| *t.entry()).collect();
            assert_eq!(r.index.len(), ours.len());
            for (theirs, ours) in r.index.iter().zip(&ours) {
                assert_eq!(theirs.name, ours.name);
                assert_eq!(theirs.descriptor_offset, ours.descriptor_offset);
                assert_eq!(theirs.descriptor_length, ours.descriptor_length);
                assert_eq!(theirs.data_offset, ours.data_offset);
                assert_eq!(theirs.data_length, ours.data_length);
            }
            // The KV section, value by value.
            if kv {
                let theirs = r.kv().to_vec();
                let ours: Vec<_> = view.kv().iter().collect();
                assert_eq!(theirs.len(), ours.len());
                for ((tk, tv), (ok, ov)) in theirs.iter().zip(&ours) {
                    assert_eq!(tk, ok);
                    assert!(same_value(ov, tv), "{tk}: {ov:?} vs {tv:?}");
                }
            } else {
                assert!(r.kv().is_empty());
            }
            // Every tensor: the descriptor byte for byte, each buffer.
            for t in &set {
                let got = r.read_tensor(&t.name).await.unwrap();
                assert_eq!(got.descriptor.encode().unwrap(), t.desc, "{}", t.name);
                assert_eq!(got.buffers.len(), t.buffers.len());
                for (a, b) in got.buffers.iter().zip(&t.buffers) {
                    assert_eq!(&a[..], &b[..], "{}", t.name);
                }
            }
            // The composite, through the reference's own reassembly.
            let c = r.read_composite("group").await.unwrap();
            assert_eq!(c.members.len(), 2);
        });
    }
}

#[test]
fn we_read_every_file_the_reference_writes() {
    let set = tensor_set();
    for (sorted, kv) in [(false, false), (true, true), (false, true)] {
        let file = ref_write(&set, sorted, kv);
        let mut table = Vec::new();
        let view = hurray_io::file::view(&file, &mut table).unwrap();
        assert_eq!(view.len() as usize, set.len());
        for t in &set {
            let got = view.get(&t.name).unwrap();
            assert_eq!(got.descriptor().as_bytes(), &t.desc[..], "{}", t.name);
            let bufs: Vec<&[u8]> = got.buffers().collect();
            assert_eq!(bufs.len(), t.buffers.len());
            for (a, b) in bufs.iter().zip(&t.buffers) {
                assert_eq!(*a, &b[..], "{}", t.name);
            }
        }
        // File order is write order whatever the index order.
        let order: Vec<&str> = view.iter_file_order().map(|t| t.name()).collect();
        let written: Vec<&str> = set.iter().map(|t| &t.name[..]).collect();
        assert_eq!(order, written);
        if kv {
            let ours: Vec<_> = view.kv().iter().collect();
            for ((tk, tv), (ok, ov)) in ref_kv().iter().zip(&ours) {
                assert_eq!(tk, ok);
                assert!(same_value(ov, tv));
            }
        }
        // The no-table view and the sequential reader agree.
        assert_eq!(FileView::parse(&file).unwrap().len(), view.len());
        let seq = sequential_buffers(&file);
        let want: Vec<Vec<u8>> = set.iter().flat_map(|t| t.buffers.clone()).collect();
        assert_eq!(seq, want);
    }
}

/// Every buffer of `file`, as the sequential reader passes it through in
/// 1000-byte blocks (the region's end taken from the trailer).
fn sequential_buffers(file: &[u8]) -> Vec<Vec<u8>> {
    let t = file.len() - 40;
    let kv = u64::from_le_bytes(file[t + 16..t + 24].try_into().unwrap());
    let index = u64::from_le_bytes(file[t..t + 8].try_into().unwrap());
    let end = if kv != 0 { kv } else { index };
    let mut buf = [0u8; 1024];
    let mut r = SequentialReader::new(&mut buf, Some(end));
    let mut input = file;
    let mut out: Vec<Vec<u8>> = Vec::new();
    loop {
        let (used, ev) = r.feed(&input[..input.len().min(1000)]).unwrap();
        input = &input[used..];
        match ev {
            Some(SeqEvent::Data {
                offset: 0, bytes, ..
            }) => out.push(bytes.to_vec()),
            Some(SeqEvent::Data { bytes, .. }) => out.last_mut().unwrap().extend_from_slice(bytes),
            Some(SeqEvent::Descriptor { view, .. }) => {
                // Empty buffers pass no data event: record them here.
                for h in view.buffers().iter() {
                    if h.byte_size() == 0 {
                        out.push(Vec::new());
                    }
                }
            }
            Some(SeqEvent::End { .. }) => return out,
            _ => {}
        }
    }
}

#[test]
fn writers_agree_except_where_the_spec_and_reference_differ() {
    // Same tensors: the two writers lay the file out differently only in
    // padding (after a last buffer; after a composite head) and the KV flag.
    let set = tensor_set();
    let ours = ours_write(&set, true, true);
    let theirs = ref_write(&set, true, true);
    let (a, b) = (
        FileView::parse(&ours).unwrap(),
        FileView::parse(&theirs).unwrap(),
    );
    assert_eq!(a.flags().bits(), 0b111);
    assert_eq!(
        b.flags().bits(),
        0b110,
        "the reference never sets HAS_KV_METADATA"
    );
    let head_a = a.get("group").unwrap().entry().data_offset;
    let head_b = b.get("group").unwrap().entry().data_offset;
    assert_eq!(head_b % 4096, 0, "the reference pads after a head");
    assert_ne!(head_a % 4096, 0, "we do not (the spec forbids it)");
    for t in &set {
        let (x, y) = (a.get(&t.name).unwrap(), b.get(&t.name).unwrap());
        assert_eq!(x.descriptor().as_bytes(), y.descriptor().as_bytes());
        assert!(x.buffers().eq(y.buffers()));
        assert_eq!(x.entry().data_length, y.entry().data_length);
    }
}

#[test]
fn basic_hrry_decodes_to_its_manifest_entry() {
    let Some(manifest) = common::shared_manifest("basic_hrry_decodes_to_its_manifest_entry") else {
        return;
    };
    let dir = manifest.parent().unwrap();
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let files = m["files"].as_array().unwrap();
    assert!(!files.is_empty());
    for entry in files {
        let path = dir.join(entry["file"].as_str().unwrap());
        let mut mapped = hurray_io::file::open(&path).unwrap();
        let view = mapped.view().unwrap();
        assert_eq!(view.flags().bits(), 0b100, "basic.hrry sets no KV flag");
        let tensors = entry["tensors"].as_array().unwrap();
        assert_eq!(view.len() as usize, tensors.len());
        for (t, want) in view.iter().zip(tensors) {
            assert_eq!(t.name(), want["name"].as_str().unwrap());
            let d = t.descriptor();
            assert_eq!(
                d.element_type().name(),
                want["element_type"].as_str().unwrap()
            );
            assert_eq!(
                u64::from(d.element_type().code()),
                want["element_type_tag"].as_u64().unwrap()
            );
            let shape: Vec<u64> = want["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            assert!(d.shape().iter().eq(shape.iter().copied()));
            let data: u64 = t.buffers().map(|b| b.len() as u64).sum();
            assert_eq!(data, want["data_bytes"].as_u64().unwrap());
        }
        let kv = view.kv();
        let want_kv = entry["kv"].as_array().unwrap();
        assert_eq!(kv.len() as usize, want_kv.len());
        for ((k, v), want) in kv.iter().zip(want_kv) {
            assert_eq!(k, want["key"].as_str().unwrap());
            match want["kind"].as_str().unwrap() {
                "string" => {
                    assert_eq!(v, KvValue::String(want["value_string"].as_str().unwrap()))
                }
                "int64" => assert_eq!(v, KvValue::Int64(want["value_int"].as_i64().unwrap())),
                other => panic!("manifest KV kind {other} not covered"),
            }
        }
    }
}
