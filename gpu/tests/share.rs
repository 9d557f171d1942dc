//! Sharing one allocation between two wgpu devices (two instances) of one
//! process, through a socket pair: writes on either side are seen on the
//! other, no host copy in between. The cross-process form is
//! `share_process.rs`; the hostile messages are unit tests of `share`.
#![cfg(target_os = "linux")]

mod common;

use std::os::unix::net::UnixStream;

use common::{ctx, sharing_ctx};
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor};
use hurray_gpu::wgpu::BufferUsages;
use hurray_gpu::{
    GpuBufferHandle, GpuKernel, SHARED_USAGE, ShareError, SharedBuffer, Unsupported,
    device_identity, resident_count,
};
use zerocopy::IntoBytes;

/// Writes `data[i] = i * 2654435761 ^ seed` (a pattern no copy of zeros or
/// of the producer's values could fake).
const PATTERN: &str = r"
struct Params { seed: u32, p0: u32, p1: u32, p2: u32 }
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;
@compute @workgroup_size(64)
fn pattern(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < arrayLength(&data) { data[id.x] = (id.x * 2654435761u) ^ params.seed; }
}
";

fn pattern(n: u32, seed: u32) -> Vec<u32> {
    (0..n)
        .map(|i| i.wrapping_mul(2_654_435_761) ^ seed)
        .collect()
}

#[test]
fn two_devices_share_one_allocation_both_ways() {
    let test = "two_devices_share_one_allocation_both_ways";
    let Some(a) = sharing_ctx(test) else { return };
    let Some(b) = sharing_ctx(test) else { return };
    assert_eq!(
        device_identity(&a.device).unwrap(),
        device_identity(&b.device).unwrap(),
        "one physical device"
    );
    const N: u32 = 1 << 16;
    let producer =
        GpuBufferHandle::alloc_exportable(&a.device, &a.queue, u64::from(N) * 4).unwrap();
    assert_eq!(producer.usage(), SHARED_USAGE);
    assert_eq!(
        producer.readback_vec::<u32>(&a.device, &a.queue).unwrap(),
        vec![0; N as usize]
    );
    producer
        .write_slice(&a.device, &a.queue, 0, &pattern(N, 1))
        .unwrap();

    let (tx, rx) = UnixStream::pair().unwrap();
    let message = producer
        .export(ElementType::UInt32, &[u64::from(N)])
        .unwrap();
    assert_eq!(message.buffer().device_tag(), DeviceTag::Vulkan);
    assert_eq!(message.buffer().sync_mode(), SyncMode::ProducerSynced);
    assert!(message.allocation_size() >= u64::from(N) * 4);
    message.send(&tx).unwrap();
    let received = SharedBuffer::recv(&rx).unwrap();
    assert_eq!(received.descriptor_bytes(), message.descriptor_bytes());
    let consumer = GpuBufferHandle::import(&b.device, &b.queue, received).unwrap();
    assert_eq!(consumer.byte_len(), u64::from(N) * 4);

    // The producer's write, seen by the consumer's device.
    assert_eq!(
        consumer.readback_vec::<u32>(&b.device, &b.queue).unwrap(),
        pattern(N, 1)
    );

    // The consumer's kernel writes; the producer reads it.
    let kernel = GpuKernel::new(&b.device, PATTERN, "pattern").unwrap();
    let seed = hurray_gpu::GpuResource::uniform(&[0xA5A5_5A5Au32, 0, 0, 0]);
    kernel
        .dispatch(&b.queue, &[(&consumer).into(), seed], [N / 64, 1, 1])
        .unwrap();
    // The consumer finishes its work before the producer reads (the readback
    // waits for the copy it submits, which follows the kernel on b's queue).
    assert_eq!(
        consumer.readback_vec::<u32>(&b.device, &b.queue).unwrap(),
        pattern(N, 0xA5A5_5A5A)
    );
    assert_eq!(
        producer.readback_vec::<u32>(&a.device, &a.queue).unwrap(),
        pattern(N, 0xA5A5_5A5A)
    );

    // Either side's handle keeps the memory: drop the producer's.
    drop(producer);
    assert_eq!(
        consumer.readback_vec::<u32>(&b.device, &b.queue).unwrap(),
        pattern(N, 0xA5A5_5A5A)
    );

    // An imported handle can be exported again (it kept the fd).
    let again = consumer
        .export(ElementType::UInt8, &[u64::from(N) * 4])
        .unwrap();
    let third = GpuBufferHandle::import(&a.device, &a.queue, again).unwrap();
    assert_eq!(
        third.readback_vec::<u32>(&a.device, &a.queue).unwrap(),
        pattern(N, 0xA5A5_5A5A)
    );
}

