//! The file loader: `.hrry` file -> GPU buffers -> readback equals the
//! file's bytes for every tensor (the public conformance file and ours),
//! re-tagged descriptors, typed errors, progress, and GPU -> file.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::path::{Path, PathBuf};

use common::{Temp, ctx, random_bytes};
use hurray_core::file::WriterOptions;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, MemoryClass, SyncMode, TensorDescriptor, TensorView,
};
use hurray_gpu::{
    ContextOptions, GpuContext, GpuSlice, LoadError, LoadOptions, Loaded, LoadedTensor, load_file,
    load_view_async, save_file,
};

fn conformance_file() -> Option<PathBuf> {
    // As the workspace's conformance tests: `HURRAY_CONFORMANCE_DIR`, else
    // the shared corpus beside the checkout.
    let dir = std::env::var_os("HURRAY_CONFORMANCE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance"),
        PathBuf::from,
    );
    let p = dir.join("files/basic.hrry");
    if p.exists() {
        Some(p)
    } else if std::env::var_os("HURRAY_REQUIRE_CONFORMANCE").is_some_and(|v| v == "1") {
        panic!("{} is missing", p.display());
    } else {
        eprintln!(
            "SKIPPED part of the loader tests: {} is missing",
            p.display()
        );
        None
    }
}

fn encode(d: &TensorDescriptor<'_>) -> Vec<u8> {
    let mut b = vec![0u8; 1024];
    let n = d.encode(&mut b).unwrap();
    b.truncate(n);
    b
}

/// Our file: `sizes` one-buffer uint8 tensors (sizes spanning the loader's
/// 8 MiB chunks, odd sizes, an empty one) and a three-buffer one.
fn write_ours(path: &Path, sizes: &[usize]) {
    write_seeded(path, sizes, 0);
}

