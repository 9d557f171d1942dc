"""ctypes bindings to hurray's C ABI interchange functions (no Python package).

The library is the C library `libhurray_c.so`, named by the HURRAY_FFI_LIB environment
variable (CI builds it with `cargo rustc -p hurray-rs-clib --crate-type cdylib`). The DLPack and Arrow
structs below mirror the vendored headers in core/interop/include/vendor/.

`HurrayTensor` is a DLPack producer object (`__dlpack__`, `__dlpack_device__`)
backed by hurray's export; `import_capsule` / `import_arrow` feed another
library's export to hurray's import.
"""

import ctypes
import os
from ctypes import (
    CFUNCTYPE, POINTER, Structure, addressof, byref, c_char_p, c_int, c_int32,
    c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p,
)

LIB_PATH = os.environ.get("HURRAY_FFI_LIB")
if not LIB_PATH:
    raise RuntimeError("set HURRAY_FFI_LIB to the path of libhurray_c.so")
lib = ctypes.CDLL(LIB_PATH)

# --- DLPack (dlpack.h) ------------------------------------------------------
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
READ_ONLY, IS_COPIED = 1, 2


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p), ("device", DLDevice), ("ndim", c_int32),
        ("dtype", DLDataType), ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)), ("byte_offset", c_uint64),
    ]


DELETER = CFUNCTYPE(None, c_void_p)


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion), ("manager_ctx", c_void_p),
        ("deleter", c_void_p), ("flags", c_uint64), ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


assert ctypes.sizeof(DLTensor) == 48 and ctypes.sizeof(DLManagedTensorVersioned) == 80

# --- Arrow (abi.h) ----------------------------------------------------------


class ArrowSchema(Structure):
    pass


ArrowSchema._fields_ = [
    ("format", c_char_p), ("name", c_char_p), ("metadata", c_void_p),
    ("flags", c_int64), ("n_children", c_int64),
    ("children", POINTER(POINTER(ArrowSchema))), ("dictionary", c_void_p),
    ("release", c_void_p), ("private_data", c_void_p),
]


class ArrowArray(Structure):
    pass


ArrowArray._fields_ = [
    ("length", c_int64), ("null_count", c_int64), ("offset", c_int64),
    ("n_buffers", c_int64), ("n_children", c_int64), ("buffers", POINTER(c_void_p)),
    ("children", POINTER(POINTER(ArrowArray))), ("dictionary", c_void_p),
    ("release", c_void_p), ("private_data", c_void_p),
]


class ArrowDeviceArray(Structure):
    _fields_ = [
        ("array", ArrowArray), ("device_id", c_int64), ("device_type", c_int32),
        ("sync_event", c_void_p), ("reserved", c_int64 * 3),
    ]


assert ctypes.sizeof(ArrowSchema) == 72 and ctypes.sizeof(ArrowDeviceArray) == 128

# --- hurray C ABI -----------------------------------------------------------
OWNER_RELEASE = CFUNCTYPE(None, c_void_p)
MAX_DESC = 557
EXPORT_WRITABLE, EXPORT_LEGACY, IMPORT_LEGACY = 1, 2, 1
IMPORT_NONE, IMPORT_DLPACK, IMPORT_DLPACK_LEGACY, IMPORT_ARROW = 0, 1, 2, 3
DEVICE_CPU, DEVICE_CUDA = 0x00, 0x01
SYNC_PRODUCER, SYNC_EVENT, SYNC_CONSUMER_STREAM = 0, 1, 2
E = {
    "NOT_EXPORTABLE": -100, "DEVICE": -101, "DATA_TYPE": -102, "SYNC": -103,
    "DATA_POINTER": -104, "DEVICE_ID": -105, "VERSION": -106, "FLAGS": -107,
    "NDIM": -108, "SHAPE": -109, "OVERFLOW": -110, "RELEASED": -111,
    "ARROW_TYPE": -112, "ARROW_METADATA": -113, "ARROW_ARRAY": -114,
    "DESCRIPTOR": -115, "BUFFER_TOO_SMALL": -116,
}


class HurrayImport(Structure):
    _fields_ = [
        ("base", c_void_p), ("first_element", c_void_p), ("device_id", c_int64),
        ("sync_event", c_void_p), ("object", c_void_p), ("schema", c_void_p),
        ("descriptor_len", c_size_t), ("kind", c_uint8), ("read_only", c_uint8),
        ("type_tag", c_uint8), ("device_tag", c_uint8), ("memory_class", c_uint8),
        ("sync_mode", c_uint8), ("ndim", c_uint8), ("layout_tag", c_uint8),
    ]


