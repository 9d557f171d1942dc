"""hurray's interchange C ABI with CUDA memory: PyTorch, CuPy and JAX.

Run on a CUDA machine (not in CI, which has no GPU):
    HURRAY_FFI_LIB=path/to/libhurray_c.so python3 tests/python/gpu_interchange.py

Checks, per framework: its CUDA tensor imported into hurray (device tag CUDA,
the framework's DLPack device id, the same address), and hurray's export of
that memory consumed back by torch.from_dlpack zero-copy (shared storage: a
write through one is seen through the other). Prints one line per check and
"N passed, M failed"; exits non-zero on a failure.
"""

import ctypes
import gc
import sys
import traceback

import hurray_ctypes as h

results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond)))
    print(f"{'PASS' if cond else 'FAIL'} {name} {detail}".rstrip(), flush=True)


def section(name, fn):
    try:
        fn()
    except Exception as e:  # a framework missing or refusing: a failure, with its reason
        check(f"{name}: ran", False, f"{type(e).__name__}: {e}")
        traceback.print_exc()


def import_and_share(name, capsule, address, device_id, writer=None, reader=None):
    """Imports a framework capsule into hurray, checks it, re-exports it to
    torch and checks that storage is shared."""
    import torch

    imp = h.import_capsule(capsule, device_sync=h.SYNC_CONSUMER_STREAM)
    rec = imp.record
    check(f"{name}: import kind", rec.kind in (h.IMPORT_DLPACK, h.IMPORT_DLPACK_LEGACY),
          f"kind={rec.kind}")
    check(f"{name}: device tag CUDA", rec.device_tag == h.DEVICE_CUDA, f"tag={rec.device_tag:#x}")
    check(f"{name}: DLPack device id", rec.device_id == device_id,
          f"id={rec.device_id} expected={device_id}")
    check(f"{name}: same address", rec.first_element == address,
          f"{rec.first_element:#x} vs {address:#x}")
    check(f"{name}: sync mode as declared", rec.sync_mode == h.SYNC_CONSUMER_STREAM)
    t = h.HurrayTensor(imp.desc, rec.base, keep=imp, device=(h.KDL_CUDA, device_id),
                       writable=True)
    back = torch.from_dlpack(t)
    check(f"{name}: torch.from_dlpack of hurray's export is on cuda:{device_id}",
          back.is_cuda and back.device.index == device_id, str(back.device))
    check(f"{name}: zero-copy (data_ptr)", back.data_ptr() == address,
          f"{back.data_ptr():#x}")
    if writer is not None:
        first = (0,) * back.dim()
        back[first] = 42
        torch.cuda.synchronize()
        check(f"{name}: a write through torch is seen by the source", reader() == 42,
              f"read {reader()}")
        writer(7)
        torch.cuda.synchronize()
        check(f"{name}: a write through the source is seen by torch",
              back[first].item() == 7, f"read {back[first].item()}")
    (oid,) = t.owner_ids
    del back
    gc.collect()
    torch.cuda.synchronize()
    check(f"{name}: hurray's deleter ran exactly once", h.RELEASES[oid] == 1, str(h.RELEASES[oid]))
    imp.release()
    check(f"{name}: import released", imp.record.kind == h.IMPORT_NONE)


def torch_checks():
    import torch

    dev = torch.cuda.current_device()
    print("torch", torch.__version__, torch.cuda.get_device_name(dev), flush=True)
    x = torch.arange(24, dtype=torch.float32, device="cuda").reshape(2, 3, 4)
    torch.cuda.synchronize()
    import_and_share("torch versioned", x.__dlpack__(max_version=(1, 0)), x.data_ptr(), dev,
                     writer=lambda v: x.view(-1).__setitem__(0, v),
                     reader=lambda: x.view(-1)[0].item())
    y = torch.arange(12, dtype=torch.int64, device="cuda").reshape(3, 4).t()  # transposed view
    import_and_share("torch legacy transposed", torch.utils.dlpack.to_dlpack(y), y.data_ptr(), dev,
                     writer=lambda v: y.__setitem__((0, 0), v), reader=lambda: y[0, 0].item())
    z = torch.ones(5, dtype=torch.bfloat16, device="cuda")
    import_and_share("torch bfloat16", z.__dlpack__(max_version=(1, 0)), z.data_ptr(), dev)


def cupy_checks():
    import cupy as cp

    dev = cp.cuda.Device().id
    print("cupy", cp.__version__, flush=True)
    x = cp.arange(32, dtype=cp.float64).reshape(4, 8)[:, ::2]  # strided view
    cp.cuda.runtime.deviceSynchronize()
    try:
        cap = x.__dlpack__(max_version=(1, 0))
    except TypeError:
        cap = x.__dlpack__()
    import_and_share("cupy strided", cap, x.data.ptr, dev,
                     writer=lambda v: x.__setitem__((0, 0), v), reader=lambda: float(x[0, 0]))


def jax_checks():
    import jax
    import jax.numpy as jnp

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    print("jax", jax.__version__, gpus, flush=True)
    check("jax: has a GPU device", bool(gpus))
    x = jax.device_put(jnp.arange(16, dtype=jnp.float32).reshape(4, 4), gpus[0])
    x.block_until_ready()
    address = x.unsafe_buffer_pointer()
    try:
        cap = x.__dlpack__(max_version=(1, 0))
    except TypeError:
        cap = x.__dlpack__()
    # JAX arrays are immutable: zero-copy is checked by address only.
    import_and_share("jax", cap, address, gpus[0].id)


def arrow_cuda_checks():
    """hurray's Arrow export of CUDA memory: the struct pyarrow would import."""
    import torch

    x = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3)
    torch.cuda.synchronize()
    desc, base = h.describe(h.TYPE_TAG["float32"], [2, 3], None, x.data_ptr(),
                            device_tag=h.DEVICE_CUDA)
    arr, sch, oid = h.export_arrow(desc, base, keep=x, device_id=x.device.index)
    check("arrow: ARROW_DEVICE_CUDA", arr.device_type == h.KDL_CUDA, str(arr.device_type))
    check("arrow: values buffer is the CUDA pointer",
          arr.array.children[0].contents.buffers[1] == x.data_ptr())
    imp = h.import_arrow(arr, sch)
    check("arrow: re-import keeps device and id",
          imp.record.device_tag == h.DEVICE_CUDA and imp.record.device_id == x.device.index)
    imp.release()
    gc.collect()
    check("arrow: owner released once", h.RELEASES[oid] == 1)


for name, fn in [("torch", torch_checks), ("cupy", cupy_checks), ("jax", jax_checks),
                 ("arrow", arrow_cuda_checks)]:
    section(name, fn)

ok = sum(1 for _, c in results if c)
print(f"{ok} passed, {len(results) - ok} failed")
sys.exit(0 if ok == len(results) else 1)