#[test]
fn a_dropped_shared_buffer_leaves_the_registry() {
    let Some(c) = sharing_ctx("a_dropped_shared_buffer_leaves_the_registry") else {
        return;
    };
    let h = GpuBufferHandle::alloc_exportable(&c.device, &c.queue, 256).unwrap();
    let id = h.id();
    let imported = GpuBufferHandle::import(
        &c.device,
        &c.queue,
        h.export(ElementType::UInt8, &[256]).unwrap(),
    )
    .unwrap();
    assert!(GpuBufferHandle::from_resident_id(id).is_some());
    let before = resident_count();
    drop((h, imported));
    assert!(GpuBufferHandle::from_resident_id(id).is_none());
    assert!(resident_count() < before);
}

#[test]
fn an_ordinary_buffer_is_not_exportable() {
    let Some(c) = ctx("an_ordinary_buffer_is_not_exportable") else {
        return;
    };
    let h = GpuBufferHandle::alloc(&c.device, 64, BufferUsages::STORAGE).unwrap();
    assert_eq!(
        h.export(ElementType::UInt8, &[64]).unwrap_err(),
        ShareError::NotExportable
    );
    assert_eq!(
        h.export_descriptor(&[]).unwrap_err(),
        ShareError::NotExportable
    );
}

#[test]
fn export_checks_its_descriptor() {
    let Some(c) = sharing_ctx("export_checks_its_descriptor") else {
        return;
    };
    assert_eq!(
        GpuBufferHandle::alloc_exportable(&c.device, &c.queue, 0).unwrap_err(),
        ShareError::Unsupported(Unsupported::Empty)
    );
    let h = GpuBufferHandle::alloc_exportable(&c.device, &c.queue, 64).unwrap();
    // A shape larger than the buffer: the encoder refuses it, with the
    // error it gives that descriptor itself.
    let own = [h.to_buffer_handle().unwrap()];
    let too_big = TensorDescriptor::row_major(ElementType::Float32, &[17], &own);
    let mut scratch = vec![0u8; too_big.encoded_len()];
    let refused = too_big.encode(&mut scratch).unwrap_err();
    assert_eq!(
        h.export(ElementType::Float32, &[17]).unwrap_err(),
        ShareError::Encode(refused)
    );
    // A descriptor of another buffer, and one that is no descriptor.
    let other = [BufferHandle::new(128, 64, DeviceTag::Vulkan, SyncMode::ProducerSynced).unwrap()];
    let desc = TensorDescriptor::row_major(ElementType::UInt8, &[128], &other);
    let mut bytes = vec![0u8; desc.encoded_len()];
    desc.encode(&mut bytes).unwrap();
    assert_eq!(
        h.export_descriptor(&bytes).unwrap_err(),
        ShareError::DescriptorMismatch
    );
    assert_eq!(
        h.export_descriptor(b"HRRY").unwrap_err(),
        ShareError::Descriptor(hurray_core::TensorView::parse(b"HRRY").unwrap_err())
    );
    // The async forms, driven by polling alone, give the same messages.
    let exported = common::drive(&c.device, h.export_async(ElementType::UInt8, &[64])).unwrap();
    assert_eq!(
        exported.descriptor_bytes(),
        h.export(ElementType::UInt8, &[64])
            .unwrap()
            .descriptor_bytes()
    );
    assert_eq!(
        common::drive(&c.device, h.export_descriptor_async(&bytes)).unwrap_err(),
        ShareError::DescriptorMismatch
    );
    // The handle's own descriptor, any layout: accepted as is.
    let desc = TensorDescriptor::column_major(ElementType::Float32, &[4, 4], &own);
    let mut bytes = vec![0u8; desc.encoded_len()];
    desc.encode(&mut bytes).unwrap();
    assert_eq!(
        h.export_descriptor(&bytes).unwrap().descriptor_bytes(),
        &bytes[..]
    );
}

