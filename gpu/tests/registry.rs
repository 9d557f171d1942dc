//! The resident registry, alone in its process so that its global count is
//! not disturbed by other tests.

mod common;

use common::ctx;
use hurray_gpu::wgpu::BufferUsages;
use hurray_gpu::{GpuBufferHandle, GpuResource, resident_count};

#[test]
fn registry_lifetime_and_no_leak() {
    let Some(c) = ctx("registry_lifetime_and_no_leak") else {
        return;
    };
    assert_eq!(resident_count(), 0);

    let a = GpuBufferHandle::alloc(&c.device, 8, BufferUsages::COPY_SRC).unwrap();
    let b = a.clone();
    let id = a.id();
    assert_ne!(id, 0);
    assert_eq!(b.id(), id, "clones share the id");
    assert_eq!(resident_count(), 1);
    drop(a);
    let resolved = GpuBufferHandle::from_resident_id(id).expect("alive while a clone exists");
    assert!(resolved.buffer() == b.buffer());
    assert!(*resolved.buffer_arc() == *b.buffer_arc());
    let as_resource: GpuResource = resolved.into();
    drop(b);
    assert!(
        GpuBufferHandle::from_resident_id(id).is_some(),
        "a GpuResource keeps it alive"
    );
    drop(as_resource);
    assert!(
        GpuBufferHandle::from_resident_id(id).is_none(),
        "gone after the last clone"
    );
    assert_eq!(resident_count(), 0);

    // 10 000 alloc/drop cycles: ids never repeat, the registry returns to empty.
    let mut last = id;
    for _ in 0..10_000 {
        let h = GpuBufferHandle::alloc(&c.device, 4, BufferUsages::COPY_SRC).unwrap();
        assert!(h.id() > last, "ids increase and are never reused");
        last = h.id();
    }
    assert_eq!(resident_count(), 0);
    assert!(
        GpuBufferHandle::from_resident_id(id).is_none(),
        "no resurrection"
    );
    assert!(GpuBufferHandle::from_resident_id(0).is_none());
}
