//! The stream race: our stream decoder against the reference's
//! `StreamReader` (registry `hurray-io` 0.1.0), over the same bytes in
//! memory, in one process.
//!
//! Run: `cargo run --release --example stream_race` (a benchmark, not a
//! test: the figures go to `docs/perf.md`; the allocation counts are
//! asserted by `tests/allocations.rs`).
//!
//! The stream: 10,000 small tensors (float32 [4, 4], uint8 [16], int32
//! [2, 3] and a two-buffer COO float32 [8, 8] with 3 non-zeros, in turn),
//! written by our `StreamWriter`. Each side reads every tensor and looks
//! at every data slice (its length, and a buffer's first byte) without copying
//! it:
//!
//! * ours, core: `StreamDecoder::decode` over the whole stream at once;
//! * ours, core, 64 KiB chunks: the same, fed as a socket would;
//! * ours, std: `hurray_io::stream::StreamReader::next_event` over a
//!   `&[u8]` reader (its one copy is `Read::read` into its 64 KiB buffer);
//! * theirs: `StreamReader::next_tensor` (tokio `AsyncRead` over `&[u8]`,
//!   driven by pollster), which allocates each descriptor and buffer.
//!
//! Interleaved rounds; the best round of each counts; the ratio is theirs
//! over ours. Then the heap allocations of one whole read of each.

#[allow(dead_code, unreachable_pub, missing_docs, unsafe_code)]
#[path = "../tests/differential/counting.rs"]
mod counting;

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Instant;

use hurray::layout::Coo;
use hurray::stream::{Event, StreamDecoder};
use hurray::{
    BufferHandle, DeviceTag, ElementType, LayoutSpec, SyncMode, TensorDescriptor, TensorView,
};
use reference_io::stream::StreamReader as TheirReader;

/// Tensors in the stream.
const TENSORS: usize = 10_000;
/// Interleaved rounds; the best one counts.
const ROUNDS: usize = 31;

