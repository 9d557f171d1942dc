//! Any bytes through the single-handle decoder: never a panic; an accepted
//! handle re-encodes to the same 16 bytes.
#![no_main]

use hurray_core::{BufferHandle, BufferHandleEntry};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = data.first_chunk::<16>() else { return };
    let decoded = BufferHandle::from_bytes(bytes);
    // The raw entry and the value decoder agree.
    let raw = BufferHandleEntry::from_array(*bytes).decode();
    assert_eq!(decoded.is_ok(), raw.is_ok());
    if let Ok(h) = decoded {
        assert_eq!(&h.to_bytes(), bytes);
        assert!(h.alignment().is_power_of_two());
        assert!(h.is_empty() || h.alignment() >= hurray_core::MIN_BUFFER_ALIGNMENT);
    }
});
