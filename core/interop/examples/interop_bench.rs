//! DLPack export + import round trip of a 4-d tensor, in ns per round trip
//! (a benchmark, not a test: it asserts nothing about time).
//!
//! One round trip = `dlpack::export_versioned` (one allocation) of a
//! row-major float32 [8, 16, 32, 32] CPU tensor, `dlpack::import_versioned`
//! of the result into a stack descriptor buffer (validate, encode, parse),
//! and the drop that runs the deleter. The baseline in the same process is
//! `TensorView::parse` of the exported tensor's own descriptor, so the
//! ratio says how many descriptor parses a round trip costs.
//!
//! `cargo run --release -p hurray-rs-interop --example interop_bench`
use std::hint::black_box;
use std::time::Instant;

use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_interop::dlpack::{self, ExportOptions};
use hurray_interop::{DescriptorBuf, ImportOptions};

#[repr(align(4096))]
struct Page(#[allow(dead_code)] [u8; 4096]);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shape = [8u64, 16, 32, 32];
    let bytes_needed: u64 = shape.iter().product::<u64>() * 4;
    let pages: Vec<Page> = (0..bytes_needed / 4096).map(|_| Page([0; 4096])).collect();
    let handles = [BufferHandle::new(
        bytes_needed,
        4096,
        DeviceTag::Cpu,
        SyncMode::ProducerSynced,
    )?];
    let mut desc = [0u8; 256];
    let n =
        TensorDescriptor::row_major(ElementType::Float32, &shape, &handles).encode(&mut desc)?;
    let view = TensorView::parse(&desc[..n])?;
    let data = pages.as_ptr().cast_mut().cast();
    let opts = ExportOptions::default();
    let iters = 200_000u32;

    let round_trip = || -> Result<f64, Box<dyn std::error::Error>> {
        let start = Instant::now();
        for _ in 0..iters {
            let managed = dlpack::export_versioned(&view, black_box(data), (), &opts)?;
            let mut buf = DescriptorBuf::new();
            // SAFETY: a managed tensor this loop just exported and owns.
            let imported = unsafe {
                dlpack::import_versioned(
                    managed.into_raw(),
                    buf.as_mut_slice(),
                    &ImportOptions::DEFAULT,
                )?
            };
            black_box(imported.view().element_count());
            drop(imported);
        }
        Ok(start.elapsed().as_nanos() as f64 / f64::from(iters))
    };
    let parse = || -> Result<f64, Box<dyn std::error::Error>> {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(TensorView::parse(black_box(&desc[..n]))?);
        }
        Ok(start.elapsed().as_nanos() as f64 / f64::from(iters))
    };
    let export_only = || -> Result<f64, Box<dyn std::error::Error>> {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(dlpack::export_versioned(&view, black_box(data), (), &opts)?);
        }
        Ok(start.elapsed().as_nanos() as f64 / f64::from(iters))
    };
    if std::env::var_os("PARTS").is_some() {
        println!("export+drop only: {:.1} ns", export_only()?);
    }
    let (mut best_rt, mut best_parse) = (f64::MAX, f64::MAX);
    for _ in 0..9 {
        best_rt = best_rt.min(round_trip()?);
        best_parse = best_parse.min(parse()?);
    }
    println!("tensor: float32 {shape:?} row-major, CPU; best of 9 runs x {iters} iterations");
    println!("DLPack export+import round trip: {best_rt:.1} ns/round trip");
    println!("baseline TensorView::parse of the same descriptor: {best_parse:.1} ns");
    println!("round_trip_vs_parse ratio: {:.2}", best_rt / best_parse);
    Ok(())
}
