//! Host memory the GPU reaches by DMA (`HostBuffer`, and the transfer
//! engine's DMA staging), on a real adapter: lavapipe in CI, which offers
//! `VK_EXT_external_memory_host` with a 4 KiB alignment as NVIDIA does.
#![cfg(target_os = "linux")]

mod common;

use common::{dma_ctx, page_aligned, random_bytes};
use hurray_gpu::wgpu::{self, BufferUsages};
use hurray_gpu::{
    ApiMisuse, BackendError, ContextOptions, GpuBufferHandle, GpuContext, HostBuffer, ShareError,
    staging_stats,
};

const RW: BufferUsages = BufferUsages::COPY_SRC.union(BufferUsages::COPY_DST);

/// Every transfer form, at sizes around the DMA threshold and chunk edges
/// and at unaligned offsets, returns exactly the bytes written; returns how
/// many staged transfers ran.
fn every_form_is_exact(c: &GpuContext) -> u64 {
    let (d, q) = (&c.device, &c.queue);
    let mut transfers = 0;
    for (i, len) in [
        1 << 20,
        (1 << 20) + 1,
        (2 << 20) + 3,
        (5 << 20) + 7,
        (9 << 20) + 4094,
    ]
    .into_iter()
    .enumerate()
    {
        let data = random_bytes(len, i as u64 + 1);
        let h = GpuBufferHandle::upload(d, q, &data, RW).unwrap();
        assert_eq!(h.readback_vec::<u8>(d, q).unwrap(), data, "upload {len}");
        transfers += 2;
        for offset in [0u64, 12] {
            let n = len as u64 - offset;
            let n = n - n % 4;
            if n < 1 << 20 {
                continue; // below the DMA threshold
            }
            let part = random_bytes(n as usize, offset + 7);
            h.write(d, q, offset, &part).unwrap();
            let mut out = Vec::new();
            h.readback_range(d, q, offset, n, &mut out).unwrap();
            assert!(out == part, "write/readback_range {len} at {offset}");
            let back = h
                .read_mapped(d, q, offset + 1, n - 1, |b| b == &part[1..])
                .unwrap();
            assert!(back, "read_mapped {len} at {}", offset + 1);
            transfers += 3;
        }
        // write_mapped: bytes generated in place.
        h.write_mapped(d, q, 0, len as u64 - len as u64 % 4, |from, part| {
            let n = part.len() as u64;
            part.write_iter((from..from + n).map(|k| (k * 31 % 251) as u8));
        })
        .unwrap();
        let got = h.readback_vec::<u8>(d, q).unwrap();
        let whole = len - len % 4;
        assert!(
            got[..whole]
                .iter()
                .enumerate()
                .all(|(k, b)| *b == (k as u64 * 31 % 251) as u8),
            "write_mapped {len}"
        );
        assert_eq!(got[whole..], data[whole..], "bytes past write_mapped");
        transfers += 2;
    }
    transfers
}

/// One test, so that the process-wide counters of `staging_stats` are read
/// without other tests of this binary moving them meanwhile.
#[test]
fn transfers_take_dma_staging_where_offered_and_mapped_staging_otherwise() {
    let test = "transfers_take_dma_staging_where_offered_and_mapped_staging_otherwise";
    let Some(c) = dma_ctx(test) else { return };
    let before = staging_stats();
    let n = every_form_is_exact(&c);
    let after = staging_stats();
    assert!(
        after.dma_transfers - before.dma_transfers >= n,
        "{before:?} {after:?}"
    );
    assert_eq!(
        after.mapped_transfers, before.mapped_transfers,
        "no transfer of 1 MiB and more took mapped staging"
    );
    assert!(after.dma_pooled_bytes > 0, "DMA staging is kept for reuse");
    // Below 1 MiB: mapped staging, as before.
    let small = random_bytes(100_000, 9);
    let h = GpuBufferHandle::upload(&c.device, &c.queue, &small, RW).unwrap();
    assert_eq!(h.readback_vec::<u8>(&c.device, &c.queue).unwrap(), small);
    let small_done = staging_stats();
    assert!(small_done.mapped_transfers > after.mapped_transfers);
    assert_eq!(small_done.dma_transfers, after.dma_transfers);
    h.trim_staging();
    drop(c);

    // The fallback, forced by the option: same bytes, mapped staging only.
    let off = GpuContext::with_options(ContextOptions::default().host_dma(false)).unwrap();
    assert!(!off.host_dma());
    assert!(matches!(
        HostBuffer::alloc(&off.device, 4096),
        Err(ShareError::Unsupported(_))
    ));
    let before = staging_stats();
    let n = every_form_is_exact(&off);
    let after = staging_stats();
    assert_eq!(
        after.dma_transfers, before.dma_transfers,
        "the fallback took DMA"
    );
    assert!(after.mapped_transfers - before.mapped_transfers >= n);
}

