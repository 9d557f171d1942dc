//! The descriptor encoder: a C [`hurray_descriptor_spec`] (native values,
//! arrays by pointer) turned into a core `TensorDescriptor` and encoded.
//! The core's encoder runs the decoder's own rules on the values, so no
//! spec can produce bytes a reader must reject.

use hurray_core::layout::{
    BlockPaged, CombineOp, CompositeHead, CompositionRule, Compressed, Coo, Hilbert, KvRole,
    TileSpec, tag,
};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, ExtensionType, LayoutSpec, MemberRole, Quantization,
    Scheme, Statistics, TensorDescriptor,
};

use crate::descriptor::{
    hurray_extension_type, hurray_layout, hurray_quantization, hurray_statistics,
};
use crate::status::{self, *};
use crate::{
    check_out, fail, from_c, get, guard, hurray_buffer_handle, hurray_error, put, slice_in,
    slice_out, tri,
};

/// One level of a tiled layout to encode.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_tile_spec {
    /// Tile size per dimension (`rank` values).
    pub tile_shape: *const u64,
    /// Grid strides in tiles (`rank` values); read only when `outer_layout`
    /// is `HURRAY_LAYOUT_STRIDED`.
    pub outer_strides: *const i64,
    /// Strides inside a tile in elements (`rank` values); read only when
    /// `inner_layout` is `HURRAY_LAYOUT_STRIDED`.
    pub inner_strides: *const i64,
    /// Order of the tile grid: row-major, column-major or strided.
    pub outer_layout: u8,
    /// Order inside a tile: row-major, column-major, strided, or tiled when
    /// another level follows.
    pub inner_layout: u8,
}

/// A descriptor to encode. Every array has `rank` values unless noted, and
/// may be null when it is not read (or `rank` is 0).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_descriptor_spec {
    /// The shape (`HURRAY_DYNAMIC` marks a dynamic dimension).
    pub shape: *const u64,
    /// Strides in elements: read for `HURRAY_LAYOUT_STRIDED`.
    pub strides: *const i64,
    /// `morton_bits` (Morton) or `mode_order` (CSF).
    pub words: *const u32,
    /// `tile_levels` levels, outermost first: read for `HURRAY_LAYOUT_TILED`.
    pub tiles: *const hurray_tile_spec,
    /// `buffer_count` buffer handles.
    pub buffers: *const hurray_buffer_handle,
    /// The quantization section, or null for none.
    pub quantization: *const hurray_quantization,
    /// The shard's parent shape, or null (with `shard_offset`) for no shard.
    pub parent_shape: *const u64,
    /// The shard's offset in its parent, or null for no shard.
    pub shard_offset: *const u64,
    /// The statistics section, or null for none.
    pub statistics: *const hurray_statistics,
    /// The extension type section (required for a private element type), or null.
    pub extension_type: *const hurray_extension_type,
    /// Byte offset of element `[0, ..., 0]` in buffer 0.
    pub byte_offset: u64,
    /// The layout tag and its scalar fields.
    pub layout: hurray_layout,
    /// Number of dimensions.
    pub rank: u32,
    /// Number of buffers (at most 255).
    pub buffer_count: u32,
    /// Number of tile levels (at most 8).
    pub tile_levels: u32,
    /// `HURRAY_TYPE_*` code, or a private type.
    pub element_type: u8,
    /// `HURRAY_MEMBER_*` role, or `HURRAY_MEMBER_NONE` for no member section.
    pub member_role: u8,
}

/// The largest number of buffers a descriptor holds.
const MAX_BUFFERS: usize = 255;
/// The deepest tiling a descriptor holds.
const MAX_LEVELS: usize = hurray_core::layout::MAX_TILE_LEVELS as usize;

/// An error detail for a bad value given to the encoder.
const fn invalid(status: hurray_status, value: u64) -> hurray_error {
    hurray_error {
        status,
        offset: 0,
        index: 0,
        value,
        expected: 0,
    }
}

/// A pointer status as an error detail.
const fn ptr_err(status: hurray_status) -> hurray_error {
    invalid(status, 0)
}

