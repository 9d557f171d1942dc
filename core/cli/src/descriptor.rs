//! Descriptors: the JSON record ([`record`]) and the annotated dump
//! ([`annotate`], [`dump`]) of one `HRRY` tensor descriptor.
//!
//! * [`record`]: one JSON object holding the public conformance manifest's
//!   keys (`version_major`, `version_minor`, `element_type_tag`,
//!   `element_type`, `shape` with `u64::MAX` for a dynamic dimension,
//!   `byte_offset`, `layout_tag`, `buffer_byte_sizes`, `has_quantization`,
//!   `has_shard`) plus `file`, the layout and its fields, every buffer
//!   handle (device, sync mode and memory class as names and codes) and the
//!   content of every optional section.
//! * [`dump`]: every field in wire order — offset, bytes (hex), field name,
//!   meaning — then a one-line summary.
//!
//! Both take a descriptor the strict reader ([`TensorView::parse_with`])
//! accepted; [`annotate`] never validates and never panics (a field that
//! runs past the end is an `Err`).

use std::fmt::Write as _;

use hurray::field::FieldValue;
use hurray::layout::{Layout, name_of};
use hurray::{
    BufferHandle, DeviceTag, ElementType, Field, MemberRole, MemoryClass, Packing, Scheme,
    SyncMode, TensorView, is_private_code,
};
use hurray_core as hurray;
use serde::Serialize;

/// A code byte with its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Code {
    /// The name (`"cuda"`, `"event"`, …).
    pub name: &'static str,
    /// The wire byte.
    pub code: u8,
}

const fn code(name: &'static str, code: u8) -> Code {
    Code { name, code }
}

/// One buffer handle.
#[derive(Debug, Serialize)]
pub struct Buffer {
    /// `byte_size`.
    pub byte_size: u64,
    /// `alignment`.
    pub alignment: u32,
    /// `device_tag`.
    pub device: Code,
    /// `sync_mode`.
    pub sync_mode: Code,
    /// `memory_class`.
    pub memory_class: Code,
}

impl From<BufferHandle> for Buffer {
    fn from(h: BufferHandle) -> Self {
        Self {
            byte_size: h.byte_size(),
            alignment: h.alignment(),
            device: code(h.device_tag().name(), h.device_tag().code()),
            sync_mode: code(h.sync_mode().name(), h.sync_mode().code()),
            memory_class: code(h.memory_class().name(), h.memory_class().code()),
        }
    }
}

/// One level of a tiled layout.
#[derive(Debug, Serialize)]
pub struct TileLevel {
    /// Tile size per dimension.
    pub tile_shape: Vec<u64>,
    /// Order of the tile grid.
    pub outer_layout: Code,
    /// Order inside a tile (`tiled` when another level follows).
    pub inner_layout: Code,
    /// Grid strides in tiles (strided grid only).
    pub outer_strides: Option<Vec<i64>>,
    /// Strides inside a tile in elements (strided inside only).
    pub inner_strides: Option<Vec<i64>>,
}

/// The layout and its fields; `name` is the spec's layout name.
#[derive(Debug, Serialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum LayoutFields {
    /// Row-major.
    RowMajor,
    /// Column-major.
    ColumnMajor,
    /// Strided.
    Strided {
        /// Strides in elements.
        strides: Vec<i64>,
    },
    /// Tiled.
    Tiled {
        /// Levels, outermost first.
        levels: Vec<TileLevel>,
    },
    /// Morton.
    Morton {
        /// Bits per dimension.
        morton_bits: Vec<u32>,
    },
    /// COO.
    Coo {
        /// Stored elements.
        nnz: u64,
        /// Whether the coordinates are sorted.
        is_sorted: bool,
    },
    /// CSR.
    Csr {
        /// Stored elements.
        nnz: u64,
    },
    /// CSC.
    Csc {
        /// Stored elements.
        nnz: u64,
    },
    /// CSF.
    Csf {
        /// Stored elements.
        nnz: u64,
        /// Dimension of each tree level.
        mode_order: Vec<u32>,
    },
    /// Block-paged.
    BlockPaged {
        /// Tokens per page.
        page_size: u32,
        /// Pages in the pool.
        num_pages: u64,
        /// Always 0.
        paged_axis: u32,
        /// Sequences.
        num_seqs: u32,
        /// Key, value or fused.
        kv_role: Code,
        /// Layer, or null when not layer-scoped.
        layer_index: Option<u32>,
        /// uint32 or uint64 indices.
        block_table_index_type: Code,
    },
    /// Composite head.
    Composite {
        /// Partition, overlay, group or private.
        composition_rule: Code,
        /// Overlay combine operation.
        combine_op: Code,
        /// Members that follow.
        member_count: u32,
    },
    /// Hilbert.
    Hilbert {
        /// Curve order.
        hilbert_order: u32,
        /// Curve rank.
        hilbert_rank: u32,
    },
    /// A private layout.
    Extension {
        /// The layout tag.
        tag: u8,
        /// Its id.
        extension_layout_id: u64,
        /// Its data, in hex.
        extension_data: String,
    },
    /// A layout this tool does not know yet.
    Unknown {
        /// The layout tag.
        tag: u8,
    },
}

