//! Hostile messages, each through a real socket pair: every one is a typed
//! error, every fd that came with it is closed, nothing panics. Then the
//! checks of `import` that need a device (lavapipe in CI).

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;

use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use zerocopy::IntoBytes;

use super::wire::{FLAG_DEDICATED, FLAG_TIMELINE, HEADER_LEN, Header, SYNC_LEN, SyncBlock};
use super::*;

const IDENTITY: DeviceIdentity = DeviceIdentity {
    device_uuid: [7; 16],
    driver_uuid: [9; 16],
};

fn memory(allocation_size: u64) -> Memory {
    Memory {
        allocation_size,
        memory_type_index: 0,
        dedicated: true,
        identity: IDENTITY,
    }
}

/// A row-major `u8 [size]` descriptor over one buffer.
fn descriptor_for(size: u64, tag: DeviceTag, sync: SyncMode) -> Vec<u8> {
    let handles = [BufferHandle::new(size, 64, tag, sync).unwrap()];
    let shape = [size];
    let desc = TensorDescriptor::row_major(ElementType::UInt8, &shape, &handles);
    let mut out = vec![0u8; desc.encoded_len()];
    let n = desc.encode(&mut out).unwrap();
    out.truncate(n);
    out
}

fn vulkan_descriptor(size: u64) -> Vec<u8> {
    descriptor_for(size, DeviceTag::Vulkan, SyncMode::ProducerSynced)
}

fn message(header: &Header, descriptor: &[u8]) -> Vec<u8> {
    let mut m = header.as_bytes().to_vec();
    m.extend_from_slice(descriptor);
    m
}

fn header(allocation_size: u64, descriptor: &[u8]) -> Header {
    Header::new(
        &memory(allocation_size),
        u32::try_from(descriptor.len()).unwrap(),
        false,
    )
}

/// A file of `len` bytes standing in for exported memory (a memfd is a
/// regular file too: the size check applies to both).
fn memory_fd(len: u64) -> OwnedFd {
    let file = tempfile();
    file.set_len(len).unwrap();
    OwnedFd::from(file)
}

fn tempfile() -> std::fs::File {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("hurray-share-{}-{n}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    file
}

/// Open file descriptors of this process that refer to this module's
/// temporary files (`tempfile`). Counting every fd of the process would race
/// with the other tests of the binary, which open and close device fds
/// (dozens on NVIDIA) while these run.
fn open_fds() -> usize {
    let ours = format!("hurray-share-{}-", std::process::id());
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| {
        dir.filter_map(Result::ok)
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.to_string_lossy().contains(&ours))
            .count()
    })
}

/// Sends `bytes` (with `fd` attached, if any), closes the sender, and
/// receives.
fn roundtrip(bytes: &[u8], fd: Option<&OwnedFd>) -> Result<SharedBuffer, ShareError> {
    let (a, b) = UnixStream::pair().unwrap();
    if !bytes.is_empty() || fd.is_some() {
        let fds: Vec<_> = fd.map(AsFd::as_fd).into_iter().collect();
        let n = socket::send_with_fds(a.as_fd(), bytes, &fds).unwrap();
        (&a).write_all(&bytes[n..]).unwrap();
    }
    drop(a);
    SharedBuffer::recv(&b)
}

fn message_error(r: Result<SharedBuffer, ShareError>) -> MessageError {
    match r {
        Err(ShareError::Message(m)) => m,
        other => panic!("expected a message error, got {other:?}"),
    }
}

// Tests that count open fds must not overlap with tests that open some.
static FDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    FDS.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_valid_message_is_received_whole() {
    let _s = serial();
    let desc = vulkan_descriptor(4096);
    let fd = memory_fd(4096);
    let got = roundtrip(&message(&header(4096, &desc), &desc), Some(&fd)).unwrap();
    assert_eq!(got.allocation_size(), 4096);
    assert_eq!(got.memory_type_index(), 0);
    assert!(got.is_dedicated());
    assert_eq!(got.identity(), IDENTITY);
    assert_eq!(got.descriptor_bytes(), &desc[..]);
    assert_eq!(got.buffer().byte_size(), 4096);
    assert_eq!(got.descriptor().element_count(), Some(4096));
    // The fd received is a new descriptor for the same file.
    let sent = std::fs::File::from(fd.try_clone().unwrap())
        .metadata()
        .unwrap();
    let recv = std::fs::File::from(got.into_fd()).metadata().unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((sent.dev(), sent.ino()), (recv.dev(), recv.ino()));
}