/// Native values the borrowed `TensorDescriptor` points into (about 6 KiB
/// of stack: 255 handles).
struct Storage<'a> {
    buffers: [BufferHandle; MAX_BUFFERS],
    tiles: [TileSpec<'a>; MAX_LEVELS],
}

impl Storage<'_> {
    const fn new() -> Self {
        Self {
            buffers: [BufferHandle::empty(DeviceTag::Cpu); MAX_BUFFERS],
            tiles: [TileSpec {
                tile_shape: &[],
                outer_layout: 0,
                inner_layout: 0,
                outer_strides: None,
                inner_strides: None,
            }; MAX_LEVELS],
        }
    }
}

/// Checks the C spec and builds the core descriptor over `storage`.
///
/// # Safety
/// Every pointer of `s` (and of its tile levels) is null or points to the
/// values it is documented to hold, alive and unmodified for `'a`.
unsafe fn build<'s, 'a: 's>(
    s: &hurray_descriptor_spec,
    storage: &'s mut Storage<'a>,
) -> Result<TensorDescriptor<'s>, hurray_error> {
    let rank = s.rank as usize;
    if s.rank > hurray_core::MAX_RANK {
        let mut d = invalid(HURRAY_E_RANK_TOO_LARGE, s.rank.into());
        d.expected = hurray_core::MAX_RANK.into();
        return Err(d);
    }
    let element_type = ElementType::from_code(s.element_type)
        .ok_or(invalid(HURRAY_E_INVALID_TYPE_TAG, s.element_type.into()))?;
    // SAFETY: `shape` holds `rank` values (this function's contract).
    let shape: &'a [u64] = unsafe { slice_in(s.shape, rank) }.map_err(ptr_err)?;

    // Buffers, validated into native handles.
    let count = s.buffer_count as usize;
    if count > MAX_BUFFERS {
        let mut d = invalid(HURRAY_E_CAPACITY_EXCEEDED, count as u64);
        d.expected = MAX_BUFFERS as u64;
        return Err(d);
    }
    // SAFETY: `buffers` holds `buffer_count` handles (this function's contract).
    let c_buffers = unsafe { slice_in(s.buffers, count) }.map_err(ptr_err)?;
    for (i, (dst, h)) in storage.buffers.iter_mut().zip(c_buffers).enumerate() {
        *dst = from_c(h).map_err(|e| {
            let mut d = status::describe(e);
            d.index = i as u64;
            d
        })?;
    }
    // Tile levels, into native specs.
    let mut levels = 0;
    if s.layout.tag == tag::TILED {
        // SAFETY: the tile levels and their arrays are alive (this
        // function's contract).
        levels = unsafe { tile_specs(s, rank, &mut storage.tiles) }?;
    }

    let storage: &'s Storage<'a> = storage;
    let buffers = storage.buffers.get(..count).unwrap_or_default();
    let tiles = storage.tiles.get(..levels).unwrap_or_default();
    // SAFETY: the layout's arrays are alive (this function's contract).
    let layout = unsafe { layout_spec(s, rank, tiles) }?;

    let mut d =
        TensorDescriptor::new(element_type, shape, layout, buffers).with_byte_offset(s.byte_offset);
    if !s.quantization.is_null() {
        // SAFETY: non-null, so an initialised section (this function's contract).
        let q = unsafe { get(s.quantization) }.map_err(ptr_err)?;
        // SAFETY: a private scheme's payload is alive (this function's contract).
        d.quantization = Some(unsafe { quantization(&q) }?);
    }
    if !s.parent_shape.is_null() || !s.shard_offset.is_null() {
        if s.parent_shape.is_null() || s.shard_offset.is_null() {
            return Err(ptr_err(HURRAY_E_NULL));
        }
        // SAFETY: both arrays hold `rank` values (this function's contract).
        let parent: &'a [u64] = unsafe { slice_in(s.parent_shape, rank) }.map_err(ptr_err)?;
        // SAFETY: as above.
        let offset: &'a [u64] = unsafe { slice_in(s.shard_offset, rank) }.map_err(ptr_err)?;
        d = d.with_shard(parent, offset);
    }
    if !s.statistics.is_null() {
        // SAFETY: non-null, so an initialised section (this function's contract).
        let st = unsafe { get(s.statistics) }.map_err(ptr_err)?;
        d.statistics = Some(statistics(&st)?);
    }
    if !s.extension_type.is_null() {
        // SAFETY: non-null, so an initialised section (this function's contract).
        let e = unsafe { get(s.extension_type) }.map_err(ptr_err)?;
        d.extension_type = Some(extension_type(&e));
    }
    d.member_role = match s.member_role {
        HURRAY_MEMBER_NONE => None,
        HURRAY_MEMBER_CORRECTION => Some(MemberRole::Correction),
        HURRAY_MEMBER_BASE => Some(MemberRole::Base),
        v => return Err(invalid(HURRAY_E_INVALID_VALUE, v.into())),
    };
    Ok(d)
}

