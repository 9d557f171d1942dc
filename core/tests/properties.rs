//! Property and hostile-input tests of the descriptor:
//!
//! * random valid descriptors over every layout and optional section are
//!   encoded, parsed, rebuilt (through `DescriptorBuilder::from_view`, or by
//!   hand for the layouts it cannot hold) and re-encoded to the same bytes;
//! * every proper prefix of a valid descriptor is rejected with the exact
//!   truncation error, and no byte flip makes the reader panic; a flip the
//!   reader accepts re-encodes to the flipped bytes (the encoding is
//!   canonical);
//! * arbitrary bytes behind a valid magic never make the reader panic.
//!
//! The generator sizes every buffer with the spec's formulas, written here.

use hurray_core::{
    BufferHandle, Buffers, DYNAMIC, DescriptorBuilder, DescriptorErrorKind as K, DeviceTag,
    ElementType, EncodeError, ExtensionType, Layout, LayoutSpec, MemberRole, MemoryClass,
    Quantization, ReadOptions, Scheme, Statistics, SyncMode, TensorDescriptor, TensorView, Values,
    layout::{
        BlockPaged, CombineOp, CompositeHead, CompositionRule, Compressed, Coo, Hilbert, KvRole,
        TileSpec,
    },
};
use proptest::prelude::*;

/// Private layout ids the round trip uses.
const EXT_IDS: [u64; 2] = [0x5EED, u64::MAX];

fn options() -> ReadOptions<'static> {
    ReadOptions::STRICT
        .with_extension_layouts(&EXT_IDS)
        .with_private_schemes()
        .with_private_composition_rules()
}

/// Draws bounded numbers from proptest's entropy (shrinks toward the
/// smallest choice).
struct Pick {
    vals: Vec<u32>,
    at: usize,
}

impl Pick {
    /// A value in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        let v = self.vals.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        lo + u64::from(v) % (hi - lo + 1)
    }
    fn bool(&mut self) -> bool {
        self.range(0, 1) == 1
    }
    fn one<T: Copy>(&mut self, of: &[T]) -> T {
        of[self.range(0, of.len() as u64 - 1) as usize]
    }
}

/// Bytes of `n` elements of `bits` bits (spec formulas).
fn bytes_for(bits: u32, n: u64) -> u64 {
    match bits {
        6 => n.div_ceil(4) * 3,
        1 | 2 | 4 => (n * u64::from(bits)).div_ceil(8),
        _ => n * u64::from(bits / 8),
    }
}

/// An owned descriptor the generator builds; `spec()` borrows it.
#[derive(Debug, Clone)]
struct Owned {
    ty: ElementType,
    bits: u32,
    shape: Vec<u64>,
    byte_offset: u64,
    layout: OwnedLayout,
    buffers: Vec<BufferHandle>,
    quant: Option<Quantization<'static>>,
    shard: Option<(Vec<u64>, Vec<u64>)>,
    stats: Option<Statistics>,
    ext: Option<ExtensionType>,
    member: Option<MemberRole>,
}

/// One tiled level: tile shape, outer and inner order, their strides.
type OwnedTile = (Vec<u64>, u8, u8, Option<Vec<i64>>, Option<Vec<i64>>);

#[derive(Debug, Clone)]
enum OwnedLayout {
    Row,
    Col,
    Strided(Vec<i64>),
    Tiled(Vec<OwnedTile>),
    Morton(Vec<u32>),
    Coo(Coo),
    Csr(Compressed),
    Csc(Compressed),
    Csf(u64, Vec<u32>),
    Paged(BlockPaged),
    Composite(CompositeHead),
    Hilbert(Hilbert),
    Ext(u8, u64, Vec<u8>),
}

/// Borrows an owned layout as a `LayoutSpec`; `tiles` holds the tile specs.
fn layout_spec<'a>(l: &'a OwnedLayout, tiles: &'a mut Vec<TileSpec<'a>>) -> LayoutSpec<'a> {
    match l {
        OwnedLayout::Row => LayoutSpec::RowMajor,
        OwnedLayout::Col => LayoutSpec::ColumnMajor,
        OwnedLayout::Strided(s) => LayoutSpec::Strided(s),
        OwnedLayout::Tiled(levels) => {
            tiles.extend(levels.iter().map(|(t, o, i, os, is)| TileSpec {
                tile_shape: t,
                outer_layout: *o,
                inner_layout: *i,
                outer_strides: os.as_deref(),
                inner_strides: is.as_deref(),
            }));
            LayoutSpec::Tiled(tiles)
        }
        OwnedLayout::Morton(b) => LayoutSpec::Morton(b),
        OwnedLayout::Coo(c) => LayoutSpec::Coo(*c),
        OwnedLayout::Csr(c) => LayoutSpec::Csr(*c),
        OwnedLayout::Csc(c) => LayoutSpec::Csc(*c),
        OwnedLayout::Csf(nnz, m) => LayoutSpec::Csf {
            nnz: *nnz,
            mode_order: m,
        },
        OwnedLayout::Paged(p) => LayoutSpec::BlockPaged(*p),
        OwnedLayout::Composite(h) => LayoutSpec::Composite(*h),
        OwnedLayout::Hilbert(h) => LayoutSpec::Hilbert(*h),
        OwnedLayout::Ext(tag, id, data) => LayoutSpec::Extension {
            tag: *tag,
            id: *id,
            data,
        },
    }
}

fn encode(o: &Owned) -> Vec<u8> {
    let mut tiles = Vec::new();
    let desc = TensorDescriptor {
        element_type: o.ty,
        shape: Values::Native(&o.shape),
        byte_offset: o.byte_offset,
        layout: layout_spec(&o.layout, &mut tiles),
        buffers: Buffers::Handles(&o.buffers),
        quantization: o.quant,
        shard: o
            .shard
            .as_ref()
            .map(|(p, s)| (Values::Native(p), Values::Native(s))),
        statistics: o.stats,
        extension_type: o.ext,
        member_role: o.member,
    };
    let mut out = vec![0u8; desc.encoded_len()];
    match desc.encode(&mut out) {
        Ok(n) => assert_eq!(n, out.len()),
        Err(e) => panic!("the generator built an invalid descriptor: {e}\n{o:#?}"),
    }
    out
}

/// Re-encodes what a view describes, without the builder: through
/// `TensorView::descriptor`, which borrows the view's fields as they lie.
fn reencode(v: &TensorView<'_>) -> Vec<u8> {
    let desc = v.descriptor();
    let mut out = vec![0u8; desc.encoded_len()];
    desc.encode(&mut out).expect("a parsed view re-encodes");
    out
}