/// The context's sharing calls name no device or queue: an allocation of
/// one context imported by another (another instance) is the same memory.
#[test]
fn contexts_share_without_naming_devices() {
    let test = "contexts_share_without_naming_devices";
    let Some(a) = sharing_ctx(test) else { return };
    let Some(b) = sharing_ctx(test) else { return };
    let producer = a.alloc_exportable(256).unwrap();
    producer.write_at(0, pattern(64, 7).as_bytes()).unwrap();
    let (tx, rx) = UnixStream::pair().unwrap();
    producer
        .export(ElementType::UInt32, &[64])
        .unwrap()
        .send(&tx)
        .unwrap();
    let consumer = b.import(SharedBuffer::recv(&rx).unwrap()).unwrap();
    assert_eq!(consumer.read_vec::<u32>().unwrap(), pattern(64, 7));
    // The consumer is `b`'s: `a`'s kernels refuse it, `b`'s take it.
    let ka = a.kernel(PATTERN, "pattern").unwrap();
    let seed = hurray_gpu::GpuResource::uniform(&[9u32, 0, 0, 0]);
    assert!(matches!(
        ka.launch(&[(&consumer).into(), seed.clone()], [1, 1, 1]),
        Err(hurray_gpu::BackendError::ApiMisuse(
            hurray_gpu::ApiMisuse::WrongDevice
        ))
    ));
    let kb = b.kernel(PATTERN, "pattern").unwrap();
    kb.launch(&[(&consumer).into(), seed], [1, 1, 1]).unwrap();
    // The consumer finishes its work (its read waits for it) before the
    // producer reads (`ProducerSynced`).
    assert_eq!(consumer.read_vec::<u32>().unwrap(), pattern(64, 9));
    assert_eq!(producer.read_vec::<u32>().unwrap(), pattern(64, 9));
    assert!(matches!(
        a.alloc_exportable(0),
        Err(ShareError::Unsupported(Unsupported::Empty))
    ));
}