/// Reads the spec's tile levels into `out`; returns how many.
///
/// # Safety
/// As [`build`].
unsafe fn tile_specs<'a>(
    s: &hurray_descriptor_spec,
    rank: usize,
    out: &mut [TileSpec<'a>; MAX_LEVELS],
) -> Result<usize, hurray_error> {
    let n = s.tile_levels as usize;
    if n > MAX_LEVELS {
        let mut d = invalid(HURRAY_E_TILING_TOO_DEEP, n as u64);
        d.expected = MAX_LEVELS as u64;
        return Err(d);
    }
    // SAFETY: `tiles` holds `tile_levels` levels ([`build`]'s contract).
    let levels = unsafe { slice_in(s.tiles, n) }.map_err(ptr_err)?;
    for (dst, l) in out.iter_mut().zip(levels) {
        let strided = |code: u8, p: *const i64| -> Result<Option<&'a [i64]>, hurray_error> {
            if code == tag::STRIDED {
                // SAFETY: a strided order's array holds `rank` values
                // ([`build`]'s contract).
                unsafe { slice_in(p, rank) }.map(Some).map_err(ptr_err)
            } else {
                Ok(None)
            }
        };
        *dst = TileSpec {
            // SAFETY: `tile_shape` holds `rank` values ([`build`]'s contract).
            tile_shape: unsafe { slice_in(l.tile_shape, rank) }.map_err(ptr_err)?,
            outer_layout: l.outer_layout,
            inner_layout: l.inner_layout,
            outer_strides: strided(l.outer_layout, l.outer_strides)?,
            inner_strides: strided(l.inner_layout, l.inner_strides)?,
        };
    }
    Ok(n)
}

/// The layout of a spec; `tiles` are its tile levels, already read.
///
/// # Safety
/// As [`build`].
unsafe fn layout_spec<'a>(
    s: &hurray_descriptor_spec,
    rank: usize,
    tiles: &'a [TileSpec<'a>],
) -> Result<LayoutSpec<'a>, hurray_error> {
    let l = &s.layout;
    let bad = |v: u8| invalid(HURRAY_E_INVALID_VALUE, v.into());
    Ok(match l.tag {
        tag::ROW_MAJOR => LayoutSpec::RowMajor,
        tag::COLUMN_MAJOR => LayoutSpec::ColumnMajor,
        // SAFETY: `strides` holds `rank` values ([`build`]'s contract).
        tag::STRIDED => LayoutSpec::Strided(unsafe { slice_in(s.strides, rank) }.map_err(ptr_err)?),
        tag::TILED => LayoutSpec::Tiled(tiles),
        // SAFETY: `words` holds `rank` values ([`build`]'s contract).
        tag::MORTON => LayoutSpec::Morton(unsafe { slice_in(s.words, rank) }.map_err(ptr_err)?),
        tag::COO => LayoutSpec::Coo(Coo {
            nnz: l.nnz,
            sorted: l.is_sorted != 0,
        }),
        tag::CSR => LayoutSpec::Csr(Compressed { nnz: l.nnz }),
        tag::CSC => LayoutSpec::Csc(Compressed { nnz: l.nnz }),
        tag::CSF => LayoutSpec::Csf {
            nnz: l.nnz,
            // SAFETY: `words` holds `rank` values ([`build`]'s contract).
            mode_order: unsafe { slice_in(s.words, rank) }.map_err(ptr_err)?,
        },
        tag::BLOCK_PAGED => LayoutSpec::BlockPaged(BlockPaged {
            page_size: l.page_size,
            num_pages: l.num_pages,
            num_seqs: l.num_seqs,
            kv_role: match l.kv_role {
                0 => KvRole::Key,
                1 => KvRole::Value,
                2 => KvRole::Fused,
                v => return Err(bad(v)),
            },
            layer_index: if l.layer_index == HURRAY_NO_LAYER {
                None
            } else {
                Some(l.layer_index)
            },
            wide_indices: l.wide_indices != 0,
        }),
        tag::COMPOSITE => LayoutSpec::Composite(CompositeHead {
            rule: match l.composition_rule {
                1 => CompositionRule::Partition,
                2 => CompositionRule::Overlay,
                3 => CompositionRule::Group,
                c if hurray_core::is_private_code(c) => CompositionRule::Private(c),
                v => return Err(bad(v)),
            },
            combine_op: match l.combine_op {
                0 => CombineOp::None,
                1 => CombineOp::Replace,
                2 => CombineOp::Add,
                v => return Err(bad(v)),
            },
            member_count: l.member_count,
        }),
        tag::HILBERT => LayoutSpec::Hilbert(Hilbert {
            order: l.hilbert_order,
            rank: l.hilbert_rank,
        }),
        t if hurray_core::is_private_code(t) => LayoutSpec::Extension {
            tag: t,
            id: l.extension_id,
            // SAFETY: `extension_data` holds `extension_data_len` bytes
            // ([`build`]'s contract).
            data: unsafe { slice_in(l.extension_data, l.extension_data_len) }.map_err(ptr_err)?,
        },
        t => return Err(invalid(HURRAY_E_INVALID_LAYOUT_TAG, t.into())),
    })
}