/// The quantization section.
#[derive(Debug, Serialize)]
pub struct QuantizationFields {
    /// The scheme's name and tag.
    pub scheme: Code,
    /// `SYMMETRIC` flag (per-channel and per-block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symmetric: Option<bool>,
    /// Per-tensor scale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f32>,
    /// Per-tensor zero point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero_point: Option<i32>,
    /// Quantized axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub axis: Option<u32>,
    /// Elements per block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u32>,
    /// Buffer holding the scales.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_buffer_index: Option<u32>,
    /// Buffer holding the zero points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero_point_buffer_index: Option<u32>,
    /// Type of the scales.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_type: Option<Code>,
    /// Private scheme: `scheme_version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme_version: Option<u8>,
    /// Private scheme: its flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme_flags: Option<u16>,
    /// Private scheme: the bytes after the header, in hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// Zero bytes of writer padding after the scheme's fields.
    pub padding: u32,
}

/// The shard section.
#[derive(Debug, Serialize)]
pub struct ShardFields {
    /// The parent tensor's shape.
    pub parent_shape: Vec<u64>,
    /// Where this shard starts in it.
    pub shard_offset: Vec<u64>,
}

/// The statistics section; a group whose mask bit is clear is `null`.
/// Non-finite floats are written as the strings `"NaN"`, `"inf"`, `"-inf"`.
#[derive(Debug, Serialize)]
pub struct StatisticsFields {
    /// `computed_mask`.
    pub computed_mask: u32,
    /// Non-zero count.
    pub nnz: Option<u64>,
    /// Fraction of zeros.
    pub sparsity_ratio: Option<serde_json::Value>,
    /// Smallest value.
    pub value_min: Option<serde_json::Value>,
    /// Largest value.
    pub value_max: Option<serde_json::Value>,
    /// Largest magnitude.
    pub value_abs_max: Option<serde_json::Value>,
    /// Mean.
    pub value_mean: Option<serde_json::Value>,
    /// Standard deviation.
    pub value_stddev: Option<serde_json::Value>,
    /// N of N:M sparsity.
    pub nm_n: Option<u8>,
    /// M of N:M sparsity.
    pub nm_m: Option<u8>,
    /// Whether a NaN is present.
    pub has_nan: Option<bool>,
    /// Whether an infinity is present.
    pub has_inf: Option<bool>,
}

/// The extension type section.
#[derive(Debug, Serialize)]
pub struct ExtensionTypeFields {
    /// Bits per element.
    pub bit_width: u32,
    /// Elements per byte.
    pub packing_factor: u8,
    /// Floating point.
    pub is_float: bool,
    /// Signed integer.
    pub is_signed: bool,
    /// Sign bits.
    pub sign_bits: u8,
    /// Exponent bits.
    pub exponent_bits: u8,
    /// Mantissa bits.
    pub mantissa_bits: u8,
    /// Exponent bias.
    pub exponent_bias: u32,
    /// NaN representable.
    pub has_nan: bool,
    /// Infinity representable.
    pub has_inf: bool,
}

