//! One test per MUST of `docs/spec/element-types.md`, named after its
//! identifier. The type table is typed here from the spec, independently of
//! the crate's.

use hurray_core::Quantity;
use hurray_core::{DescriptorErrorKind as K, ElementType, Packing, interop};

mod common;
use common::{Desc, accept, ext_int, ext_type, miri_step, reject};

/// (tag, name, bits, natural alignment), from the spec's summary table.
const TYPES: [(u8, &str, u32, u32); 26] = [
    (0x01, "float16", 16, 2),
    (0x02, "bfloat16", 16, 2),
    (0x03, "float32", 32, 4),
    (0x04, "float64", 64, 8),
    (0x10, "int8", 8, 1),
    (0x11, "uint8", 8, 1),
    (0x12, "int16", 16, 2),
    (0x13, "uint16", 16, 2),
    (0x14, "int32", 32, 4),
    (0x15, "uint32", 32, 4),
    (0x16, "int64", 64, 8),
    (0x17, "uint64", 64, 8),
    (0x20, "bool", 1, 1),
    (0x40, "float8_e4m3", 8, 1),
    (0x41, "float8_e5m2", 8, 1),
    (0x42, "float8_e8m0", 8, 1),
    (0x43, "float4_e2m1", 4, 1),
    (0x44, "float6_e2m3", 6, 1),
    (0x45, "float6_e3m2", 6, 1),
    (0x46, "float128", 128, 16),
    (0x48, "int4", 4, 1),
    (0x49, "uint4", 4, 1),
    (0x4A, "int2", 2, 1),
    (0x4B, "uint2", 2, 1),
    (0x50, "complex64", 64, 4),
    (0x51, "complex128", 128, 8),
];

/// Bytes for `n` elements of `bits` bits, from the spec's formulas.
fn spec_bytes(bits: u32, n: u64) -> u64 {
    match bits {
        6 => n.div_ceil(4) * 3,
        1 | 2 | 4 => (n * u64::from(bits)).div_ceil(8),
        _ => n * u64::from(bits / 8),
    }
}

#[test]
fn et_tag_1_named_type_codes() {
    for (tag, name, bits, _) in TYPES {
        let t = ElementType::from_code(tag).unwrap();
        assert_eq!((t.code(), t.name(), t.bits()), (tag, name, Some(bits)));
        let bytes = Desc::dense(tag, &[2], 64).bytes();
        assert_eq!(accept(&bytes).element_type(), t);
    }
    assert_eq!(ElementType::BUILT_IN.len(), TYPES.len());
}

#[test]
fn et_tag_2_reserved_and_invalid_type_codes_rejected() {
    for tag in (0..=255u8).step_by(miri_step(7)) {
        if TYPES.iter().any(|t| t.0 == tag) || (0xF0..=0xFE).contains(&tag) {
            continue;
        }
        assert_eq!(ElementType::from_code(tag), None);
        reject(
            &Desc::dense(tag, &[2], 64).bytes(),
            14,
            K::InvalidTypeTag(tag),
        );
    }
    accept(&Desc::dense(0x03, &[2], 64).bytes());
}

#[test]
fn et_tag_3_private_types_carried_with_their_description() {
    for tag in 0xF0..=0xFEu8 {
        let d = Desc::dense(tag, &[2], 64).ext(ext_int(16, true));
        let bytes = d.bytes();
        let v = accept(&bytes);
        assert_eq!(v.element_type(), ElementType::Private(tag));
        assert_eq!(v.packing(), Packing::Bytes(2));
        assert!(v.extension_type().unwrap().is_signed());
    }
    reject(
        &Desc::dense(0xF0, &[2], 64).bytes(),
        10,
        K::ExtensionTypeMismatch {
            type_tag: 0xF0,
            present: false,
        },
    );
}

#[test]
fn et_size_1_contiguous_byte_size() {
    for (tag, _, bits, _) in TYPES.into_iter().step_by(miri_step(2)) {
        for n in (1..=9u64).step_by(miri_step(8)) {
            let need = spec_bytes(bits, n);
            assert_eq!(
                ElementType::from_code(tag).unwrap().storage_bytes(n),
                Some(need)
            );
            accept(&Desc::dense(tag, &[n], need).bytes());
            // Elements whose bytes lie past a buffer of one byte less.
            let short = Desc::dense(tag, &[n], need - 1);
            reject(
                &short.bytes(),
                37,
                K::BufferTooSmall {
                    index: 0,
                    needed: need,
                    byte_size: need - 1,
                },
            );
        }
    }
}

#[test]
fn et_size_2_six_bit_types_take_whole_three_byte_groups() {
    for tag in [0x44u8, 0x45] {
        let t = ElementType::from_code(tag).unwrap();
        assert_eq!(t.packing(), Some(Packing::SixBitGroups));
        for (n, bytes) in [(0u64, 0u64), (1, 3), (3, 3), (4, 3), (5, 6), (8, 6), (9, 9)] {
            assert_eq!(t.storage_bytes(n), Some(bytes), "n = {n}");
        }
        // One element needs a whole group, although six bits fit one byte.
        accept(&Desc::dense(tag, &[1], 3).bytes());
        reject(
            &Desc::dense(tag, &[1], 1).bytes(),
            37,
            K::BufferTooSmall {
                index: 0,
                needed: 3,
                byte_size: 1,
            },
        );
        // A 2 x 3 tensor: six elements, two groups.
        reject(
            &Desc::dense(tag, &[2, 3], 5).bytes(),
            45,
            K::BufferTooSmall {
                index: 0,
                needed: 6,
                byte_size: 5,
            },
        );
    }
}

