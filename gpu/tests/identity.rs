//! Device identity: the shorter API (no device or queue arguments) uses the
//! hurray-owned device state, exact by `Arc` identity, and agrees with the
//! seed's signatures, which name the device and queue.

mod common;

use common::ctx;
use hurray_gpu::wgpu::{self, BufferUsages};
use hurray_gpu::{ApiMisuse, BackendError, GpuBufferHandle, GpuContext, GpuResource};
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

/// Every shorter call against its seed twin on the same buffer.
#[test]
fn shorter_calls_agree_with_the_seed_calls() {
    let Some(c) = ctx("shorter_calls_agree_with_the_seed_calls") else {
        return;
    };
    let data: Vec<u32> = (0..1000).collect();
    let h = c.upload_slice(&data, RW).unwrap();
    assert_eq!(h.element_count(), 1000);
    assert_eq!(h.read_vec::<u32>().unwrap(), data);
    assert_eq!(
        h.read_vec::<u32>().unwrap(),
        h.readback_vec::<u32>(&c.device, &c.queue).unwrap()
    );

    let mut out = Vec::new();
    h.read(&mut out).unwrap();
    assert_eq!(out, data.as_bytes());
    h.read_range(6, 9, &mut out).unwrap();
    assert_eq!(out, &data.as_bytes()[6..15]);
    let sum = h
        .read_with(8, 8, |b| b.iter().map(|&x| u32::from(x)).sum::<u32>())
        .unwrap();
    assert_eq!(
        sum,
        data.as_bytes()[8..16].iter().map(|&x| u32::from(x)).sum()
    );

    h.write_at(4, 7u32.as_bytes()).unwrap();
    h.write_with(8, 8, |from, part| {
        let n = part.len() as u64;
        part.write_iter((from..from + n).map(|i| 0xA0 + i as u8));
    })
    .unwrap();
    let mut seed = Vec::new();
    h.readback_prefix(&c.device, &c.queue, 16, &mut seed)
        .unwrap();
    let mut want = data.as_bytes()[..16].to_vec();
    want[4..8].copy_from_slice(7u32.as_bytes());
    for (i, b) in want[8..16].iter_mut().enumerate() {
        *b = 0xA0 + i as u8;
    }
    assert_eq!(seed, want);

    // Misuse is caught before anything is encoded, as in the seed calls.
    assert!(matches!(
        misuse(h.read_range(4000, 1, &mut out)),
        ApiMisuse::RangeOutOfBounds { .. }
    ));
    assert!(matches!(
        misuse(h.write_at(1, &[1])),
        ApiMisuse::UnalignedWrite { .. }
    ));
    // (An upload's buffer always has COPY_DST; an allocation has only what
    // it asks for.)
    let ro = c.upload(b"abc", BufferUsages::COPY_SRC).unwrap();
    let src_only = c.alloc(4, BufferUsages::COPY_SRC).unwrap();
    assert!(matches!(
        misuse(src_only.write_at(0, b"x")),
        ApiMisuse::MissingUsage { .. }
    ));
    assert!(matches!(
        misuse(ro.read_vec::<u32>()),
        ApiMisuse::ElementSize { .. }
    ));

    // Allocation and kernels through the context.
    let z = c.alloc(6, RW).unwrap();
    z.read(&mut out).unwrap();
    assert_eq!(out, [0; 6]);
    let e = c.alloc_elements::<u32>(64, RW).unwrap();
    assert_eq!((e.byte_len(), e.element_count()), (256, 64));
    let k = c.kernel(DOUBLE, "double").unwrap();
    k.launch(&[(&h).into()], [16, 1, 1]).unwrap();
    let doubled = h.read_vec::<u32>().unwrap();
    assert_eq!(doubled[999], 1998);
    let args = c
        .upload_slice(&[16u32, 1, 1], BufferUsages::INDIRECT)
        .unwrap();
    k.launch_indirect(&[(&h).into()], &args, 0).unwrap();
    assert_eq!(h.read_vec::<u32>().unwrap()[999], 3996);
}