lib.hurray_dlpack_export.argtypes = [c_char_p, c_size_t, c_void_p, c_int64, c_uint32,
                                     c_void_p, OWNER_RELEASE, POINTER(c_void_p)]
lib.hurray_dlpack_export.restype = c_int
lib.hurray_dlpack_import.argtypes = [c_void_p, c_uint32, c_uint8, c_void_p, c_size_t,
                                     POINTER(HurrayImport)]
lib.hurray_dlpack_import.restype = c_int
lib.hurray_arrow_export.argtypes = [c_char_p, c_size_t, c_void_p, c_int64, c_void_p,
                                    c_void_p, OWNER_RELEASE, c_void_p, c_void_p]
lib.hurray_arrow_export.restype = c_int
lib.hurray_arrow_import.argtypes = [c_void_p, c_void_p, c_void_p, c_size_t, POINTER(HurrayImport)]
lib.hurray_arrow_import.restype = c_int
lib.hurray_import_release.argtypes = [POINTER(HurrayImport)]
lib.hurray_import_release.restype = None
lib.hurray_describe_strided.argtypes = [c_uint8, c_size_t, POINTER(c_int64), POINTER(c_int64),
                                        c_void_p, c_uint8, c_uint8, c_uint8, c_void_p, c_size_t,
                                        POINTER(c_size_t), POINTER(c_void_p)]
lib.hurray_describe_strided.restype = c_int
lib.hurray_interop_status_message.argtypes = [c_int]
lib.hurray_interop_status_message.restype = c_char_p

# hurray element type tags by NumPy dtype name.
TYPE_TAG = {
    "float16": 0x01, "float32": 0x03, "float64": 0x04,
    "int8": 0x10, "uint8": 0x11, "int16": 0x12, "uint16": 0x13,
    "int32": 0x14, "uint32": 0x15, "int64": 0x16, "uint64": 0x17,
    "complex64": 0x50, "complex128": 0x51,
}


class HurrayError(Exception):
    def __init__(self, status):
        super().__init__(f"{status}: {lib.hurray_interop_status_message(status).decode()}")
        self.status = status


def check(status):
    if status != 0:
        raise HurrayError(status)


# --- owners: every export's owner is a slot here, released exactly once -----
RELEASES = {}     # owner id -> number of owner_release calls
_KEEP = {}        # owner id -> the object keeping the memory alive
_next_id = [1]


@OWNER_RELEASE
def _owner_release(ctx):
    RELEASES[ctx] = RELEASES.get(ctx, 0) + 1
    _KEEP.pop(ctx, None)


def new_owner(keep):
    oid = _next_id[0]
    _next_id[0] += 1
    _KEEP[oid] = keep
    RELEASES[oid] = 0
    return oid


# --- describing memory ------------------------------------------------------
def describe(type_tag, shape, strides, first_element, device_tag=DEVICE_CPU,
             memory_class=0, sync_mode=SYNC_PRODUCER):
    """A hurray descriptor for a strided tensor at `first_element` (strides in
    elements, or None for row-major): (descriptor bytes, base address)."""
    n = len(shape)
    shp = (c_int64 * max(n, 1))(*shape)
    std = (c_int64 * max(n, 1))(*strides) if strides is not None else None
    buf = (c_uint8 * MAX_DESC)()
    length, base = c_size_t(), c_void_p()
    check(lib.hurray_describe_strided(
        type_tag, n, shp, std, first_element, device_tag, memory_class, sync_mode,
        buf, MAX_DESC, byref(length), byref(base)))
    return bytes(buf[: length.value]), base.value or 0


