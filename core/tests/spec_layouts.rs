//! One test per MUST of `docs/spec/layouts.md`, named after its identifier.
//! Inputs are assembled by `common::Desc` from the spec's field tables; each
//! test shows accepted cases and the exact error kind and byte offset of the
//! rejected ones.

use hurray_core::Flags;
use hurray_core::{
    DYNAMIC, DescriptorErrorKind as K, Layout, ReadOptions, TensorView,
    layout::{CombineOp, CompositionRule, KvRole},
};
use hurray_core::{FieldName, Quantity};

mod common;
use common::{
    Desc, accept, composite, compressed, coo, cpu, csf, ext_layout, hilbert, i64s, lay, member,
    paged, q_tensor, reject, tile_level, ty, u32s,
};

// --- row-major, column-major -----------------------------------------------------

#[test]
fn ly_dense_1_contiguous_buffer_size() {
    for tag in [lay::ROW, lay::COL] {
        let mut d = Desc::dense(ty::F32, &[3, 4], 48);
        d.layout_tag = tag;
        let bytes = d.bytes();
        let v = accept(&bytes);
        let mut s = [0i64; 2];
        let want: &[i64] = if tag == lay::ROW { &[4, 1] } else { &[1, 3] };
        assert_eq!(v.strides(&mut s), Some(want));
        d.buffers = vec![cpu(47)];
        reject(
            &d.bytes(),
            45,
            K::BufferTooSmall {
                index: 0,
                needed: 48,
                byte_size: 47,
            },
        );
        // From byte_offset on.
        d.buffers = vec![cpu(64)];
        d.byte_offset = 20;
        reject(
            &d.bytes(),
            45,
            K::BufferTooSmall {
                index: 0,
                needed: 68,
                byte_size: 64,
            },
        );
        d.byte_offset = 16;
        accept(&d.bytes());
    }
}

// --- strided ---------------------------------------------------------------------

fn strided(type_tag: u8, shape: &[u64], strides: &[i64], size: u64) -> Desc {
    Desc::new(type_tag, lay::STRIDED, shape)
        .layout(i64s(strides))
        .buffers(&[cpu(size)])
}

#[test]
fn ly_strided_1_every_element_inside_the_buffer() {
    // Rows reversed: element [0, 0] at byte 32, the span is bytes [0, 48).
    let d = strided(ty::F32, &[3, 4], &[-4, 1], 48).byte_offset(32);
    let bytes = d.bytes();
    let v = accept(&bytes);
    assert_eq!(v.strides(&mut [0; 2]), Some(&[-4i64, 1][..]));
    let d = strided(ty::F32, &[3, 4], &[-4, 1], 48).byte_offset(28);
    reject(
        &d.bytes(),
        61,
        K::ExtentOutOfBounds {
            start: -4,
            end: 44,
            byte_size: 48,
        },
    );
    // Broadcast (zero stride) and overlap are fine.
    accept(&strided(ty::F32, &[3, 4], &[0, 1], 16).bytes());
    accept(&strided(ty::F32, &[3, 4], &[1, 1], 24).bytes());
    reject(
        &strided(ty::F32, &[3, 4], &[4, 1], 44).bytes(),
        61,
        K::ExtentOutOfBounds {
            start: 0,
            end: 48,
            byte_size: 44,
        },
    );
    // Sub-byte: int4 elements 0, 2, 4 lie in bytes 0..3.
    accept(&strided(ty::I4, &[3], &[2], 3).bytes());
    reject(
        &strided(ty::I4, &[3], &[2], 2).bytes(),
        45,
        K::ExtentOutOfBounds {
            start: 0,
            end: 3,
            byte_size: 2,
        },
    );
    // 6-bit: elements 0 and 4 are in groups 0 and 1, bytes 0..6.
    accept(&strided(ty::F6E2M3, &[2], &[4], 6).bytes());
    reject(
        &strided(ty::F6E2M3, &[2], &[4], 5).bytes(),
        45,
        K::ExtentOutOfBounds {
            start: 0,
            end: 6,
            byte_size: 5,
        },
    );
    // An empty tensor addresses nothing.
    accept(&strided(ty::F32, &[0, 4], &[i64::MAX, i64::MIN], 0).bytes());
    // Extremes are an overflow, not a wrap: an extent that does not fit
    // an i64 (in elements or bytes) is reported as such.
    reject(
        &strided(ty::F32, &[3, 3], &[i64::MAX, i64::MAX], 64).bytes(),
        61,
        K::Overflow {
            what: Quantity::StrideExtent,
        },
    );
    // The element span alone may pass i64 in bytes while `byte_offset`
    // brings the start back to exactly i64::MIN: the extent is then named
    // (it lies before the buffer), not called an overflow (the differential
    // fuzzer found the old order of the sums refusing this as an overflow).
    let s = -(1i64 << 60) - 4; // rows 2^62 + 16 bytes apart, backwards
    reject(
        &strided(ty::F32, &[2, 3, 4], &[0, s, 1], 64)
            .byte_offset(32)
            .bytes(),
        77,
        K::ExtentOutOfBounds {
            start: i64::MIN,
            end: 48,
            byte_size: 64,
        },
    );
}