/// [`write_ours`] with the tensors' bytes drawn from `seed`.
fn write_seeded(path: &Path, sizes: &[usize], seed: u64) {
    let mut keep: Vec<(String, Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let h = if n == 0 {
            BufferHandle::empty(DeviceTag::Cpu)
        } else {
            BufferHandle::new(n as u64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
        };
        let shape = [n as u64];
        let desc = encode(&TensorDescriptor::row_major(
            ElementType::UInt8,
            &shape,
            &[h],
        ));
        keep.push((
            format!("t.{i}"),
            desc,
            vec![random_bytes(n, i as u64 + 1 + seed * 1000)],
        ));
    }
    let hs: Vec<BufferHandle> = [12u64, 24, 32]
        .iter()
        .map(|&n| BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap())
        .collect();
    let csr = TensorDescriptor::new(
        ElementType::Float32,
        &[3, 4],
        hurray_core::LayoutSpec::Csr(hurray_core::layout::Compressed { nnz: 3 }),
        &hs,
    );
    let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    keep.push((
        "sparse".into(),
        encode(&csr),
        vec![random_bytes(12, 99), le(&[1, 3, 0]), le(&[0, 2, 2, 3])],
    ));
    let mut w = hurray_io::file::create(path, WriterOptions::default()).unwrap();
    for (name, desc, bufs) in &keep {
        let slices: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
        w.write_tensor(name, &TensorView::parse(desc).unwrap(), &slices)
            .unwrap();
    }
    w.finish(&[]).unwrap();
}

/// Exactly the bytes of `s`.
fn back(c: &GpuContext, s: &GpuSlice) -> Vec<u8> {
    let mut out = Vec::new();
    s.readback(&c.device, &c.queue, &mut out).unwrap();
    assert_eq!(out.len() as u64, s.byte_len());
    out
}

/// Loads `path` and checks every tensor against the file: readback equals
/// the file's bytes, descriptors re-tagged and otherwise equal.
fn load_and_compare(c: &GpuContext, path: &Path, expect_dma: bool) -> u64 {
    let mut file = hurray_io::file::open(path).unwrap();
    let view = file.view().unwrap();
    let mut seen: Vec<hurray_gpu::Progress> = Vec::new();
    let loaded = load_file(
        &c.device,
        &c.queue,
        path,
        LoadOptions::default().progress(|p| seen.push(p)),
    )
    .unwrap();
    // Chunks complete in any order, but what is done only grows.
    for w in seen.windows(2) {
        assert!(w[0].bytes_done <= w[1].bytes_done && w[0].tensors_done <= w[1].tensors_done);
    }
    let last = seen.last().copied();
    assert_eq!(loaded.dma, expect_dma);
    assert_eq!(loaded.tensors.len(), view.len() as usize);
    let tag = DeviceTag::Vulkan;
    for t in view.iter_file_order() {
        let g = loaded.get(t.name()).unwrap();
        let d = g.descriptor().unwrap();
        assert_eq!(d.as_bytes().len(), t.descriptor().as_bytes().len());
        let (ours, theirs) = (d.buffers(), t.descriptor().buffers());
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(theirs.iter()) {
            assert_eq!(a.byte_size(), b.byte_size());
            if !a.is_empty() {
                assert_eq!(a.device_tag(), tag, "{}", t.name());
                assert_eq!(a.memory_class(), MemoryClass::Standard);
                assert_eq!(a.sync_mode(), SyncMode::ProducerSynced);
                assert_eq!(a.alignment(), b.alignment());
            }
        }
        for (h, bytes) in g.buffers().iter().zip(t.buffers()) {
            assert!(back(c, h) == bytes, "tensor {} differs", t.name());
        }
    }
    let p = last.expect("progress was reported");
    assert_eq!(p.bytes_done, p.bytes_total);
    assert!(loaded.times.copy > std::time::Duration::ZERO);
    assert_eq!(p.bytes_total, loaded.bytes);
    assert_eq!(p.tensors_done, p.tensors_total);
    loaded.bytes
}

#[test]
fn file_to_gpu_to_readback_equals_the_file_for_every_tensor() {
    let test = "file_to_gpu_to_readback_equals_the_file_for_every_tensor";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    let dma = c.host_dma();
    if let Some(basic) = conformance_file() {
        load_and_compare(&c, &basic, dma);
    }
    let ours = Temp::new("load-ours");
    let mut sizes: Vec<usize> = (0..300).map(|i| 1 + i * 37 % 5000).collect();
    sizes.extend([0, 3, 1 << 20, (40 << 20) + 5, 4096, 7]);
    write_ours(&ours.0, &sizes);
    let total = load_and_compare(&c, &ours.0, dma);
    assert!(total > 40 << 20);
    // Small and large tensors mixed: the small ones packed, the large ones
    // (1 MiB is the threshold: not below it) in buffers of their own.
    let mixed = load_file(&c.device, &c.queue, &ours.0, LoadOptions::default()).unwrap();
    assert!(
        mixed.slabs >= 1 && mixed.packed > 300,
        "{} {}",
        mixed.slabs,
        mixed.packed
    );
    for t in &mixed.tensors {
        let big = t.buffers().iter().all(|b| b.byte_len() >= 1 << 20);
        assert_eq!(
            t.is_packed(),
            !big && t.buffers().iter().any(|b| b.byte_len() > 0),
            "{}",
            t.name()
        );
    }

    // The mapped-staging fallback, forced: the same bytes.
    drop(c);
    let off = GpuContext::with_options(ContextOptions::default().host_dma(false)).unwrap();
    load_and_compare(&off, &ours.0, false);
}

#[test]
fn chosen_tensors_missing_names_and_oversized_buffers_are_typed() {
    let test = "chosen_tensors_missing_names_and_oversized_buffers_are_typed";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    let f = Temp::new("load-chosen");
    write_ours(&f.0, &[10, 2 << 20, 30]);
    let only = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().only(&["t.2", "t.0"]),
    )
    .unwrap();
    let names: Vec<&str> = only.tensors.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["t.2", "t.0"]);
    assert_eq!(only.bytes, 40);
    let err = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().only(&["nope"]),
    )
    .unwrap_err();
    assert!(
        matches!(err, LoadError::NotFound(ref n) if n == "nope"),
        "{err}"
    );
    // Not a file of the format: the file's own typed error.
    let junk = Temp::new("load-junk");
    std::fs::write(&junk.0, b"not a hurray file at all, just some bytes").unwrap();
    let err = load_file(&c.device, &c.queue, &junk.0, LoadOptions::default()).unwrap_err();
    assert!(matches!(err, LoadError::File(_)), "{err}");
    // A device whose buffers hold at most 1 MiB: the 2 MiB tensor is refused
    // by name before anything is allocated.
    let limits = hurray_gpu::wgpu::Limits {
        max_buffer_size: 1 << 20,
        ..c.adapter.limits()
    };
    let adapter = c.adapter.clone();
    drop(c);
    let small = pollster::block_on(GpuContext::from_adapter_with_options(
        adapter,
        ContextOptions::default().limits(limits),
    ))
    .unwrap();
    let err = load_file(&small.device, &small.queue, &f.0, LoadOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::TooLarge { ref name, buffer: 0, bytes, max } if name == "t.1" && bytes == 2 << 20 && max == 1 << 20
        ),
        "{err}"
    );
    // The file's own errors come first, even when the planning beside the
    // validation met the oversized buffer before the validation met a bad
    // descriptor after it.
    let mut bytes = std::fs::read(&f.0).unwrap();
    let last = {
        let view = hurray_core::file::FileView::parse(&bytes).unwrap();
        let t = view.iter_file_order().last().unwrap();
        assert_eq!(t.name(), "sparse");
        usize::try_from(t.entry().descriptor_offset).unwrap()
    };
    bytes[last + 14] = 0x3F; // no such element type
    let broken = Temp::new("load-broken");
    std::fs::write(&broken.0, &bytes).unwrap();
    let err = load_file(
        &small.device,
        &small.queue,
        &broken.0,
        LoadOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, LoadError::File(_)), "{err}");
}

