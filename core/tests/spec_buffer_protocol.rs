//! One test per MUST of `docs/spec/buffer-protocol.md`, named after its identifier.

use hurray_core::{
    BufferHandle, BufferHandleEntry, DeviceTag, EntryError, Error, MIN_BUFFER_ALIGNMENT,
    MemoryClass, SyncMode, interop,
};

mod common;
use common::entry;

#[test]
fn bp_entry_1_layout_offsets_and_endianness() {
    assert_eq!(size_of::<BufferHandleEntry>(), 16);
    assert_eq!(align_of::<BufferHandleEntry>(), 1);
    let h = BufferHandle::with_memory_class(
        0x0102_0304_0506_0708,
        0x1000,
        DeviceTag::Rocm,
        SyncMode::ConsumerStream,
        MemoryClass::PeerToPeer,
    )
    .unwrap();
    assert_eq!(
        h.to_bytes(),
        [
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00, 0x10, 0x00, 0x00, 10, 2, 3, 0
        ]
    );
}

#[test]
fn bp_entry_2_any_16_bytes_decode_or_error() {
    // Fixed patterns that stress every field at once; the exhaustive and
    // property tests cover the rest of the space.
    for fill in [0x00u8, 0x01, 0x40, 0x7F, 0x80, 0xFF] {
        let _ = BufferHandle::from_bytes(&[fill; 16]);
    }
    assert!(BufferHandle::from_bytes(&[0xFF; 16]).is_err());
}

#[test]
fn bp_align_1_alignment_must_be_power_of_two() {
    for align in [0u32, 3, 5, 6, 7, 65, 96, 4095, u32::MAX] {
        assert_eq!(
            BufferHandle::from_bytes(&entry(0, align, 2, 0, 0, 0)),
            Err(Error::AlignmentNotPowerOfTwo { alignment: align }),
            "alignment {align}"
        );
    }
    for shift in 0..32 {
        assert!(BufferHandle::from_bytes(&entry(0, 1 << shift, 2, 0, 0, 0)).is_ok());
    }
}

#[test]
fn bp_align_2_non_empty_needs_min_alignment() {
    for align in [1u32, 2, 4, 8, 16, 32] {
        assert_eq!(
            BufferHandle::from_bytes(&entry(1, align, 2, 0, 0, 0)),
            Err(Error::AlignmentBelowMinimum {
                alignment: align,
                minimum: MIN_BUFFER_ALIGNMENT
            })
        );
    }
    assert!(BufferHandle::from_bytes(&entry(1, 64, 2, 0, 0, 0)).is_ok());
    assert!(BufferHandle::from_bytes(&entry(u64::MAX, 1 << 31, 2, 0, 0, 0)).is_ok());
}

#[test]
fn bp_align_3_empty_accepts_any_power_of_two() {
    for shift in 0..32 {
        let h = BufferHandle::from_bytes(&entry(0, 1 << shift, 1, 0, 0, 0)).unwrap();
        assert!(h.is_empty());
        assert_eq!(h.alignment(), 1 << shift);
    }
}

#[test]
fn bp_align_4_base_address_must_be_aligned() {
    let h = BufferHandle::new(256, 256, DeviceTag::Cuda, SyncMode::Event).unwrap();
    assert!(h.is_address_aligned(0));
    assert!(h.is_address_aligned(0x7f00_0000_0100));
    for off in [1u64, 64, 128, 255] {
        assert!(!h.is_address_aligned(0x1000 + off), "offset {off}");
    }
    // An empty buffer's address is unconstrained, null included.
    let e = BufferHandle::empty(DeviceTag::Cuda);
    assert!(e.is_address_aligned(0) && e.is_address_aligned(3));
}

const DEVICE_CODES: [u8; 13] = [1, 2, 4, 7, 8, 9, 10, 12, 14, 15, 16, 17, 18];

#[test]
fn bp_device_1_unknown_device_tags_rejected_with_raw_byte() {
    for code in 0..=255u8 {
        let r = BufferHandle::from_bytes(&entry(0, 1, code, 0, 0, 0));
        if DEVICE_CODES.contains(&code) {
            assert_eq!(r.unwrap().device_tag().code(), code);
        } else {
            assert_eq!(r, Err(Error::InvalidDeviceTag(code)), "code {code}");
        }
    }
    for memory_variant in [0u8, 3, 11, 13] {
        assert_eq!(DeviceTag::from_code(memory_variant), None);
    }
    assert_eq!(DeviceTag::ALL.len(), DEVICE_CODES.len());
}

