//! Writes hurray's own conformance corpus: byte-exact hurray tensor
//! descriptors and a `manifest.json` of their expected decoded properties,
//! in the format of the public corpus' manifest, so that any other
//! implementation of the hurray format can check itself against ours.
//!
//! Run: `cargo run --example write_vectors -- DIR`
//!
//! It writes:
//!
//! * `DIR/descriptors/<stem>.bin` and `DIR/manifest.json` — one descriptor
//!   per layout, per element type, per optional section and per edge case.
//!   Every one is accepted by a strict reader ([`TensorView::parse`]).
//! * `DIR/permissive/descriptors/<stem>.bin` and
//!   `DIR/permissive/manifest.json` — descriptors that use private codes a
//!   strict reader must refuse without an out-of-band agreement (a private
//!   layout id, a private quantization scheme). Their manifest adds
//!   `reader_options`: what a reader must be told to accept them.
//!
//! The expected properties come from the values the descriptors were built
//! from, and buffer sizes from the spec's formulas written out here (not
//! from the library's own size functions), so that decoding the corpus is a
//! real check of the decoder. The committed copy in `tests/conformance/` is
//! compared byte for byte with a fresh run by `tests/conformance.rs`.

use std::path::{Path, PathBuf};

use hurray::layout::{
    BlockPaged, CombineOp, CompositeHead, CompositionRule, Compressed, Coo, Hilbert, KvRole,
    TileSpec,
};
use hurray::{
    BufferHandle, DYNAMIC, DeviceTag, ElementType, ExtensionType, LayoutSpec, MemberRole,
    MemoryClass, Quantization, ReadOptions, Scheme, Statistics, SyncMode, TensorDescriptor,
    TensorView, VERSION_MAJOR, VERSION_MINOR,
};
use serde::{Deserialize, Serialize};

/// The format version the corpus targets.
pub const FORMAT_VERSION: &str = "1.0";

/// A conformance manifest: the public corpus' schema (`format_version`,
/// `descriptors`), read and written.
#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version the corpus targets.
    pub format_version: String,
    /// Reader options needed to accept the descriptors (permissive corpus
    /// only; absent means a strict reader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_options: Option<ReaderOptions>,
    /// Descriptor vectors.
    pub descriptors: Vec<DescriptorVector>,
    /// Container-file vectors of the public corpus (not descriptors; this
    /// implementation has no file reader, so they are only counted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<serde_json::Value>,
}

/// What a reader must be told to accept a permissive corpus.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ReaderOptions {
    /// Private layout ids to accept.
    #[serde(default)]
    pub extension_layouts: Vec<u64>,
    /// Accept private quantization schemes.
    #[serde(default)]
    pub private_schemes: bool,
    /// Accept private composition rules.
    #[serde(default)]
    pub private_composition_rules: bool,
}

impl ReaderOptions {
    /// These options as the library's [`ReadOptions`].
    pub fn to_read_options(&self) -> ReadOptions<'_> {
        ReadOptions {
            extension_layouts: &self.extension_layouts,
            private_schemes: self.private_schemes,
            private_composition_rules: self.private_composition_rules,
        }
    }
}

/// One descriptor file and its expected decoded properties.
#[derive(Debug, Serialize, Deserialize)]
pub struct DescriptorVector {
    /// Path of the `.bin` file, relative to the manifest's directory.
    pub file: String,
    /// What the vector exercises.
    pub description: String,
    /// What a conforming reader decodes.
    pub expect: Expect,
}

/// The expected decoded properties of a descriptor (the public manifest's
/// keys, in its order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expect {
    /// `version_major`.
    pub version_major: u8,
    /// `version_minor`.
    pub version_minor: u8,
    /// `type_tag`.
    pub element_type_tag: u8,
    /// The type's name (`"extension"` for a private type, as in the public
    /// corpus).
    pub element_type: String,
    /// The shape (`u64::MAX` for a dynamic dimension).
    pub shape: Vec<u64>,
    /// `byte_offset`.
    pub byte_offset: u64,
    /// `layout_tag`.
    pub layout_tag: u8,
    /// Each buffer's `byte_size`, in table order.
    pub buffer_byte_sizes: Vec<u64>,
    /// Whether a quantization section is present.
    pub has_quantization: bool,
    /// Whether a shard section is present.
    pub has_shard: bool,
    /// The layout's fields (the `layout` object of `inspect --json`, the
    /// keys written here): from the values the vector was built with, not
    /// from the encoder's bytes. Absent in the public corpus' manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<serde_json::Value>,
    /// The quantization section's fields, as `layout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<serde_json::Value>,
    /// The statistics section's fields, as `layout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<serde_json::Value>,
}

/// A number as `inspect --json` writes a float (`"NaN"`, `"inf"`, `"-inf"`
/// for the values JSON has no number for).
fn json_float(v: f64) -> serde_json::Value {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        v.into()
    }
}

