//! Exhaustive and property tests: the decoder against an independent model of
//! the spec, and encode/decode round trips for handles, tables and descriptors.

use hurray_core::{
    BufferHandle, BufferTable, DType, DescriptorBuilder, DeviceTag, Error, MemoryClass, SyncMode,
    TensorDescriptor, TensorView,
};
use proptest::prelude::*;

mod common;

/// The spec's rules for one entry, written from `docs/spec/buffer-protocol.md`
/// without using the crate's code tables.
fn model(b: &[u8; 16]) -> Result<(), Error> {
    let size = u64::from_le_bytes(b[0..8].try_into().unwrap());
    let align = u32::from_le_bytes(b[8..12].try_into().unwrap());
    let (dev, sync, class, reserved) = (b[12], b[13], b[14], b[15]);
    if ![1, 2, 4, 7, 8, 9, 10, 12, 14, 15, 16, 17, 18].contains(&dev) {
        return Err(Error::InvalidDeviceTag(dev));
    }
    if sync > 2 {
        return Err(Error::InvalidSyncMode(sync));
    }
    if class > 3 {
        return Err(Error::InvalidMemoryClass(class));
    }
    if reserved != 0 {
        return Err(Error::ReservedNonZero(reserved));
    }
    if align.count_ones() != 1 {
        return Err(Error::AlignmentNotPowerOfTwo { alignment: align });
    }
    if size > 0 && align < 64 {
        return Err(Error::AlignmentBelowMinimum {
            alignment: align,
            minimum: 64,
        });
    }
    if dev == 1 && sync != 0 {
        return Err(Error::InvalidSyncMode(sync));
    }
    Ok(())
}

/// All 2^24 values of the three code bytes (a sample under Miri), each with a
/// valid and an invalid (size, alignment) pair, against the model; a one-entry
/// table must agree with the single-handle decoder.
#[test]
fn exhaustive_code_bytes_match_the_model() {
    let step = if cfg!(miri) { 4099 } else { 1 };
    let mut accepted = 0u32;
    for codes in (0u32..1 << 24).step_by(step) {
        let [dev, sync, class, _] = codes.to_le_bytes();
        for (size, align) in [(4096u64, 64u32), (1, 16)] {
            let b = common::entry(size, align, dev, sync, class, 0);
            let got = BufferHandle::from_bytes(&b);
            assert_eq!(got.map(|_| ()), model(&b), "{b:02x?}");
            assert_eq!(BufferTable::parse(&b).is_ok(), got.is_ok());
            if let Ok(h) = got {
                assert_eq!(h.to_bytes(), b);
                accepted += 1;
            }
        }
    }
    if !cfg!(miri) {
        // 13 devices x 3 modes x 4 classes, minus CPU's 2 forbidden modes x 4 classes.
        assert_eq!(accepted, 13 * 3 * 4 - 2 * 4);
    }
}

fn any_device() -> impl Strategy<Value = DeviceTag> {
    proptest::sample::select(DeviceTag::ALL)
}
fn any_sync() -> impl Strategy<Value = SyncMode> {
    proptest::sample::select(SyncMode::ALL)
}
fn any_class() -> impl Strategy<Value = MemoryClass> {
    proptest::sample::select(MemoryClass::ALL)
}