#[test]
fn bp_sync_1_unknown_sync_modes_rejected_with_raw_byte() {
    for code in 0..=255u8 {
        let r = BufferHandle::from_bytes(&entry(64, 64, DeviceTag::Cuda.code(), code, 0, 0));
        match code {
            0..=2 => assert_eq!(r.unwrap().sync_mode().code(), code),
            _ => assert_eq!(r, Err(Error::InvalidSyncMode(code))),
        }
    }
}

#[test]
fn bp_sync_2_cpu_buffers_must_be_producer_synced() {
    assert_eq!(
        BufferHandle::new(512, 64, DeviceTag::Cpu, SyncMode::Event),
        Err(Error::InvalidSyncMode(0x01))
    );
    assert_eq!(
        BufferHandle::new(512, 64, DeviceTag::Cpu, SyncMode::ConsumerStream),
        Err(Error::InvalidSyncMode(0x02))
    );
    // The rule applies to empty CPU buffers and to decoding too.
    assert_eq!(
        BufferHandle::from_bytes(&entry(0, 1, 1, 1, 0, 0)),
        Err(Error::InvalidSyncMode(1))
    );
    // And only to CPU buffers.
    for &dev in DeviceTag::ALL.iter().filter(|&&d| d != DeviceTag::Cpu) {
        assert!(
            BufferHandle::new(64, 64, dev, SyncMode::Event).is_ok(),
            "{dev:?}"
        );
    }
}

#[test]
fn bp_class_1_unknown_memory_classes_rejected_with_raw_byte() {
    for code in 0..=255u8 {
        let r = BufferHandle::from_bytes(&entry(64, 64, 2, 0, code, 0));
        match code {
            0..=3 => assert_eq!(r.unwrap().memory_class().code(), code),
            _ => assert_eq!(r, Err(Error::InvalidMemoryClass(code))),
        }
    }
}

#[test]
fn bp_class_2_default_class_is_standard() {
    let h = BufferHandle::new(64, 64, DeviceTag::Cuda, SyncMode::Event).unwrap();
    assert_eq!(h.memory_class(), MemoryClass::Standard);
    assert_eq!(h.to_bytes()[14], 0);
    assert_eq!(BufferHandle::empty(DeviceTag::Metal).to_bytes()[14], 0);
    assert_eq!(MemoryClass::default(), MemoryClass::Standard);
}

#[test]
fn bp_reserved_1_reserved_byte_must_be_zero() {
    for r in 1..=255u8 {
        assert_eq!(
            BufferHandle::from_bytes(&entry(0, 1, 1, 0, 0, r)),
            Err(Error::ReservedNonZero(r))
        );
    }
    let h = BufferHandle::new(64, 64, DeviceTag::Cuda, SyncMode::Event).unwrap();
    assert_eq!(h.to_bytes()[15], 0);
}

#[test]
fn bp_order_1_first_broken_rule_is_reported() {
    // Everything wrong: device, sync, class, reserved, alignment.
    let all_bad = entry(1, 3, 0xEE, 0xDD, 0xCC, 0xBB);
    assert_eq!(
        BufferHandle::from_bytes(&all_bad),
        Err(Error::InvalidDeviceTag(0xEE))
    );
    assert_eq!(
        BufferHandle::from_bytes(&entry(1, 3, 2, 0xDD, 0xCC, 0xBB)),
        Err(Error::InvalidSyncMode(0xDD))
    );
    assert_eq!(
        BufferHandle::from_bytes(&entry(1, 3, 2, 1, 0xCC, 0xBB)),
        Err(Error::InvalidMemoryClass(0xCC))
    );
    assert_eq!(
        BufferHandle::from_bytes(&entry(1, 3, 2, 1, 0, 0xBB)),
        Err(Error::ReservedNonZero(0xBB))
    );
    assert_eq!(
        BufferHandle::from_bytes(&entry(1, 3, 2, 1, 0, 0)),
        Err(Error::AlignmentNotPowerOfTwo { alignment: 3 })
    );
    // Alignment minimum comes before the CPU sync rule.
    assert_eq!(
        BufferHandle::from_bytes(&entry(1, 32, 1, 1, 0, 0)),
        Err(Error::AlignmentBelowMinimum {
            alignment: 32,
            minimum: 64
        })
    );
    assert_eq!(
        BufferHandle::from_bytes(&entry(1, 64, 1, 1, 0, 0)),
        Err(Error::InvalidSyncMode(1))
    );
    // The raw entry reports the same faults as EntryError.
    let raw = BufferHandleEntry::from_array(all_bad);
    assert_eq!(raw.decode(), Err(EntryError::InvalidDeviceTag(0xEE)));
}