fn hex_bytes(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The expected `layout` object, written from the layout the vector was
/// built with (the spec's codes, not the encoder's bytes).
fn expect_layout(layout: &LayoutSpec<'_>) -> serde_json::Value {
    use serde_json::json;
    let code = |c: u8| json!({ "code": c });
    match layout {
        LayoutSpec::RowMajor => json!({ "name": "row_major" }),
        LayoutSpec::ColumnMajor => json!({ "name": "column_major" }),
        LayoutSpec::Strided(s) => json!({ "name": "strided", "strides": s }),
        LayoutSpec::Tiled(levels) => json!({
            "name": "tiled",
            "levels": levels.iter().map(|l| json!({
                "tile_shape": l.tile_shape,
                "outer_layout": code(l.outer_layout),
                "inner_layout": code(l.inner_layout),
                "outer_strides": l.outer_strides,
                "inner_strides": l.inner_strides,
            })).collect::<Vec<_>>(),
        }),
        LayoutSpec::Morton(bits) => json!({ "name": "morton", "morton_bits": bits }),
        LayoutSpec::Coo(c) => json!({ "name": "coo", "nnz": c.nnz, "is_sorted": c.sorted }),
        LayoutSpec::Csr(c) => json!({ "name": "csr", "nnz": c.nnz }),
        LayoutSpec::Csc(c) => json!({ "name": "csc", "nnz": c.nnz }),
        LayoutSpec::Csf { nnz, mode_order } => {
            json!({ "name": "csf", "nnz": nnz, "mode_order": mode_order })
        }
        LayoutSpec::BlockPaged(p) => json!({
            "name": "block_paged",
            "page_size": p.page_size,
            "num_pages": p.num_pages,
            "paged_axis": 0,
            "num_seqs": p.num_seqs,
            "kv_role": code(match p.kv_role {
                KvRole::Key => 0,
                KvRole::Value => 1,
                _ => 2,
            }),
            "layer_index": p.layer_index,
            "block_table_index_type": code(u8::from(p.wide_indices)),
        }),
        LayoutSpec::Composite(h) => json!({
            "name": "composite",
            "composition_rule": code(match h.rule {
                CompositionRule::Partition => 1,
                CompositionRule::Overlay => 2,
                CompositionRule::Group => 3,
                other => other.code(),
            }),
            "combine_op": code(match h.combine_op {
                CombineOp::None => 0,
                CombineOp::Replace => 1,
                _ => 2,
            }),
            "member_count": h.member_count,
        }),
        LayoutSpec::Hilbert(h) => {
            json!({ "name": "hilbert", "hilbert_order": h.order, "hilbert_rank": h.rank })
        }
        LayoutSpec::Extension { tag, id, data } => json!({
            "name": "extension",
            "tag": tag,
            "extension_layout_id": id,
            "extension_data": hex_bytes(data),
        }),
        _ => json!({}),
    }
}

/// The expected `quantization` object, from the scheme the vector was
/// built with.
fn expect_quantization(q: &Quantization<'_>) -> serde_json::Value {
    use serde_json::json;
    let mut v = match q.scheme {
        Scheme::PerTensor { scale, zero_point } => json!({
            "scheme": { "code": 0x01 }, "scale": scale, "zero_point": zero_point,
        }),
        Scheme::PerChannel {
            axis,
            scale_buffer,
            zero_point_buffer,
        } => json!({
            "scheme": { "code": 0x02 },
            "symmetric": zero_point_buffer.is_none(),
            "axis": axis,
            "scale_buffer_index": scale_buffer,
            "zero_point_buffer_index": zero_point_buffer,
            "scale_type": { "code": 0x03 },
        }),
        Scheme::PerBlock {
            axis,
            block_size,
            scale_buffer,
            zero_point_buffer,
            scale_type,
        } => json!({
            "scheme": { "code": 0x03 },
            "symmetric": zero_point_buffer.is_none(),
            "axis": axis,
            "block_size": block_size,
            "scale_buffer_index": scale_buffer,
            "zero_point_buffer_index": zero_point_buffer,
            "scale_type": { "code": match scale_type {
                ElementType::Float16 => 0x01,
                ElementType::BFloat16 => 0x02,
                _ => 0x03,
            } },
        }),
        Scheme::Nf4 {
            axis,
            block_size,
            scale_buffer,
        } => json!({
            "scheme": { "code": 0x04 }, "axis": axis, "block_size": block_size,
            "scale_buffer_index": scale_buffer,
        }),
        Scheme::Mxfp {
            axis,
            block_size,
            scale_buffer,
        } => json!({
            "scheme": { "code": 0x05 }, "axis": axis, "block_size": block_size,
            "scale_buffer_index": scale_buffer,
        }),
        Scheme::Private {
            tag,
            version,
            flags,
            payload,
        } => json!({
            "scheme": { "code": tag }, "scheme_version": version, "scheme_flags": flags,
            "payload": hex_bytes(payload),
        }),
        _ => json!({}),
    };
    // A zero-point index of none is left out, as inspect leaves it out.
    if let Some(o) = v.as_object_mut() {
        o.retain(|_, x| !x.is_null());
        o.insert("padding".into(), q.padding.into());
    }
    v
}

/// The expected `statistics` object, from the statistics entry the vector
/// was built with: each group by its `computed_mask` bit, as the spec's
/// table numbers them (0 nnz, 1 sparsity, 2 range, 3 moments, 4 N:M, 5
/// NaN/inf), null when the bit is clear.
fn expect_statistics(s: &Statistics) -> serde_json::Value {
    let e = s.entry();
    let mask = e.computed_mask.get();
    let on = |bit: u32| mask & (1 << bit) != 0;
    let f = |bit: u32, v: f64| {
        if on(bit) {
            json_float(v)
        } else {
            serde_json::Value::Null
        }
    };
    serde_json::json!({
        "computed_mask": mask,
        "nnz": on(0).then_some(e.nnz.get()),
        "sparsity_ratio": f(1, e.sparsity_ratio.get()),
        "value_min": f(2, e.value_min.get()),
        "value_max": f(2, e.value_max.get()),
        "value_abs_max": f(2, e.value_abs_max.get()),
        "value_mean": f(3, e.value_mean.get()),
        "value_stddev": f(3, e.value_stddev.get()),
        "nm_n": on(4).then_some(e.nm_n),
        "nm_m": on(4).then_some(e.nm_m),
        "has_nan": on(5).then_some(e.has_nan != 0),
        "has_inf": on(5).then_some(e.has_inf != 0),
    })
}

/// One generated descriptor.
#[derive(Debug)]
pub struct Vector {
    /// File stem.
    pub stem: String,
    /// What it exercises.
    pub description: String,
    /// The encoded descriptor.
    pub bytes: Vec<u8>,
    /// Its expected properties.
    pub expect: Expect,
}

/// The whole corpus.
#[derive(Debug)]
pub struct Corpus {
    /// Accepted by a strict reader.
    pub strict: Vec<Vector>,
    /// Accepted only with [`permissive_options`].
    pub permissive: Vec<Vector>,
}

/// The private layout id used by the permissive corpus (`"hurray"`, 1).
pub const PRIVATE_LAYOUT_ID: u64 = 0x6875_7272_6179_0001;

/// The reader options the permissive corpus needs.
pub fn permissive_options() -> ReaderOptions {
    ReaderOptions {
        extension_layouts: vec![PRIVATE_LAYOUT_ID],
        private_schemes: true,
        private_composition_rules: false,
    }
}

/// The spec's element type table: code, name, bits per element.
pub const TYPES: &[(u8, &str, u32)] = &[
    (0x01, "float16", 16),
    (0x02, "bfloat16", 16),
    (0x03, "float32", 32),
    (0x04, "float64", 64),
    (0x10, "int8", 8),
    (0x11, "uint8", 8),
    (0x12, "int16", 16),
    (0x13, "uint16", 16),
    (0x14, "int32", 32),
    (0x15, "uint32", 32),
    (0x16, "int64", 64),
    (0x17, "uint64", 64),
    (0x20, "bool", 1),
    (0x40, "float8_e4m3", 8),
    (0x41, "float8_e5m2", 8),
    (0x42, "float8_e8m0", 8),
    (0x43, "float4_e2m1", 4),
    (0x44, "float6_e2m3", 6),
    (0x45, "float6_e3m2", 6),
    (0x46, "float128", 128),
    (0x48, "int4", 4),
    (0x49, "uint4", 4),
    (0x4A, "int2", 2),
    (0x4B, "uint2", 2),
    (0x50, "complex64", 64),
    (0x51, "complex128", 128),
];

/// The manifest name of an element type: the spec's name, `"extension"` for
/// an implementation-private type (the public corpus' spelling).
pub fn type_name(t: ElementType) -> &'static str {
    if t.is_private() {
        "extension"
    } else {
        t.name()
    }
}

