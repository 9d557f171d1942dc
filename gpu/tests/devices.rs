//! Handles and kernels used with devices, queues and instances that are not
//! their own; devices with degenerate limits; concurrent device teardown.

mod common;

use common::{ctx, within};
use hurray_gpu::wgpu::{self, BufferUsages};
use hurray_gpu::{ApiMisuse, BackendError, GpuBufferHandle, GpuContext, GpuKernel, GpuResource};
use zerocopy::IntoBytes;

const DOUBLE: &str = r"
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(64)
fn double(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < arrayLength(&data) { data[id.x] = data[id.x] * 2u; }
}
";

const RW: BufferUsages = BufferUsages::STORAGE
    .union(BufferUsages::COPY_SRC)
    .union(BufferUsages::COPY_DST);

#[track_caller]
fn misuse<T: std::fmt::Debug>(r: Result<T, BackendError>) -> ApiMisuse {
    match r {
        Err(BackendError::ApiMisuse(m)) => m,
        other => panic!("expected API misuse, got {other:?}"),
    }
}

/// Written against the code before issue 11: a handle read with another
/// instance's device mixed the two instances' objects (wgpu-core looks ids up
/// in the wrong registry and panics, or reads another buffer).
#[test]
fn another_instance_or_device_is_a_typed_error() {
    let test = "another_instance_or_device_is_a_typed_error";
    let Some(a) = ctx(test) else { return };
    // A second instance: its first device usually has the same id as `a`'s,
    // so `wgpu::Device::==` alone cannot tell them apart.
    let Some(b) = ctx(test) else { return };
    // A second device of the same instance and adapter.
    let second = pollster::block_on(GpuContext::from_adapter(a.adapter.clone()));
    let Some(a2) = common::gate::need(test, second) else {
        return;
    };

    let data: Vec<u32> = (0..64).collect();
    let h = GpuBufferHandle::upload_slice(&a.device, &a.queue, &data, RW).unwrap();
    let hb = GpuBufferHandle::upload_slice(&b.device, &b.queue, &data, RW).unwrap();
    let mut out = Vec::new();
    for (device, queue, what) in [
        (&b.device, &b.queue, "instance"),
        (&a2.device, &a2.queue, "device"),
    ] {
        assert_eq!(
            misuse(h.readback(device, queue, &mut out)),
            ApiMisuse::WrongDevice,
            "{what}"
        );
        assert_eq!(
            misuse(h.read_mapped(device, queue, 0, 4, |_| ())),
            ApiMisuse::WrongDevice
        );
        assert_eq!(
            misuse(h.readback_vec::<u32>(device, queue)),
            ApiMisuse::WrongDevice
        );
        assert_eq!(
            misuse(h.write(device, queue, 0, &[1, 2, 3, 4])),
            ApiMisuse::WrongDevice
        );
    }
    // The right device with another device's queue (same instance).
    assert_eq!(
        misuse(h.readback(&a.device, &a2.queue, &mut out)),
        ApiMisuse::WrongQueue
    );
    assert_eq!(
        misuse(GpuBufferHandle::upload(&a.device, &a2.queue, &[1; 4], RW)),
        ApiMisuse::WrongQueue
    );
    // Another instance's queue may carry the same id as `a`'s, and wgpu
    // offers no way to tell (queues have no error scopes of their own); hurray
    // submits to the queue it recorded for the handle's device, never to the
    // caller's, so such a call is either refused or works on the right queue.
    match h.readback(&a.device, &b.queue, &mut out) {
        Err(BackendError::ApiMisuse(ApiMisuse::WrongQueue)) => {}
        Ok(()) => assert_eq!(out, data.as_bytes()),
        other => panic!("{other:?}"),
    }

    // Kernels: resources and queues of other devices.
    let k = GpuKernel::new(&a.device, DOUBLE, "double").unwrap();
    assert_eq!(
        misuse(k.dispatch(&a.queue, &[(&hb).into()], [1, 1, 1])),
        ApiMisuse::WrongDevice
    );
    assert_eq!(
        misuse(k.dispatch(&a2.queue, &[(&h).into()], [1, 1, 1])),
        ApiMisuse::WrongQueue
    );
    let kb = GpuKernel::new(&b.device, DOUBLE, "double").unwrap();
    assert_eq!(
        misuse(kb.dispatch(&b.queue, &[(&h).into()], [1, 1, 1])),
        ApiMisuse::WrongDevice
    );
    let range = GpuResource::range(&hb, 0, 16).unwrap();
    assert_eq!(
        misuse(k.dispatch(&a.queue, &[range], [1, 1, 1])),
        ApiMisuse::WrongDevice
    );

    // Nothing was disturbed: each device still works with its own objects.
    k.dispatch(&a.queue, &[(&h).into()], [1, 1, 1]).unwrap();
    assert_eq!(
        h.readback_vec::<u32>(&a.device, &a.queue).unwrap(),
        data.iter().map(|v| v * 2).collect::<Vec<_>>()
    );
    assert_eq!(hb.readback_vec::<u32>(&b.device, &b.queue).unwrap(), data);
}

