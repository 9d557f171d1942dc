//! The tensor descriptor view: `hurray_tensor_parse*` validate a descriptor
//! once and fill a [`hurray_tensor_view`] with its header and scalar fields;
//! the accessors read the arrays and sections.
//!
//! A view borrows the caller's bytes and stores nothing the accessors must
//! trust: each accessor validates the bytes again (the same checks as the
//! parse, linear in the descriptor's length) and reads from the validated
//! value, so a view whose fields or bytes were changed is reported as
//! `HURRAY_E_INVALID_VIEW`, never read out of bounds. A host that needs an
//! array reads it whole (`hurray_tensor_shape`) rather than element by
//! element.

use hurray_core::layout::{CombineOp, CompositionRule, KvRole, TileLevel};
use hurray_core::{ElementType, Layout, MemberRole, Packing, ReadOptions, Scheme, TensorView};

use crate::status::{self, *};
use crate::{
    check_out, copy_out, fail, get, guard, hurray_buffer_handle, hurray_error, hurray_table, input,
    put, slice_in, table_of, to_c, tri,
};

/// What a reader accepts beyond the format's public codes (`NULL` where a
/// function takes one: the strict default).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_read_options {
    /// Ids of the private layouts this reader understands; may be null when
    /// `extension_layout_count` is 0. Must outlive every view parsed with
    /// these options.
    pub extension_layouts: *const u64,
    /// Number of ids.
    pub extension_layout_count: usize,
    /// Non-zero: accept private quantization schemes (carried opaque).
    pub private_schemes: u8,
    /// Non-zero: accept private composition rules on a composite head.
    pub private_composition_rules: u8,
}

impl hurray_read_options {
    /// The strict default: no private layout, scheme or composition rule.
    pub(crate) const STRICT: Self = Self {
        extension_layouts: core::ptr::null(),
        extension_layout_count: 0,
        private_schemes: 0,
        private_composition_rules: 0,
    };
}

/// The layout tag and the scalar fields of the layout. Each field is
/// meaningful only for the layouts named in its comment and 0 otherwise.
/// Used both by the view (filled by the parse) and by the encoder (read).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_layout {
    /// Stored elements: COO, CSR, CSC, CSF.
    pub nnz: u64,
    /// Physical pages in the pool: block-paged.
    pub num_pages: u64,
    /// Implementation-defined id: private layouts (`0xF0`-`0xFE`).
    pub extension_id: u64,
    /// Opaque metadata of a private layout (in a view: points into the
    /// descriptor's bytes); may be null when the length is 0.
    pub extension_data: *const u8,
    /// Bytes of `extension_data`.
    pub extension_data_len: usize,
    /// Tokens per page: block-paged.
    pub page_size: u32,
    /// Sequences in the batch: block-paged.
    pub num_seqs: u32,
    /// Transformer layer, or `HURRAY_NO_LAYER`: block-paged.
    pub layer_index: u32,
    /// Member descriptors that follow: composite.
    pub member_count: u32,
    /// Curve order (each side is `2^order`): Hilbert.
    pub hilbert_order: u32,
    /// Curve dimensions (the rank): Hilbert.
    pub hilbert_rank: u32,
    /// `HURRAY_LAYOUT_*` tag, or a private tag.
    pub tag: u8,
    /// 1 if the entries are sorted: COO.
    pub is_sorted: u8,
    /// 0 key, 1 value, 2 fused: block-paged.
    pub kv_role: u8,
    /// `block_table_index_type`: 0 for uint32 indices, 1 for uint64: block-paged.
    pub wide_indices: u8,
    /// 1 partition, 2 overlay, 3 group, or a private rule: composite.
    pub composition_rule: u8,
    /// 0 none, 1 replace, 2 add: composite.
    pub combine_op: u8,
    /// Nesting levels (1 to 8); filled by the parse, ignored by the
    /// encoder (which counts `tile_levels`): tiled.
    pub tile_depth: u8,
}

impl hurray_tensor_view {
    /// No descriptor (what a non-descriptor stream event carries).
    pub(crate) const EMPTY: Self = Self {
        bytes: core::ptr::null(),
        len: 0,
        table: crate::hurray_table {
            bytes: core::ptr::null(),
            count: 0,
        },
        options: hurray_read_options::STRICT,
        byte_offset: 0,
        element_count: 0,
        layout: hurray_layout::ZERO,
        flags: 0,
        rank: 0,
        element_bits: 0,
        buffer_count: 0,
        version_major: 0,
        version_minor: 0,
        element_type: 0,
        is_dynamic: 0,
        member_role: 0,
    };
}

