"""Real consumers of hurray's interchange C ABI, on the CPU: NumPy (DLPack,
versioned and legacy) and pyarrow (Arrow C Device `fixed_shape_tensor`, IPC).

Run by .ci/run: HURRAY_FFI_LIB=target/release/libhurray_c.so (cargo rustc -p hurray-rs-clib --release --crate-type cdylib) pytest tests/python
"""

import ctypes
import gc

import numpy as np
import pyarrow as pa
import pytest

import hurray_ctypes as h

DTYPES = [np.dtype(n) for n in h.TYPE_TAG]
ARROW_DTYPES = [d for d in DTYPES if d.kind in "iuf"]


def views(dtype):
    """0-d, empty, 1xN, plain, transposed and strided views of one dtype."""
    base = (np.arange(60) % 97).astype(dtype).reshape(3, 4, 5)
    if dtype.kind == "c":
        base = base + 1j * base[::-1]
    return {
        "0d": np.array(base.flat[7], dtype=dtype),
        "empty": np.zeros((0, 3), dtype=dtype),
        "1xN": base.reshape(1, 60).copy(),
        "3d": base,
        "transposed": base.transpose(2, 0, 1),
        "strided": base[:, ::2, 1::2],
        "reversed": base[::-1, :, ::-1],
    }


def released(oid):
    gc.collect()
    return h.RELEASES[oid]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("versioned", [True, False], ids=["dltensor_versioned", "dltensor"])
def test_numpy_reads_hurray_exports(dtype, versioned):
    for name, a in views(dtype).items():
        desc, base = h.describe_numpy(a)
        t = h.HurrayTensor(desc, base, keep=a)
        producer = t if versioned else h.LegacyOnly(t)
        b = np.from_dlpack(producer)
        assert b.shape == a.shape and b.dtype == a.dtype, name
        np.testing.assert_array_equal(b, a, err_msg=name)
        if a.size:
            assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0], "zero-copy"
        if versioned:
            assert not b.flags.writeable, f"{name}: read-only export must not be writeable"
        (oid,) = t.owner_ids
        assert h.RELEASES[oid] == 0, "deleter must not run while the array lives"
        del b
        assert released(oid) == 1, f"{name}: deleter ran exactly once after the array died"


def test_writable_export_shares_memory():
    a = np.zeros((4, 4), dtype=np.float32)
    desc, base = h.describe_numpy(a)
    t = h.HurrayTensor(desc, base, keep=a, writable=True)
    b = np.from_dlpack(t)
    assert b.flags.writeable
    b[1, 2] = 7.5
    assert a[1, 2] == 7.5
    del b
    assert released(t.owner_ids[0]) == 1


def test_unconsumed_capsule_is_deleted_by_its_destructor():
    a = np.arange(5, dtype=np.int32)
    desc, base = h.describe_numpy(a)
    t = h.HurrayTensor(desc, base, keep=a)
    cap = t.__dlpack__(max_version=(1, 1))
    (oid,) = t.owner_ids
    del cap
    assert released(oid) == 1


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("versioned", [True, False], ids=["dltensor_versioned", "dltensor"])
def test_hurray_imports_numpy_exports(dtype, versioned):
    for name, a in views(dtype).items():
        cap = a.__dlpack__(max_version=(1, 1)) if versioned else a.__dlpack__()
        imp = h.import_capsule(cap)
        rec = imp.record
        assert rec.kind == (h.IMPORT_DLPACK if versioned else h.IMPORT_DLPACK_LEGACY)
        assert rec.type_tag == h.TYPE_TAG[dtype.name]
        assert rec.ndim == a.ndim and rec.device_tag == h.DEVICE_CPU
        assert rec.sync_mode == h.SYNC_PRODUCER and rec.device_id == 0
        if a.size:
            assert rec.first_element == a.ctypes.data, name
        # The descriptor validated (the import parses it); read the bytes
        # back through it: hurray re-exports (descriptor, base) to NumPy.
        back = np.from_dlpack(h.HurrayTensor(imp.desc, rec.base, keep=None))
        np.testing.assert_array_equal(back, a, err_msg=name)
        if a.flags.c_contiguous and a.size:
            assert ctypes.string_at(rec.first_element, a.nbytes) == a.tobytes()
        del back
        imp.release()
        assert imp.record.kind == h.IMPORT_NONE
        imp.release()  # a second release does nothing


def test_numpy_bool_and_longdouble_are_refused_with_a_type_error():
    # DLPack's bool is a byte per value, hurray's one bit: a typed refusal.
    with pytest.raises(h.HurrayError) as e:
        h.import_capsule(np.array([True, False]).__dlpack__(max_version=(1, 1)))
    assert e.value.status == h.E["DATA_TYPE"]
    # NumPy itself refuses to export float128 (x87 extended) through DLPack.
    with pytest.raises((BufferError, TypeError)):
        np.zeros(3, dtype=np.longdouble).__dlpack__(max_version=(1, 1))


