//! decode -> encode -> decode over handles and tables: same value, same bytes.
#![no_main]

use hurray_core::{BufferHandle, BufferTable};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(table) = BufferTable::parse(data) {
        let handles: Vec<BufferHandle> = table.iter().collect();
        let mut out = vec![0u8; data.len()];
        assert_eq!(BufferTable::encode(&handles, &mut out), Ok(data.len()));
        assert_eq!(out, data);
        let again = BufferTable::parse(&out).expect("re-encoded table parses");
        assert!(again.iter().eq(handles.iter().copied()));
        // One byte short: refused, nothing written.
        if let Some(short) = data.len().checked_sub(1) {
            let mut small = vec![0xA5u8; short];
            assert!(BufferTable::encode(&handles, &mut small).is_err());
            assert!(small.iter().all(|&b| b == 0xA5));
        }
    }
    if let Some(bytes) = data.first_chunk::<16>()
        && let Ok(h) = BufferHandle::from_bytes(bytes)
    {
        assert_eq!(BufferHandle::from_bytes(&h.to_bytes()), Ok(h));
        assert_eq!(BufferHandle::try_from(&h.to_entry()).ok(), Some(h));
    }
});
