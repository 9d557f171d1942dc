//! The non-blocking API, in-place writes and the upload engine, on a real
//! adapter.

mod common;

use std::task::{Context, Poll, Waker};

use common::{ctx, drive, random_bytes};
use hurray_gpu::wgpu::{self, BufferUsages};
use hurray_gpu::{ApiMisuse, BackendError, GpuBufferHandle};

const RW: BufferUsages = BufferUsages::COPY_SRC.union(BufferUsages::COPY_DST);

fn assert_send<T: Send>(_: &T) {}

/// Written against the code before issue 11 (which had no async API: every
/// call blocked in `poll(Wait)`). The futures are `Send`, never complete
/// while nobody polls the device — so they never poll it themselves — and
/// complete once the application polls it, as an event loop would.
#[test]
fn async_reads_wait_for_whoever_polls_the_device() {
    let Some(c) = ctx("async_reads_wait_for_whoever_polls_the_device") else {
        return;
    };
    let (d, q) = (&c.device, &c.queue);
    let data = random_bytes(4096, 3);
    let h = GpuBufferHandle::upload(d, q, &data, RW).unwrap();
    let _ = d.poll(wgpu::PollType::wait_indefinitely());

    let mut out = Vec::new();
    {
        let fut = h.readback_async(d, q, &mut out);
        assert_send(&fut);
        let mut fut = std::pin::pin!(fut);
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..50 {
            assert!(
                fut.as_mut().poll(&mut cx).is_pending(),
                "completed without a device poll"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        loop {
            d.poll(wgpu::PollType::Poll).unwrap();
            if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                r.unwrap();
                break;
            }
        }
    }
    assert_eq!(out, data);

    // Every read form, driven by an application-style loop.
    drive(d, h.readback_prefix_async(d, q, 5, &mut out)).unwrap();
    assert_eq!(out, &data[..5]);
    drive(d, h.readback_range_async(d, q, 3, 1000, &mut out)).unwrap();
    assert_eq!(out, &data[3..1003]);
    let words = drive(d, h.readback_vec_async::<u32>(d, q)).unwrap();
    assert_eq!(words.as_slice().len(), 1024);
    assert_eq!(words[0].to_le_bytes(), data[..4]);
    let last = drive(d, h.read_mapped_async(d, q, 4000, 96, |b| b.to_vec())).unwrap();
    assert_eq!(last, &data[4000..]);
    // Errors come back from the futures too.
    assert_eq!(
        drive(d, h.readback_range_async(d, q, 4000, 97, &mut out)).err(),
        Some(BackendError::ApiMisuse(ApiMisuse::RangeOutOfBounds {
            offset: 4000,
            len: 97,
            byte_len: 4096
        }))
    );
}

/// Written against the code before issue 12 (no in-place writes). Writes
/// never wait on the GPU: a write of up to four chunks completes in its
/// first poll, with nobody polling the device.
#[test]
fn async_writes_and_uploads_never_block() {
    let Some(c) = ctx("async_writes_and_uploads_never_block") else {
        return;
    };
    let (d, q) = (&c.device, &c.queue);
    let data = random_bytes(4 << 20, 9);
    let h = GpuBufferHandle::alloc(d, 4 << 20, RW).unwrap();
    {
        let fut = h.write_async(d, q, 0, &data);
        assert_send(&fut);
        let mut fut = std::pin::pin!(fut);
        let Poll::Ready(r) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
            panic!("a four-chunk write waited");
        };
        r.unwrap();
    }
    let mut out = Vec::new();
    drive(d, h.readback_async(d, q, &mut out)).unwrap();
    assert!(out == data);

    // Longer writes wait only for their own staging to come back.
    let big = random_bytes(20 << 20, 10);
    let u = drive(d, GpuBufferHandle::upload_slice_async(d, q, &big, RW)).unwrap();
    drive(d, u.readback_async(d, q, &mut out)).unwrap();
    assert!(out == big);
    let words: Vec<u32> = (0..1000).collect();
    drive(d, u.write_slice_async(d, q, 400, &words)).unwrap();
    drive(
        d,
        u.write_mapped_async(d, q, 8000, 4, |_, mut p| p.copy_from_slice(&[7; 4])),
    )
    .unwrap();
    drive(d, u.readback_range_async(d, q, 400, 7604, &mut out)).unwrap();
    assert_eq!(
        &out[..4000],
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<_>>()
    );
    assert_eq!(&out[4000..7600], &big[4400..8000]);
    assert_eq!(&out[7600..], [7; 4]);
}