// --- tiled -----------------------------------------------------------------------

fn tiled(shape: &[u64], levels: &[Vec<u8>], size: u64) -> Desc {
    Desc::new(ty::F32, lay::TILED, shape)
        .layout(levels.concat())
        .buffers(&[cpu(size)])
}

#[test]
fn ly_tiled_1_level_fields() {
    let ok = tiled(&[6, 8], &[tile_level(&[2, 4], 1, 1, None, None)], 192);
    let bytes = ok.bytes();
    let v = accept(&bytes);
    let Layout::Tiled(t) = v.layout() else {
        panic!("not tiled")
    };
    assert_eq!(t.depth(), 1);
    let level = t.levels().next().unwrap();
    assert!(level.tile_shape.iter().eq([2, 4]));
    let at = ok.layout_at();
    let zero = tiled(&[6, 8], &[tile_level(&[2, 0], 1, 1, None, None)], 192);
    reject(
        &zero.bytes(),
        at + 8,
        K::InvalidValue {
            field: FieldName::TileShape,
            value: 0,
        },
    );
    for outer in [0u8, 4, 0xFF] {
        let d = tiled(&[6, 8], &[tile_level(&[2, 4], outer, 1, None, None)], 192);
        reject(
            &d.bytes(),
            at + 16,
            K::InvalidValue {
                field: FieldName::OuterLayout,
                value: u64::from(outer),
            },
        );
    }
    for inner in [0u8, 5, 0x0B] {
        let d = tiled(&[6, 8], &[tile_level(&[2, 4], 1, inner, None, None)], 192);
        reject(
            &d.bytes(),
            at + 17,
            K::InvalidValue {
                field: FieldName::InnerLayout,
                value: u64::from(inner),
            },
        );
    }
    let mut level = tile_level(&[2, 4], 1, 1, None, None);
    level[19] = 1;
    reject(
        &tiled(&[6, 8], &[level], 192).bytes(),
        at + 18,
        K::ReservedNonZero {
            field: FieldName::TiledReserved,
        },
    );
    // Strided orders carry their strides: outer (in tiles) then inner.
    let d = tiled(
        &[6, 8],
        &[tile_level(&[2, 4], 3, 3, Some(&[2, 1]), Some(&[4, 1]))],
        192,
    );
    let bytes = d.bytes();
    let v = accept(&bytes);
    let Layout::Tiled(t) = v.layout() else {
        panic!("not tiled")
    };
    let level = t.levels().next().unwrap();
    assert!(level.outer_strides.unwrap().iter().eq([2, 1]));
    assert!(level.inner_strides.unwrap().iter().eq([4, 1]));
}

#[test]
fn ly_tiled_2_at_most_eight_levels() {
    let level =
        |last: bool, tile: u64| tile_level(&[tile, tile], 1, if last { 1 } else { 4 }, None, None);
    let chain = |n: usize| -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| level(i + 1 == n, if i == 0 { 2 } else { 1 }))
            .collect()
    };
    let d = tiled(&[4, 4], &chain(8), 64);
    let bytes = d.bytes();
    let v = accept(&bytes);
    let Layout::Tiled(t) = v.layout() else {
        panic!("not tiled")
    };
    assert_eq!(t.depth(), 8);
    assert_eq!(t.levels().count(), 8);
    let d = tiled(&[4, 4], &chain(9), 64);
    reject(&d.bytes(), d.layout_at() + 8 * 20, K::TilingTooDeep);
}

