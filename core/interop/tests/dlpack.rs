//! DLPack export/import round trips and hostile producer values. Runs under
//! Miri in CI (`cargo +nightly miri test -p hurray-rs-interop`): every test
//! goes through the crate's raw-pointer code with real allocations.

// Test code: every `unsafe` block below hands the crate structs that the
// test itself just built (or that the crate exported) and reads them while
// they are alive; the crate's own blocks carry the arguments.
#![allow(clippy::undocumented_unsafe_blocks)]

use core::ffi::c_void;
use core::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hurray_core::interop::{self, dl_code};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, Layout, LayoutSpec, MemoryClass, SyncMode,
    TensorDescriptor, TensorView,
};
use hurray_interop::dlpack::ffi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, DLPACK_FLAG_BITMASK_READ_ONLY, DLPackVersion,
    DLTensor,
};
use hurray_interop::dlpack::{self, Access, ExportOptions};
use hurray_interop::{DescriptorBuf, ExportError, ImportError, ImportOptions, PrivateDevice};

/// A 64-byte aligned host buffer.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; 64]);

/// Owns a buffer and counts its drops.
struct Owner {
    lines: Vec<Line>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn owner(bytes: usize) -> (Owner, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let lines = vec![Line([0; 64]); bytes.div_ceil(64).max(1)];
    (
        Owner {
            lines,
            drops: Arc::clone(&drops),
        },
        drops,
    )
}

fn fill(o: &mut Owner) {
    for (i, b) in o.lines.iter_mut().flat_map(|l| l.0.iter_mut()).enumerate() {
        *b = (i * 7 + 3) as u8;
    }
}

fn encode(
    et: ElementType,
    shape: &[u64],
    layout: LayoutSpec<'_>,
    byte_offset: u64,
    handle: BufferHandle,
) -> Vec<u8> {
    let buffers = [handle];
    let d = TensorDescriptor::new(et, shape, layout, &buffers).with_byte_offset(byte_offset);
    let mut out = vec![0u8; d.encoded_len()];
    d.encode(&mut out).unwrap();
    out
}

fn cpu(size: u64) -> BufferHandle {
    BufferHandle::new(size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()
}

/// Reads the bytes of every element of `view` at `base`, in logical
/// row-major order (whole-byte types).
unsafe fn gather(view: &TensorView<'_>, base: *const u8) -> Vec<u8> {
    let width = (view.element_type().bits().unwrap() / 8) as usize;
    let shape: Vec<u64> = view.shape().iter().collect();
    let mut strides = [0i64; 64];
    let strides = view.strides(&mut strides).unwrap().to_vec();
    let count: u64 = shape.iter().product();
    let mut out = Vec::new();
    for linear in 0..count {
        let mut rem = linear;
        let mut off = view.byte_offset() as i64;
        for (axis, &n) in shape.iter().enumerate().rev() {
            off += (rem % n) as i64 * strides[axis] * width as i64;
            rem /= n;
        }
        for b in 0..width {
            out.push(unsafe { base.offset(off as isize + b as isize).read() });
        }
    }
    out
}

#[test]
fn versioned_round_trip_keeps_descriptor_values_and_frees_once() {
    let cases: &[(ElementType, &[u64], LayoutSpec<'_>, u64)] = &[
        (ElementType::Float32, &[2, 3, 4, 5], LayoutSpec::RowMajor, 0),
        (ElementType::Int16, &[3, 4], LayoutSpec::ColumnMajor, 8),
        (
            ElementType::Float64,
            &[3, 4],
            LayoutSpec::Strided(&[1, 3]),
            0,
        ),
        (
            ElementType::UInt8,
            &[4, 3],
            LayoutSpec::Strided(&[-3, 1]),
            9,
        ),
        (ElementType::Complex64, &[], LayoutSpec::RowMajor, 16),
        (ElementType::Int64, &[0, 5], LayoutSpec::RowMajor, 0),
        (ElementType::BFloat16, &[1, 7], LayoutSpec::RowMajor, 2),
    ];
    for &(et, shape, layout, byte_offset) in cases {
        let (mut o, drops) = owner(1024);
        fill(&mut o);
        let count: u64 = shape.iter().product();
        let size = if count == 0 { 0 } else { 1024 };
        let handle = if size == 0 {
            BufferHandle::empty(DeviceTag::Cpu)
        } else {
            cpu(size)
        };
        let bytes = encode(et, shape, layout, byte_offset, handle);
        let view = TensorView::parse(&bytes).unwrap();
        let data = o.lines.as_mut_ptr().cast::<c_void>();
        let expected = if count == 0 {
            vec![]
        } else {
            unsafe { gather(&view, data.cast()) }
        };
        let managed = dlpack::export_versioned(&view, data, o, &ExportOptions::default()).unwrap();
        // What a consumer sees.
        let m = unsafe { &*managed.as_ptr() };
        assert_eq!(m.version, DLPackVersion { major: 1, minor: 1 });
        assert_eq!(m.flags, DLPACK_FLAG_BITMASK_READ_ONLY);
        assert_eq!(m.dl_tensor.ndim as usize, shape.len());
        assert_eq!(m.dl_tensor.byte_offset, byte_offset);
        assert_eq!(
            m.dl_tensor.device,
            DLDevice {
                device_type: interop::KDL_CPU,
                device_id: 0
            }
        );
        if !shape.is_empty() {
            assert!(!m.dl_tensor.strides.is_null(), "strides always filled");
            let s = unsafe { core::slice::from_raw_parts(m.dl_tensor.strides, shape.len()) };
            let mut want = [0i64; 8];
            assert_eq!(s, view.strides(&mut want).unwrap());
        }
        let mut buf = DescriptorBuf::new();
        let imported = unsafe {
            dlpack::import_versioned(
                managed.into_raw(),
                buf.as_mut_slice(),
                &ImportOptions::DEFAULT,
            )
        }
        .unwrap();
        let v = imported.view();
        assert_eq!(v.element_type(), et);
        assert!(v.shape().iter().eq(shape.iter().copied()));
        assert!(imported.is_read_only());
        if count > 0 {
            let got = unsafe { gather(v, imported.base().cast()) };
            assert_eq!(got, expected, "{et:?} {shape:?}");
            assert_eq!(
                imported.first_element() as usize,
                data as usize + byte_offset as usize
            );
        }
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(imported);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "deleter dropped the owner exactly once"
        );
    }
}

#[test]
fn legacy_round_trip_and_writable_export() {
    let (mut o, drops) = owner(64);
    fill(&mut o);
    let bytes = encode(
        ElementType::Int32,
        &[4, 4],
        LayoutSpec::RowMajor,
        0,
        cpu(64),
    );
    let view = TensorView::parse(&bytes).unwrap();
    let data = o.lines.as_mut_ptr().cast::<c_void>();
    let opts = ExportOptions {
        access: Access::ReadWrite,
        device_id: 0,
        private_devices: &[],
    };
    let managed = dlpack::export_versioned(&view, data, o, &opts).unwrap();
    assert_eq!(unsafe { (*managed.as_ptr()).flags }, 0);
    drop(managed);
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    let (o, drops) = owner(64);
    let data = o.lines.as_ptr().cast_mut().cast::<c_void>();
    let legacy = dlpack::export_legacy(&view, data, o, &ExportOptions::default()).unwrap();
    let mut buf = DescriptorBuf::new();
    let imported = unsafe {
        dlpack::import_legacy(
            legacy.into_raw(),
            buf.as_mut_slice(),
            &ImportOptions::DEFAULT,
        )
    }
    .unwrap();
    assert_eq!(imported.view().layout(), Layout::RowMajor);
    assert!(
        imported.is_read_only(),
        "legacy has no flag: read-only by hurray's rule"
    );
    drop(imported);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn export_refusals_are_typed_and_drop_the_owner() {
    let view_of = |bytes: &[u8]| {
        TensorView::parse(bytes)
            .map(|v| v.as_bytes().to_vec())
            .unwrap()
    };
    let check = |bytes: Vec<u8>, data: *mut c_void, opts: ExportOptions<'_>, want: ExportError| {
        let (o, drops) = owner(64);
        let view = TensorView::parse(&bytes).unwrap();
        assert_eq!(
            dlpack::export_versioned(&view, data, o, &opts).unwrap_err(),
            want
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    };
    let (o, _) = owner(64);
    let aligned = o.lines.as_ptr().cast_mut().cast::<c_void>();
    // Bool is bit-packed in hurray, a byte per value in DLPack.
    check(
        view_of(&encode(
            ElementType::Bool,
            &[8],
            LayoutSpec::RowMajor,
            0,
            cpu(1),
        )),
        aligned,
        ExportOptions::default(),
        ExportError::Mapping(interop::InteropError::NoDataType(ElementType::Bool)),
    );
    // Null and misaligned data.
    check(
        view_of(&encode(
            ElementType::Int8,
            &[8],
            LayoutSpec::RowMajor,
            0,
            cpu(8),
        )),
        ptr::null_mut(),
        ExportOptions::default(),
        ExportError::NullData,
    );
    let off = aligned.wrapping_byte_add(8);
    check(
        view_of(&encode(
            ElementType::Int8,
            &[8],
            LayoutSpec::RowMajor,
            0,
            cpu(8),
        )),
        off,
        ExportOptions::default(),
        ExportError::MisalignedData {
            address: off as usize,
            alignment: 64,
        },
    );
    // Device ids outside int32_t, negative ones.
    for id in [-1i64, i64::from(i32::MAX) + 1] {
        check(
            view_of(&encode(
                ElementType::Int8,
                &[8],
                LayoutSpec::RowMajor,
                0,
                cpu(8),
            )),
            aligned,
            ExportOptions {
                device_id: id,
                ..Default::default()
            },
            ExportError::DeviceId(id),
        );
    }
    // An Event buffer: DLPack has no event to carry.
    let event = BufferHandle::new(64, 64, DeviceTag::Cuda, SyncMode::Event).unwrap();
    check(
        view_of(&encode(
            ElementType::Int8,
            &[8],
            LayoutSpec::RowMajor,
            0,
            event,
        )),
        aligned,
        ExportOptions::default(),
        ExportError::Sync(SyncMode::Event),
    );
    // A private device with no registration, then with one.
    let private =
        BufferHandle::new(64, 64, DeviceTag::Private(0xF1), SyncMode::ProducerSynced).unwrap();
    let bytes = view_of(&encode(
        ElementType::Int8,
        &[8],
        LayoutSpec::RowMajor,
        0,
        private,
    ));
    check(
        bytes.clone(),
        aligned,
        ExportOptions::default(),
        ExportError::Mapping(interop::InteropError::NoDeviceCode {
            device_tag: DeviceTag::Private(0xF1),
            memory_class: MemoryClass::Standard,
        }),
    );
    let map = [PrivateDevice {
        tag: 0xF1,
        code: interop::KDL_TPU,
    }];
    let view = TensorView::parse(&bytes).unwrap();
    let m = dlpack::export_versioned(
        &view,
        aligned,
        (),
        &ExportOptions {
            private_devices: &map,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        unsafe { (*m.as_ptr()).dl_tensor.device.device_type },
        interop::KDL_TPU
    );
    // Non-dense layouts.
    let coo = hurray_core::layout::Coo {
        nnz: 0,
        sorted: false,
    };
    let mut sparse = vec![0u8; 256];
    let handles = [
        BufferHandle::empty(DeviceTag::Cpu),
        BufferHandle::empty(DeviceTag::Cpu),
    ];
    {
        let n = TensorDescriptor::new(
            ElementType::Float32,
            &[4, 4],
            LayoutSpec::Coo(coo),
            &handles,
        )
        .encode(&mut sparse)
        .unwrap();
        check(
            sparse[..n].to_vec(),
            aligned,
            ExportOptions::default(),
            ExportError::UnsupportedLayout(0x06),
        );
    }
}

/// A foreign producer: a managed tensor whose deleter counts its calls.
#[repr(C)]
struct Producer {
    managed: DLManagedTensorVersioned,
    shape: [i64; 40],
    strides: [i64; 40],
    data: Vec<Line>,
}

static FOREIGN_DELETES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn foreign_delete(m: *mut DLManagedTensorVersioned) {
    FOREIGN_DELETES.fetch_add(1, Ordering::SeqCst);
    drop(unsafe { Box::from_raw(m.cast::<Producer>()) });
}

fn producer(edit: impl FnOnce(&mut Producer)) -> *mut DLManagedTensorVersioned {
    let p = Box::new(Producer {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 3 },
            manager_ctx: ptr::null_mut(),
            deleter: Some(foreign_delete),
            flags: 0,
            dl_tensor: DLTensor {
                data: ptr::null_mut(),
                device: DLDevice {
                    device_type: interop::KDL_CPU,
                    device_id: 0,
                },
                ndim: 2,
                dtype: DLDataType {
                    code: dl_code::FLOAT,
                    bits: 32,
                    lanes: 1,
                },
                shape: ptr::null_mut(),
                strides: ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape: [0; 40],
        strides: [0; 40],
        data: vec![Line([0; 64]); 4],
    });
    let raw = Box::into_raw(p);
    // SAFETY (test): `raw` is the live box just leaked; pointers into it are
    // derived from it.
    unsafe {
        let p = &mut *raw;
        p.shape[..2].copy_from_slice(&[3, 4]);
        p.strides[..2].copy_from_slice(&[4, 1]);
        let t = &mut (*raw).managed.dl_tensor;
        t.data = (*raw).data.as_mut_ptr().cast();
        t.shape = ptr::addr_of_mut!((*raw).shape).cast();
        t.strides = ptr::addr_of_mut!((*raw).strides).cast();
        edit(&mut *raw);
    }
    raw.cast()
}

fn import_foreign(edit: impl FnOnce(&mut Producer)) -> Result<(Vec<u8>, bool), ImportError> {
    import_foreign_with(edit, &ImportOptions::DEFAULT)
}

fn import_foreign_with(
    edit: impl FnOnce(&mut Producer),
    opts: &ImportOptions<'_>,
) -> Result<(Vec<u8>, bool), ImportError> {
    let before = FOREIGN_DELETES.load(Ordering::SeqCst);
    let m = producer(edit);
    let mut buf = DescriptorBuf::new();
    let r = unsafe { dlpack::import_versioned(m, buf.as_mut_slice(), opts) }
        .map(|i| (i.descriptor().to_vec(), i.is_read_only()));
    assert_eq!(
        FOREIGN_DELETES.load(Ordering::SeqCst),
        before + 1,
        "deleter called exactly once, success or not"
    );
    r
}

#[test]
fn foreign_import_of_a_valid_tensor() {
    let _lock = SERIAL.lock();
    let (desc, ro) = import_foreign(|p| {
        p.managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED
    })
    .unwrap();
    assert!(ro);
    let v = TensorView::parse(&desc).unwrap();
    assert_eq!(v.element_type(), ElementType::Float32);
    assert_eq!(v.layout(), Layout::RowMajor);
    // Null strides before 1.2 mean row-major; a CUDA host device is pinned memory.
    let (desc, _) = import_foreign(|p| {
        p.managed.version.minor = 1;
        p.managed.dl_tensor.strides = ptr::null_mut();
        p.managed.dl_tensor.device = DLDevice {
            device_type: interop::KDL_CUDA_HOST,
            device_id: 0,
        };
    })
    .unwrap();
    let v = TensorView::parse(&desc).unwrap();
    let h = v.buffers().get(0).unwrap();
    assert_eq!(
        (h.device_tag(), h.memory_class()),
        (DeviceTag::Cuda, MemoryClass::HostPinned)
    );
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn every_malformed_producer_value_is_a_typed_error() {
    let _lock = SERIAL.lock();
    use ImportError as E;
    let err = |edit: fn(&mut Producer)| import_foreign(edit).unwrap_err();
    assert_eq!(
        err(|p| p.managed.version.major = 2),
        E::UnsupportedVersion { major: 2, minor: 3 }
    );
    assert_eq!(
        err(|p| p.managed.version.major = 0),
        E::UnsupportedVersion { major: 0, minor: 3 }
    );
    assert_eq!(err(|p| p.managed.flags = 1 << 9), E::UnknownFlags(1 << 9));
    assert_eq!(err(|p| p.managed.dl_tensor.ndim = -1), E::Ndim(-1));
    assert_eq!(err(|p| p.managed.dl_tensor.ndim = 33), E::Ndim(33));
    assert_eq!(
        err(|p| p.managed.dl_tensor.ndim = i32::MAX),
        E::Ndim(i64::from(i32::MAX))
    );
    assert_eq!(
        err(|p| p.shape[1] = -4),
        E::NegativeDim { axis: 1, value: -4 }
    );
    assert!(matches!(
        err(|p| p.managed.dl_tensor.dtype.lanes = 4),
        E::DataType(_)
    ));
    assert!(matches!(
        err(|p| p.managed.dl_tensor.dtype.bits = 24),
        E::DataType(_)
    ));
    // DLPack's byte-per-value bool, the opaque handle, FP8 variants hurray lacks.
    for (code, bits) in [
        (6u8, 8u8),
        (3, 64),
        (7, 8),
        (8, 8),
        (9, 8),
        (11, 8),
        (13, 8),
        (200, 8),
    ] {
        let before = FOREIGN_DELETES.load(Ordering::SeqCst);
        let m = producer(|p| {
            p.managed.dl_tensor.dtype = DLDataType {
                code,
                bits,
                lanes: 1,
            }
        });
        let mut buf = DescriptorBuf::new();
        let r = unsafe { dlpack::import_versioned(m, buf.as_mut_slice(), &ImportOptions::DEFAULT) };
        assert!(matches!(r, Err(E::DataType(_))), "({code}, {bits})");
        assert_eq!(FOREIGN_DELETES.load(Ordering::SeqCst), before + 1);
    }
    // Devices hurray has no tag for, and codes beyond the header.
    for code in [
        0,
        5,
        6,
        interop::KDL_VPI,
        interop::KDL_EXT_DEV,
        interop::KDL_MAIA,
        interop::KDL_TRN,
        interop::KDL_TPU,
        interop::KDL_TPU_HOST,
        -3,
        i32::MAX,
    ] {
        let before = FOREIGN_DELETES.load(Ordering::SeqCst);
        let m = producer(|p| p.managed.dl_tensor.device.device_type = code);
        let mut buf = DescriptorBuf::new();
        let r = unsafe { dlpack::import_versioned(m, buf.as_mut_slice(), &ImportOptions::DEFAULT) };
        assert_eq!(
            r.unwrap_err(),
            E::Device(interop::InteropError::UnknownDeviceCode(code))
        );
        assert_eq!(FOREIGN_DELETES.load(Ordering::SeqCst), before + 1);
    }
    assert_eq!(
        err(|p| p.managed.dl_tensor.device.device_id = -2),
        E::DeviceId(-2)
    );
    assert_eq!(
        err(|p| p.managed.dl_tensor.shape = ptr::null_mut()),
        E::NullShape
    );
    assert_eq!(
        err(|p| p.managed.dl_tensor.strides = ptr::null_mut()),
        E::NullStrides
    );
    assert_eq!(
        err(|p| p.managed.dl_tensor.data = ptr::null_mut()),
        E::NullData
    );
    // An empty tensor may have a null data pointer.
    assert!(
        import_foreign(|p| {
            p.shape[0] = 0;
            p.managed.dl_tensor.data = ptr::null_mut();
        })
        .is_ok()
    );
    assert!(matches!(
        err(|p| p.strides[0] = i64::MAX),
        E::Overflow { .. }
    ));
    assert!(matches!(
        err(|p| p.strides[0] = i64::MIN),
        E::Overflow { .. }
    ));
    assert!(matches!(err(|p| p.shape[0] = i64::MAX), E::Overflow { .. }));
    assert!(matches!(
        err(|p| p.managed.dl_tensor.byte_offset = u64::MAX),
        E::Overflow { .. }
    ));
    // Strides that reach below address 0.
    assert!(matches!(
        err(|p| p.strides[0] = -(1 << 60)),
        E::Overflow { .. }
    ));
    assert!(matches!(
        err(|p| p.managed.dl_tensor.byte_offset = 2),
        E::MisalignedData { alignment: 4, .. }
    ));
    // Packed sub-byte data flagged as padded.
    assert_eq!(
        err(|p| {
            p.managed.flags = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
            p.managed.dl_tensor.dtype = DLDataType {
                code: dl_code::FLOAT4_E2M1FN,
                bits: 4,
                lanes: 1,
            };
        }),
        E::PaddedSubByte
    );
    // A device buffer declared with the sync mode the caller chose.
    let (desc, _) = import_foreign_with(
        |p| {
            p.managed.dl_tensor.device = DLDevice {
                device_type: interop::KDL_CUDA,
                device_id: 3,
            }
        },
        &ImportOptions {
            device_sync: SyncMode::ConsumerStream,
            private_devices: &[],
        },
    )
    .unwrap();
    let h = TensorView::parse(&desc).unwrap().buffers().get(0).unwrap();
    assert_eq!(
        (h.device_tag(), h.sync_mode()),
        (DeviceTag::Cuda, SyncMode::ConsumerStream)
    );
    // A caller-registered private device.
    let map = [PrivateDevice {
        tag: 0xF7,
        code: interop::KDL_MAIA,
    }];
    let (desc, _) = import_foreign_with(
        |p| p.managed.dl_tensor.device.device_type = interop::KDL_MAIA,
        &ImportOptions {
            device_sync: SyncMode::ProducerSynced,
            private_devices: &map,
        },
    )
    .unwrap();
    assert_eq!(
        TensorView::parse(&desc)
            .unwrap()
            .buffers()
            .get(0)
            .unwrap()
            .device_tag(),
        DeviceTag::Private(0xF7)
    );
    // A null managed tensor: nothing to delete.
    let mut buf = DescriptorBuf::new();
    assert_eq!(
        unsafe {
            dlpack::import_versioned(ptr::null_mut(), buf.as_mut_slice(), &ImportOptions::DEFAULT)
        }
        .unwrap_err(),
        E::NullTensor
    );
    let _ = core::mem::size_of::<DLManagedTensor>();
}
