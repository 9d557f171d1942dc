//! Composite heads and their members: the rules that span descriptors
//! (`docs/spec/layouts.md` § Composite), checked by `CompositeValidator` and
//! `read_composite`.

use hurray_core::layout::{CombineOp, CompositeHead, CompositionRule};
use hurray_core::{
    BufferHandle, CompositeErrorKind, CompositeValidator, DeviceTag, ElementType, LayoutSpec,
    MemberRole, ReadOptions, Scheme, SyncMode, TensorDescriptor, TensorView, read_composite,
};

fn cpu(size: u64) -> BufferHandle {
    BufferHandle::new(size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

fn head(rule: CompositionRule, op: CombineOp, members: u32, shape: &[u64]) -> Vec<u8> {
    let d = TensorDescriptor::new(
        ElementType::Float32,
        shape,
        LayoutSpec::Composite(CompositeHead {
            rule,
            combine_op: op,
            member_count: members,
        }),
        &[],
    );
    enc(&d)
}

fn enc(d: &TensorDescriptor<'_>) -> Vec<u8> {
    let mut out = vec![0u8; d.encoded_len()];
    let n = d.encode(&mut out).unwrap();
    out.truncate(n);
    out
}

/// A float32 member box `shape` at `offset` of a `parent`.
fn member(shape: &[u64], parent: &[u64], offset: &[u64], role: Option<MemberRole>) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    let buffers = [cpu(n * 4)];
    let mut d = TensorDescriptor::row_major(ElementType::Float32, shape, &buffers)
        .with_shard(parent, offset);
    d.member_role = role;
    enc(&d)
}

fn validate(head: &[u8], members: &[Vec<u8>]) -> Result<(), CompositeErrorKind> {
    let head = TensorView::parse(head).unwrap();
    let mut v = CompositeValidator::<8>::new(&head).map_err(|e| e.kind)?;
    for m in members {
        v.push(&TensorView::parse(m).unwrap()).map_err(|e| e.kind)?;
    }
    v.finish().map_err(|e| e.kind)
}

#[test]
fn ly_member_4_partition_exact_cover_is_accepted() {
    let h = head(CompositionRule::Partition, CombineOp::None, 3, &[8, 8]);
    let ms = [
        member(&[8, 4], &[8, 8], &[0, 0], None),
        member(&[4, 4], &[8, 8], &[0, 4], None),
        member(&[4, 4], &[8, 8], &[4, 4], None),
    ];
    assert_eq!(validate(&h, &ms), Ok(()));
}

#[test]
fn ly_member_4_partition_overlap_and_gap_are_rejected() {
    let h = head(CompositionRule::Partition, CombineOp::None, 2, &[8, 8]);
    let overlap = [
        member(&[8, 5], &[8, 8], &[0, 0], None),
        member(&[8, 4], &[8, 8], &[0, 4], None),
    ];
    assert_eq!(
        validate(&h, &overlap),
        Err(CompositeErrorKind::Overlap { other: 0 })
    );
    let gap = [
        member(&[8, 4], &[8, 8], &[0, 0], None),
        member(&[8, 3], &[8, 8], &[0, 4], None),
    ];
    assert_eq!(validate(&h, &gap), Err(CompositeErrorKind::CoverageGap));
}

#[test]
fn ly_member_1_partition_members_need_a_matching_shard_and_no_role() {
    let h = head(CompositionRule::Partition, CombineOp::None, 1, &[8, 8]);
    let buffers = [cpu(256)];
    let no_shard = enc(&TensorDescriptor::row_major(
        ElementType::Float32,
        &[8, 8],
        &buffers,
    ));
    assert_eq!(
        validate(&h, &[no_shard]),
        Err(CompositeErrorKind::MissingShard)
    );
    let other_parent = member(&[8, 8], &[8, 9], &[0, 0], None);
    assert_eq!(
        validate(&h, &[other_parent]),
        Err(CompositeErrorKind::ParentShapeMismatch)
    );
    let with_role = member(&[8, 8], &[8, 8], &[0, 0], Some(MemberRole::Base));
    assert_eq!(
        validate(&h, &[with_role]),
        Err(CompositeErrorKind::UnexpectedRole)
    );
}

#[test]
fn ly_member_2_member_type_must_match_the_head() {
    let h = head(CompositionRule::Partition, CombineOp::None, 1, &[4]);
    let buffers = [cpu(4)];
    let int8 =
        enc(&TensorDescriptor::row_major(ElementType::Int8, &[4], &buffers).with_shard(&[4], &[0]));
    assert_eq!(
        validate(&h, &[int8]),
        Err(CompositeErrorKind::TypeMismatch {
            head: 0x03,
            member: 0x10
        })
    );
    // A quantized member decodes to real values: accepted under a float head.
    let quant = enc(
        &TensorDescriptor::row_major(ElementType::Int8, &[4], &buffers)
            .with_shard(&[4], &[0])
            .with_quantization(Scheme::PerTensor {
                scale: 0.5,
                zero_point: 0,
            }),
    );
    assert_eq!(validate(&h, &[quant]), Ok(()));
}

#[test]
fn ly_member_3_overlay_needs_a_spanning_base_first_then_corrections() {
    let h = head(CompositionRule::Overlay, CombineOp::Add, 2, &[8, 8]);
    let base = member(&[8, 8], &[8, 8], &[0, 0], Some(MemberRole::Base));
    let fix = member(&[2, 2], &[8, 8], &[3, 3], Some(MemberRole::Correction));
    assert_eq!(validate(&h, &[base.clone(), fix.clone()]), Ok(()));
    // Corrections may overlap anything.
    let fix2 = member(&[8, 8], &[8, 8], &[0, 0], Some(MemberRole::Correction));
    assert_eq!(validate(&h, &[base.clone(), fix2]), Ok(()));
    assert_eq!(
        validate(&h, &[fix.clone(), base.clone()]),
        Err(CompositeErrorKind::WrongRole {
            found: MemberRole::Correction
        })
    );
    assert_eq!(
        validate(&h, &[base.clone(), base.clone()]),
        Err(CompositeErrorKind::WrongRole {
            found: MemberRole::Base
        })
    );
    let small_base = member(&[4, 8], &[8, 8], &[0, 0], Some(MemberRole::Base));
    assert_eq!(
        validate(&h, &[small_base, fix.clone()]),
        Err(CompositeErrorKind::BaseDoesNotSpan)
    );
    let no_role = member(&[8, 8], &[8, 8], &[0, 0], None);
    assert_eq!(
        validate(&h, &[no_role]),
        Err(CompositeErrorKind::MissingRole)
    );
}

#[test]
fn ly_member_3_group_members_are_free_but_carry_no_role() {
    let h = head(CompositionRule::Group, CombineOp::None, 2, &[1]);
    let buffers = [cpu(3)];
    let a = enc(&TensorDescriptor::row_major(
        ElementType::Int8,
        &[3],
        &buffers,
    ));
    let b = member(&[2, 2], &[2, 2], &[0, 0], None);
    assert_eq!(validate(&h, &[a.clone(), b]), Ok(()));
    let with_role = member(&[1], &[1], &[0], Some(MemberRole::Base));
    assert_eq!(
        validate(&h, &[a, with_role]),
        Err(CompositeErrorKind::UnexpectedRole)
    );
}

#[test]
fn ly_member_5_torn_and_overfull_composites_are_rejected() {
    let h = head(CompositionRule::Group, CombineOp::None, 2, &[1]);
    let m = member(&[1], &[1], &[0], None);
    assert_eq!(
        validate(&h, std::slice::from_ref(&m)),
        Err(CompositeErrorKind::Torn {
            expected: 2,
            found: 1
        })
    );
    assert_eq!(
        validate(&h, &[m.clone(), m.clone(), m]),
        Err(CompositeErrorKind::TooManyMembers)
    );
}

#[test]
fn a_plain_tensor_is_not_a_head() {
    let buffers = [cpu(4)];
    let plain = enc(&TensorDescriptor::row_major(
        ElementType::Float32,
        &[1],
        &buffers,
    ));
    assert_eq!(validate(&plain, &[]), Err(CompositeErrorKind::NotAHead));
}

#[test]
fn read_composite_walks_a_stream_with_nesting() {
    // Outer partition of [8, 8] into a plain left half and a nested
    // partition of the right half into two [4, 4] quarters.
    let mut stream = head(CompositionRule::Partition, CombineOp::None, 2, &[8, 8]);
    stream.extend(member(&[8, 4], &[8, 8], &[0, 0], None));
    let nested = TensorDescriptor::new(
        ElementType::Float32,
        &[8, 4],
        LayoutSpec::Composite(CompositeHead {
            rule: CompositionRule::Partition,
            combine_op: CombineOp::None,
            member_count: 2,
        }),
        &[],
    )
    .with_shard(&[8, 8], &[0, 4]);
    stream.extend(enc(&nested));
    stream.extend(member(&[4, 4], &[8, 4], &[0, 0], None));
    stream.extend(member(&[4, 4], &[8, 4], &[4, 0], None));
    stream.extend(b"tail");
    let (head, rest) = read_composite::<4>(&stream, &ReadOptions::STRICT).unwrap();
    assert!(head.shape().iter().eq([8, 8]));
    assert_eq!(rest, b"tail");

    // Cut anywhere inside: a typed error, never a panic.
    for cut in 0..stream.len() - 4 {
        assert!(
            read_composite::<4>(&stream[..cut], &ReadOptions::STRICT).is_err(),
            "cut {cut}"
        );
    }
}

#[test]
fn ly_member_6_nesting_deeper_than_eight_is_rejected() {
    // Nine group heads, each holding the next as its single member.
    let mut stream = Vec::new();
    for _ in 0..9 {
        stream.extend(head(CompositionRule::Group, CombineOp::None, 1, &[1]));
    }
    stream.extend(member(&[1], &[1], &[0], None));
    let err = read_composite::<4>(&stream, &ReadOptions::STRICT).unwrap_err();
    assert_eq!(err.kind, CompositeErrorKind::NestingTooDeep);
    // Eight levels are fine.
    let mut ok = Vec::new();
    for _ in 0..8 {
        ok.extend(head(CompositionRule::Group, CombineOp::None, 1, &[1]));
    }
    ok.extend(member(&[1], &[1], &[0], None));
    assert!(read_composite::<4>(&ok, &ReadOptions::STRICT).is_ok());
}
