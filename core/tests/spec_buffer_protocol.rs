//! One test per MUST of `docs/spec/buffer-protocol.md`, named after its
//! identifier. Every input is a literal or is assembled by `common::entry`
//! from the spec's field table, never by the crate's encoder.

use hurray_core::{
    BufferHandle, BufferHandleEntry, BufferTable, DescriptorErrorKind, DeviceTag, Error,
    MIN_BUFFER_ALIGNMENT, MemoryClass, SyncMode,
    interop::{self, InteropError},
};

mod common;
use common::{Desc, accept, cpu, entry, lay, reject, ty};

// --- an independent model of the handle rules --------------------------------------

/// Per-device validity of the four named memory classes, typed from the
/// spec's table (rows: device 0x00..=0x08; columns: Standard, HostPinned,
/// Unified, Peer).
const VALID: [[bool; 4]; 9] = [
    [true, true, true, false],   // CPU
    [true, true, true, true],    // CUDA
    [true, true, true, true],    // ROCm
    [true, true, true, false],   // Metal
    [true, true, true, true],    // Vulkan
    [true, false, false, false], // WebGPU
    [true, true, true, false],   // Hexagon
    [true, true, true, true],    // Level Zero
    [true, true, true, false],   // OpenCL
];

const fn private(code: u8) -> bool {
    matches!(code, 0xF0..=0xFE)
}

/// The spec's rules for one entry, in the order the spec fixes, written
/// without the crate's code tables.
fn model(b: &[u8; 16]) -> Result<(), Error> {
    let size = u64::from_le_bytes(b[0..8].try_into().unwrap());
    let align = u32::from_le_bytes(b[8..12].try_into().unwrap());
    let (dev, sync, class, reserved) = (b[12], b[13], b[14], b[15]);
    if !(dev <= 0x08 || private(dev)) {
        return Err(Error::InvalidDeviceTag(dev));
    }
    if sync > 2 {
        return Err(Error::InvalidSyncMode(sync));
    }
    if !(class <= 0x03 || private(class)) {
        return Err(Error::InvalidMemoryClass(class));
    }
    if reserved != 0 {
        return Err(Error::ReservedNonZero(reserved));
    }
    if align == 0 || align & (align - 1) != 0 {
        return Err(Error::AlignmentNotPowerOfTwo { alignment: align });
    }
    if size > 0 && align < 64 {
        return Err(Error::AlignmentBelowMinimum {
            alignment: align,
            minimum: 64,
        });
    }
    if dev == 0 && sync != 0 {
        return Err(Error::InvalidSyncMode(sync));
    }
    let allowed = match (private(dev), private(class)) {
        (true, true) => true,
        (true, false) => class == 0,
        (false, true) => false,
        (false, false) => VALID[dev as usize][class as usize],
    };
    if !allowed {
        return Err(Error::MemoryClassNotAllowed {
            device_tag: DeviceTag::from_code(dev).unwrap(),
            memory_class: MemoryClass::from_code(class).unwrap(),
        });
    }
    Ok(())
}

// --- Buffer Handle Entry -------------------------------------------------------------

#[test]
fn bp_entry_1_test_parse_and_test_emit_field_offsets() {
    assert_eq!(size_of::<BufferHandleEntry>(), 16);
    assert_eq!(align_of::<BufferHandleEntry>(), 1);
    // byte_size 0x0102030405060708, alignment 0x1000, ROCm, consumer-stream,
    // peer memory, reserved 0: every multi-byte field little-endian.
    let bytes = [
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00, 0x10, 0x00, 0x00, 0x02, 0x02, 0x03,
        0x00,
    ];
    let h = BufferHandle::from_bytes(&bytes).unwrap();
    assert_eq!(h.byte_size(), 0x0102_0304_0506_0708);
    assert_eq!(h.alignment(), 0x1000);
    assert_eq!(h.device_tag(), DeviceTag::Rocm);
    assert_eq!(h.sync_mode(), SyncMode::ConsumerStream);
    assert_eq!(h.memory_class(), MemoryClass::PeerToPeer);
    let built = BufferHandle::with_memory_class(
        0x0102_0304_0506_0708,
        0x1000,
        DeviceTag::Rocm,
        SyncMode::ConsumerStream,
        MemoryClass::PeerToPeer,
    )
    .unwrap();
    assert_eq!(built.to_bytes(), bytes);
    // Swapping any two code bytes gives a different handle: the offsets matter.
    let mut swapped = bytes;
    swapped.swap(12, 14);
    assert_ne!(BufferHandle::from_bytes(&swapped), Ok(h));
}

