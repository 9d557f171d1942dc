//! The facade re-exports the core, and its features add what they promise.

use hurray::{BufferHandle, DescriptorErrorKind, DeviceTag, SyncMode, TensorView};

#[test]
fn facade_reexports_the_core() {
    let h = BufferHandle::new(64, 64, DeviceTag::Vulkan, SyncMode::Event).unwrap();
    assert_eq!(hurray_core::BufferHandle::from_bytes(&h.to_bytes()), Ok(h));
    assert_eq!(
        TensorView::parse(&[]).map_err(|e| e.kind()),
        Err(DescriptorErrorKind::Truncated {
            needed: 20,
            available: 0
        })
    );
    assert_eq!(hurray::MIN_BUFFER_ALIGNMENT, 64);
}

/// Feature `std` (also enabled by `gpu`): hurray errors become `io::Error`s.
#[cfg(feature = "std")]
#[test]
fn errors_convert_to_io_errors() {
    let err = BufferHandle::from_bytes(&[0xFF; 16]).unwrap_err();
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidData);
    assert_eq!(io.to_string(), "device tag 0xff is reserved or invalid");
    let inner = io.get_ref().and_then(|e| e.downcast_ref::<hurray::Error>());
    assert_eq!(inner, Some(&hurray::Error::InvalidDeviceTag(0xFF)));
}

/// Feature `gpu`: the GPU crate is reachable as `hurray::gpu`, with its wgpu.
#[cfg(feature = "gpu")]
#[test]
fn gpu_module_is_reexported() {
    let usage = hurray::gpu::wgpu::BufferUsages::COPY_SRC;
    let err = hurray::gpu::BackendError::ApiMisuse(hurray::gpu::ApiMisuse::MissingUsage {
        required: usage,
        actual: hurray::gpu::wgpu::BufferUsages::STORAGE,
    });
    assert!(err.to_string().contains("COPY_SRC"));
}