/// The core form of a C quantization section.
///
/// # Safety
/// A private scheme's `payload` holds `payload_len` bytes, alive for `'a`.
unsafe fn quantization<'a>(q: &hurray_quantization) -> Result<Quantization<'a>, hurray_error> {
    let zero_point = if q.zero_point_buffer == HURRAY_NO_BUFFER {
        None
    } else {
        Some(q.zero_point_buffer)
    };
    let scheme = match q.scheme_tag {
        HURRAY_SCHEME_PER_TENSOR => Scheme::PerTensor {
            scale: q.scale,
            zero_point: q.zero_point,
        },
        HURRAY_SCHEME_PER_CHANNEL => Scheme::PerChannel {
            axis: q.axis,
            scale_buffer: q.scale_buffer,
            zero_point_buffer: zero_point,
        },
        HURRAY_SCHEME_PER_BLOCK => Scheme::PerBlock {
            axis: q.axis,
            block_size: q.block_size,
            scale_buffer: q.scale_buffer,
            zero_point_buffer: zero_point,
            scale_type: match ElementType::from_code(q.scale_type) {
                Some(t @ (ElementType::Float16 | ElementType::BFloat16 | ElementType::Float32)) => {
                    t
                }
                _ => return Err(invalid(HURRAY_E_INVALID_VALUE, q.scale_type.into())),
            },
        },
        HURRAY_SCHEME_NF4 => Scheme::Nf4 {
            axis: q.axis,
            block_size: q.block_size,
            scale_buffer: q.scale_buffer,
        },
        HURRAY_SCHEME_MXFP => Scheme::Mxfp {
            axis: q.axis,
            block_size: q.block_size,
            scale_buffer: q.scale_buffer,
        },
        t if hurray_core::is_private_code(t) => Scheme::Private {
            tag: t,
            version: q.scheme_version,
            flags: q.flags,
            // SAFETY: `payload` holds `payload_len` bytes (this function's contract).
            payload: unsafe { slice_in(q.payload, q.payload_len) }.map_err(ptr_err)?,
        },
        t => return Err(invalid(HURRAY_E_INVALID_VALUE, t.into())),
    };
    Ok(Quantization {
        scheme,
        padding: q.padding,
    })
}

