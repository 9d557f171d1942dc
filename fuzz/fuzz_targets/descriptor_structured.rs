//! Structured fuzzing: `arbitrary` shapes descriptors of every layout and
//! section — element types (sub-byte, 6-bit, private with an extension type
//! section), shapes with dynamic dimensions, buffers on any device — and
//! sizes their buffers by the spec's rules. Whatever the encoder accepts
//! must parse — here, by the harness's own `TensorView::parse` (the encoder
//! checks its values with the parser's rules and reads nothing back) — and
//! read back exactly as built, and re-encode to
//! the same bytes; what it refuses as invalid, the reader must refuse with
//! the same error; what is valid by construction (every layout but the tiled one and
//! the block quantization schemes, whose buffer sizes are left to chance)
//! must be accepted.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use arbitrary::Arbitrary;
use common::{Owned, OwnedLayout, OwnedLevel, check_view, permissive};
use hurray_core::layout::{
    BlockPaged, CombineOp, CompositeHead, CompositionRule, Compressed, Coo, Hilbert, KvRole,
};
use hurray_core::{
    BufferHandle, DYNAMIC, DescriptorErrorKind, DeviceTag, ElementType, EncodeError, ExtensionType,
    MemberRole, MemoryClass, Quantization, Scheme, Statistics, SyncMode, TensorView,
};
use libfuzzer_sys::fuzz_target;

/// One tiled level: tile shape, outer and inner codes, outer and inner strides.
type LevelPick = (Vec<u8>, u8, u8, Vec<i8>, Vec<i8>);

#[derive(Arbitrary, Debug)]
enum LayoutPick {
    RowMajor,
    ColumnMajor,
    Strided(Vec<i8>),
    Tiled(Vec<LevelPick>),
    Morton(Vec<bool>),
    Coo {
        nnz: u8,
        sorted: bool,
    },
    Csr {
        nnz: u8,
    },
    Csc {
        nnz: u8,
    },
    Csf {
        nnz: u8,
        perm: Vec<u8>,
        nodes: Vec<u8>,
    },
    BlockPaged {
        page: u8,
        pages: u8,
        seqs: u8,
        role: u8,
        layer: Option<u16>,
        wide: bool,
        table: u8,
    },
    Composite {
        rule: u8,
        op: bool,
        members: u16,
    },
    Hilbert {
        order: u8,
    },
    Extension {
        tag: u8,
        id: u64,
        data: Vec<u8>,
        extra: u8,
    },
}

#[derive(Arbitrary, Debug)]
enum QuantPick {
    PerTensor {
        scale: i16,
        zero_point: i32,
    },
    PerChannel {
        axis: u8,
        symmetric: bool,
    },
    /// Block schemes with arbitrary parameters and parameter buffer sizes.
    Block {
        tag: u8,
        axis: u8,
        block_log2: u8,
        scale_type: u8,
        symmetric: bool,
        sizes: (u16, u16),
    },
}

#[derive(Arbitrary, Debug)]
struct StatsPick {
    nnz: bool,
    sparsity: Option<u8>,
    range: Option<(i16, i16)>,
    moments: Option<(i16, u16)>,
    nm: Option<(u8, u8)>,
    nan_inf: Option<(bool, bool)>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    element: u8,
    private: Option<(u8, u8, bool)>,
    dims: Vec<u8>,
    dynamic: Option<u8>,
    layout: LayoutPick,
    offset: u8,
    slack: u8,
    device: u8,
    sync: u8,
    class: u8,
    align_shift: u8,
    quant: Option<QuantPick>,
    shard: Option<Vec<(u8, u8)>>,
    stats: Option<StatsPick>,
    member: Option<bool>,
}

