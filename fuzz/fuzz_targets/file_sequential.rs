//! The sequential reader on arbitrary bytes, fed in chunks whose size the
//! first input byte picks: never a panic, and the same events and the same
//! verdict as when the whole input is fed at once.
#![no_main]

use hurray_core::file::{FileError, SeqEvent, SequentialReader};
use libfuzzer_sys::fuzz_target;

/// Events as comparable values, the data concatenated per tensor.
fn run(data: &[u8], chunk: usize, end: Option<u64>) -> (Vec<(u8, u64, usize)>, Option<FileError>) {
    let mut buf = [0u8; 512];
    let mut r = SequentialReader::new(&mut buf, end);
    let mut out = Vec::new();
    let mut input = data;
    let mut data_len = 0usize;
    for _ in 0..100_000 {
        let take = input.len().min(chunk);
        match r.feed(&input[..take]) {
            Ok((used, ev)) => {
                input = &input[used..];
                match ev {
                    Some(SeqEvent::Header(_)) => out.push((0, 0, 0)),
                    Some(SeqEvent::Descriptor { offset, view }) => {
                        out.push((1, offset, view.as_bytes().len()))
                    }
                    Some(SeqEvent::Data { bytes, .. }) => data_len += bytes.len(),
                    Some(SeqEvent::TensorEnd) => out.push((2, 0, std::mem::take(&mut data_len))),
                    Some(SeqEvent::End { offset }) => {
                        out.push((3, offset, 0));
                        return (out, None);
                    }
                    None if used == 0 => return (out, None),
                    None => {}
                }
            }
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, data)) = input.split_first() else {
        return;
    };
    let chunk = usize::from(pick % 64) + 1;
    let end = (pick & 0x80 != 0).then(|| data.len().saturating_sub(40) as u64);
    let whole = run(data, data.len().max(1), end);
    let split = run(data, chunk, end);
    assert_eq!(whole, split, "chunk {chunk}");
});
