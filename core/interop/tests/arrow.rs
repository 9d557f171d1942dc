//! Arrow C Device export/import round trips and hostile producer values
//! (also run under Miri).

// Test code: every `unsafe` block below hands the crate structs that the
// test itself just built (or that the crate exported) and reads them while
// they are alive; the crate's own blocks carry the arguments.
#![allow(clippy::undocumented_unsafe_blocks)]

use core::ffi::{c_char, c_void};
use core::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hurray_core::interop::InteropError;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, Layout, LayoutSpec, MemoryClass, SyncMode,
    TensorDescriptor, TensorView,
};
use hurray_interop::arrow::ffi::{ArrowArray, ArrowDeviceArray, ArrowSchema};
use hurray_interop::arrow::{self, ArrowExport, ArrowExportOptions};
use hurray_interop::{DescriptorBuf, ExportError, ImportError, ImportOptions};

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; 64]);

struct Owner {
    _lines: Vec<Line>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn data(lines: usize) -> (Vec<Line>, *mut c_void) {
    let mut v = vec![Line([0; 64]); lines];
    for (i, b) in v.iter_mut().flat_map(|l| l.0.iter_mut()).enumerate() {
        *b = (i % 251) as u8;
    }
    let p = v.as_mut_ptr().cast();
    (v, p)
}

fn encode(et: ElementType, shape: &[u64], layout: LayoutSpec<'_>, handle: BufferHandle) -> Vec<u8> {
    encode_at(et, shape, layout, 0, handle)
}

fn encode_at(
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

fn export(bytes: &[u8], lines: usize) -> (ArrowExport, Arc<AtomicUsize>, *mut c_void) {
    let view = TensorView::parse(bytes).unwrap();
    let (v, p) = data(lines);
    let drops = Arc::new(AtomicUsize::new(0));
    let owner = Owner {
        _lines: v,
        drops: Arc::clone(&drops),
    };
    let out = arrow::export_arrow(&view, p, owner, &ArrowExportOptions::default()).unwrap();
    (out, drops, p)
}

unsafe fn cstr(p: *const c_char) -> String {
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// The extension metadata value of an exported schema.
unsafe fn metadata_json(s: &ArrowSchema) -> String {
    let p = s.metadata.cast::<u8>();
    let mut at = 0usize;
    let rd = |at: &mut usize| {
        let v = unsafe { p.add(*at).cast::<i32>().read_unaligned() };
        *at += 4;
        v as usize
    };
    let n = rd(&mut at);
    let mut json = String::new();
    for _ in 0..n {
        let kl = rd(&mut at);
        let k = unsafe { core::slice::from_raw_parts(p.add(at), kl) }.to_vec();
        at += kl;
        let vl = rd(&mut at);
        let v = unsafe { core::slice::from_raw_parts(p.add(at), vl) }.to_vec();
        at += vl;
        if k == b"ARROW:extension:metadata" {
            json = String::from_utf8(v).unwrap();
        }
    }
    json
}

fn import(mut out: ArrowExport) -> (Result<Vec<u8>, ImportError>, ArrowExport) {
    let mut buf = DescriptorBuf::new();
    let r = unsafe {
        arrow::import_arrow(
            &mut out.array,
            &mut out.schema,
            buf.as_mut_slice(),
            &ImportOptions::DEFAULT,
        )
    }
    .map(|i| {
        assert!(i.is_read_only());
        i.descriptor().to_vec()
    });
    // Whatever happened, both structs are released now.
    assert!(out.array.array.release.is_none());
    assert!(out.schema.release.is_none());
    (r, out)
}

#[test]
fn row_major_round_trip_and_schema_shape() {
    let bytes = encode(
        ElementType::Float32,
        &[4, 2, 3],
        LayoutSpec::RowMajor,
        cpu(96),
    );
    let (out, drops, p) = export(&bytes, 2);
    unsafe {
        assert_eq!(cstr(out.schema.format), "+w:6");
        assert_eq!(cstr((**out.schema.children).format), "f");
        assert_eq!(metadata_json(&out.schema), r#"{"shape":[2,3]}"#);
        let child = &**out.array.array.children;
        assert_eq!((out.array.array.length, child.length), (4, 24));
        assert_eq!(*child.buffers.add(1), p.cast_const());
    }
    assert!(out.array.sync_event.is_null());
    let (desc, _out) = import(out);
    let desc = desc.unwrap();
    let v = TensorView::parse(&desc).unwrap();
    assert!(v.shape().iter().eq([4, 2, 3]));
    assert_eq!(v.layout(), Layout::RowMajor);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "owner dropped once both arrays were released"
    );
}

#[test]
fn transposed_elements_travel_as_a_permutation() {
    // Logical [n=2, 3, 4] whose element dims are stored transposed: strides
    // (12, 1, 3) -> physical shape [4, 3], permutation [1, 0].
    let bytes = encode(
        ElementType::Int16,
        &[2, 3, 4],
        LayoutSpec::Strided(&[12, 1, 3]),
        cpu(64),
    );
    let (out, drops, _) = export(&bytes, 1);
    assert_eq!(
        unsafe { metadata_json(&out.schema) },
        r#"{"shape":[4,3],"permutation":[1,0]}"#
    );
    let (desc, _out) = import(out);
    let desc = desc.unwrap();
    let v = TensorView::parse(&desc).unwrap();
    assert!(v.shape().iter().eq([2, 3, 4]));
    let mut s = [0i64; 3];
    assert_eq!(v.strides(&mut s), Some(&[12, 1, 3][..]));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn moved_child_keeps_the_owner_alive_until_released() {
    let bytes = encode(ElementType::UInt8, &[2, 2], LayoutSpec::RowMajor, cpu(64));
    let (mut out, drops, _) = export(&bytes, 1);
    // A consumer moves the child out (memcpy, then marks the source released).
    let child_ptr = unsafe { *out.array.array.children };
    let moved: ArrowArray = unsafe { ptr::read(child_ptr) };
    unsafe { (*child_ptr).release = None };
    let mut moved = Box::new(moved);
    unsafe { (out.array.array.release.unwrap())(&mut out.array.array) };
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "the moved child still holds the owner"
    );
    unsafe { (moved.release.unwrap())(&mut *moved) };
    assert!(moved.release.is_none());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn export_refusals() {
    let refuse = |bytes: Vec<u8>, opts: ArrowExportOptions<'_>, want: ExportError| {
        let view = TensorView::parse(&bytes).unwrap();
        let (_v, p) = data(2);
        assert_eq!(arrow::export_arrow(&view, p, (), &opts).unwrap_err(), want);
    };
    let d = ArrowExportOptions::default;
    refuse(
        encode(ElementType::Float32, &[], LayoutSpec::RowMajor, cpu(64)),
        d(),
        ExportError::RankZero,
    );
    refuse(
        encode(ElementType::BFloat16, &[2], LayoutSpec::RowMajor, cpu(64)),
        d(),
        ExportError::NoArrowType(ElementType::BFloat16),
    );
    refuse(
        encode(ElementType::Int8, &[3, 4], LayoutSpec::ColumnMajor, cpu(64)),
        d(),
        ExportError::NotPermutedRowMajor,
    );
    refuse(
        encode_at(
            ElementType::Int8,
            &[3, 4],
            LayoutSpec::Strided(&[4, -1]),
            3,
            cpu(64),
        ),
        d(),
        ExportError::NotPermutedRowMajor,
    );
    refuse(
        encode(
            ElementType::Int8,
            &[3, 4],
            LayoutSpec::Strided(&[8, 2]),
            cpu(64),
        ),
        d(),
        ExportError::NotPermutedRowMajor,
    );
    let stream = BufferHandle::new(64, 64, DeviceTag::Cuda, SyncMode::ConsumerStream).unwrap();
    refuse(
        encode(ElementType::Int8, &[4], LayoutSpec::RowMajor, stream),
        d(),
        ExportError::Sync(SyncMode::ConsumerStream),
    );
    let event = BufferHandle::new(64, 64, DeviceTag::Cuda, SyncMode::Event).unwrap();
    refuse(
        encode(ElementType::Int8, &[4], LayoutSpec::RowMajor, event),
        d(),
        ExportError::Sync(SyncMode::Event),
    );
    let mut ev = 0u8;
    let with_event = ArrowExportOptions {
        sync_event: (&mut ev as *mut u8).cast(),
        ..d()
    };
    refuse(
        encode(ElementType::Int8, &[4], LayoutSpec::RowMajor, cpu(64)),
        with_event,
        ExportError::Sync(SyncMode::ProducerSynced),
    );
    // An Event buffer with its event travels, and comes back as Event.
    let view_bytes = encode(ElementType::Int8, &[4], LayoutSpec::RowMajor, event);
    let view = TensorView::parse(&view_bytes).unwrap();
    let (_v, p) = data(1);
    let mut out = arrow::export_arrow(
        &view,
        p,
        (),
        &ArrowExportOptions {
            device_id: 2,
            ..with_event
        },
    )
    .unwrap();
    assert_eq!((out.array.device_type, out.array.device_id), (2, 2));
    let mut buf = DescriptorBuf::new();
    let imported = unsafe {
        arrow::import_arrow(
            &mut out.array,
            &mut out.schema,
            buf.as_mut_slice(),
            &ImportOptions::DEFAULT,
        )
    }
    .unwrap();
    let h = imported.view().buffers().get(0).unwrap();
    assert_eq!(
        (h.device_tag(), h.memory_class(), h.sync_mode()),
        (DeviceTag::Cuda, MemoryClass::Standard, SyncMode::Event)
    );
    assert_eq!(imported.sync_event(), with_event.sync_event);
    assert_eq!(imported.device_id(), 2);
}

/// Exports a valid [3, 2] int32 tensor, lets `edit` break it, imports.
fn broken(edit: impl FnOnce(&mut ArrowDeviceArray, &mut ArrowSchema)) -> ImportError {
    let bytes = encode(ElementType::Int32, &[3, 2], LayoutSpec::RowMajor, cpu(64));
    let (mut out, drops, _) = export(&bytes, 1);
    edit(&mut out.array, &mut out.schema);
    let (r, out) = import(out);
    drop(out);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "released exactly once on error"
    );
    r.unwrap_err()
}

static NOT_A_TENSOR: [u8; 4 + 4 + 20 + 4 + 9] =
    *b"\x01\x00\x00\x00\x14\x00\x00\x00ARROW:extension:name\x09\x00\x00\x00arrow.xyz";
static NEGATIVE_PAIRS: [u8; 4] = (-1i32).to_le_bytes();

#[test]
fn malformed_arrow_values_are_typed_errors() {
    use ImportError as E;
    let child = |a: &mut ArrowDeviceArray| unsafe { &mut **a.array.children };
    let child_schema = |s: &mut ArrowSchema| unsafe { &mut **s.children };
    assert_eq!(
        broken(|_, s| s.format = c"+l".as_ptr()),
        E::ArrowType {
            what: "not a fixed-size list (+w:N)"
        }
    );
    assert_eq!(
        broken(|_, s| s.format = c"+w:".as_ptr()),
        E::ArrowType {
            what: "not a fixed-size list (+w:N)"
        }
    );
    assert_eq!(
        broken(|_, s| s.format = c"+w:99999999999".as_ptr()),
        E::ArrowType {
            what: "not a fixed-size list (+w:N)"
        }
    );
    assert_eq!(
        broken(|_, s| s.format = c"+w:5".as_ptr()),
        E::Metadata {
            what: "shape product differs from the list size"
        }
    );
    assert_eq!(
        broken(|_, s| s.n_children = 2),
        E::ArrowType {
            what: "child count"
        }
    );
    assert_eq!(
        broken(|_, s| child_schema(s).format = c"b".as_ptr()),
        E::ArrowType {
            what: "value type (integers and floats only)"
        }
    );
    assert_eq!(
        broken(|_, s| child_schema(s).format = c"tss:".as_ptr()),
        E::ArrowType {
            what: "value type (integers and floats only)"
        }
    );
    assert_eq!(
        broken(|_, s| s.metadata = ptr::null()),
        E::Metadata {
            what: "no extension metadata"
        }
    );
    assert_eq!(
        broken(|_, s| s.metadata = NOT_A_TENSOR.as_ptr().cast()),
        E::Metadata {
            what: "extension is not arrow.fixed_shape_tensor"
        }
    );
    if cfg!(target_endian = "little") {
        assert_eq!(
            broken(|_, s| s.metadata = NEGATIVE_PAIRS.as_ptr().cast()),
            E::Metadata {
                what: "negative metadata pair count"
            }
        );
    }
    assert_eq!(
        broken(|a, _| a.array.length = -1),
        E::ArrowArray {
            what: "negative length or offset"
        }
    );
    assert_eq!(
        broken(|a, _| a.array.offset = -1),
        E::ArrowArray {
            what: "negative length or offset"
        }
    );
    assert_eq!(
        broken(|a, _| a.array.null_count = 1),
        E::ArrowArray {
            what: "null values"
        }
    );
    assert_eq!(
        broken(|a, _| a.array.n_buffers = 3),
        E::ArrowArray {
            what: "buffer count"
        }
    );
    assert_eq!(
        broken(|a, _| a.array.n_children = 0),
        E::ArrowArray {
            what: "child count"
        }
    );
    assert_eq!(
        broken(|a, _| a.array.length = 4),
        E::ArrowArray {
            what: "child shorter than the parent needs"
        }
    );
    assert_eq!(
        broken(|a, _| a.array.offset = i64::MAX),
        E::Overflow {
            what: "value offset"
        }
    );
    assert_eq!(
        broken(|a, _| child(a).null_count = 2),
        E::ArrowArray {
            what: "null values"
        }
    );
    assert_eq!(
        broken(|a, _| child(a).n_buffers = 1),
        E::ArrowArray {
            what: "buffer count"
        }
    );
    assert_eq!(
        broken(|a, _| child(a).length = 5),
        E::ArrowArray {
            what: "child shorter than the parent needs"
        }
    );
    assert_eq!(
        broken(|a, _| a.device_type = 17),
        E::Device(InteropError::UnknownDeviceCode(17))
    );
    assert_eq!(
        broken(|a, _| a.device_type = 0),
        E::Device(InteropError::UnknownDeviceCode(0))
    );
    let mut ev = 0u8;
    let evp: *mut c_void = (&mut ev as *mut u8).cast();
    assert_eq!(
        broken(move |a, _| a.sync_event = evp),
        E::ArrowArray {
            what: "sync_event on CPU memory"
        }
    );
    // An offset into the values shifts the data address.
    let bytes = encode(ElementType::Int32, &[3, 2], LayoutSpec::RowMajor, cpu(64));
    let (mut out, _drops, p) = export(&bytes, 1);
    out.array.array.length = 2;
    out.array.array.offset = 1;
    let mut buf = DescriptorBuf::new();
    let imported = unsafe {
        arrow::import_arrow(
            &mut out.array,
            &mut out.schema,
            buf.as_mut_slice(),
            &ImportOptions::DEFAULT,
        )
    }
    .unwrap();
    assert_eq!(imported.first_element() as usize, p as usize + 8);
    assert!(imported.view().shape().iter().eq([2, 2]));
    drop(imported);
    // Null pointers and released structs.
    let mut buf = DescriptorBuf::new();
    assert_eq!(
        unsafe {
            arrow::import_arrow(
                ptr::null_mut(),
                ptr::null_mut(),
                buf.as_mut_slice(),
                &ImportOptions::DEFAULT,
            )
        }
        .unwrap_err(),
        E::NullTensor
    );
    let (mut out, _d, _) = export(&bytes, 1);
    unsafe { (out.array.array.release.unwrap())(&mut out.array.array) };
    let mut buf = DescriptorBuf::new();
    assert_eq!(
        unsafe {
            arrow::import_arrow(
                &mut out.array,
                &mut out.schema,
                buf.as_mut_slice(),
                &ImportOptions::DEFAULT,
            )
        }
        .unwrap_err(),
        E::Released
    );
    assert!(out.schema.release.is_none(), "the schema was released too");
}