/// Bytes of `n` elements of `bits` bits, by the spec's formulas: whole bytes
/// for 8 bits and up, four 6-bit elements per 3-byte group, otherwise
/// bit-packed.
pub fn spec_bytes(bits: u32, n: u64) -> u64 {
    match bits {
        6 => n.div_ceil(4) * 3,
        1 | 2 | 4 => (n * u64::from(bits)).div_ceil(8),
        _ => n * u64::from(bits / 8),
    }
}

fn bits_of(t: ElementType) -> u32 {
    TYPES
        .iter()
        .find(|&&(code, _, _)| code == t.code())
        .map(|&(_, _, bits)| bits)
        .expect("a built-in type")
}

/// Bytes of `n` elements of the built-in type `t`.
fn size(t: ElementType, n: u64) -> u64 {
    spec_bytes(bits_of(t), n)
}

/// A CPU buffer of `byte_size` bytes aligned to 64.
fn cpu(byte_size: u64) -> BufferHandle {
    BufferHandle::new(byte_size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)
        .expect("valid CPU handle")
}

/// `byte_size` bytes on `device` (64-aligned) with `sync` and `class`.
fn on(
    device: DeviceTag,
    sync: SyncMode,
    class: MemoryClass,
    alignment: u32,
    byte_size: u64,
) -> BufferHandle {
    BufferHandle::with_memory_class(byte_size, alignment, device, sync, class)
        .expect("valid handle")
}

/// `count` u64 values.
const fn u64s(count: u64) -> u64 {
    count * 8
}

const F32: ElementType = ElementType::Float32;

/// A descriptor with no optional section (a function, not a closure, so
/// that each call gets its own lifetime).
const fn d<'a>(
    element_type: ElementType,
    shape: &'a [u64],
    layout: LayoutSpec<'a>,
    buffers: &'a [BufferHandle],
) -> TensorDescriptor<'a> {
    TensorDescriptor::new(element_type, shape, layout, buffers)
}

/// A tile level with implicit (row- or column-major) orders.
const fn tile(tile_shape: &[u64], outer_layout: u8, inner_layout: u8) -> TileSpec<'_> {
    TileSpec {
        tile_shape,
        outer_layout,
        inner_layout,
        outer_strides: None,
        inner_strides: None,
    }
}

/// A composite head.
const fn head(
    rule: CompositionRule,
    combine_op: CombineOp,
    member_count: u32,
) -> LayoutSpec<'static> {
    LayoutSpec::Composite(CompositeHead {
        rule,
        combine_op,
        member_count,
    })
}

struct Builder {
    strict: Vec<Vector>,
    permissive: Vec<Vector>,
}

impl Builder {
    fn encode(stem: &str, description: &str, d: &TensorDescriptor<'_>) -> Vector {
        let mut bytes = vec![0u8; d.encoded_len()];
        let n = d
            .encode(&mut bytes)
            .unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(n, bytes.len(), "{stem}: encoded_len");
        let expect = Expect {
            version_major: VERSION_MAJOR,
            version_minor: VERSION_MINOR,
            element_type_tag: d.element_type.code(),
            element_type: type_name(d.element_type).to_owned(),
            shape: d.shape.iter().collect(),
            byte_offset: d.byte_offset,
            layout_tag: d.layout.tag(),
            buffer_byte_sizes: d.buffers.iter().map(|b| b.byte_size()).collect(),
            has_quantization: d.quantization.is_some(),
            has_shard: d.shard.is_some(),
            layout: Some(expect_layout(&d.layout)),
            quantization: d.quantization.as_ref().map(expect_quantization),
            statistics: d.statistics.as_ref().map(expect_statistics),
        };
        Vector {
            stem: stem.to_owned(),
            description: description.to_owned(),
            bytes,
            expect,
        }
    }

    /// Adds a vector a strict reader must accept.
    fn add(&mut self, stem: &str, description: &str, d: TensorDescriptor<'_>) {
        let v = Self::encode(stem, description, &d);
        if let Err(e) = TensorView::parse(&v.bytes) {
            panic!("{stem}: a strict reader rejects it: {e}");
        }
        self.strict.push(v);
    }

    /// Adds a vector a strict reader must refuse and a reader with
    /// [`permissive_options`] must accept.
    fn add_permissive(&mut self, stem: &str, description: &str, d: TensorDescriptor<'_>) {
        let v = Self::encode(stem, description, &d);
        assert!(
            TensorView::parse(&v.bytes).is_err(),
            "{stem}: a strict reader accepts it"
        );
        let options = permissive_options();
        if let Err(e) = TensorView::parse_with(&v.bytes, &options.to_read_options()) {
            panic!("{stem}: the permissive reader rejects it: {e}");
        }
        self.permissive.push(v);
    }
}

/// Builds every vector of the corpus, in manifest order.
///
/// # Panics
/// If a vector does not encode or is not accepted by the reader it is meant
/// for (a bug in this generator or in the library).
pub fn corpus() -> Corpus {
    let mut b = Builder {
        strict: Vec::new(),
        permissive: Vec::new(),
    };
    layouts(&mut b);
    element_types(&mut b);
    sections(&mut b);
    edge_cases(&mut b);
    permissive(&mut b);
    Corpus {
        strict: b.strict,
        permissive: b.permissive,
    }
}

