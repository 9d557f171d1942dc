//! Any bytes through the buffer-table view: never a panic; an accepted table
//! yields exactly len() colocated handles, each re-encoding to its entry; a
//! rejection names the first entry that is invalid or not colocated, at its
//! offset, and every entry before it is fine.
#![no_main]

use hurray_core::{BufferHandle, BufferTable, DescriptorErrorKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let entries: Vec<&[u8; 16]> = data
        .chunks_exact(16)
        .map(|c| c.try_into().unwrap())
        .collect();
    let pair = |e: &[u8; 16]| (e[12], e[14]);
    let fine = |e: &&[u8; 16]| BufferHandle::from_bytes(e).is_ok() && pair(e) == pair(entries[0]);
    match BufferTable::parse(data) {
        Ok(table) => {
            assert_eq!(table.len() * 16, data.len());
            assert_eq!(table.as_bytes(), data);
            assert!(
                table
                    .iter()
                    .map(|h| h.to_bytes())
                    .eq(entries.iter().map(|e| **e))
            );
            assert!(entries.iter().all(fine));
            assert_eq!(table.get(table.len()), None);
        }
        Err(e) => match e.kind() {
            DescriptorErrorKind::TableLength { len } => {
                assert_eq!(len as usize, data.len());
                assert_ne!(len % 16, 0);
            }
            DescriptorErrorKind::Buffer { index, error } => {
                let i = index as usize;
                assert_eq!(e.offset() as usize, 16 * i);
                assert_eq!(BufferHandle::from_bytes(entries[i]), Err(error));
                assert!(entries[..i].iter().all(fine));
            }
            DescriptorErrorKind::NotColocated { index } => {
                let i = index as usize;
                assert_eq!(e.offset() as usize, 16 * i);
                assert!(BufferHandle::from_bytes(entries[i]).is_ok());
                assert_ne!(pair(entries[i]), pair(entries[0]));
                assert!(entries[..i].iter().all(fine));
            }
            other => panic!("unexpected table error {other:?}"),
        },
    }
});