/// All 2^24 values of the three code bytes against the model, with a valid
/// (size, alignment); a sample of them with the other shapes that decide the
/// alignment rules and with a non-zero reserved byte; a one-entry table must
/// agree with the handle decoder. Under Miri, a sample of each.
#[test]
fn bp_entry_2_exhaustive_code_bytes_match_the_model() {
    let (step, sample) = if cfg!(miri) {
        (262_139, 262_139)
    } else {
        (1, 97)
    };
    let mut accepted = 0u32;
    let mut checked = 0u32;
    for codes in (0u32..1 << 24).step_by(step) {
        let [dev, sync, class, _] = codes.to_le_bytes();
        let b = entry(4096, 64, dev, sync, class, 0);
        let got = BufferHandle::from_bytes(&b);
        assert_eq!(got.map(|_| ()), model(&b), "{b:02x?}");
        checked += 1;
        if let Ok(h) = got {
            accepted += 1;
            assert_eq!(h.to_bytes(), b);
        }
        if codes % sample == 0 {
            for (size, align, reserved) in [
                (0u64, 1u32, 0u8),
                (5, 3, 0),
                (100, 32, 0),
                (1, 1 << 31, 0),
                (64, 64, 1),
            ] {
                let b = entry(size, align, dev, sync, class, reserved);
                let got = BufferHandle::from_bytes(&b);
                assert_eq!(got.map(|_| ()), model(&b), "{b:02x?}");
                assert_eq!(BufferTable::parse(&b).is_ok(), got.is_ok(), "{b:02x?}");
            }
        }
    }
    assert!(checked > 60);
    if !cfg!(miri) {
        // Named pairs with sync 0: the 28 valid (device, class) pairs, plus
        // 8 named devices (not CPU) x 2 other sync modes x their pairs, plus
        // 15 private devices x (Standard + 15 private classes) x 3 sync modes.
        let named: u32 = VALID.iter().flatten().filter(|&&v| v).count() as u32;
        let cpu: u32 = VALID[0].iter().filter(|&&v| v).count() as u32;
        assert_eq!(accepted, named * 3 - cpu * 2 + 15 * 16 * 3);
    }
}

#[test]
fn bp_entry_3_reserved_byte_must_be_zero() {
    assert!(BufferHandle::from_bytes(&entry(64, 64, 1, 1, 0, 0)).is_ok());
    for r in [0x01u8, 0x80, 0xFF] {
        assert_eq!(
            BufferHandle::from_bytes(&entry(64, 64, 1, 1, 0, r)),
            Err(Error::ReservedNonZero(r))
        );
    }
    // A writer always writes 0 there.
    assert_eq!(
        BufferHandle::new(64, 64, DeviceTag::Cuda, SyncMode::Event)
            .unwrap()
            .to_bytes()[15],
        0
    );
}

#[test]
fn bp_entry_4_first_broken_rule_in_spec_order() {
    // Each row breaks its own rule and every later one; the first is reported.
    let cases: [([u8; 16], Error); 8] = [
        (entry(1, 3, 0x09, 7, 0x04, 1), Error::InvalidDeviceTag(0x09)),
        (entry(1, 3, 0x00, 7, 0x04, 1), Error::InvalidSyncMode(7)),
        (
            entry(1, 3, 0x00, 1, 0x04, 1),
            Error::InvalidMemoryClass(0x04),
        ),
        (entry(1, 3, 0x00, 1, 0x03, 1), Error::ReservedNonZero(1)),
        (
            entry(1, 3, 0x00, 1, 0x03, 0),
            Error::AlignmentNotPowerOfTwo { alignment: 3 },
        ),
        (
            entry(1, 32, 0x00, 1, 0x03, 0),
            Error::AlignmentBelowMinimum {
                alignment: 32,
                minimum: 64,
            },
        ),
        (entry(1, 64, 0x00, 1, 0x03, 0), Error::InvalidSyncMode(1)),
        (
            entry(1, 64, 0x00, 0, 0x03, 0),
            Error::MemoryClassNotAllowed {
                device_tag: DeviceTag::Cpu,
                memory_class: MemoryClass::PeerToPeer,
            },
        ),
    ];
    for (b, e) in cases {
        assert_eq!(BufferHandle::from_bytes(&b), Err(e), "{b:02x?}");
    }
    assert!(BufferHandle::from_bytes(&entry(1, 64, 0x00, 0, 0x02, 0)).is_ok());
}

