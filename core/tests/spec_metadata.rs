//! One test per MUST of `docs/spec/metadata.md`, named after its identifier.
//! Inputs are literal bytes or are assembled by `common::Desc` from the
//! spec's field tables, never by the crate's encoder; each test shows an
//! accepted case and the exact error kind and byte offset of a rejected one.

use hurray_core::FieldName as F;
use hurray_core::{
    BufferHandle, DYNAMIC, DescriptorErrorKind as K, DeviceTag, ElementType, Error, Flags, Layout,
    MemberRole, SyncMode, TensorDescriptor, TensorView,
};

mod common;
use common::{
    Desc, accept, composite, compressed, coo, cpu, csf, entry, ext_int, flag, lay, member,
    miri_step, paged, put, reject, stats, ty,
};

/// The worked example of the format's metadata spec: row-major float32
/// `[3, 4]`, one 192-byte CPU buffer aligned to 64, no optional section.
const WORKED_EXAMPLE: [u8; 61] = [
    0x48, 0x52, 0x52, 0x59, // magic "HRRY"
    0x01, 0x00, // version 1.0
    0x3D, 0x00, 0x00, 0x00, // descriptor_length 61
    0x00, 0x00, 0x00, 0x00, // flags
    0x03, // float32
    0x01, // row-major
    0x02, 0x00, 0x00, 0x00, // rank 2
    0x03, 0, 0, 0, 0, 0, 0, 0, // shape[0] = 3
    0x04, 0, 0, 0, 0, 0, 0, 0, // shape[1] = 4
    0, 0, 0, 0, 0, 0, 0, 0,    // byte_offset
    0x01, // buffer_count
    0xC0, 0, 0, 0, 0, 0, 0, 0, // byte_size 192
    0x40, 0, 0, 0, // alignment 64
    0x00, 0x00, 0x00, 0x00, // CPU, producer-synced, standard, reserved
];

#[test]
fn md_header_1_test_parse_worked_example() {
    let v = TensorView::parse(&WORKED_EXAMPLE).unwrap();
    assert_eq!(v.version(), (1, 0));
    assert_eq!(v.header().descriptor_length.get(), 61);
    assert_eq!(v.flags(), Flags::EMPTY);
    assert_eq!(v.element_type(), ElementType::Float32);
    assert_eq!(v.layout(), Layout::RowMajor);
    assert_eq!(v.rank(), 2);
    assert!(v.shape().iter().eq([3, 4]));
    assert_eq!(v.byte_offset(), 0);
    let b = v.buffers().get(0).unwrap();
    assert_eq!((b.byte_size(), b.alignment()), (192, 64));
    assert_eq!(b.device_tag(), DeviceTag::Cpu);
    assert_eq!(v.as_bytes(), &WORKED_EXAMPLE[..]);
    // The independent builder produces the same bytes.
    assert_eq!(Desc::dense(ty::F32, &[3, 4], 192).bytes(), WORKED_EXAMPLE);
    // Fewer than the 20 header bytes.
    for n in 0..20 {
        reject(
            &WORKED_EXAMPLE[..n],
            0,
            K::Truncated {
                needed: 20,
                available: n as u64,
            },
        );
    }
}