fn layouts(b: &mut Builder) {
    b.add(
        "layout_row_major_f32_3x4",
        "Row-major float32 [3, 4]",
        TensorDescriptor::row_major(F32, &[3, 4], &[cpu(48)]),
    );
    b.add(
        "layout_column_major_f32_3x4",
        "Column-major float32 [3, 4]",
        TensorDescriptor::column_major(F32, &[3, 4], &[cpu(48)]),
    );
    b.add(
        "layout_strided_f32_3x4_transposed",
        "Strided float32 [3, 4], strides [1, 3] (a transposed view)",
        d(F32, &[3, 4], LayoutSpec::Strided(&[1, 3]), &[cpu(48)]),
    );
    b.add(
        "layout_strided_f32_3x4_negative",
        "Strided float32 [3, 4], strides [-4, -1] from byte_offset 44 (both axes reversed)",
        d(F32, &[3, 4], LayoutSpec::Strided(&[-4, -1]), &[cpu(48)]).with_byte_offset(44),
    );
    b.add(
        "layout_strided_f32_3x4_zero_stride",
        "Strided float32 [3, 4], strides [0, 1] (axis 0 broadcast over one 16-byte row)",
        d(F32, &[3, 4], LayoutSpec::Strided(&[0, 1]), &[cpu(16)]),
    );
    b.add(
        "layout_strided_f32_2x3x4_mixed",
        "Strided float32 [2, 3, 4], strides [0, -4, 1] from byte_offset 32 (broadcast, reversed, forward)",
        d(F32, &[2, 3, 4], LayoutSpec::Strided(&[0, -4, 1]), &[cpu(48)]).with_byte_offset(32),
    );
    b.add(
        "layout_tiled_f32_8x8",
        "Tiled float32 [8, 8]: 4x4 tiles, row-major grid and tiles (64 elements)",
        d(
            F32,
            &[8, 8],
            LayoutSpec::Tiled(&[tile(&[4, 4], 0x01, 0x01)]),
            &[cpu(256)],
        ),
    );
    b.add(
        "layout_tiled_f32_6x6_partial",
        "Tiled float32 [6, 6]: 4x4 tiles with padded edge tiles (2x2 grid, 64 elements), column-major inside",
        d(
            F32,
            &[6, 6],
            LayoutSpec::Tiled(&[tile(&[4, 4], 0x01, 0x02)]),
            &[cpu(256)],
        ),
    );
    b.add(
        "layout_tiled_f32_8x8_nested",
        "Tiled float32 [8, 8]: 4x4 tiles nesting 2x2 tiles (column-major sub-grid, row-major inside)",
        d(
            F32,
            &[8, 8],
            LayoutSpec::Tiled(&[tile(&[4, 4], 0x01, 0x04), tile(&[2, 2], 0x02, 0x01)]),
            &[cpu(256)],
        ),
    );
    b.add(
        "layout_tiled_f32_8x8_strided",
        "Tiled float32 [8, 8]: 4x4 tiles, grid strides [1, 2] (tiles), in-tile strides [1, 4] (elements)",
        d(
            F32,
            &[8, 8],
            LayoutSpec::Tiled(&[TileSpec {
                tile_shape: &[4, 4],
                outer_layout: 0x03,
                inner_layout: 0x03,
                outer_strides: Some(&[1, 2]),
                inner_strides: Some(&[1, 4]),
            }]),
            &[cpu(256)],
        ),
    );
    b.add(
        "layout_tiled_f32_16x16_three_levels",
        "Tiled float32 [16, 16]: 8x8 tiles, 4x4 sub-tiles with grid strides [2, 1], 2x2 sub-sub-tiles with in-tile strides [2, 1]",
        d(
            F32,
            &[16, 16],
            LayoutSpec::Tiled(&[
                tile(&[8, 8], 0x01, 0x04),
                TileSpec {
                    tile_shape: &[4, 4],
                    outer_layout: 0x03,
                    inner_layout: 0x04,
                    outer_strides: Some(&[2, 1]),
                    inner_strides: None,
                },
                TileSpec {
                    tile_shape: &[2, 2],
                    outer_layout: 0x01,
                    inner_layout: 0x03,
                    outer_strides: None,
                    inner_strides: Some(&[2, 1]),
                },
            ]),
            &[cpu(1024)],
        ),
    );
    b.add(
        "layout_morton_f32_4x4",
        "Morton float32 [4, 4], morton_bits [2, 2]",
        d(F32, &[4, 4], LayoutSpec::Morton(&[2, 2]), &[cpu(64)]),
    );
    b.add(
        "layout_morton_u8_3x5",
        "Morton uint8 [3, 5], morton_bits [2, 3]: the curve spans 2^5 = 32 elements",
        d(
            ElementType::UInt8,
            &[3, 5],
            LayoutSpec::Morton(&[2, 3]),
            &[cpu(32)],
        ),
    );
    b.add(
        "layout_coo_f32_4x5_sorted",
        "COO float32 [4, 5], nnz 3, sorted: values 3 x f32, indices 3 x 2 x u64",
        d(
            F32,
            &[4, 5],
            LayoutSpec::Coo(Coo {
                nnz: 3,
                sorted: true,
            }),
            &[cpu(12), cpu(u64s(3 * 2))],
        ),
    );
    b.add(
        "layout_coo_f64_2x3x4_unsorted",
        "COO float64 [2, 3, 4], nnz 5, unsorted: values 5 x f64, indices 5 x 3 x u64",
        d(
            ElementType::Float64,
            &[2, 3, 4],
            LayoutSpec::Coo(Coo {
                nnz: 5,
                sorted: false,
            }),
            &[cpu(40), cpu(u64s(5 * 3))],
        ),
    );
    b.add(
        "layout_csr_f32_4x6",
        "CSR float32 [4, 6], nnz 5: values, 5 column indices, 4 + 1 row pointers",
        d(
            F32,
            &[4, 6],
            LayoutSpec::Csr(Compressed { nnz: 5 }),
            &[cpu(20), cpu(u64s(5)), cpu(u64s(5))],
        ),
    );
    b.add(
        "layout_csc_f32_4x6",
        "CSC float32 [4, 6], nnz 5: values, 5 row indices, 6 + 1 column pointers",
        d(
            F32,
            &[4, 6],
            LayoutSpec::Csc(Compressed { nnz: 5 }),
            &[cpu(20), cpu(u64s(5)), cpu(u64s(7))],
        ),
    );
    b.add(
        "layout_csf_f32_2x3x4",
        "CSF float32 [2, 3, 4], mode order [0, 1, 2], nnz 4; tree of 2, 3 and 4 nodes per level",
        d(
            F32,
            &[2, 3, 4],
            LayoutSpec::Csf {
                nnz: 4,
                mode_order: &[0, 1, 2],
            },
            &[
                cpu(16),
                cpu(u64s(2)),
                cpu(u64s(2)),
                cpu(u64s(3)),
                cpu(u64s(3)),
                cpu(u64s(4)),
                cpu(u64s(4)),
            ],
        ),
    );
    b.add(
        "layout_csf_f64_3x2x2x5_permuted",
        "CSF float64 [3, 2, 2, 5], mode order [3, 1, 0, 2], nnz 6; tree of 2, 3, 4 and 6 nodes per level",
        d(
            ElementType::Float64,
            &[3, 2, 2, 5],
            LayoutSpec::Csf {
                nnz: 6,
                mode_order: &[3, 1, 0, 2],
            },
            &[
                cpu(48),
                cpu(u64s(2)),
                cpu(u64s(2)),
                cpu(u64s(3)),
                cpu(u64s(3)),
                cpu(u64s(4)),
                cpu(u64s(4)),
                cpu(u64s(5)),
                cpu(u64s(6)),
            ],
        ),
    );
    b.add(
        "layout_block_paged_f16_key",
        "Block-paged float16 [48, 2, 8]: 4 pages of 16 tokens, 2 sequences, keys of layer 0, uint32 indices",
        d(
            ElementType::Float16,
            &[48, 2, 8],
            LayoutSpec::BlockPaged(BlockPaged {
                page_size: 16,
                num_pages: 4,
                num_seqs: 2,
                kv_role: KvRole::Key,
                layer_index: Some(0),
                wide_indices: false,
            }),
            &[cpu(4 * 16 * 2 * 8 * 2), cpu(3 * 4), cpu((2 + 1) * 4)],
        ),
    );
    b.add(
        "layout_block_paged_bf16_value_wide",
        "Block-paged bfloat16 [20, 4, 4]: 3 pages of 8 tokens, 1 sequence, values, no layer, uint64 indices",
        d(
            ElementType::BFloat16,
            &[20, 4, 4],
            LayoutSpec::BlockPaged(BlockPaged {
                page_size: 8,
                num_pages: 3,
                num_seqs: 1,
                kv_role: KvRole::Value,
                layer_index: None,
                wide_indices: true,
            }),
            &[cpu(3 * 8 * 4 * 4 * 2), cpu(3 * 8), cpu((1 + 1) * 8)],
        ),
    );
    b.add(
        "layout_block_paged_int8_fused_empty_batch",
        "Block-paged int8 [0, 1, 16], fused, layer 7: no sequences (empty block table, one seq_ptr entry)",
        d(
            ElementType::Int8,
            &[0, 1, 16],
            LayoutSpec::BlockPaged(BlockPaged {
                page_size: 4,
                num_pages: 2,
                num_seqs: 0,
                kv_role: KvRole::Fused,
                layer_index: Some(7),
                wide_indices: false,
            }),
            &[cpu(2 * 4 * 16), cpu(0), cpu(4)],
        ),
    );
    b.add(
        "layout_composite_partition",
        "Composite head float32 [8, 8]: partition of 2 members, no buffers",
        d(
            F32,
            &[8, 8],
            head(CompositionRule::Partition, CombineOp::None, 2),
            &[],
        ),
    );
    b.add(
        "layout_composite_overlay_replace",
        "Composite head float32 [8, 8]: overlay (replace) of a base and 1 correction",
        d(
            F32,
            &[8, 8],
            head(CompositionRule::Overlay, CombineOp::Replace, 2),
            &[],
        ),
    );
    b.add(
        "layout_composite_overlay_add",
        "Composite head float32 [8, 8]: overlay (add) of a base and 2 corrections",
        d(
            F32,
            &[8, 8],
            head(CompositionRule::Overlay, CombineOp::Add, 3),
            &[],
        ),
    );
    b.add(
        "layout_composite_group",
        "Composite head int8 [3]: group of 3 independent members",
        d(
            ElementType::Int8,
            &[3],
            head(CompositionRule::Group, CombineOp::None, 3),
            &[],
        ),
    );
    b.add(
        "layout_hilbert_f32_4x4",
        "Hilbert float32 [4, 4], order 2",
        d(
            F32,
            &[4, 4],
            LayoutSpec::Hilbert(Hilbert { order: 2, rank: 2 }),
            &[cpu(64)],
        ),
    );
    b.add(
        "layout_hilbert_u8_2x2x2",
        "Hilbert uint8 [2, 2, 2], order 1",
        d(
            ElementType::UInt8,
            &[2, 2, 2],
            LayoutSpec::Hilbert(Hilbert { order: 1, rank: 3 }),
            &[cpu(8)],
        ),
    );
}