#[test]
fn bp_entry_5_round_trip_is_exact() {
    for b in [
        entry(0, 1, 0, 0, 0, 0),
        entry(u64::MAX, 1 << 31, 0x01, 2, 3, 0),
        entry(4096, 4096, 0xF3, 1, 0xF9, 0),
        entry(64, 64, 0x05, 1, 0, 0),
    ] {
        let h = BufferHandle::from_bytes(&b).unwrap();
        assert_eq!(h.to_bytes(), b);
        assert_eq!(BufferHandle::from_bytes(&h.to_bytes()), Ok(h));
        assert_eq!(BufferHandle::try_from(b), Ok(h));
    }
    assert_eq!(
        BufferHandle::from_bytes(&entry(64, 64, 0xFF, 0, 0, 0)),
        Err(Error::InvalidDeviceTag(0xFF))
    );
}

// --- Alignment ---------------------------------------------------------------------

#[test]
fn bp_align_1_alignment_must_be_power_of_two() {
    for align in [0u32, 3, 5, 6, 7, 65, 96, 4095, u32::MAX] {
        assert_eq!(
            BufferHandle::from_bytes(&entry(0, align, 1, 0, 0, 0)),
            Err(Error::AlignmentNotPowerOfTwo { alignment: align }),
            "alignment {align}"
        );
    }
    for shift in 6..32 {
        assert!(BufferHandle::from_bytes(&entry(1, 1 << shift, 1, 0, 0, 0)).is_ok());
    }
}

#[test]
fn bp_align_2_non_empty_buffer_needs_64() {
    for align in [1u32, 2, 4, 8, 16, 32] {
        assert_eq!(
            BufferHandle::from_bytes(&entry(1, align, 1, 0, 0, 0)),
            Err(Error::AlignmentBelowMinimum {
                alignment: align,
                minimum: MIN_BUFFER_ALIGNMENT
            })
        );
    }
    assert!(BufferHandle::from_bytes(&entry(1, 64, 1, 0, 0, 0)).is_ok());
    assert!(BufferHandle::from_bytes(&entry(u64::MAX, 1 << 31, 1, 0, 0, 0)).is_ok());
}

#[test]
fn bp_align_3_empty_buffer_accepts_any_power_of_two() {
    for shift in 0..32 {
        let h = BufferHandle::from_bytes(&entry(0, 1 << shift, 0, 0, 0, 0)).unwrap();
        assert!(h.is_empty());
        assert_eq!(h.alignment(), 1 << shift);
    }
    assert_eq!(
        BufferHandle::from_bytes(&entry(0, 0, 0, 0, 0, 0)),
        Err(Error::AlignmentNotPowerOfTwo { alignment: 0 })
    );
}

#[test]
fn bp_align_4_base_address_must_be_aligned() {
    let h = BufferHandle::new(256, 256, DeviceTag::Cuda, SyncMode::Event).unwrap();
    assert!(h.is_address_aligned(0));
    assert!(h.is_address_aligned(0x7f00_0000_0100));
    for off in [1u64, 64, 128, 255] {
        assert!(!h.is_address_aligned(0x1000 + off), "offset {off}");
    }
    let e = BufferHandle::empty(DeviceTag::Cuda);
    assert!(e.is_address_aligned(0) && e.is_address_aligned(3));
}

// --- Device tags ------------------------------------------------------------------

#[test]
fn bp_device_1_named_device_codes() {
    let table = [
        (0x00, DeviceTag::Cpu),
        (0x01, DeviceTag::Cuda),
        (0x02, DeviceTag::Rocm),
        (0x03, DeviceTag::Metal),
        (0x04, DeviceTag::Vulkan),
        (0x05, DeviceTag::WebGpu),
        (0x06, DeviceTag::Hexagon),
        (0x07, DeviceTag::LevelZero),
        (0x08, DeviceTag::OpenCl),
    ];
    for (code, tag) in table {
        let h = BufferHandle::from_bytes(&entry(0, 1, code, 0, 0, 0)).unwrap();
        assert_eq!(h.device_tag(), tag);
        assert_eq!(tag.code(), code);
    }
    assert_eq!(DeviceTag::NAMED, table.map(|(_, t)| t).as_slice());
    // A DLPack number is not a device tag: kDLCPU (1) is CUDA here.
    assert_eq!(DeviceTag::from_code(1), Some(DeviceTag::Cuda));
}

