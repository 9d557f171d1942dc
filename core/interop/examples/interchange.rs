//! hurray ⇄ DLPack ⇄ Arrow, for Rust users.
//!
//! A producer describes a tensor it owns with a hurray descriptor, exports
//! it as a DLPack managed tensor (what `__dlpack__` hands out) and as an
//! Arrow C Device array; a consumer imports both back, gets a validated
//! descriptor, and the owner is dropped once the last consumer is done.
//!
//! `cargo run -p hurray-rs-interop --example interchange`
use std::sync::Arc;

use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_interop::arrow::{self, ArrowExportOptions};
use hurray_interop::dlpack::{self, Access, ExportOptions};
use hurray_interop::{DescriptorBuf, ImportOptions};

/// 64-byte aligned storage (a non-empty hurray buffer's minimum alignment).
#[repr(C, align(64))]
struct Storage([f32; 12]);

/// The owner: keeps the storage alive and says when it is dropped.
struct Owner(Arc<Storage>);

impl Drop for Owner {
    fn drop(&mut self) {
        println!(
            "owner dropped (storage references left: {})",
            Arc::strong_count(&self.0) - 1
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The producer's tensor: float32 [3, 4], row-major, in host memory.
    let storage = Arc::new(Storage(core::array::from_fn(|i| i as f32)));
    let data = storage.0.as_ptr().cast_mut().cast();
    let handles = [BufferHandle::new(
        48,
        64,
        DeviceTag::Cpu,
        SyncMode::ProducerSynced,
    )?];
    let mut bytes = [0u8; 128];
    let len =
        TensorDescriptor::row_major(ElementType::Float32, &[3, 4], &handles).encode(&mut bytes)?;
    let view = TensorView::parse(&bytes[..len])?;

    // DLPack: the managed tensor a consumer receives (read-only by default).
    let managed = dlpack::export_versioned(
        &view,
        data,
        Owner(Arc::clone(&storage)),
        &ExportOptions {
            access: Access::ReadOnly,
            ..Default::default()
        },
    )?;
    // SAFETY: reading the struct we just exported and still own.
    let t = unsafe { &(*managed.as_ptr()).dl_tensor };
    println!(
        "DLPack: ndim {}, dtype code {} ({} bits x {} lanes), device type {} id {}",
        t.ndim, t.dtype.code, t.dtype.bits, t.dtype.lanes, t.device.device_type, t.device.device_id
    );

    // The consumer side: import (takes ownership of the managed tensor).
    let mut buf = DescriptorBuf::new();
    // SAFETY: a managed tensor from a well-behaved producer, handed over.
    let imported = unsafe {
        dlpack::import_versioned(
            managed.into_raw(),
            buf.as_mut_slice(),
            &ImportOptions::DEFAULT,
        )?
    };
    let v = imported.view();
    println!(
        "imported: {} {:?}, read-only {}, first element at {:p}",
        v.element_type().name(),
        v.shape().iter().collect::<Vec<_>>(),
        imported.is_read_only(),
        imported.first_element()
    );
    // SAFETY: CPU memory the import describes, alive while `imported` is.
    let first = unsafe { imported.first_element().cast::<f32>().add(5).read() };
    println!("element [1, 1] = {first}");
    drop(imported); // the deleter runs: the DLPack owner is dropped

    // Arrow: a fixed_shape_tensor array of 3 rows of [4].
    let mut exported = arrow::export_arrow(
        &view,
        data,
        Owner(Arc::clone(&storage)),
        &ArrowExportOptions::default(),
    )?;
    println!(
        "Arrow: length {}, device type {}",
        exported.array.array.length, exported.array.device_type
    );
    let mut buf = DescriptorBuf::new();
    // SAFETY: structs exported above, handed over to the import.
    let imported = unsafe {
        arrow::import_arrow(
            &mut exported.array,
            &mut exported.schema,
            buf.as_mut_slice(),
            &ImportOptions::DEFAULT,
        )?
    };
    println!(
        "Arrow import: shape {:?}",
        imported.view().shape().iter().collect::<Vec<_>>()
    );
    drop(imported); // both release callbacks run: the Arrow owner is dropped
    Ok(())
}