/// A colocated set of buffer handles of these sizes.
fn handles(p: &mut Pick, sizes: &[u64]) -> Vec<BufferHandle> {
    let (dev, sync, class) = p.one(&[
        (
            DeviceTag::Cpu,
            SyncMode::ProducerSynced,
            MemoryClass::Standard,
        ),
        (
            DeviceTag::Cpu,
            SyncMode::ProducerSynced,
            MemoryClass::HostPinned,
        ),
        (DeviceTag::Cuda, SyncMode::Event, MemoryClass::Unified),
        (
            DeviceTag::Rocm,
            SyncMode::ConsumerStream,
            MemoryClass::PeerToPeer,
        ),
        (DeviceTag::WebGpu, SyncMode::Event, MemoryClass::Standard),
        (
            DeviceTag::Private(0xF4),
            SyncMode::Event,
            MemoryClass::Private(0xF9),
        ),
    ]);
    let align = p.one(&[64u32, 128, 4096, 1 << 31]);
    sizes
        .iter()
        .map(|&s| {
            let a = if s == 0 && p.bool() { 1 } else { align };
            BufferHandle::with_memory_class(s, a, dev, sync, class).unwrap()
        })
        .collect()
}

fn dims(p: &mut Pick, rank: u64, lo: u64, hi: u64) -> Vec<u64> {
    (0..rank).map(|_| p.range(lo, hi)).collect()
}

const INT_STORAGE: [ElementType; 10] = [
    ElementType::Int8,
    ElementType::UInt8,
    ElementType::Int16,
    ElementType::UInt16,
    ElementType::Int32,
    ElementType::UInt32,
    ElementType::Int4,
    ElementType::UInt4,
    ElementType::Int2,
    ElementType::UInt2,
];