#[test]
fn two_messages_back_to_back_are_read_one_at_a_time() {
    let _s = serial();
    let (a, b) = UnixStream::pair().unwrap();
    let small = vulkan_descriptor(64);
    let large = vulkan_descriptor(8192);
    let fd = memory_fd(8192);
    for desc in [&small, &large] {
        let m = message(&header(8192, desc), desc);
        let n = socket::send_with_fds(a.as_fd(), &m, &[fd.as_fd()]).unwrap();
        assert_eq!(n, m.len());
    }
    assert_eq!(SharedBuffer::recv(&b).unwrap().buffer().byte_size(), 64);
    assert_eq!(SharedBuffer::recv(&b).unwrap().buffer().byte_size(), 8192);
}

#[test]
fn a_short_header_is_truncated() {
    let _s = serial();
    let desc = vulkan_descriptor(64);
    let m = message(&header(64, &desc), &desc);
    assert_eq!(
        message_error(roundtrip(&m[..10], None)),
        MessageError::Truncated {
            got: 10,
            expected: HEADER_LEN
        }
    );
    assert_eq!(
        message_error(roundtrip(&[], None)),
        MessageError::Truncated {
            got: 0,
            expected: HEADER_LEN
        }
    );
}

#[test]
fn a_short_descriptor_is_truncated_and_its_fd_closed() {
    let _s = serial();
    let desc = vulkan_descriptor(64);
    let m = message(&header(64, &desc), &desc);
    let fd = memory_fd(64);
    let before = open_fds();
    let cut = HEADER_LEN + 30;
    assert_eq!(
        message_error(roundtrip(&m[..cut], Some(&fd))),
        MessageError::Truncated {
            got: cut,
            expected: m.len()
        }
    );
    assert_eq!(open_fds(), before, "the received fd was closed");
}

#[test]
fn every_bad_header_field_is_named() {
    let _s = serial();
    let desc = vulkan_descriptor(64);
    let good = header(64, &desc);
    let fd = memory_fd(64);
    type Corrupt = fn(&mut Header);
    let cases: [(Corrupt, MessageError); 7] = [
        (|h| h.magic = *b"HRRY", MessageError::Magic(*b"HRRY")),
        (|h| h.version = 2, MessageError::Version(2)),
        (|h| h.handle_type = 0, MessageError::HandleType(0)),
        (|h| h.flags = 0x82, MessageError::Flags(0x82)),
        (|h| h.reserved = 1, MessageError::Reserved(1)),
        (
            |h| h.descriptor_len.set(MAX_DESCRIPTOR_LEN + 1),
            MessageError::DescriptorTooLong {
                len: MAX_DESCRIPTOR_LEN + 1,
                max: MAX_DESCRIPTOR_LEN,
            },
        ),
        (|h| h.allocation_size.set(0), MessageError::ZeroAllocation),
    ];
    let before = open_fds();
    for (corrupt, expected) in cases {
        let mut h = good;
        corrupt(&mut h);
        assert_eq!(
            message_error(roundtrip(&message(&h, &desc), Some(&fd))),
            expected
        );
    }
    assert_eq!(open_fds(), before, "every received fd was closed");
}

#[test]
fn a_bad_descriptor_is_the_parsers_error() {
    let _s = serial();
    let mut desc = vulkan_descriptor(64);
    desc[0] = b'X';
    let fd = memory_fd(64);
    let r = roundtrip(&message(&header(64, &desc), &desc), Some(&fd));
    let expected = TensorView::parse(&desc).unwrap_err();
    assert_eq!(expected.offset(), 0);
    assert_eq!(r.unwrap_err(), ShareError::Descriptor(expected));
    // A descriptor shorter than its own length field says.
    let desc = vulkan_descriptor(64);
    let short = &desc[..desc.len() - 1];
    let r = roundtrip(&message(&header(64, short), short), Some(&fd));
    let expected = TensorView::parse(short).unwrap_err();
    assert_eq!(r.unwrap_err(), ShareError::Descriptor(expected));
}

