//! Literal byte fixtures, one per thing they prove (smoltcp style).

use hurray_core::{
    BufferHandle, BufferTable, DType, DeviceTag, EntryError, Error, MemoryClass, SyncMode,
    TensorView,
};

/// 4096-byte CUDA buffer, 64-byte aligned, event-synced, standard memory.
static CUDA_EVENT: [u8; 16] = [
    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // byte_size = 4096
    0x40, 0x00, 0x00, 0x00, // alignment = 64
    0x02, // device_tag = Cuda
    0x01, // sync_mode = Event
    0x00, // memory_class = Standard
    0x00, // reserved
];

/// Empty CPU buffer, alignment 1.
static CPU_EMPTY: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x01, 0x00, 0x00, 0x00];

/// f32 [2, 3], compact, one 24-byte CPU buffer, read-only.
static TENSOR_F32_2X3: [u8; 72] = [
    b'H', b'R', b'A', b'Y', // magic
    1, 0, // version 1.0
    0x01, 0x00, // flags = READ_ONLY
    0x0C, // dtype = F32
    2,    // ndim
    1, 0, // buffer_count
    0, 0, // data_buffer
    0, 0, // reserved
    0, 0, 0, 0, 0, 0, 0, 0, // byte_offset
    40, 0, 0, 0, // shape_offset
    0, 0, 0, 0, // strides_offset (compact)
    56, 0, 0, 0, // table_offset
    72, 0, 0, 0, // total_len
    2, 0, 0, 0, 0, 0, 0, 0, // shape[0]
    3, 0, 0, 0, 0, 0, 0, 0, // shape[1]
    24, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0x01, 0x00, 0x00, 0x00, // CPU, 24 B, align 64
];

#[test]
fn test_parse_cuda_event_handle() {
    let h = BufferHandle::from_bytes(&CUDA_EVENT).unwrap();
    assert_eq!(h.byte_size(), 4096);
    assert_eq!(h.alignment(), 64);
    assert_eq!(h.device_tag(), DeviceTag::Cuda);
    assert_eq!(h.sync_mode(), SyncMode::Event);
    assert_eq!(h.memory_class(), MemoryClass::Standard);
}

#[test]
fn test_emit_cuda_event_handle() {
    let h = BufferHandle::new(4096, 64, DeviceTag::Cuda, SyncMode::Event).unwrap();
    assert_eq!(h.to_bytes(), CUDA_EVENT);
}

#[test]
fn test_emit_empty_cpu_handle() {
    assert_eq!(BufferHandle::empty(DeviceTag::Cpu).to_bytes(), CPU_EMPTY);
}

#[test]
fn test_parse_table_of_two() {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(&CUDA_EVENT);
    bytes[16..].copy_from_slice(&CPU_EMPTY);
    let t = BufferTable::parse(&bytes).unwrap();
    assert_eq!(t.len(), 2);
    assert!(t.get(1).unwrap().is_empty());
}

#[test]
fn test_impossible_table_len() {
    assert_eq!(
        BufferTable::parse(&CUDA_EVENT[..15]),
        Err(Error::TableLength { len: 15 })
    );
}

#[test]
fn test_impossible_sync_on_cpu() {
    let mut b = CPU_EMPTY;
    b[13] = 0x02;
    assert_eq!(
        BufferHandle::from_bytes(&b),
        Err(Error::InvalidSyncMode(0x02))
    );
    let mut table = [0u8; 32];
    table[..16].copy_from_slice(&CUDA_EVENT);
    table[16..].copy_from_slice(&b);
    assert_eq!(
        BufferTable::parse(&table),
        Err(Error::InvalidEntry {
            index: 1,
            error: EntryError::InvalidSyncMode(0x02)
        })
    );
}

#[test]
fn test_parse_tensor_f32_2x3() {
    let v = TensorView::parse(&TENSOR_F32_2X3).unwrap();
    assert_eq!(v.dtype(), DType::F32);
    assert!(v.shape().iter().eq([2, 3]));
    assert!(v.is_read_only());
    assert_eq!(v.data_buffer().byte_size(), 24);
    assert_eq!(v.as_bytes(), &TENSOR_F32_2X3[..]);
}

#[test]
fn test_emit_tensor_f32_2x3() {
    let data = [BufferHandle::new(24, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let desc = hurray_core::TensorDescriptor {
        flags: hurray_core::Flags::READ_ONLY,
        ..hurray_core::TensorDescriptor::new(DType::F32, &[2, 3], &data)
    };
    let mut out = [0u8; 72];
    assert_eq!(desc.encode(&mut out), Ok(72));
    assert_eq!(out, TENSOR_F32_2X3);
}

#[test]
fn test_impossible_tensor_too_big_for_buffer() {
    let mut b = TENSOR_F32_2X3;
    b[48] = 4; // shape [2, 4] needs 32 bytes
    assert_eq!(
        TensorView::parse(&b),
        Err(Error::ExtentOutOfBounds {
            start: 0,
            end: 32,
            byte_size: 24
        })
    );
}

#[test]
fn test_impossible_truncated_tensor() {
    assert_eq!(
        TensorView::parse(&TENSOR_F32_2X3[..71]),
        Err(Error::Truncated {
            needed: 72,
            available: 71
        })
    );
}
