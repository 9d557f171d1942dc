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

use hurray::layout::{Layout, name_of};
use hurray::{BufferHandle, ElementType, MemberRole, Packing, Scheme, TensorView, is_private_code};
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

/// Walks a descriptor's bytes in wire order, one row per field. Meant for
/// bytes the reader accepted: it follows the structure (rank, layout tag,
/// buffer count, flags, lengths) and never validates.
struct Walk<'a> {
    bytes: &'a [u8],
    pos: usize,
    rows: Vec<Row>,
}

impl Walk<'_> {
    fn take<const N: usize>(
        &mut self,
        field: impl Into<String>,
        meaning: impl FnOnce([u8; N]) -> String,
    ) -> Result<[u8; N], String> {
        let field = field.into();
        let raw: [u8; N] = self
            .bytes
            .get(self.pos..self.pos + N)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| format!("{field} at byte {} runs past the end", self.pos))?;
        self.rows.push(Row {
            offset: self.pos,
            bytes: raw.to_vec(),
            field,
            meaning: meaning(raw),
        });
        self.pos += N;
        Ok(raw)
    }

    /// `n` opaque bytes, one row per 16.
    fn run(&mut self, n: usize, field: &str, meaning: &str) -> Result<(), String> {
        let data = self
            .bytes
            .get(self.pos..self.pos + n)
            .ok_or_else(|| format!("{field} at byte {} runs past the end", self.pos))?;
        for (i, chunk) in data.chunks(16).enumerate() {
            self.rows.push(Row {
                offset: self.pos + i * 16,
                bytes: chunk.to_vec(),
                field: if i == 0 {
                    field.to_owned()
                } else {
                    format!("{field} (cont.)")
                },
                meaning: if i == 0 {
                    meaning.to_owned()
                } else {
                    String::new()
                },
            });
        }
        self.pos += n;
        Ok(())
    }

    fn u8(&mut self, field: impl Into<String>, m: impl FnOnce(u8) -> String) -> Result<u8, String> {
        self.take::<1>(field, |b| m(b[0])).map(|b| b[0])
    }

    fn u16(
        &mut self,
        field: impl Into<String>,
        m: impl FnOnce(u16) -> String,
    ) -> Result<u16, String> {
        self.take::<2>(field, |b| m(u16::from_le_bytes(b)))
            .map(u16::from_le_bytes)
    }

    fn u32(
        &mut self,
        field: impl Into<String>,
        m: impl FnOnce(u32) -> String,
    ) -> Result<u32, String> {
        self.take::<4>(field, |b| m(u32::from_le_bytes(b)))
            .map(u32::from_le_bytes)
    }

    fn u64(
        &mut self,
        field: impl Into<String>,
        m: impl FnOnce(u64) -> String,
    ) -> Result<u64, String> {
        self.take::<8>(field, |b| m(u64::from_le_bytes(b)))
            .map(u64::from_le_bytes)
    }

    fn i64(
        &mut self,
        field: impl Into<String>,
        m: impl FnOnce(i64) -> String,
    ) -> Result<(), String> {
        self.take::<8>(field, |b| m(i64::from_le_bytes(b)))
            .map(drop)
    }

    fn f64(&mut self, field: &str, valid: bool) -> Result<(), String> {
        self.take::<8>(field, |b| {
            let v = f64::from_le_bytes(b);
            if valid {
                v.to_string()
            } else {
                format!("{v} (not computed)")
            }
        })
        .map(drop)
    }

    fn reserved(&mut self, n: usize, field: &str) -> Result<(), String> {
        self.run(n, field, "reserved, zero")
    }
}

fn plain<T: ToString>(v: T) -> String {
    v.to_string()
}

fn dim(v: u64) -> String {
    if v == u64::MAX {
        "dynamic".to_owned()
    } else {
        v.to_string()
    }
}

