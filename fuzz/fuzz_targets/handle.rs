//! Any bytes through the single-handle decoder: never a panic; it accepts
//! exactly what the spec's rules (restated here independently) accept, a
//! rejection names a rule the bytes really break, and an accepted handle
//! re-encodes to the same 16 bytes.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use hurray_core::{BufferHandle, BufferHandleEntry, DeviceTag, Error, SyncMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = data.first_chunk::<16>() else {
        return;
    };
    let decoded = BufferHandle::from_bytes(bytes);
    // The raw entry and the value decoder agree.
    assert_eq!(BufferHandleEntry::from_array(*bytes).decode(), decoded);
    // The spec's rules, restated, agree on acceptance.
    let violation = common::handle_violation(bytes);
    assert_eq!(
        decoded.is_ok(),
        violation.is_none(),
        "{bytes:02x?}: {decoded:?} vs {violation:?}"
    );
    match decoded {
        Ok(h) => {
            assert_eq!(&h.to_bytes(), bytes);
            assert!(h.device_tag().allows(h.memory_class()));
            assert!(h.device_tag() != DeviceTag::Cpu || h.sync_mode() == SyncMode::ProducerSynced);
            assert_eq!(
                BufferHandle::with_memory_class(
                    h.byte_size(),
                    h.alignment(),
                    h.device_tag(),
                    h.sync_mode(),
                    h.memory_class()
                ),
                Ok(h)
            );
        }
        // The error carries the raw byte it names.
        Err(Error::InvalidDeviceTag(c)) => assert_eq!(c, bytes[12]),
        Err(Error::InvalidSyncMode(c)) => assert_eq!(c, bytes[13]),
        Err(Error::InvalidMemoryClass(c)) => assert_eq!(c, bytes[14]),
        Err(Error::ReservedNonZero(c)) => assert_eq!(c, bytes[15]),
        Err(Error::MemoryClassNotAllowed {
            device_tag,
            memory_class,
        }) => {
            assert_eq!(
                (device_tag.code(), memory_class.code()),
                (bytes[12], bytes[14])
            );
            assert!(!device_tag.allows(memory_class));
        }
        Err(
            Error::AlignmentNotPowerOfTwo { alignment }
            | Error::AlignmentBelowMinimum { alignment, .. },
        ) => {
            assert_eq!(alignment.to_le_bytes(), bytes[8..12]);
        }
        Err(other) => panic!("unexpected handle error {other:?}"),
    }
});
