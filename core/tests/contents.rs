//! `validate_contents`: the rules about what buffers hold (sparse index
//! arrays, block tables, quantization parameters, E8M0 data, sub-byte
//! padding), each with a case that passes and one that fails.

use hurray_core::layout::{BlockPaged, Compressed, Coo, KvRole};
use hurray_core::{
    BufferHandle, DataErrorKind, DeviceTag, ElementType, LayoutSpec, Scheme, SyncMode,
    TensorDescriptor, TensorView, validate_contents,
};

fn cpu(n: u64) -> BufferHandle {
    BufferHandle::new(
        n,
        if n == 0 { 1 } else { 64 },
        DeviceTag::Cpu,
        SyncMode::ProducerSynced,
    )
    .unwrap()
}

fn encode(d: &TensorDescriptor<'_>) -> Vec<u8> {
    let mut out = vec![0u8; d.encoded_len()];
    let n = d.encode(&mut out).unwrap();
    out.truncate(n);
    out
}

fn le64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn le32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn check(bytes: &[u8], buffers: &[&[u8]]) -> Result<(), (u32, u64, DataErrorKind)> {
    let view = TensorView::parse(bytes).unwrap();
    validate_contents(&view, buffers).map_err(|e| (e.buffer, e.element, e.kind))
}

#[test]
fn ly_data_2_csr_pointers_and_indices() {
    // [3, 4], nnz 3: rows {0: [1, 3], 1: [], 2: [0]}.
    let b = [cpu(12), cpu(24), cpu(32)];
    let d = encode(&TensorDescriptor::new(
        ElementType::Float32,
        &[3, 4],
        LayoutSpec::Csr(Compressed { nnz: 3 }),
        &b,
    ));
    let vals = [0u8; 12];
    let ok = check(&d, &[&vals, &le64(&[1, 3, 0]), &le64(&[0, 2, 2, 3])]);
    assert_eq!(ok, Ok(()));
    assert_eq!(
        check(&d, &[&vals, &le64(&[1, 3, 0]), &le64(&[1, 2, 2, 3])]),
        Err((2, 0, DataErrorKind::PointerStart(1)))
    );
    assert_eq!(
        check(&d, &[&vals, &le64(&[1, 3, 0]), &le64(&[0, 2, 2, 2])]),
        Err((
            2,
            3,
            DataErrorKind::PointerEnd {
                found: 2,
                expected: 3
            }
        ))
    );
    assert_eq!(
        check(&d, &[&vals, &le64(&[1, 3, 0]), &le64(&[0, 2, 1, 3])]),
        Err((2, 2, DataErrorKind::PointerDecreasing))
    );
    assert_eq!(
        check(&d, &[&vals, &le64(&[3, 1, 0]), &le64(&[0, 2, 2, 3])]),
        Err((1, 1, DataErrorKind::NotIncreasing))
    );
    assert_eq!(
        check(&d, &[&vals, &le64(&[1, 4, 0]), &le64(&[0, 2, 2, 3])]),
        Err((1, 1, DataErrorKind::OutOfBounds { value: 4, bound: 4 }))
    );
}

#[test]
fn ly_data_2_csc_bounds_use_rows() {
    // [2, 3] CSC, nnz 1: column 2 holds row 1.
    let b = [cpu(4), cpu(8), cpu(32)];
    let d = encode(&TensorDescriptor::new(
        ElementType::Float32,
        &[2, 3],
        LayoutSpec::Csc(Compressed { nnz: 1 }),
        &b,
    ));
    let vals = [0u8; 4];
    assert_eq!(
        check(&d, &[&vals, &le64(&[1]), &le64(&[0, 0, 0, 1])]),
        Ok(())
    );
    assert_eq!(
        check(&d, &[&vals, &le64(&[2]), &le64(&[0, 0, 0, 1])]),
        Err((1, 0, DataErrorKind::OutOfBounds { value: 2, bound: 2 }))
    );
}

#[test]
fn ly_data_3_coo_bounds_and_sorted_order() {
    let b = [cpu(8), cpu(32)];
    let sorted = encode(&TensorDescriptor::new(
        ElementType::Float32,
        &[4, 4],
        LayoutSpec::Coo(Coo {
            nnz: 2,
            sorted: true,
        }),
        &b,
    ));
    let vals = [0u8; 8];
    assert_eq!(check(&sorted, &[&vals, &le64(&[0, 1, 2, 0])]), Ok(()));
    assert_eq!(
        check(&sorted, &[&vals, &le64(&[2, 0, 0, 1])]),
        Err((1, 2, DataErrorKind::NotIncreasing))
    );
    assert_eq!(
        check(&sorted, &[&vals, &le64(&[0, 1, 0, 1])]),
        Err((1, 2, DataErrorKind::NotIncreasing)),
        "a duplicate is not strictly increasing"
    );
    assert_eq!(
        check(&sorted, &[&vals, &le64(&[0, 1, 4, 0])]),
        Err((1, 2, DataErrorKind::OutOfBounds { value: 4, bound: 4 }))
    );
    let unsorted = encode(&TensorDescriptor::new(
        ElementType::Float32,
        &[4, 4],
        LayoutSpec::Coo(Coo {
            nnz: 2,
            sorted: false,
        }),
        &b,
    ));
    assert_eq!(check(&unsorted, &[&vals, &le64(&[2, 0, 0, 1])]), Ok(()));
}