#[test]
fn et_size_3_private_sizes_from_the_extension_section() {
    // 4-bit, 2 per byte: 5 elements take 3 bytes.
    let d = Desc::dense(0xF2, &[5], 3).ext(ext_int(4, false));
    accept(&d.bytes());
    let d = Desc::dense(0xF2, &[5], 2).ext(ext_int(4, false));
    reject(
        &d.bytes(),
        37,
        K::BufferTooSmall {
            index: 0,
            needed: 3,
            byte_size: 2,
        },
    );
    // A 24-bit float: 3 bytes each.
    let f24 = ext_type(24, 1, 1, 0, 1, 8, 15, 127, 1, 1);
    accept(&Desc::dense(0xF3, &[5], 15).ext(f24).bytes());
    reject(
        &Desc::dense(0xF3, &[5], 14).ext(f24).bytes(),
        37,
        K::BufferTooSmall {
            index: 0,
            needed: 15,
            byte_size: 14,
        },
    );
}

#[test]
fn et_size_4_size_overflow_is_an_error() {
    // 2^62 float64 elements: 2^65 bytes.
    reject(
        &Desc::dense(0x04, &[1 << 62], 64).bytes(),
        37,
        K::Overflow {
            what: Quantity::BufferSize,
        },
    );
    // The element count itself overflows.
    reject(
        &Desc::dense(0x11, &[1 << 32, 1 << 32], 64).bytes(),
        45,
        K::Overflow {
            what: Quantity::ElementCount,
        },
    );
    // Just below: 2^61 - 1 float64 elements take 2^64 - 8 bytes, which fit.
    accept(&Desc::dense(0x04, &[(1 << 61) - 1], u64::MAX).bytes());
    assert_eq!(ElementType::Float64.storage_bytes(u64::MAX), None);
    assert_eq!(
        ElementType::Bool.storage_bytes(u64::MAX),
        Some(u64::MAX.div_ceil(8))
    );
}

#[test]
fn et_align_1_natural_alignment() {
    for (tag, _, _, align) in TYPES {
        let t = ElementType::from_code(tag).unwrap();
        assert_eq!(t.natural_alignment(), align, "{}", t.name());
    }
    // Used for byte_offset: a float128 element starts on 16 bytes.
    accept(&Desc::dense(0x46, &[1], 64).byte_offset(32).bytes());
    reject(
        &Desc::dense(0x46, &[1], 64).byte_offset(8).bytes(),
        28,
        K::ByteOffsetMisaligned {
            byte_offset: 8,
            alignment: 16,
        },
    );
}

#[test]
fn et_dlpack_1_data_type_mapping() {
    use interop::dl_code as c;
    let table: [(u8, u8, u8); 24] = [
        (0x10, c::INT, 8),
        (0x12, c::INT, 16),
        (0x14, c::INT, 32),
        (0x16, c::INT, 64),
        (0x48, c::INT, 4),
        (0x4A, c::INT, 2),
        (0x11, c::UINT, 8),
        (0x13, c::UINT, 16),
        (0x15, c::UINT, 32),
        (0x17, c::UINT, 64),
        (0x49, c::UINT, 4),
        (0x4B, c::UINT, 2),
        (0x01, c::FLOAT, 16),
        (0x03, c::FLOAT, 32),
        (0x04, c::FLOAT, 64),
        (0x02, c::BFLOAT, 16),
        (0x50, c::COMPLEX, 64),
        (0x51, c::COMPLEX, 128),
        (0x40, c::FLOAT8_E4M3FN, 8),
        (0x41, c::FLOAT8_E5M2, 8),
        (0x42, c::FLOAT8_E8M0FNU, 8),
        (0x44, c::FLOAT6_E2M3FN, 6),
        (0x45, c::FLOAT6_E3M2FN, 6),
        (0x43, c::FLOAT4_E2M1FN, 4),
    ];
    for (tag, code, bits) in table {
        let t = ElementType::from_code(tag).unwrap();
        assert_eq!(
            interop::to_dlpack_dtype(t),
            Ok((code, bits, 1)),
            "{}",
            t.name()
        );
        assert_eq!(interop::from_dlpack_dtype(code, bits, 1), Ok(t));
        assert!(interop::from_dlpack_dtype(code, bits, 4).is_err());
    }
    for t in [
        ElementType::Bool,
        ElementType::Float128,
        ElementType::Private(0xF0),
    ] {
        assert_eq!(
            interop::to_dlpack_dtype(t),
            Err(interop::InteropError::NoDataType(t))
        );
    }
    // DLPack's one-byte bool is not hurray's one-bit bool.
    assert!(interop::from_dlpack_dtype(c::BOOL, 8, 1).is_err());
}
