//! Writes the committed seed corpus `fuzz/corpus/<target>/`: valid inputs
//! built with hurray-core's own encoder — a descriptor for every layout, every
//! quantization scheme and every optional section — and near-valid ones
//! derived from them (each breaks one rule), plus buffer handles and tables.
//!
//! Run from `fuzz/`: `cargo run --example make_seeds`. It first removes the
//! seeds it owns (every file in the seven corpus folders), so the corpus is
//! exactly what this program writes. The two `arbitrary`-driven targets
//! (`descriptor_structured`, `dlpack_import`) get a few shapes of raw bytes;
//! `differential` reads the `descriptor` folder (and the conformance
//! descriptors), so it has none of its own.

use std::fs;
use std::path::Path;

use hurray_core::layout::{
    BlockPaged, CombineOp, CompositeHead, CompositionRule, Compressed, Coo, Hilbert, KvRole,
    TileSpec,
};
use hurray_core::{
    BufferHandle, BufferTable, DeviceTag, ElementType, ExtensionType, LayoutSpec, MemberRole,
    MemoryClass, Scheme, Statistics, SyncMode, TensorDescriptor,
};

/// A 16-byte entry assembled field by field, valid or not.
fn entry(size: u64, align: u32, dev: u8, sync: u8, class: u8, reserved: u8) -> Vec<u8> {
    let mut b = Vec::with_capacity(16);
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&align.to_le_bytes());
    b.extend_from_slice(&[dev, sync, class, reserved]);
    b
}