/// A random valid descriptor.
fn generate(vals: Vec<u32>) -> Owned {
    let mut p = Pick { vals, at: 0 };
    let p = &mut p;
    let mut ty = p.one(ElementType::BUILT_IN);
    let kind = p.range(0, 12);
    let mut o = Owned {
        ty,
        bits: 0,
        shape: Vec::new(),
        byte_offset: 0,
        layout: OwnedLayout::Row,
        buffers: Vec::new(),
        quant: None,
        shard: None,
        stats: None,
        ext: None,
        member: None,
    };
    // Layouts whose data is one buffer holding `elements` from byte_offset.
    let mut data_elements: Option<u64> = None;
    let mut sizes: Vec<u64> = Vec::new();
    let mut nnz = None;
    match kind {
        0 | 1 => {
            // Row- or column-major, possibly a private type, dynamic or quantized.
            let rank = p.range(if kind == 0 { 0 } else { 1 }, 4);
            o.shape = dims(p, rank, 0, 6);
            o.layout = if kind == 0 {
                OwnedLayout::Row
            } else {
                OwnedLayout::Col
            };
            if p.range(0, 4) == 0 {
                let (code, ext) = p.one(&[
                    (0xF0, ExtensionType::integer(4, true)),
                    (0xF7, ExtensionType::integer(16, false)),
                    (0xFE, ExtensionType::float(8, 1, 4, 3, 7, true, false)),
                ]);
                ty = ElementType::Private(code);
                o.ext = Some(ext);
            }
            data_elements = Some(o.shape.iter().product());
            if rank > 0 && p.range(0, 5) == 0 {
                let k = p.range(0, rank - 1) as usize;
                o.shape[k] = DYNAMIC;
                data_elements = None;
                sizes.push(p.range(0, 100));
            }
        }
        2 => {
            // Strided, whole-byte types; negative and zero strides.
            ty = p.one(&[
                ElementType::Float32,
                ElementType::Int8,
                ElementType::Complex128,
                ElementType::Float128,
                ElementType::BFloat16,
            ]);
            let rank = p.range(1, 4);
            o.shape = dims(p, rank, 1, 5);
            let strides: Vec<i64> = (0..rank).map(|_| p.range(0, 12) as i64 - 6).collect();
            let (mut lo, mut hi) = (0i64, 0i64);
            for (&n, &s) in o.shape.iter().zip(&strides) {
                let reach = s * (n as i64 - 1);
                if reach < 0 {
                    lo += reach;
                } else {
                    hi += reach;
                }
            }
            let w = u64::from(ty.bits().unwrap() / 8);
            o.byte_offset = (-lo) as u64 * w;
            sizes.push(o.byte_offset + (hi as u64 + 1) * w + p.range(0, 1) * 64);
            o.layout = OwnedLayout::Strided(strides);
        }
        3 => {
            // Tiled: one or two levels.
            let rank = p.range(1, 3);
            o.shape = dims(p, rank, 1, 6);
            let tile = dims(p, rank, 1, 4);
            let grid: u64 = o
                .shape
                .iter()
                .zip(&tile)
                .map(|(n, t)| n.div_ceil(*t))
                .product();
            let tile_elems: u64 = tile.iter().product();
            let outer = p.one(&[1u8, 2, 3]);
            let outer_strides = (outer == 3).then(|| {
                // Row-major grid strides.
                let g: Vec<u64> = o
                    .shape
                    .iter()
                    .zip(&tile)
                    .map(|(n, t)| n.div_ceil(*t))
                    .collect();
                let mut s = vec![1i64; g.len()];
                for i in (0..g.len().saturating_sub(1)).rev() {
                    s[i] = s[i + 1] * g[i + 1] as i64;
                }
                s
            });
            let mut levels = Vec::new();
            if p.bool() {
                // A nested level whose tiles divide the outer tile.
                let inner_tile: Vec<u64> = tile.iter().map(|&t| p.one(&[1, t])).collect();
                levels.push((tile, outer, 4, outer_strides, None));
                levels.push((inner_tile, p.one(&[1u8, 2]), p.one(&[1u8, 2]), None, None));
            } else {
                let inner = p.one(&[1u8, 2, 3]);
                let inner_strides = (inner == 3).then(|| {
                    let mut s = vec![1i64; tile.len()];
                    for i in (0..tile.len().saturating_sub(1)).rev() {
                        s[i] = s[i + 1] * tile[i + 1] as i64;
                    }
                    s
                });
                levels.push((tile, outer, inner, outer_strides, inner_strides));
            }
            o.layout = OwnedLayout::Tiled(levels);
            data_elements = Some(grid * tile_elems);
        }
        4 => {
            let rank = p.range(1, 3);
            let bits: Vec<u32> = (0..rank).map(|_| p.range(1, 3) as u32).collect();
            o.shape = bits.iter().map(|&b| p.range(1, 1 << b)).collect();
            data_elements = Some(1 << bits.iter().sum::<u32>());
            o.layout = OwnedLayout::Morton(bits);
        }
        5 => {
            let rank = p.range(2, 3);
            let order = p.range(1, 2) as u32;
            o.shape = vec![1 << order; rank as usize];
            data_elements = Some(1 << (rank as u32 * order));
            o.layout = OwnedLayout::Hilbert(Hilbert {
                order,
                rank: rank as u32,
            });
        }
        6 => {
            let rank = p.range(1, 3);
            o.shape = dims(p, rank, 1, 5);
            let n = p.range(0, 10);
            nnz = Some(n);
            sizes = vec![0, n * rank * 8];
            o.layout = OwnedLayout::Coo(Coo {
                nnz: n,
                sorted: p.bool(),
            });
        }
        7 | 8 => {
            o.shape = dims(p, 2, 0, 5);
            let n = p.range(0, 10);
            nnz = Some(n);
            let major = o.shape[if kind == 7 { 0 } else { 1 }];
            sizes = vec![0, n * 8, (major + 1) * 8];
            let c = Compressed { nnz: n };
            o.layout = if kind == 7 {
                OwnedLayout::Csr(c)
            } else {
                OwnedLayout::Csc(c)
            };
        }
        9 => {
            let rank = p.range(3, 4);
            o.shape = dims(p, rank, 1, 4);
            let n = p.range(0, 8);
            nnz = Some(n);
            let mut order: Vec<u32> = (0..rank as u32).collect();
            for i in (1..order.len()).rev() {
                let j = p.range(0, i as u64) as usize;
                order.swap(i, j);
            }
            sizes = vec![0];
            let mut parents = 1u64;
            for level in 0..rank {
                let nodes = if level + 1 == rank { n } else { p.range(0, 4) };
                sizes.push((parents + 1) * 8);
                sizes.push(nodes * 8);
                parents = nodes;
            }
            o.layout = OwnedLayout::Csf(n, order);
        }
        10 => {
            o.shape = vec![p.range(0, 20), p.range(1, 3), p.range(1, 4)];
            let b = BlockPaged {
                page_size: p.range(1, 5) as u32,
                num_pages: p.range(0, 5),
                num_seqs: p.range(0, 4) as u32,
                kv_role: p.one(&[KvRole::Key, KvRole::Value, KvRole::Fused]),
                layer_index: p.one(&[None, Some(0), Some(31)]),
                wide_indices: p.bool(),
            };
            let w = b.index_width();
            let pool = b.num_pages * u64::from(b.page_size) * o.shape[1] * o.shape[2];
            o.bits = ty.bits().unwrap();
            sizes = vec![
                bytes_for(o.bits, pool),
                p.range(0, 6) * w,
                (u64::from(b.num_seqs) + 1) * w,
            ];
            o.layout = OwnedLayout::Paged(b);
        }
        11 => {
            let rank = p.range(1, 3);
            o.shape = dims(p, rank, 0, 9);
            let rule = p.one(&[
                CompositionRule::Partition,
                CompositionRule::Overlay,
                CompositionRule::Group,
                CompositionRule::Private(0xF2),
            ]);
            let combine_op = match rule {
                CompositionRule::Overlay => p.one(&[CombineOp::Replace, CombineOp::Add]),
                _ => CombineOp::None,
            };
            let min = u64::from(rule == CompositionRule::Overlay);
            o.layout = OwnedLayout::Composite(CompositeHead {
                rule,
                combine_op,
                member_count: p.range(min, 5) as u32,
            });
        }
        _ => {
            let rank = p.range(1, 3);
            o.shape = dims(p, rank, 0, 9);
            let data: Vec<u8> = (0..p.range(0, 8)).map(|_| p.range(0, 255) as u8).collect();
            o.layout = OwnedLayout::Ext(p.range(0xF0, 0xFE) as u8, p.one(&EXT_IDS), data);
            let first = p.range(0, 4) * 16;
            sizes = vec![first];
            for _ in 0..p.range(0, 2) {
                sizes.push(p.range(0, 100));
            }
            o.byte_offset = first / 16 * 16 * p.range(0, 1);
        }
    }
    o.ty = ty;
    o.bits = match o.ext {
        Some(e) => e.bit_width(),
        None => ty.bits().unwrap(),
    };
    // Values buffer of a sparse layout.
    if let Some(n) = nnz {
        sizes[0] = bytes_for(o.bits, n) + p.range(0, 1) * 8;
    }
    // Quantization of a dense row- or column-major tensor.
    let dense = matches!(o.layout, OwnedLayout::Row | OwnedLayout::Col);
    if dense
        && data_elements.is_some()
        && !o.shape.is_empty()
        && o.shape.iter().all(|&n| n > 0)
        && p.range(0, 2) == 0
    {
        o.ty = p.one(&INT_STORAGE);
        o.ext = None;
        let rank = o.shape.len() as u64;
        let axis = p.range(0, rank - 1) as u32;
        let symmetric = p.bool();
        let scheme = p.range(0, 4);
        // NF4 and MXFP need longer axes.
        if scheme == 3 {
            o.shape[axis as usize] = p.one(&[8, 16, 24]);
        } else if scheme == 4 {
            o.shape[axis as usize] = 16 * p.range(1, 4);
        }
        let along = o.shape[axis as usize];
        let count: u64 = o.shape.iter().product();
        data_elements = Some(count);
        // Blocks of `k` along the axis: (block count, padded element count).
        let blocks = |k: u64| {
            let b = along.div_ceil(k) * (count / along);
            (b, b * k)
        };
        match scheme {
            0 => {
                let (lo, hi) = o.ty.integer_range().unwrap();
                let zp = p.range(0, (hi - lo).min(1000) as u64) as i64 + lo;
                o.quant = Some(Quantization::new(Scheme::PerTensor {
                    scale: p.one(&[0.5f32, -3.25, 1e-30]),
                    zero_point: zp as i32,
                }));
            }
            1 => {
                let shared = !symmetric && p.bool();
                o.quant = Some(Quantization::new(Scheme::PerChannel {
                    axis,
                    scale_buffer: 1,
                    zero_point_buffer: (!symmetric).then_some(if shared { 1 } else { 2 }),
                }));
                sizes = match (symmetric, shared) {
                    (true, _) => vec![along * 4],
                    (false, true) => vec![along * 8],
                    (false, false) => vec![along * 4, along * 4],
                };
            }
            2 if along >= 2 => {
                o.ty = p.one(&[ElementType::Int8, ElementType::UInt4, ElementType::Int2]);
                let k = 1u64 << p.range(1, 63 - u64::from(along.leading_zeros())) as u32;
                let (n, padded) = blocks(k);
                let scale_type = p.one(&[
                    ElementType::Float16,
                    ElementType::BFloat16,
                    ElementType::Float32,
                ]);
                let width = if scale_type == ElementType::Float32 {
                    4
                } else {
                    2
                };
                o.quant = Some(Quantization {
                    scheme: Scheme::PerBlock {
                        axis,
                        block_size: k as u32,
                        scale_buffer: 1,
                        zero_point_buffer: (!symmetric).then_some(2),
                        scale_type,
                    },
                    padding: p.one(&[0u32, 0, 4]),
                });
                sizes = vec![n * width];
                if !symmetric {
                    sizes.push(n * 4);
                }
                data_elements = Some(padded);
            }
            3 => {
                o.ty = ElementType::UInt4;
                let k = p.one(&[8u64, 16]).min(along);
                let (n, padded) = blocks(k);
                o.quant = Some(Quantization::new(Scheme::Nf4 {
                    axis,
                    block_size: k as u32,
                    scale_buffer: 1,
                }));
                sizes = vec![n * 4];
                data_elements = Some(padded);
            }
            4 => {
                o.ty = p.one(&[
                    ElementType::Float8E4M3,
                    ElementType::Float4E2M1,
                    ElementType::Float6E3M2,
                    ElementType::Int8,
                    ElementType::Int4,
                ]);
                let k = p.one(&[16u64, 16, 32]);
                let k = if along.is_multiple_of(k) { k } else { 16 };
                o.quant = Some(Quantization::new(Scheme::Mxfp {
                    axis,
                    block_size: k as u32,
                    scale_buffer: 1,
                }));
                sizes = vec![blocks(k).0];
            }
            _ => {}
        }
        o.bits = o.ty.bits().unwrap();
        // The data buffer comes first; its size is set below.
        sizes.insert(0, 0);
    }
    // The data buffer of a one-buffer layout, with byte_offset.
    if let Some(n) = data_elements {
        let need = bytes_for(o.bits, n);
        let align = u64::from(o.ty.natural_alignment());
        let slack = p.range(0, 2) * 16;
        if !matches!(
            o.layout,
            OwnedLayout::Tiled(_) | OwnedLayout::Morton(_) | OwnedLayout::Hilbert(_)
        ) {
            o.byte_offset = slack / align * align;
        }
        let size = need + slack;
        if sizes.is_empty() {
            sizes.push(size);
        } else {
            sizes[0] = size;
        }
    }
    o.buffers = handles(p, &sizes);
    // Optional sections.
    let sparse_nnz = nnz;
    if p.range(0, 2) == 0 {
        let mut s = Statistics::new();
        if p.bool() {
            s = s.with_nnz(sparse_nnz.unwrap_or(p.range(0, 99)));
        }
        if p.bool() {
            s = s.with_sparsity_ratio(p.one(&[0.0, 0.25, 1.0]));
        }
        if p.bool() {
            let lo = p.range(0, 10) as f64 - 5.0;
            s = s.with_value_range(lo, lo + p.range(0, 3) as f64);
        }
        if p.bool() {
            s = s.with_value_stats(-1.5, p.one(&[0.0, 2.0]));
        }
        if p.bool() {
            let m = p.range(0, 8) as u8;
            s = s.with_nm_sparsity(p.range(0, u64::from(m)) as u8, m);
        }
        if p.bool() {
            s = s.with_nan_inf(p.bool(), p.bool());
        }
        o.stats = Some(s);
    }
    let shardable = !matches!(o.layout, OwnedLayout::Csf(..) | OwnedLayout::Paged(_))
        && !o.shape.contains(&DYNAMIC);
    if shardable && p.range(0, 2) == 0 {
        let extra: Vec<u64> = o.shape.iter().map(|_| p.range(0, 4)).collect();
        let parent = o.shape.iter().zip(&extra).map(|(n, e)| n + e).collect();
        let offset = extra.iter().map(|&e| p.range(0, e)).collect();
        o.shard = Some((parent, offset));
    }
    if !matches!(o.layout, OwnedLayout::Composite(_)) && p.range(0, 3) == 0 {
        o.member = Some(p.one(&[MemberRole::Base, MemberRole::Correction]));
    }
    o
}