/// Everything one descriptor says, as written by `--json`.
#[derive(Debug, Serialize)]
pub struct Record {
    /// The file it came from.
    pub file: String,
    /// `version_major`.
    pub version_major: u8,
    /// `version_minor`.
    pub version_minor: u8,
    /// `descriptor_length`.
    pub descriptor_length: u32,
    /// The flag word.
    pub flags: u32,
    /// `type_tag`.
    pub element_type_tag: u8,
    /// The type's name (`"extension"` for a private type).
    pub element_type: &'static str,
    /// Bits per element (from the extension type section for a private type).
    pub element_bits: u32,
    /// Number of dimensions.
    pub rank: u32,
    /// The shape; `18446744073709551615` (`u64::MAX`) marks a dynamic dimension.
    pub shape: Vec<u64>,
    /// Product of the shape; `null` when a dimension is dynamic.
    pub element_count: Option<u64>,
    /// `byte_offset`.
    pub byte_offset: u64,
    /// `layout_tag`.
    pub layout_tag: u8,
    /// The layout's fields.
    pub layout: LayoutFields,
    /// Each buffer's `byte_size`.
    pub buffer_byte_sizes: Vec<u64>,
    /// The buffer handles.
    pub buffers: Vec<Buffer>,
    /// Whether a quantization section is present.
    pub has_quantization: bool,
    /// Whether a shard section is present.
    pub has_shard: bool,
    /// Whether a statistics section is present.
    pub has_statistics: bool,
    /// Whether an extension type section is present.
    pub has_extension_type: bool,
    /// Whether a composite member section is present.
    pub has_composite_member: bool,
    /// The quantization section.
    pub quantization: Option<QuantizationFields>,
    /// The shard section.
    pub shard: Option<ShardFields>,
    /// The statistics section.
    pub statistics: Option<StatisticsFields>,
    /// The extension type section.
    pub extension_type: Option<ExtensionTypeFields>,
    /// The composite member section's role.
    pub member_role: Option<Code>,
}

/// The manifest name of an element type (`"extension"` for a private one,
/// as the public corpus spells it).
pub fn type_name(t: ElementType) -> &'static str {
    if t.is_private() {
        "extension"
    } else {
        t.name()
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A float as JSON: a number, or `"NaN"`, `"inf"`, `"-inf"`.
#[must_use]
pub fn float(v: f64) -> serde_json::Value {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        v.into()
    }
}

const fn bits_of(p: Packing) -> u32 {
    match p {
        Packing::Bytes(n) => n * 8,
        Packing::Bits(b) => b as u32,
        Packing::SixBitGroups => 6,
    }
}

const fn layout_code(tag: u8) -> Code {
    code(name_of(tag), tag)
}

fn layout_fields(layout: Layout<'_>) -> LayoutFields {
    use hurray::layout::{CombineOp, CompositionRule, KvRole};
    match layout {
        Layout::RowMajor => LayoutFields::RowMajor,
        Layout::ColumnMajor => LayoutFields::ColumnMajor,
        Layout::Strided(s) => LayoutFields::Strided {
            strides: s.iter().collect(),
        },
        Layout::Tiled(t) => LayoutFields::Tiled {
            levels: t
                .levels()
                .map(|l| TileLevel {
                    tile_shape: l.tile_shape.iter().collect(),
                    outer_layout: layout_code(l.outer_layout),
                    inner_layout: layout_code(l.inner_layout),
                    outer_strides: l.outer_strides.map(|s| s.iter().collect()),
                    inner_strides: l.inner_strides.map(|s| s.iter().collect()),
                })
                .collect(),
        },
        Layout::Morton(bits) => LayoutFields::Morton {
            morton_bits: bits.iter().collect(),
        },
        Layout::Coo(c) => LayoutFields::Coo {
            nnz: c.nnz,
            is_sorted: c.sorted,
        },
        Layout::Csr(c) => LayoutFields::Csr { nnz: c.nnz },
        Layout::Csc(c) => LayoutFields::Csc { nnz: c.nnz },
        Layout::Csf(c) => LayoutFields::Csf {
            nnz: c.nnz(),
            mode_order: c.mode_order().iter().collect(),
        },
        Layout::BlockPaged(p) => LayoutFields::BlockPaged {
            page_size: p.page_size,
            num_pages: p.num_pages,
            paged_axis: 0,
            num_seqs: p.num_seqs,
            kv_role: match p.kv_role {
                KvRole::Key => code("key", 0),
                KvRole::Value => code("value", 1),
                KvRole::Fused => code("fused", 2),
            },
            layer_index: p.layer_index,
            block_table_index_type: if p.wide_indices {
                code("uint64", 1)
            } else {
                code("uint32", 0)
            },
        },
        Layout::Composite(h) => LayoutFields::Composite {
            composition_rule: match h.rule {
                CompositionRule::Partition => code("partition", 1),
                CompositionRule::Overlay => code("overlay", 2),
                CompositionRule::Group => code("group", 3),
                other => code("private", other.code()),
            },
            combine_op: match h.combine_op {
                CombineOp::None => code("none", 0),
                CombineOp::Replace => code("replace", 1),
                CombineOp::Add => code("add", 2),
            },
            member_count: h.member_count,
        },
        Layout::Hilbert(h) => LayoutFields::Hilbert {
            hilbert_order: h.order,
            hilbert_rank: h.rank,
        },
        Layout::Extension(e) => LayoutFields::Extension {
            tag: e.tag(),
            extension_layout_id: e.id(),
            extension_data: hex(e.data()),
        },
        other => LayoutFields::Unknown { tag: other.tag() },
    }
}