#[test]
fn bp_device_2_reserved_and_invalid_tags_rejected() {
    for code in (0x09..=0xEFu8).chain([0xFF]) {
        assert_eq!(
            BufferHandle::from_bytes(&entry(0, 1, code, 0, 0, 0)),
            Err(Error::InvalidDeviceTag(code)),
            "code {code:#x}"
        );
    }
    assert!(BufferHandle::from_bytes(&entry(0, 1, 0x08, 0, 0, 0)).is_ok());
}

#[test]
fn bp_device_3_private_tags_are_carried() {
    for code in 0xF0..=0xFEu8 {
        let b = entry(64, 64, code, 2, 0, 0);
        let h = BufferHandle::from_bytes(&b).unwrap();
        assert_eq!(h.device_tag(), DeviceTag::Private(code));
        assert_eq!(h.to_bytes(), b);
    }
    // A hand-built private value with a public code is refused by the
    // constructors.
    assert_eq!(
        BufferHandle::new(64, 64, DeviceTag::Private(0x10), SyncMode::Event),
        Err(Error::InvalidDeviceTag(0x10))
    );
}

// --- Sync modes --------------------------------------------------------------------

#[test]
fn bp_sync_1_unknown_sync_modes_rejected() {
    for code in 0..=255u8 {
        let r = BufferHandle::from_bytes(&entry(64, 64, 0x01, code, 0, 0));
        match code {
            0..=2 => assert_eq!(r.unwrap().sync_mode().code(), code),
            _ => assert_eq!(r, Err(Error::InvalidSyncMode(code))),
        }
    }
}

#[test]
fn bp_sync_2_cpu_buffers_are_producer_synced() {
    assert!(BufferHandle::from_bytes(&entry(64, 64, 0x00, 0, 0, 0)).is_ok());
    for sync in [1u8, 2] {
        assert_eq!(
            BufferHandle::from_bytes(&entry(64, 64, 0x00, sync, 0, 0)),
            Err(Error::InvalidSyncMode(sync))
        );
        // Every other device may use every mode.
        for dev in (0x01..=0x08u8).chain([0xF0]) {
            assert!(BufferHandle::from_bytes(&entry(64, 64, dev, sync, 0, 0)).is_ok());
        }
    }
}

// --- Memory classes ------------------------------------------------------------------

#[test]
fn bp_class_1_reserved_and_invalid_classes_rejected() {
    for (code, class) in [
        (0u8, MemoryClass::Standard),
        (1, MemoryClass::HostPinned),
        (2, MemoryClass::Unified),
        (3, MemoryClass::PeerToPeer),
    ] {
        let h = BufferHandle::from_bytes(&entry(64, 64, 0x01, 0, code, 0)).unwrap();
        assert_eq!(h.memory_class(), class);
    }
    for code in (0x04..=0xEFu8).chain([0xFF]) {
        assert_eq!(
            BufferHandle::from_bytes(&entry(64, 64, 0x01, 0, code, 0)),
            Err(Error::InvalidMemoryClass(code))
        );
    }
}

#[test]
fn bp_class_2_private_class_needs_private_device() {
    for class in 0xF0..=0xFEu8 {
        let h = BufferHandle::from_bytes(&entry(64, 64, 0xF7, 0, class, 0)).unwrap();
        assert_eq!(h.memory_class(), MemoryClass::Private(class));
        for dev in 0x00..=0x08u8 {
            assert_eq!(
                BufferHandle::from_bytes(&entry(64, 64, dev, 0, class, 0)),
                Err(Error::MemoryClassNotAllowed {
                    device_tag: DeviceTag::from_code(dev).unwrap(),
                    memory_class: MemoryClass::Private(class),
                })
            );
        }
    }
    // A private device takes Standard or a private class, no named other.
    assert!(BufferHandle::from_bytes(&entry(64, 64, 0xF7, 0, 0, 0)).is_ok());
    for class in 1..=3u8 {
        assert_eq!(
            BufferHandle::from_bytes(&entry(64, 64, 0xF7, 0, class, 0)),
            Err(Error::MemoryClassNotAllowed {
                device_tag: DeviceTag::Private(0xF7),
                memory_class: MemoryClass::from_code(class).unwrap(),
            })
        );
    }
}