#[test]
fn ly_tiled_3_buffer_holds_whole_tiles() {
    // [5, 8] in [2, 4] tiles: a 3 x 2 grid of 8 elements (one padded row).
    let d = tiled(&[5, 8], &[tile_level(&[2, 4], 1, 1, None, None)], 192);
    accept(&d.bytes());
    let d = tiled(&[5, 8], &[tile_level(&[2, 4], 1, 1, None, None)], 191);
    reject(
        &d.bytes(),
        d.entry_at(0),
        K::ExtentOutOfBounds {
            start: 0,
            end: 192,
            byte_size: 191,
        },
    );
    // Outer strides in tiles, with a gap after each row of tiles: the grid
    // reaches tile 2 * 4 + 1 = 9, so 10 tiles.
    let gap = |size| {
        tiled(
            &[5, 8],
            &[tile_level(&[2, 4], 3, 1, Some(&[4, 1]), None)],
            size,
        )
    };
    accept(&gap(320).bytes());
    let d = gap(319);
    reject(
        &d.bytes(),
        d.entry_at(0),
        K::ExtentOutOfBounds {
            start: 0,
            end: 320,
            byte_size: 319,
        },
    );
}

#[test]
fn ly_tiled_4_inside_of_a_tile_stays_inside() {
    let inner = |strides: &[i64]| {
        tiled(
            &[6, 8],
            &[tile_level(&[2, 4], 1, 3, None, Some(strides))],
            192,
        )
    };
    accept(&inner(&[4, 1]).bytes());
    accept(&inner(&[1, 2]).bytes());
    let d = inner(&[5, 1]);
    reject(&d.bytes(), d.entry_at(0), K::TileOverrun { level: 0 });
    let d = inner(&[-4, 1]);
    reject(&d.bytes(), d.entry_at(0), K::TileOverrun { level: 0 });
    // A nested grid of [2, 3] tiles over a [2, 4] tile needs 12 > 8 slots.
    let d = tiled(
        &[6, 8],
        &[
            tile_level(&[2, 4], 1, 4, None, None),
            tile_level(&[2, 3], 1, 1, None, None),
        ],
        192,
    );
    reject(&d.bytes(), d.entry_at(0), K::TileOverrun { level: 0 });
    let d = tiled(
        &[6, 8],
        &[
            tile_level(&[2, 4], 1, 4, None, None),
            tile_level(&[2, 2], 2, 1, None, None),
        ],
        192,
    );
    accept(&d.bytes());
}

// --- Morton -----------------------------------------------------------------------

fn morton(shape: &[u64], bits: &[u32], size: u64) -> Desc {
    Desc::new(ty::F32, lay::MORTON, shape)
        .layout(u32s(bits))
        .buffers(&[cpu(size)])
}

#[test]
fn ly_morton_1_bits_fit_the_shape() {
    let bytes = morton(&[4, 4], &[2, 2], 64).bytes();
    let v = accept(&bytes);
    let Layout::Morton(bits) = v.layout() else {
        panic!("not morton")
    };
    assert!(bits.iter().eq([2, 2]));
    accept(&morton(&[3, 4], &[2, 2], 64).bytes());
    let d = morton(&[4, 4], &[2, 0], 64);
    reject(
        &d.bytes(),
        d.layout_at() + 4,
        K::InvalidValue {
            field: FieldName::MortonBits,
            value: 0,
        },
    );
    let d = morton(&[5, 4], &[2, 2], 64);
    reject(
        &d.bytes(),
        d.layout_at(),
        K::ShapeDoesNotFitCurve { axis: 0, size: 5 },
    );
}

#[test]
fn ly_morton_2_buffer_holds_the_whole_curve() {
    // [3, 4] on 2 + 2 bits: 16 curve positions.
    let d = morton(&[3, 4], &[2, 2], 63);
    reject(
        &d.bytes(),
        d.entry_at(0),
        K::BufferTooSmall {
            index: 0,
            needed: 64,
            byte_size: 63,
        },
    );
    // Unequal bits: [2, 8] on 1 + 3 bits.
    accept(&morton(&[2, 8], &[1, 3], 64).bytes());
    let d = morton(&[2, 2], &[40, 40], 64);
    reject(
        &d.bytes(),
        d.entry_at(0),
        K::Overflow {
            what: Quantity::MortonCurveSize,
        },
    );
}

// --- COO ------------------------------------------------------------------------------