impl hurray_layout {
    /// Every field 0.
    pub(crate) const ZERO: Self = Self {
        nnz: 0,
        num_pages: 0,
        extension_id: 0,
        extension_data: core::ptr::null(),
        extension_data_len: 0,
        page_size: 0,
        num_seqs: 0,
        layer_index: 0,
        member_count: 0,
        hilbert_order: 0,
        hilbert_rank: 0,
        tag: 0,
        is_sorted: 0,
        kv_role: 0,
        wide_indices: 0,
        composition_rule: 0,
        combine_op: 0,
        tile_depth: 0,
    };
}

/// A validated tensor descriptor. Borrows the caller's bytes (and the
/// options' id array); copy it freely, do not modify it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_tensor_view {
    /// First byte of the descriptor.
    pub bytes: *const u8,
    /// `descriptor_length`: the bytes the descriptor occupies (in a stream,
    /// the next descriptor starts at `bytes + len`).
    pub len: usize,
    /// The buffer table (for `hurray_table_get`).
    pub table: hurray_table,
    /// The options the view was parsed with.
    pub options: hurray_read_options,
    /// Byte offset of element `[0, ..., 0]` in buffer 0 (0 for non-dense layouts).
    pub byte_offset: u64,
    /// Product of the shape; meaningful only when `is_dynamic` is 0.
    pub element_count: u64,
    /// The layout and its scalar fields.
    pub layout: hurray_layout,
    /// `HURRAY_FLAG_HAS_*` bits: which optional sections are present.
    pub flags: u32,
    /// Number of dimensions (0 to 64).
    pub rank: u32,
    /// Bits per element (from the extension type section for a private type).
    pub element_bits: u32,
    /// Number of buffers (also `table.count`).
    pub buffer_count: u32,
    /// Descriptor major version (1).
    pub version_major: u8,
    /// Descriptor minor version.
    pub version_minor: u8,
    /// `HURRAY_TYPE_*` code, or a private type `0xF0`-`0xFE`.
    pub element_type: u8,
    /// 1 if a dimension is dynamic (`HURRAY_DYNAMIC`).
    pub is_dynamic: u8,
    /// `HURRAY_MEMBER_*` role, or `HURRAY_MEMBER_NONE`.
    pub member_role: u8,
}

/// One level of a tiled layout (its arrays: `hurray_tensor_tile_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct hurray_tile_level {
    /// Order of the tile grid: row-major, column-major or strided.
    pub outer_layout: u8,
    /// Order inside a tile: row-major, column-major, strided or tiled (a
    /// nested level follows).
    pub inner_layout: u8,
}

/// A quantization section. Used both by the view (filled) and by the
/// encoder (read); each field is meaningful only for the schemes named.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_quantization {
    /// Bytes after the 4-byte scheme header: private schemes; may be null
    /// when the length is 0 (in a view: points into the descriptor).
    pub payload: *const u8,
    /// Bytes of `payload`.
    pub payload_len: usize,
    /// Dequantization scale: per-tensor.
    pub scale: f32,
    /// Zero point: per-tensor.
    pub zero_point: i32,
    /// Channel or blocked axis: per-channel, per-block, NF4, MXFP.
    pub axis: u32,
    /// Elements per block: per-block, NF4, MXFP.
    pub block_size: u32,
    /// Buffer of the scales: per-channel, per-block, NF4, MXFP.
    pub scale_buffer: u32,
    /// Buffer of the zero points, or `HURRAY_NO_BUFFER` (symmetric):
    /// per-channel, per-block; `HURRAY_NO_BUFFER` for the others.
    pub zero_point_buffer: u32,
    /// Zero bytes the writer put after the scheme's fields.
    pub padding: u32,
    /// The scheme's flag word (the encoder derives it for public schemes).
    pub flags: u16,
    /// `HURRAY_SCHEME_*` tag, or a private tag.
    pub scheme_tag: u8,
    /// `scheme_version` (1 for public schemes).
    pub scheme_version: u8,
    /// Element type of the scale values: per-block (read by the encoder:
    /// float16, bfloat16 or float32); float32 for per-channel and NF4,
    /// float8_e8m0 for MXFP, 0 for per-tensor and private schemes.
    pub scale_type: u8,
}