#[test]
fn a_message_without_fd_is_refused() {
    let _s = serial();
    let desc = vulkan_descriptor(64);
    assert_eq!(
        message_error(roundtrip(&message(&header(64, &desc), &desc), None)),
        MessageError::NoFd
    );
}

#[test]
fn a_message_with_two_fds_is_refused_and_both_closed() {
    let _s = serial();
    let desc = vulkan_descriptor(64);
    let m = message(&header(64, &desc), &desc);
    let (one, two) = (memory_fd(64), memory_fd(64));
    let before = open_fds();
    let (a, b) = UnixStream::pair().unwrap();
    // One fd with the header, another with the descriptor.
    let n = socket::send_with_fds(a.as_fd(), &m[..HEADER_LEN], &[one.as_fd()]).unwrap();
    assert_eq!(n, HEADER_LEN);
    let n = socket::send_with_fds(a.as_fd(), &m[HEADER_LEN..], &[two.as_fd()]).unwrap();
    assert_eq!(n, m.len() - HEADER_LEN);
    assert_eq!(
        message_error(SharedBuffer::recv(&b)),
        MessageError::ExtraFds { count: 2 }
    );
    drop((a, b));
    assert_eq!(open_fds(), before, "both received fds were closed");
}

#[test]
fn the_buffer_must_fit_the_allocation_and_the_allocation_the_fd() {
    let _s = serial();
    let desc = vulkan_descriptor(4096);
    let fd = memory_fd(4096);
    assert_eq!(
        message_error(roundtrip(&message(&header(1024, &desc), &desc), Some(&fd))),
        MessageError::BufferLargerThanAllocation {
            buffer: 4096,
            allocation: 1024
        }
    );
    // 4093 bytes round up to 4096: an allocation of 4094 is too small.
    let odd = vulkan_descriptor(4093);
    assert_eq!(
        message_error(roundtrip(&message(&header(4094, &odd), &odd), Some(&fd))),
        MessageError::BufferLargerThanAllocation {
            buffer: 4096,
            allocation: 4094
        }
    );
    let small = memory_fd(1024);
    assert_eq!(
        message_error(roundtrip(
            &message(&header(4096, &desc), &desc),
            Some(&small)
        )),
        MessageError::AllocationLargerThanFd {
            allocation: 4096,
            fd_size: 1024
        }
    );
}

#[test]
fn only_one_non_empty_vulkan_producer_synced_buffer_is_shared() {
    let _s = serial();
    let fd = memory_fd(4096);
    let cpu = descriptor_for(64, DeviceTag::Cpu, SyncMode::ProducerSynced);
    assert_eq!(
        message_error(roundtrip(&message(&header(64, &cpu), &cpu), Some(&fd))),
        MessageError::DeviceTag(0)
    );
    let event = descriptor_for(64, DeviceTag::Vulkan, SyncMode::Event);
    assert_eq!(
        message_error(roundtrip(&message(&header(64, &event), &event), Some(&fd))),
        MessageError::SyncMode(1)
    );
    let handles = [BufferHandle::empty(DeviceTag::Vulkan)];
    let desc = TensorDescriptor::row_major(ElementType::UInt8, &[0], &handles);
    let mut empty = vec![0u8; desc.encoded_len()];
    desc.encode(&mut empty).unwrap();
    assert_eq!(
        message_error(roundtrip(&message(&header(64, &empty), &empty), Some(&fd))),
        MessageError::EmptyBuffer
    );
}

#[test]
fn the_dedicated_flag_round_trips() {
    let _s = serial();
    let desc = vulkan_descriptor(64);
    let fd = memory_fd(64);
    let mut h = header(64, &desc);
    assert_eq!(h.flags, FLAG_DEDICATED);
    h.flags = 0;
    let got = roundtrip(&message(&h, &desc), Some(&fd)).unwrap();
    assert!(!got.is_dedicated());
}