#[test]
fn ly_coo_1_fields() {
    for sorted in [0u8, 1] {
        let d = Desc::new(ty::F32, lay::COO, &[4, 4])
            .layout(coo(3, sorted))
            .buffers(&[cpu(12), cpu(48)]);
        let bytes = d.bytes();
        let v = accept(&bytes);
        let Layout::Coo(c) = v.layout() else {
            panic!("not coo")
        };
        assert_eq!((c.nnz, c.sorted), (3, sorted == 1));
    }
    let d = Desc::new(ty::F32, lay::COO, &[4, 4])
        .layout(coo(3, 2))
        .buffers(&[cpu(12), cpu(48)]);
    reject(
        &d.bytes(),
        d.layout_at() + 8,
        K::InvalidValue {
            field: FieldName::IsSorted,
            value: 2,
        },
    );
    let mut f = coo(3, 1);
    f[15] = 1;
    let d = Desc::new(ty::F32, lay::COO, &[4, 4])
        .layout(f)
        .buffers(&[cpu(12), cpu(48)]);
    reject(
        &d.bytes(),
        d.layout_at() + 9,
        K::ReservedNonZero {
            field: FieldName::CooReserved,
        },
    );
}

#[test]
fn ly_coo_2_two_buffers_and_their_sizes() {
    let d = |bufs: &[[u8; 16]]| {
        Desc::new(ty::F32, lay::COO, &[4, 4])
            .layout(coo(3, 1))
            .buffers(bufs)
    };
    accept(&d(&[cpu(12), cpu(48)]).bytes());
    accept(&d(&[cpu(64), cpu(48)]).bytes());
    let x = d(&[cpu(11), cpu(48)]);
    reject(
        &x.bytes(),
        x.entry_at(0),
        K::BufferTooSmall {
            index: 0,
            needed: 12,
            byte_size: 11,
        },
    );
    let x = d(&[cpu(12), cpu(40)]);
    reject(
        &x.bytes(),
        x.entry_at(1),
        K::BufferSizeMismatch {
            index: 1,
            expected: 48,
            byte_size: 40,
        },
    );
    let x = d(&[cpu(12), cpu(48), cpu(0)]);
    reject(
        &x.bytes(),
        x.table_at(),
        K::BufferCount {
            expected: 2,
            found: 3,
        },
    );
    // Sub-byte values: three bools in one byte.
    let b = Desc::new(ty::BOOL, lay::COO, &[4, 4])
        .layout(coo(3, 0))
        .buffers(&[cpu(1), cpu(48)]);
    accept(&b.bytes());
}

// --- CSR / CSC ------------------------------------------------------------------------

fn csr(tag: u8, shape: &[u64], nnz: u64, bufs: &[[u8; 16]]) -> Desc {
    Desc::new(ty::F32, tag, shape)
        .layout(compressed(nnz))
        .buffers(bufs)
}

#[test]
fn ly_csr_1_rank_two_and_fields() {
    let ok = csr(lay::CSR, &[3, 3], 2, &[cpu(8), cpu(16), cpu(32)]);
    let bytes = ok.bytes();
    let v = accept(&bytes);
    let Layout::Csr(c) = v.layout() else {
        panic!("not csr")
    };
    assert_eq!(c.nnz, 2);
    for tag in [lay::CSR, lay::CSC] {
        for shape in [&[3u64][..], &[3, 3, 3]] {
            let d = csr(tag, shape, 2, &[cpu(8), cpu(16), cpu(32)]);
            reject(
                &d.bytes(),
                d.layout_at(),
                K::RankNotAllowed {
                    layout_tag: tag,
                    rank: shape.len() as u32,
                },
            );
        }
        let mut f = compressed(2);
        f[8] = 1;
        let d = csr(tag, &[3, 3], 2, &[cpu(8), cpu(16), cpu(32)]).layout(f);
        reject(
            &d.bytes(),
            d.layout_at() + 8,
            K::ReservedNonZero {
                field: FieldName::CompressedReserved,
            },
        );
    }
}

#[test]
fn ly_csr_2_three_buffers_row_pointers() {
    // The spec's example: [4, 5], nnz 5.
    let ok = csr(lay::CSR, &[4, 5], 5, &[cpu(20), cpu(40), cpu(40)]);
    accept(&ok.bytes());
    let d = csr(lay::CSR, &[4, 5], 5, &[cpu(20), cpu(40), cpu(48)]);
    reject(
        &d.bytes(),
        d.entry_at(2),
        K::BufferSizeMismatch {
            index: 2,
            expected: 40,
            byte_size: 48,
        },
    );
    let d = csr(lay::CSR, &[4, 5], 5, &[cpu(20), cpu(48), cpu(40)]);
    reject(
        &d.bytes(),
        d.entry_at(1),
        K::BufferSizeMismatch {
            index: 1,
            expected: 40,
            byte_size: 48,
        },
    );
    let d = csr(lay::CSR, &[4, 5], 5, &[cpu(20), cpu(40)]);
    reject(
        &d.bytes(),
        d.table_at(),
        K::BufferCount {
            expected: 3,
            found: 2,
        },
    );
}