fn element_types(b: &mut Builder) {
    for &(code, name, bits) in TYPES {
        let t = ElementType::from_code(code).expect("a built-in type");
        let n = 15;
        let bytes = spec_bytes(bits, n);
        let how = match bits {
            1 | 2 | 4 => format!("{}-bit, packed LSB first", bits),
            6 => "6-bit, four per 3-byte group".to_owned(),
            _ => format!("{} bytes each", bits / 8),
        };
        b.add(
            &format!("type_{name}_3x5"),
            &format!("Row-major {name} [3, 5]: 15 elements, {how}: {bytes} bytes"),
            TensorDescriptor::row_major(t, &[3, 5], &[cpu(bytes)]),
        );
    }
    let private = |code| ElementType::from_code(code).expect("a private type");
    b.add(
        "type_private_f0_float8_e3m4",
        "Private type 0xF0, an 8-bit float (1 sign, 3 exponent, 4 mantissa bits, bias 3, NaN, no infinity) [4, 4]",
        TensorDescriptor::row_major(private(0xF0), &[4, 4], &[cpu(16)])
            .with_extension_type(ExtensionType::float(8, 1, 3, 4, 3, true, false)),
    );
    b.add(
        "type_private_f1_uint4",
        "Private type 0xF1, an unsigned 4-bit integer packed 2 per byte [3, 5]: 8 bytes",
        TensorDescriptor::row_major(private(0xF1), &[3, 5], &[cpu(spec_bytes(4, 15))])
            .with_extension_type(ExtensionType::integer(4, false)),
    );
    b.add(
        "type_private_fe_int24",
        "Private type 0xFE, a signed 24-bit integer [5]: 15 bytes",
        TensorDescriptor::row_major(private(0xFE), &[5], &[cpu(15)])
            .with_extension_type(ExtensionType::integer(24, true)),
    );
}