fn quantization_fields(q: hurray::Quantization<'_>) -> QuantizationFields {
    let s = q.scheme;
    let mut f = QuantizationFields {
        scheme: code(s.name(), s.tag()),
        symmetric: None,
        scale: None,
        zero_point: None,
        axis: None,
        block_size: None,
        scale_buffer_index: None,
        zero_point_buffer_index: None,
        scale_type: None,
        scheme_version: None,
        scheme_flags: None,
        payload: None,
        padding: q.padding,
    };
    match s {
        Scheme::PerTensor { scale, zero_point } => {
            f.scale = Some(scale);
            f.zero_point = Some(zero_point);
        }
        Scheme::PerChannel {
            axis,
            scale_buffer,
            zero_point_buffer,
        } => {
            f.symmetric = Some(zero_point_buffer.is_none());
            f.axis = Some(axis);
            f.scale_buffer_index = Some(scale_buffer);
            f.zero_point_buffer_index = zero_point_buffer;
            f.scale_type = Some(code("float32", ElementType::Float32.code()));
        }
        Scheme::PerBlock {
            axis,
            block_size,
            scale_buffer,
            zero_point_buffer,
            scale_type,
        } => {
            f.symmetric = Some(zero_point_buffer.is_none());
            f.axis = Some(axis);
            f.block_size = Some(block_size);
            f.scale_buffer_index = Some(scale_buffer);
            f.zero_point_buffer_index = zero_point_buffer;
            f.scale_type = Some(code(scale_type.name(), scale_type.code()));
        }
        Scheme::Nf4 {
            axis,
            block_size,
            scale_buffer,
        } => {
            f.axis = Some(axis);
            f.block_size = Some(block_size);
            f.scale_buffer_index = Some(scale_buffer);
            f.scale_type = Some(code("float32", ElementType::Float32.code()));
        }
        Scheme::Mxfp {
            axis,
            block_size,
            scale_buffer,
        } => {
            f.axis = Some(axis);
            f.block_size = Some(block_size);
            f.scale_buffer_index = Some(scale_buffer);
            f.scale_type = Some(code("float8_e8m0", ElementType::Float8E8M0.code()));
        }
        Scheme::Private {
            version,
            flags,
            payload,
            ..
        } => {
            f.scheme_version = Some(version);
            f.scheme_flags = Some(flags);
            f.payload = Some(hex(payload));
        }
        _ => {}
    }
    f
}