/// A statistics section: every field is valid only when its
/// `HURRAY_STAT_*` bit of `computed_mask` is set.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct hurray_statistics {
    /// Non-zero element count (`HURRAY_STAT_NNZ`).
    pub nnz: u64,
    /// Fraction of zeros (`HURRAY_STAT_SPARSITY`).
    pub sparsity_ratio: f64,
    /// Smallest value (`HURRAY_STAT_RANGE`).
    pub value_min: f64,
    /// Largest value (`HURRAY_STAT_RANGE`).
    pub value_max: f64,
    /// Largest magnitude (`HURRAY_STAT_RANGE`; derived by the encoder).
    pub value_abs_max: f64,
    /// Mean (`HURRAY_STAT_MOMENTS`).
    pub value_mean: f64,
    /// Population standard deviation (`HURRAY_STAT_MOMENTS`).
    pub value_stddev: f64,
    /// `HURRAY_STAT_*` bits.
    pub computed_mask: u32,
    /// N of N:M structured sparsity (`HURRAY_STAT_NM`).
    pub nm_n: u8,
    /// M of N:M structured sparsity (`HURRAY_STAT_NM`).
    pub nm_m: u8,
    /// 1 if a NaN is present (`HURRAY_STAT_NAN_INF`).
    pub has_nan: u8,
    /// 1 if an infinity is present (`HURRAY_STAT_NAN_INF`).
    pub has_inf: u8,
}

/// The extension type section: how a private element type is stored.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct hurray_extension_type {
    /// Bits per element (1, 2, 4 or a multiple of 8).
    pub bit_width: u32,
    /// Exponent bias of a float type.
    pub exponent_bias: u32,
    /// Elements per byte (derived by the encoder from `bit_width`).
    pub packing_factor: u8,
    /// 1 for a floating-point type.
    pub is_float: u8,
    /// 1 for a signed integer type.
    pub is_signed: u8,
    /// Sign bits of a float (0 or 1).
    pub sign_bits: u8,
    /// Exponent bits of a float.
    pub exponent_bits: u8,
    /// Mantissa bits of a float.
    pub mantissa_bits: u8,
    /// 1 if NaN is representable (floats).
    pub has_nan: u8,
    /// 1 if infinity is representable (floats).
    pub has_inf: u8,
}

/// The core's options for a C options struct.
///
/// # Safety
/// `o.extension_layouts` is null or points to `o.extension_layout_count`
/// ids that stay alive and unmodified for `'a`.
unsafe fn core_options<'a>(o: &hurray_read_options) -> Result<ReadOptions<'a>, hurray_status> {
    // SAFETY: forwarded from this function's contract.
    let ids = unsafe { slice_in(o.extension_layouts, o.extension_layout_count) }?;
    Ok(ReadOptions {
        extension_layouts: ids,
        private_schemes: o.private_schemes != 0,
        private_composition_rules: o.private_composition_rules != 0,
    })
}

/// The scalar fields of a validated layout.
fn layout_of(l: &Layout<'_>) -> hurray_layout {
    let mut c = hurray_layout::ZERO;
    c.tag = l.tag();
    c.nnz = l.nnz().unwrap_or(0);
    match l {
        Layout::Tiled(t) => c.tile_depth = t.depth(),
        Layout::Coo(coo) => c.is_sorted = u8::from(coo.sorted),
        Layout::BlockPaged(b) => {
            c.page_size = b.page_size;
            c.num_pages = b.num_pages;
            c.num_seqs = b.num_seqs;
            c.kv_role = b.kv_role.code();
            c.layer_index = b.layer_index.unwrap_or(HURRAY_NO_LAYER);
            c.wide_indices = u8::from(b.wide_indices);
        }
        Layout::Composite(h) => {
            c.composition_rule = h.rule.code();
            c.combine_op = h.combine_op.code();
            c.member_count = h.member_count;
        }
        Layout::Hilbert(h) => {
            c.hilbert_order = h.order;
            c.hilbert_rank = h.rank;
        }
        Layout::Extension(e) => {
            c.extension_id = e.id();
            c.extension_data = e.data().as_ptr();
            c.extension_data_len = e.data().len();
        }
        _ => {}
    }
    c
}