#[test]
fn bp_class_3_per_device_validity_table() {
    for dev in 0..=8u8 {
        for class in 0..=3u8 {
            let r = BufferHandle::from_bytes(&entry(64, 64, dev, 0, class, 0));
            if VALID[dev as usize][class as usize] {
                assert!(r.is_ok(), "device {dev} class {class}");
            } else {
                assert_eq!(
                    r,
                    Err(Error::MemoryClassNotAllowed {
                        device_tag: DeviceTag::from_code(dev).unwrap(),
                        memory_class: MemoryClass::from_code(class).unwrap(),
                    }),
                    "device {dev} class {class}"
                );
            }
            let allowed = DeviceTag::from_code(dev)
                .unwrap()
                .allows(MemoryClass::from_code(class).unwrap());
            assert_eq!(allowed, VALID[dev as usize][class as usize]);
        }
    }
}

#[test]
fn bp_class_4_writer_default_is_standard() {
    let h = BufferHandle::new(64, 64, DeviceTag::Metal, SyncMode::Event).unwrap();
    assert_eq!(h.memory_class(), MemoryClass::Standard);
    assert_eq!(h.to_bytes()[14], 0);
    assert_eq!(BufferHandle::empty(DeviceTag::Vulkan).to_bytes()[14], 0);
    assert_eq!(MemoryClass::default(), MemoryClass::Standard);
}

// --- Colocation ----------------------------------------------------------------------

#[test]
fn bp_coloc_1_buffers_share_device_and_class() {
    // A table: entry 1 on another device, entry 2 with another class.
    let same = [entry(64, 64, 1, 1, 1, 0), entry(0, 1, 1, 0, 1, 0)].concat();
    assert_eq!(BufferTable::parse(&same).unwrap().len(), 2);
    let other_dev = [entry(64, 64, 1, 1, 0, 0), entry(64, 64, 2, 1, 0, 0)].concat();
    let e = BufferTable::parse(&other_dev).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (16, DescriptorErrorKind::NotColocated { index: 1 })
    );
    let other_class = [
        entry(64, 64, 1, 1, 0, 0),
        entry(64, 64, 1, 1, 0, 0),
        entry(64, 64, 1, 1, 2, 0),
    ]
    .concat();
    let e = BufferTable::parse(&other_class).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (32, DescriptorErrorKind::NotColocated { index: 2 })
    );
    // Past the fast path's chunk (64 entries) too.
    let mut many = vec![entry(64, 64, 4, 1, 0, 0); 130];
    assert!(BufferTable::parse(&many.concat()).is_ok());
    many[129][12] = 3;
    let e = BufferTable::parse(&many.concat()).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (129 * 16, DescriptorErrorKind::NotColocated { index: 129 })
    );

    // The same rule inside a descriptor: per-channel quantized int8 [4, 2]
    // whose scale buffer lives on another device.
    let d = Desc::new(ty::I8, lay::ROW, &[4, 2])
        .buffers(&[cpu(8), cpu(16)])
        .quant(common::q_channel(1, 0, 1, common::NO_BUF, ty::F32));
    accept(&d.bytes());
    let mut bad = d.clone();
    bad.buffers[1] = entry(16, 64, 1, 0, 0, 0);
    reject(
        &bad.bytes(),
        bad.entry_at(1),
        DescriptorErrorKind::NotColocated { index: 1 },
    );
}

#[test]
fn bp_table_1_table_length_and_first_bad_entry() {
    assert!(BufferTable::parse(&[]).unwrap().is_empty());
    for len in [1usize, 15, 17, 31] {
        let bytes = vec![0u8; len];
        let e = BufferTable::parse(&bytes).unwrap_err();
        assert_eq!(
            (e.offset(), e.kind()),
            (
                (len / 16 * 16) as u32,
                DescriptorErrorKind::TableLength { len: len as u64 }
            )
        );
    }
    let bytes = [
        entry(64, 64, 1, 0, 0, 0),
        entry(64, 64, 1, 0, 0, 0),
        entry(64, 64, 1, 9, 0, 0),
        entry(64, 64, 0xFF, 0, 0, 0),
    ]
    .concat();
    let e = BufferTable::parse(&bytes).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (
            32,
            DescriptorErrorKind::Buffer {
                index: 2,
                error: Error::InvalidSyncMode(9)
            }
        )
    );
    let table = BufferTable::parse(&bytes[..32]).unwrap();
    assert_eq!(table.as_bytes(), &bytes[..32]);
    assert_eq!(table.iter().count(), 2);
}

