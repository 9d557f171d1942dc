"""One GPU allocation shared by Vulkan (hurray-gpu, through wgpu) and CUDA /
PyTorch, with no copy, and what sharing costs against the copy it replaces.

Run on a machine with an NVIDIA GPU, its Vulkan driver, torch and
cuda-bindings (not in CI, which has no GPU):

    HURRAY_FFI_LIB=path/to/libhurray_c.so \\
    HURRAY_SHARE_PEER=target/release/examples/share_peer \\
      python3 tests/python/cuda_share.py [--bench]

The peer (gpu/examples/share_peer.rs) is a Vulkan producer: it allocates an
exportable buffer, writes `i ^ 0x2A5A5A5A` into it with a WGSL kernel, and
sends the share message (a 56-byte header, a hurray descriptor, the memory's
opaque fd over SCM_RIGHTS) on a socket pair. This script is the consumer:

1. reads one message, refuses anything malformed, and validates the
   descriptor with hurray's C ABI (`hurray_tensor_parse`, the core's
   `TensorView::parse`) before touching the fd;
2. checks that the message's device UUID is the CUDA device's;
3. imports the fd into CUDA (`cudaImportExternalMemory`, opaque fd,
   dedicated) and maps it (`cudaExternalMemoryGetMappedBuffer`);
4. describes the CUDA pointer as a hurray descriptor and hands it to
   PyTorch through hurray's DLPack export (`kDLCUDA`, writable);
5. checks torch sees the kernel's values at the mapped address (no copy);
   torch then writes in place and the peer's hurray readback sees it.

Then the same with Event sync (issue 21): the peer queues its kernel and
exports with `export_event`, waiting for nothing; the message carries a
Vulkan timeline semaphore (a second fd) and the value it reaches once the
kernel is done. This script imports the semaphore into CUDA
(`cudaImportExternalSemaphore`, `cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd`),
has its stream wait for the value (`cudaWaitExternalSemaphoresAsync`), reads
and writes with torch on that stream, and signals the next value
(`cudaSignalExternalSemaphoresAsync`) without synchronizing; the peer's GPU
waits for that value (`W`) before its readback checks every word. A second
export (value 3) is waited for by CUDA again. Where the peer's device has no
`VK_KHR_external_semaphore_fd`, no semaphore comes and the ProducerSynced path
is checked instead.

With --bench it also times sharing (export + send + import + first read by
torch) against the copy it replaces (hurray readback, then
torch.from_numpy(...).cuda()) at several sizes, and prints the ratios.

Prints one line per check and "N passed, M failed"; exits non-zero on a failure.
"""

import gc
import os
import statistics
import sys
import time

import numpy as np
import torch

import hurray_ctypes as h
from share_protocol import Message, Peer

try:
    from cuda.bindings import runtime as cudart
except ImportError:  # cuda-python < 12.6
    from cuda import cudart

SEED = 0x2A5A5A5A  # the peer's pattern: data[i] = i ^ SEED

results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond)))
    print(f"{'PASS' if cond else 'FAIL'} {name} {detail}".rstrip(), flush=True)
    return bool(cond)


def uuid_bytes(uuid):
    """cudaUUID_t.bytes as 16 bytes, however this cuda-bindings spells it."""
    raw = uuid.bytes
    if isinstance(raw, str):
        raw = raw.encode("latin-1")
    return bytes(x & 0xFF for x in raw) if not isinstance(raw, (bytes, bytearray)) else bytes(raw)


def cuda(call, *args):
    out = call(*args)
    err, rest = out[0], out[1:]
    if err != cudart.cudaError_t.cudaSuccess:
        raise RuntimeError(f"{call.__name__}: {err}")
    return rest[0] if len(rest) == 1 else rest


