//! The main job of hurray, end to end, with the crate's default (embedded)
//! feature set: no allocator anywhere in the library path.
//!
//! A firmware side builds a hurray tensor descriptor (`"HRRY"`, the public
//! hurray format) in fixed-capacity storage (`heapless`) and emits its bytes;
//! a host side validates those bytes in place, reads the tensor's shape,
//! quantization and buffer handle, maps the buffer to its DLPack device
//! code, and rejects a corrupted copy with a typed error that names the byte
//! at fault.
//!
//! Run: `cargo run --example firmware_descriptor`

use hurray::{
    BufferHandle, DescriptorBuilder, DescriptorError, DeviceTag, ElementType, MIN_BUFFER_ALIGNMENT,
    MemoryClass, PAGE_ALIGNMENT, Scheme, SyncMode, TensorView, interop,
};

/// Firmware side: a 3 x 224 x 224 uint8 image (quantized: x = 0.02 (q - 128))
/// in pinned host memory registered with CUDA. Compile-time checked handle.
const IMAGE: BufferHandle = match BufferHandle::with_memory_class(
    3 * 224 * 224,
    PAGE_ALIGNMENT,
    DeviceTag::Cuda,
    SyncMode::Event,
    MemoryClass::HostPinned,
) {
    Ok(h) => h,
    Err(_) => panic!("invalid image handle"),
};

fn firmware_emit() -> Result<heapless::Vec<u8, 256>, hurray::EncodeError> {
    let mut b = DescriptorBuilder::<4, 2>::new(ElementType::UInt8);
    b.push_dim(3)?.push_dim(224)?.push_dim(224)?;
    b.push_buffer(IMAGE)?;
    b.set_quantization(Some(Scheme::PerTensor {
        scale: 0.02,
        zero_point: 128,
    }));
    b.to_vec()
}

fn host_read(bytes: &[u8]) -> Result<(), DescriptorError> {
    let view = TensorView::parse(bytes)?;
    let (major, minor) = view.version();
    println!(
        "descriptor HRRY v{major}.{minor}, {} bytes",
        view.as_bytes().len()
    );
    println!("  element    {}", view.element_type().name());
    print!("  shape      [");
    for (i, d) in view.shape().iter().enumerate() {
        print!("{}{d}", if i > 0 { ", " } else { "" });
    }
    match view.element_count() {
        Some(n) => println!("] = {n} elements, {}", view.layout().name()),
        None => println!(
            "] = more elements than 64 bits count, {}",
            view.layout().name()
        ),
    }
    match view.quantization().map(|q| q.scheme) {
        None => {}
        Some(Scheme::PerTensor { scale, zero_point }) => {
            println!("  quantized  per tensor: scale {scale}, zero point {zero_point}");
        }
        Some(other) => println!("  quantized  {other:?}"),
    }
    for (i, h) in view.buffers().iter().enumerate() {
        println!(
            "  buffer {i}   {} bytes, align {}, {}/{}/{}, DLPack device {}",
            h.byte_size(),
            h.alignment(),
            h.device_tag().name(),
            h.sync_mode().name(),
            h.memory_class().name(),
            match interop::to_dlpack(h.device_tag(), h.memory_class()) {
                Ok(code) => code.to_string(),
                Err(e) => format!("none ({e})"),
            }
        );
        // The out-of-band address must satisfy the handle's alignment.
        assert!(h.is_address_aligned(0x7f3a_0000_1000));
        assert!(h.alignment() >= MIN_BUFFER_ALIGNMENT);
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bytes = firmware_emit()?;
    println!("firmware emitted {} bytes", bytes.len());
    host_read(&bytes)?;

    // A hostile or corrupted copy: the buffer's sync-mode byte flipped. The
    // table starts after the 20-byte header, 3 dims and byte_offset; the
    // handle after its count byte.
    let mut corrupted = bytes.clone();
    let handle_at = 20 + 3 * 8 + 8 + 1;
    corrupted[handle_at + 13] = 0x07;
    match TensorView::parse(&corrupted) {
        Ok(_) => panic!("a corrupted descriptor must be rejected"),
        Err(e) => println!("corrupted copy rejected: {e}"),
    }
    Ok(())
}