fn cpu(size: u64) -> BufferHandle {
    BufferHandle::new(size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

fn enc(d: &TensorDescriptor<'_>) -> Vec<u8> {
    let mut out = vec![0u8; d.encoded_len()];
    let n = d.encode(&mut out).unwrap();
    out.truncate(n);
    out
}

/// The four kinds of tensor, as descriptor bytes.
fn kinds() -> Vec<Vec<u8>> {
    vec![
        enc(&TensorDescriptor::row_major(
            ElementType::Float32,
            &[4, 4],
            &[cpu(64)],
        )),
        enc(&TensorDescriptor::row_major(
            ElementType::UInt8,
            &[16],
            &[cpu(16)],
        )),
        enc(&TensorDescriptor::row_major(
            ElementType::Int32,
            &[2, 3],
            &[cpu(24)],
        )),
        enc(&TensorDescriptor::new(
            ElementType::Float32,
            &[8, 8],
            LayoutSpec::Coo(Coo {
                nnz: 3,
                sorted: true,
            }),
            &[cpu(12), cpu(48)],
        )),
    ]
}

/// The stream, written by our writer.
pub fn stream() -> Vec<u8> {
    let kinds = kinds();
    let views: Vec<TensorView<'_>> = kinds
        .iter()
        .map(|k| TensorView::parse(k).unwrap())
        .collect();
    let mut w = hurray_io::stream::StreamWriter::new(Vec::new());
    let data: Vec<u8> = (0..64u8).collect();
    for i in 0..TENSORS {
        let v = &views[i % views.len()];
        let bufs: Vec<&[u8]> = v
            .buffers()
            .iter()
            .map(|h| &data[..h.byte_size() as usize])
            .collect();
        w.write_tensor(v, &bufs).unwrap();
    }
    w.finish().unwrap()
}

/// What a reader saw: tensors, data bytes, a checksum of first bytes.
type Seen = (usize, usize, u64);

fn ours(bytes: &[u8], chunk: usize) -> Seen {
    let (mut desc, mut scratch) = ([0u8; 1024], [0u8; 0]);
    let mut dec = StreamDecoder::new(&mut desc, &mut scratch);
    let (mut tensors, mut data, mut sum) = (0, 0, 0u64);
    for piece in bytes.chunks(chunk) {
        let mut input = piece;
        loop {
            let (used, event) = dec.decode(input).expect("a valid stream");
            input = &input[used..];
            match event {
                Event::NeedMore => break,
                Event::Descriptor(v) => sum += u64::from(v.element_type().code()),
                Event::Data { offset, bytes, .. } => {
                    data += bytes.len();
                    if offset == 0 {
                        sum += u64::from(bytes[0]);
                    }
                }
                Event::TensorEnd => tensors += 1,
                _ => {}
            }
        }
    }
    dec.finish().expect("the stream ends between tensors");
    (tensors, data, sum)
}

fn ours_std(bytes: &[u8]) -> Seen {
    let mut r = hurray_io::stream::StreamReader::new(bytes);
    let (mut tensors, mut data, mut sum) = (0, 0, 0u64);
    while let Some(event) = r.next_event().expect("a valid stream") {
        match event {
            Event::Descriptor(v) => sum += u64::from(v.element_type().code()),
            Event::Data { offset, bytes, .. } => {
                data += bytes.len();
                if offset == 0 {
                    sum += u64::from(bytes[0]);
                }
            }
            Event::TensorEnd => tensors += 1,
            _ => {}
        }
    }
    (tensors, data, sum)
}

fn theirs(bytes: &[u8]) -> Seen {
    let mut r = TheirReader::new(bytes);
    let (mut tensors, mut data, mut sum) = (0, 0, 0u64);
    pollster::block_on(async {
        while let Some(t) = r.next_tensor().await.expect("a valid stream") {
            sum += u64::from(t.descriptor.element_type.tag());
            for b in &t.buffers {
                data += b.len();
                sum += u64::from(b[0]);
            }
            tensors += 1;
        }
    });
    (tensors, data, sum)
}

/// The floor: every descriptor of the stream validated alone by
/// `TensorView::parse` (the descriptors' offsets found beforehand), no
/// stream machine around it.
fn parse_only(bytes: &[u8], spans: &[(usize, usize)]) -> Seen {
    let mut sum = 0u64;
    for &(at, len) in spans {
        let v = TensorView::parse(&bytes[at..at + len]).expect("a valid descriptor");
        sum += u64::from(v.element_type().code());
    }
    (spans.len(), 0, sum)
}

fn main() {
    let bytes = stream();
    let spans: Vec<(usize, usize)> = {
        let (mut at, mut v) = (0, Vec::new());
        while at < bytes.len() {
            let (view, _) = TensorView::parse_prefix(&bytes[at..]).unwrap();
            let len = view.as_bytes().len();
            let data: u64 = view.buffers().iter().map(|h| h.byte_size()).sum();
            v.push((at, len));
            at += len + data as usize;
        }
        v
    };
    let expected = ours(&bytes, bytes.len());
    assert_eq!(expected.0, TENSORS);
    assert_eq!(ours(&bytes, 64 << 10), expected);
    assert_eq!(ours_std(&bytes), expected);
    assert_eq!(
        theirs(&bytes),
        expected,
        "the reference reads the same tensors"
    );

    let (_, a_core) = counting::count(|| ours(black_box(&bytes), bytes.len()));
    let (_, a_std) = counting::count(|| ours_std(black_box(&bytes)));
    let (_, a_theirs) = counting::count(|| theirs(black_box(&bytes)));
    counting::ON.store(false, Ordering::Relaxed);

    let sides: [(&str, &dyn Fn() -> Seen); 5] = [
        ("ours, core, whole stream", &|| {
            ours(black_box(&bytes), bytes.len())
        }),
        ("ours, core, 64 KiB chunks", &|| {
            ours(black_box(&bytes), 64 << 10)
        }),
        ("ours, std StreamReader", &|| ours_std(black_box(&bytes))),
        ("theirs, StreamReader", &|| theirs(black_box(&bytes))),
        ("(floor: each descriptor parsed alone)", &|| {
            parse_only(black_box(&bytes), &spans)
        }),
    ];
    let mut best = [f64::MAX; 5];
    for _ in 0..ROUNDS {
        for (i, (_, f)) in sides.iter().enumerate() {
            let t = Instant::now();
            black_box(f());
            best[i] = best[i].min(t.elapsed().as_secs_f64());
        }
    }
    let allocs = [a_core, a_core, a_std, a_theirs, 0];
    println!(
        "stream of {TENSORS} tensors, {} bytes ({} of data), read in memory; best of {ROUNDS} rounds",
        bytes.len(),
        expected.1
    );
    println!("| reader | ms | ns per tensor | theirs / this | allocations |");
    println!("|---|---:|---:|---:|---:|");
    for (i, (name, _)) in sides.iter().enumerate() {
        println!(
            "| {name} | {:.3} | {:.1} | {:.2}x | {} |",
            best[i] * 1e3,
            best[i] * 1e9 / TENSORS as f64,
            best[3] / best[i],
            allocs[i]
        );
    }
}
