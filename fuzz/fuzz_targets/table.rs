//! Any bytes through the buffer-table view: never a panic; an accepted table
//! yields exactly len() handles, each re-encoding to its entry; a rejected
//! one names a real invalid entry (and every entry before it is valid).
#![no_main]

use hurray_core::{BufferHandle, BufferTable, Error};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match BufferTable::parse(data) {
        Ok(table) => {
            assert_eq!(table.len() * 16, data.len());
            let mut n = 0;
            for (h, raw) in table.iter().zip(data.chunks_exact(16)) {
                assert_eq!(&h.to_bytes()[..], raw);
                n += 1;
            }
            assert_eq!(n, table.len());
        }
        Err(Error::InvalidEntry { index, error }) => {
            let entries: Vec<&[u8; 16]> = data.chunks_exact(16).map(|c| c.try_into().unwrap()).collect();
            assert_eq!(BufferHandle::from_bytes(entries[index]), Err(error.into_error()));
            assert!(entries[..index].iter().all(|e| BufferHandle::from_bytes(e).is_ok()));
        }
        Err(Error::TableLength { len }) => assert_eq!(len % 16 != 0, true),
        Err(other) => panic!("unexpected table error {other:?}"),
    }
});