/// Bits per element of a packing.
const fn packing_bits(p: Packing) -> u32 {
    match p {
        Packing::Bytes(n) => n.saturating_mul(8),
        Packing::Bits(b) => b as u32,
        Packing::SixBitGroups => 6,
    }
}

/// The C view of a validated descriptor.
pub(crate) fn view_of(v: &TensorView<'_>, options: hurray_read_options) -> hurray_tensor_view {
    let (version_major, version_minor) = v.version();
    let count = v.element_count();
    hurray_tensor_view {
        bytes: v.as_bytes().as_ptr(),
        len: v.as_bytes().len(),
        table: table_of(v.buffers()),
        options,
        byte_offset: v.byte_offset(),
        element_count: count.unwrap_or(0),
        layout: layout_of(&v.layout()),
        flags: v.flags().bits(),
        rank: v.rank(),
        element_bits: packing_bits(v.packing()),
        #[allow(clippy::cast_possible_truncation)] // at most 255 entries
        buffer_count: v.buffers().len() as u32,
        version_major,
        version_minor,
        element_type: v.element_type().code(),
        is_dynamic: u8::from(v.is_dynamic()),
        member_role: v.member_role().map_or(HURRAY_MEMBER_NONE, MemberRole::code),
    }
}

/// Parses with `options` (null: strict) and fills `out`; `prefix` allows
/// trailing bytes.
///
/// # Safety
/// As the exported parse functions.
unsafe fn parse_into(
    bytes: *const u8,
    len: usize,
    options: *const hurray_read_options,
    prefix: bool,
    out: *mut hurray_tensor_view,
    err: *mut hurray_error,
) -> hurray_status {
    tri!(check_out(out));
    let c_options = if options.is_null() {
        hurray_read_options::STRICT
    } else {
        // SAFETY: `options` is null (handled) or an initialised struct.
        tri!(unsafe { get(options) })
    };
    // SAFETY: the id array outlives the call (and the view).
    let o = tri!(unsafe { core_options(&c_options) });
    // SAFETY: `bytes`/`len` address readable bytes.
    let raw = tri!(unsafe { input(bytes, len) });
    let parsed = if prefix {
        TensorView::parse_prefix_with(raw, &o).map(|(v, _)| v)
    } else {
        TensorView::parse_with(raw, &o)
    };
    match parsed {
        // SAFETY: `out` was checked above and is storage for one view.
        Ok(v) => unsafe { put(out, view_of(&v, c_options)) },
        // SAFETY: `err` is null or storage for one detail.
        Err(e) => unsafe { fail(err, status::describe_descriptor(e)) },
    }
}

/// Parses and validates exactly one tensor descriptor: `len` must equal its
/// `descriptor_length` (`HURRAY_E_TRAILING_BYTES` otherwise). Private
/// layouts, quantization schemes and composition rules are refused; private
/// device tags, memory classes and element types are accepted.
///
/// # Safety
/// `bytes` addresses `len` readable bytes (or is null with `len == 0`) that
/// stay alive and unmodified while the view is used; `out` is null or
/// storage for one view; `err` is null or storage for one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_parse(
    bytes: *const u8,
    len: usize,
    out: *mut hurray_tensor_view,
    err: *mut hurray_error,
) -> hurray_status {
    // SAFETY: this function's contract is `parse_into`'s, with no options.
    guard(|| unsafe { parse_into(bytes, len, core::ptr::null(), false, out, err) })
}

/// Parses the descriptor at the start of `bytes` (a stream); the bytes after
/// it start at `out->bytes + out->len`.
///
/// # Safety
/// As `hurray_tensor_parse`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_parse_prefix(
    bytes: *const u8,
    len: usize,
    out: *mut hurray_tensor_view,
    err: *mut hurray_error,
) -> hurray_status {
    // SAFETY: this function's contract is `parse_into`'s, with no options.
    guard(|| unsafe { parse_into(bytes, len, core::ptr::null(), true, out, err) })
}

