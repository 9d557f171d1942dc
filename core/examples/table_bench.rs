//! Benchmark: validating a buffer table against a plain read of the same bytes.
//!
//! Run: `cargo run --release -p hurray-rs-core --example table_bench [entries]`
//!
//! Builds a table of 4 Mi entries (64 MiB, larger than the last-level cache)
//! of varied valid handles, then times, in the same process and on the same
//! bytes, (a) `BufferTable::parse`, which validates every entry, and (b) a
//! baseline that only reads the bytes, summing them as little-endian u64
//! words. Each is run several times interleaved; the best time of each is
//! kept. The last line is `validate_vs_read ratio=<validate GB/s / read GB/s>`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hurray_core::{BufferHandle, BufferTable, DeviceTag, MemoryClass, SyncMode};

fn build_table(entries: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; entries * 16];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for chunk in bytes.chunks_exact_mut(16) {
        // xorshift: varied, reproducible handles.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // One tensor's table: every entry on the same device and memory
        // class (colocation), varied sizes, alignments and sync modes.
        let dev = DeviceTag::Cuda;
        let sync = SyncMode::ALL[(state >> 8) as usize % 3];
        let class = MemoryClass::Unified;
        let size = (state >> 24) % 3 * (state >> 32);
        let align = if size == 0 {
            1
        } else {
            64 << ((state >> 40) % 7)
        };
        let h = BufferHandle::with_memory_class(size, align as u32, dev, sync, class).unwrap();
        chunk.copy_from_slice(&h.to_bytes());
    }
    bytes
}

fn read_sum(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .fold(0u64, u64::wrapping_add)
}

fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let entries: usize = std::env::args()
        .nth(1)
        .map_or(4 << 20, |s| s.parse().expect("entry count"));
    assert!(
        entries >= 1 << 20,
        "the benchmark needs at least 1 Mi entries"
    );
    let bytes = build_table(entries);
    let gb = bytes.len() as f64 / 1e9;
    println!("table: {entries} entries, {} MiB", bytes.len() >> 20);

    // Warm up and check the work is real.
    let table = BufferTable::parse(&bytes).expect("valid table");
    assert_eq!(table.len(), entries);

    let (mut read, mut validate) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        read = read.min(best_of(3, || {
            black_box(read_sum(black_box(&bytes)));
        }));
        validate = validate.min(best_of(3, || {
            black_box(BufferTable::parse(black_box(&bytes)).is_ok());
        }));
    }
    let read_gbps = gb / read.as_secs_f64();
    let validate_gbps = gb / validate.as_secs_f64();
    println!("read     {read:>10.3?}  {read_gbps:.2} GB/s");
    println!(
        "validate {validate:>10.3?}  {validate_gbps:.2} GB/s  ({:.2} ns/entry)",
        validate.as_nanos() as f64 / entries as f64
    );
    println!("validate_vs_read ratio={:.3}", validate_gbps / read_gbps);
}
