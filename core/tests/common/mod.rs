//! Helpers shared by the core's integration tests.
//!
//! Everything here assembles bytes field by field from the tables of
//! `docs/spec/`, with its own little-endian writes: none of it calls the
//! crate's encoders, so a fixture built here checks the decoder (and the
//! encoder, when compared with its output) against an independent reading of
//! the spec.
#![allow(dead_code)] // each test crate uses a different part

use hurray_core::{DescriptorErrorKind, TensorView};

/// The step of a loop over many similar cases: 1 normally, `step` under
/// Miri (which runs each case about a thousand times slower).
pub(crate) const fn miri_step(step: usize) -> usize {
    if cfg!(miri) { step } else { 1 }
}

/// A 16-byte handle entry assembled field by field from the spec's layout.
pub(crate) fn entry(size: u64, align: u32, dev: u8, sync: u8, class: u8, reserved: u8) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&size.to_le_bytes());
    b[8..12].copy_from_slice(&align.to_le_bytes());
    b[12] = dev;
    b[13] = sync;
    b[14] = class;
    b[15] = reserved;
    b
}

/// A CPU buffer of `size` bytes aligned to 64 (alignment 1 when empty).
pub(crate) fn cpu(size: u64) -> [u8; 16] {
    entry(size, if size == 0 { 1 } else { 64 }, 0, 0, 0, 0)
}

// --- little-endian field writers ------------------------------------------------

// (Plain loops of `extend_from_slice`: iterator adapters cost a lot under
// Miri, which runs these helpers thousands of times.)
pub(crate) fn u32s(v: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 * v.len());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}
pub(crate) fn u64s(v: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * v.len());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}
pub(crate) fn i64s(v: &[i64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * v.len());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}
pub(crate) fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

// --- type, layout and scheme codes, from the spec's tables ----------------------

pub(crate) mod ty {
    pub(crate) const F16: u8 = 0x01;
    pub(crate) const BF16: u8 = 0x02;
    pub(crate) const F32: u8 = 0x03;
    pub(crate) const F64: u8 = 0x04;
    pub(crate) const I8: u8 = 0x10;
    pub(crate) const U8: u8 = 0x11;
    pub(crate) const I16: u8 = 0x12;
    pub(crate) const I32: u8 = 0x14;
    pub(crate) const U32: u8 = 0x15;
    pub(crate) const I64: u8 = 0x16;
    pub(crate) const BOOL: u8 = 0x20;
    pub(crate) const F8E4M3: u8 = 0x40;
    pub(crate) const F4: u8 = 0x43;
    pub(crate) const F6E2M3: u8 = 0x44;
    pub(crate) const F128: u8 = 0x46;
    pub(crate) const I4: u8 = 0x48;
    pub(crate) const U4: u8 = 0x49;
    pub(crate) const I2: u8 = 0x4A;
    pub(crate) const U2: u8 = 0x4B;
    pub(crate) const C64: u8 = 0x50;
    pub(crate) const C128: u8 = 0x51;
}

pub(crate) mod lay {
    pub(crate) const ROW: u8 = 0x01;
    pub(crate) const COL: u8 = 0x02;
    pub(crate) const STRIDED: u8 = 0x03;
    pub(crate) const TILED: u8 = 0x04;
    pub(crate) const MORTON: u8 = 0x05;
    pub(crate) const COO: u8 = 0x06;
    pub(crate) const CSR: u8 = 0x07;
    pub(crate) const CSC: u8 = 0x08;
    pub(crate) const CSF: u8 = 0x09;
    pub(crate) const PAGED: u8 = 0x0A;
    pub(crate) const COMPOSITE: u8 = 0x0B;
    pub(crate) const HILBERT: u8 = 0x40;
}

/// Flag bits of the fixed header.
pub(crate) mod flag {
    pub(crate) const QUANT: u32 = 1 << 0;
    pub(crate) const SHARD: u32 = 1 << 1;
    pub(crate) const EXT: u32 = 1 << 2;
    pub(crate) const STATS: u32 = 1 << 3;
    pub(crate) const MEMBER: u32 = 1 << 4;
}

// --- layout-specific field blocks -----------------------------------------------

/// COO fields: `nnz`, `is_sorted`, 7 reserved bytes.
pub(crate) fn coo(nnz: u64, sorted: u8) -> Vec<u8> {
    let mut v = nnz.to_le_bytes().to_vec();
    v.push(sorted);
    v.extend([0; 7]);
    v
}