fn cases() -> u32 {
    if cfg!(miri) { 2 } else { 512 }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// MD-ROUNDTRIP-1: encode, parse, rebuild, re-encode reproduces bytes.
    #[test]
    fn md_roundtrip_1_encode_parse_rebuild_encode(vals in prop::collection::vec(any::<u32>(), 96)) {
        let o = generate(vals);
        let bytes = encode(&o);
        let v = TensorView::parse_with(&bytes, &options())
            .unwrap_or_else(|e| panic!("encoded bytes rejected: {e}\n{o:#?}"));
        prop_assert_eq!(v.element_type(), o.ty);
        prop_assert!(v.shape().iter().eq(o.shape.iter().copied()));
        prop_assert_eq!(v.byte_offset(), o.byte_offset);
        prop_assert!(v.buffers().iter().eq(o.buffers.iter().copied()));
        prop_assert_eq!(v.quantization(), o.quant);
        prop_assert_eq!(v.statistics(), o.stats);
        prop_assert_eq!(v.extension_type(), o.ext);
        prop_assert_eq!(v.member_role(), o.member);
        prop_assert_eq!(v.shard().is_some(), o.shard.is_some());
        prop_assert_eq!(v.as_bytes(), &bytes[..]);
        // The field walker covers every byte once, in order, and reads
        // the values the view reports.
        let (mut at, mut shape) = (0, Vec::new());
        v.for_each_field(|f| {
            assert_eq!(f.offset, at, "{} starts a gap or an overlap", f.path);
            assert!(!f.bytes.is_empty(), "{} is empty", f.path);
            at = f.range().end;
            if f.path.part.is_empty() && f.path.name == "shape" {
                shape.push(f.value.as_u64().expect("shape is u64"));
            }
        });
        prop_assert_eq!(at, bytes.len());
        prop_assert!(v.shape().iter().eq(shape));
        prop_assert_eq!(reencode(&v), bytes.clone());
        // Through the fixed-capacity builder, for the layouts it holds.
        match DescriptorBuilder::<8, 16>::from_view(&v) {
            Ok(b) => {
                let mut out = vec![0u8; bytes.len()];
                prop_assert_eq!(b.encode(&mut out), Ok(bytes.len()));
                prop_assert_eq!(out, bytes.clone());
            }
            Err(_) => prop_assert!(
                matches!(v.layout(), Layout::Tiled(_) | Layout::Extension(_))
            ),
        }
        // One descriptor exactly: a trailing byte is not part of it.
        let mut longer = bytes.clone();
        longer.push(0);
        let e = TensorView::parse_with(&longer, &options()).unwrap_err();
        prop_assert_eq!(
            e.kind(),
            K::TrailingBytes { declared: bytes.len() as u32, available: bytes.len() as u64 + 1 }
        );
    }

    /// MD-HOSTILE-1 (random bytes): nothing behind a valid magic, version and
    /// length makes the reader panic.
    #[test]
    fn md_hostile_1_random_bodies_never_panic(
        body in prop::collection::vec(any::<u8>(), 0..if cfg!(miri) { 64 } else { 300 })
    ) {
        let mut bytes = b"HRRY\x01\x00".to_vec();
        bytes.extend((body.len() as u32 + 10).to_le_bytes());
        bytes.extend(&body);
        let _ = TensorView::parse(&bytes);
        let _ = TensorView::parse_with(&bytes, &options());
        let _ = TensorView::parse(&body);
    }
}

