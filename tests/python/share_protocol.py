"""The consumer half of hurray's share protocol (docs/impl/gpu-share.md), in
Python: read one message from a Unix stream socket (a 56-byte header, a hurray
descriptor, one fd by SCM_RIGHTS) and validate all of it before the fd is
used; and drive gpu/examples/share_peer, a Vulkan producer.

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
MAX_DESCRIPTOR_LEN = 4096
FLAG_DEDICATED = 1
DEVICE_VULKAN, SYNC_PRODUCER = 0x04, 0x00


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
        got = self.read_exact(1 + (8 if reply in (b"v", b"r", b"t") else 0))
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
    """One share message, read and validated before anything is imported."""

    def __init__(self, sock):
        fds, data = [], b""
        try:
            need = HEADER.size
            while len(data) < need:
                chunk, got_fds, flags, _ = socket.recv_fds(sock, need - len(data), 4)
                fds += got_fds
                if flags & socket.MSG_CTRUNC:
                    raise ShareMessageError("control data truncated (too many fds)")
                if not chunk:
                    raise ShareMessageError(f"truncated after {len(data)} bytes")
                data += chunk
                if len(data) == HEADER.size and need == HEADER.size:
                    magic, ver, htype, flags_, res, dlen, mtype, alloc, dev, drv = \
                        HEADER.unpack(data)
                    if magic != b"HRSB" or ver != 1 or htype != 1 or res != 0 \
                            or flags_ & ~FLAG_DEDICATED or dlen > MAX_DESCRIPTOR_LEN \
                            or alloc == 0:
                        raise ShareMessageError(f"bad header {HEADER.unpack(data)}")
                    need += dlen
            if len(fds) != 1:
                raise ShareMessageError(f"{len(fds)} fds came with the message; expected 1")
            self.dedicated = bool(flags_ & FLAG_DEDICATED)
            self.memory_type, self.allocation_size = mtype, alloc
            self.device_uuid, self.driver_uuid = dev, drv
            self.descriptor = data[HEADER.size:]
            # The core's TensorView::parse, through the C ABI.
            try:
                self.view, self.shape, buffers = h.parse_descriptor(self.descriptor)
            except h.DescriptorError as e:
                raise ShareMessageError(f"bad descriptor: {e}") from e
            if len(buffers) != 1:
                raise ShareMessageError(f"{len(buffers)} buffers; expected 1")
            b = buffers[0]
            if b.device_tag != DEVICE_VULKAN or b.sync_mode != SYNC_PRODUCER:
                raise ShareMessageError(f"buffer {b.device_tag:#x}/{b.sync_mode} is not Vulkan/ProducerSynced")
            if b.byte_size == 0 or (b.byte_size + 3) // 4 * 4 > alloc:
                raise ShareMessageError(f"buffer of {b.byte_size} bytes does not fit {alloc}")
            if os.fstat(fds[0]).st_size and os.fstat(fds[0]).st_size < alloc:
                raise ShareMessageError("allocation larger than the fd")
            self.byte_size = b.byte_size
            self.fd = fds.pop()
        finally:
            for fd in fds:
                os.close(fd)
