//! Structured fuzzing: builds descriptors that are valid by construction
//! (shape, strides, offset and a data buffer large enough for them) and
//! checks that every one is accepted and reads back as built.
#![no_main]

use arbitrary::Arbitrary;
use hurray_core::{BufferHandle, DType, DeviceTag, MemoryClass, SyncMode, TensorDescriptor, TensorView, Flags};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    dtype: u8,
    dims: Vec<(u16, i16)>,
    strided: bool,
    offset_elems: u16,
    slack: u16,
    device: u8,
    sync: u8,
    class: u8,
    align_shift: u8,
    read_only: bool,
    aux: Vec<(u32, u8)>,
    data_index: u8,
}

fn handle(size: u64, device: u8, sync: u8, class: u8, shift: u8) -> BufferHandle {
    let dev = DeviceTag::ALL[usize::from(device) % DeviceTag::ALL.len()];
    let sync = if dev == DeviceTag::Cpu { SyncMode::ProducerSynced } else { SyncMode::ALL[usize::from(sync) % SyncMode::ALL.len()] };
    let class = MemoryClass::ALL[usize::from(class) % MemoryClass::ALL.len()];
    let align = if size == 0 { 1 << (shift % 32) } else { 64u32 << (shift % 26) };
    BufferHandle::with_memory_class(size, align, dev, sync, class).expect("valid by construction")
}

fuzz_target!(|input: Input| {
    let dtype = DType::ALL[usize::from(input.dtype) % DType::ALL.len()];
    let esize = i128::from(dtype.size_bytes());
    let dims: Vec<(u16, i16)> = input.dims.into_iter().take(32).collect();
    let shape: Vec<u64> = dims.iter().map(|&(n, _)| u64::from(n % 64)).collect();
    let strides: Vec<i64> = dims.iter().map(|&(_, s)| i64::from(s)).collect();
    let count: u64 = shape.iter().try_fold(1u64, |a, &n| a.checked_mul(n)).unwrap_or(u64::MAX);
    if count == u64::MAX {
        return;
    }
    // Element extent [lo, hi] relative to the first element.
    let (mut lo, mut hi) = (0i128, 0i128);
    if count > 0 {
        if input.strided {
            for (&n, &s) in shape.iter().zip(&strides) {
                let span = (i128::from(n) - 1) * i128::from(s);
                if span < 0 { lo += span } else { hi += span }
            }
        } else {
            hi = i128::from(count) - 1;
        }
    }
    // Place the first element so that the lowest one lands at offset_elems.
    let first = i128::from(input.offset_elems) - lo;
    let byte_offset = u64::try_from(first * esize).unwrap();
    let needed = if count == 0 { 0 } else { (first + hi + 1) * esize } + i128::from(input.slack);
    // A tensor larger than any u64-sized buffer cannot be described: skip it.
    let Ok(needed) = u64::try_from(needed) else { return };
    let data = handle(needed, input.device, input.sync, input.class, input.align_shift);
    let mut buffers: Vec<BufferHandle> = input
        .aux
        .iter()
        .take(8)
        .map(|&(size, k)| handle(u64::from(size), k, k >> 2, k >> 4, k))
        .collect();
    let data_index = usize::from(input.data_index) % (buffers.len() + 1);
    buffers.insert(data_index, data);
    let desc = TensorDescriptor {
        dtype,
        shape: &shape,
        strides: input.strided.then_some(&strides[..]),
        byte_offset,
        flags: Flags::EMPTY.with(Flags::READ_ONLY, input.read_only),
        buffers: &buffers,
        data_buffer: u16::try_from(data_index).unwrap(),
    };
    let mut out = vec![0u8; desc.encoded_len()];
    let n = desc.encode(&mut out).unwrap_or_else(|e| panic!("valid descriptor rejected: {e} ({desc:?})"));
    let view = TensorView::parse(&out[..n]).expect("parses");
    assert_eq!(view.dtype(), dtype);
    assert!(view.shape().iter().eq(shape.iter().copied()));
    assert_eq!(view.element_count(), count);
    assert_eq!(view.data_buffer(), data);
    assert_eq!(view.is_read_only(), input.read_only);
    assert!(view.buffers().iter().eq(buffers.iter().copied()));
});