#[test]
fn a_write_of_many_chunks_lands_exactly() {
    // A write longer than the DMA ring (eight 32 MiB chunks, four in
    // flight, and a short unaligned last one) lands byte for byte, in the
    // plain and the zero-copy form.
    let Some(c) = dma_ctx("a_write_of_many_chunks_lands_exactly") else {
        return;
    };
    let (d, q) = (&c.device, &c.queue);
    let len = (257usize << 20) + 6;
    let block = random_bytes((1 << 20) + 1, 77);
    let mut data = Vec::with_capacity(len);
    while data.len() < len {
        let take = block.len().min(len - data.len());
        data.extend_from_slice(&block[..take]);
    }
    let h = GpuBufferHandle::alloc(d, len as u64, RW).unwrap();
    let i = h.write(d, q, 0, &data).unwrap();
    hurray_gpu::wait_for(d, i).unwrap();
    let mut out = Vec::new();
    h.readback(d, q, &mut out).unwrap();
    assert!(out == data, "write of {len} bytes");
    // Zero-copy, at an offset: part `from` of the range gets the source's
    // bytes from `from + 1`, so a part placed anywhere else shows.
    let off = 4096u64;
    let n = len as u64 - off - 2;
    let i = h
        .write_mapped(d, q, off, n, |from, mut part| {
            let at = usize::try_from(from).unwrap() + 1;
            let k = part.len();
            part.copy_from_slice(&data[at..at + k]);
        })
        .unwrap();
    hurray_gpu::wait_for(d, i).unwrap();
    h.readback(d, q, &mut out).unwrap();
    let (off, n) = (off as usize, n as usize);
    assert!(out[..off] == data[..off], "bytes before the range");
    assert!(
        out[off..off + n] == data[1..n + 1],
        "write_mapped of {n} bytes"
    );
    assert!(out[off + n..] == data[off + n..], "bytes past the range");
}

#[test]
fn streamed_copies_land_exactly_from_and_to_unaligned_addresses() {
    // From 32 MiB up, the upload's copy into staging and the readback's copy
    // out of it use non-temporal stores in 64-byte lines after a head that
    // aligns the destination: a source at an odd address, an odd offset in
    // the buffer and an odd length cut every line differently from the
    // chunks, and every byte must still land once.
    let Some(c) = dma_ctx("streamed_copies_land_exactly_from_and_to_unaligned_addresses") else {
        return;
    };
    let (d, q) = (&c.device, &c.queue);
    let len = (40usize << 20) + 9;
    let data = random_bytes(len + 3, 31);
    let src = &data[3..]; // an odd address
    // The write ends at the buffer's end (a length not a multiple of 4 must).
    let h = GpuBufferHandle::alloc(d, len as u64 + 8, RW).unwrap();
    let i = h.write(d, q, 8, src).unwrap();
    hurray_gpu::wait_for(d, i).unwrap();
    let mut out = Vec::new();
    h.readback_range(d, q, 8, len as u64, &mut out).unwrap();
    assert_eq!(out.len(), len);
    assert!(out == src, "{len} bytes written at 8 and read back");
    // A read whose start is not the buffer's: the copy out of staging
    // starts mid-chunk.
    h.readback_range(d, q, 8 + 5, len as u64 - 7, &mut out)
        .unwrap();
    assert!(out == src[5..len - 2], "the inner range");
}