/// Everything `view` says, for `--json`.
pub fn record(file: &str, view: &TensorView<'_>) -> Record {
    let (major, minor) = view.version();
    let flags = view.flags();
    let buffers: Vec<Buffer> = view.buffers().iter().map(Buffer::from).collect();
    Record {
        file: file.to_owned(),
        version_major: major,
        version_minor: minor,
        descriptor_length: view.header().descriptor_length.get(),
        flags: flags.bits(),
        element_type_tag: view.element_type().code(),
        element_type: type_name(view.element_type()),
        element_bits: bits_of(view.packing()),
        rank: view.rank(),
        shape: view.shape().iter().collect(),
        element_count: view.element_count(),
        byte_offset: view.byte_offset(),
        layout_tag: view.layout().tag(),
        layout: layout_fields(view.layout()),
        buffer_byte_sizes: buffers.iter().map(|b| b.byte_size).collect(),
        buffers,
        has_quantization: flags.contains(hurray::Flags::HAS_QUANTIZATION),
        has_shard: flags.contains(hurray::Flags::HAS_SHARD),
        has_statistics: flags.contains(hurray::Flags::HAS_STATISTICS),
        has_extension_type: flags.contains(hurray::Flags::HAS_EXTENSION_TYPE),
        has_composite_member: flags.contains(hurray::Flags::HAS_COMPOSITE_MEMBER),
        quantization: view.quantization().map(quantization_fields),
        shard: view.shard().map(|s| ShardFields {
            parent_shape: s.parent_shape.iter().collect(),
            shard_offset: s.shard_offset.iter().collect(),
        }),
        statistics: view.statistics().map(|s| {
            let range = s.value_range();
            let stats = s.value_stats();
            StatisticsFields {
                computed_mask: s.mask(),
                nnz: s.nnz(),
                sparsity_ratio: s.sparsity_ratio().map(float),
                value_min: range.map(|r| float(r.0)),
                value_max: range.map(|r| float(r.1)),
                value_abs_max: range.map(|r| float(r.2)),
                value_mean: stats.map(|r| float(r.0)),
                value_stddev: stats.map(|r| float(r.1)),
                nm_n: s.nm_sparsity().map(|r| r.0),
                nm_m: s.nm_sparsity().map(|r| r.1),
                has_nan: s.nan_inf().map(|r| r.0),
                has_inf: s.nan_inf().map(|r| r.1),
            }
        }),
        extension_type: view.extension_type().map(|e| {
            let raw = e.entry();
            ExtensionTypeFields {
                bit_width: raw.bit_width.get(),
                packing_factor: raw.packing_factor,
                is_float: raw.is_float == 1,
                is_signed: raw.is_signed == 1,
                sign_bits: raw.sign_bits,
                exponent_bits: raw.exponent_bits,
                mantissa_bits: raw.mantissa_bits,
                exponent_bias: raw.exponent_bias.get(),
                has_nan: raw.has_nan == 1,
                has_inf: raw.has_inf == 1,
            }
        }),
        member_role: view.member_role().map(|r| match r {
            MemberRole::Correction => code("correction", r.code()),
            MemberRole::Base => code("base", r.code()),
        }),
    }
}

// --- the annotated dump ------------------------------------------------------

/// One field of the annotated dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Byte offset in the descriptor.
    pub offset: usize,
    /// The field's bytes.
    pub bytes: Vec<u8>,
    /// The spec's field name.
    pub field: String,
    /// What the value means.
    pub meaning: String,
}

fn dim(v: u64) -> String {
    if v == u64::MAX {
        "dynamic".to_owned()
    } else {
        v.to_string()
    }
}

fn buffer_index(v: u64) -> String {
    if v == u64::from(u32::MAX) {
        "none (0xFFFFFFFF)".to_owned()
    } else {
        format!("buffer {v}")
    }
}

fn type_meaning(tag: u8) -> String {
    match ElementType::from_code(tag) {
        Some(t) if t.is_private() => "private type (see the extension type section)".to_owned(),
        Some(t) => match t.packing() {
            Some(Packing::Bytes(n)) => format!("{}, {n} bytes per element", t.name()),
            Some(Packing::Bits(b)) => format!("{}, {b}-bit, packed LSB first", t.name()),
            Some(Packing::SixBitGroups) => {
                format!("{}, 6-bit, four per 3-byte group", t.name())
            }
            None => t.name().to_owned(),
        },
        None => "unknown".to_owned(),
    }
}

fn names_of_bits(bits: u64, names: &[&str], none: &str) -> String {
    let set: Vec<&str> = (0..names.len())
        .filter(|i| bits & (1 << i) != 0)
        .map(|i| names[i])
        .collect();
    if set.is_empty() {
        none.to_owned()
    } else {
        set.join(" + ")
    }
}

fn code_name<T>(
    v: u8,
    decode: impl FnOnce(u8) -> Option<T>,
    name: impl FnOnce(T) -> &'static str,
) -> String {
    match decode(v) {
        Some(t) if is_private_code(v) => format!("{} ({v:#04x})", name(t)),
        Some(t) => name(t).to_owned(),
        None => "unknown".to_owned(),
    }
}

