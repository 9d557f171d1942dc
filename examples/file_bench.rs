//! Open a file and find one tensor by name: ours against the format's
//! reference (`hurray-io` 0.1.0: `FileReader::open` + `read_tensor`) and the
//! `safetensors` crate (`SafeTensors::deserialize` + `tensor(name)`), on
//! files holding the same tensors, all in memory. Ratios are from one run,
//! interleaved. `cargo run --release --example file_bench`
//! (`-- --quick` for a short run).
//!
//! Ours, three ways:
//! * `index` — `hurray_io::file::index` (header, trailer, KV, one pass over
//!   the index with its CRC-32C, a name table) + `FileIndex::get` (which
//!   checks that one descriptor against its entry);
//! * `view` — `hurray_io::file::view`: the same, then every descriptor and
//!   composite checked (the whole map validated first);
//! * `core` — `index` with the core's portable CRC-32C (a sliced table, the
//!   firmware's) instead of the CPU's CRC instructions.

use std::hint::black_box;
use std::time::Instant;

use hurray::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_core::file::{FileIndex, FileOptions, FileWriter, IndexEntry, WriterOptions};

fn name(i: usize) -> String {
    format!("model.layers.{i}.weight")
}

struct Files {
    ours: Vec<u8>,
    reference: Vec<u8>,
    safetensors: Vec<u8>,
}

fn build(n: usize) -> Files {
    let data = vec![0x3Cu8; 64];
    let h = [BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut d = [0u8; 128];
    let len = TensorDescriptor::row_major(ElementType::Float32, &[4, 4], &h)
        .encode(&mut d)
        .unwrap();
    let view = TensorView::parse(&d[..len]).unwrap();
    let names: Vec<String> = (0..n).map(name).collect();
    let mut index = vec![IndexEntry::default(); n];
    let options = WriterOptions {
        sorted_index: true,
        ..Default::default()
    };
    let mut w = FileWriter::new(Vec::new(), options, &mut index[..]).unwrap();
    for nm in &names {
        w.write_tensor(nm, &view, &[&data]).unwrap();
    }
    let ours = w.finish(&[]).unwrap();

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let reference = rt.block_on(async {
        let options = reference_io::file::FileWriterOptions {
            data_buffer_alignment: 4096,
            sorted_index: true,
        };
        let mut w =
            reference_io::file::FileWriter::with_options(std::io::Cursor::new(Vec::new()), options)
                .await
                .unwrap();
        let desc = reference::TensorDescriptor::decode(&d[..len]).unwrap();
        for nm in &names {
            w.write_tensor(nm, &desc, &[&data]).await.unwrap();
        }
        w.finish(vec![]).await.unwrap().into_inner()
    });
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = names
        .iter()
        .map(|nm| {
            let v =
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![4, 4], &data)
                    .unwrap();
            (nm.clone(), v)
        })
        .collect();
    let safetensors = safetensors::serialize(views, None).unwrap();
    Files {
        ours,
        reference,
        safetensors,
    }
}

/// Median ns per call of `f` over `rounds` rounds of `iters` calls.
fn time(rounds: &mut [Vec<f64>], slot: usize, iters: u32, mut f: impl FnMut()) {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    rounds[slot].push(t.elapsed().as_nanos() as f64 / f64::from(iters));
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    println!(
        "{:>7} {:>10} {:>10} {:>10} {:>12} {:>12} | {:>9} {:>9} {:>9} {:>9}",
        "tensors",
        "index ns",
        "view ns",
        "core ns",
        "reference ns",
        "safetens. ns",
        "ref/index",
        "st/index",
        "ref/view",
        "st/view"
    );
    for n in [1usize, 100, 10_000] {
        let files = build(n);
        let target = name(n / 2);
        let iters: u32 = match (n, quick) {
            (10_000, true) => 2,
            (10_000, false) => 10,
            (_, true) => 50,
            _ => 500,
        };
        let rounds_n = if quick { 3 } else { 9 };
        let mut rounds = vec![Vec::new(); 5];
        let mut table = Vec::new();
        let mut core_table: Vec<u32> = Vec::new();
        for _ in 0..rounds_n {
            time(&mut rounds, 0, iters, || {
                let idx = hurray_io::file::index(black_box(&files.ours), &mut table).unwrap();
                black_box(idx.get(&target).unwrap().unwrap().buffer(0));
            });
            time(&mut rounds, 1, iters, || {
                let v = hurray_io::file::view(black_box(&files.ours), &mut table).unwrap();
                black_box(v.get(&target).unwrap().buffer(0));
            });
            time(&mut rounds, 2, iters, || {
                let f = black_box(&files.ours);
                let n = FileIndex::table_len(f).unwrap();
                core_table.resize(n, 0);
                let idx = FileIndex::parse_with(f, &FileOptions::STRICT, &mut core_table).unwrap();
                black_box(idx.get(&target).unwrap().unwrap().buffer(0));
            });
            time(&mut rounds, 3, iters, || {
                rt.block_on(async {
                    let mut r = reference_io::file::FileReader::open(std::io::Cursor::new(
                        black_box(&files.reference[..]),
                    ))
                    .await
                    .unwrap();
                    black_box(r.read_tensor(&target).await.unwrap());
                });
            });
            time(&mut rounds, 4, iters, || {
                let s =
                    safetensors::SafeTensors::deserialize(black_box(&files.safetensors)).unwrap();
                black_box(s.tensor(&target).unwrap().data());
            });
        }
        let m: Vec<f64> = rounds.iter_mut().map(|r| median(r)).collect();
        println!(
            "{:>7} {:>10.0} {:>10.0} {:>10.0} {:>12.0} {:>12.0} | {:>8.1}x {:>8.1}x {:>8.1}x {:>8.1}x",
            n,
            m[0],
            m[1],
            m[2],
            m[3],
            m[4],
            m[3] / m[0],
            m[4] / m[0],
            m[3] / m[1],
            m[4] / m[1]
        );
    }
}