/// `Event` sync between two devices: the producer's writes are queued, not
/// waited for; the export signals the buffer's timeline semaphore after
/// them; the consumer's import waits for it on its GPU; the consumer's
/// kernel is followed by its own signal, which the producer's GPU waits for
/// before it reads. No host wait in between on either side.
#[test]
fn event_sync_round_trip_between_two_devices() {
    let test = "event_sync_round_trip_between_two_devices";
    let Some(a) = sharing_ctx(test) else { return };
    let Some(b) = sharing_ctx(test) else { return };
    if let Err(why) = hurray_gpu::event_sync(&a.device) {
        // The fallback is `fallback_without_a_semaphore_waits_for_the_queue`'s.
        assert!(!a.event_sync());
        assert!(
            std::env::var_os("HURRAY_REQUIRE_EVENT_SYNC").is_none_or(|v| v != "1"),
            "HURRAY_REQUIRE_EVENT_SYNC=1 but {why}"
        );
        println!("SKIPPED {test}: no timeline semaphore to share ({why})");
        return;
    }
    assert!(a.event_sync() && b.event_sync());
    const N: u32 = 1 << 16;
    let producer = a.alloc_exportable(u64::from(N) * 4).unwrap();
    assert_eq!(
        producer.event_value(),
        None,
        "no semaphore before the first Event export"
    );
    let kernel_a = a.kernel(PATTERN, "pattern").unwrap();
    let seed = hurray_gpu::GpuResource::uniform(&[0x1111_2222u32, 0, 0, 0]);
    kernel_a
        .launch(&[(&producer).into(), seed], [N / 64, 1, 1])
        .unwrap();
    let (tx, rx) = UnixStream::pair().unwrap();
    let message = producer
        .export_event(ElementType::UInt32, &[u64::from(N)])
        .unwrap();
    assert_eq!(message.sync_mode(), SyncMode::Event);
    assert_eq!(message.buffer().sync_mode(), SyncMode::Event);
    assert_eq!(message.wait_value(), Some(1));
    assert!(message.semaphore_fd().is_some());
    assert_eq!(producer.event_value(), Some(1));
    message.send(&tx).unwrap();
    let received = SharedBuffer::recv(&rx).unwrap();
    assert_eq!(received.wait_value(), Some(1));
    let consumer = b.import(received).unwrap();
    assert_eq!(consumer.event_value(), Some(1));
    // b's work waits for a's kernel on b's GPU; b then writes and signals.
    let kernel_b = b.kernel(PATTERN, "pattern").unwrap();
    let seed_b = hurray_gpu::GpuResource::uniform(&[0x3333_4444u32, 0, 0, 0]);
    // Read a's values through a copy that b's queue orders after the wait.
    assert_eq!(consumer.read_vec::<u32>().unwrap(), pattern(N, 0x1111_2222));
    kernel_b
        .launch(&[(&consumer).into(), seed_b], [N / 64, 1, 1])
        .unwrap();
    let back = consumer.signal_event().unwrap();
    assert_eq!(back, 2);
    // a's GPU waits for b's kernel before a's readback copies.
    producer.wait_event(back).unwrap();
    assert_eq!(producer.event_value(), Some(2));
    assert_eq!(producer.read_vec::<u32>().unwrap(), pattern(N, 0x3333_4444));
    // A second round: the values keep growing on both sides.
    let again = producer
        .export_event(ElementType::UInt32, &[u64::from(N)])
        .unwrap();
    assert_eq!(again.wait_value(), Some(3));
    // Buffers without a semaphore say so.
    let plain = a.alloc_exportable(64).unwrap();
    assert_eq!(plain.signal_event().unwrap_err(), ShareError::NoSemaphore);
    assert_eq!(plain.wait_event(1).unwrap_err(), ShareError::NoSemaphore);
}

/// A device opened without `VK_KHR_external_semaphore_fd` (as a device you
/// create yourself is) keeps `ProducerSynced`: `export_event` waits for the
/// queue and sends no semaphore, and the consumer needs none.
#[test]
fn fallback_without_a_semaphore_waits_for_the_queue() {
    let test = "fallback_without_a_semaphore_waits_for_the_queue";
    let Some(probe) = sharing_ctx(test) else {
        return;
    };
    let adapter = probe.adapter.clone();
    let options = hurray_gpu::ContextOptions::default().event_sync(false);
    let a = pollster::block_on(hurray_gpu::GpuContext::from_adapter_with_options(
        adapter, options,
    ))
    .unwrap();
    assert!(!a.event_sync());
    assert!(matches!(
        hurray_gpu::event_sync(&a.device),
        Err(ShareError::Unsupported(_))
    ));
    let producer = a.alloc_exportable(1024).unwrap();
    producer.write_at(0, pattern(256, 5).as_bytes()).unwrap();
    let message = producer.export_event(ElementType::UInt32, &[256]).unwrap();
    assert_eq!(message.sync_mode(), SyncMode::ProducerSynced);
    assert_eq!(message.wait_value(), None);
    assert!(message.semaphore_fd().is_none());
    assert_eq!(producer.event_value(), None);
    let (tx, rx) = UnixStream::pair().unwrap();
    message.send(&tx).unwrap();
    let consumer = probe.import(SharedBuffer::recv(&rx).unwrap()).unwrap();
    assert_eq!(consumer.read_vec::<u32>().unwrap(), pattern(256, 5));
    assert_eq!(
        consumer.signal_event().unwrap_err(),
        ShareError::NoSemaphore
    );
}
