//! Our file view against the format's reference reader (`hurray-io` 0.1.0):
//! when we accept, the reference reads every tensor to the same descriptor
//! and buffers; when the reference accepts and we refuse, our reason is one
//! of the documented stricter cases (`docs/spec/README.md` § Files).
//! Inputs that would make the reference itself panic or allocate without
//! bound (its known faults: an alignment of 0, a section larger than the
//! file, an index entry count it reserves memory for before checking it
//! against the index's length) are not given to it.
#![no_main]

use hurray_core::file::{FileErrorKind as K, FileIndex, FileOptions, FileView};
use libfuzzer_sys::fuzz_target;

fn le64(d: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(d[at..at + 8].try_into().unwrap())
}

/// Whether the reference can be run on `data` without tripping its own
/// known faults.
fn reference_can_run(data: &[u8]) -> bool {
    if data.len() < 104 {
        return true;
    }
    let align = u32::from_le_bytes(data[16..20].try_into().unwrap());
    let t = data.len() - 40;
    let (io, il, ko) = (le64(data, t), le64(data, t + 8), le64(data, t + 16));
    let kl = u64::from(u32::from_le_bytes(data[t + 24..t + 28].try_into().unwrap()));
    let len = data.len() as u64;
    let index_fits = io.checked_add(il).is_some_and(|e| e <= len);
    // `Vec::with_capacity(count)` before a single entry is read: a count
    // larger than the index's bytes aborts it with a capacity overflow.
    let count_fits = !index_fits || il < 8 || le64(data, io as usize) <= il;
    let kv_fits = ko.checked_add(kl).is_some_and(|e| e <= len);
    align.is_power_of_two()
        && index_fits
        && count_fits
        && kv_fits
        && (kl == 0 || kv_counts_fit(&data[ko as usize..(ko + kl) as usize]))
}

/// Whether the reference's KV reader reserves no more entries than `kv`
/// has bytes: it calls `Vec::with_capacity` on the section's entry count and
/// on each array's element count before reading them (a hostile count made
/// it abort with an out-of-memory in this target's first run). Walks the
/// section as the reference does; stops (safe) where the reference would
/// stop with an error.
fn kv_counts_fit(kv: &[u8]) -> bool {
    fn take<'a>(kv: &'a [u8], pos: &mut usize, n: usize) -> Option<&'a [u8]> {
        let s = kv.get(*pos..pos.checked_add(n)?)?;
        *pos += n;
        Some(s)
    }
    fn u32_at(kv: &[u8], pos: &mut usize) -> Option<usize> {
        Some(u32::from_le_bytes(take(kv, pos, 4)?.try_into().ok()?) as usize)
    }
    /// `Some(false)`: a count the reference would reserve beyond the bytes.
    fn value(kv: &[u8], pos: &mut usize, tag: u8) -> Option<bool> {
        match tag {
            0x01 | 0x06 => {
                let n = u32_at(kv, pos)?;
                take(kv, pos, n)?;
            }
            0x02..=0x04 => drop(take(kv, pos, 8)?),
            0x05 => drop(take(kv, pos, 1)?),
            0x07 => {
                let elem = *take(kv, pos, 1)?.first()?;
                if elem == 0x07 || elem > 0x06 {
                    return None;
                }
                let n = u32_at(kv, pos)?;
                if n > kv.len() {
                    return Some(false);
                }
                for _ in 0..n {
                    if !value(kv, pos, elem)? {
                        return Some(false);
                    }
                }
            }
            _ => return None,
        }
        Some(true)
    }
    let mut pos = 0;
    let Some(count) = u32_at(kv, &mut pos) else {
        return true;
    };
    if count > kv.len() {
        return false;
    }
    for _ in 0..count {
        let Some(n) = take(kv, &mut pos, 2).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
        else {
            return true;
        };
        let (Some(_), Some(tag)) = (take(kv, &mut pos, n), take(kv, &mut pos, 1)) else {
            return true;
        };
        match value(kv, &mut pos, tag[0]) {
            Some(true) => {}
            Some(false) => return false,
            None => return true,
        }
    }
    true
}

fuzz_target!(|data: &[u8]| {
    let n = FileIndex::table_len(data).unwrap_or(0).min(1 << 20);
    let mut table = vec![0u32; n];
    let ours = FileView::parse_with(data, &FileOptions::STRICT, &mut table);
    if !reference_can_run(data) {
        assert!(
            ours.is_err(),
            "we accepted what the guard keeps from the reference"
        );
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let opened = reference_io::file::FileReader::open(std::io::Cursor::new(data)).await;
        match (&ours, opened) {
            (Ok(view), Ok(mut r)) => {
                for t in view.iter() {
                    let theirs = r
                        .read_tensor(t.name())
                        .await
                        .expect("reference reads our tensor");
                    assert_eq!(
                        theirs.descriptor.encode().unwrap(),
                        t.descriptor().as_bytes()
                    );
                    let bufs: Vec<&[u8]> = t.buffers().collect();
                    assert_eq!(theirs.buffers.len(), bufs.len());
                    for (a, b) in theirs.buffers.iter().zip(bufs) {
                        assert_eq!(&a[..], b);
                    }
                }
            }
            (Ok(_), Err(e)) => panic!("we accept a file the reference refuses: {e}"),
            (Err(e), Ok(_)) => {
                // Documented stricter cases (docs/spec/README.md § Files).
                let stricter = matches!(
                    e.kind(),
                    K::Truncated { .. }
                        | K::UnsupportedVersion { .. }
                        | K::ReservedBytes
                        | K::BadAlignment(_)
                        | K::BadFirstDescriptorOffset(_)
                        | K::SectionOutOfBounds(_)
                        | K::SectionMisaligned(_)
                        | K::KvLocation
                        | K::CrcWithoutFlag(_)
                        | K::IndexLength
                        | K::EmptyName
                        | K::NotUtf8
                        | K::EntryFlags(_)
                        | K::NotSorted
                        | K::DescriptorPlacement
                        | K::DescriptorLength { .. }
                        | K::Descriptor(_)
                        | K::DataPlacement
                        | K::DataLength { .. }
                        | K::Composite(_)
                        | K::KvValueTag(_)
                        | K::KvLength
                        | K::TooManyKvEntries { .. }
                        | K::NeedsTable { .. }
                );
                assert!(stricter, "refused for an undocumented reason: {e}");
            }
            (Err(_), Err(_)) => {}
        }
    });
});