#[test]
fn gpu_to_file_round_trips_through_our_reader() {
    let test = "gpu_to_file_round_trips_through_our_reader";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    let src = Temp::new("save-src");
    write_ours(&src.0, &[5, 0, 3 << 20, 64]);
    let loaded = load_file(&c.device, &c.queue, &src.0, LoadOptions::default()).unwrap();
    let out = Temp::new("save-out");
    save_file(&c.device, &c.queue, &out.0, &loaded.tensors).unwrap();
    let (mut a, mut b) = (
        hurray_io::file::open(&src.0).unwrap(),
        hurray_io::file::open(&out.0).unwrap(),
    );
    let (va, vb) = (a.view().unwrap(), b.view().unwrap());
    assert_eq!(va.len(), vb.len());
    for t in va.iter_file_order() {
        let u = vb.get(t.name()).unwrap();
        // Saved descriptors describe host memory again: the same bytes.
        assert_eq!(u.descriptor().as_bytes(), t.descriptor().as_bytes());
        assert!(u.buffers().eq(t.buffers()), "tensor {}", t.name());
    }
}

/// Readback of every buffer of `t` equals the file's bytes of tensor `name`.
/// [`load_view_async`] driven to completion on this thread while another
/// thread polls the device, as an application's render loop would.
fn load_polled(
    c: &GpuContext,
    view: &hurray_core::file::FileView<'_>,
    options: LoadOptions<'_>,
) -> Result<Loaded, LoadError> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let _ = c.device.poll(hurray_gpu::wgpu::PollType::Poll);
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        let r = pollster::block_on(load_view_async(&c.device, &c.queue, view, options));
        stop.store(true, std::sync::atomic::Ordering::Release);
        r
    })
}

