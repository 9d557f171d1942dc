//! Structured fuzzing of the DLPack import path: arbitrary field values of
//! a `DLManagedTensorVersioned` (or legacy `DLManagedTensor`) — version,
//! flags, ndim, dtype, device, shape, strides, data address, byte offset —
//! laid out as the DLPack ABI requires (shape/strides arrays of `ndim`
//! entries when `0 < ndim <= 32`), fed to `hurray_interop::dlpack::import_*`.
//! Properties: no crash; the deleter runs exactly once, success or not; an
//! accepted tensor's descriptor parses again and has the input's shape.
#![no_main]

use core::ffi::c_void;
use core::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use arbitrary::Arbitrary;
use hurray_core::TensorView;
use hurray_interop::dlpack::ffi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};
use hurray_interop::{DescriptorBuf, ImportOptions, dlpack};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    major: u8,
    minor: u32,
    flags: u64,
    ndim: i32,
    code: u8,
    bits: u8,
    lanes: u16,
    device_type: i8,
    device_id: i32,
    dims: Vec<(i64, i64)>,
    null_shape: bool,
    null_strides: bool,
    data: Option<u64>,
    byte_offset: u64,
    legacy: bool,
    deleter: bool,
    short_buffer: Option<u16>,
}

static DELETES: AtomicUsize = AtomicUsize::new(0);

#[repr(C)]
struct Versioned {
    m: DLManagedTensorVersioned,
    shape: [i64; 32],
    strides: [i64; 32],
}

#[repr(C)]
struct Legacy {
    m: DLManagedTensor,
    shape: [i64; 32],
    strides: [i64; 32],
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    DELETES.fetch_add(1, Ordering::SeqCst);
    drop(unsafe { Box::from_raw(m.cast::<Versioned>()) });
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    DELETES.fetch_add(1, Ordering::SeqCst);
    drop(unsafe { Box::from_raw(m.cast::<Legacy>()) });
}

fuzz_target!(|input: Input| {
    // Full-range values, with small dimensions most of the time so that
    // tensors are often valid and reach the descriptor encoder.
    let ndim = input.ndim;
    let mut shape = [0i64; 32];
    let mut strides = [0i64; 32];
    for (i, &(n, s)) in input.dims.iter().take(32).enumerate() {
        shape[i] = if n.unsigned_abs() < 1 << 20 {
            n % 64
        } else {
            n
        };
        strides[i] = s;
    }
    let tensor = DLTensor {
        data: input.data.map_or(ptr::null_mut(), |a| {
            ptr::without_provenance_mut::<c_void>(a as usize)
        }),
        device: DLDevice {
            device_type: i32::from(input.device_type),
            device_id: input.device_id,
        },
        ndim,
        dtype: DLDataType {
            code: input.code % 20,
            bits: input.bits,
            lanes: input.lanes,
        },
        shape: ptr::null_mut(),
        strides: ptr::null_mut(),
        byte_offset: input.byte_offset,
    };
    let before = DELETES.load(Ordering::SeqCst);
    let mut buf = DescriptorBuf::new();
    let cap = input
        .short_buffer
        .map_or(buf.capacity(), |n| usize::from(n) % buf.capacity());
    let out = &mut buf.as_mut_slice()[..cap];
    let result = if input.legacy {
        let raw = Box::into_raw(Box::new(Legacy {
            m: DLManagedTensor {
                dl_tensor: tensor,
                manager_ctx: ptr::null_mut(),
                deleter: input
                    .deleter
                    .then_some(delete_legacy as unsafe extern "C" fn(*mut DLManagedTensor)),
            },
            shape,
            strides,
        }));
        unsafe {
            if !input.null_shape {
                (*raw).m.dl_tensor.shape = ptr::addr_of_mut!((*raw).shape).cast();
            }
            if !input.null_strides {
                (*raw).m.dl_tensor.strides = ptr::addr_of_mut!((*raw).strides).cast();
            }
        }
        let r = unsafe { dlpack::import_legacy(raw.cast(), out, &ImportOptions::DEFAULT) }
            .map(|i| i.descriptor().to_vec());
        if !input.deleter {
            drop(unsafe { Box::from_raw(raw) });
        }
        r
    } else {
        let raw = Box::into_raw(Box::new(Versioned {
            m: DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: u32::from(input.major % 3),
                    minor: input.minor,
                },
                manager_ctx: ptr::null_mut(),
                deleter: input.deleter.then_some(
                    delete_versioned as unsafe extern "C" fn(*mut DLManagedTensorVersioned),
                ),
                flags: input.flags & 0xF,
                dl_tensor: tensor,
            },
            shape,
            strides,
        }));
        unsafe {
            if !input.null_shape {
                (*raw).m.dl_tensor.shape = ptr::addr_of_mut!((*raw).shape).cast();
            }
            if !input.null_strides {
                (*raw).m.dl_tensor.strides = ptr::addr_of_mut!((*raw).strides).cast();
            }
        }
        let r = unsafe { dlpack::import_versioned(raw.cast(), out, &ImportOptions::DEFAULT) }
            .map(|i| i.descriptor().to_vec());
        if !input.deleter {
            drop(unsafe { Box::from_raw(raw) });
        }
        r
    };
    let expected = before + usize::from(input.deleter);
    assert_eq!(
        DELETES.load(Ordering::SeqCst),
        expected,
        "deleter ran exactly once"
    );
    if let Ok(desc) = result {
        let view = TensorView::parse(&desc).expect("an accepted import's descriptor parses");
        let n = usize::try_from(ndim).expect("accepted ndim is non-negative");
        assert_eq!(view.shape().len(), n);
        assert!(
            view.shape()
                .iter()
                .zip(&shape)
                .all(|(a, &b)| i64::try_from(a) == Ok(b))
        );
    }
});