/// Written against the code before issue 12 (no in-place writes): writes at
/// every legal offset and size, small and chunked, land exactly where asked
/// and nowhere else, through one resident buffer.
#[test]
fn in_place_writes_land_exactly() {
    let Some(c) = ctx("in_place_writes_land_exactly") else {
        return;
    };
    let (d, q) = (&c.device, &c.queue);
    let n = (3 << 20) + 6; // not a multiple of 4: the last word is partial
    let mut model = random_bytes(n, 1);
    let h = GpuBufferHandle::upload(d, q, &model, RW).unwrap();
    let id = h.id();
    let mut out = Vec::new();
    let cases: [(usize, usize); 9] = [
        (0, 4),
        (8, 12),
        (4096, 65_536),     // the largest small write
        (100, 65_540),      // the smallest staged one
        (1 << 20, 1 << 20), // chunked
        (0, n - 2),         // a whole-buffer-ish write, aligned end
        (n - 2, 2),         // ends at the logical end
        (n - 6, 6),
        (n, 0), // empty, at the end
    ];
    for (i, &(offset, len)) in cases.iter().enumerate() {
        let patch = random_bytes(len, 100 + i as u64);
        h.write(d, q, offset as u64, &patch).unwrap();
        model[offset..offset + len].copy_from_slice(&patch);
        h.readback(d, q, &mut out).unwrap();
        assert!(out == model, "after writing [{offset}, +{len})");
    }
    assert_eq!(h.id(), id, "the same buffer throughout");
    // Zero-copy write over several chunks and threads.
    h.write_mapped(d, q, 0, n as u64, |from, part| {
        let len = part.len() as u64;
        part.write_iter((from..from + len).map(|i| (i % 251) as u8));
    })
    .unwrap();
    h.readback(d, q, &mut out).unwrap();
    assert!(out.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
    // Typed writes.
    let t = GpuBufferHandle::alloc_elements::<u32>(d, 1000, RW).unwrap();
    t.write_slice(d, q, 40, &[5u32, 6, 7]).unwrap();
    let v = t.readback_vec::<u32>(d, q).unwrap();
    assert_eq!(&v[9..14], [0, 5, 6, 7, 0]);
    // The returned index says when the GPU has the data.
    let i = t.write_slice(d, q, 0, &[1u32]).unwrap();
    d.poll(wgpu::PollType::Wait {
        submission_index: Some(i),
        timeout: None,
    })
    .unwrap();
}

#[test]
fn write_errors_are_typed_and_checked_first() {
    let Some(c) = ctx("write_errors_are_typed_and_checked_first") else {
        return;
    };
    let (d, q) = (&c.device, &c.queue);
    let h = GpuBufferHandle::alloc(d, 10, RW).unwrap();
    let misuse = |r: Result<wgpu::SubmissionIndex, BackendError>| match r {
        Err(BackendError::ApiMisuse(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        misuse(h.write(d, q, 8, &[1, 2, 3])),
        ApiMisuse::RangeOutOfBounds {
            offset: 8,
            len: 3,
            byte_len: 10
        }
    );
    assert_eq!(misuse(h.write(d, q, u64::MAX, &[1])), ApiMisuse::Overflow);
    // Unaligned starts, and ends that are neither aligned nor the logical end.
    assert_eq!(
        misuse(h.write(d, q, 2, &[1, 2])),
        ApiMisuse::UnalignedWrite { offset: 2, len: 2 }
    );
    assert_eq!(
        misuse(h.write(d, q, 0, &[1, 2, 3])),
        ApiMisuse::UnalignedWrite { offset: 0, len: 3 }
    );
    h.write(d, q, 8, &[1, 2]).unwrap();
    // Without COPY_DST.
    let ro = GpuBufferHandle::alloc(d, 8, BufferUsages::COPY_SRC).unwrap();
    assert_eq!(
        misuse(ro.write(d, q, 0, &[1, 2, 3, 4])),
        ApiMisuse::MissingUsage {
            required: BufferUsages::COPY_DST,
            actual: BufferUsages::COPY_SRC
        }
    );
    assert!(
        misuse(ro.write_mapped(d, q, 0, 4, |_, _| ())).eq(&ApiMisuse::MissingUsage {
            required: BufferUsages::COPY_DST,
            actual: BufferUsages::COPY_SRC
        })
    );
    let mut out = Vec::new();
    h.readback(d, q, &mut out).unwrap();
    assert_eq!(
        out,
        [0, 0, 0, 0, 0, 0, 0, 0, 1, 2],
        "only the legal write landed"
    );
}

/// A panic inside a caller's `write_mapped` closure reaches the caller (as
/// with `std::thread::scope`), on whichever thread it ran; the handle and the
/// pool keep working.
#[test]
fn a_panicking_fill_closure_reaches_the_caller() {
    let Some(c) = ctx("a_panicking_fill_closure_reaches_the_caller") else {
        return;
    };
    let (d, q) = (&c.device, &c.queue);
    let h = GpuBufferHandle::alloc(d, 4 << 20, RW).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        h.write_mapped(d, q, 0, 4 << 20, |from, mut part| {
            assert!(from < 2 << 20, "the closure's own panic");
            part.fill(1);
        })
    }));
    assert!(r.is_err());
    h.write_mapped(d, q, 0, 4 << 20, |_, mut part| part.fill(2))
        .unwrap();
    let mut out = Vec::new();
    h.readback(d, q, &mut out).unwrap();
    assert!(out.iter().all(|&b| b == 2));
}