#[test]
fn sending_to_a_closed_peer_is_an_io_error() {
    let _s = serial();
    let desc = vulkan_descriptor(64);
    let shared = SharedBuffer {
        fd: memory_fd(64),
        memory: memory(64),
        buffer: BufferHandle::new(64, 64, DeviceTag::Vulkan, SyncMode::ProducerSynced).unwrap(),
        descriptor: desc.into_boxed_slice(),
        semaphore: None,
    };
    let (a, b) = UnixStream::pair().unwrap();
    drop(b);
    assert_eq!(
        shared.send(&a).unwrap_err(),
        ShareError::Io {
            call: "sendmsg",
            kind: std::io::ErrorKind::BrokenPipe,
            errno: Some(libc::EPIPE),
        }
    );
}

// --- `Event` messages: the sync block and the semaphore's fd ([SH-SYNC-*],
// docs/spec/README.md). A file stands in for the semaphore's fd: `recv`
// checks the message, the driver checks the payload at import.

fn event_descriptor(size: u64) -> Vec<u8> {
    descriptor_for(size, DeviceTag::Vulkan, SyncMode::Event)
}

/// The bytes of an `Event` message: header (flag set), sync block,
/// descriptor.
fn event_message(allocation_size: u64, block: &SyncBlock, descriptor: &[u8]) -> Vec<u8> {
    let h = Header::new(
        &memory(allocation_size),
        u32::try_from(descriptor.len()).unwrap(),
        true,
    );
    let mut m = h.as_bytes().to_vec();
    m.extend_from_slice(block.as_bytes());
    m.extend_from_slice(descriptor);
    m
}

/// Sends `bytes` with `fds` attached, closes the sender, and receives.
fn roundtrip_fds(bytes: &[u8], fds: &[&OwnedFd]) -> Result<SharedBuffer, ShareError> {
    let (a, b) = UnixStream::pair().unwrap();
    let fds: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    let n = socket::send_with_fds(a.as_fd(), bytes, &fds).unwrap();
    (&a).write_all(&bytes[n..]).unwrap();
    drop(a);
    SharedBuffer::recv(&b)
}