#[test]
fn ly_data_4_csf_levels() {
    // The spec's example: [2, 3, 4], nnz 4, identity mode order.
    let b = [
        cpu(16),
        cpu(16),
        cpu(16),
        cpu(24),
        cpu(24),
        cpu(32),
        cpu(32),
    ];
    let d = encode(&TensorDescriptor::new(
        ElementType::Float32,
        &[2, 3, 4],
        LayoutSpec::Csf {
            nnz: 4,
            mode_order: &[0, 1, 2],
        },
        &b,
    ));
    let vals = [0u8; 16];
    let good: [Vec<u8>; 6] = [
        le64(&[0, 2]),
        le64(&[0, 1]),
        le64(&[0, 2, 3]),
        le64(&[0, 2, 1]),
        le64(&[0, 1, 2, 4]),
        le64(&[1, 3, 0, 2]),
    ];
    let mut all: Vec<&[u8]> = vec![&vals];
    all.extend(good.iter().map(Vec::as_slice));
    assert_eq!(check(&d, &all), Ok(()));
    let bad_leaf = le64(&[1, 3, 2, 0]); // siblings 2, 0 not increasing
    all[6] = &bad_leaf;
    assert_eq!(check(&d, &all), Err((6, 3, DataErrorKind::NotIncreasing)));
    let out = le64(&[1, 4, 0, 2]); // k = 4 in a mode of size 4
    all[6] = &out;
    assert_eq!(
        check(&d, &all),
        Err((6, 1, DataErrorKind::OutOfBounds { value: 4, bound: 4 }))
    );
}

#[test]
fn ly_data_5_block_paged_tables() {
    let pool = 5 * 4 * 2 * 8 * 2; // pages x page_size x heads x dim x f16
    let b = [cpu(pool), cpu(12), cpu(12)];
    let d = encode(&TensorDescriptor::new(
        ElementType::Float16,
        &[9, 2, 8],
        LayoutSpec::BlockPaged(BlockPaged {
            page_size: 4,
            num_pages: 5,
            num_seqs: 2,
            kv_role: KvRole::Key,
            layer_index: Some(3),
            wide_indices: false,
        }),
        &b,
    ));
    let pool = vec![0u8; usize::try_from(pool).unwrap()];
    assert_eq!(
        check(&d, &[&pool, &le32(&[0, 1, 0]), &le32(&[0, 2, 3])]),
        Ok(())
    );
    assert_eq!(
        check(&d, &[&pool, &le32(&[0, 5, 0]), &le32(&[0, 2, 3])]),
        Err((1, 1, DataErrorKind::OutOfBounds { value: 5, bound: 5 }))
    );
    assert_eq!(
        check(&d, &[&pool, &le32(&[0, 1, 0]), &le32(&[0, 2, 2])]),
        Err((
            2,
            2,
            DataErrorKind::PointerEnd {
                found: 2,
                expected: 3
            }
        ))
    );
    assert_eq!(
        check(&d, &[&pool, &le32(&[0, 1, 0]), &le32(&[0, 3, 3])]),
        Ok(()),
        "one sequence may own every page"
    );
}

