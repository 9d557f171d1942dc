"""A second, independent implementation of the hurray network protocol's
client side, written from the spec alone (upstream interchange.md § Network
Transport Protocol and our docs/spec/network.md), in plain Python: framing,
hellos, requests, descriptors (read only as far as the transport needs:
descriptor_length, the buffer table), data frames, puts, errors, pings.
"""

import socket
import struct

HEADER = struct.Struct("<III")  # message_type, stream_id, payload_length

CLIENT_HELLO, SERVER_HELLO, TENSOR_REQUEST, TENSOR_DESCRIPTOR = 1, 2, 3, 4
TENSOR_DATA, TENSOR_DATA_END, TENSOR_PUT, TENSOR_PUT_ACK = 5, 6, 7, 8
ERROR, PING, PONG = 9, 10, 11


class PeerError(Exception):
    """The server answered with ERROR."""

    def __init__(self, stream, code, text):
        super().__init__(f"stream {stream}: error {code:#x}: {text}")
        self.stream, self.code, self.text = stream, code, text


def message(kind, stream, payload=b""):
    return HEADER.pack(kind, stream, len(payload)) + payload


def hello_payload(max_message_size=1 << 20, devices=b"\x00", classes=b"\x00"):
    return (struct.pack("<IIQ", 1, max_message_size, 0) + struct.pack("<H", 0)
            + struct.pack("<H", len(devices)) + devices + struct.pack("<H", len(classes)) + classes)


def parse_hello(p):
    version, max_size, caps = struct.unpack_from("<IIQ", p, 0)
    at = 16
    (count,) = struct.unpack_from("<H", p, at)
    at += 2
    for _ in range(count):
        tag = p[at]
        at += 1
        if 0xF0 <= tag <= 0xFE:
            (n,) = struct.unpack_from("<H", p, at)
            at += 2 + n
    (ndev,) = struct.unpack_from("<H", p, at)
    devices = p[at + 2:at + 2 + ndev]
    return {"version": version, "max_message_size": max_size, "capabilities": caps, "devices": devices}


def request_payload(key, device=0, alignment=64, flags=0):
    k = key.encode()
    return struct.pack("<I", len(k)) + k + struct.pack("<H", 0) + bytes([device]) + struct.pack("<II", alignment, flags)


def buffer_sizes(desc):
    """The byte sizes of a descriptor's buffer table (row-major/column-major
    tensors: no layout fields; enough for this test)."""
    assert desc[:4] == b"HRRY", desc[:4]
    (rank,) = struct.unpack_from("<I", desc, 16)
    at = 20 + 8 * rank + 8  # shape, byte_offset
    count = desc[at]
    at += 1
    return [struct.unpack_from("<Q", desc, at + 16 * i)[0] for i in range(count)]


def row_major_u8(n):
    """A row-major uint8 [n] descriptor with one CPU buffer (field by field)."""
    body = struct.pack("<Q", n) + struct.pack("<Q", 0) + b"\x01"
    body += struct.pack("<QIBBBB", n, 64 if n else 1, 0, 0, 0, 0)
    length = 20 + len(body)
    return b"HRRY" + bytes([1, 0]) + struct.pack("<II", length, 0) + bytes([0x11, 0x01]) + struct.pack("<I", 1) + body


class Connection:
    def __init__(self, addr, timeout=10.0):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.next_stream = 1

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def recv_exact(self, n):
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return bytes(out)

    def read(self):
        kind, stream, length = HEADER.unpack(self.recv_exact(12))
        return kind, stream, self.recv_exact(length)

    def handshake(self, max_message_size=1 << 20):
        self.send(message(CLIENT_HELLO, 0, hello_payload(max_message_size)))
        kind, stream, p = self.read()
        assert (kind, stream) == (SERVER_HELLO, 0), (kind, stream)
        self.server = parse_hello(p)
        return self.server

    def get(self, key):
        """Fetches `key`: (descriptor bytes, data bytes), every ordering rule checked."""
        stream = self.next_stream
        self.next_stream += 1
        self.send(message(TENSOR_REQUEST, stream, request_payload(key)))
        desc, data, total = None, bytearray(), None
        while True:
            kind, s, p = self.read()
            if kind == PING:
                self.send(message(PONG, 0, p))
                continue
            assert s == stream, (kind, s)
            if kind == ERROR:
                code, n = struct.unpack_from("<II", p, 0)
                raise PeerError(s, code, p[8:8 + n].decode())
            if kind == TENSOR_DESCRIPTOR:
                assert desc is None
                (length,) = struct.unpack_from("<I", p, 6)
                desc = p[:length]
                total, index, shards = struct.unpack_from("<QII", p, length)
                assert len(p) == length + 16
                assert (index, shards) == (0, 1)
                assert total == sum(buffer_sizes(desc))
            elif kind == TENSOR_DATA:
                assert desc is not None
                (offset,) = struct.unpack_from("<Q", p, 0)
                assert offset == len(data) and len(p) > 8
                data += p[8:]
                assert len(data) <= total
            elif kind == TENSOR_DATA_END:
                assert desc is not None and len(data) == total and p == b""
                return desc, bytes(data)
            else:
                raise AssertionError(f"unexpected message type {kind:#x}")

    def put(self, key, desc, data, frame=4096):
        stream = self.next_stream
        self.next_stream += 1
        k = key.encode()
        p = struct.pack("<I", len(k)) + k + struct.pack("<I", len(desc)) + desc + struct.pack("<Q", len(data))
        out = message(TENSOR_PUT, stream, p)
        for at in range(0, len(data), frame):
            out += message(TENSOR_DATA, stream, struct.pack("<Q", at) + data[at:at + frame])
        out += message(TENSOR_DATA_END, stream)
        self.send(out)
        kind, s, p = self.read()
        if kind == ERROR:
            code, n = struct.unpack_from("<II", p, 0)
            raise PeerError(s, code, p[8:8 + n].decode())
        assert (kind, s, p) == (TENSOR_PUT_ACK, stream, b""), (kind, s, p)

    def ping(self, token):
        self.send(message(PING, 0, struct.pack("<Q", token)))
        kind, s, p = self.read()
        assert (kind, s) == (PONG, 0)
        return struct.unpack("<Q", p)[0]
