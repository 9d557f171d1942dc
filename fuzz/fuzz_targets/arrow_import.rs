//! Structured fuzzing of the Arrow C Device import path: an
//! `arrow.fixed_shape_tensor` schema (list format, value format, extension
//! name and JSON metadata, child and dictionary pointers) and its device
//! array (length, offset, null count, buffer and child counts, data
//! address, device, sync event), each field either well-formed or
//! arbitrary, laid out as the Arrow C ABI requires, fed to
//! `hurray_interop::arrow::import_arrow`.
//! Structural fields are well-formed unless their bit of `corrupt` is set,
//! so most inputs reach the encoder and the rest break one rule at a time
//! (uninstrumented, 200 000 runs: ~5 % accepted).
//! Properties: no crash; both release callbacks run exactly once, success
//! or not; an accepted tensor's descriptor parses again, has rank 1 + the
//! metadata's rank, and its first dimension is the array's length.
#![no_main]

use core::ffi::{c_char, c_void};
use core::ptr;
use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};

use arbitrary::Arbitrary;
use hurray_core::TensorView;
use hurray_interop::arrow::ffi::{ArrowArray, ArrowDeviceArray, ArrowSchema};
use hurray_interop::{DescriptorBuf, ImportOptions, arrow};
use libfuzzer_sys::fuzz_target;

/// Value formats the importer knows, and some it must refuse.
const VALUE_FORMATS: [&str; 14] = [
    "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "b", "u", "+l",
];

#[derive(Arbitrary, Debug)]
enum Text {
    /// The well-formed value.
    Good,
    /// Arbitrary bytes (a NUL ends them early).
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    list_size: Option<u32>,
    list_format: Option<Vec<u8>>,
    value_format: (u8, Option<Vec<u8>>),
    extension_name: Text,
    /// `shape` and `permutation` of the metadata's JSON, or raw JSON.
    shape: Vec<u16>,
    permutation: Option<Vec<u8>>,
    raw_json: Option<Vec<u8>>,
    /// Which structural fields take their arbitrary value instead of the
    /// well-formed one (one bit each), so that most inputs reach the
    /// encoder and the rest break one rule at a time.
    corrupt: u16,
    schema_children: u8,
    length: i64,
    offset: i64,
    child_offset: i64,
    null_count: i64,
    n_buffers: (i64, i64),
    array_children: u8,
    data: u64,
    device_type: i32,
    device_id: i64,
    short_buffer: Option<u16>,
}

static RELEASES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn release_schema(s: *mut ArrowSchema) {
    RELEASES.fetch_add(1, Ordering::SeqCst);
    unsafe { (*s).release = None };
}

unsafe extern "C" fn release_array(a: *mut ArrowArray) {
    RELEASES.fetch_add(1, Ordering::SeqCst);
    unsafe { (*a).release = None };
}

/// Arrow's metadata encoding: i32 count, then (i32 length, bytes) pairs.
fn metadata(pairs: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = (pairs.len() as i32).to_le_bytes().to_vec();
    for (k, v) in pairs {
        out.extend((k.len() as i32).to_le_bytes());
        out.extend(*k);
        out.extend((v.len() as i32).to_le_bytes());
        out.extend(*v);
    }
    out
}

fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end.min(80)]).expect("no interior NUL")
}

const fn schema(format: *const c_char) -> ArrowSchema {
    ArrowSchema {
        format,
        name: ptr::null(),
        metadata: ptr::null(),
        flags: 0,
        n_children: 0,
        children: ptr::null_mut(),
        dictionary: ptr::null_mut(),
        release: None,
        private_data: ptr::null_mut(),
    }
}

const fn array() -> ArrowArray {
    ArrowArray {
        length: 0,
        null_count: 0,
        offset: 0,
        n_buffers: 0,
        n_children: 0,
        buffers: ptr::null_mut(),
        children: ptr::null_mut(),
        dictionary: ptr::null_mut(),
        release: None,
        private_data: ptr::null_mut(),
    }
}