/// MD-HOSTILE-1: every proper prefix of valid descriptors is rejected with
/// the exact truncation error; every single-byte change is either rejected
/// or re-encodes to the changed bytes; nothing panics.
#[test]
fn md_hostile_1_truncations_and_flips() {
    let n: u32 = if cfg!(miri) { 1 } else { 64 };
    let mut corpus = Vec::new();
    for seed in 0..n {
        let vals: Vec<u32> = (0..96u32)
            .map(|i| {
                seed.wrapping_mul(2_654_435_761u32)
                    .wrapping_add(i.wrapping_mul(40_503))
                    .rotate_left(i % 31)
            })
            .collect();
        corpus.push(encode(&generate(vals)));
    }
    let opts = options();
    let mut accepted_flips = 0;
    for bytes in &corpus {
        let declared = bytes.len() as u64;
        for len in 0..bytes.len() {
            let e = TensorView::parse_with(&bytes[..len], &opts).unwrap_err();
            let want = if len < 20 {
                (
                    0,
                    K::Truncated {
                        needed: 20,
                        available: len as u64,
                    },
                )
            } else {
                (
                    6,
                    K::Truncated {
                        needed: declared,
                        available: len as u64,
                    },
                )
            };
            assert_eq!((e.offset(), e.kind()), want);
        }
        let positions: Vec<usize> = if cfg!(miri) {
            (0..bytes.len()).step_by(17).collect()
        } else {
            (0..bytes.len()).collect()
        };
        for i in positions {
            for mask in [0x01u8, 0x80, 0xFF]
                .into_iter()
                .step_by(if cfg!(miri) { 2 } else { 1 })
            {
                let mut b = bytes.clone();
                b[i] ^= mask;
                if let Ok(v) = TensorView::parse_with(&b, &opts) {
                    accepted_flips += 1;
                    if v.version() == (1, 0) {
                        assert_eq!(reencode(&v), b, "flip of byte {i} by {mask:#x}");
                    }
                }
            }
        }
    }
    // Some flips land in free values (sizes, shape, strides): the test
    // exercised the accepting path too (Miri samples too few to be sure).
    assert!(accepted_flips > 0 || cfg!(miri));
}

/// The generator reaches every layout, scheme and optional section (so the
/// round trip above covers them).
#[test]
fn md_roundtrip_1_generator_covers_every_part() {
    use std::collections::BTreeSet;
    let n: u32 = if cfg!(miri) { 0 } else { 3000 };
    let mut layouts = BTreeSet::new();
    let mut schemes = BTreeSet::new();
    let mut flags = 0u32;
    for seed in 0..n {
        let vals: Vec<u32> = (0..96u32)
            .map(|i| {
                seed.wrapping_mul(0x9E37_79B9)
                    .wrapping_add(i)
                    .rotate_left(seed % 29 + i % 3)
                    ^ i.wrapping_mul(seed | 1)
            })
            .collect();
        let bytes = encode(&generate(vals));
        let v = TensorView::parse_with(&bytes, &options()).unwrap();
        let tag = v.layout().tag();
        layouts.insert(if tag >= 0xF0 { 0xF0 } else { tag });
        if let Some(q) = v.quantization() {
            schemes.insert(q.scheme.tag());
        }
        flags |= v.flags().bits();
    }
    if n > 0 {
        assert_eq!(layouts.len(), 13, "{layouts:x?}");
        assert_eq!(schemes, BTreeSet::from([1, 2, 3, 4, 5]));
        assert_eq!(flags, 0b1_1111);
    }
}

// ---------------------------------------------------------------------------
// The encoder's verdict is the parser's (the proof of "correct by
// construction"): `TensorDescriptor::encode` checks its values with the
// parser's rules and never reads its output back, so these tests read it
// back for it. Whatever it accepts must parse to the same values; whatever it
// refuses as `Invalid` must be refused by the parser with the same error
// (kind and offset) on the bytes it wrote (`encode` leaves them in `out`).
// ---------------------------------------------------------------------------

/// Encodes `desc` and compares the encoder's verdict with the parser's on
/// the bytes written. Returns whether the encoder accepted.
fn verdict_agrees(desc: &TensorDescriptor<'_>, ids: &[u64]) -> bool {
    let mut out = vec![0u8; desc.encoded_len()];
    let verdict = desc.encode(&mut out);
    let options = ReadOptions::STRICT
        .with_extension_layouts(ids)
        .with_private_schemes()
        .with_private_composition_rules();
    let parsed = TensorView::parse_with(&out, &options);
    match (verdict, parsed) {
        (Ok(n), Ok(v)) => {
            assert_eq!(n, out.len());
            assert_eq!(v.element_type(), desc.element_type);
            assert!(v.shape().iter().eq(desc.shape.iter()));
            assert_eq!(v.byte_offset(), desc.byte_offset);
            assert!(v.buffers().iter().eq(desc.buffers.iter()));
            assert_eq!(v.quantization(), desc.quantization);
            assert_eq!(v.statistics(), desc.statistics);
            assert_eq!(v.extension_type(), desc.extension_type);
            assert_eq!(v.member_role(), desc.member_role);
            assert_eq!(v.layout().tag(), desc.layout.tag());
            match (v.shard(), desc.shard) {
                (Some(s), Some((p, o))) => {
                    assert!(s.parent_shape.iter().eq(p.iter()));
                    assert!(s.shard_offset.iter().eq(o.iter()));
                }
                (None, None) => {}
                (a, b) => panic!("shard read back as {a:?}, written as {b:?}"),
            }
            // The parsed values re-encode to the same bytes (the layout's
            // fields included).
            assert_eq!(reencode(&v), out);
            true
        }
        (Ok(_), Err(e)) => panic!("the encoder accepted bytes the parser refuses: {e}\n{desc:#?}"),
        (Err(EncodeError::Invalid(e)), Err(r)) => {
            assert_eq!(
                e, r,
                "the encoder and the parser refuse differently\n{desc:#?}"
            );
            false
        }
        (Err(EncodeError::Invalid(e)), Ok(_)) => {
            panic!("the encoder refused ({e}) bytes the parser accepts\n{desc:#?}")
        }
        // Values with no encoding (lengths that disagree, more than 255
        // buffers, codes and arrays that disagree): no bytes to judge.
        (Err(_), _) => false,
    }
}

