//! The file view on arbitrary bytes: `FileIndex` without and with a table,
//! `verify`, every accessor, the KV section. Never a panic; with and
//! without a table the verdicts agree (a missing table is the only extra
//! refusal), and whatever is handed out lies inside the input.
#![no_main]

use hurray_core::file::{FileErrorKind, FileIndex, FileOptions, FileView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let plain = FileView::parse(data);
    let _ = FileIndex::parse(data).map(|i| i.iter_file_order().count());
    let n = FileIndex::table_len(data).unwrap_or(0).min(1 << 20);
    let mut table = vec![0u32; n];
    let with = FileView::parse_with(data, &FileOptions::STRICT, &mut table);
    match (&plain, &with) {
        (Ok(a), Ok(b)) => assert_eq!(a.len(), b.len()),
        (Err(e), Ok(_)) => assert!(matches!(e.kind(), FileErrorKind::NeedsTable { .. })),
        (Ok(_), Err(e)) => panic!("a table refused what no table accepted: {e}"),
        (Err(_), Err(_)) => {}
    }
    let Ok(view) = with else { return };
    let range = data.as_ptr_range();
    for t in view.iter() {
        assert!(view.get(t.name()).is_some());
        for b in t.buffers() {
            assert!(b.is_empty() || range.contains(&b.as_ptr()));
        }
        let _ = t.descriptor().element_count();
    }
    assert_eq!(view.iter_file_order().count(), view.len() as usize);
    for (k, v) in view.kv().iter() {
        assert_eq!(view.kv().get(k), Some(v));
    }
});