#[test]
fn sh_sync_1_an_event_message_carries_a_sync_block_and_two_fds() {
    let _s = serial();
    let desc = event_descriptor(4096);
    let (mem, sem) = (memory_fd(4096), memory_fd(0));
    let m = event_message(4096, &SyncBlock::new(7), &desc);
    assert_eq!(m.len(), HEADER_LEN + SYNC_LEN + desc.len());
    assert_eq!(m[6], FLAG_DEDICATED | FLAG_TIMELINE);
    // The block, field by field: value 7 (LE u64), handle type 1, 7 zeros.
    assert_eq!(
        &m[HEADER_LEN..HEADER_LEN + SYNC_LEN],
        &[7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    );
    let got = roundtrip_fds(&m, &[&mem, &sem]).unwrap();
    assert_eq!(got.wait_value(), Some(7));
    assert_eq!(got.sync_mode(), SyncMode::Event);
    assert_eq!(got.descriptor_bytes(), &desc[..]);
    // The fds arrive in order: the memory's, then the semaphore's.
    use std::os::unix::fs::MetadataExt;
    let ino = |fd: &OwnedFd| {
        std::fs::File::from(fd.try_clone().unwrap())
            .metadata()
            .unwrap()
            .ino()
    };
    let (want_mem, want_sem) = (ino(&mem), ino(&sem));
    let (m_fd, s) = got.into_fds();
    let (s_fd, value) = s.unwrap();
    assert_eq!((ino(&m_fd), ino(&s_fd), value), (want_mem, want_sem, 7));
    // Without the flag, the message is the old one: no block, one fd.
    let plain = vulkan_descriptor(4096);
    let got = roundtrip(&message(&header(4096, &plain), &plain), Some(&mem)).unwrap();
    assert_eq!(
        (got.wait_value(), got.sync_mode()),
        (None, SyncMode::ProducerSynced)
    );
    assert!(got.semaphore_fd().is_none());
}

#[test]
fn sh_sync_2_every_bad_sync_block_field_is_named_and_both_fds_closed() {
    let _s = serial();
    let desc = event_descriptor(64);
    let (mem, sem) = (memory_fd(64), memory_fd(0));
    let before = open_fds();
    let mut bad_type = SyncBlock::new(1);
    bad_type.handle_type = 2;
    let mut bad_reserved = SyncBlock::new(1);
    bad_reserved.reserved[6] = 0x40;
    let cases = [
        (bad_type, MessageError::SemaphoreHandleType(2)),
        (bad_reserved, MessageError::Reserved(0x40)),
        (SyncBlock::new(0), MessageError::ZeroWaitValue),
    ];
    for (block, expected) in cases {
        let m = event_message(64, &block, &desc);
        assert_eq!(message_error(roundtrip_fds(&m, &[&mem, &sem])), expected);
    }
    // A sync block cut short.
    let m = event_message(64, &SyncBlock::new(1), &desc);
    let cut = HEADER_LEN + 5;
    assert_eq!(
        message_error(roundtrip_fds(&m[..cut], &[&mem, &sem])),
        MessageError::Truncated {
            got: cut,
            expected: m.len()
        }
    );
    assert_eq!(open_fds(), before, "every received fd was closed");
}

#[test]
fn sh_sync_3_an_event_message_needs_exactly_two_fds() {
    let _s = serial();
    let desc = event_descriptor(64);
    let m = event_message(64, &SyncBlock::new(3), &desc);
    let (mem, sem, third) = (memory_fd(64), memory_fd(0), memory_fd(0));
    let before = open_fds();
    assert_eq!(
        message_error(roundtrip_fds(&m, &[&mem])),
        MessageError::NoSemaphoreFd
    );
    assert_eq!(message_error(roundtrip_fds(&m, &[])), MessageError::NoFd);
    // A third fd, sent with the descriptor: refused at once.
    let (a, b) = UnixStream::pair().unwrap();
    let n =
        socket::send_with_fds(a.as_fd(), &m[..HEADER_LEN], &[mem.as_fd(), sem.as_fd()]).unwrap();
    assert_eq!(n, HEADER_LEN);
    socket::send_with_fds(a.as_fd(), &m[HEADER_LEN..], &[third.as_fd()]).unwrap();
    assert_eq!(
        message_error(SharedBuffer::recv(&b)),
        MessageError::ExtraFds { count: 3 }
    );
    drop((a, b));
    // Two fds with a message that announces no semaphore.
    let plain = vulkan_descriptor(64);
    assert_eq!(
        message_error(roundtrip_fds(
            &message(&header(64, &plain), &plain),
            &[&mem, &sem]
        )),
        MessageError::ExtraFds { count: 2 }
    );
    assert_eq!(open_fds(), before, "every received fd was closed");
}

#[test]
fn sh_sync_4_the_buffers_sync_mode_matches_the_semaphore() {
    let _s = serial();
    let (mem, sem) = (memory_fd(64), memory_fd(0));
    // A semaphore with a ProducerSynced buffer.
    let plain = vulkan_descriptor(64);
    let m = event_message(64, &SyncBlock::new(1), &plain);
    assert_eq!(
        message_error(roundtrip_fds(&m, &[&mem, &sem])),
        MessageError::SyncMode(0)
    );
    // An Event buffer without a semaphore.
    let event = event_descriptor(64);
    assert_eq!(
        message_error(roundtrip(&message(&header(64, &event), &event), Some(&mem))),
        MessageError::SyncMode(1)
    );
}

#[test]
fn an_event_message_round_trips_through_send() {
    let _s = serial();
    let desc = event_descriptor(64);
    let shared = SharedBuffer {
        fd: memory_fd(64),
        memory: memory(64),
        buffer: BufferHandle::new(64, 64, DeviceTag::Vulkan, SyncMode::Event).unwrap(),
        descriptor: desc.clone().into_boxed_slice(),
        semaphore: Some(Semaphore {
            fd: memory_fd(0),
            wait_value: u64::MAX,
        }),
    };
    let copy = shared.try_clone().unwrap();
    let (a, b) = UnixStream::pair().unwrap();
    copy.send(&a).unwrap();
    let got = SharedBuffer::recv(&b).unwrap();
    assert_eq!(got.wait_value(), Some(u64::MAX));
    assert_eq!(got.descriptor_bytes(), &desc[..]);
}

/// The workspace's one decision whether a GPU test can run here.
#[path = "../../tests/common/gate.rs"]
mod gate;

/// A device that can share memory, or `None` after `SKIPPED <test>: …`
/// (a failure with `HURRAY_REQUIRE_GPU=1`; see `gate`).
fn context(test: &str) -> Option<crate::GpuContext> {
    let c = gate::need(test, crate::GpuContext::new())?;
    let probe = GpuBufferHandle::alloc_exportable(&c.device, &c.queue, 64);
    gate::need_if(test, probe, |e| matches!(e, ShareError::Unsupported(_)))?;
    Some(c)
}

/// An export of 4096 zero bytes from a fresh exportable buffer.
fn exported(c: &crate::GpuContext) -> SharedBuffer {
    let h = GpuBufferHandle::alloc_exportable(&c.device, &c.queue, 4096).unwrap();
    h.export(ElementType::UInt8, &[4096]).unwrap()
}

#[test]
fn import_refuses_memory_of_another_device_or_driver() {
    let _s = serial();
    let Some(c) = context("import_refuses_memory_of_another_device_or_driver") else {
        return;
    };
    let mut shared = exported(&c);
    let local = shared.identity();
    shared.memory.identity.device_uuid[0] ^= 1;
    let remote = shared.identity();
    // The refused fd must be closed: its number no longer names the memory
    // it named (another test's thread may reuse the number for a device
    // node, never for this export's memory: exports are serialized).
    let fd_path = format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&shared.fd)
    );
    let target = std::fs::read_link(&fd_path).unwrap();
    assert_eq!(
        GpuBufferHandle::import(&c.device, &c.queue, shared).unwrap_err(),
        ShareError::DeviceMismatch { local, remote }
    );
    assert_ne!(
        std::fs::read_link(&fd_path).ok(),
        Some(target),
        "the refused fd was closed"
    );
    let mut shared = exported(&c);
    shared.memory.identity.driver_uuid[15] ^= 0x80;
    let remote = shared.identity();
    assert_ne!(remote, local);
    assert_eq!(
        GpuBufferHandle::import(&c.device, &c.queue, shared).unwrap_err(),
        ShareError::DeviceMismatch { local, remote }
    );
}