/// CSR / CSC fields: `nnz`, 8 reserved bytes.
pub(crate) fn compressed(nnz: u64) -> Vec<u8> {
    let mut v = nnz.to_le_bytes().to_vec();
    v.extend([0; 8]);
    v
}

/// CSF fields: `nnz`, `mode_order`, 8 reserved bytes.
pub(crate) fn csf(nnz: u64, mode_order: &[u32]) -> Vec<u8> {
    let mut v = nnz.to_le_bytes().to_vec();
    v.extend(u32s(mode_order));
    v.extend([0; 8]);
    v
}

/// Block-paged fields (32 bytes, unaligned).
#[allow(clippy::too_many_arguments)]
pub(crate) fn paged(
    page_size: u32,
    num_pages: u64,
    paged_axis: u32,
    num_seqs: u32,
    kv_role: u8,
    layer: u32,
    index_type: u8,
) -> Vec<u8> {
    let mut v = page_size.to_le_bytes().to_vec();
    v.extend(num_pages.to_le_bytes());
    v.extend(paged_axis.to_le_bytes());
    v.extend(num_seqs.to_le_bytes());
    v.push(kv_role);
    v.extend(layer.to_le_bytes());
    v.push(index_type);
    v.extend([0; 6]);
    assert_eq!(v.len(), 32);
    v
}

/// Composite head fields (8 bytes).
pub(crate) fn composite(rule: u8, op: u8, count: u32) -> Vec<u8> {
    let mut v = vec![rule, op, 0, 0];
    v.extend(count.to_le_bytes());
    v
}

/// Hilbert fields.
pub(crate) fn hilbert(order: u32, rank: u32) -> Vec<u8> {
    u32s(&[order, rank])
}

/// One tiled level: `tile_shape`, `outer`, `inner`, 2 reserved bytes, then the
/// optional strides.
pub(crate) fn tile_level(
    tile: &[u64],
    outer: u8,
    inner: u8,
    outer_strides: Option<&[i64]>,
    inner_strides: Option<&[i64]>,
) -> Vec<u8> {
    let mut v = u64s(tile);
    v.extend([outer, inner, 0, 0]);
    if let Some(s) = outer_strides {
        v.extend(i64s(s));
    }
    if let Some(s) = inner_strides {
        v.extend(i64s(s));
    }
    v
}

/// Private layout fields: id, data length, data.
pub(crate) fn ext_layout(id: u64, data: &[u8]) -> Vec<u8> {
    let mut v = id.to_le_bytes().to_vec();
    v.extend((data.len() as u32).to_le_bytes());
    v.extend(data);
    v
}

// --- quantization payloads --------------------------------------------------------

pub(crate) const NO_BUF: u32 = 0xFFFF_FFFF;

pub(crate) fn q_header(tag: u8, version: u8, flags: u16) -> Vec<u8> {
    let mut v = vec![tag, version];
    v.extend(flags.to_le_bytes());
    v
}

/// Per-tensor affine, 16 bytes.
pub(crate) fn q_tensor(scale: f32, zero_point: i32) -> Vec<u8> {
    let mut v = q_header(0x01, 1, 0);
    v.extend(scale.to_le_bytes());
    v.extend(zero_point.to_le_bytes());
    v.extend([0; 4]);
    v
}

/// Per-channel affine, 20 bytes.
pub(crate) fn q_channel(flags: u16, axis: u32, scale: u32, zp: u32, scale_type: u8) -> Vec<u8> {
    let mut v = q_header(0x02, 1, flags);
    v.extend(u32s(&[axis, scale, zp]));
    v.extend([scale_type, 0, 0, 0]);
    v
}

/// Per-block affine, 24 bytes.
pub(crate) fn q_block(
    flags: u16,
    axis: u32,
    block: u32,
    scale: u32,
    zp: u32,
    scale_type: u8,
) -> Vec<u8> {
    let mut v = q_header(0x03, 1, flags);
    v.extend(u32s(&[axis, block, scale, zp]));
    v.extend([scale_type, 0, 0, 0]);
    v
}

/// NF4 (0x04) or MXFP (0x05), 16 bytes.
pub(crate) fn q_blockwise(tag: u8, axis: u32, block: u32, scale: u32) -> Vec<u8> {
    let mut v = q_header(tag, 1, 0);
    v.extend(u32s(&[axis, block, scale]));
    v
}

// --- optional sections --------------------------------------------------------------