#[test]
fn host_buffer_of_ours_copies_both_ways_and_outlives_a_queued_copy() {
    let test = "host_buffer_of_ours_copies_both_ways_and_outlives_a_queued_copy";
    let Some(c) = dma_ctx(test) else { return };
    let (d, q) = (&c.device, &c.queue);
    let len = 3 << 20;
    let data = random_bytes(len, 5);
    let mut host = HostBuffer::alloc(d, len as u64 - 5).unwrap();
    assert_eq!(host.len(), len as u64, "rounded up to pages");
    host.write(0, &data).unwrap();
    let gpu = GpuBufferHandle::alloc(d, len as u64, RW).unwrap();
    let mut e = d.create_command_encoder(&Default::default());
    e.copy_buffer_to_buffer(host.buffer(), 0, gpu.buffer(), 0, len as u64);
    q.submit([e.finish()]);
    // Dropped with the copy queued: wgpu frees the memory after the copy.
    drop(host);
    assert!(gpu.readback_vec::<u8>(d, q).unwrap() == data);

    // GPU -> host, then read on the host.
    let back = HostBuffer::alloc(d, len as u64).unwrap();
    let mut e = d.create_command_encoder(&Default::default());
    e.copy_buffer_to_buffer(gpu.buffer(), 4096, back.buffer(), 0, (len - 4096) as u64);
    q.submit([e.finish()]);
    let mut out = vec![0u8; len - 4096];
    back.read(0, &mut out).unwrap();
    assert!(out == data[4096..]);
    // Bounds are checked.
    assert!(matches!(
        back.read(len as u64 - 2, &mut [0u8; 4]),
        Err(BackendError::ApiMisuse(ApiMisuse::RangeOutOfBounds { .. }))
    ));
}

#[test]
fn a_callers_slice_is_held_until_the_gpu_lets_go() {
    let test = "a_callers_slice_is_held_until_the_gpu_lets_go";
    let Some(c) = dma_ctx(test) else { return };
    let (d, q) = (&c.device, &c.queue);
    let len = 2 << 20;
    let mut store = vec![0u8; len + 4096];
    let data = random_bytes(len, 11);
    let gpu = GpuBufferHandle::upload(d, q, &data, RW).unwrap();
    {
        let slice = page_aligned(&mut store, len);
        let host = HostBuffer::import(d, slice).unwrap();
        // A clone of the wgpu buffer does not keep the borrow alive.
        let clone = host.buffer().clone();
        let mut e = d.create_command_encoder(&Default::default());
        e.copy_buffer_to_buffer(gpu.buffer(), 0, host.buffer(), 0, len as u64);
        q.submit([e.finish()]);
        // Dropped with the copy queued: the drop waits for the GPU.
        drop(host);
        drop(clone);
    }
    let slice = page_aligned(&mut store, len);
    assert!(
        slice == &data[..],
        "the queued copy landed before the borrow ended"
    );

    // Read-only import of a caller's bytes: a copy source, never written.
    let src = HostBuffer::import_read_only(d, slice).unwrap();
    let dst = GpuBufferHandle::alloc(d, len as u64, RW).unwrap();
    let mut e = d.create_command_encoder(&Default::default());
    e.copy_buffer_to_buffer(src.buffer(), 0, dst.buffer(), 0, len as u64);
    q.submit([e.finish()]);
    drop(src);
    assert!(dst.readback_vec::<u8>(d, q).unwrap() == data);
}

#[test]
fn unaligned_or_read_only_misuse_is_a_typed_error() {
    let test = "unaligned_or_read_only_misuse_is_a_typed_error";
    let Some(c) = dma_ctx(test) else { return };
    let d = &c.device;
    let mut store = vec![0u8; 3 * 4096];
    let aligned = page_aligned(&mut store, 2 * 4096 + 1);
    let err = HostBuffer::import(d, &mut aligned[1..4097]).unwrap_err();
    assert!(
        matches!(
            err,
            ShareError::Backend(BackendError::ApiMisuse(ApiMisuse::UnalignedHostMemory { align, .. })) if align >= 4096
        ),
        "{err}"
    );
    let err = HostBuffer::import(d, &mut aligned[..100]).unwrap_err();
    assert!(matches!(
        err,
        ShareError::Backend(BackendError::ApiMisuse(ApiMisuse::UnalignedHostMemory {
            len: 100,
            ..
        }))
    ));
    let ro = &aligned[..4096];
    let mut host = HostBuffer::import_read_only(d, ro).unwrap();
    assert!(matches!(
        host.write(0, &[1]),
        Err(BackendError::ApiMisuse(ApiMisuse::MissingUsage { .. }))
    ));
    assert!(!host.buffer().usage().contains(wgpu::BufferUsages::COPY_DST));
    drop(host);
    drop(c);
}