#[test]
fn import_refuses_a_memory_type_the_buffer_cannot_use() {
    let _s = serial();
    let Some(c) = context("import_refuses_a_memory_type_the_buffer_cannot_use") else {
        return;
    };
    let (_, allowed) = crate::external::requirements(&c.device, 4096).unwrap();
    for index in [31, 32, u32::MAX] {
        let mut shared = exported(&c);
        shared.memory.memory_type_index = index;
        assert_eq!(
            GpuBufferHandle::import(&c.device, &c.queue, shared).unwrap_err(),
            ShareError::MemoryType { index, allowed },
            "memory type {index}"
        );
    }
}

#[test]
fn import_refuses_an_allocation_smaller_than_the_buffer_needs() {
    let _s = serial();
    let Some(c) = context("import_refuses_an_allocation_smaller_than_the_buffer_needs") else {
        return;
    };
    let (buffer, _) = crate::external::requirements(&c.device, 4096).unwrap();
    assert!(buffer >= 4096);
    let mut shared = exported(&c);
    shared.memory.allocation_size = 1024;
    assert_eq!(
        GpuBufferHandle::import(&c.device, &c.queue, shared).unwrap_err(),
        ShareError::Message(MessageError::BufferLargerThanAllocation {
            buffer,
            allocation: 1024
        })
    );
}