/// The descriptor `o` describes, borrowed (`tiles` holds the tile specs).
fn describe<'a>(o: &'a Owned, tiles: &'a mut Vec<TileSpec<'a>>) -> TensorDescriptor<'a> {
    TensorDescriptor {
        element_type: o.ty,
        shape: Values::Native(&o.shape),
        byte_offset: o.byte_offset,
        layout: layout_spec(&o.layout, tiles),
        buffers: Buffers::Handles(&o.buffers),
        quantization: o.quant,
        shard: o
            .shard
            .as_ref()
            .map(|(p, s)| (Values::Native(p), Values::Native(s))),
        statistics: o.stats,
        extension_type: o.ext,
        member_role: o.member,
    }
}

/// A handle like `h` with another size (alignment raised where a
/// non-empty buffer needs it).
fn resized(h: BufferHandle, size: u64) -> BufferHandle {
    BufferHandle::with_memory_class(
        size,
        h.alignment().max(64),
        h.device_tag(),
        h.sync_mode(),
        h.memory_class(),
    )
    .unwrap()
}

/// One change to a descriptor's values, drawn from `p`: most break a rule
/// of the spec, some keep the descriptor valid, a few leave values with no
/// encoding.
fn mutate(o: &mut Owned, p: &mut Pick) {
    let rank = o.shape.len() as u64;
    match p.range(0, 12) {
        0 if rank > 0 => {
            let k = p.range(0, rank - 1) as usize;
            o.shape[k] = p.one(&[0, 1, 2, 7, 64, DYNAMIC, 1 << 40]);
        }
        1 => o.byte_offset = o.byte_offset.wrapping_add(p.one(&[1, 2, 64, 1 << 62])),
        2 if !o.buffers.is_empty() => {
            let k = p.range(0, o.buffers.len() as u64 - 1) as usize;
            let h = o.buffers[k];
            let size = p.one(&[0, 1, h.byte_size() + 1, h.byte_size().saturating_sub(1)]);
            o.buffers[k] = resized(h, size);
        }
        3 => {
            o.buffers.pop();
        }
        4 => {
            if let Some(&h) = o.buffers.last() {
                o.buffers.push(h);
            }
        }
        5 => {
            if let Some(last) = o.buffers.last_mut() {
                *last = BufferHandle::new(last.byte_size(), 64, DeviceTag::Cuda, SyncMode::Event)
                    .unwrap();
            }
        }
        6 => o.ty = p.one(ElementType::BUILT_IN),
        7 => mutate_layout(o, p),
        8 => match &mut o.quant {
            Some(q) => match &mut q.scheme {
                Scheme::PerTensor { scale, zero_point } => {
                    if p.bool() {
                        *scale = p.one(&[0.0, f32::NAN, f32::INFINITY]);
                    } else {
                        *zero_point = 100_000;
                    }
                }
                Scheme::PerChannel {
                    axis,
                    zero_point_buffer,
                    ..
                } => {
                    if p.bool() {
                        *axis += 1;
                    } else {
                        *zero_point_buffer = Some(p.one(&[u32::MAX, 7]));
                    }
                }
                Scheme::PerBlock {
                    block_size,
                    scale_type,
                    ..
                } => {
                    if p.bool() {
                        *block_size = p.one(&[1, 3, *block_size * 2]);
                    } else {
                        *scale_type = ElementType::Int8;
                    }
                }
                Scheme::Nf4 { block_size, .. } | Scheme::Mxfp { block_size, .. } => {
                    *block_size = p.one(&[4, *block_size * 2, 4096]);
                }
                _ => q.padding += 1,
            },
            None => {
                o.quant = Some(Quantization::new(Scheme::PerTensor {
                    scale: 1.0,
                    zero_point: 0,
                }));
            }
        },
        9 => {
            let s = Statistics::new();
            o.stats = Some(p.one(&[
                s.with_nnz(3),
                s.with_value_range(1.0, -1.0),
                s.with_nm_sparsity(4, 2),
                s.with_sparsity_ratio(2.0),
                s.with_value_stats(0.0, -1.0),
            ]));
        }
        10 => match &mut o.shard {
            Some((_, offset)) if rank > 0 => {
                let k = p.range(0, rank - 1) as usize;
                offset[k] = offset[k].wrapping_add(p.one(&[1, u64::MAX]));
            }
            _ => o.shard = Some((o.shape.clone(), vec![0; o.shape.len()])),
        },
        11 => o.member = Some(MemberRole::Base),
        _ => o.ext = Some(ExtensionType::integer(p.one(&[3, 8, 12]), true)),
    }
}