/// Two instances' first devices have equal wgpu ids; the contexts' handles
/// and kernels still never mix, whichever signature made them.
#[test]
fn two_instances_never_mix_through_either_signature() {
    let test = "two_instances_never_mix_through_either_signature";
    let Some(a) = ctx(test) else { return };
    let Some(b) = ctx(test) else { return };
    let data: Vec<u32> = (0..64).collect();
    let ha = a.upload_slice(&data, RW).unwrap();
    let hb = b.upload_slice(&data, RW).unwrap();
    let seed_a = GpuBufferHandle::upload_slice(&a.device, &a.queue, &data, RW).unwrap();
    let ka = a.kernel(DOUBLE, "double").unwrap();
    let kb = b.kernel(DOUBLE, "double").unwrap();

    // The seed's signatures check the named device against the handle's.
    assert_eq!(
        misuse(ha.readback_vec::<u32>(&b.device, &b.queue)),
        ApiMisuse::WrongDevice
    );
    // Kernels compare identities: another context's buffer is refused,
    // the same context's (either signature) is accepted.
    assert_eq!(
        misuse(ka.launch(&[(&hb).into()], [1, 1, 1])),
        ApiMisuse::WrongDevice
    );
    assert_eq!(
        misuse(kb.launch(&[GpuResource::range(&ha, 0, 16).unwrap()], [1, 1, 1])),
        ApiMisuse::WrongDevice
    );
    ka.launch(&[(&seed_a).into()], [1, 1, 1]).unwrap();
    ka.dispatch(&a.queue, &[(&ha).into()], [1, 1, 1]).unwrap();
    kb.launch(&[(&hb).into()], [1, 1, 1]).unwrap();
    let doubled: Vec<u32> = data.iter().map(|v| v * 2).collect();
    assert_eq!(seed_a.read_vec::<u32>().unwrap(), doubled);
    assert_eq!(ha.read_vec::<u32>().unwrap(), doubled);
    assert_eq!(hb.read_vec::<u32>().unwrap(), doubled);
}

/// A device hurray never saw with its queue: the seed's `alloc` names only
/// the device, so the shorter calls cannot know where to submit until a
/// call names the queue.
#[test]
fn a_queue_never_named_is_a_typed_error_until_it_is() {
    let test = "a_queue_never_named_is_a_typed_error_until_it_is";
    let Some(c) = ctx(test) else { return };
    let made = pollster::block_on(c.adapter.request_device(&wgpu::DeviceDescriptor::default()));
    let Some((device, queue)) = common::gate::need(test, made) else {
        return;
    };
    let h = GpuBufferHandle::alloc(&device, 8, RW).unwrap();
    let k = hurray_gpu::GpuKernel::new(&device, DOUBLE, "double").unwrap();
    let mut out = Vec::new();
    assert_eq!(misuse(h.read(&mut out)), ApiMisuse::UnknownQueue);
    assert_eq!(misuse(h.write_at(0, &[0; 4])), ApiMisuse::UnknownQueue);
    assert_eq!(
        misuse(k.launch(&[(&h).into()], [1, 1, 1])),
        ApiMisuse::UnknownQueue
    );
    // Named once, known for good: for this handle, and for later ones.
    h.write(&device, &queue, 0, &[1, 0, 0, 0]).unwrap();
    k.launch(&[(&h).into()], [1, 1, 1]).unwrap();
    h.read(&mut out).unwrap();
    assert_eq!(out, [2, 0, 0, 0, 0, 0, 0, 0]);
    let later = GpuBufferHandle::alloc(&device, 4, RW).unwrap();
    later.read(&mut out).unwrap();
    assert_eq!(out, [0; 4]);
}

/// A context wrapping a clone of another context's device shares its
/// identity: their buffers and kernels meet.
#[test]
fn a_wrapped_clone_of_a_device_is_the_same_device() {
    let Some(a) = ctx("a_wrapped_clone_of_a_device_is_the_same_device") else {
        return;
    };
    let b = GpuContext::from_device(a.adapter.clone(), a.device.clone(), a.queue.clone());
    let h = b.upload_slice(&[1u32, 2, 3, 4], RW).unwrap();
    let k = a.kernel(DOUBLE, "double").unwrap();
    k.launch(&[(&h).into()], [1, 1, 1]).unwrap();
    assert_eq!(
        h.readback_vec::<u32>(&a.device, &a.queue).unwrap(),
        [2, 4, 6, 8]
    );
}