fn cpu(size: u64) -> BufferHandle {
    let align = if size == 0 { 1 } else { 64 };
    BufferHandle::new(size, align, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

fn encode(d: &TensorDescriptor<'_>) -> Vec<u8> {
    let mut out = vec![0u8; d.encoded_len()];
    let n = d
        .encode(&mut out)
        .unwrap_or_else(|e| panic!("seed rejected: {e}: {d:?}"));
    out.truncate(n);
    out
}

/// One valid descriptor per layout, scheme and section.
fn descriptors() -> Vec<(String, Vec<u8>)> {
    use ElementType as E;
    let mut v: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |name: &str, d: TensorDescriptor<'_>| v.push((name.to_string(), encode(&d)));

    // Dense layouts.
    add(
        "row-major-f32-3x4",
        TensorDescriptor::row_major(E::Float32, &[3, 4], &[cpu(48)]),
    );
    add(
        "row-major-scalar-f64",
        TensorDescriptor::row_major(E::Float64, &[], &[cpu(8)]),
    );
    add(
        "row-major-empty-0x4",
        TensorDescriptor::row_major(E::Float32, &[0, 4], &[cpu(0)]),
    );
    add(
        "row-major-dynamic",
        TensorDescriptor::row_major(E::Float16, &[u64::MAX, 8], &[cpu(0)]),
    );
    add(
        "row-major-bool-10",
        TensorDescriptor::row_major(E::Bool, &[10], &[cpu(2)]),
    );
    add(
        "row-major-float6-5",
        TensorDescriptor::row_major(E::Float6E2M3, &[5], &[cpu(6)]),
    );
    add(
        "row-major-int4-offset",
        TensorDescriptor::row_major(E::Int4, &[7], &[cpu(8)]).with_byte_offset(4),
    );
    add(
        "column-major-i16-2x3",
        TensorDescriptor::column_major(E::Int16, &[2, 3], &[cpu(12)]),
    );
    let cuda = BufferHandle::with_memory_class(
        4096,
        4096,
        DeviceTag::Cuda,
        SyncMode::Event,
        MemoryClass::Unified,
    )
    .unwrap();
    add(
        "row-major-cuda-unified",
        TensorDescriptor::row_major(E::BFloat16, &[32, 64], &[cuda]),
    );
    let private = BufferHandle::with_memory_class(
        256,
        64,
        DeviceTag::Private(0xF3),
        SyncMode::ConsumerStream,
        MemoryClass::Private(0xF7),
    )
    .unwrap();
    add(
        "row-major-private-device",
        TensorDescriptor::row_major(E::UInt8, &[256], &[private]),
    );
    add(
        "strided-reversed-rows",
        TensorDescriptor::new(
            E::Float32,
            &[3, 4],
            LayoutSpec::Strided(&[-4, 1]),
            &[cpu(48)],
        )
        .with_byte_offset(32),
    );
    add(
        "strided-broadcast",
        TensorDescriptor::new(E::Int32, &[5, 4], LayoutSpec::Strided(&[0, 1]), &[cpu(16)]),
    );
    let tiles = [
        TileSpec {
            tile_shape: &[2, 2],
            outer_layout: 1,
            inner_layout: 4,
            outer_strides: None,
            inner_strides: None,
        },
        TileSpec {
            tile_shape: &[1, 2],
            outer_layout: 1,
            inner_layout: 3,
            outer_strides: None,
            inner_strides: Some(&[2, 1]),
        },
    ];
    add(
        "tiled-nested",
        TensorDescriptor::new(E::Float32, &[4, 4], LayoutSpec::Tiled(&tiles), &[cpu(64)]),
    );
    let grid = [TileSpec {
        tile_shape: &[2, 2],
        outer_layout: 3,
        inner_layout: 2,
        outer_strides: Some(&[1, 2]),
        inner_strides: None,
    }];
    add(
        "tiled-strided-grid",
        TensorDescriptor::new(E::Float32, &[4, 4], LayoutSpec::Tiled(&grid), &[cpu(64)]),
    );
    add(
        "morton-4x4",
        TensorDescriptor::new(E::Float32, &[4, 4], LayoutSpec::Morton(&[2, 2]), &[cpu(64)]),
    );
    add(
        "hilbert-4x4",
        TensorDescriptor::new(
            E::Float32,
            &[4, 4],
            LayoutSpec::Hilbert(Hilbert { order: 2, rank: 2 }),
            &[cpu(64)],
        ),
    );

    // Sparse and indirect layouts.
    add(
        "coo-10x10",
        TensorDescriptor::new(
            E::Float32,
            &[10, 10],
            LayoutSpec::Coo(Coo {
                nnz: 5,
                sorted: true,
            }),
            &[cpu(20), cpu(80)],
        ),
    );
    add(
        "csr-3x4",
        TensorDescriptor::new(
            E::Float64,
            &[3, 4],
            LayoutSpec::Csr(Compressed { nnz: 4 }),
            &[cpu(32), cpu(32), cpu(32)],
        ),
    );
    add(
        "csc-3x4",
        TensorDescriptor::new(
            E::Float64,
            &[3, 4],
            LayoutSpec::Csc(Compressed { nnz: 4 }),
            &[cpu(32), cpu(32), cpu(40)],
        ),
    );
    let csf = [
        cpu(12),
        cpu(16),
        cpu(16),
        cpu(24),
        cpu(24),
        cpu(32),
        cpu(24),
    ];
    add(
        "csf-2x3x4",
        TensorDescriptor::new(
            E::Float32,
            &[2, 3, 4],
            LayoutSpec::Csf {
                nnz: 3,
                mode_order: &[2, 0, 1],
            },
            &csf,
        ),
    );
    let paged = BlockPaged {
        page_size: 16,
        num_pages: 4,
        num_seqs: 2,
        kv_role: KvRole::Value,
        layer_index: Some(3),
        wide_indices: false,
    };
    add(
        "block-paged-kv",
        TensorDescriptor::new(
            E::Float16,
            &[64, 2, 8],
            LayoutSpec::BlockPaged(paged),
            &[cpu(2048), cpu(16), cpu(12)],
        ),
    );
    let head = CompositeHead {
        rule: CompositionRule::Overlay,
        combine_op: CombineOp::Add,
        member_count: 2,
    };
    add(
        "composite-overlay",
        TensorDescriptor::new(E::Float32, &[8, 4], LayoutSpec::Composite(head), &[]),
    );
    let partition = CompositeHead {
        rule: CompositionRule::Partition,
        combine_op: CombineOp::None,
        member_count: 2,
    };
    add(
        "composite-partition",
        TensorDescriptor::new(E::Float32, &[8, 4], LayoutSpec::Composite(partition), &[]),
    );
    add(
        "extension-layout",
        TensorDescriptor::new(
            E::UInt8,
            &[8],
            LayoutSpec::Extension {
                tag: 0xF5,
                id: 0x5EED,
                data: b"abc",
            },
            &[cpu(100)],
        ),
    );

    // Quantization schemes.
    add(
        "quant-per-tensor-int8",
        TensorDescriptor::row_major(E::Int8, &[4], &[cpu(4)]).with_quantization(
            Scheme::PerTensor {
                scale: 0.5,
                zero_point: -3,
            },
        ),
    );
    add(
        "quant-per-channel-int8",
        TensorDescriptor::row_major(E::Int8, &[3, 4], &[cpu(12), cpu(12), cpu(12)])
            .with_quantization(Scheme::PerChannel {
                axis: 0,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            }),
    );
    add(
        "quant-per-block-int4",
        TensorDescriptor::row_major(E::Int4, &[2, 64], &[cpu(64), cpu(8), cpu(16)])
            .with_quantization(Scheme::PerBlock {
                axis: 1,
                block_size: 32,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
                scale_type: E::Float16,
            }),
    );
    add(
        "quant-nf4",
        TensorDescriptor::row_major(E::UInt4, &[64], &[cpu(32), cpu(4)]).with_quantization(
            Scheme::Nf4 {
                axis: 0,
                block_size: 64,
                scale_buffer: 1,
            },
        ),
    );
    add(
        "quant-mxfp",
        TensorDescriptor::row_major(E::Float8E4M3, &[64], &[cpu(64), cpu(2)]).with_quantization(
            Scheme::Mxfp {
                axis: 0,
                block_size: 32,
                scale_buffer: 1,
            },
        ),
    );
    add(
        "quant-private",
        TensorDescriptor::row_major(E::UInt8, &[64], &[cpu(64)]).with_quantization(
            Scheme::Private {
                tag: 0xF1,
                version: 3,
                flags: 0x8001,
                payload: &[1, 2, 3, 4],
            },
        ),
    );

    // Other sections.
    add(
        "shard",
        TensorDescriptor::row_major(E::Float32, &[2, 4], &[cpu(32)]).with_shard(&[8, 4], &[2, 0]),
    );
    let stats = Statistics::new()
        .with_nnz(6)
        .with_sparsity_ratio(0.25)
        .with_value_range(-1.0, 3.0)
        .with_value_stats(0.5, 1.25)
        .with_nm_sparsity(2, 4)
        .with_nan_inf(false, true);
    add(
        "statistics",
        TensorDescriptor::row_major(E::Float32, &[2, 4], &[cpu(32)]).with_statistics(stats),
    );
    add(
        "extension-type-int4",
        TensorDescriptor::row_major(E::Private(0xF0), &[10], &[cpu(5)])
            .with_extension_type(ExtensionType::integer(4, true)),
    );
    add(
        "extension-type-float8",
        TensorDescriptor::row_major(E::Private(0xF2), &[10], &[cpu(10)])
            .with_extension_type(ExtensionType::float(8, 1, 4, 3, 7, true, false)),
    );
    add(
        "member-base",
        TensorDescriptor::row_major(E::Float32, &[2, 2], &[cpu(16)])
            .with_member_role(MemberRole::Base),
    );
    add(
        "every-section",
        TensorDescriptor::row_major(E::Private(0xF4), &[2, 4], &[cpu(8)])
            .with_extension_type(ExtensionType::integer(8, false))
            .with_quantization(Scheme::Private {
                tag: 0xF2,
                version: 1,
                flags: 0,
                payload: &[9; 8],
            })
            .with_shard(&[8, 4], &[2, 0])
            .with_statistics(Statistics::new().with_nnz(8))
            .with_member_role(MemberRole::Correction),
    );
    v
}

/// Each breaks one rule of a valid descriptor.
fn near_valid(valid: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    let base = &valid
        .iter()
        .find(|(n, _)| n == "row-major-f32-3x4")
        .unwrap()
        .1;
    let set = |at: usize, bytes: &[u8]| {
        let mut b = base.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    let mut minor1 = set(5, &[1]);
    minor1.extend_from_slice(&[0xAB; 4]);
    let len = minor1.len() as u32;
    minor1[6..10].copy_from_slice(&len.to_le_bytes());
    let mut trailing = base.clone();
    trailing.push(0);
    let coo = &valid.iter().find(|(n, _)| n == "coo-10x10").unwrap().1;
    let mut coo_reserved = coo.clone();
    coo_reserved[55] = 1;
    let mut stream = base.clone();
    stream.extend_from_slice(coo);
    vec![
        ("bad-magic".into(), set(0, b"HRAY")),
        ("bad-major".into(), set(4, &[2])),
        ("minor-1-appended".into(), minor1),
        ("bad-length".into(), set(6, &62u32.to_le_bytes())),
        ("truncated".into(), base[..base.len() - 1].to_vec()),
        ("trailing-byte".into(), trailing),
        ("stream-of-two".into(), stream),
        ("reserved-flag".into(), set(10, &[0x20])),
        ("bad-type-tag".into(), set(14, &[0x47])),
        ("bad-layout-tag".into(), set(15, &[0x0C])),
        ("rank-65".into(), set(16, &[65])),
        ("buffer-too-small".into(), set(45, &47u64.to_le_bytes())),
        ("cpu-event-sync".into(), set(58, &[1])),
        ("misaligned-byte-offset".into(), set(36, &[2])),
        ("coo-reserved-byte".into(), coo_reserved),
    ]
}

fn handles() -> Vec<(String, Vec<u8>)> {
    vec![
        ("cpu".into(), entry(24, 64, 0x00, 0, 0, 0)),
        ("cpu-pinned".into(), entry(4096, 4096, 0x00, 0, 1, 0)),
        ("cuda-event".into(), entry(4096, 64, 0x01, 1, 0, 0)),
        ("rocm-peer".into(), entry(1 << 20, 4096, 0x02, 2, 3, 0)),
        ("webgpu".into(), entry(64, 64, 0x05, 1, 0, 0)),
        ("opencl-unified".into(), entry(64, 64, 0x08, 0, 2, 0)),
        (
            "private-device-class".into(),
            entry(128, 128, 0xF3, 1, 0xF7, 0),
        ),
        ("empty-align-1".into(), entry(0, 1, 0x00, 0, 0, 0)),
        ("bad-align-3".into(), entry(64, 3, 0x01, 0, 0, 0)),
        ("bad-align-32".into(), entry(64, 32, 0x01, 0, 0, 0)),
        ("bad-cpu-event".into(), entry(64, 64, 0x00, 1, 0, 0)),
        ("bad-sync-7".into(), entry(64, 64, 0x01, 7, 0, 0)),
        ("bad-device-reserved".into(), entry(64, 64, 0x09, 0, 0, 0)),
        ("bad-device-ff".into(), entry(64, 64, 0xFF, 0, 0, 0)),
        ("bad-class-reserved".into(), entry(64, 64, 0x01, 0, 4, 0)),
        ("bad-cpu-peer".into(), entry(64, 64, 0x00, 0, 3, 0)),
        ("bad-webgpu-unified".into(), entry(64, 64, 0x05, 0, 2, 0)),
        (
            "bad-private-class-named-device".into(),
            entry(64, 64, 0x01, 0, 0xF1, 0),
        ),
        ("bad-reserved".into(), entry(64, 64, 0x01, 0, 0, 1)),
    ]
}

fn tables() -> Vec<(String, Vec<u8>)> {
    let a = entry(4096, 64, 0x01, 1, 0, 0);
    let b = entry(64, 64, 0x01, 2, 0, 0);
    let empty = entry(0, 1, 0x01, 0, 0, 0);
    let cat = |parts: &[&Vec<u8>]| {
        parts
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect::<Vec<u8>>()
    };
    let mut encoded = vec![0u8; 32];
    let hs = [cpu(64), cpu(0)];
    BufferTable::encode(&hs, &mut encoded).unwrap();
    vec![
        ("three-cuda".into(), cat(&[&a, &b, &empty])),
        ("empty-table".into(), Vec::new()),
        ("encoded-cpu".into(), encoded),
        (
            "not-colocated".into(),
            cat(&[&a, &entry(64, 64, 0x00, 0, 0, 0)]),
        ),
        (
            "not-colocated-class".into(),
            cat(&[&a, &entry(64, 64, 0x01, 0, 2, 0)]),
        ),
        (
            "bad-second-entry".into(),
            cat(&[&a, &entry(64, 64, 0x01, 9, 0, 0)]),
        ),
        ("bad-length-17".into(), cat(&[&a, &vec![0]])),
    ]
}

/// The parts, back to back.
fn join<T: AsRef<[u8]>>(parts: &[T]) -> Vec<u8> {
    parts
        .iter()
        .flat_map(|p| p.as_ref().iter().copied())
        .collect()
}

/// Streams (`docs/spec/stream.md`): each small valid descriptor with its
/// data, runs of three, composites of each rule (nested), and broken ones
/// (cut inside a descriptor, inside data, a torn composite, padding).
fn streams(valid: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    use hurray_core::TensorView;
    let with_data = |bytes: &[u8]| -> Option<Vec<u8>> {
        let view = TensorView::parse(bytes).ok()?;
        if view.layout().tag() == 0x0B {
            return None;
        }
        let data: u64 = view.buffers().iter().map(|h| h.byte_size()).sum();
        if data > 1024 {
            return None;
        }
        let mut s = bytes.to_vec();
        s.extend((0..data).map(|i| (i as u8).wrapping_mul(29)));
        Some(s)
    };
    let singles: Vec<(String, Vec<u8>)> = valid
        .iter()
        .filter_map(|(name, d)| Some((format!("one-{name}"), with_data(d)?)))
        .collect();
    let mut v = singles.clone();
    for (i, w) in singles.windows(3).enumerate().step_by(4) {
        v.push((format!("three-{i}"), join(&[&w[0].1, &w[1].1, &w[2].1])));
    }
    let head = |rule, op, n, shape: &[u64]| {
        encode(&TensorDescriptor::new(
            ElementType::Float32,
            shape,
            LayoutSpec::Composite(CompositeHead {
                rule,
                combine_op: op,
                member_count: n,
            }),
            &[],
        ))
    };
    let member = |shape: &[u64], offset: &[u64], role: Option<MemberRole>| {
        let n: u64 = shape.iter().product();
        let b = [cpu(n * 4)];
        let mut d = TensorDescriptor::row_major(ElementType::Float32, shape, &b)
            .with_shard(&[4, 4], offset);
        d.member_role = role;
        let mut s = encode(&d);
        s.extend((0..n * 4).map(|i| i as u8));
        s
    };
    let p = [4u64, 4];
    let partition = join(&[
        &head(CompositionRule::Partition, CombineOp::None, 2, &p),
        &member(&[4, 2], &[0, 0], None),
        &member(&[4, 2], &[0, 2], None),
    ]);
    let overlay = join(&[
        &head(CompositionRule::Overlay, CombineOp::Replace, 2, &p),
        &member(&p, &[0, 0], Some(MemberRole::Base)),
        &member(&[2, 2], &[1, 1], Some(MemberRole::Correction)),
    ]);
    let group = join(&[
        &head(CompositionRule::Group, CombineOp::None, 2, &[1]),
        &partition,
        &overlay,
    ]);
    let nested = join(&[
        &head(CompositionRule::Group, CombineOp::None, 1, &[1]).repeat(8),
        &singles[0].1,
    ]);
    v.push(("partition".into(), partition.clone()));
    v.push(("overlay".into(), overlay));
    v.push(("group-nested".into(), group.clone()));
    v.push(("eight-deep".into(), nested.clone()));
    v.push((
        "nine-deep".into(),
        join(&[
            &head(CompositionRule::Group, CombineOp::None, 1, &[1]),
            &nested,
        ]),
    ));
    v.push(("torn".into(), group[..group.len() - 40].to_vec()));
    v.push((
        "gap".into(),
        join(&[
            &head(CompositionRule::Partition, CombineOp::None, 1, &p),
            &member(&[4, 2], &[0, 0], None),
        ]),
    ));
    v.push(("cut-in-descriptor".into(), singles[1].1[..30].to_vec()));
    let one = &singles[1].1;
    v.push(("cut-in-data".into(), one[..one.len() - 1].to_vec()));
    v.push(("padded".into(), join(&[one, &vec![0; 8], one])));
    v.push(("empty".into(), Vec::new()));
    v
}

fn write(target: &str, seeds: &[(String, Vec<u8>)]) {
    let dir = Path::new("corpus").join(target);
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap();
    }
    fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in seeds {
        fs::write(dir.join(name), bytes).unwrap();
    }
}

fn main() {
    assert!(Path::new("fuzz_targets").is_dir(), "run from fuzz/");
    let valid = descriptors();
    let mut all = valid.clone();
    all.extend(near_valid(&valid));
    let handles = handles();
    let tables = tables();
    let mut both = handles.clone();
    both.extend(tables.iter().cloned());
    // `arbitrary` reads raw bytes: a few shapes of them.
    let raw: Vec<(String, Vec<u8>)> = vec![
        ("zeros-64".into(), vec![0; 64]),
        ("ramp-256".into(), (0..=255).collect()),
        ("ones-128".into(), vec![0xFF; 128]),
        (
            "alternating-96".into(),
            (0..96)
                .map(|i| if i % 2 == 0 { 0x55 } else { 0x0A })
                .collect(),
        ),
    ];
    write("handle", &handles);
    write("table", &tables);
    write("handle_roundtrip", &both);
    write("descriptor", &all);
    write("descriptor_roundtrip", &all);
    write("descriptor_structured", &raw);
    write("dlpack_import", &raw);
    // The stream targets: the differential one reads the stream as is; the
    // split one reads a cut count and cuts first (none, or a few).
    let streams = streams(&valid);
    write("stream_differential", &streams);
    let split: Vec<(String, Vec<u8>)> = streams
        .iter()
        .flat_map(|(name, s)| {
            let third = (s.len() / 3) as u16;
            let cuts = join(&[
                [2u8].as_slice(),
                &third.to_le_bytes(),
                &(2 * third).to_le_bytes(),
            ]);
            [
                (format!("whole-{name}"), join(&[[0u8].as_slice(), s])),
                (format!("thirds-{name}"), join(&[cuts.as_slice(), s])),
            ]
        })
        .collect();
    write("stream_splits", &split);
    let total = handles.len()
        + tables.len()
        + both.len()
        + 2 * all.len()
        + 2 * raw.len()
        + streams.len()
        + split.len();
    println!(
        "wrote {total} seeds ({} valid descriptors, one per layout, scheme and section)",
        valid.len()
    );
}