def describe_numpy(a):
    tag = TYPE_TAG[a.dtype.name]
    strides = [s // a.itemsize for s in a.strides]
    assert all(s * a.itemsize == t for s, t in zip(strides, a.strides))
    return describe(tag, a.shape, strides, a.ctypes.data)


# --- DLPack capsules ----------------------------------------------------------
capi = ctypes.pythonapi
capi.PyCapsule_New.restype = ctypes.py_object
capi.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
capi.PyCapsule_IsValid.restype = c_int
capi.PyCapsule_IsValid.argtypes = [c_void_p, c_char_p]
capi.PyCapsule_GetPointer.restype = c_void_p
capi.PyCapsule_GetPointer.argtypes = [c_void_p, c_char_p]
capi.PyCapsule_SetName.restype = c_int
capi.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
# PyCapsule_New keeps the name pointer too.
_NAMES = {False: ctypes.c_char_p(b"dltensor_versioned"), True: ctypes.c_char_p(b"dltensor")}

CAPSULE_DESTRUCTOR = CFUNCTYPE(None, c_void_p)


def _call_deleter(ptr, legacy):
    cls = DLManagedTensor if legacy else DLManagedTensorVersioned
    m = cls.from_address(ptr)
    if m.deleter:
        DELETER(m.deleter)(ptr)


@CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # The DLPack Python rule: a capsule still named as produced was never
    # consumed, so its producer deletes it; a consumer renames it to
    # "used_dltensor[_versioned]" and calls the deleter itself.
    for name, legacy in ((b"dltensor_versioned", False), (b"dltensor", True)):
        if capi.PyCapsule_IsValid(capsule, name):
            _call_deleter(capi.PyCapsule_GetPointer(capsule, name), legacy)
            return


class HurrayTensor:
    """A DLPack producer backed by hurray's export of (descriptor, base)."""

    def __init__(self, desc, base, keep, device=(KDL_CPU, 0), writable=False):
        self.desc, self.base, self.keep = desc, base, keep
        self.device, self.writable = device, writable
        self.owner_ids = []

    def __dlpack_device__(self):
        return self.device

    def export(self, legacy):
        oid = new_owner(self.keep)
        self.owner_ids.append(oid)
        out = c_void_p()
        flags = (EXPORT_WRITABLE if self.writable else 0) | (EXPORT_LEGACY if legacy else 0)
        check(lib.hurray_dlpack_export(self.desc, len(self.desc), self.base, self.device[1],
                                       flags, oid, _owner_release, byref(out)))
        return out.value, oid

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("hurray exports are zero-copy")
        legacy = max_version is None or max_version[0] < 1
        ptr, _ = self.export(legacy)
        return capi.PyCapsule_New(ptr, _NAMES[legacy], ctypes.cast(_capsule_destructor, c_void_p))


class LegacyOnly:
    """A producer that only speaks DLPack 0.x (no max_version keyword)."""

    def __init__(self, t):
        self.t = t

    def __dlpack_device__(self):
        return self.t.device

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__(max_version=None)


class Imported:
    """A tensor hurray imported; release() hands it back to its producer."""

    def __init__(self, record, desc):
        self.record, self.desc = record, desc

    def release(self):
        lib.hurray_import_release(byref(self.record))


# PyCapsule_SetName keeps the pointer, not a copy: these must live forever.
_USED = {b"dltensor_versioned": ctypes.c_char_p(b"used_dltensor_versioned"),
         b"dltensor": ctypes.c_char_p(b"used_dltensor")}


def import_capsule(capsule, device_sync=SYNC_PRODUCER):
    """Consumes a DLPack capsule the way a consumer must: take the pointer,
    rename the capsule "used_…", and hand ownership to hurray's import."""
    for name, legacy in ((b"dltensor_versioned", False), (b"dltensor", True)):
        if capi.PyCapsule_IsValid(id(capsule), name):
            ptr = capi.PyCapsule_GetPointer(id(capsule), name)
            capi.PyCapsule_SetName(capsule, _USED[name])
            buf = (c_uint8 * MAX_DESC)()
            rec = HurrayImport()
            check(lib.hurray_dlpack_import(ptr, IMPORT_LEGACY if legacy else 0, device_sync,
                                           buf, MAX_DESC, byref(rec)))
            return Imported(rec, bytes(buf[: rec.descriptor_len]))
    raise ValueError("not a DLPack capsule")


def import_arrow(device_array, schema):
    buf = (c_uint8 * MAX_DESC)()
    rec = HurrayImport()
    check(lib.hurray_arrow_import(addressof(device_array), addressof(schema), buf, MAX_DESC,
                                  byref(rec)))
    return Imported(rec, bytes(buf[: rec.descriptor_len]))


def export_arrow(desc, base, keep, device_id=-1, sync_event=None):
    arr, sch = ArrowDeviceArray(), ArrowSchema()
    oid = new_owner(keep)
    check(lib.hurray_arrow_export(desc, len(desc), base, device_id, sync_event, oid,
                                  _owner_release, addressof(arr), addressof(sch)))
    return arr, sch, oid


# --- parsing a descriptor (hurray_tensor_parse: the core's TensorView::parse) -
class HurrayTable(Structure):
    _fields_ = [("bytes", c_void_p), ("count", c_size_t)]


class HurrayReadOptions(Structure):
    _fields_ = [("extension_layouts", c_void_p), ("extension_layout_count", c_size_t),
                ("private_schemes", c_uint8), ("private_composition_rules", c_uint8)]


class HurrayLayout(Structure):
    _fields_ = [
        ("nnz", c_uint64), ("num_pages", c_uint64), ("extension_id", c_uint64),
        ("extension_data", c_void_p), ("extension_data_len", c_size_t),
        ("page_size", c_uint32), ("num_seqs", c_uint32), ("layer_index", c_uint32),
        ("member_count", c_uint32), ("hilbert_order", c_uint32), ("hilbert_rank", c_uint32),
        ("tag", c_uint8), ("is_sorted", c_uint8), ("kv_role", c_uint8), ("wide_indices", c_uint8),
        ("composition_rule", c_uint8), ("combine_op", c_uint8), ("tile_depth", c_uint8),
    ]


class HurrayTensorView(Structure):
    _fields_ = [
        ("bytes", c_void_p), ("len", c_size_t), ("table", HurrayTable),
        ("options", HurrayReadOptions), ("byte_offset", c_uint64), ("element_count", c_uint64),
        ("layout", HurrayLayout), ("flags", c_uint32), ("rank", c_uint32),
        ("element_bits", c_uint32), ("buffer_count", c_uint32), ("version_major", c_uint8),
        ("version_minor", c_uint8), ("element_type", c_uint8), ("is_dynamic", c_uint8),
        ("member_role", c_uint8),
    ]


class HurrayBufferHandle(Structure):
    _fields_ = [("byte_size", c_uint64), ("alignment", c_uint32), ("device_tag", c_uint8),
                ("sync_mode", c_uint8), ("memory_class", c_uint8), ("reserved", c_uint8)]


class HurrayErrorDetail(Structure):
    _fields_ = [("status", c_int), ("offset", c_uint32), ("index", c_uint64),
                ("value", c_uint64), ("expected", c_uint64)]


# Checked against hurray.h with a C compiler (sizeof / offsetof).
assert ctypes.sizeof(HurrayTensorView) == 168 and HurrayTensorView.element_type.offset == 162
assert ctypes.sizeof(HurrayBufferHandle) == 16 and ctypes.sizeof(HurrayErrorDetail) == 32

lib.hurray_tensor_parse.argtypes = [c_char_p, c_size_t, POINTER(HurrayTensorView),
                                    POINTER(HurrayErrorDetail)]
lib.hurray_tensor_parse.restype = c_int
lib.hurray_tensor_shape.argtypes = [POINTER(HurrayTensorView), POINTER(c_uint64), c_size_t]
lib.hurray_tensor_shape.restype = c_int
lib.hurray_tensor_buffer.argtypes = [POINTER(HurrayTensorView), c_size_t,
                                     POINTER(HurrayBufferHandle)]
lib.hurray_tensor_buffer.restype = c_int
lib.hurray_status_message.argtypes = [c_int]
lib.hurray_status_message.restype = c_char_p


class DescriptorError(Exception):
    def __init__(self, detail):
        msg = lib.hurray_status_message(detail.status).decode()
        super().__init__(f"{detail.status} at byte {detail.offset}: {msg}")
        self.detail = detail


def parse_descriptor(data):
    """Validates `data` as exactly one descriptor (the core's TensorView::parse)
    and returns (view, shape, [buffer handles]); raises DescriptorError."""
    view, err = HurrayTensorView(), HurrayErrorDetail()
    if lib.hurray_tensor_parse(data, len(data), byref(view), byref(err)) != 0:
        raise DescriptorError(err)
    shape = (c_uint64 * max(view.rank, 1))()
    check(lib.hurray_tensor_shape(byref(view), shape, max(view.rank, 1)))
    buffers = []
    for i in range(view.buffer_count):
        b = HurrayBufferHandle()
        check(lib.hurray_tensor_buffer(byref(view), i, byref(b)))
        buffers.append(b)
    # `view` borrows `data`: keep them together.
    view._data = data
    return view, list(shape[: view.rank]), buffers
