"""Cross-implementation test of the network protocol: the Python client of
net_protocol.py (written from the spec alone) against the Rust server
(core/net/examples/net_serve). Run by .ci/run with HURRAY_NET_SERVE (the
server, `cargo build -p hurray-rs-net --example net_serve`).
"""

import os
import struct
import subprocess

import pytest

import net_protocol as n


def pattern(count, seed):
    return bytes(((i * 31) + seed) & 0xFF for i in range(count))


@pytest.fixture
def server(tmp_path):
    exe = os.environ.get("HURRAY_NET_SERVE")
    if not exe:
        if os.environ.get("HURRAY_REQUIRE_CONFORMANCE") == "1":
            pytest.fail("HURRAY_NET_SERVE is not set")
        pytest.skip("HURRAY_NET_SERVE (core/net/examples/net_serve) not set")
    p = subprocess.Popen([exe, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("LISTEN "), line
        yield line.split()[1], tmp_path
    finally:
        p.stdin.close()  # graceful shutdown
        assert p.wait(timeout=20) == 0


def test_every_tensor_round_trips(server):
    addr, _ = server
    c = n.Connection(addr)
    hello = c.handshake(max_message_size=4096)
    assert hello["version"] == 1 and hello["max_message_size"] >= 512
    want = {"bytes": pattern(1000, 1), "weights": pattern(48, 2), "empty": b"", "big": pattern(3 << 20, 4)}
    for key, data in want.items():
        desc, got = c.get(key)
        assert got == data, key
        assert n.buffer_sizes(desc) == [len(data)]
    assert c.ping(0xDEADBEEF) == 0xDEADBEEF
    c.close()


def test_put_then_get_back_and_errors(server):
    addr, root = server
    c = n.Connection(addr)
    c.handshake()
    data = pattern(10000, 9)
    c.put("from/python", n.row_major_u8(len(data)), data)
    assert (root / "store" / "from%2Fpython.hrry").exists()
    assert c.get("from/python")[1] == data
    with pytest.raises(n.PeerError) as e:
        c.get("no such key")
    assert e.value.code == 2  # UNKNOWN_TENSOR
    # A put whose total_data_bytes lies about the descriptor: INVALID_MESSAGE.
    with pytest.raises(n.PeerError) as e:
        c.put("liar", n.row_major_u8(8), pattern(9, 0))
    assert e.value.code == 6
    c.close()


def test_hostile_headers(server):
    addr, _ = server
    # 4 GiB announced after the handshake: MESSAGE_TOO_LARGE, then EOF.
    c = n.Connection(addr)
    c.handshake()
    c.send(struct.pack("<III", n.TENSOR_REQUEST, 3, 0xFFFFFFFF))
    kind, stream, p = c.read()
    assert (kind, stream, struct.unpack_from("<I", p)[0]) == (n.ERROR, 3, 7)
    with pytest.raises(ConnectionError):
        c.read()
    # A request before the hello: INVALID_MESSAGE, then EOF.
    c = n.Connection(addr)
    c.send(n.message(n.TENSOR_REQUEST, 1, n.request_payload("bytes")))
    kind, _, p = c.read()
    assert (kind, struct.unpack_from("<I", p)[0]) == (n.ERROR, 6)
    with pytest.raises(ConnectionError):
        c.read()
