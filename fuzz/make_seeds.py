#!/usr/bin/env python3
"""Writes the committed seed corpus: valid and near-valid inputs per target.

Run from fuzz/: python3 make_seeds.py. The layouts follow docs/spec/*.md.
"""
import os
import struct


def entry(size, align, dev, sync=0, cls=0, res=0):
    return struct.pack("<QIBBBB", size, align, dev, sync, cls, res)


def descriptor(dtype, shape, buffers, strides=None, byte_offset=0, flags=0, data=0,
               major=1, minor=0, reserved=0, magic=b"HRAY"):
    ndim = len(shape)
    shape_off = 40
    strides_off = 40 + 8 * ndim if strides is not None else 0
    table_off = 40 + 8 * ndim * (2 if strides is not None else 1)
    total = table_off + 16 * len(buffers)
    head = magic + struct.pack("<BBHBBHHHQIIII", major, minor, flags, dtype, ndim,
                               len(buffers), data, reserved, byte_offset,
                               shape_off, strides_off, table_off, total)
    body = b"".join(struct.pack("<Q", d) for d in shape)
    if strides is not None:
        body += b"".join(struct.pack("<q", s) for s in strides)
    return head + body + b"".join(buffers)


cuda = entry(4096, 64, 2, 1)
cpu = entry(24, 64, 1)
empty = entry(0, 1, 1)
seeds = {
    "handle": {
        "valid-cuda-event": cuda,
        "valid-cpu": cpu,
        "valid-empty-align1": empty,
        "valid-unified": entry(1 << 20, 4096, 2, 0, 2),
        "bad-sync-7": entry(64, 64, 2, 7),
        "bad-cpu-event": entry(64, 64, 1, 1),
        "bad-align-3": entry(64, 3, 2),
        "bad-align-32": entry(64, 32, 2),
        "bad-device-3": entry(64, 64, 3),
        "bad-class-9": entry(64, 64, 2, 0, 9),
        "bad-reserved": entry(64, 64, 2, 0, 0, 1),
    },
    "table": {
        "valid-three": cuda + cpu + empty,
        "valid-empty": b"",
        "bad-second-entry": cuda + entry(64, 64, 2, 9),
        "bad-length-17": cuda + b"\x00",
    },
}
f32 = 0x0C
seeds["descriptor"] = {
    "valid-f32-2x3": descriptor(f32, [2, 3], [cpu]),
    "valid-strided": descriptor(f32, [3, 2], [cpu], strides=[1, 3]),
    "valid-scalar": descriptor(0x01, [], [entry(1, 64, 1)]),
    "valid-zero-axis": descriptor(f32, [0, 7], [empty]),
    "valid-two-buffers": descriptor(0x06, [4096], [empty, cuda], data=1, flags=1),
    "bad-extent": descriptor(f32, [2, 4], [cpu]),
    "bad-negative-stride": descriptor(f32, [2], [cpu], strides=[-1]),
    "bad-magic": descriptor(f32, [2, 3], [cpu], magic=b"HRAZ"),
    "bad-major": descriptor(f32, [2, 3], [cpu], major=2),
    "bad-data-index": descriptor(f32, [2, 3], [cpu], data=1),
    "bad-entry": descriptor(f32, [2, 3], [entry(24, 64, 1, 1)]),
    "bad-truncated": descriptor(f32, [2, 3], [cpu])[:-1],
}
seeds["handle_roundtrip"] = dict(seeds["handle"], **seeds["table"])
seeds["descriptor_roundtrip"] = seeds["descriptor"]
# Raw bytes for `arbitrary` to shape into descriptors.
seeds["descriptor_structured"] = {"zeros-64": bytes(64), "ramp-256": bytes(range(256)), "ones-128": b"\xff" * 128}

for target, files in seeds.items():
    os.makedirs(os.path.join("corpus", target), exist_ok=True)
    for name, data in files.items():
        with open(os.path.join("corpus", target, name), "wb") as f:
            f.write(data)
print("wrote", sum(len(v) for v in seeds.values()), "seeds")