class CudaImport:
    """The message's memory imported into CUDA and mapped; owns the fd."""

    def __init__(self, msg):
        desc = cudart.cudaExternalMemoryHandleDesc()
        desc.type = cudart.cudaExternalMemoryHandleType.cudaExternalMemoryHandleTypeOpaqueFd
        desc.handle.fd = msg.fd
        desc.size = msg.allocation_size
        desc.flags = getattr(cudart, "cudaExternalMemoryDedicated", 1) if msg.dedicated else 0
        try:
            start = time.perf_counter_ns()
            self.ext = cuda(cudart.cudaImportExternalMemory, desc)
            self.import_ns = time.perf_counter_ns() - start
        except Exception:
            os.close(msg.fd)  # CUDA owns the fd only once the import succeeded
            raise
        bdesc = cudart.cudaExternalMemoryBufferDesc()
        bdesc.offset, bdesc.size, bdesc.flags = 0, msg.byte_size, 0
        self.ptr = int(cuda(cudart.cudaExternalMemoryGetMappedBuffer, self.ext, bdesc))

    def release(self):
        cuda(cudart.cudaFree, self.ptr)
        cuda(cudart.cudaDestroyExternalMemory, self.ext)


def as_stream(torch_stream):
    """A torch stream as cuda-bindings' cudaStream_t."""
    ptr = torch_stream.cuda_stream
    try:
        return cudart.cudaStream_t(init_value=ptr)
    except TypeError:
        return cudart.cudaStream_t(ptr)


class CudaSemaphore:
    """A Vulkan timeline semaphore imported into CUDA; owns the fd once
    imported (CUDA takes it; on failure it is closed here)."""

    def __init__(self, fd):
        desc = cudart.cudaExternalSemaphoreHandleDesc()
        desc.type = (cudart.cudaExternalSemaphoreHandleType
                     .cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd)
        desc.handle.fd = fd
        desc.flags = 0
        try:
            self.ext = cuda(cudart.cudaImportExternalSemaphore, desc)
        except Exception:
            os.close(fd)
            raise

    def wait(self, value, stream):
        p = cudart.cudaExternalSemaphoreWaitParams()
        p.params.fence.value = value
        p.flags = 0
        cuda(cudart.cudaWaitExternalSemaphoresAsync, [self.ext], [p], 1, as_stream(stream))

    def signal(self, value, stream):
        p = cudart.cudaExternalSemaphoreSignalParams()
        p.params.fence.value = value
        p.flags = 0
        cuda(cudart.cudaSignalExternalSemaphoresAsync, [self.ext], [p], 1, as_stream(stream))

    def release(self):
        cuda(cudart.cudaDestroyExternalSemaphore, self.ext)


def event_round_trip(peer, dev, props):
    """Event sync both ways through the exported timeline semaphore."""
    size = 64 << 20
    n = size // 4
    peer.command(b"A", size, b"a")  # the fill kernel is queued, not waited for
    supported = peer.command(b"C", 0, b"c")
    peer.command(b"E")
    msg = Message(peer.sock)
    export_ns = peer.command(b"T", 0, b"t")
    if not supported:
        check("event: no semaphore on this device, so the export fell back to ProducerSynced",
              msg.wait_value is None and msg.semaphore_fd is None)
        imp = CudaImport(msg)
        t, ht = to_torch(msg, imp, dev)
        check("event fallback: torch reads the kernel's values", torch.equal(t, expected(n)))
        del t, ht
        gc.collect()
        torch.cuda.synchronize()
        imp.release()
        peer.command(b"F", 0, b"f")
        return
    check("event: the message carries a timeline semaphore fd and the value 1",
          msg.wait_value == 1 and msg.semaphore_fd is not None,
          f"value {msg.wait_value}; export_event + send took {export_ns / 1e3:.0f} us")
    sem = CudaSemaphore(msg.semaphore_fd)
    msg.semaphore_fd = None  # CUDA owns it now
    imp = CudaImport(msg)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        sem.wait(msg.wait_value, stream)  # the GPU waits for the Vulkan kernel
        t, ht = to_torch(msg, imp, dev)
        check("event: after cudaWaitExternalSemaphoresAsync torch reads the kernel's values",
              torch.equal(t, expected(n)), f"t[:3]={t[:3].tolist()}")
        t.bitwise_xor_(0x0F0F0F0F)
        sem.signal(msg.wait_value + 1, stream)  # after torch's write, no synchronize
    # The peer's GPU waits for CUDA's signal before its readback copies.
    peer.command(b"W", msg.wait_value + 1, b"w")
    bad = peer.command(b"V", 0x0F0F0F0F, b"v")
    check("event: Vulkan waited for cudaSignalExternalSemaphoresAsync and sees torch's write",
          bad == 0, f"{bad} of {n} words differ")
    # Second round: a new export signals 3 after what the peer did since.
    peer.command(b"E")
    again = Message(peer.sock)
    check("event: the next export waits for the value 3", again.wait_value == 3,
          str(again.wait_value))
    value = again.wait_value
    again.close()  # same memory, same semaphore payload: CUDA holds both already
    with torch.cuda.stream(stream):
        sem.wait(value, stream)
        check("event: CUDA waited for the second signal; the bytes are torch's",
              torch.equal(t, expected(n, 0x0F0F0F0F)))
    del t, ht
    gc.collect()
    torch.cuda.synchronize()
    imp.release()
    sem.release()
    peer.command(b"F", 0, b"f")