/// One change to the layout's fields.
fn mutate_layout(o: &mut Owned, p: &mut Pick) {
    match &mut o.layout {
        OwnedLayout::Row => o.layout = OwnedLayout::Col,
        OwnedLayout::Col => o.layout = OwnedLayout::Row,
        OwnedLayout::Strided(s) => {
            if let Some(x) = s.first_mut() {
                *x = x.wrapping_add(p.one(&[1, -1, 1 << 40, i64::MIN]));
            }
        }
        OwnedLayout::Tiled(levels) => {
            let Some(l) = levels.first_mut() else { return };
            match p.range(0, 3) {
                0 => l.0[0] = p.one(&[0, l.0[0] + 1, u64::MAX]),
                1 => l.1 = p.one(&[0, 2, 9]),
                2 => l.2 = p.one(&[0, 1, 4, 9]),
                _ => levels.push(levels[0].clone()),
            }
        }
        OwnedLayout::Morton(b) => {
            if let Some(x) = b.first_mut() {
                *x = p.one(&[0, 1, 64]);
            }
        }
        OwnedLayout::Coo(c) => c.nnz += 1,
        OwnedLayout::Csr(c) | OwnedLayout::Csc(c) => {
            c.nnz = c.nnz.wrapping_add(p.one(&[1, u64::MAX]))
        }
        OwnedLayout::Csf(nnz, m) => {
            if p.bool() {
                *nnz += 1;
            } else if m.len() > 1 {
                m[0] = m[1];
            }
        }
        OwnedLayout::Paged(b) => {
            if p.bool() {
                b.page_size = p.one(&[0, b.page_size * 2]);
            } else {
                b.num_seqs += 1;
            }
        }
        OwnedLayout::Composite(h) => {
            if p.bool() {
                h.combine_op = CombineOp::Add;
            } else {
                h.member_count = p.one(&[0, u32::MAX]);
            }
        }
        OwnedLayout::Hilbert(h) => {
            if p.bool() {
                h.order += 1;
            } else {
                h.rank += 1;
            }
        }
        OwnedLayout::Ext(tag, _, data) => {
            if p.bool() {
                *tag = p.one(&[0xF0, 0xFE, 0x01, 0x0C]);
            } else {
                data.push(7);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// MD-ROUNDTRIP-1 (the writer half): a valid descriptor changed in one
    /// value — whatever the encoder accepts parses back to the same values,
    /// whatever it refuses the parser refuses with the same error.
    #[test]
    fn md_roundtrip_1_encoder_verdict_is_the_parsers(
        vals in prop::collection::vec(any::<u32>(), 96),
        changes in prop::collection::vec(any::<u32>(), 8),
    ) {
        let mut o = generate(vals);
        // Unchanged, the generator's descriptor is valid.
        let mut tiles = Vec::new();
        prop_assert!(verdict_agrees(&describe(&o, &mut tiles), &EXT_IDS));
        let mut p = Pick { vals: changes, at: 0 };
        let n = p.range(1, 2);
        for _ in 0..n {
            mutate(&mut o, &mut p);
        }
        let mut tiles = Vec::new();
        verdict_agrees(&describe(&o, &mut tiles), &EXT_IDS);
    }
}

/// The committed fuzz corpora's descriptors: each one the parser accepts,
/// re-encoded from its view (the encoder accepts it, with the same bytes)
/// and then changed in one value at a time (shape, `byte_offset`, a
/// buffer's size, the buffer count): the encoder's verdict is the parser's.
#[test]
fn md_roundtrip_1_encoder_verdict_over_the_fuzz_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut files = Vec::new();
    for dir in ["descriptor", "descriptor_roundtrip", "differential"] {
        let mut names: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        files.extend(names);
    }
    let limit = if cfg!(miri) { 6 } else { files.len() };
    let (mut accepted, mut refused) = (0, 0);
    for path in files.iter().take(limit) {
        let bytes = std::fs::read(path).unwrap();
        let Ok((view, _)) = TensorView::parse_prefix_with(&bytes, &options()) else {
            continue;
        };
        let desc = view.descriptor();
        assert!(verdict_agrees(&desc, &EXT_IDS), "{}", path.display());
        if view.version() == (1, 0) {
            assert_eq!(reencode(&view), view.as_bytes(), "{}", path.display());
        }
        let shape: Vec<u64> = view.shape().iter().collect();
        let handles: Vec<BufferHandle> = view.buffers().iter().collect();
        let mut variants: Vec<(Vec<u64>, u64, Vec<BufferHandle>)> = Vec::new();
        for k in 0..shape.len() {
            for d in [0, 1, shape[k].wrapping_add(1), DYNAMIC] {
                let mut s = shape.clone();
                s[k] = d;
                variants.push((s, desc.byte_offset, handles.clone()));
            }
        }
        for b in [1, 2, 64] {
            variants.push((shape.clone(), desc.byte_offset + b, handles.clone()));
        }
        for k in 0..handles.len() {
            for size in [
                0,
                handles[k].byte_size() + 1,
                handles[k].byte_size().saturating_sub(1),
            ] {
                let mut h = handles.clone();
                h[k] = resized(h[k], size);
                variants.push((shape.clone(), desc.byte_offset, h));
            }
        }
        variants.push((
            shape.clone(),
            desc.byte_offset,
            handles[..handles.len().saturating_sub(1)].to_vec(),
        ));
        for (s, byte_offset, h) in &variants {
            let mut d = desc;
            d.shape = Values::Native(s);
            d.byte_offset = *byte_offset;
            d.buffers = Buffers::Handles(h);
            let accepts = verdict_agrees(&d, &EXT_IDS);
            if accepts {
                accepted += 1;
            } else {
                refused += 1;
            }
            // The same values under the native spec, which the encoder's
            // one-pass acceptance reads for these layouts.
            if let Some(layout) = native_plain(view.layout()) {
                d.layout = layout;
                assert_eq!(verdict_agrees(&d, &EXT_IDS), accepts, "{}", path.display());
            }
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "accepted {accepted}, refused {refused}"
    );
}

/// The native spec of a parsed row-, column-major, CSR or CSC layout.
fn native_plain(layout: Layout<'_>) -> Option<LayoutSpec<'static>> {
    match layout {
        Layout::RowMajor => Some(LayoutSpec::RowMajor),
        Layout::ColumnMajor => Some(LayoutSpec::ColumnMajor),
        Layout::Csr(c) => Some(LayoutSpec::Csr(c)),
        Layout::Csc(c) => Some(LayoutSpec::Csc(c)),
        _ => None,
    }
}

/// The encoder accepts plain dense and compressed descriptors (no
/// optional section, a public type) by one pass of its own; on each edge of
/// the rules that pass stands for — the rank bound, a column-major scalar,
/// the buffer count, colocation, `byte_offset` in range and aligned, a
/// dynamic or overflowing shape (with and without a zero), the data
/// buffer's size, a compressed layout's rank, index and pointer sizes and
/// their overflow — its verdict is the parser's, for native and wire
/// shapes, native handles and a parsed table.
#[test]
fn md_roundtrip_1_encoder_verdict_on_the_plain_families() {
    let handle = |size: u64, dev: DeviceTag| {
        let sync = if dev == DeviceTag::Cpu {
            SyncMode::ProducerSynced
        } else {
            SyncMode::Event
        };
        BufferHandle::with_memory_class(size, 64, dev, sync, MemoryClass::Standard).unwrap()
    };
    let types: &[ElementType] = if cfg!(miri) {
        &[ElementType::Int4]
    } else {
        ElementType::BUILT_IN
    };
    let big = 1u64 << 40;
    let shapes: Vec<Vec<u64>> = vec![
        vec![],
        vec![0],
        vec![3, 4],
        vec![5, 3],
        vec![DYNAMIC, 4],
        vec![big, big],
        vec![big, big, 0],
        vec![u64::MAX - 1, 2],
        vec![2, 3, 4],
        vec![1; 64],
        vec![1; 65],
    ];
    let shapes = if cfg!(miri) {
        &shapes[2..8]
    } else {
        &shapes[..]
    };
    let (mut accepted, mut refused, mut seen) = (0, 0, 0u32);
    let mut judge = |d: &TensorDescriptor<'_>| {
        // Miri interprets every 64th case.
        seen += 1;
        if cfg!(miri) && seen % 64 != 0 {
            return;
        }
        let accepts = verdict_agrees(d, &EXT_IDS);
        if accepts {
            // Again from the parsed view: a wire shape and a parsed table.
            let mut out = vec![0u8; d.encoded_len()];
            let len = d.encode(&mut out).unwrap();
            let view = TensorView::parse(&out[..len]).unwrap();
            let mut again = view.descriptor();
            again.layout = native_plain(view.layout()).unwrap();
            assert!(verdict_agrees(&again, &EXT_IDS));
            again.byte_offset += 1;
            verdict_agrees(&again, &EXT_IDS);
            accepted += 1;
        } else {
            refused += 1;
        }
    };
    for &ty in types {
        let width = |n: u64| ty.storage_bytes(n).unwrap_or(u64::MAX);
        let align = u64::from(ty.natural_alignment());
        for shape in shapes {
            let count = shape.iter().try_fold(1u64, |a, &n| a.checked_mul(n));
            let count = if shape.contains(&0) { Some(0) } else { count };
            let needed = count.map_or(64, width);
            // Dense: byte_offset and buffer 0's size around their edges.
            for layout in [LayoutSpec::RowMajor, LayoutSpec::ColumnMajor] {
                for offset in [0, 1, align, 2 * align] {
                    for size in [
                        needed.saturating_add(offset),
                        needed.saturating_add(offset).saturating_sub(1),
                        needed.saturating_add(offset).saturating_add(1),
                        offset.saturating_sub(1),
                    ] {
                        let one = [handle(size, DeviceTag::Cuda)];
                        let mut d =
                            TensorDescriptor::new(ty, shape, layout, &one).with_byte_offset(offset);
                        judge(&d);
                        let two = [one[0], handle(0, DeviceTag::Cuda)];
                        d.buffers = Buffers::Handles(&two);
                        judge(&d);
                    }
                }
            }
            // Quantized dense: each scheme's parameter buffers (count,
            // indices, sizes) around their edges.
            for q in quantized_edges(shape) {
                let (scheme, sizes) = q;
                for layout in [LayoutSpec::RowMajor, LayoutSpec::ColumnMajor] {
                    for k in 0..sizes.len() {
                        for delta in [0, 1, u64::MAX] {
                            let mut h: Vec<BufferHandle> =
                                sizes.iter().map(|&n| handle(n, DeviceTag::Cuda)).collect();
                            h[k] = handle(sizes[k].wrapping_add(delta), DeviceTag::Cuda);
                            let mut d = TensorDescriptor::new(ty, shape, layout, &h)
                                .with_quantization(scheme);
                            judge(&d);
                            if delta == 0 {
                                d.buffers = Buffers::Handles(&h[..k]);
                                judge(&d);
                                let mut more = h.clone();
                                more.push(h[0]);
                                d.buffers = Buffers::Handles(&more);
                                judge(&d);
                            }
                        }
                    }
                }
            }
            // Compressed: nnz, the three sizes and the buffer count.
            for csc in [false, true] {
                let major = shape.get(usize::from(csc)).copied().unwrap_or(0);
                for nnz in [0, 5, 1 << 61] {
                    let layout = if csc {
                        LayoutSpec::Csc(Compressed { nnz })
                    } else {
                        LayoutSpec::Csr(Compressed { nnz })
                    };
                    let sizes = [
                        width(nnz),
                        nnz.saturating_mul(8),
                        major.saturating_add(1).saturating_mul(8),
                    ];
                    for (k, delta) in [
                        (0, 0),
                        (0, 1),
                        (0, u64::MAX),
                        (1, 1),
                        (1, u64::MAX),
                        (2, 1),
                        (2, u64::MAX),
                    ] {
                        let mut s = sizes;
                        s[k] = s[k].wrapping_add(delta);
                        for dev in [DeviceTag::Cuda, DeviceTag::Cpu] {
                            let h = [
                                handle(s[0], DeviceTag::Cuda),
                                handle(s[1], DeviceTag::Cuda),
                                handle(s[2], dev),
                            ];
                            let mut d = TensorDescriptor::new(ty, shape, layout, &h);
                            judge(&d);
                            d.byte_offset = align;
                            judge(&d);
                            d.byte_offset = 0;
                            d.buffers = Buffers::Handles(&h[..2]);
                            judge(&d);
                        }
                    }
                }
            }
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "accepted {accepted}, refused {refused}"
    );
}

/// Quantization schemes over `shape` with the buffer sizes the spec's
/// formulas give them (data buffer first, as an int4 tensor), valid or
/// just past an edge (axis, block size, indices, a shared zero-point
/// buffer).
fn quantized_edges(shape: &[u64]) -> Vec<(Scheme<'static>, Vec<u64>)> {
    let count = shape.iter().try_fold(1u64, |a, &n| a.checked_mul(n));
    let data = count.map_or(64, |n| n.div_ceil(2));
    let mut out = vec![(
        Scheme::PerTensor {
            scale: 0.5,
            zero_point: 3,
        },
        vec![data],
    )];
    for axis in [0u32, 1, 2] {
        let along = shape.get(axis as usize).copied().unwrap_or(0);
        let others: u64 = shape
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != axis as usize)
            .map(|(_, &n)| n)
            .try_fold(1u64, |a, n| a.checked_mul(n))
            .unwrap_or(u64::MAX);
        out.push((
            Scheme::PerChannel {
                axis,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            },
            vec![data, along.saturating_mul(4), along.saturating_mul(4)],
        ));
        for (k, zero, scale_type) in [
            (2u32, None, ElementType::Float16),
            (4, Some(2), ElementType::Float32),
            (4, Some(1), ElementType::BFloat16),
            (3, None, ElementType::Float16),
            (1 << 20, None, ElementType::Float32),
        ] {
            let blocks = along.div_ceil(u64::from(k)).saturating_mul(others);
            let padded = blocks.saturating_mul(u64::from(k)).div_ceil(2);
            let width = if scale_type == ElementType::Float32 {
                4
            } else {
                2
            };
            let mut sizes = vec![padded, blocks.saturating_mul(width)];
            match zero {
                Some(2) => sizes.push(blocks.saturating_mul(4)),
                Some(_) => sizes[1] = sizes[1].saturating_add(blocks.saturating_mul(4)),
                None => {}
            }
            out.push((
                Scheme::PerBlock {
                    axis,
                    block_size: k,
                    scale_buffer: 1,
                    zero_point_buffer: zero,
                    scale_type,
                },
                sizes,
            ));
        }
        let blocks = along.div_ceil(16).saturating_mul(others);
        out.push((
            Scheme::Nf4 {
                axis,
                block_size: 16,
                scale_buffer: 1,
            },
            vec![blocks.saturating_mul(8), blocks.saturating_mul(4)],
        ));
    }
    out
}