#[test]
fn ly_csc_1_three_buffers_column_pointers() {
    // The spec's example: [3, 5], nnz 5, col_ptr of 6 entries.
    let ok = csr(lay::CSC, &[3, 5], 5, &[cpu(20), cpu(40), cpu(48)]);
    let bytes = ok.bytes();
    assert!(matches!(accept(&bytes).layout(), Layout::Csc(c) if c.nnz == 5));
    let d = csr(lay::CSC, &[3, 5], 5, &[cpu(20), cpu(40), cpu(32)]);
    reject(
        &d.bytes(),
        d.entry_at(2),
        K::BufferSizeMismatch {
            index: 2,
            expected: 48,
            byte_size: 32,
        },
    );
}

// --- CSF ------------------------------------------------------------------------------

/// The spec's example: [2, 3, 4], nnz 4, identity mode order.
fn csf_example() -> Desc {
    Desc::new(ty::F32, lay::CSF, &[2, 3, 4])
        .layout(csf(4, &[0, 1, 2]))
        .buffers(&[
            cpu(16),
            cpu(16),
            cpu(16),
            cpu(24),
            cpu(24),
            cpu(32),
            cpu(32),
        ])
}

#[test]
fn ly_csf_1_rank_and_mode_order() {
    let ok = csf_example();
    let bytes = ok.bytes();
    let v = accept(&bytes);
    let Layout::Csf(c) = v.layout() else {
        panic!("not csf")
    };
    assert_eq!(c.nnz(), 4);
    assert!(c.mode_order().iter().eq([0, 1, 2]));
    accept(&csf_example().layout(csf(4, &[2, 0, 1])).bytes());
    let at = ok.layout_at();
    reject(
        &csf_example().layout(csf(4, &[0, 0, 2])).bytes(),
        at + 12,
        K::NotAPermutation { value: 0 },
    );
    reject(
        &csf_example().layout(csf(4, &[0, 1, 3])).bytes(),
        at + 16,
        K::NotAPermutation { value: 3 },
    );
    let mut f = csf(4, &[0, 1, 2]);
    f[20] = 1;
    reject(
        &csf_example().layout(f).bytes(),
        at + 20,
        K::ReservedNonZero {
            field: FieldName::CsfReserved,
        },
    );
    for shape in [&[4u64][..], &[4, 4]] {
        let mut d = csf_example();
        d.shape = shape.to_vec();
        d.layout = csf(4, &(0..shape.len() as u32).collect::<Vec<_>>());
        reject(
            &d.bytes(),
            d.layout_at(),
            K::RankNotAllowed {
                layout_tag: lay::CSF,
                rank: shape.len() as u32,
            },
        );
    }
}

#[test]
fn ly_csf_2_level_buffers() {
    let base = csf_example();
    let with = |index: usize, size: u64| {
        let mut d = csf_example();
        d.buffers[index] = cpu(size);
        d
    };
    // pos_1 must hold n_0 + 1 = 3 entries.
    let d = with(3, 16);
    reject(
        &d.bytes(),
        d.entry_at(3),
        K::BufferSizeMismatch {
            index: 3,
            expected: 24,
            byte_size: 16,
        },
    );
    // pos_0 always holds 2.
    let d = with(1, 24);
    reject(
        &d.bytes(),
        d.entry_at(1),
        K::BufferSizeMismatch {
            index: 1,
            expected: 16,
            byte_size: 24,
        },
    );
    // The leaf level holds nnz coordinates.
    let d = with(6, 24);
    reject(
        &d.bytes(),
        d.entry_at(6),
        K::BufferSizeMismatch {
            index: 6,
            expected: 32,
            byte_size: 24,
        },
    );
    // A coordinate array is a whole number of uint64.
    let d = with(2, 12);
    reject(
        &d.bytes(),
        d.entry_at(2),
        K::BufferSizeMismatch {
            index: 2,
            expected: 8,
            byte_size: 12,
        },
    );
    let mut d = base.clone();
    d.buffers.pop();
    reject(
        &d.bytes(),
        d.table_at(),
        K::BufferCount {
            expected: 7,
            found: 6,
        },
    );
    // An empty CSF: pos_0 = [0, 0], every other pos = [0].
    let empty = Desc::new(ty::F32, lay::CSF, &[2, 3, 4])
        .layout(csf(0, &[0, 1, 2]))
        .buffers(&[cpu(0), cpu(16), cpu(0), cpu(8), cpu(0), cpu(8), cpu(0)]);
    accept(&empty.bytes());
}