def to_torch(msg, imp, dev):
    """The mapped memory as a torch tensor, through hurray's DLPack export."""
    tag = msg.view.element_type
    desc, base = h.describe(tag, msg.shape, None, imp.ptr, device_tag=h.DEVICE_CUDA)
    ht = h.HurrayTensor(desc, base, keep=imp, device=(h.KDL_CUDA, dev), writable=True)
    return torch.from_dlpack(ht), ht


def expected(n, xor=0):
    return (torch.arange(n, dtype=torch.int32, device="cuda") ^ SEED) ^ xor


def round_trip(peer, dev, props):
    size = 256 << 20
    peer.command(b"A", size, b"a")
    peer.command(b"S")
    msg = Message(peer.sock)
    check("message: descriptor validated by hurray_tensor_parse (int32, rank 1)",
          msg.view.element_type == h.TYPE_TAG["int32"] and msg.shape == [size // 4],
          f"type {msg.view.element_type:#x} shape {msg.shape}")
    check("message: a dedicated allocation that holds the buffer",
          msg.dedicated and msg.allocation_size >= msg.byte_size,
          f"allocation {msg.allocation_size} B, memory type {msg.memory_type}")
    check("device UUID: Vulkan's deviceUUID is CUDA's device uuid",
          msg.device_uuid == uuid_bytes(props.uuid),
          f"{msg.device_uuid.hex()} vs {uuid_bytes(props.uuid).hex()}")
    imp = CudaImport(msg)
    t, ht = to_torch(msg, imp, dev)
    check("torch: tensor on cuda via hurray's DLPack export (kDLCUDA)",
          t.is_cuda and t.device.index == dev and t.dtype == torch.int32, str(t.device))
    check("torch: no copy (data_ptr is the mapped Vulkan memory)", t.data_ptr() == imp.ptr,
          f"{t.data_ptr():#x}")
    check("torch reads the WGSL kernel's values", torch.equal(t, expected(size // 4)),
          f"t[:3]={t[:3].tolist()} t[-1]={t[-1].item()}")
    t.bitwise_xor_(0x0F0F0F0F)
    torch.cuda.synchronize()
    bad = peer.command(b"V", 0x0F0F0F0F, b"v")
    check("hurray's readback sees torch's in-place write", bad == 0, f"{bad} words differ")
    (oid,) = ht.owner_ids
    del t, ht
    gc.collect()
    torch.cuda.synchronize()
    check("hurray's DLPack deleter ran exactly once", h.RELEASES[oid] == 1, str(h.RELEASES[oid]))
    imp.release()
    peer.command(b"F", 0, b"f")


def bench(peer, dev, sizes, reps=10):
    print(f"{'MiB':>6} {'share ms (median/min/first)':>30} {'copy ms (readback + H2D)':>28} "
          f"{'ratio':>7}", flush=True)
    rows = []
    for size in sizes:
        peer.command(b"A", size, b"a")
        share, phases = [], []
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            peer.command(b"S")
            msg = Message(peer.sock)  # export + send + receive + validate
            t1 = time.perf_counter_ns()
            imp = CudaImport(msg)  # cudaImportExternalMemory + mapped buffer
            t2 = time.perf_counter_ns()
            t, ht = to_torch(msg, imp, dev)  # describe + hurray DLPack + from_dlpack
            t3 = time.perf_counter_ns()
            first = t[0].item()  # the first read by torch
            t4 = time.perf_counter_ns()
            share.append(t4 - t0)
            phases.append((t1 - t0, imp.import_ns, t2 - t1 - imp.import_ns, t3 - t2, t4 - t3,
                           peer.command(b"T", 0, b"t")))
            assert first == SEED, first
            del t, ht
            gc.collect()
            torch.cuda.synchronize()
            imp.release()
        readback = [peer.command(b"R", 0, b"r") for _ in range(max(3, reps // 2))]
        host = np.ones(size // 4, dtype=np.int32)  # touched, as a readback's Vec is
        h2d = []
        for _ in range(max(3, reps // 2)):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            g = torch.from_numpy(host).cuda()
            torch.cuda.synchronize()
            h2d.append(time.perf_counter_ns() - t0)
            del g
        peer.command(b"F", 0, b"f")
        s = statistics.median(share) / 1e6
        c = (statistics.median(readback) + statistics.median(h2d)) / 1e6
        rows.append((size, s, c))
        med = [statistics.median(p[i] for p in phases) / 1e3 for i in range(6)]
        print(f"{size >> 20:>6} {s:>12.3f} / {min(share) / 1e6:.3f} / {share[0] / 1e6:.3f}"
              f" {c:>14.2f} ({statistics.median(readback) / 1e6:.2f} + "
              f"{statistics.median(h2d) / 1e6:.2f}) {c / s:>7.1f}x", flush=True)
        print(f"       phases, median us: message {med[0]:.0f} (of which the producer's export"
              f" + send {med[5]:.0f}) | cudaImportExternalMemory {med[1]:.0f} | mapped buffer "
              f"{med[2]:.0f} | hurray DLPack + from_dlpack {med[3]:.0f} | first read "
              f"{med[4]:.0f}", flush=True)
    return rows


def main():
    exe = os.environ.get("HURRAY_SHARE_PEER", "target/release/examples/share_peer")
    torch.cuda.init()
    dev = torch.cuda.current_device()
    props = cuda(cudart.cudaGetDeviceProperties, dev)
    try:
        import cuda.bindings as cb
        bindings = cb.__version__
    except (ImportError, AttributeError):
        bindings = "?"
    print("torch", torch.__version__, "cuda-bindings", bindings, torch.cuda.get_device_name(dev),
          "uuid", uuid_bytes(props.uuid).hex(), flush=True)
    peer = Peer(exe)
    try:
        round_trip(peer, dev, props)
        try:
            event_round_trip(peer, dev, props)
        except Exception as e:  # a failure of the CUDA calls is a check that failed
            check("event: the semaphore round trip ran", False, f"{type(e).__name__}: {e}")
        if "--bench" in sys.argv:
            rows = bench(peer, dev, [1 << 20, 16 << 20, 256 << 20, 1024 << 20])
            s256 = [r for r in rows if r[0] == 256 << 20][0]
            check("bench: sharing 256 MiB under 1 ms", s256[1] < 1.0, f"{s256[1]:.3f} ms")
            check("bench: sharing > 20x faster than the copy at 256 MiB",
                  s256[2] / s256[1] > 20, f"{s256[2] / s256[1]:.1f}x")
    finally:
        peer.close()
    failed = sum(1 for _, ok in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