/// A statistics block with `mask` and every other field zero; set fields with
/// [`put`] at the spec's offsets.
pub(crate) fn stats(mask: u32) -> [u8; 72] {
    let mut s = [0u8; 72];
    put(&mut s, 0, &mask.to_le_bytes());
    s
}

/// An extension type block.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ext_type(
    bit_width: u32,
    packing: u8,
    is_float: u8,
    is_signed: u8,
    sign: u8,
    exp: u8,
    mant: u8,
    bias: u32,
    nan: u8,
    inf: u8,
) -> [u8; 20] {
    let mut e = [0u8; 20];
    put(&mut e, 0, &bit_width.to_le_bytes());
    e[4] = packing;
    e[5] = is_float;
    e[6] = is_signed;
    e[7] = sign;
    e[8] = exp;
    e[9] = mant;
    put(&mut e, 12, &bias.to_le_bytes());
    e[16] = nan;
    e[17] = inf;
    e
}

/// An integer extension type of `bits` bits.
pub(crate) fn ext_int(bits: u32, signed: bool) -> [u8; 20] {
    let pack = match bits {
        1 => 8,
        2 => 4,
        4 => 2,
        _ => 1,
    };
    ext_type(bits, pack, 0, u8::from(signed), 0, 0, 0, 0, 0, 0)
}

/// A composite member block.
pub(crate) fn member(role: u8) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[0] = role;
    m
}

// --- a whole descriptor ---------------------------------------------------------------

/// A descriptor, field by field. Flags, rank, buffer count and length are
/// derived from the parts unless overridden.
#[derive(Clone, Debug)]
pub(crate) struct Desc {
    pub major: u8,
    pub minor: u8,
    pub length: Option<u32>,
    pub flags: Option<u32>,
    pub type_tag: u8,
    pub layout_tag: u8,
    pub rank: Option<u32>,
    pub shape: Vec<u64>,
    pub byte_offset: u64,
    pub layout: Vec<u8>,
    pub count: Option<u8>,
    pub buffers: Vec<[u8; 16]>,
    pub quant: Option<Vec<u8>>,
    pub quant_len: Option<u32>,
    pub shard: Option<(Vec<u64>, Vec<u64>)>,
    pub stats: Option<[u8; 72]>,
    pub ext: Option<[u8; 20]>,
    pub member: Option<[u8; 16]>,
    /// Bytes after the last section, inside `descriptor_length`.
    pub tail: Vec<u8>,
}

impl Desc {
    pub(crate) fn new(type_tag: u8, layout_tag: u8, shape: &[u64]) -> Self {
        Self {
            major: 1,
            minor: 0,
            length: None,
            flags: None,
            type_tag,
            layout_tag,
            rank: None,
            shape: shape.to_vec(),
            byte_offset: 0,
            layout: Vec::new(),
            count: None,
            buffers: Vec::new(),
            quant: None,
            quant_len: None,
            shard: None,
            stats: None,
            ext: None,
            member: None,
            tail: Vec::new(),
        }
    }

    /// A row-major tensor with one CPU buffer of `size` bytes.
    pub(crate) fn dense(type_tag: u8, shape: &[u64], size: u64) -> Self {
        Self::new(type_tag, lay::ROW, shape).buffers(&[cpu(size)])
    }

    pub(crate) fn layout(mut self, fields: Vec<u8>) -> Self {
        self.layout = fields;
        self
    }
    pub(crate) fn buffers(mut self, b: &[[u8; 16]]) -> Self {
        self.buffers = b.to_vec();
        self
    }
    pub(crate) fn quant(mut self, payload: Vec<u8>) -> Self {
        self.quant = Some(payload);
        self
    }
    pub(crate) fn shard(mut self, parent: &[u64], offset: &[u64]) -> Self {
        self.shard = Some((parent.to_vec(), offset.to_vec()));
        self
    }
    pub(crate) fn stats(mut self, s: [u8; 72]) -> Self {
        self.stats = Some(s);
        self
    }
    pub(crate) fn ext(mut self, e: [u8; 20]) -> Self {
        self.ext = Some(e);
        self
    }
    pub(crate) fn member(mut self, m: [u8; 16]) -> Self {
        self.member = Some(m);
        self
    }
    pub(crate) fn byte_offset(mut self, o: u64) -> Self {
        self.byte_offset = o;
        self
    }

