//! Upload a tensor to the GPU, read it back whole, by prefix, by range and
//! without copying, and describe the GPU buffer as a hurray `BufferHandle`.
//!
//! Run: `cargo run --example gpu_roundtrip --features gpu`
//! (needs a Vulkan, Metal, DX12 or GL adapter; on Linux without a GPU,
//! `apt-get install mesa-vulkan-drivers` provides a software one).

use hurray::gpu::wgpu::BufferUsages;
use hurray::gpu::{GpuBufferHandle, GpuContext};
use hurray::{BufferTable, ElementType, TensorDescriptor, TensorView};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = GpuContext::new()?;
    let info = ctx.adapter_info();
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.backend, info.device_type
    );

    // A 64 x 64 f32 matrix, uploaded as typed data.
    let matrix: Vec<f32> = (0..64 * 64).map(|i| i as f32 * 0.25).collect();
    let gpu = GpuBufferHandle::upload_slice(
        &ctx.device,
        &ctx.queue,
        &matrix,
        BufferUsages::STORAGE | BufferUsages::COPY_SRC,
    )?;
    println!(
        "uploaded {} elements ({} bytes, allocation {}), id {}",
        gpu.element_count(),
        gpu.byte_len(),
        gpu.allocation_len(),
        gpu.id()
    );

    // Whole, typed.
    let back: Vec<f32> = gpu.readback_vec(&ctx.device, &ctx.queue)?;
    assert_eq!(back, matrix);
    println!("readback_vec: {} floats match", back.len());

    // A prefix and an unaligned range, as bytes.
    let mut bytes = Vec::new();
    gpu.readback_prefix(&ctx.device, &ctx.queue, 10, &mut bytes)?;
    println!("first 10 bytes: {bytes:02x?}");
    gpu.readback_range(&ctx.device, &ctx.queue, 4 * 64 + 2, 7, &mut bytes)?;
    println!("7 bytes at offset 258: {bytes:02x?}");

    // Zero-copy: sum row 1 straight out of the mapped staging buffer.
    let row_sum = gpu.read_mapped(&ctx.device, &ctx.queue, 4 * 64, 4 * 64, |row| {
        row.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .sum::<f32>()
    })?;
    println!("row 1 sum (zero-copy): {row_sum}");
    assert_eq!(row_sum, matrix[64..128].iter().sum::<f32>());

    // The same id resolves while the handle lives.
    assert!(GpuBufferHandle::from_resident_id(gpu.id()).is_some());

    // Describe the GPU buffer on the wire.
    match gpu.to_buffer_handle() {
        Ok(handle) => {
            println!(
                "as BufferHandle: {} bytes, align {}, {}/{}/{}",
                handle.byte_size(),
                handle.alignment(),
                handle.device_tag().name(),
                handle.sync_mode().name(),
                handle.memory_class().name()
            );
            let handles = [handle];
            let desc = TensorDescriptor::row_major(ElementType::Float32, &[64, 64], &handles);
            let mut wire = [0u8; 128];
            let n = desc.encode(&mut wire)?;
            let view = TensorView::parse(&wire[..n])?;
            let count = view.element_count().unwrap_or(u64::MAX);
            println!(
                "descriptor: {n} bytes, {count} elements on {}",
                handle.device_tag().name()
            );
            assert_eq!(BufferTable::parse(view.buffers().as_bytes())?.len(), 1);
        }
        Err(e) => println!("this backend has no hurray device tag: {e}"),
    }
    Ok(())
}