def _arrow_source(dtype):
    return (np.arange(2 * 3 * 4) % 101).astype(dtype).reshape(2, 3, 4)


@pytest.mark.parametrize("dtype", ARROW_DTYPES, ids=str)
def test_pyarrow_imports_hurray_arrow_exports(dtype):
    src = _arrow_source(dtype)
    cases = {
        "3d": src,
        "1xN": src.reshape(1, 24).copy(),
        "1-d": src.reshape(24).copy(),
        "empty": np.zeros((0, 3), dtype=dtype),
        "permuted": src.transpose(0, 2, 1),
        "batch-slice": src[1:],
    }
    for name, a in cases.items():
        desc, base = h.describe_numpy(a)
        arr, sch, oid = h.export_arrow(desc, base, keep=a)
        assert arr.device_type == h.KDL_CPU and not arr.sync_event
        pa_arr = pa.Array._import_from_c_device(ctypes.addressof(arr), ctypes.addressof(sch))
        assert isinstance(pa_arr, pa.FixedShapeTensorArray), name
        assert len(pa_arr) == a.shape[0]
        np.testing.assert_array_equal(pa_arr.to_numpy_ndarray(), a, err_msg=name)
        del pa_arr
        assert released(oid) == 1, f"{name}: owner released exactly once"


def test_arrow_refusals_are_typed():
    for a, status in [
        (np.array(1.0, dtype=np.float32), "NOT_EXPORTABLE"),                 # rank 0
        (np.zeros((2, 3), dtype=np.complex64), "DATA_TYPE"),                 # no Arrow type
        (np.zeros((4, 6), dtype=np.int32)[:, ::2], "NOT_EXPORTABLE"),        # gapped strides
        (np.zeros((3, 4), dtype=np.int16, order="F"), "NOT_EXPORTABLE"),     # batch not outermost
    ]:
        desc, base = h.describe_numpy(a)
        with pytest.raises(h.HurrayError) as e:
            h.export_arrow(desc, base, keep=a)
        assert e.value.status == h.E[status]


@pytest.mark.parametrize("dtype", ARROW_DTYPES, ids=str)
def test_hurray_imports_pyarrow_exports_and_ipc_round_trip(dtype):
    src = _arrow_source(dtype)
    for name, a in {"3d": src, "permuted": src.transpose(0, 2, 1)}.items():
        pa_arr = pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(a) if name == "3d" else a)
        dev, sch = h.ArrowDeviceArray(), h.ArrowSchema()
        pa_arr._export_to_c_device(ctypes.addressof(dev), ctypes.addressof(sch))
        imp = h.import_arrow(dev, sch)
        rec = imp.record
        assert rec.kind == h.IMPORT_ARROW and rec.ndim == 3 and rec.type_tag == h.TYPE_TAG[dtype.name]
        assert rec.read_only == 1 and rec.device_tag == h.DEVICE_CPU
        # The bytes, through the imported descriptor (NumPy reads hurray's view).
        got = np.from_dlpack(h.HurrayTensor(imp.desc, rec.base, keep=None))
        np.testing.assert_array_equal(got, a, err_msg=name)
        # Re-export the imported tensor to Arrow and move it through IPC.
        arr, sch2, oid = h.export_arrow(imp.desc, rec.base, keep=None)
        again = pa.Array._import_from_c_device(ctypes.addressof(arr), ctypes.addressof(sch2))
        batch = pa.record_batch([again], names=["t"])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as w:
            w.write_batch(batch)
        table = pa.ipc.open_stream(sink.getvalue()).read_all()
        col = table.column("t").combine_chunks()
        assert isinstance(col, pa.FixedShapeTensorArray)
        np.testing.assert_array_equal(col.to_numpy_ndarray(), a, err_msg=name)
        del again, batch, table, col, got
        assert released(oid) == 1
        imp.release()
        assert imp.record.kind == h.IMPORT_NONE


def test_pyarrow_plain_list_is_refused_and_released():
    # A FixedSizeList without the extension type is not a tensor.
    storage = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(6, dtype=np.int32)), 3)
    dev, sch = h.ArrowDeviceArray(), h.ArrowSchema()
    storage._export_to_c_device(ctypes.addressof(dev), ctypes.addressof(sch))
    with pytest.raises(h.HurrayError) as e:
        h.import_arrow(dev, sch)
    assert e.value.status == h.E["ARROW_METADATA"]
    assert not dev.array.release and not sch.release, "both released on error"