/// The core form of a C statistics section: the groups whose mask bit is
/// set (`value_abs_max` is derived from the range).
fn statistics(c: &hurray_statistics) -> Result<Statistics, hurray_error> {
    let defined = HURRAY_STAT_NNZ
        | HURRAY_STAT_SPARSITY
        | HURRAY_STAT_RANGE
        | HURRAY_STAT_MOMENTS
        | HURRAY_STAT_NM
        | HURRAY_STAT_NAN_INF;
    let mask = c.computed_mask;
    if mask & !defined != 0 {
        return Err(invalid(HURRAY_E_RESERVED_FLAGS, (mask & !defined).into()));
    }
    let mut s = Statistics::new();
    if mask & HURRAY_STAT_NNZ != 0 {
        s = s.with_nnz(c.nnz);
    }
    if mask & HURRAY_STAT_SPARSITY != 0 {
        s = s.with_sparsity_ratio(c.sparsity_ratio);
    }
    if mask & HURRAY_STAT_RANGE != 0 {
        s = s.with_value_range(c.value_min, c.value_max);
    }
    if mask & HURRAY_STAT_MOMENTS != 0 {
        s = s.with_value_stats(c.value_mean, c.value_stddev);
    }
    if mask & HURRAY_STAT_NM != 0 {
        s = s.with_nm_sparsity(c.nm_n, c.nm_m);
    }
    if mask & HURRAY_STAT_NAN_INF != 0 {
        s = s.with_nan_inf(c.has_nan != 0, c.has_inf != 0);
    }
    Ok(s)
}

/// The core form of a C extension type section (`packing_factor` is
/// derived from `bit_width`).
const fn extension_type(c: &hurray_extension_type) -> ExtensionType {
    if c.is_float != 0 {
        ExtensionType::float(
            c.bit_width,
            c.sign_bits,
            c.exponent_bits,
            c.mantissa_bits,
            c.exponent_bias,
            c.has_nan != 0,
            c.has_inf != 0,
        )
    } else {
        ExtensionType::integer(c.bit_width, c.is_signed != 0)
    }
}

/// Encodes the descriptor `spec` describes into `out` (`out_len` bytes) and
/// writes its length to `written`. The result is read back with the decoder
/// before this returns `HURRAY_OK`, so it is always a valid descriptor.
/// `HURRAY_E_OUTPUT_TOO_SMALL` reports the length needed in
/// `err->expected`. On any failure `out`'s contents are unspecified.
///
/// # Safety
/// `spec` is null or points to an initialised spec whose arrays hold the
/// values documented for them; `out` is null or addresses `out_len` writable
/// bytes; `written` is null or storage for one `size_t`; `err` is null or
/// storage for one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_descriptor_encode(
    spec: *const hurray_descriptor_spec,
    out: *mut u8,
    out_len: usize,
    written: *mut usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(check_out(written));
        // SAFETY: `spec` is null or an initialised spec (# Safety).
        let s = tri!(unsafe { get(spec) });
        // SAFETY: `out` addresses `out_len` writable bytes (# Safety).
        let out = tri!(unsafe { slice_out(out, out_len) });
        let mut storage = Storage::new();
        // SAFETY: the spec's arrays are alive (# Safety).
        let d = match unsafe { build(&s, &mut storage) } {
            Ok(d) => d,
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => return unsafe { fail(err, e) },
        };
        match d.encode(out) {
            // SAFETY: `written` was checked above.
            Ok(n) => unsafe { put(written, n) },
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => unsafe { fail(err, status::describe_encode(e)) },
        }
    })
}

/// The number of bytes `hurray_descriptor_encode` would write for `spec`
/// (the spec's values are checked as far as sizing needs; the full
/// validation happens on encode).
///
/// # Safety
/// As `hurray_descriptor_encode`, for `spec`, `len` (storage for one
/// `size_t`) and `err`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_descriptor_encoded_len(
    spec: *const hurray_descriptor_spec,
    len: *mut usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(check_out(len));
        // SAFETY: `spec` is null or an initialised spec (# Safety).
        let s = tri!(unsafe { get(spec) });
        let mut storage = Storage::new();
        // SAFETY: the spec's arrays are alive (# Safety).
        match unsafe { build(&s, &mut storage) } {
            // SAFETY: `len` was checked above.
            Ok(d) => unsafe { put(len, d.encoded_len()) },
            // SAFETY: `err` is null or storage for one detail (# Safety).
            Err(e) => unsafe { fail(err, e) },
        }
    })
}