// --- block-paged -------------------------------------------------------------------

/// The spec's example: layer 3 keys, 2 sequences, 5 pages of 4 tokens, 2
/// heads of 8, float16.
fn pool(fields: Vec<u8>, bufs: &[[u8; 16]]) -> Desc {
    Desc::new(ty::F16, lay::PAGED, &[9, 2, 8])
        .layout(fields)
        .buffers(bufs)
}
fn pool_bufs() -> [[u8; 16]; 3] {
    [cpu(640), cpu(12), cpu(12)]
}

#[test]
fn ly_paged_1_fields() {
    let ok = pool(paged(4, 5, 0, 2, 0, 3, 0), &pool_bufs());
    let bytes = ok.bytes();
    let v = accept(&bytes);
    let Layout::BlockPaged(p) = v.layout() else {
        panic!("not block-paged")
    };
    assert_eq!(
        (
            p.page_size,
            p.num_pages,
            p.num_seqs,
            p.kv_role,
            p.layer_index,
            p.wide_indices
        ),
        (4, 5, 2, KvRole::Key, Some(3), false)
    );
    let bytes = pool(paged(4, 5, 0, 2, 2, u32::MAX, 0), &pool_bufs()).bytes();
    let v = accept(&bytes);
    assert!(
        matches!(v.layout(), Layout::BlockPaged(p) if p.layer_index.is_none() && p.kv_role == KvRole::Fused)
    );
    let at = ok.layout_at();
    let bad = |fields: Vec<u8>, off: u32, field: FieldName, value: u64| {
        reject(
            &pool(fields, &pool_bufs()).bytes(),
            at + off,
            K::InvalidValue { field, value },
        );
    };
    bad(paged(0, 5, 0, 2, 0, 3, 0), 0, FieldName::PageSize, 0);
    bad(paged(4, 5, 1, 2, 0, 3, 0), 12, FieldName::PagedAxis, 1);
    bad(paged(4, 5, 0, 2, 3, 3, 0), 20, FieldName::KvRole, 3);
    bad(
        paged(4, 5, 0, 2, 0, 3, 2),
        25,
        FieldName::BlockTableIndexType,
        2,
    );
    let mut f = paged(4, 5, 0, 2, 0, 3, 0);
    f[31] = 1;
    reject(
        &pool(f, &pool_bufs()).bytes(),
        at + 26,
        K::ReservedNonZero {
            field: FieldName::BlockPagedReserved,
        },
    );
    let mut d = pool(paged(4, 5, 0, 2, 0, 3, 0), &pool_bufs());
    d.shape = vec![9, 16];
    reject(
        &d.bytes(),
        d.layout_at(),
        K::RankNotAllowed {
            layout_tag: lay::PAGED,
            rank: 2,
        },
    );
}

#[test]
fn ly_paged_2_pool_table_and_sequence_buffers() {
    let fields = || paged(4, 5, 0, 2, 0, 3, 0);
    let with = |index: usize, size: u64| {
        let mut b = pool_bufs();
        b[index] = cpu(size);
        pool(fields(), &b)
    };
    let d = with(0, 642);
    reject(
        &d.bytes(),
        d.entry_at(0),
        K::BufferSizeMismatch {
            index: 0,
            expected: 640,
            byte_size: 642,
        },
    );
    let d = with(1, 13);
    reject(
        &d.bytes(),
        d.entry_at(1),
        K::BufferSizeMismatch {
            index: 1,
            expected: 12,
            byte_size: 13,
        },
    );
    accept(&with(1, 0).bytes());
    accept(&with(1, 400).bytes());
    let d = with(2, 8);
    reject(
        &d.bytes(),
        d.entry_at(2),
        K::BufferSizeMismatch {
            index: 2,
            expected: 12,
            byte_size: 8,
        },
    );
    // uint64 indices double the sequence pointers.
    let mut b = pool_bufs();
    b[1] = cpu(24);
    b[2] = cpu(24);
    accept(&pool(paged(4, 5, 0, 2, 0, 3, 1), &b).bytes());
    let d = pool(fields(), &[cpu(640), cpu(12), cpu(12), cpu(0)]);
    reject(
        &d.bytes(),
        d.table_at(),
        K::BufferCount {
            expected: 3,
            found: 4,
        },
    );
}