fn same_as_file(c: &GpuContext, view: &hurray_core::file::FileView<'_>, t: &LoadedTensor) {
    let f = view.get(t.name()).unwrap();
    for (h, bytes) in t.buffers().iter().zip(f.buffers()) {
        assert!(back(c, h) == bytes, "tensor {} differs", t.name());
    }
}

#[test]
fn a_reload_reuses_fitting_buffers_and_the_async_form_loads_the_same_bytes() {
    let test = "a_reload_reuses_fitting_buffers_and_the_async_form_loads_the_same_bytes";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    // Many small tensors sharing chunks, one spanning several.
    let mut sizes: Vec<usize> = (0..2000).map(|i| 4096 + (i * 131) % 9000).collect();
    sizes.push((9 << 20) + 3);
    let (a, b) = (Temp::new("reload-a"), Temp::new("reload-b"));
    write_seeded(&a.0, &sizes, 1);
    // The same shapes with other bytes, but tensor t.5 one byte longer.
    let mut other = sizes.clone();
    other[5] += 1;
    write_seeded(&b.0, &other, 2);
    // A buffer each (packing off): reuse by name.
    let own = || LoadOptions::default().pack_below(0);
    let first = load_file(&c.device, &c.queue, &a.0, own()).unwrap();
    assert_eq!(first.reused, 0);
    assert_eq!((first.slabs, first.packed), (0, 0));
    let ids: Vec<u64> = first
        .tensors
        .iter()
        .map(|t| t.buffers()[0].buffer().id())
        .collect();
    let again = load_file(&c.device, &c.queue, &b.0, own().reuse(first)).unwrap();
    // Every tensor but t.5 (another size) kept its buffer.
    assert_eq!(again.reused, again.tensors.len() - 1);
    for (t, id) in again.tensors.iter().zip(&ids) {
        assert_eq!(
            t.buffers()[0].buffer().id() == *id,
            t.name() != "t.5",
            "{}",
            t.name()
        );
    }
    let mut fb = hurray_io::file::open(&b.0).unwrap();
    let vb = fb.view().unwrap();
    for t in &again.tensors {
        same_as_file(&c, &vb, t);
    }
    // Buffers without the usages asked for are not taken over.
    let uniform = load_file(
        &c.device,
        &c.queue,
        &b.0,
        LoadOptions::default()
            .usage(hurray_gpu::wgpu::BufferUsages::UNIFORM)
            .reuse(again),
    )
    .unwrap();
    assert_eq!(uniform.reused, 0);

    // The async form over a view the caller validated, the device polled
    // by another thread: the same bytes, the same progress totals.
    let mut fa = hurray_io::file::open(&a.0).unwrap();
    let va = fa.view().unwrap();
    let mut last = None;
    let loaded = load_polled(&c, &va, LoadOptions::default().progress(|p| last = Some(p))).unwrap();
    assert_eq!(loaded.dma, c.host_dma());
    assert_eq!(loaded.times.validate, std::time::Duration::ZERO);
    let p = last.unwrap();
    assert_eq!(
        (p.bytes_done, p.tensors_done),
        (p.bytes_total, p.tensors_total)
    );
    assert_eq!(p.tensors_total, sizes.len() + 1);
    for t in &loaded.tensors {
        same_as_file(&c, &va, t);
    }
}

/// The GPU bytes of every buffer of `loaded`, by tensor name, with the
/// descriptors.
fn contents(c: &GpuContext, loaded: &Loaded) -> Vec<(String, Vec<u8>, Vec<Vec<u8>>)> {
    loaded
        .tensors
        .iter()
        .map(|t| {
            (
                t.name().to_owned(),
                t.descriptor_bytes().to_vec(),
                t.buffers().iter().map(|b| back(c, b)).collect(),
            )
        })
        .collect()
}