fn sections(b: &mut Builder) {
    use ElementType as E;
    let rm = LayoutSpec::RowMajor;
    b.add(
        "quant_per_tensor_int8_4x4",
        "int8 [4, 4], per-tensor affine: scale 0.05, zero point -3",
        TensorDescriptor::row_major(E::Int8, &[4, 4], &[cpu(16)]).with_quantization(
            Scheme::PerTensor {
                scale: 0.05,
                zero_point: -3,
            },
        ),
    );
    b.add(
        "quant_per_tensor_uint4_3x5",
        "uint4 [3, 5], per-tensor affine: scale 0.5, zero point 8",
        TensorDescriptor::row_major(E::UInt4, &[3, 5], &[cpu(size(E::UInt4, 15))])
            .with_quantization(Scheme::PerTensor {
                scale: 0.5,
                zero_point: 8,
            }),
    );
    b.add(
        "quant_per_channel_int8_4x8",
        "int8 [4, 8], per-channel affine on axis 0: 4 f32 scales (buffer 1), 4 i32 zero points (buffer 2)",
        d(E::Int8, &[4, 8], rm, &[cpu(32), cpu(16), cpu(16)]).with_quantization(
            Scheme::PerChannel {
                axis: 0,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            },
        ),
    );
    b.add(
        "quant_per_channel_int16_3x4_symmetric",
        "int16 [3, 4], symmetric per-channel affine on axis 1: 4 f32 scales (buffer 1)",
        d(E::Int16, &[3, 4], rm, &[cpu(24), cpu(16)]).with_quantization(Scheme::PerChannel {
            axis: 1,
            scale_buffer: 1,
            zero_point_buffer: None,
        }),
    );
    b.add(
        "quant_per_block_uint8_4x64",
        "uint8 [4, 64], per-block affine on axis 1, blocks of 32: 8 float16 scales (buffer 1), 8 i32 zero points (buffer 2)",
        d(E::UInt8, &[4, 64], rm, &[cpu(256), cpu(8 * 2), cpu(8 * 4)]).with_quantization(
            Scheme::PerBlock {
                axis: 1,
                block_size: 32,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
                scale_type: E::Float16,
            },
        ),
    );
    // 3 rows of 10 in blocks of 4: 3 blocks per row (the last one partial),
    // 9 blocks; the data holds 9 whole blocks = 36 int4 = 18 bytes.
    b.add(
        "quant_per_block_int4_3x10_padded",
        "int4 [3, 10], symmetric per-block affine on axis 1, blocks of 4 (last block partial, padded): 9 bfloat16 scales",
        d(E::Int4, &[3, 10], rm, &[cpu(size(E::Int4, 36)), cpu(9 * 2)]).with_quantization(
            Scheme::PerBlock {
                axis: 1,
                block_size: 4,
                scale_buffer: 1,
                zero_point_buffer: None,
                scale_type: E::BFloat16,
            },
        ),
    );
    b.add(
        "quant_per_block_int2_8x8_shared_parameters",
        "int2 [8, 8], per-block affine on axis 0, blocks of 4: 16 f32 scales then 16 i32 zero points in one buffer",
        d(
            E::Int2,
            &[8, 8],
            rm,
            &[cpu(size(E::Int2, 64)), cpu(16 * 4 + 16 * 4)],
        )
        .with_quantization(Scheme::PerBlock {
            axis: 0,
            block_size: 4,
            scale_buffer: 1,
            zero_point_buffer: Some(1),
            scale_type: E::Float32,
        }),
    );
    b.add(
        "quant_nf4_uint4_2x64",
        "uint4 [2, 64], NF4 on axis 1, blocks of 64: 2 f32 absmax scales",
        d(
            E::UInt4,
            &[2, 64],
            rm,
            &[cpu(size(E::UInt4, 128)), cpu(2 * 4)],
        )
        .with_quantization(Scheme::Nf4 {
            axis: 1,
            block_size: 64,
            scale_buffer: 1,
        }),
    );
    b.add(
        "quant_mxfp_float8_e4m3_2x64",
        "float8_e4m3 [2, 64], MXFP on axis 1, blocks of 32: 4 E8M0 scales",
        d(E::Float8E4M3, &[2, 64], rm, &[cpu(128), cpu(4)]).with_quantization(Scheme::Mxfp {
            axis: 1,
            block_size: 32,
            scale_buffer: 1,
        }),
    );
    b.add(
        "quant_mxfp_float4_e2m1_4x32",
        "float4_e2m1 [4, 32], MXFP on axis 1, blocks of 32: 4 E8M0 scales",
        d(
            E::Float4E2M1,
            &[4, 32],
            rm,
            &[cpu(size(E::Float4E2M1, 128)), cpu(4)],
        )
        .with_quantization(Scheme::Mxfp {
            axis: 1,
            block_size: 32,
            scale_buffer: 1,
        }),
    );
    b.add(
        "quant_mxfp_float6_e3m2_1x64",
        "float6_e3m2 [1, 64], MXFP on axis 1, blocks of 32: 2 E8M0 scales",
        d(
            E::Float6E3M2,
            &[1, 64],
            rm,
            &[cpu(size(E::Float6E3M2, 64)), cpu(2)],
        )
        .with_quantization(Scheme::Mxfp {
            axis: 1,
            block_size: 32,
            scale_buffer: 1,
        }),
    );
    b.add(
        "quant_per_block_block_paged_int8",
        "Block-paged int8 [48, 2, 8], symmetric per-block affine on axis 0 with blocks of one page (16): one f32 scale per page slot (64, buffer 3)",
        d(
            E::Int8,
            &[48, 2, 8],
            LayoutSpec::BlockPaged(BlockPaged {
                page_size: 16,
                num_pages: 4,
                num_seqs: 2,
                kv_role: KvRole::Key,
                layer_index: Some(1),
                wide_indices: false,
            }),
            &[cpu(4 * 16 * 2 * 8), cpu(3 * 4), cpu(3 * 4), cpu(4 * 16 * 4)],
        )
        .with_quantization(Scheme::PerBlock {
            axis: 0,
            block_size: 16,
            scale_buffer: 3,
            zero_point_buffer: None,
            scale_type: E::Float32,
        }),
    );
    let padded_buffers = [cpu(4)];
    let mut padded = TensorDescriptor::row_major(E::Int8, &[4], &padded_buffers).with_quantization(
        Scheme::PerTensor {
            scale: 2.0,
            zero_point: 0,
        },
    );
    if let Some(q) = &mut padded.quantization {
        *q = Quantization {
            scheme: q.scheme,
            padding: 8,
        };
    }
    b.add(
        "quant_per_tensor_writer_padding",
        "int8 [4], per-tensor affine with 8 zero bytes of writer padding (quantization_length 24)",
        padded,
    );
    b.add(
        "shard_f32_2x3_of_4x6",
        "float32 [2, 3], the shard at [2, 3] of a [4, 6] parent",
        TensorDescriptor::row_major(F32, &[2, 3], &[cpu(24)]).with_shard(&[4, 6], &[2, 3]),
    );
    b.add(
        "shard_int8_5_of_20",
        "int8 [5], the last 5 elements of a [20] parent",
        TensorDescriptor::row_major(E::Int8, &[5], &[cpu(5)]).with_shard(&[20], &[15]),
    );
    b.add(
        "stats_f32_3x4_all_groups",
        "float32 [3, 4] with every statistics group: nnz, sparsity, range, mean/stddev, 2:4 sparsity, NaN/inf flags",
        TensorDescriptor::row_major(F32, &[3, 4], &[cpu(48)]).with_statistics(
            Statistics::new()
                .with_nnz(6)
                .with_sparsity_ratio(0.5)
                .with_value_range(-1.5, 2.0)
                .with_value_stats(0.25, 0.75)
                .with_nm_sparsity(2, 4)
                .with_nan_inf(false, false),
        ),
    );
    b.add(
        "stats_coo_nnz",
        "COO float32 [4, 4], nnz 3, with statistics nnz 3 and sparsity 0.8125",
        d(
            F32,
            &[4, 4],
            LayoutSpec::Coo(Coo {
                nnz: 3,
                sorted: true,
            }),
            &[cpu(12), cpu(u64s(6))],
        )
        .with_statistics(Statistics::new().with_nnz(3).with_sparsity_ratio(0.8125)),
    );
    b.add(
        "stats_f64_non_finite",
        "float64 [8] with statistics: range [-inf, 5], NaN mean, NaN and infinity present",
        TensorDescriptor::row_major(E::Float64, &[8], &[cpu(64)]).with_statistics(
            Statistics::new()
                .with_value_range(f64::NEG_INFINITY, 5.0)
                .with_value_stats(f64::NAN, 0.0)
                .with_nan_inf(true, true),
        ),
    );
    b.add(
        "ext_type_f2_float16_e6m9_stats",
        "Private type 0xF2, a 16-bit float (1 sign, 6 exponent, 9 mantissa bits, bias 31, infinity, no NaN) [2, 2], with statistics",
        TensorDescriptor::row_major(ElementType::Private(0xF2), &[2, 2], &[cpu(8)])
            .with_extension_type(ExtensionType::float(16, 1, 6, 9, 31, false, true))
            .with_statistics(Statistics::new().with_value_range(-4.0, 1.0)),
    );
    b.add(
        "member_overlay_base_f32_8x8",
        "float32 [8, 8], the base member of an overlay",
        TensorDescriptor::row_major(F32, &[8, 8], &[cpu(256)]).with_member_role(MemberRole::Base),
    );
    b.add(
        "member_overlay_correction_f32_2x2",
        "float32 [2, 2], an overlay correction placed at [4, 4] of the [8, 8] base by its shard section",
        TensorDescriptor::row_major(F32, &[2, 2], &[cpu(16)])
            .with_shard(&[8, 8], &[4, 4])
            .with_member_role(MemberRole::Correction),
    );
    b.add(
        "sections_quant_shard_stats_member",
        "int8 [2, 4], per-channel affine on axis 1, the shard at [2, 0] of [4, 4], statistics, overlay correction",
        d(E::Int8, &[2, 4], rm, &[cpu(8), cpu(16), cpu(16)])
            .with_quantization(Scheme::PerChannel {
                axis: 1,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            })
            .with_shard(&[4, 4], &[2, 0])
            .with_statistics(Statistics::new().with_nnz(8).with_value_range(-3.0, 3.0))
            .with_member_role(MemberRole::Correction),
    );
}