// --- composite -----------------------------------------------------------------------

fn head(rule: u8, op: u8, count: u32) -> Desc {
    Desc::new(ty::F32, lay::COMPOSITE, &[8, 8]).layout(composite(rule, op, count))
}

#[test]
fn ly_composite_1_composition_rule() {
    for (rule, op, want) in [
        (1u8, 0u8, CompositionRule::Partition),
        (2, 1, CompositionRule::Overlay),
        (3, 0, CompositionRule::Group),
    ] {
        let bytes = head(rule, op, 2).bytes();
        let v = accept(&bytes);
        assert!(
            matches!(v.layout(), Layout::Composite(h) if h.rule == want && h.member_count == 2)
        );
    }
    let at = head(1, 0, 2).layout_at();
    for rule in [0u8, 4, 0x10, 0xEF, 0xFF] {
        reject(
            &head(rule, 0, 2).bytes(),
            at,
            K::InvalidValue {
                field: FieldName::CompositionRule,
                value: u64::from(rule),
            },
        );
    }
    // A private rule needs an agreement.
    let private = head(0xF4, 2, 2).bytes();
    reject(
        &private,
        at,
        K::PrivateCodeRefused {
            field: FieldName::CompositionRule,
            code: 0xF4,
        },
    );
    let opts = ReadOptions::STRICT.with_private_composition_rules();
    let v = TensorView::parse_with(&private, &opts).unwrap();
    assert!(
        matches!(v.layout(), Layout::Composite(h) if h.rule == CompositionRule::Private(0xF4) && h.combine_op == CombineOp::Add)
    );
}

#[test]
fn ly_composite_2_combine_op() {
    let at = head(1, 0, 2).layout_at();
    for (rule, op) in [(1u8, 1u8), (3, 2), (2, 0), (2, 3), (1, 0xFF)] {
        reject(
            &head(rule, op, 2).bytes(),
            at + 1,
            K::InvalidValue {
                field: FieldName::CombineOp,
                value: u64::from(op),
            },
        );
    }
    let bytes = head(2, 2, 2).bytes();
    assert!(
        matches!(accept(&bytes).layout(), Layout::Composite(h) if h.combine_op == CombineOp::Add)
    );
    let mut f = composite(1, 0, 2);
    f[3] = 1;
    reject(
        &head(1, 0, 2).layout(f).bytes(),
        at + 2,
        K::ReservedNonZero {
            field: FieldName::CompositeReserved,
        },
    );
}

#[test]
fn ly_composite_3_definite_member_count() {
    let at = head(1, 0, 2).layout_at();
    for rule in [1u8, 2, 3] {
        let op = u8::from(rule == 2);
        reject(
            &head(rule, op, u32::MAX).bytes(),
            at + 4,
            K::InvalidValue {
                field: FieldName::MemberCount,
                value: u64::from(u32::MAX),
            },
        );
    }
    // No members: legal for partition and group, not for an overlay (it has
    // no base).
    accept(&head(1, 0, 0).bytes());
    accept(&head(3, 0, 0).bytes());
    reject(
        &head(2, 1, 0).bytes(),
        at + 4,
        K::InvalidValue {
            field: FieldName::MemberCount,
            value: 0,
        },
    );
}

#[test]
fn ly_composite_4_head_owns_no_data() {
    let ok = head(1, 0, 2);
    accept(&ok.bytes());
    // A nested head carries a shard section like any member.
    accept(&head(1, 0, 2).shard(&[8, 16], &[0, 8]).bytes());
    let d = Desc::new(ty::I8, lay::COMPOSITE, &[8, 8])
        .layout(composite(1, 0, 2))
        .quant(q_tensor(0.5, 0));
    reject(
        &d.bytes(),
        10,
        K::SectionNotAllowed {
            section: Flags::HAS_QUANTIZATION,
            layout_tag: lay::COMPOSITE,
        },
    );
    reject(
        &head(2, 1, 2).member(member(1)).bytes(),
        10,
        K::SectionNotAllowed {
            section: Flags::HAS_COMPOSITE_MEMBER,
            layout_tag: lay::COMPOSITE,
        },
    );
    // Buffers and byte_offset: md_buffers_1 and md_offset_2.
    reject(
        &head(1, 0, 2).buffers(&[cpu(256)]).bytes(),
        ok.table_at(),
        K::BufferCount {
            expected: 0,
            found: 1,
        },
    );
}

