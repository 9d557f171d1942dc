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
    }
    if let Some(bytes) = data.first_chunk::<16>() {
        if let Ok(h) = BufferHandle::from_bytes(bytes) {
            assert_eq!(BufferHandle::from_bytes(&h.to_bytes()), Ok(h));
        }
    }
});