#[test]
fn many_small_tensors_share_slabs_and_read_back_exactly_as_without_packing() {
    let test = "many_small_tensors_share_slabs_and_read_back_exactly_as_without_packing";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    // 3,000 small tensors of odd and even sizes (and empty ones), two large.
    let mut sizes: Vec<usize> = (0..3000)
        .map(|i| {
            if i % 500 == 7 {
                0
            } else {
                1 + (i * 7919) % 30_000
            }
        })
        .collect();
    sizes.insert(1500, 2 << 20);
    sizes.push(3 << 20);
    let f = Temp::new("pack-many");
    write_seeded(&f.0, &sizes, 3);
    let mut file = hurray_io::file::open(&f.0).unwrap();
    let view = file.view().unwrap();
    // Slabs of at most 1 MiB: many slab boundaries.
    let slab = 1u64 << 20;
    let packed = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().slab_size(slab),
    )
    .unwrap();
    assert_eq!(packed.dma, c.host_dma());
    assert!(packed.slabs > 10, "{} slabs", packed.slabs);
    let nonempty = sizes.iter().filter(|&&n| n > 0 && n < 1 << 20).count() + 3;
    assert_eq!(packed.packed, nonempty);
    let mut slab_ids = std::collections::BTreeSet::new();
    for t in &packed.tensors {
        same_as_file(&c, &view, t);
        for b in t.buffers() {
            if b.byte_len() >= 1 << 20 {
                assert!(
                    b.as_whole().is_some(),
                    "{}: large, its own buffer",
                    t.name()
                );
            } else if b.byte_len() > 0 {
                // A packed buffer lies inside a slab of at most `slab`
                // bytes, at its descriptor's alignment (64) or more.
                assert!(b.buffer().byte_len() <= slab);
                assert!(b.offset() + b.byte_len() <= b.buffer().byte_len());
                assert_eq!(b.offset() % 64, 0, "{}", t.name());
                slab_ids.insert(b.buffer().id());
            }
        }
    }
    assert_eq!(slab_ids.len(), packed.slabs);
    // Packing off: one buffer each, the same bytes and descriptors.
    let own = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().pack_below(0),
    )
    .unwrap();
    assert_eq!((own.slabs, own.packed), (0, 0));
    assert!(own.tensors.iter().all(|t| !t.is_packed()));
    assert!(contents(&c, &packed) == contents(&c, &own));
    // The async form packs the same way.
    let asynced = load_polled(&c, &view, LoadOptions::default().slab_size(slab)).unwrap();
    assert_eq!(asynced.slabs, packed.slabs);
    assert!(contents(&c, &asynced) == contents(&c, &own));
    // Without DMA staging (mapped writes of whole slabs): the same bytes.
    drop((packed, own, asynced, file));
    drop(c);
    let off = GpuContext::with_options(ContextOptions::default().host_dma(false)).unwrap();
    let mapped = load_file(
        &off.device,
        &off.queue,
        &f.0,
        LoadOptions::default().slab_size(slab),
    )
    .unwrap();
    assert!(!mapped.dma && mapped.slabs > 10);
    let mut file = hurray_io::file::open(&f.0).unwrap();
    let view = file.view().unwrap();
    for t in &mapped.tensors {
        same_as_file(&off, &view, t);
    }
}

