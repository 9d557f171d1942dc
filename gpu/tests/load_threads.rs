//! The file loader with a pool of 8 worker threads, whatever the machine:
//! the path a many-core host takes (ADR-122) — the whole file planned and
//! re-tagged by helper threads beside its validation — gives the file's
//! exact bytes for every tensor, and the file's own errors still come first. (Its own test binary: the
//! pool's size is fixed for the process once a transfer started it.)
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::path::Path;

use common::{Temp, ctx, random_bytes};
use hurray_core::file::{FileView, WriterOptions};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, MemoryClass, SyncMode, TensorDescriptor, TensorView,
};
use hurray_gpu::{ContextOptions, GpuContext, LoadError, LoadOptions, load_file};

/// One uint8 tensor `t.{i}` of `n` pseudo-random bytes per size.
fn write(path: &Path, sizes: &[usize]) {
    // (The writer keeps the names until it writes the index.)
    let names: Vec<String> = (0..sizes.len()).map(|i| format!("t.{i}")).collect();
    let mut w = hurray_io::file::create(path, WriterOptions::default()).unwrap();
    for (i, (&n, name)) in sizes.iter().zip(&names).enumerate() {
        let h = if n == 0 {
            BufferHandle::empty(DeviceTag::Cpu)
        } else {
            BufferHandle::new(n as u64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
        };
        let shape = [n as u64];
        let mut desc = vec![0u8; 256];
        let len = TensorDescriptor::row_major(ElementType::UInt8, &shape, &[h])
            .encode(&mut desc)
            .unwrap();
        let data = random_bytes(n, i as u64 + 11);
        w.write_tensor(name, &TensorView::parse(&desc[..len]).unwrap(), &[&data])
            .unwrap();
    }
    w.finish(&[]).unwrap();
}

#[test]
fn a_load_planned_beside_its_validation_holds_the_files_bytes_for_every_tensor() {
    let test = "a_load_planned_beside_its_validation_holds_the_files_bytes_for_every_tensor";
    hurray_gpu::set_worker_threads(8).unwrap();
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    // More tensors than a few helper batches, small ones packed, large
    // ones of their own, empty ones.
    let mut sizes: Vec<usize> = (0..2000)
        .map(|i| {
            if i % 333 == 5 {
                0
            } else {
                1 + (i * 7919) % 9000
            }
        })
        .collect();
    sizes.insert(700, 3 << 20);
    let f = Temp::new("load-threads");
    write(&f.0, &sizes);
    // 2,001 tensors: validated in parts over the pool (3 parts of 512 or
    // more); 700: on one thread, planned and re-tagged beside it.
    let few = Temp::new("load-threads-few");
    write(&few.0, &sizes[..700]);
    let loaded_few = load_file(&c.device, &c.queue, &few.0, LoadOptions::default()).unwrap();
    same_as_file(&c, &few.0, &loaded_few);
    let loaded = load_file(&c.device, &c.queue, &f.0, LoadOptions::default()).unwrap();
    same_as_file(&c, &f.0, &loaded);
    let bytes = std::fs::read(&f.0).unwrap();
    let mut table = Vec::new();
    let view: FileView<'_> = hurray_io::file::view(&bytes, &mut table).unwrap();
    // Reloaded into the same buffers: every tensor taken over by place.
    let again = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().reuse(loaded),
    )
    .unwrap();
    assert_eq!(again.reused, again.tensors.len());
    // A device whose buffers hold at most 1 MiB, and a bad descriptor after
    // the 3 MiB tensor (in the last part): the part of the oversized buffer
    // meets it first, the validation's error is the one returned.
    let limits = hurray_gpu::wgpu::Limits {
        max_buffer_size: 1 << 20,
        ..c.adapter.limits()
    };
    let adapter = c.adapter.clone();
    drop((again, loaded_few, c));
    let small = pollster::block_on(GpuContext::from_adapter_with_options(
        adapter,
        ContextOptions::default().limits(limits),
    ))
    .unwrap();
    let err = load_file(&small.device, &small.queue, &f.0, LoadOptions::default()).unwrap_err();
    assert!(
        matches!(err, LoadError::TooLarge { ref name, .. } if name == "t.700"),
        "{err}"
    );
    let last = view.iter_file_order().last().unwrap();
    let at = usize::try_from(last.entry().descriptor_offset).unwrap();
    // The last tensor broken, then the first (part 0, before the oversized
    // buffer's part).
    for at in [at, 64] {
        let mut broken = bytes.clone();
        broken[at + 14] = 0x3F; // no such element type
        let b = Temp::new("load-threads-broken");
        std::fs::write(&b.0, &broken).unwrap();
        let err = load_file(&small.device, &small.queue, &b.0, LoadOptions::default()).unwrap_err();
        assert!(matches!(err, LoadError::File(_)), "{err}");
    }
}

/// Every tensor of `loaded` has the file's name, sizes, tags and bytes.
fn same_as_file(c: &GpuContext, path: &Path, loaded: &hurray_gpu::Loaded) {
    let t = loaded.times;
    assert_eq!(t.list, std::time::Duration::ZERO, "{t:?}");
    assert!(t.plan > std::time::Duration::ZERO && t.retag > std::time::Duration::ZERO);
    assert!(loaded.slabs > 0 && loaded.packed > 0);
    let bytes = std::fs::read(path).unwrap();
    let mut table = Vec::new();
    let view: FileView<'_> = hurray_io::file::view(&bytes, &mut table).unwrap();
    assert_eq!(loaded.tensors.len(), view.len() as usize);
    for (g, t) in loaded.tensors.iter().zip(view.iter_file_order()) {
        assert_eq!(g.name(), t.name());
        let d = g.descriptor().unwrap();
        let (ours, theirs) = (d.buffers(), t.descriptor().buffers());
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(theirs.iter()) {
            assert_eq!(a.byte_size(), b.byte_size());
            if !a.is_empty() {
                assert_eq!(a.device_tag(), DeviceTag::Vulkan);
                assert_eq!(a.memory_class(), MemoryClass::Standard);
                assert_eq!(a.sync_mode(), SyncMode::ProducerSynced);
            }
        }
        for (s, want) in g.buffers().iter().zip(t.buffers()) {
            let mut out = Vec::new();
            s.readback(&c.device, &c.queue, &mut out).unwrap();
            assert!(out == want, "tensor {} differs", t.name());
        }
    }
}