// --- DLPack / Arrow -----------------------------------------------------------------

/// The export table as written in the spec: (device, class) -> DLPack code.
fn export_table() -> Vec<(DeviceTag, MemoryClass, i32)> {
    use DeviceTag as D;
    use MemoryClass as M;
    vec![
        (D::Cpu, M::Standard, 1),
        (D::Cpu, M::HostPinned, 1),
        (D::Cpu, M::Unified, 1),
        (D::Cuda, M::Standard, 2),
        (D::Cuda, M::HostPinned, 3),
        (D::Cuda, M::Unified, 13),
        (D::Cuda, M::PeerToPeer, 2),
        (D::Rocm, M::Standard, 10),
        (D::Rocm, M::HostPinned, 11),
        (D::Rocm, M::Unified, 10),
        (D::Rocm, M::PeerToPeer, 10),
        (D::Metal, M::Standard, 8),
        (D::Metal, M::HostPinned, 8),
        (D::Metal, M::Unified, 8),
        (D::Vulkan, M::Standard, 7),
        (D::Vulkan, M::HostPinned, 7),
        (D::Vulkan, M::Unified, 7),
        (D::Vulkan, M::PeerToPeer, 7),
        (D::WebGpu, M::Standard, 15),
        (D::Hexagon, M::Standard, 16),
        (D::Hexagon, M::HostPinned, 16),
        (D::Hexagon, M::Unified, 16),
        (D::LevelZero, M::Standard, 14),
        (D::LevelZero, M::HostPinned, 14),
        (D::LevelZero, M::Unified, 14),
        (D::LevelZero, M::PeerToPeer, 14),
        (D::OpenCl, M::Standard, 4),
        (D::OpenCl, M::HostPinned, 4),
        (D::OpenCl, M::Unified, 4),
    ]
}

#[test]
fn bp_interop_1_export_table() {
    let table = export_table();
    // The table lists exactly the valid named pairs.
    assert_eq!(table.len(), VALID.iter().flatten().filter(|&&v| v).count());
    for (dev, class, code) in table {
        let h =
            BufferHandle::with_memory_class(64, 64, dev, SyncMode::ProducerSynced, class).unwrap();
        assert_eq!(h.dlpack_device_type(), Ok(code), "{dev:?} {class:?}");
        assert_eq!(h.arrow_device_type(), Ok(code), "{dev:?} {class:?}");
    }
    for (dev, class) in [
        (DeviceTag::Private(0xF0), MemoryClass::Standard),
        (DeviceTag::Private(0xF0), MemoryClass::Private(0xF1)),
    ] {
        let h = BufferHandle::with_memory_class(64, 64, dev, SyncMode::Event, class).unwrap();
        let err = Err(InteropError::NoDeviceCode {
            device_tag: dev,
            memory_class: class,
        });
        assert_eq!(h.dlpack_device_type(), err);
        assert_eq!(h.arrow_device_type(), err);
    }
}

#[test]
fn bp_interop_2_import_table() {
    use DeviceTag as D;
    use MemoryClass as M;
    let table = [
        (1, D::Cpu, M::Standard),
        (2, D::Cuda, M::Standard),
        (3, D::Cuda, M::HostPinned),
        (4, D::OpenCl, M::Standard),
        (7, D::Vulkan, M::Standard),
        (8, D::Metal, M::Standard),
        (10, D::Rocm, M::Standard),
        (11, D::Rocm, M::HostPinned),
        (13, D::Cuda, M::Unified),
        (14, D::LevelZero, M::Standard),
        (15, D::WebGpu, M::Standard),
        (16, D::Hexagon, M::Standard),
    ];
    for code in -3..40 {
        let want = table
            .iter()
            .find(|r| r.0 == code)
            .map(|&(_, d, c)| (d, c))
            .ok_or(InteropError::UnknownDeviceCode(code));
        assert_eq!(interop::from_dlpack(code), want, "code {code}");
        assert_eq!(interop::from_arrow(code), want, "code {code}");
        // Import then export returns the code.
        if let Ok((d, c)) = want {
            assert_eq!(interop::to_dlpack(d, c), Ok(code));
        }
    }
    for code in [i32::MIN, i32::MAX] {
        assert_eq!(
            interop::from_dlpack(code),
            Err(InteropError::UnknownDeviceCode(code))
        );
        assert_eq!(
            interop::from_arrow(code),
            Err(InteropError::UnknownDeviceCode(code))
        );
    }
}