// --- Hilbert -------------------------------------------------------------------------

fn hilb(shape: &[u64], order: u32, rank: u32, size: u64) -> Desc {
    Desc::new(ty::F32, lay::HILBERT, shape)
        .layout(hilbert(order, rank))
        .buffers(&[cpu(size)])
}

#[test]
fn ly_hilbert_1_order_rank_and_shape() {
    let bytes = hilb(&[4, 4], 2, 2, 64).bytes();
    let v = accept(&bytes);
    assert!(matches!(v.layout(), Layout::Hilbert(h) if h.order == 2 && h.rank == 2));
    accept(&hilb(&[2, 2, 2], 1, 3, 32).bytes());
    let at = hilb(&[4, 4], 2, 2, 64).layout_at();
    reject(
        &hilb(&[4, 4], 0, 2, 64).bytes(),
        at,
        K::InvalidValue {
            field: FieldName::HilbertOrder,
            value: 0,
        },
    );
    reject(
        &hilb(&[4, 4], 2, 3, 64).bytes(),
        at + 4,
        K::InvalidValue {
            field: FieldName::HilbertRank,
            value: 3,
        },
    );
    let d = hilb(&[4], 2, 1, 64);
    reject(
        &d.bytes(),
        d.layout_at() + 4,
        K::InvalidValue {
            field: FieldName::HilbertRank,
            value: 1,
        },
    );
    reject(
        &hilb(&[4, 8], 2, 2, 128).bytes(),
        at,
        K::ShapeDoesNotFitCurve { axis: 1, size: 8 },
    );
    reject(
        &hilb(&[3, 4], 2, 2, 64).bytes(),
        at,
        K::ShapeDoesNotFitCurve { axis: 0, size: 3 },
    );
    // A dynamic side is not known yet, so not checked.
    accept(&hilb(&[4, DYNAMIC], 2, 2, 64).bytes());
}

#[test]
fn ly_hilbert_2_buffer_holds_the_whole_curve() {
    let d = hilb(&[4, 4], 2, 2, 60);
    reject(
        &d.bytes(),
        d.entry_at(0),
        K::BufferTooSmall {
            index: 0,
            needed: 64,
            byte_size: 60,
        },
    );
    // 2^63 float32 elements: 2^65 bytes.
    let d = hilb(&[1 << 21, 1 << 21, 1 << 21], 21, 3, 64);
    reject(
        &d.bytes(),
        d.entry_at(0),
        K::Overflow {
            what: Quantity::BufferSize,
        },
    );
}

// --- private layouts -----------------------------------------------------------------

#[test]
fn ly_ext_1_private_layout_needs_its_id() {
    let d = Desc::new(ty::F32, 0xF3, &[3, 4])
        .layout(ext_layout(0x5EED, &[1, 2, 3]))
        .buffers(&[cpu(0), cpu(64)]);
    let bytes = d.bytes();
    reject(&bytes, d.layout_at(), K::UnknownExtensionLayout(0x5EED));
    let other = ReadOptions::STRICT.with_extension_layouts(&[7]);
    let e = TensorView::parse_with(&bytes, &other).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (d.layout_at(), K::UnknownExtensionLayout(0x5EED))
    );
    let mine = ReadOptions::STRICT.with_extension_layouts(&[7, 0x5EED]);
    let v = TensorView::parse_with(&bytes, &mine).unwrap();
    let Layout::Extension(x) = v.layout() else {
        panic!("not a private layout")
    };
    assert_eq!(
        (x.tag(), x.id(), x.data()),
        (0xF3, 0x5EED, &[1u8, 2, 3][..])
    );
    // At least one buffer; byte_offset within buffer 0.
    let none = Desc::new(ty::F32, 0xF3, &[3, 4]).layout(ext_layout(0x5EED, &[]));
    let e = TensorView::parse_with(&none.bytes(), &mine).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (
            none.table_at(),
            K::BufferCount {
                expected: 1,
                found: 0
            }
        )
    );
    let far = d.clone().byte_offset(4);
    let e = TensorView::parse_with(&far.bytes(), &mine).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (
            far.byte_offset_at(),
            K::ByteOffsetOutOfRange {
                byte_offset: 4,
                byte_size: 0
            }
        )
    );
}