#[test]
fn ly_data_6_quantization_parameters() {
    // int8 [2, 4] per-channel on axis 0, asymmetric: scales f32, zero points i32.
    let b = [cpu(8), cpu(8), cpu(8)];
    let d = encode(
        &TensorDescriptor::row_major(ElementType::Int8, &[2, 4], &b).with_quantization(
            Scheme::PerChannel {
                axis: 0,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            },
        ),
    );
    let data = [0u8; 8];
    let scales: Vec<u8> = [0.5f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let zeros: Vec<u8> = [0i32, -128].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(check(&d, &[&data, &scales, &zeros]), Ok(()));
    let nan: Vec<u8> = [0.5f32, f32::NAN]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(
        check(&d, &[&data, &nan, &zeros]),
        Err((1, 1, DataErrorKind::BadScale))
    );
    let zero_scale: Vec<u8> = [0.0f32, 1.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(
        check(&d, &[&data, &zero_scale, &zeros]),
        Err((1, 0, DataErrorKind::BadScale))
    );
    let wide: Vec<u8> = [0i32, 128].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(
        check(&d, &[&data, &scales, &wide]),
        Err((2, 1, DataErrorKind::ZeroPointOutOfRange(128)))
    );
}

#[test]
fn ly_data_6_float16_scales_of_per_block() {
    // uint4 [1, 4], blocks of 2 along axis 1: two f16 scales, symmetric.
    let b = [cpu(2), cpu(4)];
    let d = encode(
        &TensorDescriptor::row_major(ElementType::UInt4, &[1, 4], &b).with_quantization(
            Scheme::PerBlock {
                axis: 1,
                block_size: 2,
                scale_buffer: 1,
                zero_point_buffer: None,
                scale_type: ElementType::Float16,
            },
        ),
    );
    let data = [0u8; 2];
    let one = 0x3C00u16.to_le_bytes(); // 1.0
    let inf = 0x7C00u16.to_le_bytes();
    assert_eq!(check(&d, &[&data, &[one, one].concat()]), Ok(()));
    assert_eq!(
        check(&d, &[&data, &[one, inf].concat()]),
        Err((1, 1, DataErrorKind::BadScale))
    );
    let neg_zero = 0x8000u16.to_le_bytes();
    assert_eq!(
        check(&d, &[&data, &[neg_zero, one].concat()]),
        Err((1, 0, DataErrorKind::BadScale))
    );
}

#[test]
fn ly_data_6_mx_scales_and_e8m0_data() {
    // int8 [1, 32], MXFP blocks of 32: one E8M0 scale.
    let b = [cpu(32), cpu(1)];
    let d = encode(
        &TensorDescriptor::row_major(ElementType::Int8, &[1, 32], &b).with_quantization(
            Scheme::Mxfp {
                axis: 1,
                block_size: 32,
                scale_buffer: 1,
            },
        ),
    );
    let data = [0u8; 32];
    assert_eq!(check(&d, &[&data, &[127]]), Ok(()));
    assert_eq!(
        check(&d, &[&data, &[0xFF]]),
        Err((1, 0, DataErrorKind::ReservedE8M0(0xFF)))
    );

    let e = [cpu(3)];
    let d = encode(&TensorDescriptor::row_major(
        ElementType::Float8E8M0,
        &[3],
        &e,
    ));
    assert_eq!(check(&d, &[&[1, 2, 3]]), Ok(()));
    assert_eq!(
        check(&d, &[&[1, 0, 3]]),
        Err((0, 1, DataErrorKind::ReservedE8M0(0)))
    );
}

#[test]
fn ly_data_7_sub_byte_padding_is_zero() {
    // bool [10]: 2 bytes, bits 10..16 are padding.
    let b = [cpu(2)];
    let d = encode(&TensorDescriptor::row_major(ElementType::Bool, &[10], &b));
    assert_eq!(check(&d, &[&[0xFF, 0x03]]), Ok(()));
    assert_eq!(
        check(&d, &[&[0xFF, 0x07]]),
        Err((0, 1, DataErrorKind::PaddingNotZero))
    );
    // uint4 [3]: the high nibble of byte 1 is padding (the spec's example 0xC5 0x03).
    let b = [cpu(2)];
    let d = encode(&TensorDescriptor::row_major(ElementType::UInt4, &[3], &b));
    assert_eq!(check(&d, &[&[0xC5, 0x03]]), Ok(()));
    assert_eq!(
        check(&d, &[&[0xC5, 0x13]]),
        Err((0, 1, DataErrorKind::PaddingNotZero))
    );
    // float6 [5]: two 3-byte groups; bits 30..48 are padding.
    let b = [cpu(6)];
    let d = encode(&TensorDescriptor::row_major(
        ElementType::Float6E2M3,
        &[5],
        &b,
    ));
    assert_eq!(check(&d, &[&[0xFF, 0xFF, 0xFF, 0x3F, 0, 0]]), Ok(()));
    assert_eq!(
        check(&d, &[&[0xFF, 0xFF, 0xFF, 0x3F, 0, 0x80]]),
        Err((0, 5, DataErrorKind::PaddingNotZero))
    );
}

#[test]
fn ly_data_1_missing_or_short_buffers_are_reported() {
    let b = [cpu(8)];
    let d = encode(&TensorDescriptor::row_major(ElementType::Float32, &[2], &b));
    assert_eq!(
        check(&d, &[]),
        Err((
            0,
            0,
            DataErrorKind::Missing {
                expected: 8,
                found: 0
            }
        ))
    );
    assert_eq!(
        check(&d, &[&[0; 7]]),
        Err((
            0,
            0,
            DataErrorKind::Missing {
                expected: 8,
                found: 7
            }
        ))
    );
    assert_eq!(check(&d, &[&[0; 9]]), Ok(()));
}