/// `hurray_tensor_parse` with reader options (`options` may be null: strict).
///
/// # Safety
/// As `hurray_tensor_parse`; `options` is null or points to an initialised
/// struct whose id array stays alive while the view is used.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_parse_with(
    bytes: *const u8,
    len: usize,
    options: *const hurray_read_options,
    out: *mut hurray_tensor_view,
    err: *mut hurray_error,
) -> hurray_status {
    // SAFETY: this function's contract is `parse_into`'s.
    guard(|| unsafe { parse_into(bytes, len, options, false, out, err) })
}

/// `hurray_tensor_parse_prefix` with reader options (`options` may be null).
///
/// # Safety
/// As `hurray_tensor_parse_with`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_parse_prefix_with(
    bytes: *const u8,
    len: usize,
    options: *const hurray_read_options,
    out: *mut hurray_tensor_view,
    err: *mut hurray_error,
) -> hurray_status {
    // SAFETY: this function's contract is `parse_into`'s.
    guard(|| unsafe { parse_into(bytes, len, options, true, out, err) })
}

/// Validates a view's bytes again and hands the validated value to `f`.
///
/// # Safety
/// `view` is null or points to a view this library produced, whose bytes
/// and option ids are still alive and unmodified.
pub(crate) unsafe fn with_view(
    view: *const hurray_tensor_view,
    f: impl FnOnce(&TensorView<'_>) -> hurray_status,
) -> hurray_status {
    // SAFETY: forwarded from this function's contract.
    let v = tri!(unsafe { get(view) });
    // SAFETY: the view's option ids are alive (this function's contract).
    let options = tri!(unsafe { core_options(&v.options) });
    // SAFETY: the view's bytes are alive and unmodified (this function's
    // contract); a modified `len` is still readable memory only if the
    // caller kept its promise, which the contract requires.
    let raw = tri!(unsafe { input(v.bytes, v.len) });
    match TensorView::parse_with(raw, &options) {
        Ok(t) => f(&t),
        Err(_) => HURRAY_E_INVALID_VIEW,
    }
}

/// Size of dimension `axis` (`HURRAY_DYNAMIC` for a dynamic one).
///
/// # Safety
/// `view` is null or points to a view this library produced, whose bytes
/// are still alive and unmodified; `out` is null or storage for one value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_dim(
    view: *const hurray_tensor_view,
    axis: usize,
    out: *mut u64,
) -> hurray_status {
    guard(|| {
        tri!(check_out(out));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| match v.shape().get(axis) {
                // SAFETY: `out` is storage for one value (# Safety).
                Some(n) => put(out, n),
                None => HURRAY_E_INDEX_OUT_OF_RANGE,
            })
        }
    })
}

/// Copies the shape into `out` (capacity `cap`, at least `rank`).
///
/// # Safety
/// As `hurray_tensor_dim`; `out` addresses `cap` writable values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_shape(
    view: *const hurray_tensor_view,
    out: *mut u64,
    cap: usize,
) -> hurray_status {
    guard(|| {
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| {
                let mut shape = [0u64; 64];
                let Some(shape) = v.shape().copy_to(&mut shape) else {
                    return HURRAY_E_INVALID_VIEW;
                };
                // SAFETY: `out` addresses `cap` writable values (# Safety).
                copy_out(shape, out, cap)
            })
        }
    })
}

/// Copies the element strides into `out` (capacity `cap`, at least `rank`):
/// the explicit strides of a strided layout, the implied ones of a row- or
/// column-major layout. `HURRAY_E_NO_STRIDES` for other layouts and for a
/// dynamic shape.
///
/// # Safety
/// As `hurray_tensor_shape`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_strides(
    view: *const hurray_tensor_view,
    out: *mut i64,
    cap: usize,
) -> hurray_status {
    guard(|| {
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| {
                let mut strides = [0i64; 64];
                let Some(strides) = v.strides(&mut strides) else {
                    return HURRAY_E_NO_STRIDES;
                };
                // SAFETY: `out` addresses `cap` writable values (# Safety).
                copy_out(strides, out, cap)
            })
        }
    })
}

/// The handle of buffer `index`.
///
/// # Safety
/// As `hurray_tensor_dim`; `out` is null or storage for one handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_buffer(
    view: *const hurray_tensor_view,
    index: usize,
    out: *mut hurray_buffer_handle,
) -> hurray_status {
    guard(|| {
        tri!(check_out(out));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| match v.buffers().get(index) {
                // SAFETY: `out` is storage for one handle (# Safety).
                Some(h) => put(out, to_c(h)),
                None => HURRAY_E_INDEX_OUT_OF_RANGE,
            })
        }
    })
}