fuzz_target!(|input: Input| {
    // Bit `b` of `corrupt` set: field `b` takes its arbitrary value.
    let bad = |b: u32| input.corrupt & (1 << b) != 0;
    let pick = |b: u32, good: i64, raw: i64| if bad(b) { raw } else { good };
    let shape: Vec<u64> = input
        .shape
        .iter()
        .take(8)
        .map(|&d| u64::from(d % 9))
        .collect();
    let product: u64 = shape.iter().product();
    let list_size = input.list_size.map_or(product, u64::from);
    let list_format = c_string(&match (&input.list_format, bad(0)) {
        (Some(raw), true) => raw.clone(),
        _ => format!("+w:{list_size}").into_bytes(),
    });
    let value_format = match &input.value_format {
        (_, Some(raw)) if bad(1) => c_string(raw),
        (i, _) => c_string(VALUE_FORMATS[usize::from(*i) % VALUE_FORMATS.len()].as_bytes()),
    };
    let json = match (&input.raw_json, &input.permutation) {
        (Some(raw), _) if bad(2) => raw.clone(),
        (_, Some(p)) => {
            let p: Vec<String> = p.iter().take(8).map(|v| (v % 9).to_string()).collect();
            format!("{{\"shape\":{shape:?},\"permutation\":[{}]}}", p.join(",")).into_bytes()
        }
        (_, None) => format!("{{\"shape\":{shape:?}}}").into_bytes(),
    };
    let name: Vec<u8> = match &input.extension_name {
        Text::Raw(raw) if bad(3) => raw.clone(),
        _ => b"arrow.fixed_shape_tensor".to_vec(),
    };
    let meta = metadata(&[
        (b"ARROW:extension:name", &name),
        (b"ARROW:extension:metadata", &json),
    ]);

    // The schema: a list with one value child.
    let mut child_schema = Box::new(schema(value_format.as_ptr()));
    let mut dictionary = Box::new(schema(value_format.as_ptr()));
    let mut child_schemas = [&raw mut *child_schema, &raw mut *child_schema];
    let mut parent = schema(list_format.as_ptr());
    if !bad(4) {
        parent.metadata = meta.as_ptr().cast();
    }
    parent.n_children = pick(5, 1, i64::from(input.schema_children % 3));
    if parent.n_children > 0 {
        parent.children = child_schemas.as_mut_ptr();
    }
    if bad(6) {
        parent.dictionary = &raw mut *dictionary;
    }
    let released = bad(7);
    parent.release = (!released).then_some(release_schema as unsafe extern "C" fn(_));

    // The arrays: the list (validity only) and its values (validity, data).
    // A 64-byte-aligned address unless corrupted.
    let address = if bad(8) {
        input.data
    } else {
        (input.data & 0xFFFF_FFC0) | 0x1000
    };
    let data: *const c_void = ptr::without_provenance(address as usize);
    let validity: *const c_void = if bad(9) {
        ptr::without_provenance(64)
    } else {
        ptr::null()
    };
    let mut child_buffers = [validity, data];
    let mut parent_buffers = [validity, ptr::null()];
    let mut values = Box::new(array());
    let length = pick(10, input.length.rem_euclid(6), input.length);
    values.length = length.wrapping_mul(list_size as i64);
    values.offset = pick(11, 0, input.child_offset);
    values.n_buffers = pick(12, 2, input.n_buffers.1 % 4);
    values.buffers = child_buffers.as_mut_ptr();
    let null_count = pick(13, 0, input.null_count);
    values.null_count = null_count;
    let mut children = [&raw mut *values, &raw mut *values];
    let mut list = array();
    list.length = length;
    list.offset = pick(11, 0, input.offset);
    list.null_count = null_count;
    list.n_buffers = pick(12, 1, input.n_buffers.0 % 3);
    list.buffers = parent_buffers.as_mut_ptr();
    list.n_children = pick(14, 1, i64::from(input.array_children % 3));
    if list.n_children > 0 {
        list.children = children.as_mut_ptr();
    }
    list.release = Some(release_array);
    let mut device = ArrowDeviceArray {
        array: list,
        device_id: pick(15, 0, input.device_id),
        // ARROW_DEVICE_CPU unless corrupted.
        device_type: if bad(15) { input.device_type } else { 1 },
        sync_event: if bad(15) && input.device_id & 1 != 0 {
            ptr::without_provenance_mut(8)
        } else {
            ptr::null_mut()
        },
        reserved: [0; 3],
    };

    let before = RELEASES.load(Ordering::SeqCst);
    let mut buf = DescriptorBuf::new();
    let cap = input
        .short_buffer
        .map_or(buf.capacity(), |n| usize::from(n) % buf.capacity());
    let out = &mut buf.as_mut_slice()[..cap];
    let result =
        unsafe { arrow::import_arrow(&mut device, &mut parent, out, &ImportOptions::DEFAULT) }
            .map(|i| i.descriptor().to_vec());
    let expected = before + 1 + usize::from(!released);
    assert_eq!(
        RELEASES.load(Ordering::SeqCst),
        expected,
        "each release callback ran exactly once"
    );
    assert!(device.array.release.is_none() && parent.release.is_none());
    if let Ok(desc) = result {
        let view = TensorView::parse(&desc).expect("an accepted import's descriptor parses");
        assert_eq!(view.shape().len(), 1 + shape.len());
        assert_eq!(view.shape().get(0), u64::try_from(length).ok());
    }
});
