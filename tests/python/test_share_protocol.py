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
from share_protocol import HEADER, Message, Peer, ShareMessageError

UUID = bytes(range(16))


def descriptor(nbytes, device_tag=0x04):
    """A row-major uint8 [nbytes] descriptor of one buffer (Vulkan by default)."""
    desc, _ = h.describe(h.TYPE_TAG["uint8"], [nbytes], None, 1 << 16, device_tag=device_tag)
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
    refused([(header(desc, 64, flags=2) + desc, [memfd(64)])], "bad header")
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