/// Bytes that `count` contiguous elements of the view's element type occupy
/// (bit-packed and 6-bit types included; a private type per its extension
/// type section). `HURRAY_E_OVERFLOW` if it does not fit 64 bits.
///
/// # Safety
/// As `hurray_tensor_dim`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_storage_bytes(
    view: *const hurray_tensor_view,
    count: u64,
    out: *mut u64,
) -> hurray_status {
    guard(|| {
        tri!(check_out(out));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| match v.packing().bytes_for(count) {
                // SAFETY: `out` is storage for one value (# Safety).
                Some(n) => put(out, n),
                None => HURRAY_E_OVERFLOW,
            })
        }
    })
}

/// Copies a word array of the layout into `out`; `which` selects it.
///
/// # Safety
/// As `hurray_tensor_shape`.
unsafe fn layout_words(
    view: *const hurray_tensor_view,
    morton: bool,
    out: *mut u32,
    cap: usize,
) -> hurray_status {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_view(view, |v| {
            let words = match (v.layout(), morton) {
                (Layout::Morton(bits), true) => bits,
                (Layout::Csf(c), false) => c.mode_order(),
                _ => return HURRAY_E_WRONG_LAYOUT,
            };
            let mut buf = [0u32; 64];
            let Some(words) = words.copy_to(&mut buf) else {
                return HURRAY_E_INVALID_VIEW;
            };
            // SAFETY: forwarded from this function's contract.
            copy_out(words, out, cap)
        })
    }
}

/// Copies the Morton layout's `morton_bits` into `out` (`rank` values).
/// `HURRAY_E_WRONG_LAYOUT` for another layout.
///
/// # Safety
/// As `hurray_tensor_shape`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_morton_bits(
    view: *const hurray_tensor_view,
    out: *mut u32,
    cap: usize,
) -> hurray_status {
    // SAFETY: this function's contract is `layout_words`'.
    guard(|| unsafe { layout_words(view, true, out, cap) })
}

/// Copies the CSF layout's `mode_order` into `out` (`rank` values).
/// `HURRAY_E_WRONG_LAYOUT` for another layout.
///
/// # Safety
/// As `hurray_tensor_shape`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_mode_order(
    view: *const hurray_tensor_view,
    out: *mut u32,
    cap: usize,
) -> hurray_status {
    // SAFETY: this function's contract is `layout_words`'.
    guard(|| unsafe { layout_words(view, false, out, cap) })
}

/// Hands tile level `level` (0 = outermost) of a tiled view to `f`.
///
/// # Safety
/// As `with_view`.
unsafe fn with_tile_level(
    view: *const hurray_tensor_view,
    level: usize,
    f: impl FnOnce(&TileLevel<'_>) -> hurray_status,
) -> hurray_status {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_view(view, |v| match v.layout() {
            Layout::Tiled(t) => match t.levels().nth(level) {
                Some(l) => f(&l),
                None => HURRAY_E_INDEX_OUT_OF_RANGE,
            },
            _ => HURRAY_E_WRONG_LAYOUT,
        })
    }
}

/// The layout codes of tile level `level` (0 = outermost; the view's
/// `layout.tile_depth` levels). `HURRAY_E_WRONG_LAYOUT` unless tiled.
///
/// # Safety
/// As `hurray_tensor_dim`; `out` is null or storage for one level.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_tile_level(
    view: *const hurray_tensor_view,
    level: usize,
    out: *mut hurray_tile_level,
) -> hurray_status {
    guard(|| {
        tri!(check_out(out));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_tile_level(view, level, |l| {
                let info = hurray_tile_level {
                    outer_layout: l.outer_layout,
                    inner_layout: l.inner_layout,
                };
                // SAFETY: `out` is storage for one level (# Safety).
                put(out, info)
            })
        }
    })
}