    pub(crate) fn computed_flags(&self) -> u32 {
        let mut f = 0;
        if self.quant.is_some() {
            f |= flag::QUANT;
        }
        if self.shard.is_some() {
            f |= flag::SHARD;
        }
        if self.ext.is_some() {
            f |= flag::EXT;
        }
        if self.stats.is_some() {
            f |= flag::STATS;
        }
        if self.member.is_some() {
            f |= flag::MEMBER;
        }
        f
    }

    // Offsets of the parts, from the spec's overall structure.
    pub(crate) fn byte_offset_at(&self) -> u32 {
        20 + 8 * self.shape.len() as u32
    }
    pub(crate) fn layout_at(&self) -> u32 {
        self.byte_offset_at() + 8
    }
    pub(crate) fn table_at(&self) -> u32 {
        self.layout_at() + self.layout.len() as u32
    }
    pub(crate) fn entry_at(&self, index: u32) -> u32 {
        self.table_at() + 1 + 16 * index
    }
    /// Offset of `quantization_length`.
    pub(crate) fn quant_at(&self) -> u32 {
        self.table_at() + 1 + 16 * self.buffers.len() as u32
    }
    /// Offset of the first byte of the quantization payload.
    pub(crate) fn payload_at(&self) -> u32 {
        self.quant_at() + 4
    }
    pub(crate) fn shard_at(&self) -> u32 {
        self.quant_at() + self.quant.as_ref().map_or(0, |q| 4 + q.len() as u32)
    }
    pub(crate) fn stats_at(&self) -> u32 {
        self.shard_at()
            + self
                .shard
                .as_ref()
                .map_or(0, |(p, o)| 8 * (p.len() + o.len()) as u32)
    }
    pub(crate) fn ext_at(&self) -> u32 {
        self.stats_at() + if self.stats.is_some() { 72 } else { 0 }
    }
    pub(crate) fn member_at(&self) -> u32 {
        self.ext_at() + if self.ext.is_some() { 20 } else { 0 }
    }
    pub(crate) fn fields_len(&self) -> u32 {
        self.member_at() + if self.member.is_some() { 16 } else { 0 }
    }

    /// The descriptor's bytes.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(256);
        v.extend_from_slice(b"HRRY");
        v.push(self.major);
        v.push(self.minor);
        let len = self
            .length
            .unwrap_or(self.fields_len() + self.tail.len() as u32);
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(
            &self
                .flags
                .unwrap_or_else(|| self.computed_flags())
                .to_le_bytes(),
        );
        v.push(self.type_tag);
        v.push(self.layout_tag);
        v.extend_from_slice(&self.rank.unwrap_or(self.shape.len() as u32).to_le_bytes());
        v.extend_from_slice(&u64s(&self.shape));
        v.extend_from_slice(&self.byte_offset.to_le_bytes());
        v.extend_from_slice(&self.layout);
        v.push(self.count.unwrap_or(self.buffers.len() as u8));
        for b in &self.buffers {
            v.extend_from_slice(b);
        }
        if let Some(q) = &self.quant {
            v.extend_from_slice(&self.quant_len.unwrap_or(q.len() as u32).to_le_bytes());
            v.extend_from_slice(q);
        }
        if let Some((p, o)) = &self.shard {
            v.extend_from_slice(&u64s(p));
            v.extend_from_slice(&u64s(o));
        }
        if let Some(s) = &self.stats {
            v.extend_from_slice(s);
        }
        if let Some(e) = &self.ext {
            v.extend_from_slice(e);
        }
        if let Some(m) = &self.member {
            v.extend_from_slice(m);
        }
        v.extend_from_slice(&self.tail);
        v
    }
}

/// Parses `bytes`, panicking with the error if the reader rejects them.
#[track_caller]
pub(crate) fn accept(bytes: &[u8]) -> TensorView<'_> {
    match TensorView::parse(bytes) {
        Ok(v) => v,
        Err(e) => panic!("rejected: {e} ({e:?})\n{bytes:02x?}"),
    }
}

/// Asserts the reader rejects `bytes` with exactly `kind` at `offset`.
#[track_caller]
pub(crate) fn reject(bytes: &[u8], offset: u32, kind: DescriptorErrorKind) {
    match TensorView::parse(bytes) {
        Ok(_) => panic!("accepted, expected {kind:?} at {offset}\n{bytes:02x?}"),
        Err(e) => assert_eq!(
            (e.offset(), e.kind()),
            (offset, kind),
            "got: {e}\n{bytes:02x?}"
        ),
    }
}