/// What one field's value means (the walker in the core names and reads
/// it; this is presentation only).
fn meaning(view: &TensorView<'_>, f: &Field<'_>) -> String {
    let p = f.path;
    let n = f.value.as_u64().unwrap_or(0);
    let byte = u8::try_from(n).unwrap_or(u8::MAX);
    let yes = |v: u64| if v == 1 { "yes" } else { "no" }.to_owned();
    let stats_mask = view.statistics().map_or(0, |s| s.mask());
    let computed = |bit: u32, s: String| {
        if stats_mask & (1 << bit) != 0 {
            s
        } else {
            format!("{s} (not computed)")
        }
    };
    let value = match f.value {
        FieldValue::F32(v) => v.to_string(),
        FieldValue::F64(v) => v.to_string(),
        FieldValue::I32(v) => v.to_string(),
        FieldValue::I64(v) => v.to_string(),
        _ => n.to_string(),
    };
    match (p.part, p.name) {
        (_, n) if n.starts_with("_reserved") => "reserved, zero".to_owned(),
        ("", "magic") => format!("{:?}", String::from_utf8_lossy(f.bytes)),
        ("", "descriptor_length" | "quantization_length") => format!("{n} bytes"),
        ("", "flags") => names_of_bits(
            n,
            &[
                "quantization",
                "shard",
                "extension type",
                "statistics",
                "composite member",
            ],
            "no optional section",
        ),
        ("", "type_tag") => type_meaning(byte),
        ("", "layout_tag") => name_of(byte).to_owned(),
        ("", "rank") => format!("{n} dimensions"),
        ("", "shape") | ("shard", "parent_shape") => dim(n),
        ("", "byte_offset") => format!("{n} bytes into buffer 0"),
        ("", "strides") | ("tiled", "inner_strides") => format!("{value} elements"),
        ("tiled", "outer_strides") => format!("{value} tiles"),
        ("tiled", "outer_layout") => format!("{} grid", name_of(byte)),
        ("tiled", "inner_layout") => format!("{} inside a tile", name_of(byte)),
        ("", "morton_bits") => format!("{n} bits"),
        ("", "nnz") => format!("{n} stored elements"),
        ("", "is_sorted") => if n == 1 { "sorted" } else { "unsorted" }.to_owned(),
        ("", "mode_order") => format!("tree level {} stores dimension {n}", p.index.unwrap_or(0)),
        ("", "page_size") => format!("{n} tokens per page"),
        ("", "num_pages") => format!("{n} pages in the pool"),
        ("", "num_seqs") => format!("{n} sequences"),
        ("", "kv_role") => ["key", "value", "fused"]
            .get(n as usize)
            .unwrap_or(&"unknown")
            .to_string(),
        ("", "layer_index") if n == u64::from(u32::MAX) => "not layer-scoped".to_owned(),
        ("", "layer_index") => format!("layer {n}"),
        ("", "block_table_index_type") => ["uint32", "uint64"]
            .get(n as usize)
            .unwrap_or(&"unknown")
            .to_string(),
        ("", "composition_rule") => match n {
            1 => "partition".to_owned(),
            2 => "overlay".to_owned(),
            3 => "group".to_owned(),
            v => format!("private ({v:#04x})"),
        },
        ("", "combine_op") => ["none", "replace", "add"]
            .get(n as usize)
            .unwrap_or(&"unknown")
            .to_string(),
        ("", "member_count") => format!("{n} member descriptors follow"),
        ("", "hilbert_order") => format!("each side 2^{n}"),
        ("", "extension_layout_id") => format!("{n:#018x}"),
        ("", "extension_data_length") => format!("{n} bytes"),
        ("", "extension_data") => "opaque".to_owned(),
        ("", "buffer_count") => format!("{n} buffer handles follow"),
        ("", "(later minor version)") => "bytes this reader skips".to_owned(),
        ("buffer", "byte_size") => format!("{n} bytes"),
        ("buffer", "alignment") => format!("{n}-byte aligned"),
        ("buffer", "device_tag") => code_name(byte, DeviceTag::from_code, DeviceTag::name),
        ("buffer", "sync_mode") => code_name(byte, SyncMode::from_code, SyncMode::name),
        ("buffer", "memory_class") => code_name(byte, MemoryClass::from_code, MemoryClass::name),
        ("quant", "scheme_tag") => match n {
            1 => "per-tensor affine".to_owned(),
            2 => "per-channel affine".to_owned(),
            3 => "per-block affine".to_owned(),
            4 => "NF4".to_owned(),
            5 => "MXFP".to_owned(),
            v => format!("private ({v:#04x})"),
        },
        ("quant", "flags") => match view.quantization().map(|q| q.scheme) {
            Some(Scheme::PerChannel { .. } | Scheme::PerBlock { .. }) if n & 1 != 0 => {
                "SYMMETRIC".to_owned()
            }
            Some(Scheme::PerChannel { .. } | Scheme::PerBlock { .. }) => "asymmetric".to_owned(),
            _ => format!("{n:#06x}"),
        },
        ("quant", "scale_buffer_index" | "zero_point_buffer_index") => buffer_index(n),
        ("quant", "scale_type_tag") => ElementType::from_code(byte)
            .map_or("unknown", ElementType::name)
            .to_owned(),
        ("quant", "block_size") => format!("{n} elements per block"),
        ("quant", "payload") => match view.quantization().map(|q| q.scheme) {
            Some(Scheme::Private { .. }) => "private scheme payload".to_owned(),
            _ => "writer padding, zero".to_owned(),
        },
        ("statistics", "computed_mask") => names_of_bits(
            n,
            &["nnz", "sparsity", "range", "mean/stddev", "N:M", "NaN/inf"],
            "nothing computed",
        ),
        ("statistics", "nnz") => computed(0, value),
        ("statistics", "sparsity_ratio") => computed(1, value),
        ("statistics", "value_min" | "value_max" | "value_abs_max") => computed(2, value),
        ("statistics", "value_mean" | "value_stddev") => computed(3, value),
        ("statistics", "nm_n" | "nm_m") => computed(4, value),
        ("statistics", "has_nan" | "has_inf") => computed(5, yes(n)),
        ("extension_type", "bit_width") => format!("{n} bits per element"),
        ("extension_type", "packing_factor") => format!("{n} elements per byte"),
        ("extension_type", "is_float" | "is_signed" | "has_nan" | "has_inf") => yes(n),
        ("composite_member", "member_role") => ["correction", "base"]
            .get(n as usize)
            .unwrap_or(&"unknown")
            .to_string(),
        _ => value,
    }
}