/// Copies the `tile_shape` of tile level `level` into `out` (`rank` values).
///
/// # Safety
/// As `hurray_tensor_shape`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_tile_shape(
    view: *const hurray_tensor_view,
    level: usize,
    out: *mut u64,
    cap: usize,
) -> hurray_status {
    guard(|| {
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_tile_level(view, level, |l| {
                let mut buf = [0u64; 64];
                let Some(dims) = l.tile_shape.copy_to(&mut buf) else {
                    return HURRAY_E_INVALID_VIEW;
                };
                // SAFETY: `out` addresses `cap` writable values (# Safety).
                copy_out(dims, out, cap)
            })
        }
    })
}

/// Copies the outer (`outer != 0`, in tiles) or inner (in elements) strides
/// of tile level `level` into `out` (`rank` values). `HURRAY_E_ABSENT`
/// unless that order of the level is strided.
///
/// # Safety
/// As `hurray_tensor_shape`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_tile_strides(
    view: *const hurray_tensor_view,
    level: usize,
    outer: i32,
    out: *mut i64,
    cap: usize,
) -> hurray_status {
    guard(|| {
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_tile_level(view, level, |l| {
                let strides = if outer != 0 {
                    l.outer_strides
                } else {
                    l.inner_strides
                };
                let Some(strides) = strides else {
                    return HURRAY_E_ABSENT;
                };
                let mut buf = [0i64; 64];
                let Some(strides) = strides.copy_to(&mut buf) else {
                    return HURRAY_E_INVALID_VIEW;
                };
                // SAFETY: `out` addresses `cap` writable values (# Safety).
                copy_out(strides, out, cap)
            })
        }
    })
}

/// The quantization section. `HURRAY_E_ABSENT` if there is none.
///
/// # Safety
/// As `hurray_tensor_dim`; `out` is null or storage for one section.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_quantization(
    view: *const hurray_tensor_view,
    out: *mut hurray_quantization,
) -> hurray_status {
    guard(|| {
        tri!(check_out(out));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| match v.quantization() {
                Some(q) => match quantization_of(q.scheme, q.padding) {
                    // SAFETY: `out` is storage for one section (# Safety).
                    Some(c) => put(out, c),
                    None => HURRAY_E_UNKNOWN,
                },
                None => HURRAY_E_ABSENT,
            })
        }
    })
}

/// The C form of a quantization scheme; `None` for a scheme this ABI
/// version does not know.
fn quantization_of(s: Scheme<'_>, padding: u32) -> Option<hurray_quantization> {
    let mut c = hurray_quantization {
        payload: core::ptr::null(),
        payload_len: 0,
        scale: 0.0,
        zero_point: 0,
        axis: 0,
        block_size: 0,
        scale_buffer: HURRAY_NO_BUFFER,
        zero_point_buffer: HURRAY_NO_BUFFER,
        padding,
        flags: 0,
        scheme_tag: s.tag(),
        scheme_version: 1,
        scale_type: 0,
    };
    let f32_code = ElementType::Float32.code();
    match s {
        Scheme::PerTensor { scale, zero_point } => {
            c.scale = scale;
            c.zero_point = zero_point;
        }
        Scheme::PerChannel {
            axis,
            scale_buffer,
            zero_point_buffer,
        } => {
            c.axis = axis;
            c.scale_buffer = scale_buffer;
            c.zero_point_buffer = zero_point_buffer.unwrap_or(HURRAY_NO_BUFFER);
            c.flags = u16::from(zero_point_buffer.is_none());
            c.scale_type = f32_code;
        }
        Scheme::PerBlock {
            axis,
            block_size,
            scale_buffer,
            zero_point_buffer,
            scale_type,
        } => {
            c.axis = axis;
            c.block_size = block_size;
            c.scale_buffer = scale_buffer;
            c.zero_point_buffer = zero_point_buffer.unwrap_or(HURRAY_NO_BUFFER);
            c.flags = u16::from(zero_point_buffer.is_none());
            c.scale_type = scale_type.code();
        }
        Scheme::Nf4 {
            axis,
            block_size,
            scale_buffer,
        } => {
            c.axis = axis;
            c.block_size = block_size;
            c.scale_buffer = scale_buffer;
            c.scale_type = f32_code;
        }
        Scheme::Mxfp {
            axis,
            block_size,
            scale_buffer,
        } => {
            c.axis = axis;
            c.block_size = block_size;
            c.scale_buffer = scale_buffer;
            c.scale_type = ElementType::Float8E8M0.code();
        }
        Scheme::Private {
            version,
            flags,
            payload,
            ..
        } => {
            c.scheme_version = version;
            c.flags = flags;
            c.payload = payload.as_ptr();
            c.payload_len = payload.len();
        }
        _ => return None,
    }
    Some(c)
}