fn edge_cases(b: &mut Builder) {
    use ElementType as E;
    b.add(
        "edge_rank0_f32_scalar",
        "Rank-0 float32 scalar: one element, 4 bytes",
        TensorDescriptor::row_major(F32, &[], &[cpu(4)]),
    );
    b.add(
        "edge_rank0_bool_scalar",
        "Rank-0 bool scalar: one bit in one byte",
        TensorDescriptor::row_major(E::Bool, &[], &[cpu(1)]),
    );
    b.add(
        "edge_rank64_f32",
        "float32 of rank 64, every dimension 1",
        TensorDescriptor::row_major(F32, &[1; 64], &[cpu(4)]),
    );
    b.add(
        "edge_empty_f32_0x4",
        "Empty float32 [0, 4]: a zero-byte buffer aligned to 64",
        TensorDescriptor::row_major(F32, &[0, 4], &[cpu(0)]),
    );
    b.add(
        "edge_empty_int8_3x0x2_align1",
        "Empty int8 [3, 0, 2]: a zero-byte buffer with alignment 1",
        TensorDescriptor::row_major(E::Int8, &[3, 0, 2], &[BufferHandle::empty(DeviceTag::Cpu)]),
    );
    b.add(
        "edge_empty_strided_f32_0x3",
        "Empty strided float32 [0, 3], strides [3, 1]",
        d(F32, &[0, 3], LayoutSpec::Strided(&[3, 1]), &[cpu(0)]),
    );
    b.add(
        "edge_empty_coo_nnz0",
        "COO float32 [4, 4] with no stored element: two empty buffers",
        d(
            F32,
            &[4, 4],
            LayoutSpec::Coo(Coo {
                nnz: 0,
                sorted: true,
            }),
            &[cpu(0), cpu(0)],
        ),
    );
    b.add(
        "edge_dynamic_f32_dx4",
        "float32 [dynamic, 4]: buffer sizes are not checked against a dynamic shape",
        TensorDescriptor::row_major(F32, &[DYNAMIC, 4], &[cpu(4096)]),
    );
    b.add(
        "edge_dynamic_u8_dxd",
        "uint8 [dynamic, dynamic]",
        TensorDescriptor::row_major(E::UInt8, &[DYNAMIC, DYNAMIC], &[cpu(1024)]),
    );
    b.add(
        "edge_dynamic_strided_f32_dx3",
        "Strided float32 [dynamic, 3], strides [3, 1]",
        d(
            F32,
            &[DYNAMIC, 3],
            LayoutSpec::Strided(&[3, 1]),
            &[cpu(1024)],
        ),
    );
    b.add(
        "edge_byte_offset_f32_2x2",
        "float32 [2, 2] at byte_offset 64 of an 80-byte buffer",
        TensorDescriptor::row_major(F32, &[2, 2], &[cpu(80)]).with_byte_offset(64),
    );
    b.add(
        "edge_huge_u8_2p31x2p31",
        "uint8 [2^31, 2^31]: a 2^62-byte buffer",
        TensorDescriptor::row_major(E::UInt8, &[1 << 31, 1 << 31], &[cpu(1 << 62)]),
    );
    b.add(
        "edge_private_device_and_memory_class",
        "float32 [4, 4] on private device 0xF3 in private memory class 0xF7, event sync, aligned to 256",
        TensorDescriptor::row_major(
            F32,
            &[4, 4],
            &[on(
                DeviceTag::Private(0xF3),
                SyncMode::Event,
                MemoryClass::Private(0xF7),
                256,
                64,
            )],
        ),
    );
    b.add(
        "edge_cuda_page_aligned_unified",
        "float16 [64, 64] in CUDA unified memory, aligned to a 4 KiB page, event sync",
        TensorDescriptor::row_major(
            E::Float16,
            &[64, 64],
            &[on(
                DeviceTag::Cuda,
                SyncMode::Event,
                MemoryClass::Unified,
                4096,
                8192,
            )],
        ),
    );
    b.add(
        "edge_vulkan_page_aligned",
        "float32 [32, 32] in Vulkan device memory, aligned to a 4 KiB page, consumer-stream sync",
        TensorDescriptor::row_major(
            F32,
            &[32, 32],
            &[on(
                DeviceTag::Vulkan,
                SyncMode::ConsumerStream,
                MemoryClass::Standard,
                4096,
                4096,
            )],
        ),
    );
    // Every named device with a memory class it allows; the three sync
    // modes in turn (a CPU buffer is always producer-synced).
    let devices = [
        (
            DeviceTag::Cpu,
            SyncMode::ProducerSynced,
            MemoryClass::HostPinned,
        ),
        (DeviceTag::Cuda, SyncMode::Event, MemoryClass::PeerToPeer),
        (
            DeviceTag::Rocm,
            SyncMode::ConsumerStream,
            MemoryClass::Unified,
        ),
        (
            DeviceTag::Metal,
            SyncMode::ProducerSynced,
            MemoryClass::Unified,
        ),
        (DeviceTag::Vulkan, SyncMode::Event, MemoryClass::HostPinned),
        (
            DeviceTag::WebGpu,
            SyncMode::ConsumerStream,
            MemoryClass::Standard,
        ),
        (DeviceTag::Hexagon, SyncMode::Event, MemoryClass::HostPinned),
        (
            DeviceTag::LevelZero,
            SyncMode::ConsumerStream,
            MemoryClass::PeerToPeer,
        ),
        (
            DeviceTag::OpenCl,
            SyncMode::ProducerSynced,
            MemoryClass::Unified,
        ),
    ];
    for (device, sync, class) in devices {
        b.add(
            &format!("edge_device_{}", device.name()),
            &format!(
                "float32 [4, 4] on {} ({:#04x}), {} memory, {} sync",
                device.name(),
                device.code(),
                class.name(),
                sync.name()
            ),
            TensorDescriptor::row_major(F32, &[4, 4], &[on(device, sync, class, 64, 64)]),
        );
    }
    let cuda = |size| {
        on(
            DeviceTag::Cuda,
            SyncMode::ConsumerStream,
            MemoryClass::Standard,
            256,
            size,
        )
    };
    b.add(
        "edge_csr_on_cuda",
        "CSR float32 [3, 3], nnz 2, its three buffers colocated on CUDA, consumer-stream sync",
        d(
            F32,
            &[3, 3],
            LayoutSpec::Csr(Compressed { nnz: 2 }),
            &[cuda(8), cuda(u64s(2)), cuda(u64s(4))],
        ),
    );
}