/// The annotated rows of a descriptor the reader accepted, in wire order:
/// one per field of the core's walker ([`TensorView::for_each_field`]),
/// opaque runs split into rows of 16 bytes.
pub fn annotate(view: &TensorView<'_>) -> Vec<Row> {
    let mut rows = Vec::new();
    view.for_each_field(|f| {
        let field = f.path.to_string();
        let meaning = meaning(view, &f);
        for (i, chunk) in f.bytes.chunks(16).enumerate() {
            let (field, meaning) = if i == 0 {
                (field.clone(), meaning.clone())
            } else {
                (format!("{field} (cont.)"), String::new())
            };
            rows.push(Row {
                offset: f.offset + i * 16,
                bytes: chunk.to_vec(),
                field,
                meaning,
            });
        }
    });
    rows
}

/// The annotated dump of one accepted descriptor.
///
/// # Errors
/// As [`annotate`].
pub fn dump(file: &str, view: &TensorView<'_>) -> Result<String, String> {
    let rows = annotate(view);
    let mut out = String::new();
    let (major, minor) = view.version();
    let _ = writeln!(
        out,
        "{file}: hurray tensor descriptor {major}.{minor}, {} bytes",
        view.as_bytes().len()
    );
    let _ = writeln!(
        out,
        "{:>6}  {:<47}  {:<36}  meaning",
        "offset", "bytes", "field"
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "{:>6}  {:<47}  {:<36}  {}",
            r.offset,
            hex(&r.bytes),
            r.field,
            r.meaning
        );
    }
    let shape: Vec<String> = view.shape().iter().map(dim).collect();
    let _ = writeln!(
        out,
        "= {} [{}], {}, {} buffer(s); valid",
        type_name(view.element_type()),
        shape.join(", "),
        view.layout().name(),
        view.buffers().len()
    );
    Ok(out)
}