/// Copies the shard section's `parent_shape` and `shard_offset` into the two
/// arrays (capacity `cap` each, at least `rank`). `HURRAY_E_ABSENT` if there
/// is no shard section.
///
/// # Safety
/// As `hurray_tensor_shape`, for both arrays.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_shard(
    view: *const hurray_tensor_view,
    parent_shape: *mut u64,
    shard_offset: *mut u64,
    cap: usize,
) -> hurray_status {
    guard(|| {
        tri!(check_out(parent_shape));
        tri!(check_out(shard_offset));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| {
                let Some(s) = v.shard() else {
                    return HURRAY_E_ABSENT;
                };
                let (mut p, mut o) = ([0u64; 64], [0u64; 64]);
                let (Some(p), Some(o)) = (
                    s.parent_shape.copy_to(&mut p),
                    s.shard_offset.copy_to(&mut o),
                ) else {
                    return HURRAY_E_INVALID_VIEW;
                };
                if p.len() > cap {
                    return HURRAY_E_OUTPUT_TOO_SMALL;
                }
                // SAFETY: both arrays address `cap` writable values (# Safety).
                let s = copy_out(p, parent_shape, cap);
                if s != HURRAY_OK {
                    return s;
                }
                // SAFETY: as above.
                copy_out(o, shard_offset, cap)
            })
        }
    })
}

/// The statistics section. `HURRAY_E_ABSENT` if there is none.
///
/// # Safety
/// As `hurray_tensor_dim`; `out` is null or storage for one section.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_statistics(
    view: *const hurray_tensor_view,
    out: *mut hurray_statistics,
) -> hurray_status {
    guard(|| {
        tri!(check_out(out));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| {
                let Some(s) = v.statistics() else {
                    return HURRAY_E_ABSENT;
                };
                let e = s.entry();
                let c = hurray_statistics {
                    nnz: e.nnz.get(),
                    sparsity_ratio: e.sparsity_ratio.get(),
                    value_min: e.value_min.get(),
                    value_max: e.value_max.get(),
                    value_abs_max: e.value_abs_max.get(),
                    value_mean: e.value_mean.get(),
                    value_stddev: e.value_stddev.get(),
                    computed_mask: s.mask(),
                    nm_n: e.nm_n,
                    nm_m: e.nm_m,
                    has_nan: e.has_nan,
                    has_inf: e.has_inf,
                };
                // SAFETY: `out` is storage for one section (# Safety).
                put(out, c)
            })
        }
    })
}

/// The extension type section (present exactly when the element type is
/// private). `HURRAY_E_ABSENT` if there is none.
///
/// # Safety
/// As `hurray_tensor_dim`; `out` is null or storage for one section.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_tensor_extension_type(
    view: *const hurray_tensor_view,
    out: *mut hurray_extension_type,
) -> hurray_status {
    guard(|| {
        tri!(check_out(out));
        // SAFETY: `view` is a live view (# Safety).
        unsafe {
            with_view(view, |v| {
                let Some(t) = v.extension_type() else {
                    return HURRAY_E_ABSENT;
                };
                let e = t.entry();
                let c = hurray_extension_type {
                    bit_width: e.bit_width.get(),
                    exponent_bias: e.exponent_bias.get(),
                    packing_factor: e.packing_factor,
                    is_float: e.is_float,
                    is_signed: e.is_signed,
                    sign_bits: e.sign_bits,
                    exponent_bits: e.exponent_bits,
                    mantissa_bits: e.mantissa_bits,
                    has_nan: e.has_nan,
                    has_inf: e.has_inf,
                };
                // SAFETY: `out` is storage for one section (# Safety).
                put(out, c)
            })
        }
    })
}

// The C codes of the layout enums equal the core's.
const _: () = {
    assert!(KvRole::Fused.code() == 2);
    assert!(CombineOp::Add.code() == 2);
    assert!(CompositionRule::Group.code() == 3);
    assert!(MemberRole::Base.code() == HURRAY_MEMBER_BASE);
    assert!(MemberRole::Correction.code() == HURRAY_MEMBER_CORRECTION);
};