/// Written against the code before issue 11: with `max_buffer_size` below 8
/// the chunk size was 0 and every read looped forever.
#[test]
fn tiny_device_limits_do_not_hang() {
    let Some(c) = ctx("tiny_device_limits_do_not_hang") else {
        return;
    };
    let adapter = c.adapter.clone();
    within(8, "reads and writes on tiny-limit devices", move || {
        for max in [4u64, 7, 12] {
            let limits = wgpu::Limits {
                max_buffer_size: max,
                ..adapter.limits()
            };
            let t = pollster::block_on(GpuContext::from_adapter_with_limits(
                adapter.clone(),
                limits,
            ))
            .unwrap();
            let (d, q) = (&t.device, &t.queue);
            let usage = BufferUsages::COPY_SRC | BufferUsages::COPY_DST;
            let biggest = max - max % 4;
            let data: Vec<u8> = (1..=biggest as u8).collect();
            let h = GpuBufferHandle::upload(d, q, &data, usage).unwrap();
            let mut out = Vec::new();
            h.readback(d, q, &mut out).unwrap();
            assert_eq!(out, data, "max_buffer_size {max}");
            h.readback_range(d, q, 1, 2, &mut out).unwrap();
            assert_eq!(out, &data[1..3]);
            assert_eq!(
                h.read_mapped(d, q, 0, biggest, <[u8]>::to_vec).unwrap(),
                data
            );
            h.write(d, q, 0, &[9, 9, 9, 9]).unwrap();
            h.readback_prefix(d, q, 4, &mut out).unwrap();
            assert_eq!(out, [9, 9, 9, 9]);
            assert!(matches!(
                GpuBufferHandle::alloc(d, biggest + 1, usage),
                Err(BackendError::ApiMisuse(ApiMisuse::TooLarge { .. }))
            ));
        }
    });
}

/// Written against the code before issue 11 (it hung on the H200, NVIDIA
/// 580.159.04: destroying devices on several threads at once deadlocks the
/// driver; lavapipe never showed it). Contexts now tear down one at a time.
#[test]
fn contexts_created_and_dropped_on_many_threads() {
    let Some(c) = ctx("contexts_created_and_dropped_on_many_threads") else {
        return;
    };
    drop(c);
    within(9, "8 threads x 2 rounds of context create/use/drop", || {
        for _ in 0..2 {
            std::thread::scope(|s| {
                for t in 0..8u8 {
                    s.spawn(move || {
                        let c = GpuContext::new().unwrap();
                        let h = GpuBufferHandle::upload(&c.device, &c.queue, &[t; 64], RW).unwrap();
                        let mut out = Vec::new();
                        h.readback(&c.device, &c.queue, &mut out).unwrap();
                        assert_eq!(out, [t; 64]);
                    });
                }
            });
        }
    });
}