prop_compose! {
    fn valid_handle()(
        size in prop_oneof![Just(0u64), 1u64..1 << 20, any::<u64>()],
        shift in 6u32..32,
        small_shift in 0u32..6,
        dev in any_device(),
        sync in any_sync(),
        class in any_class(),
    ) -> BufferHandle {
        let align = if size == 0 { 1 << small_shift } else { 1 << shift };
        let sync = if dev == DeviceTag::Cpu { SyncMode::ProducerSynced } else { sync };
        BufferHandle::with_memory_class(size, align, dev, sync, class).unwrap()
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 8 } else { 512 },
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn handle_encode_decode_roundtrip(h in valid_handle()) {
        prop_assert_eq!(BufferHandle::from_bytes(&h.to_bytes()), Ok(h));
    }

    #[test]
    fn any_16_bytes_decode_or_error_and_accepted_bytes_reencode(b in any::<[u8; 16]>()) {
        let r = BufferHandle::from_bytes(&b);
        prop_assert_eq!(r.map(|_| ()), model(&b));
        if let Ok(h) = r {
            prop_assert_eq!(h.to_bytes(), b);
        }
    }

    #[test]
    fn table_roundtrip_and_first_bad_index(
        handles in proptest::collection::vec(valid_handle(), 0..40),
        corrupt in any::<proptest::sample::Index>(),
        reserved in 1u8..,
    ) {
        let mut bytes = vec![0u8; handles.len() * 16];
        prop_assert_eq!(BufferTable::encode(&handles, &mut bytes), Ok(bytes.len()));
        let table = BufferTable::parse(&bytes).unwrap();
        prop_assert!(table.iter().eq(handles.iter().copied()));
        prop_assert!(table.iter().rev().eq(handles.iter().rev().copied()));
        prop_assert_eq!(table.as_bytes(), &bytes[..]);
        if !handles.is_empty() {
            let i = corrupt.index(handles.len());
            bytes[i * 16 + 15] = reserved;
            let err = BufferTable::parse(&bytes).unwrap_err();
            let index = match err { Error::InvalidEntry { index, .. } => Some(index), _ => None };
            prop_assert_eq!(index, Some(i));
        }
    }

    #[test]
    fn descriptor_roundtrip(
        dtype in proptest::sample::select(DType::ALL),
        shape in proptest::collection::vec(0u64..6, 0..6),
        strided in any::<bool>(),
        extra in proptest::collection::vec(valid_handle(), 0..3),
        read_only in any::<bool>(),
        slack in 0u64..256,
    ) {
        // Strides: row-major in reverse axis order (a transpose), so they differ
        // from the compact layout but stay inside the same extent.
        let count: u64 = shape.iter().product();
        let mut strides = vec![0i64; shape.len()];
        let mut step = 1i64;
        for (s, &n) in strides.iter_mut().zip(&shape) {
            *s = step;
            step *= n.max(1) as i64;
        }
        let esize = u64::from(dtype.size_bytes());
        let size = count * esize + slack * esize;
        let data = if size == 0 {
            BufferHandle::empty(DeviceTag::Cuda)
        } else {
            BufferHandle::new(size, 64, DeviceTag::Cuda, SyncMode::Event).unwrap()
        };
        let mut buffers = extra.clone();
        buffers.insert(0, data);
        let mut b = DescriptorBuilder::<8, 4>::new(dtype);
        for &d in &shape {
            b.push_dim(d).unwrap();
        }
        if strided {
            b.set_strides(&strides).unwrap();
        }
        for &h in &buffers {
            b.push_buffer(h).unwrap();
        }
        b.set_read_only(read_only).set_byte_offset(slack / 2 * esize);
        let bytes: heapless::Vec<u8, 1024> = b.to_vec().unwrap();
        let view = TensorView::parse(&bytes).unwrap();
        prop_assert_eq!(view.dtype(), dtype);
        prop_assert!(view.shape().iter().eq(shape.iter().copied()));
        prop_assert_eq!(view.strides().is_some(), strided);
        prop_assert_eq!(view.element_count(), count);
        prop_assert_eq!(view.is_read_only(), read_only);
        prop_assert!(view.buffers().iter().eq(buffers.iter().copied()));
        // decode -> encode -> identical bytes.
        let again: heapless::Vec<u8, 1024> =
            DescriptorBuilder::<8, 4>::from_view(&view).unwrap().to_vec().unwrap();
        prop_assert_eq!(&again[..], &bytes[..]);
    }

    #[test]
    fn hostile_descriptor_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = TensorView::parse(&bytes);
    }

    #[test]
    fn mutated_valid_descriptor_never_panics_and_reencodes(
        flips in proptest::collection::vec((0usize..120, any::<u8>()), 1..4),
    ) {
        let data = [BufferHandle::new(96, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
        let desc = TensorDescriptor { strides: Some(&[4, 1]), ..TensorDescriptor::new(DType::F32, &[6, 4], &data) };
        let mut bytes = vec![0u8; desc.encoded_len()];
        desc.encode(&mut bytes).unwrap();
        for (at, v) in flips {
            if let Some(b) = bytes.get_mut(at) {
                *b = v;
            }
        }
        if let Ok(view) = TensorView::parse(&bytes) {
            let b = DescriptorBuilder::<32, 8>::from_view(&view).unwrap();
            let out: heapless::Vec<u8, 1024> = b.to_vec().unwrap();
            let again = TensorView::parse(&out).unwrap();
            prop_assert!(again.shape().iter().eq(view.shape().iter()));
            prop_assert_eq!(again.data_buffer(), view.data_buffer());
        }
    }
}