/// Integer storage types the affine schemes accept.
const AFFINE: [ElementType; 10] = [
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

/// A (device, memory class, sync mode) that every buffer shares.
fn placement(input: &Input) -> (DeviceTag, MemoryClass, SyncMode) {
    let private_dev = input.device & 0x80 != 0;
    let device = if private_dev {
        DeviceTag::private(0xF0 + input.device % 15).unwrap()
    } else {
        DeviceTag::NAMED[usize::from(input.device) % DeviceTag::NAMED.len()]
    };
    let candidates: Vec<MemoryClass> = MemoryClass::NAMED
        .iter()
        .copied()
        .chain((0xF0..=0xFE).filter_map(MemoryClass::from_code))
        .filter(|&c| device.allows(c))
        .collect();
    let class = candidates[usize::from(input.class) % candidates.len()];
    let sync = if device == DeviceTag::Cpu {
        SyncMode::ProducerSynced
    } else {
        SyncMode::ALL[usize::from(input.sync) % 3]
    };
    (device, class, sync)
}

fn ceil_log2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

fuzz_target!(|input: Input| {
    let (device, class, sync) = placement(&input);
    let shift = u32::from(input.align_shift % 8);
    let buffer = |size: u64| {
        let align = if size == 0 { 1 << shift } else { 64 << shift };
        BufferHandle::with_memory_class(size, align, device, sync, class)
            .expect("valid by construction")
    };

    // Element type (a private one carries its width in an extension type section).
    let (mut element_type, mut extension_type) = match input.private {
        Some((tag, width, float)) => {
            let t = ElementType::from_code(0xF0 + tag % 15).unwrap();
            let bits = [1u32, 2, 4, 8, 16, 24, 32, 64][usize::from(width % 8)];
            let e = if float && bits >= 8 {
                ExtensionType::float(
                    bits,
                    1,
                    (bits / 3) as u8,
                    (bits - 1 - bits / 3) as u8,
                    7,
                    true,
                    false,
                )
            } else {
                ExtensionType::integer(bits, width & 0x80 != 0)
            };
            (t, Some(e))
        }
        None => (
            ElementType::BUILT_IN[usize::from(input.element) % ElementType::BUILT_IN.len()],
            None,
        ),
    };
    let mut shape: Vec<u64> = input
        .dims
        .iter()
        .take(6)
        .map(|&d| u64::from(d % 9))
        .collect();
    let mut must_accept = true;

    // The layout, and the shape it needs.
    let rank_at_least = |shape: &mut Vec<u64>, r: usize| {
        while shape.len() < r {
            shape.push(2);
        }
    };
    match input.layout {
        LayoutPick::Coo { .. } | LayoutPick::Extension { .. } => rank_at_least(&mut shape, 1),
        LayoutPick::Csr { .. } | LayoutPick::Csc { .. } => {
            rank_at_least(&mut shape, 2);
            shape.truncate(2);
        }
        LayoutPick::Csf { .. } => rank_at_least(&mut shape, 3),
        LayoutPick::BlockPaged { .. } => {
            rank_at_least(&mut shape, 3);
            shape.truncate(3);
        }
        LayoutPick::Composite { .. }
        | LayoutPick::Tiled(_)
        | LayoutPick::Strided(_)
        | LayoutPick::Morton(_)
        | LayoutPick::ColumnMajor => rank_at_least(&mut shape, 1),
        LayoutPick::Hilbert { order } => {
            rank_at_least(&mut shape, 2);
            shape.truncate(3);
            let side = 1u64 << (1 + order % 3);
            shape.iter_mut().for_each(|n| *n = side);
        }
        LayoutPick::RowMajor => {}
    }
    if let Some(axis) = input.dynamic
        && let Some(n) = shape.get_mut(usize::from(axis) % 8)
        && !matches!(input.layout, LayoutPick::Hilbert { .. })
    {
        *n = DYNAMIC;
    }
    let rank = shape.len();
    let dynamic = shape.contains(&DYNAMIC);
    let count: u64 = shape
        .iter()
        .map(|&n| if n == DYNAMIC { 1 } else { n })
        .product();

    // Quantized tensors store an integer type the scheme accepts.
    if let Some(QuantPick::PerTensor { .. } | QuantPick::PerChannel { .. }) = input.quant {
        element_type = AFFINE[usize::from(input.element) % AFFINE.len()];
        extension_type = None;
    }
    // Strides address whole bytes here (sub-byte strided extents are left to
    // the fixture tests).
    if matches!(input.layout, LayoutPick::Strided(_))
        && element_type
            .packing()
            .is_none_or(|p| !matches!(p, hurray_core::Packing::Bytes(_)))
    {
        element_type = ElementType::Int8;
        extension_type = None;
    }
    let packing = element_type
        .packing()
        .or(extension_type.map(|e| e.packing()))
        .unwrap();
    let bytes = |n: u64| packing.bytes_for(n).unwrap();
    let align = u64::from(element_type.natural_alignment());
    let slack = u64::from(input.slack % 32);

    let mut byte_offset = 0u64;
    let mut buffers = Vec::new();
    let layout = match &input.layout {
        LayoutPick::RowMajor | LayoutPick::ColumnMajor => {
            byte_offset = u64::from(input.offset % 4) * align;
            buffers.push(buffer(byte_offset + bytes(count) + slack));
            if matches!(input.layout, LayoutPick::RowMajor) {
                OwnedLayout::RowMajor
            } else {
                OwnedLayout::ColumnMajor
            }
        }
        LayoutPick::Strided(steps) => {
            let strides: Vec<i64> = (0..rank)
                .map(|k| i64::from(steps.get(k).copied().unwrap_or(1)))
                .collect();
            let w = bytes(1);
            let (mut lo, mut hi) = (0i64, 0i64);
            for (&n, &s) in shape.iter().zip(&strides) {
                let n = if n == DYNAMIC { 1 } else { n as i64 };
                let reach = s * (n - 1).max(0);
                if reach < 0 { lo += reach } else { hi += reach }
            }
            let first = i64::from(input.offset % 4) - lo;
            byte_offset = first as u64 * w;
            let size = if count == 0 {
                byte_offset
            } else {
                (first + hi + 1) as u64 * w
            };
            buffers.push(buffer(size + slack));
            OwnedLayout::Strided(strides)
        }
        LayoutPick::Tiled(levels) => {
            must_accept = false;
            let mut owned: Vec<OwnedLevel> = levels
                .iter()
                .take(9)
                .map(|(tile, outer, inner, os, is)| {
                    let outer = 1 + outer % 3;
                    let inner = 1 + inner % 4;
                    let strides = |v: &Vec<i8>| {
                        (0..rank)
                            .map(|k| i64::from(v.get(k).copied().unwrap_or(1)))
                            .collect()
                    };
                    OwnedLevel {
                        tile_shape: (0..rank)
                            .map(|k| u64::from(tile.get(k).copied().unwrap_or(1) % 5))
                            .collect(),
                        outer_layout: outer,
                        inner_layout: inner,
                        outer_strides: (outer == 3).then(|| strides(os)),
                        inner_strides: (inner == 3).then(|| strides(is)),
                    }
                })
                .collect();
            for (i, l) in owned.iter_mut().enumerate() {
                if i + 1 < levels.len().min(9) {
                    l.inner_layout = 4;
                    l.inner_strides = None;
                } else if l.inner_layout == 4 {
                    l.inner_layout = 1;
                }
            }
            byte_offset = u64::from(input.offset % 4) * align;
            buffers.push(buffer(1 << 40));
            OwnedLayout::Tiled(owned)
        }
        LayoutPick::Morton(extra) => {
            let bits: Vec<u32> = shape
                .iter()
                .enumerate()
                .map(|(k, &n)| {
                    let need = if n == DYNAMIC { 1 } else { ceil_log2(n).max(1) };
                    need + u32::from(extra.get(k).copied().unwrap_or(false))
                })
                .collect();
            let elements = if count == 0 {
                0
            } else {
                1u64 << bits.iter().sum::<u32>()
            };
            byte_offset = u64::from(input.offset % 4) * align;
            buffers.push(buffer(byte_offset + bytes(elements) + slack));
            OwnedLayout::Morton(bits)
        }
        LayoutPick::Hilbert { order } => {
            let order = 1 + u32::from(order % 3);
            let elements = 1u64 << (order * rank as u32);
            byte_offset = u64::from(input.offset % 4) * align;
            buffers.push(buffer(byte_offset + bytes(elements) + slack));
            OwnedLayout::Hilbert(Hilbert {
                order,
                rank: rank as u32,
            })
        }
        LayoutPick::Coo { nnz, sorted } => {
            let nnz = u64::from(*nnz);
            buffers.push(buffer(bytes(nnz) + slack));
            buffers.push(buffer(nnz * rank as u64 * 8));
            OwnedLayout::Coo(Coo {
                nnz,
                sorted: *sorted,
            })
        }
        LayoutPick::Csr { nnz } | LayoutPick::Csc { nnz } => {
            let nnz = u64::from(*nnz);
            let csr = matches!(input.layout, LayoutPick::Csr { .. });
            let major = shape[if csr { 0 } else { 1 }];
            buffers.push(buffer(bytes(nnz) + slack));
            buffers.push(buffer(nnz * 8));
            buffers.push(buffer(if major == DYNAMIC { 8 } else { (major + 1) * 8 }));
            let c = Compressed { nnz };
            if csr {
                OwnedLayout::Csr(c)
            } else {
                OwnedLayout::Csc(c)
            }
        }
        LayoutPick::Csf { nnz, perm, nodes } => {
            let nnz = u64::from(*nnz);
            let mut order: Vec<u32> = (0..rank as u32).collect();
            for (i, p) in perm.iter().enumerate().take(rank) {
                order.swap(i, i + usize::from(*p) % (rank - i));
            }
            buffers.push(buffer(bytes(nnz) + slack));
            let mut parents = 1u64;
            for level in 0..rank {
                let n = if level + 1 == rank {
                    nnz
                } else {
                    u64::from(nodes.get(level).copied().unwrap_or(1))
                };
                buffers.push(buffer((parents + 1) * 8));
                buffers.push(buffer(n * 8));
                parents = n;
            }
            OwnedLayout::Csf {
                nnz,
                mode_order: order,
            }
        }
        LayoutPick::BlockPaged {
            page,
            pages,
            seqs,
            role,
            layer,
            wide,
            table,
        } => {
            let page_size = 1 + u32::from(*page % 32);
            let num_pages = u64::from(*pages);
            let width = if *wide { 8 } else { 4 };
            let per_slot: u64 = shape[1..]
                .iter()
                .map(|&n| if n == DYNAMIC { 1 } else { n })
                .product();
            buffers.push(buffer(bytes(num_pages * u64::from(page_size) * per_slot)));
            buffers.push(buffer(u64::from(*table) * width));
            buffers.push(buffer((u64::from(*seqs) + 1) * width));
            OwnedLayout::BlockPaged(BlockPaged {
                page_size,
                num_pages,
                num_seqs: u32::from(*seqs),
                kv_role: [KvRole::Key, KvRole::Value, KvRole::Fused][usize::from(*role % 3)],
                layer_index: layer.map(u32::from),
                wide_indices: *wide,
            })
        }
        LayoutPick::Composite { rule, op, members } => {
            let rule = [
                CompositionRule::Partition,
                CompositionRule::Overlay,
                CompositionRule::Group,
            ][usize::from(rule % 3)];
            let overlay = rule == CompositionRule::Overlay;
            OwnedLayout::Composite(CompositeHead {
                rule,
                combine_op: match (overlay, op) {
                    (false, _) => CombineOp::None,
                    (true, false) => CombineOp::Replace,
                    (true, true) => CombineOp::Add,
                },
                member_count: u32::from(*members) + u32::from(overlay),
            })
        }
        LayoutPick::Extension {
            tag,
            id,
            data,
            extra,
        } => {
            buffers.push(buffer(u64::from(*extra) * 3));
            for k in 0..(extra % 3) {
                buffers.push(buffer(u64::from(k) * 64));
            }
            OwnedLayout::Extension {
                tag: 0xF0 + tag % 15,
                id: *id,
                data: &data[..],
            }
        }
    };
    let composite = matches!(layout, OwnedLayout::Composite(_));
    let sparse_nnz = match &layout {
        OwnedLayout::Coo(c) => Some(c.nnz),
        OwnedLayout::Csr(c) | OwnedLayout::Csc(c) => Some(c.nnz),
        OwnedLayout::Csf { nnz, .. } => Some(*nnz),
        _ => None,
    };

    // Quantization: per-tensor and per-channel sized by construction on the
    // dense and sparse layouts; block schemes with arbitrary parameters.
    let own_buffers = buffers.len() as u32;
    let quantization = match &input.quant {
        None => None,
        Some(_)
            if composite
                || matches!(
                    layout,
                    OwnedLayout::BlockPaged(_) | OwnedLayout::Extension { .. }
                ) =>
        {
            None
        }
        Some(QuantPick::PerTensor { scale, zero_point }) => {
            // The storage type's range, as far as an int32 zero point reaches.
            let (lo, hi) = element_type.integer_range().unwrap();
            let (lo, hi) = (lo.max(i64::from(i32::MIN)), hi.min(i64::from(i32::MAX)));
            let span = hi - lo + 1;
            let zp = (i64::from(*zero_point).rem_euclid(span) + lo) as i32;
            let scale = if *scale == 0 {
                0.5
            } else {
                f32::from(*scale) / 64.0
            };
            Some(Quantization::new(Scheme::PerTensor {
                scale,
                zero_point: zp,
            }))
        }
        Some(QuantPick::PerChannel { axis, symmetric }) if rank > 0 => {
            let axis = u32::from(*axis) % rank as u32;
            let n = shape[axis as usize];
            if n == DYNAMIC {
                must_accept = false;
            }
            let n = if n == DYNAMIC { 1 } else { n };
            buffers.push(buffer(n * 4));
            let zero_point_buffer = if *symmetric {
                None
            } else {
                buffers.push(buffer(n * 4));
                Some(own_buffers + 1)
            };
            Some(Quantization::new(Scheme::PerChannel {
                axis,
                scale_buffer: own_buffers,
                zero_point_buffer,
            }))
        }
        Some(QuantPick::PerChannel { .. }) => None,
        Some(QuantPick::Block {
            tag,
            axis,
            block_log2,
            scale_type,
            symmetric,
            sizes,
        }) => {
            must_accept = false;
            let axis = u32::from(*axis) % (rank.max(1) as u32);
            let block_size = 1u32 << (block_log2 % 12);
            buffers.push(buffer(u64::from(sizes.0)));
            let scheme = match tag % 3 {
                0 => {
                    let zero_point_buffer = if *symmetric {
                        None
                    } else {
                        buffers.push(buffer(u64::from(sizes.1)));
                        Some(own_buffers + 1)
                    };
                    let scale_type = [
                        ElementType::Float16,
                        ElementType::BFloat16,
                        ElementType::Float32,
                    ][usize::from(scale_type % 3)];
                    Scheme::PerBlock {
                        axis,
                        block_size,
                        scale_buffer: own_buffers,
                        zero_point_buffer,
                        scale_type,
                    }
                }
                1 => Scheme::Nf4 {
                    axis,
                    block_size,
                    scale_buffer: own_buffers,
                },
                _ => Scheme::Mxfp {
                    axis,
                    block_size,
                    scale_buffer: own_buffers,
                },
            };
            Some(Quantization::new(scheme))
        }
    };

    // A shard of a larger parent.
    let shard = match &input.shard {
        Some(extra)
            if !dynamic
                && !matches!(layout, OwnedLayout::Csf { .. } | OwnedLayout::BlockPaged(_)) =>
        {
            let (parent, offset) = shape
                .iter()
                .enumerate()
                .map(|(k, &n)| {
                    let (grow, at) = extra.get(k).copied().unwrap_or((0, 0));
                    let grow = u64::from(grow);
                    (n + grow, u64::from(at) % (grow + 1))
                })
                .unzip();
            Some((parent, offset))
        }
        _ => None,
    };

    // Statistics consistent with the layout.
    let statistics = input.stats.as_ref().map(|s| {
        let mut st = Statistics::new();
        if s.nnz {
            st = st.with_nnz(sparse_nnz.unwrap_or(count));
        }
        if let Some(r) = s.sparsity {
            st = st.with_sparsity_ratio(f64::from(r) / 255.0);
        }
        if let Some((a, b)) = s.range {
            st = st.with_value_range(f64::from(a.min(b)), f64::from(a.max(b)));
        }
        if let Some((mean, sd)) = s.moments {
            st = st.with_value_stats(f64::from(mean), f64::from(sd));
        }
        if let Some((n, m)) = s.nm {
            st = st.with_nm_sparsity(n.min(m), n.max(m));
        }
        if let Some((nan, inf)) = s.nan_inf {
            st = st.with_nan_inf(nan, inf);
        }
        st
    });
    let member_role = input.member.filter(|_| !composite).map(|base| {
        if base {
            MemberRole::Base
        } else {
            MemberRole::Correction
        }
    });

    let owned = Owned {
        element_type,
        shape,
        byte_offset,
        layout,
        buffers,
        quantization,
        shard,
        statistics,
        extension_type,
        member_role,
    };
    // The encoder's bytes, parsed here rather than trusted to the encoder's
    // own checks of its values: what it accepts must parse strictly (or, for the
    // private codes it uses, permissively) and read back exactly as built;
    // what it refuses as invalid must be refused by the reader with the
    // same error. So this holds whether or not `encode` parses its output.
    let (bytes, verdict) = owned.encode_written();
    let ids = owned.ids();
    let options = permissive(&ids);
    let ours = TensorView::parse_with(&bytes, &options);
    let strict = TensorView::parse(&bytes);
    match (&verdict, &ours) {
        (Ok(n), _) => assert_eq!(*n, bytes.len(), "encoded_len and encode disagree"),
        (Err(EncodeError::Invalid(e)), Err(r)) if e == r && !must_accept => return,
        (Err(EncodeError::Invalid(e)), Ok(_)) => {
            panic!("the encoder refused ({e}) bytes the reader accepts\n{owned:#?}")
        }
        (Err(EncodeError::Invalid(e)), Err(r)) if e != r => {
            panic!("the encoder refused with {e}, the reader with {r}\n{owned:#?}")
        }
        (Err(e), _) if must_accept => panic!("a valid descriptor was refused: {e}\n{owned:#?}"),
        (Err(_), _) => return,
    }
    let view =
        ours.unwrap_or_else(|e| panic!("the encoder's output does not parse: {e}\n{owned:#?}"));
    // The strict reader agrees, or refuses only a private code.
    match strict {
        Ok(v) => assert_eq!(
            v.as_bytes(),
            view.as_bytes(),
            "strict and permissive reads differ"
        ),
        Err(e) => assert!(
            matches!(
                e.kind(),
                DescriptorErrorKind::PrivateCodeRefused { .. }
                    | DescriptorErrorKind::UnknownExtensionLayout(_)
            ),
            "the strict reader refuses the encoder's output: {e}\n{owned:#?}"
        ),
    }
    check_view(&view);
    assert_eq!(view.as_bytes(), &bytes[..]);
    // Every field as built.
    let back = Owned::of(&view);
    assert_eq!(back, owned, "read back differently");
    assert_eq!(back.encode().unwrap(), bytes);
});