#[test]
fn bp_roundtrip_1_decode_encode_is_identity() {
    let bytes = entry(4096, 4096, 2, 1, 2, 0);
    let h = BufferHandle::from_bytes(&bytes).unwrap();
    assert_eq!(h.to_bytes(), bytes);
    assert_eq!(BufferHandle::from_bytes(&h.to_bytes()), Ok(h));
}

/// The table of § DLPack and Arrow, written out independently of the code.
const INTEROP: &[(DeviceTag, MemoryClass, i32, Option<i32>)] = &[
    (DeviceTag::Cpu, MemoryClass::Standard, 1, Some(1)),
    (DeviceTag::Cuda, MemoryClass::Standard, 2, Some(2)),
    (DeviceTag::Cuda, MemoryClass::HostPinned, 3, Some(3)),
    (DeviceTag::OpenCl, MemoryClass::Standard, 4, Some(4)),
    (DeviceTag::Vulkan, MemoryClass::Standard, 7, Some(7)),
    (DeviceTag::Metal, MemoryClass::Standard, 8, Some(8)),
    (DeviceTag::Vpi, MemoryClass::Standard, 9, Some(9)),
    (DeviceTag::Rocm, MemoryClass::Standard, 10, Some(10)),
    (DeviceTag::Rocm, MemoryClass::HostPinned, 11, Some(11)),
    (DeviceTag::ExtDev, MemoryClass::Standard, 12, Some(12)),
    (DeviceTag::Cuda, MemoryClass::Unified, 13, Some(13)),
    (DeviceTag::OneApi, MemoryClass::Standard, 14, Some(14)),
    (DeviceTag::WebGpu, MemoryClass::Standard, 15, Some(15)),
    (DeviceTag::Hexagon, MemoryClass::Standard, 16, Some(16)),
    (DeviceTag::Maia, MemoryClass::Standard, 17, None),
    (DeviceTag::Trainium, MemoryClass::Standard, 18, None),
];

#[test]
fn bp_interop_1_mapping_is_the_table_both_ways() {
    for &(dev, class, dl, arrow) in INTEROP {
        assert_eq!(interop::to_dlpack(dev, class), Ok(dl), "{dev:?} {class:?}");
        assert_eq!(interop::from_dlpack(dl), Ok((dev, class)));
        match arrow {
            Some(a) => {
                assert_eq!(interop::to_arrow(dev, class), Ok(a));
                assert_eq!(interop::from_arrow(a), Ok((dev, class)));
            }
            None => {
                assert_eq!(
                    interop::to_arrow(dev, class),
                    Err(Error::NoInteropCode {
                        device_tag: dev,
                        memory_class: class
                    })
                );
                assert_eq!(interop::from_arrow(dl), Err(Error::UnknownInteropCode(dl)));
            }
        }
    }
    // Through a handle as well.
    let pinned = BufferHandle::with_memory_class(
        64,
        64,
        DeviceTag::Cuda,
        SyncMode::Event,
        MemoryClass::HostPinned,
    )
    .unwrap();
    assert_eq!(pinned.dlpack_device_type(), Ok(interop::KDL_CUDA_HOST));
    assert_eq!(pinned.arrow_device_type(), Ok(3));
}

#[test]
fn bp_interop_2_unlisted_pairs_and_codes_are_errors() {
    let mut unlisted = 0;
    for &dev in DeviceTag::ALL {
        for &class in MemoryClass::ALL {
            if INTEROP.iter().any(|&(d, c, ..)| d == dev && c == class) {
                continue;
            }
            unlisted += 1;
            let err = Err(Error::NoInteropCode {
                device_tag: dev,
                memory_class: class,
            });
            assert_eq!(interop::to_dlpack(dev, class), err);
            assert_eq!(interop::to_arrow(dev, class), err);
        }
    }
    assert_eq!(
        unlisted,
        DeviceTag::ALL.len() * MemoryClass::ALL.len() - INTEROP.len()
    );
    for code in [i32::MIN, -1, 0, 5, 6, 19, 1000, i32::MAX] {
        assert_eq!(
            interop::from_dlpack(code),
            Err(Error::UnknownInteropCode(code))
        );
        assert_eq!(
            interop::from_arrow(code),
            Err(Error::UnknownInteropCode(code))
        );
    }
}