#[test]
fn the_packing_threshold_and_slab_size_are_edges_not_approximations() {
    let test = "the_packing_threshold_and_slab_size_are_edges_not_approximations";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    let t = 64 * 1024;
    // t.0 below, t.1 at, t.2 above the threshold; t.3 empty; t.4, t.5
    // small again after a buffer of its own.
    let f = Temp::new("pack-edges");
    write_ours(&f.0, &[t - 1, t, t + 1, 0, 10, 4096]);
    let l = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().pack_below(t as u64),
    )
    .unwrap();
    let one = |name: &str| l.get(name).unwrap().buffers()[0].clone();
    assert!(one("t.1").as_whole().is_some(), "at the threshold: its own");
    assert!(one("t.2").as_whole().is_some(), "above: its own");
    assert_eq!(one("t.3").byte_len(), 0);
    // t.0, t.4, t.5 and the sparse tensor's three buffers share one slab,
    // across the buffers of their own between them.
    let (z, a, b) = (one("t.0"), one("t.4"), one("t.5"));
    assert_eq!(z.buffer().id(), a.buffer().id());
    assert_eq!(a.buffer().id(), b.buffer().id());
    assert!(!a.is_whole() && b.offset() > a.offset() && a.offset() > z.offset());
    assert_eq!(l.slabs, 1);
    assert_eq!(l.packed, 1 + 2 + 3);
    let mut file = hurray_io::file::open(&f.0).unwrap();
    let view = file.view().unwrap();
    for t in &l.tensors {
        same_as_file(&c, &view, t);
    }
    // A slab exactly as large as two 4 KiB buffers (packed at 4096, an
    // offset every alignment divides) holds both; one byte less cuts it
    // after the first.
    let g = Temp::new("pack-slab-edge");
    write_ours(&g.0, &[4096, 4096, 4096]);
    let mut gf = hurray_io::file::open(&g.0).unwrap();
    let gv = gf.view().unwrap();
    let two = 2 * 4096;
    for (size, shared) in [(two, true), (two - 1, false)] {
        let l = load_file(
            &c.device,
            &c.queue,
            &g.0,
            LoadOptions::default().slab_size(size),
        )
        .unwrap();
        let id = |n: &str| l.get(n).unwrap().buffers()[0].buffer().id();
        assert_eq!(id("t.0") == id("t.1"), shared, "slab size {size}");
        assert_ne!(id("t.1"), id("t.2"), "slab size {size}");
        for t in &l.tensors {
            same_as_file(&c, &gv, t);
            for b in t.buffers() {
                assert!(b.buffer().byte_len() <= size);
            }
        }
    }
}

#[test]
fn slabs_are_reused_packed_tensors_save_and_copy_out() {
    let test = "slabs_are_reused_packed_tensors_save_and_copy_out";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    let sizes: Vec<usize> = (0..500).map(|i| 100 + (i * 37) % 8000).collect();
    let (a, b) = (Temp::new("slab-a"), Temp::new("slab-b"));
    write_seeded(&a.0, &sizes, 4);
    write_seeded(&b.0, &sizes, 5);
    let opts = || LoadOptions::default().slab_size(512 * 1024);
    let first = load_file(&c.device, &c.queue, &a.0, opts()).unwrap();
    assert!(first.slabs > 1);
    let ids: std::collections::BTreeSet<u64> = first
        .tensors
        .iter()
        .map(|t| t.buffers()[0].buffer().id())
        .collect();
    // The same layout, other bytes: every slab taken over.
    let again = load_file(&c.device, &c.queue, &b.0, opts().reuse(first)).unwrap();
    assert_eq!(again.reused, again.tensors.len());
    let now: std::collections::BTreeSet<u64> = again
        .tensors
        .iter()
        .map(|t| t.buffers()[0].buffer().id())
        .collect();
    assert_eq!(ids, now);
    let mut fb = hurray_io::file::open(&b.0).unwrap();
    let vb = fb.view().unwrap();
    for t in &again.tensors {
        same_as_file(&c, &vb, t);
    }
    // Another layout (smaller slabs): nothing fits, new slabs.
    let other = load_file(
        &c.device,
        &c.queue,
        &b.0,
        LoadOptions::default()
            .slab_size(256 * 1024)
            .reuse(again.clone()),
    )
    .unwrap();
    assert_eq!(other.reused, 0);
    for t in &other.tensors {
        same_as_file(&c, &vb, t);
    }

    // A packed tensor copied out into a buffer of its own.
    let t = again.get("t.3").unwrap();
    let s = &t.buffers()[0];
    assert!(!s.is_whole());
    let own = s.to_buffer(&c.device, &c.queue).unwrap();
    assert_eq!(own.byte_len(), s.byte_len());
    assert_ne!(own.id(), s.buffer().id());
    assert_eq!(
        own.readback_vec::<u8>(&c.device, &c.queue).unwrap(),
        back(&c, s)
    );
    // A whole slice is its buffer.
    let whole = GpuSlice::whole(own.clone());
    assert_eq!(whole.to_buffer(&c.device, &c.queue).unwrap().id(), own.id());
    assert!(GpuSlice::new(own.clone(), 1, own.byte_len()).is_err());

    // GPU -> file of packed tensors: the same bytes as the source file.
    let out = Temp::new("slab-save");
    save_file(&c.device, &c.queue, &out.0, &again.tensors).unwrap();
    let mut fo = hurray_io::file::open(&out.0).unwrap();
    let vo = fo.view().unwrap();
    for t in vb.iter_file_order() {
        let u = vo.get(t.name()).unwrap();
        assert_eq!(u.descriptor().as_bytes(), t.descriptor().as_bytes());
        assert!(u.buffers().eq(t.buffers()), "tensor {}", t.name());
    }
}