fn buffer_index(v: u32) -> String {
    if v == u32::MAX {
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

fn flag_names(bits: u32) -> String {
    const NAMES: [&str; 5] = [
        "quantization",
        "shard",
        "extension type",
        "statistics",
        "composite member",
    ];
    let set: Vec<&str> = (0..5)
        .filter(|i| bits & (1 << i) != 0)
        .map(|i| NAMES[i])
        .collect();
    if set.is_empty() {
        "no optional section".to_owned()
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

/// The annotated rows of a descriptor the reader accepted, in wire order.
///
/// # Errors
/// When the bytes end before a field the structure implies (the reader
/// would have rejected them).
pub fn annotate(bytes: &[u8]) -> Result<Vec<Row>, String> {
    let mut w = Walk {
        bytes,
        pos: 0,
        rows: Vec::new(),
    };
    w.take::<4>("magic", |m| format!("{:?}", String::from_utf8_lossy(&m)))?;
    w.u8("version_major", plain)?;
    w.u8("version_minor", plain)?;
    let length = w.u32("descriptor_length", |v| format!("{v} bytes"))?;
    let flags = w.u32("flags", flag_names)?;
    w.u8("type_tag", type_meaning)?;
    let layout_tag = w.u8("layout_tag", |t| name_of(t).to_owned())?;
    let rank = w.u32("rank", |r| format!("{r} dimensions"))?;
    for i in 0..rank {
        w.u64(format!("shape[{i}]"), dim)?;
    }
    w.u64("byte_offset", |v| format!("{v} bytes into buffer 0"))?;
    walk_layout(&mut w, layout_tag, rank)?;
    let count = w.u8("buffer_count", |n| format!("{n} buffer handles follow"))?;
    for i in 0..count {
        let b = |f: &str| format!("buffer[{i}].{f}");
        w.u64(b("byte_size"), |v| format!("{v} bytes"))?;
        w.u32(b("alignment"), |v| format!("{v}-byte aligned"))?;
        w.u8(b("device_tag"), |v| {
            code_name(v, hurray::DeviceTag::from_code, hurray::DeviceTag::name)
        })?;
        w.u8(b("sync_mode"), |v| {
            code_name(v, hurray::SyncMode::from_code, hurray::SyncMode::name)
        })?;
        w.u8(b("memory_class"), |v| {
            code_name(v, hurray::MemoryClass::from_code, hurray::MemoryClass::name)
        })?;
        w.reserved(1, &b("_reserved"))?;
    }
    if flags & 1 != 0 {
        walk_quantization(&mut w)?;
    }
    if flags & 2 != 0 {
        for i in 0..rank {
            w.u64(format!("shard.parent_shape[{i}]"), dim)?;
        }
        for i in 0..rank {
            w.u64(format!("shard.shard_offset[{i}]"), plain)?;
        }
    }
    if flags & 8 != 0 {
        walk_statistics(&mut w)?;
    }
    if flags & 4 != 0 {
        walk_extension_type(&mut w)?;
    }
    if flags & 16 != 0 {
        w.u8("composite_member.member_role", |v| {
            match v {
                0 => "correction",
                1 => "base",
                _ => "unknown",
            }
            .to_owned()
        })?;
        w.reserved(15, "composite_member._reserved")?;
    }
    let length = length as usize;
    if w.pos < length {
        let n = length - w.pos;
        w.run(n, "(later minor version)", "bytes this reader skips")?;
    }
    if w.pos != bytes.len() {
        return Err(format!(
            "the fields end at byte {} but the descriptor has {} bytes",
            w.pos,
            bytes.len()
        ));
    }
    Ok(w.rows)
}

fn walk_layout(w: &mut Walk<'_>, tag: u8, rank: u32) -> Result<(), String> {
    match tag {
        0x03 => {
            for i in 0..rank {
                w.i64(format!("strides[{i}]"), |v| format!("{v} elements"))?;
            }
        }
        0x04 => {
            for level in 0.. {
                let f = |name: &str| format!("tiled[{level}].{name}");
                for i in 0..rank {
                    w.u64(f(&format!("tile_shape[{i}]")), plain)?;
                }
                let outer = w.u8(f("outer_layout"), |v| format!("{} grid", name_of(v)))?;
                let inner = w.u8(f("inner_layout"), |v| {
                    format!("{} inside a tile", name_of(v))
                })?;
                w.reserved(2, &f("_reserved"))?;
                if outer == 0x03 {
                    for i in 0..rank {
                        w.i64(f(&format!("outer_strides[{i}]")), |v| format!("{v} tiles"))?;
                    }
                }
                if inner == 0x03 {
                    for i in 0..rank {
                        w.i64(f(&format!("inner_strides[{i}]")), |v| {
                            format!("{v} elements")
                        })?;
                    }
                }
                if inner != 0x04 {
                    break;
                }
            }
        }
        0x05 => {
            for i in 0..rank {
                w.u32(format!("morton_bits[{i}]"), |v| format!("{v} bits"))?;
            }
        }
        0x06 => {
            w.u64("nnz", |v| format!("{v} stored elements"))?;
            w.u8("is_sorted", |v| {
                if v == 1 { "sorted" } else { "unsorted" }.to_owned()
            })?;
            w.reserved(7, "_reserved")?;
        }
        0x07 | 0x08 => {
            w.u64("nnz", |v| format!("{v} stored elements"))?;
            w.reserved(8, "_reserved")?;
        }
        0x09 => {
            w.u64("nnz", |v| format!("{v} stored elements"))?;
            for i in 0..rank {
                w.u32(format!("mode_order[{i}]"), |v| {
                    format!("tree level {i} stores dimension {v}")
                })?;
            }
            w.reserved(8, "_reserved")?;
        }
        0x0A => {
            w.u32("page_size", |v| format!("{v} tokens per page"))?;
            w.u64("num_pages", |v| format!("{v} pages in the pool"))?;
            w.u32("paged_axis", plain)?;
            w.u32("num_seqs", |v| format!("{v} sequences"))?;
            w.u8("kv_role", |v| {
                match v {
                    0 => "key",
                    1 => "value",
                    2 => "fused",
                    _ => "unknown",
                }
                .to_owned()
            })?;
            w.u32("layer_index", |v| {
                if v == u32::MAX {
                    "not layer-scoped".to_owned()
                } else {
                    format!("layer {v}")
                }
            })?;
            w.u8("block_table_index_type", |v| {
                match v {
                    0 => "uint32",
                    1 => "uint64",
                    _ => "unknown",
                }
                .to_owned()
            })?;
            w.reserved(6, "_reserved")?;
        }
        0x0B => {
            w.u8("composition_rule", |v| match v {
                1 => "partition".to_owned(),
                2 => "overlay".to_owned(),
                3 => "group".to_owned(),
                v => format!("private ({v:#04x})"),
            })?;
            w.u8("combine_op", |v| {
                match v {
                    0 => "none",
                    1 => "replace",
                    2 => "add",
                    _ => "unknown",
                }
                .to_owned()
            })?;
            w.reserved(2, "_reserved")?;
            w.u32("member_count", |v| format!("{v} member descriptors follow"))?;
        }
        0x40 => {
            w.u32("hilbert_order", |v| format!("each side 2^{v}"))?;
            w.u32("hilbert_rank", plain)?;
        }
        0xF0..=0xFE => {
            w.u64("extension_layout_id", |v| format!("{v:#018x}"))?;
            let n = w.u32("extension_data_length", |v| format!("{v} bytes"))?;
            w.run(n as usize, "extension_data", "opaque")?;
        }
        _ => {}
    }
    Ok(())
}

fn walk_quantization(w: &mut Walk<'_>) -> Result<(), String> {
    let len = w.u32("quantization_length", |v| format!("{v} bytes"))? as usize;
    let start = w.pos;
    let tag = w.u8("quant.scheme_tag", |v| match v {
        1 => "per-tensor affine".to_owned(),
        2 => "per-channel affine".to_owned(),
        3 => "per-block affine".to_owned(),
        4 => "NF4".to_owned(),
        5 => "MXFP".to_owned(),
        v => format!("private ({v:#04x})"),
    })?;
    w.u8("quant.scheme_version", plain)?;
    w.u16("quant.flags", |v| {
        if matches!(tag, 2 | 3) {
            if v & 1 != 0 {
                "SYMMETRIC"
            } else {
                "asymmetric"
            }
            .to_owned()
        } else {
            format!("{v:#06x}")
        }
    })?;
    let type_name = |v: u8| {
        ElementType::from_code(v)
            .map_or("unknown", ElementType::name)
            .to_owned()
    };
    match tag {
        1 => {
            w.take::<4>("quant.scale", |b| f32::from_le_bytes(b).to_string())?;
            w.take::<4>("quant.zero_point", |b| i32::from_le_bytes(b).to_string())?;
            w.reserved(4, "quant._reserved")?;
        }
        2 => {
            w.u32("quant.axis", plain)?;
            w.u32("quant.scale_buffer_index", buffer_index)?;
            w.u32("quant.zero_point_buffer_index", buffer_index)?;
            w.u8("quant.scale_type_tag", type_name)?;
            w.reserved(3, "quant._reserved")?;
        }
        3 => {
            w.u32("quant.axis", plain)?;
            w.u32("quant.block_size", |v| format!("{v} elements per block"))?;
            w.u32("quant.scale_buffer_index", buffer_index)?;
            w.u32("quant.zero_point_buffer_index", buffer_index)?;
            w.u8("quant.scale_type_tag", type_name)?;
            w.reserved(3, "quant._reserved")?;
        }
        4 | 5 => {
            w.u32("quant.axis", plain)?;
            w.u32("quant.block_size", |v| format!("{v} elements per block"))?;
            w.u32("quant.scale_buffer_index", buffer_index)?;
        }
        _ => {}
    }
    let used = w.pos - start;
    if used < len {
        let meaning = if matches!(tag, 1..=5) {
            "writer padding, zero"
        } else {
            "private scheme payload"
        };
        w.run(len - used, "quant.payload", meaning)?;
    }
    Ok(())
}

fn walk_statistics(w: &mut Walk<'_>) -> Result<(), String> {
    let mask = w.u32("statistics.computed_mask", |m| {
        const GROUPS: [&str; 6] = ["nnz", "sparsity", "range", "mean/stddev", "N:M", "NaN/inf"];
        let set: Vec<&str> = (0..6)
            .filter(|i| m & (1 << i) != 0)
            .map(|i| GROUPS[i])
            .collect();
        if set.is_empty() {
            "nothing computed".to_owned()
        } else {
            set.join(" + ")
        }
    })?;
    let has = |bit: u32| mask & (1 << bit) != 0;
    w.reserved(4, "statistics._reserved")?;
    w.u64("statistics.nnz", |v| {
        if has(0) {
            v.to_string()
        } else {
            format!("{v} (not computed)")
        }
    })?;
    w.f64("statistics.sparsity_ratio", has(1))?;
    w.f64("statistics.value_min", has(2))?;
    w.f64("statistics.value_max", has(2))?;
    w.f64("statistics.value_abs_max", has(2))?;
    w.f64("statistics.value_mean", has(3))?;
    w.f64("statistics.value_stddev", has(3))?;
    for field in ["statistics.nm_n", "statistics.nm_m"] {
        w.u8(field, |v| {
            if has(4) {
                v.to_string()
            } else {
                format!("{v} (not computed)")
            }
        })?;
    }
    for field in ["statistics.has_nan", "statistics.has_inf"] {
        w.u8(field, |v| {
            let s = if v == 1 { "yes" } else { "no" };
            if has(5) {
                s.to_owned()
            } else {
                format!("{v} (not computed)")
            }
        })?;
    }
    w.reserved(4, "statistics._reserved2")
}

fn walk_extension_type(w: &mut Walk<'_>) -> Result<(), String> {
    let yes = |v: u8| if v == 1 { "yes" } else { "no" }.to_owned();
    w.u32("extension_type.bit_width", |v| {
        format!("{v} bits per element")
    })?;
    w.u8("extension_type.packing_factor", |v| {
        format!("{v} elements per byte")
    })?;
    w.u8("extension_type.is_float", yes)?;
    w.u8("extension_type.is_signed", yes)?;
    w.u8("extension_type.sign_bits", plain)?;
    w.u8("extension_type.exponent_bits", plain)?;
    w.u8("extension_type.mantissa_bits", plain)?;
    w.reserved(2, "extension_type._reserved")?;
    w.u32("extension_type.exponent_bias", plain)?;
    w.u8("extension_type.has_nan", yes)?;
    w.u8("extension_type.has_inf", yes)?;
    w.reserved(2, "extension_type._reserved2")
}

/// The annotated dump of one accepted descriptor.
///
/// # Errors
/// As [`annotate`].
pub fn dump(file: &str, view: &TensorView<'_>) -> Result<String, String> {
    let rows = annotate(view.as_bytes())?;
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