#[test]
fn md_write_1_test_emit_worked_example_and_flags() {
    let buffers = [BufferHandle::new(192, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let desc = TensorDescriptor::row_major(ElementType::Float32, &[3, 4], &buffers);
    assert_eq!(desc.encoded_len(), 61);
    let mut out = [0xAAu8; 61];
    assert_eq!(desc.encode(&mut out), Ok(61));
    assert_eq!(out, WORKED_EXAMPLE);

    // With sections: the flag word has exactly their bits, the length is
    // exact, and the sections sit where the independent builder puts them.
    let stats = hurray_core::Statistics::new().with_nnz(12);
    let desc = desc
        .with_shard(&[6, 4], &[3, 0])
        .with_statistics(stats)
        .with_member_role(MemberRole::Correction);
    let mut out = vec![0u8; desc.encoded_len()];
    desc.encode(&mut out).unwrap();
    let mut s = common::stats(1);
    put(&mut s, 8, &12u64.to_le_bytes());
    let want = Desc::dense(ty::F32, &[3, 4], 192)
        .shard(&[6, 4], &[3, 0])
        .stats(s)
        .member(member(0));
    assert_eq!(out, want.bytes());
    assert_eq!(
        u32::from_le_bytes(out[10..14].try_into().unwrap()),
        flag::SHARD | flag::STATS | flag::MEMBER
    );
    // A too-short output is an error, not a partial write reported as success.
    assert!(desc.encode(&mut [0u8; 60]).is_err());
}

#[test]
fn md_magic_1_magic_is_hrry() {
    accept(&WORKED_EXAMPLE);
    for (i, bad) in [*b"HRAY", *b"hrry", [0; 4], *b"YRRH"]
        .into_iter()
        .enumerate()
    {
        let mut b = WORKED_EXAMPLE;
        b[..4].copy_from_slice(&bad);
        reject(&b, 0, K::BadMagic(bad));
        assert!(i < 4);
    }
}

#[test]
fn md_version_1_major_version_is_one() {
    for major in [0u8, 2, 0xFF] {
        let mut d = Desc::dense(ty::F32, &[3, 4], 192);
        d.major = major;
        reject(&d.bytes(), 4, K::UnsupportedVersion { major, minor: 0 });
    }
    let mut d = Desc::dense(ty::F32, &[3, 4], 192);
    d.major = 0;
    d.minor = 9;
    reject(&d.bytes(), 4, K::UnsupportedVersion { major: 0, minor: 9 });
}

#[test]
fn md_version_2_minor_zero_length_is_exact() {
    // Declared longer than the fields (the extra bytes present).
    let mut d = Desc::dense(ty::F32, &[3, 4], 192);
    d.tail = vec![0; 3];
    reject(
        &d.bytes(),
        6,
        K::LengthMismatch {
            declared: 64,
            consumed: 61,
        },
    );
}

#[test]
fn md_version_3_later_minor_trailing_fields_skipped() {
    let mut d = Desc::dense(ty::F32, &[3, 4], 192);
    d.minor = 3;
    d.tail = vec![0xEE; 5];
    let bytes = d.bytes();
    let v = accept(&bytes);
    assert_eq!(v.version(), (1, 3));
    assert_eq!(v.as_bytes().len(), 66);
    assert!(v.shape().iter().eq([3, 4]));
    // Still never past descriptor_length: a field that does not fit is an
    // error at every minor version.
    let mut short = Desc::dense(ty::F32, &[3, 4], 192);
    short.minor = 3;
    short.length = Some(60);
    let mut bytes = short.bytes();
    bytes.truncate(60);
    reject(
        &bytes,
        45,
        K::LengthMismatch {
            declared: 60,
            consumed: 61,
        },
    );
}

#[test]
fn md_length_1_length_at_least_twenty() {
    for declared in [0u32, 1, 19] {
        let mut d = Desc::dense(ty::F32, &[3, 4], 192);
        d.length = Some(declared);
        reject(
            &d.bytes(),
            6,
            K::LengthMismatch {
                declared,
                consumed: 20,
            },
        );
    }
}

#[test]
fn md_length_2_length_within_input() {
    for minor in [0u8, 1] {
        let mut d = Desc::dense(ty::F32, &[3, 4], 192);
        d.minor = minor;
        d.length = Some(1000);
        reject(
            &d.bytes(),
            6,
            K::Truncated {
                needed: 1000,
                available: 61,
            },
        );
    }
    // Every proper prefix of a valid descriptor past the header.
    for n in 20..61 {
        reject(
            &WORKED_EXAMPLE[..n],
            6,
            K::Truncated {
                needed: 61,
                available: n as u64,
            },
        );
    }
}

#[test]
fn md_length_3_never_read_past_length() {
    // Declared 60: the buffer entry at 45 would end at 61.
    let mut b = WORKED_EXAMPLE;
    b[6] = 60;
    reject(
        &b[..60],
        45,
        K::LengthMismatch {
            declared: 60,
            consumed: 61,
        },
    );
    // Declared 44: the buffer count itself is past the end.
    b[6] = 44;
    reject(
        &b[..44],
        44,
        K::LengthMismatch {
            declared: 44,
            consumed: 45,
        },
    );
    // A rank that promises more shape than the descriptor holds.
    let mut d = Desc::dense(ty::F32, &[3, 4], 192);
    d.rank = Some(60);
    reject(
        &d.bytes(),
        20,
        K::LengthMismatch {
            declared: 61,
            consumed: 20 + 60 * 8,
        },
    );
}

#[test]
fn md_length_4_trailing_input_bytes() {
    let mut input = WORKED_EXAMPLE.to_vec();
    input.extend([0, 1, 2]);
    reject(
        &input,
        61,
        K::TrailingBytes {
            declared: 61,
            available: 64,
        },
    );
    // A stream reader takes the prefix and gets the rest back.
    let (v, rest) = TensorView::parse_prefix(&input).unwrap();
    assert_eq!(v.as_bytes(), &WORKED_EXAMPLE[..]);
    assert_eq!(rest, &[0, 1, 2]);
    let two = [WORKED_EXAMPLE, WORKED_EXAMPLE].concat();
    let (_, rest) = TensorView::parse_prefix(&two).unwrap();
    let (_, rest) = TensorView::parse_prefix(rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn md_flags_1_reserved_flag_bits_rejected() {
    for bit in 5..32 {
        let mut d = Desc::dense(ty::F32, &[3, 4], 192);
        d.flags = Some(1 << bit);
        reject(&d.bytes(), 10, K::ReservedFlags(1 << bit));
    }
    let mut d = Desc::dense(ty::F32, &[3, 4], 192);
    d.flags = Some(0xFFFF_FFE0 | flag::SHARD);
    reject(&d.bytes(), 10, K::ReservedFlags(0xFFFF_FFE0));
    // Even at a later minor version.
    d.minor = 7;
    reject(&d.bytes(), 10, K::ReservedFlags(0xFFFF_FFE0));
}

#[test]
fn md_flags_2_extension_flag_iff_private_type() {
    let private = Desc::dense(0xF0, &[4], 64).ext(ext_int(8, true));
    accept(&private.bytes());
    let mut missing = private.clone();
    missing.ext = None;
    reject(
        &missing.bytes(),
        10,
        K::ExtensionTypeMismatch {
            type_tag: 0xF0,
            present: false,
        },
    );
    let extra = Desc::dense(ty::I8, &[4], 64).ext(ext_int(8, true));
    reject(
        &extra.bytes(),
        10,
        K::ExtensionTypeMismatch {
            type_tag: ty::I8,
            present: true,
        },
    );
    // The two texts of the one variant (its message picks its words by
    // `present`).
    let text = |type_tag, present| K::ExtensionTypeMismatch { type_tag, present }.to_string();
    assert_eq!(
        text(0xF0, false),
        "private type 0xf0 needs an extension type section"
    );
    assert_eq!(
        text(ty::I8, true),
        "extension type section present for built-in type 0x10"
    );
}

#[test]
fn md_layout_1_layout_tag_codes() {
    let named = [
        0x01u8, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x40,
    ];
    for tag in (0..=255u8).step_by(miri_step(7)) {
        let mut d = Desc::dense(ty::F32, &[3, 4], 192);
        d.layout_tag = tag;
        let bytes = d.bytes();
        let kind = TensorView::parse(&bytes).map_err(|e| (e.offset(), e.kind()));
        if named.contains(&tag) || (0xF0..=0xFE).contains(&tag) {
            // A known tag: whatever else fails, it is not the tag.
            assert_ne!(kind.err(), Some((15, K::InvalidLayoutTag(tag))));
        } else {
            assert_eq!(kind.err(), Some((15, K::InvalidLayoutTag(tag))), "{tag:#x}");
        }
    }
    accept(&WORKED_EXAMPLE);
}

#[test]
fn md_rank_1_rank_at_most_64() {
    let d = Desc::dense(ty::F32, &[1; 64], 64);
    assert_eq!(accept(&d.bytes()).rank(), 64);
    for rank in [65u32, 1000, u32::MAX] {
        let mut d = Desc::dense(ty::F32, &[3, 4], 192);
        d.rank = Some(rank);
        reject(&d.bytes(), 16, K::RankTooLarge(rank));
    }
}

#[test]
fn md_rank_2_scalar_is_row_major_only() {
    let d = Desc::dense(ty::F32, &[], 64);
    let bytes = d.bytes();
    let v = accept(&bytes);
    assert_eq!(v.element_count(), Some(1));
    reject(
        &Desc::dense(ty::F32, &[], 0).bytes(),
        29,
        K::BufferTooSmall {
            index: 0,
            needed: 4,
            byte_size: 0,
        },
    );
    for tag in [
        0x02u8, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x40, 0xF0,
    ] {
        let mut d = Desc::dense(ty::F32, &[], 64);
        d.layout_tag = tag;
        reject(
            &d.bytes(),
            28,
            K::RankNotAllowed {
                layout_tag: tag,
                rank: 0,
            },
        );
    }
}

#[test]
fn md_shape_1_dynamic_dimensions() {
    // Sizes that need the dynamic dimension are not computed...
    let d = Desc::dense(ty::F32, &[DYNAMIC, 4], 0);
    let bytes = d.bytes();
    let v = accept(&bytes);
    assert!(v.is_dynamic());
    assert_eq!(v.element_count(), None);
    assert_eq!(v.strides(&mut [0; 2]), None);
    // ...but every other rule still applies.
    let d = Desc::dense(ty::F32, &[DYNAMIC, 4], 0).byte_offset(4);
    reject(
        &d.bytes(),
        36,
        K::ByteOffsetOutOfRange {
            byte_offset: 4,
            byte_size: 0,
        },
    );
}

#[test]
fn md_shape_2_empty_tensors() {
    let d = Desc::dense(ty::F32, &[3, 0, 5], 0);
    let bytes = d.bytes();
    let v = accept(&bytes);
    assert_eq!(v.element_count(), Some(0));
    assert!(v.buffers().get(0).unwrap().is_empty());
    // A zero dimension empties the tensor whatever the others hold: their
    // product alone would overflow u64, the tensor's does not (the
    // differential fuzzer found us rejecting this as an overflow, which the
    // reference accepts).
    for shape in [
        [1 << 40, 1 << 40, 0],
        [0, 1 << 40, 1 << 40],
        [1 << 40, 0, 1 << 40],
    ] {
        let bytes = Desc::dense(ty::F32, &shape, 0).bytes();
        assert_eq!(accept(&bytes).element_count(), Some(0), "{shape:?}");
    }
    // An empty tensor still carries a complete, valid descriptor.
    let mut bad = d.clone();
    bad.buffers[0] = entry(0, 0, 0, 0, 0, 0);
    reject(
        &bad.bytes(),
        bad.entry_at(0),
        K::Buffer {
            index: 0,
            error: Error::AlignmentNotPowerOfTwo { alignment: 0 },
        },
    );
}

#[test]
fn md_offset_1_byte_offset_within_buffer_zero() {
    accept(&Desc::dense(ty::F32, &[0], 64).byte_offset(64).bytes());
    accept(&Desc::dense(ty::F32, &[2], 64).byte_offset(56).bytes());
    reject(
        &Desc::dense(ty::F32, &[0], 64).byte_offset(68).bytes(),
        28,
        K::ByteOffsetOutOfRange {
            byte_offset: 68,
            byte_size: 64,
        },
    );
    reject(
        &Desc::dense(ty::F32, &[2], 64).byte_offset(u64::MAX).bytes(),
        28,
        K::ByteOffsetOutOfRange {
            byte_offset: u64::MAX,
            byte_size: 64,
        },
    );
    // In range, but the elements after it are not.
    reject(
        &Desc::dense(ty::F32, &[2], 64).byte_offset(60).bytes(),
        37,
        K::BufferTooSmall {
            index: 0,
            needed: 68,
            byte_size: 64,
        },
    );
}

#[test]
fn md_offset_2_byte_offset_zero_for_sparse_indirect_virtual() {
    let csr = Desc::new(ty::F32, lay::CSR, &[3, 3])
        .layout(compressed(2))
        .buffers(&[cpu(8), cpu(16), cpu(32)]);
    accept(&csr.bytes());
    reject(
        &csr.clone().byte_offset(8).bytes(),
        36,
        K::ByteOffsetNotZero(8),
    );
    let coo = Desc::new(ty::F32, lay::COO, &[4])
        .layout(coo(0, 1))
        .buffers(&[cpu(0), cpu(0)]);
    accept(&coo.bytes());
    reject(&coo.byte_offset(1).bytes(), 28, K::ByteOffsetNotZero(1));
    let head = Desc::new(ty::F32, lay::COMPOSITE, &[8, 8]).layout(composite(1, 0, 2));
    accept(&head.bytes());
    reject(&head.byte_offset(64).bytes(), 36, K::ByteOffsetNotZero(64));
    let pool = Desc::new(ty::F16, lay::PAGED, &[9, 2, 8])
        .layout(paged(4, 5, 0, 2, 0, 3, 0))
        .buffers(&[cpu(5 * 4 * 2 * 8 * 2), cpu(12), cpu(12)]);
    accept(&pool.bytes());
    reject(&pool.byte_offset(2).bytes(), 44, K::ByteOffsetNotZero(2));
}

#[test]
fn md_offset_3_byte_offset_naturally_aligned() {
    for (tag, align) in [
        (ty::F16, 2u32),
        (ty::F32, 4),
        (ty::F64, 8),
        (ty::I64, 8),
        (ty::C64, 4),
        (ty::C128, 8),
        (ty::F128, 16),
    ] {
        let ok = Desc::dense(tag, &[1], 128).byte_offset(u64::from(align) * 2);
        accept(&ok.bytes());
        let bad = Desc::dense(tag, &[1], 128).byte_offset(u64::from(align) + 1);
        reject(
            &bad.bytes(),
            28,
            K::ByteOffsetMisaligned {
                byte_offset: u64::from(align) + 1,
                alignment: align,
            },
        );
    }
    // Byte and sub-byte types start at any byte.
    for tag in [ty::I8, ty::BOOL, ty::I4, ty::F6E2M3] {
        accept(&Desc::dense(tag, &[1], 64).byte_offset(3).bytes());
    }
}

#[test]
fn md_buffers_1_buffer_count_per_layout() {
    let d = Desc::dense(ty::F32, &[3, 4], 192);
    for n in [0usize, 2, 255] {
        let mut bad = d.clone();
        bad.buffers = vec![cpu(192); n];
        reject(
            &bad.bytes(),
            44,
            K::BufferCount {
                expected: 1,
                found: n as u8,
            },
        );
    }
    // A composite head owns none.
    let head = Desc::new(ty::F32, lay::COMPOSITE, &[8, 8])
        .layout(composite(3, 0, 2))
        .buffers(&[cpu(0)]);
    reject(
        &head.bytes(),
        head.table_at(),
        K::BufferCount {
            expected: 0,
            found: 1,
        },
    );
}

#[test]
fn md_buffers_2_every_handle_is_valid() {
    let d = Desc::new(ty::F32, lay::CSR, &[3, 3])
        .layout(compressed(2))
        .buffers(&[cpu(8), cpu(16), cpu(32)]);
    accept(&d.bytes());
    let mut bad = d.clone();
    bad.buffers[2] = entry(32, 32, 0, 0, 0, 0);
    reject(
        &bad.bytes(),
        bad.entry_at(2),
        K::Buffer {
            index: 2,
            error: Error::AlignmentBelowMinimum {
                alignment: 32,
                minimum: 64,
            },
        },
    );
    bad.buffers[1] = entry(16, 64, 0, 0, 0, 7);
    reject(
        &bad.bytes(),
        bad.entry_at(1),
        K::Buffer {
            index: 1,
            error: Error::ReservedNonZero(7),
        },
    );
}

#[test]
fn md_section_1_section_order() {
    // A private type (extension section) with statistics: statistics come
    // first on the wire, although their flag bit (3) is above the extension
    // type's (2).
    let d = Desc::dense(0xF1, &[4], 64)
        .ext(ext_int(8, false))
        .stats(stats(0));
    let bytes = d.bytes();
    let v = accept(&bytes);
    assert_eq!(v.statistics().unwrap().mask(), 0);
    assert_eq!(v.extension_type().unwrap().bit_width(), 8);
    let s = d.stats_at() as usize;
    assert_eq!(d.ext_at() as usize, s + 72);
    // The same two blocks in bit order: the reader takes the extension type's
    // bytes as statistics, whose reserved word is then not zero.
    let mut swapped = bytes[..s].to_vec();
    swapped.extend(&bytes[s + 72..s + 92]);
    swapped.extend(&bytes[s..s + 72]);
    reject(
        &swapped,
        s as u32 + 4,
        K::ReservedNonZero {
            field: F::StatisticsReserved,
        },
    );
}

#[test]
fn md_shard_1_shard_box_inside_parent() {
    let d = Desc::dense(ty::F32, &[8, 4], 128).shard(&[8, 8], &[0, 4]);
    let bytes = d.bytes();
    let v = accept(&bytes);
    let s = v.shard().unwrap();
    assert!(s.parent_shape.iter().eq([8, 8]));
    assert!(s.shard_offset.iter().eq([0, 4]));
    let bad = Desc::dense(ty::F32, &[8, 4], 128).shard(&[8, 8], &[0, 5]);
    reject(
        &bad.bytes(),
        bad.shard_at() + 16 + 8,
        K::ShardOutOfBounds { axis: 1 },
    );
    let bad = Desc::dense(ty::F32, &[8, 4], 128).shard(&[7, 8], &[0, 0]);
    reject(
        &bad.bytes(),
        bad.shard_at() + 16,
        K::ShardOutOfBounds { axis: 0 },
    );
    // offset + shape overflows u64.
    let bad = Desc::dense(ty::F32, &[8, 4], 128).shard(&[u64::MAX - 1, 8], &[u64::MAX - 2, 0]);
    reject(
        &bad.bytes(),
        bad.shard_at() + 16,
        K::ShardOutOfBounds { axis: 0 },
    );
}

#[test]
fn md_shard_2_no_dynamic_dimension_in_a_shard() {
    let bad = Desc::dense(ty::F32, &[4, DYNAMIC], 0).shard(&[4, 8], &[0, 0]);
    reject(
        &bad.bytes(),
        28,
        K::DynamicDimension {
            field: F::Shape,
            axis: 1,
        },
    );
    let bad = Desc::dense(ty::F32, &[8, 4], 128).shard(&[8, DYNAMIC], &[0, 0]);
    reject(
        &bad.bytes(),
        bad.shard_at() + 8,
        K::DynamicDimension {
            field: F::ParentShape,
            axis: 1,
        },
    );
    let bad = Desc::dense(ty::F32, &[8, 4], 128).shard(&[8, 8], &[DYNAMIC, 0]);
    reject(
        &bad.bytes(),
        bad.shard_at() + 16,
        K::DynamicDimension {
            field: F::ShardOffset,
            axis: 0,
        },
    );
    accept(
        &Desc::dense(ty::F32, &[8, 4], 128)
            .shard(&[8, 8], &[0, 0])
            .bytes(),
    );
}

#[test]
fn md_shard_3_no_shard_on_csf_or_block_paged() {
    let csf = Desc::new(ty::F32, lay::CSF, &[2, 3, 4])
        .layout(csf(0, &[0, 1, 2]))
        .buffers(&[cpu(0), cpu(16), cpu(0), cpu(8), cpu(0), cpu(8), cpu(0)]);
    accept(&csf.bytes());
    reject(
        &csf.shard(&[2, 3, 4], &[0, 0, 0]).bytes(),
        10,
        K::SectionNotAllowed {
            section: Flags::HAS_SHARD,
            layout_tag: lay::CSF,
        },
    );
    let pool = Desc::new(ty::F16, lay::PAGED, &[9, 2, 8])
        .layout(paged(4, 5, 0, 2, 0, 3, 0))
        .buffers(&[cpu(640), cpu(12), cpu(12)]);
    accept(&pool.bytes());
    reject(
        &pool.shard(&[9, 2, 8], &[0, 0, 0]).bytes(),
        10,
        K::SectionNotAllowed {
            section: Flags::HAS_SHARD,
            layout_tag: lay::PAGED,
        },
    );
    // Other layouts may be sharded.
    let coo = Desc::new(ty::F32, lay::COO, &[4])
        .layout(coo(0, 0))
        .buffers(&[cpu(0), cpu(0)])
        .shard(&[8], &[4]);
    accept(&coo.bytes());
}

fn with_stats(s: [u8; 72]) -> Desc {
    Desc::dense(ty::F32, &[3, 4], 192).stats(s)
}

#[test]
fn md_stats_1_mask_and_reserved_fields() {
    let d = with_stats(stats(0b11_1111));
    let at = d.stats_at();
    // All six groups valid, every value zero: consistent.
    accept(&d.bytes());
    for bit in (6..32).step_by(miri_step(5)) {
        reject(
            &with_stats(stats(1 << bit)).bytes(),
            at,
            K::ReservedFlags(1 << bit),
        );
    }
    let mut s = stats(0);
    s[5] = 1;
    reject(
        &with_stats(s).bytes(),
        at + 4,
        K::ReservedNonZero {
            field: F::StatisticsReserved,
        },
    );
    let mut s = stats(0);
    s[71] = 1;
    reject(
        &with_stats(s).bytes(),
        at + 68,
        K::ReservedNonZero {
            field: F::StatisticsReserved2,
        },
    );
}

#[test]
fn md_stats_2_valid_statistics_are_in_range() {
    let at = with_stats(stats(0)).stats_at();
    let f = |mask: u32, fields: &[(usize, f64)]| {
        let mut s = stats(mask);
        for &(off, v) in fields {
            put(&mut s, off, &v.to_le_bytes());
        }
        with_stats(s).bytes()
    };
    let inc = |field| K::StatisticsInconsistent { field };
    // sparsity_ratio in [0, 1].
    accept(&f(0b10, &[(16, 1.0)]));
    for r in [-0.1, 1.5, f64::NAN] {
        reject(&f(0b10, &[(16, r)]), at + 16, inc(F::SparsityRatio));
    }
    // min <= max, abs_max = max(|min|, |max|).
    accept(&f(0b100, &[(24, -3.0), (32, 2.0), (40, 3.0)]));
    reject(
        &f(0b100, &[(24, 3.0), (32, 2.0), (40, 3.0)]),
        at + 24,
        inc(F::ValueRange),
    );
    reject(
        &f(0b100, &[(24, -3.0), (32, 2.0), (40, 2.0)]),
        at + 24,
        inc(F::ValueRange),
    );
    // stddev >= 0.
    accept(&f(0b1000, &[(48, -7.0), (56, 0.0)]));
    reject(&f(0b1000, &[(56, -1.0)]), at + 56, inc(F::ValueStddev));
    // nm_n <= nm_m.
    let mut s = stats(0b1_0000);
    s[64] = 2;
    s[65] = 4;
    accept(&with_stats(s).bytes());
    s[64] = 5;
    reject(&with_stats(s).bytes(), at + 64, inc(F::NmN));
    // has_nan / has_inf are 0 or 1.
    let mut s = stats(0b10_0000);
    s[66] = 1;
    s[67] = 1;
    accept(&with_stats(s).bytes());
    s[67] = 2;
    reject(&with_stats(s).bytes(), at + 67, inc(F::HasInf));
    s[66] = 2;
    reject(&with_stats(s).bytes(), at + 66, inc(F::HasNan));
    // A group whose bit is clear is not interpreted.
    let mut s = f(0, &[(16, 9.0), (24, 5.0), (56, -1.0)]);
    let mut block = stats(0);
    block.copy_from_slice(&s[at as usize..at as usize + 72]);
    block[64] = 9;
    block[66] = 7;
    s[at as usize..at as usize + 72].copy_from_slice(&block);
    accept(&s);
}

#[test]
fn md_stats_3_nnz_matches_sparse_layout() {
    let mut s = stats(1);
    put(&mut s, 8, &2u64.to_le_bytes());
    let d = Desc::new(ty::F32, lay::COO, &[4, 4])
        .layout(coo(2, 0))
        .buffers(&[cpu(8), cpu(32)])
        .stats(s);
    accept(&d.bytes());
    let mut bad = d.clone();
    put(bad.stats.as_mut().unwrap(), 8, &3u64.to_le_bytes());
    reject(
        &bad.bytes(),
        bad.stats_at() + 8,
        K::StatisticsInconsistent { field: F::Nnz },
    );
    // Not compared when NNZ_VALID is clear, nor for a dense layout.
    bad.stats.as_mut().unwrap()[0] = 0;
    accept(&bad.bytes());
    let mut s = stats(1);
    put(&mut s, 8, &99u64.to_le_bytes());
    accept(&with_stats(s).bytes());
}

fn private(e: [u8; 20]) -> Desc {
    Desc::dense(0xF5, &[4], 64).ext(e)
}

#[test]
fn md_ext_1_width_and_packing() {
    use common::ext_type;
    for (bits, pack) in [(1u32, 8u8), (2, 4), (4, 2), (8, 1), (24, 1), (128, 1)] {
        let v_bytes = private(ext_type(bits, pack, 0, 0, 0, 0, 0, 0, 0, 0)).bytes();
        let v = accept(&v_bytes);
        assert_eq!(v.extension_type().unwrap().bit_width(), bits);
    }
    let at = private(ext_int(8, false)).ext_at();
    for bits in [0u32, 3, 5, 6, 7, 12, 9] {
        reject(
            &private(ext_type(bits, 1, 0, 0, 0, 0, 0, 0, 0, 0)).bytes(),
            at,
            K::InvalidValue {
                field: F::BitWidth,
                value: u64::from(bits),
            },
        );
    }
    for (bits, pack) in [(16u32, 2u8), (8, 0), (4, 1), (1, 1), (2, 8)] {
        reject(
            &private(ext_type(bits, pack, 0, 0, 0, 0, 0, 0, 0, 0)).bytes(),
            at + 4,
            K::InvalidValue {
                field: F::PackingFactor,
                value: u64::from(pack),
            },
        );
    }
}

#[test]
fn md_ext_2_field_rules() {
    use common::ext_type;
    let at = private(ext_int(8, false)).ext_at();
    // A float: one sign bit at most, is_signed 0.
    accept(&private(ext_type(8, 1, 1, 0, 1, 4, 3, 7, 1, 0)).bytes());
    let bad = |e, off, field, value| {
        reject(
            &private(e).bytes(),
            at + off,
            K::InvalidValue { field, value },
        );
    };
    bad(ext_type(8, 1, 2, 0, 0, 0, 0, 0, 0, 0), 5, F::IsFloat, 2);
    bad(ext_type(8, 1, 0, 2, 0, 0, 0, 0, 0, 0), 6, F::IsSigned, 2);
    bad(ext_type(8, 1, 1, 0, 0, 4, 3, 7, 3, 0), 16, F::HasNan, 3);
    bad(ext_type(8, 1, 1, 1, 1, 4, 3, 7, 0, 0), 6, F::IsSigned, 1);
    bad(ext_type(8, 1, 1, 0, 2, 4, 3, 7, 0, 0), 7, F::SignBits, 2);
    // An integer carries no floating-point field.
    bad(ext_type(8, 1, 0, 1, 1, 0, 0, 0, 0, 0), 7, F::SignBits, 1);
    bad(
        ext_type(8, 1, 0, 1, 0, 5, 0, 0, 0, 0),
        8,
        F::ExponentBits,
        5,
    );
    bad(
        ext_type(8, 1, 0, 1, 0, 0, 2, 0, 0, 0),
        9,
        F::MantissaBits,
        2,
    );
    bad(
        ext_type(8, 1, 0, 1, 0, 0, 0, 127, 0, 0),
        12,
        F::ExponentBias,
        127,
    );
    bad(ext_type(8, 1, 0, 0, 0, 0, 0, 0, 0, 1), 17, F::HasInf, 1);
    for off in [10usize, 11, 18, 19] {
        let mut e = ext_int(8, false);
        e[off] = 1;
        reject(
            &private(e).bytes(),
            at + if off < 18 { 10 } else { 18 },
            K::ReservedNonZero {
                field: F::ExtensionTypeReserved,
            },
        );
    }
}

#[test]
fn md_member_1_member_role_and_reserved() {
    let base = Desc::dense(ty::F32, &[3, 4], 192).member(member(1));
    assert_eq!(accept(&base.bytes()).member_role(), Some(MemberRole::Base));
    let corr = Desc::dense(ty::F32, &[3, 4], 192).member(member(0));
    assert_eq!(
        accept(&corr.bytes()).member_role(),
        Some(MemberRole::Correction)
    );
    for role in [2u8, 0xFF] {
        let d = Desc::dense(ty::F32, &[3, 4], 192).member(member(role));
        reject(
            &d.bytes(),
            d.member_at(),
            K::InvalidValue {
                field: F::MemberRole,
                value: u64::from(role),
            },
        );
    }
    let mut m = member(1);
    m[15] = 1;
    let d = Desc::dense(ty::F32, &[3, 4], 192).member(m);
    reject(
        &d.bytes(),
        d.member_at() + 1,
        K::ReservedNonZero {
            field: F::CompositeMemberReserved,
        },
    );
}