fn permissive(b: &mut Builder) {
    use ElementType as E;
    b.add_permissive(
        "permissive_layout_private_f0",
        "float32 [4, 4] in private layout 0xF0, id 0x6875727261790001, 5 bytes of layout data",
        TensorDescriptor::new(
            F32,
            &[4, 4],
            LayoutSpec::Extension {
                tag: 0xF0,
                id: PRIVATE_LAYOUT_ID,
                data: &[1, 2, 3, 4, 5],
            },
            &[cpu(64)],
        ),
    );
    b.add_permissive(
        "permissive_quant_private_scheme_f5",
        "int8 [4, 4] quantized by private scheme 0xF5 (version 1, 8 payload bytes)",
        TensorDescriptor::row_major(E::Int8, &[4, 4], &[cpu(16)]).with_quantization(
            Scheme::Private {
                tag: 0xF5,
                version: 1,
                flags: 0,
                payload: &[0, 0, 0x80, 0x3F, 0, 0, 0, 0],
            },
        ),
    );
}

/// Every file of the corpus: its path relative to the output directory and
/// its bytes.
///
/// # Panics
/// As [`corpus`].
pub fn files() -> Vec<(PathBuf, Vec<u8>)> {
    let corpus = corpus();
    let mut out = Vec::new();
    for (dir, vectors, options) in [
        (PathBuf::new(), &corpus.strict, None),
        (
            PathBuf::from("permissive"),
            &corpus.permissive,
            Some(permissive_options()),
        ),
    ] {
        let mut manifest = Manifest {
            format_version: FORMAT_VERSION.to_owned(),
            reader_options: options,
            descriptors: Vec::new(),
            files: Vec::new(),
        };
        for v in vectors {
            let file = format!("descriptors/{}.bin", v.stem);
            out.push((dir.join(&file), v.bytes.clone()));
            manifest.descriptors.push(DescriptorVector {
                file,
                description: v.description.clone(),
                expect: v.expect.clone(),
            });
        }
        // Pretty-printed with two-space indents and no final newline, as the
        // shared manifest is.
        let json = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
        out.push((dir.join("manifest.json"), json));
    }
    out
}

/// Writes the corpus under `dir`; returns the number of descriptors.
///
/// # Errors
/// Any I/O error.
pub fn write(dir: &Path) -> std::io::Result<usize> {
    let files = files();
    for (path, bytes) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    Ok(files
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "bin"))
        .count())
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: cargo run --example write_vectors -- DIR");
        return std::process::ExitCode::from(2);
    };
    let dir = PathBuf::from(dir);
    match write(&dir) {
        Ok(n) => {
            println!(
                "wrote {n} descriptors and their manifests under {}",
                dir.display()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("write_vectors: {}: {e}", dir.display());
            std::process::ExitCode::FAILURE
        }
    }
}
