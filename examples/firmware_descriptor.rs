//! The main job of hurray, end to end, with the crate's default (embedded)
//! feature set: no allocator anywhere in the library path.
//!
//! A firmware side builds a tensor descriptor in fixed-capacity storage
//! (`heapless`) and emits its bytes; a host side validates those bytes in
//! place, reads the tensor's shape and buffer handles, maps the data buffer to
//! its DLPack device code, and rejects a corrupted copy with a typed error.
//!
//! Run: `cargo run --example firmware_descriptor`

use hurray::{
    BufferHandle, DType, DescriptorBuilder, DeviceTag, Error, MIN_BUFFER_ALIGNMENT, MemoryClass,
    PAGE_ALIGNMENT, SyncMode, TensorView,
};

/// Firmware side: a 3 x 224 x 224 u8 image in pinned host memory registered
/// with CUDA, plus a small empty auxiliary buffer. Compile-time checked handle.
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

fn firmware_emit() -> Result<heapless::Vec<u8, 256>, Error> {
    let mut b = DescriptorBuilder::<4, 2>::new(DType::U8);
    b.push_dim(3)?.push_dim(224)?.push_dim(224)?;
    b.push_buffer(IMAGE)?;
    b.push_buffer(BufferHandle::empty(DeviceTag::Cpu))?;
    b.set_read_only(true);
    b.to_vec()
}

fn host_read(bytes: &[u8]) -> Result<(), Error> {
    let view = TensorView::parse(bytes)?;
    let (major, minor) = view.version();
    println!(
        "descriptor v{major}.{minor}, {} bytes",
        view.as_bytes().len()
    );
    println!(
        "  dtype      {:?} ({} byte elements)",
        view.dtype(),
        view.dtype().size_bytes()
    );
    print!("  shape      [");
    for (i, d) in view.shape().iter().enumerate() {
        print!("{}{d}", if i > 0 { ", " } else { "" });
    }
    println!("] = {} elements", view.element_count());
    println!("  read-only  {}", view.is_read_only());
    for (i, h) in view.buffers().iter().enumerate() {
        let marker = if i == usize::from(view.data_buffer_index()) {
            "data"
        } else {
            "aux "
        };
        println!(
            "  buffer {i} ({marker}) {:>7} bytes, align {:>4}, {:?}/{:?}/{:?}, DLPack device {}",
            h.byte_size(),
            h.alignment(),
            h.device_tag(),
            h.sync_mode(),
            h.memory_class(),
            match h.dlpack_device_type() {
                Ok(code) => code.to_string(),
                Err(e) => format!("none ({e})"),
            }
        );
    }
    // The out-of-band address must satisfy the handle's alignment.
    let address = 0x7f3a_0000_1000u64;
    assert!(view.data_buffer().is_address_aligned(address));
    assert!(view.data_buffer().alignment() >= MIN_BUFFER_ALIGNMENT);
    Ok(())
}

fn main() -> Result<(), Error> {
    let bytes = firmware_emit()?;
    println!("firmware emitted {} bytes", bytes.len());
    host_read(&bytes)?;

    // A hostile or corrupted copy: the data buffer's sync-mode byte flipped.
    let mut corrupted = bytes.clone();
    let table_offset = usize::try_from(TensorView::parse(&bytes)?.header().table_offset.get())
        .expect("fits usize");
    corrupted[table_offset + 13] = 0x07;
    match TensorView::parse(&corrupted) {
        Ok(_) => panic!("a corrupted descriptor must be rejected"),
        Err(e) => println!("corrupted copy rejected: {e}"),
    }
    Ok(())
}
