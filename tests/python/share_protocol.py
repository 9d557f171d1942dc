"""The consumer half of hurray's share protocol (docs/impl/gpu-share.md), in
Python: read one message from a Unix stream socket (a 56-byte header, a
16-byte sync block when flag bit 1 says a timeline semaphore comes, a hurray
descriptor; one fd by SCM_RIGHTS, or two with a semaphore: the memory's, then
the semaphore's) and validate all of it before any fd is used; and drive
gpu/examples/share_peer, a Vulkan producer.

Used by cuda_share.py (CUDA/PyTorch, on a GPU machine) and tested in CI by
test_share_protocol.py (hostile messages, and a real producer on lavapipe).
"""

import os
import socket
import struct
import subprocess

import hurray_ctypes as h

HEADER = struct.Struct("<4sBBBBIIQ16s16s")
assert HEADER.size == 56
SYNC_BLOCK = struct.Struct("<QB7s")  # wait value, semaphore handle type, reserved
assert SYNC_BLOCK.size == 16
MAX_DESCRIPTOR_LEN = 4096
FLAG_DEDICATED, FLAG_TIMELINE = 1, 2
SEMAPHORE_TIMELINE_OPAQUE_FD = 1
DEVICE_VULKAN, SYNC_PRODUCER, SYNC_EVENT = 0x04, 0x00, 0x01


class ShareMessageError(ValueError):
    """A message that breaks the protocol; its fds are closed."""


class Peer:
    """The Vulkan producer process and its socket."""

    def __init__(self, exe):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.proc = subprocess.Popen([exe], stdin=theirs)
        theirs.close()

    def command(self, tag, arg=0, reply=None):
        self.sock.sendall(tag + struct.pack("<Q", arg))
        if reply is None:
            return None
        got = self.read_exact(1 + (8 if reply in (b"v", b"r", b"t", b"e", b"c") else 0))
        if got[:1] != reply:
            raise RuntimeError(f"peer replied {got!r} to {tag!r}")
        return struct.unpack("<Q", got[1:])[0] if len(got) > 1 else None

    def read_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise RuntimeError("peer closed the socket")
            data += chunk
        return data

    def close(self):
        self.command(b"Q")
        self.sock.close()
        self.proc.wait(timeout=60)


class Message:
    """One share message, read and validated before anything is imported.

    `fd` is the memory's; for an Event message `semaphore_fd` is the
    timeline semaphore's and `wait_value` the value to wait for (else both
    None). The caller owns the fds it keeps."""

    def __init__(self, sock):
        fds, data = [], b""
        try:
            need, timeline, flags_ = HEADER.size, False, 0
            while len(data) < need:
                chunk, got_fds, flags, _ = socket.recv_fds(sock, need - len(data), 4)
                fds += got_fds
                if flags & socket.MSG_CTRUNC or len(fds) > 2:
                    raise ShareMessageError(f"{len(fds)} fds came (or some were dropped); "
                                            "expected 1, or 2 with a semaphore")
                if not chunk:
                    raise ShareMessageError(f"truncated after {len(data)} bytes")
                data += chunk
                if len(data) == HEADER.size and need == HEADER.size:
                    magic, ver, htype, flags_, res, dlen, mtype, alloc, dev, drv = \
                        HEADER.unpack(data)
                    if magic != b"HRSB" or ver != 1 or htype != 1 or res != 0 \
                            or flags_ & ~(FLAG_DEDICATED | FLAG_TIMELINE) \
                            or dlen > MAX_DESCRIPTOR_LEN or alloc == 0:
                        raise ShareMessageError(f"bad header {HEADER.unpack(data)}")
                    timeline = bool(flags_ & FLAG_TIMELINE)
                    need += dlen + (SYNC_BLOCK.size if timeline else 0)
            self.wait_value = None
            body = HEADER.size
            if timeline:
                value, stype, reserved = SYNC_BLOCK.unpack_from(data, HEADER.size)
                if stype != SEMAPHORE_TIMELINE_OPAQUE_FD:
                    raise ShareMessageError(f"unknown semaphore handle type {stype}")
                if reserved != bytes(7):
                    raise ShareMessageError(f"sync block reserved bytes {reserved.hex()}")
                if value == 0:
                    raise ShareMessageError("the value to wait for is 0")
                self.wait_value = value
                body += SYNC_BLOCK.size
            want = 2 if timeline else 1
            if len(fds) != want:
                raise ShareMessageError(f"{len(fds)} fds came with the message; expected {want}")
            self.dedicated = bool(flags_ & FLAG_DEDICATED)
            self.memory_type, self.allocation_size = mtype, alloc
            self.device_uuid, self.driver_uuid = dev, drv
            self.descriptor = data[body:]
            # The core's TensorView::parse, through the C ABI.
            try:
                self.view, self.shape, buffers = h.parse_descriptor(self.descriptor)
            except h.DescriptorError as e:
                raise ShareMessageError(f"bad descriptor: {e}") from e
            if len(buffers) != 1:
                raise ShareMessageError(f"{len(buffers)} buffers; expected 1")
            b = buffers[0]
            sync = SYNC_EVENT if timeline else SYNC_PRODUCER
            if b.device_tag != DEVICE_VULKAN or b.sync_mode != sync:
                raise ShareMessageError(f"buffer {b.device_tag:#x}/{b.sync_mode} is not "
                                        f"Vulkan/{'Event' if timeline else 'ProducerSynced'}")
            if b.byte_size == 0 or (b.byte_size + 3) // 4 * 4 > alloc:
                raise ShareMessageError(f"buffer of {b.byte_size} bytes does not fit {alloc}")
            if os.fstat(fds[0]).st_size and os.fstat(fds[0]).st_size < alloc:
                raise ShareMessageError("allocation larger than the fd")
            self.byte_size = b.byte_size
            self.semaphore_fd = fds.pop() if timeline else None
            self.fd = fds.pop()
        finally:
            for fd in fds:
                os.close(fd)

    def close(self):
        """Closes the fds this message still owns."""
        for fd in (self.fd, self.semaphore_fd):
            if fd is not None:
                os.close(fd)
        self.fd = self.semaphore_fd = None
