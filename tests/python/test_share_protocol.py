"""The Python consumer of hurray's share protocol (share_protocol.py): hostile
messages are refused and their fds closed; a real message from the Vulkan
producer (gpu/examples/share_peer, on lavapipe in CI) is accepted.

Run by .ci/run with HURRAY_FFI_LIB (the C library) and HURRAY_SHARE_PEER (the
producer, `cargo build -p hurray-rs-gpu --example share_peer`).
"""

import os
import socket

import pytest

import hurray_ctypes as h
from share_protocol import HEADER, SYNC_BLOCK, Message, Peer, ShareMessageError

UUID = bytes(range(16))


def descriptor(nbytes, device_tag=0x04, sync_mode=h.SYNC_PRODUCER):
    """A row-major uint8 [nbytes] descriptor of one buffer (Vulkan by default)."""
    desc, _ = h.describe(h.TYPE_TAG["uint8"], [nbytes], None, 1 << 16, device_tag=device_tag,
                         sync_mode=sync_mode)
    return desc


def header(desc, allocation, magic=b"HRSB", version=1, flags=1, reserved=0, dlen=None):
    return HEADER.pack(magic, version, 1, flags, reserved, len(desc) if dlen is None else dlen,
                       0, allocation, UUID, UUID[::-1])


def memfd(size):
    fd = os.memfd_create("hurray-share-test")
    os.ftruncate(fd, size)
    return fd


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def receive(chunks):
    """Sends `chunks` ([(bytes, [fds])]) on a socket pair, closes the sender,
    and reads one message; returns it or raises. The sent fds are closed."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        for data, fds in chunks:
            socket.send_fds(a, [data], fds)
        a.close()
        return Message(b)
    finally:
        a.close()
        b.close()
        for _, fds in chunks:
            for fd in fds:
                os.close(fd)


def refused(chunks, match):
    before = open_fds()  # the fds to send are open already
    with pytest.raises(ShareMessageError, match=match):
        receive(chunks)
    assert open_fds() == before - sum(len(fds) for _, fds in chunks), "a received fd leaked"


def test_a_valid_message_is_accepted():
    desc = descriptor(4096)
    m = receive([(header(desc, 4096) + desc, [memfd(4096)])])
    try:
        assert (m.shape, m.byte_size, m.allocation_size, m.dedicated) == ([4096], 4096, 4096, True)
        assert (m.device_uuid, m.driver_uuid) == (UUID, UUID[::-1])
        assert os.fstat(m.fd).st_size == 4096
    finally:
        os.close(m.fd)


def test_bad_headers_are_refused():
    desc = descriptor(64)
    refused([(header(desc, 64, magic=b"HRRY") + desc, [memfd(64)])], "bad header")
    refused([(header(desc, 64, version=2) + desc, [memfd(64)])], "bad header")
    refused([(header(desc, 64, flags=4) + desc, [memfd(64)])], "bad header")
    refused([(header(desc, 64, reserved=1) + desc, [memfd(64)])], "bad header")
    refused([(header(desc, 64, dlen=4097) + desc, [memfd(64)])], "bad header")
    refused([(header(desc, 0) + desc, [memfd(64)])], "bad header")


def test_truncated_messages_are_refused():
    desc = descriptor(64)
    m = header(desc, 64) + desc
    refused([(m[:20], [memfd(64)])], "truncated after 20 bytes")
    refused([(m[:-3], [memfd(64)])], f"truncated after {len(m) - 3} bytes")


def test_a_message_needs_exactly_one_fd():
    desc = descriptor(64)
    m = header(desc, 64) + desc
    refused([(m, [])], "0 fds")
    refused([(m[:HEADER.size], [memfd(64)]), (m[HEADER.size:], [memfd(64)])], "2 fds")


def test_a_bad_descriptor_is_refused_by_the_parser():
    desc = bytearray(descriptor(64))
    desc[0] ^= 0xFF
    refused([(header(bytes(desc), 64) + bytes(desc), [memfd(64)])], "bad descriptor")


def test_the_buffer_must_be_vulkan_and_fit_the_allocation_and_the_fd():
    cpu = descriptor(64, device_tag=0x00)
    refused([(header(cpu, 64) + cpu, [memfd(64)])], "not Vulkan")
    desc = descriptor(4096)
    refused([(header(desc, 1024) + desc, [memfd(4096)])], "does not fit 1024")
    refused([(header(desc, 8192) + desc, [memfd(4096)])], "larger than the fd")


def event_message(desc, allocation, value=1, stype=1, reserved=bytes(7)):
    return header(desc, allocation, flags=3) + SYNC_BLOCK.pack(value, stype, reserved) + desc


def test_an_event_message_carries_a_semaphore_fd_and_a_value():
    desc = descriptor(4096, sync_mode=1)
    mem, sem = memfd(4096), memfd(0)
    sem_ino = os.fstat(sem).st_ino
    m = receive([(event_message(desc, 4096, value=9), [mem, sem])])
    try:
        assert (m.wait_value, m.shape, m.byte_size) == (9, [4096], 4096)
        assert os.fstat(m.semaphore_fd).st_ino == sem_ino
        assert os.fstat(m.fd).st_size == 4096
    finally:
        m.close()


def test_bad_event_messages_are_refused_and_their_fds_closed():
    event = descriptor(64, sync_mode=1)
    plain = descriptor(64)
    refused([(event_message(event, 64, stype=2), [memfd(64), memfd(0)])], "handle type 2")
    refused([(event_message(event, 64, reserved=b"\0" * 6 + b"\1"), [memfd(64), memfd(0)])],
            "reserved")
    refused([(event_message(event, 64, value=0), [memfd(64), memfd(0)])], "value to wait for is 0")
    refused([(event_message(event, 64), [memfd(64)])], "1 fds came with the message; expected 2")
    refused([(event_message(event, 64)[:60], [memfd(64), memfd(0)])], "truncated after 60")
    refused([(event_message(plain, 64), [memfd(64), memfd(0)])], "not Vulkan/Event")
    refused([(header(event, 64) + event, [memfd(64)])], "not Vulkan/ProducerSynced")
    refused([(header(plain, 64) + plain, [memfd(64), memfd(0)])], "2 fds came with the message; expected 1")
    refused([(event_message(event, 64), [memfd(64), memfd(0), memfd(0)])], "3 fds came")


@pytest.fixture
def peer():
    exe = os.environ.get("HURRAY_SHARE_PEER")
    if not exe:
        if os.environ.get("HURRAY_REQUIRE_GPU") == "1":
            pytest.fail("HURRAY_REQUIRE_GPU=1 but HURRAY_SHARE_PEER is not set")
        pytest.skip("HURRAY_SHARE_PEER (gpu/examples/share_peer) not set")
    p = Peer(exe)
    yield p
    p.close()


def test_a_real_producer_message_is_accepted(peer):
    """share_peer (Vulkan, lavapipe in CI) allocates exportable memory, fills
    it with a kernel and sends it: the message passes every check, and the
    fd refers to an allocation of the stated size. (What is in the memory is
    CUDA's side, cuda_share.py: an opaque fd is not host memory.)"""
    n = 1 << 20
    peer.command(b"A", n, b"a")
    for _ in range(2):  # each export sends a new fd for the same memory
        peer.command(b"S")
        m = Message(peer.sock)
        try:
            assert m.shape == [n // 4] and m.view.element_type == h.TYPE_TAG["int32"]
            assert m.byte_size == n and m.allocation_size >= n and m.dedicated
            size = os.fstat(m.fd).st_size
            assert size == 0 or size >= m.allocation_size
        finally:
            os.close(m.fd)
    assert peer.command(b"V", 0, b"v") == 0


def test_a_real_event_export_falls_back_or_carries_a_semaphore(peer):
    """share_peer's `E` exports with Event sync: on lavapipe (no
    VK_KHR_external_semaphore_fd) it falls back to ProducerSynced and no
    semaphore comes; where the device has it, a semaphore fd and value 1 come
    (its payload is CUDA's side, cuda_share.py)."""
    n = 1 << 16
    peer.command(b"A", n, b"a")
    supported = peer.command(b"C", 0, b"c")
    peer.command(b"E")
    m = Message(peer.sock)
    try:
        if supported:
            assert m.wait_value == 1 and m.semaphore_fd is not None
        else:
            assert m.wait_value is None and m.semaphore_fd is None
        assert m.shape == [n // 4]
    finally:
        m.close()
    assert peer.command(b"V", 0, b"v") == 0