#[test]
fn a_load_reports_its_phases_and_their_parts_fit_inside_allocate() {
    let test = "a_load_reports_its_phases_and_their_parts_fit_inside_allocate";
    let Some(c) = ctx(test) else { return };
    if c.adapter_info().backend != hurray_gpu::wgpu::Backend::Vulkan {
        eprintln!("SKIPPED {test}: the loader's tests compare Vulkan tags");
        return;
    }
    let sizes: Vec<usize> = (0..400).map(|i| 4 + (i * 13) % 700).collect();
    let f = Temp::new("phases");
    write_seeded(&f.0, &sizes, 5);
    // The whole file: listed by the validation, planned and re-tagged
    // beside it by helper threads.
    let cold = load_file(&c.device, &c.queue, &f.0, LoadOptions::default()).unwrap();
    let t = cold.times;
    for (name, d) in [
        ("validate", t.validate),
        ("retag", t.retag),
        ("plan", t.plan),
        ("allocate", t.allocate),
        ("gpu_allocate", t.gpu_allocate),
        ("copy", t.copy),
        ("build", t.build),
    ] {
        assert!(d > std::time::Duration::ZERO, "{name} was not timed: {t:?}");
    }
    assert_eq!(t.list, std::time::Duration::ZERO, "{t:?}");
    assert!(t.gpu_allocate <= t.allocate, "{t:?}");
    // Chosen tensors: listed, planned and re-tagged on the calling thread,
    // inside `allocate`.
    let names: Vec<String> = (0..sizes.len()).rev().map(|i| format!("t.{i}")).collect();
    let some = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().only(&names),
    )
    .unwrap();
    let t = some.times;
    for (name, d) in [("list", t.list), ("retag", t.retag), ("plan", t.plan)] {
        assert!(d > std::time::Duration::ZERO, "{name} was not timed: {t:?}");
    }
    assert!(
        t.list + t.retag + t.plan + t.gpu_allocate <= t.allocate,
        "{t:?}"
    );
    // Both loads hold the same bytes under the same names.
    assert!(
        contents(&c, &some)
            .into_iter()
            .rev()
            .eq(contents(&c, &cold).into_iter().take(sizes.len()))
    );
    // Into reused buffers nothing is created on the GPU.
    let again = load_file(
        &c.device,
        &c.queue,
        &f.0,
        LoadOptions::default().reuse(cold),
    )
    .unwrap();
    assert_eq!(again.reused, again.tensors.len());
    assert_eq!(again.times.gpu_allocate, std::time::Duration::ZERO);
    assert!(again.times.build > std::time::Duration::ZERO);
}
