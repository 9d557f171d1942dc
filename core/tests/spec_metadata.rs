//! One test per MUST of `docs/spec/metadata.md`, named after its identifier,
//! over descriptors assembled byte by byte (independently of the encoder).

use hurray_core::{
    BufferHandle, DType, DescriptorBuilder, DeviceTag, EntryError, Error, Flags, Region, SyncMode,
    TensorDescriptor, TensorView,
};

/// A hand-assembled descriptor: header fields plus a body, encoded without the crate.
#[derive(Clone)]
struct Raw {
    magic: [u8; 4],
    major: u8,
    minor: u8,
    flags: u16,
    dtype: u8,
    ndim: u8,
    count: u16,
    data: u16,
    reserved: u16,
    byte_offset: u64,
    shape_offset: u32,
    strides_offset: u32,
    table_offset: u32,
    total_len: Option<u32>,
    body: Vec<u8>,
}

fn handle_bytes(size: u64) -> [u8; 16] {
    BufferHandle::new(size, 64, DeviceTag::Cuda, SyncMode::Event)
        .unwrap()
        .to_bytes()
}

impl Raw {
    /// f32 [2, 3], compact, one 24-byte CUDA buffer.
    fn valid() -> Self {
        let mut body = Vec::new();
        body.extend_from_slice(&2u64.to_le_bytes());
        body.extend_from_slice(&3u64.to_le_bytes());
        body.extend_from_slice(&handle_bytes(24));
        Raw {
            magic: *b"HRAY",
            major: 1,
            minor: 0,
            flags: 0,
            dtype: DType::F32.code(),
            ndim: 2,
            count: 1,
            data: 0,
            reserved: 0,
            byte_offset: 0,
            shape_offset: 40,
            strides_offset: 0,
            table_offset: 56,
            total_len: None,
            body,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&self.magic);
        b.push(self.major);
        b.push(self.minor);
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.push(self.dtype);
        b.push(self.ndim);
        b.extend_from_slice(&self.count.to_le_bytes());
        b.extend_from_slice(&self.data.to_le_bytes());
        b.extend_from_slice(&self.reserved.to_le_bytes());
        b.extend_from_slice(&self.byte_offset.to_le_bytes());
        b.extend_from_slice(&self.shape_offset.to_le_bytes());
        b.extend_from_slice(&self.strides_offset.to_le_bytes());
        b.extend_from_slice(&self.table_offset.to_le_bytes());
        let total = self.total_len.unwrap_or(40 + self.body.len() as u32);
        b.extend_from_slice(&total.to_le_bytes());
        assert_eq!(b.len(), 40);
        b.extend_from_slice(&self.body);
        b
    }

    fn parse(&self) -> Result<(), Error> {
        let bytes = self.bytes();
        TensorView::parse(&bytes).map(|_| ())
    }
}

#[test]
fn md_valid_fixture_parses() {
    let bytes = Raw::valid().bytes();
    let v = TensorView::parse(&bytes).unwrap();
    assert_eq!(v.dtype(), DType::F32);
    assert!(v.shape().iter().eq([2, 3]));
    assert!(v.strides().is_none());
    assert_eq!(v.element_count(), 6);
    assert_eq!(v.buffers().len(), 1);
    assert_eq!(v.data_buffer().byte_size(), 24);
    assert_eq!(v.as_bytes().len(), 72);
}

#[test]
fn md_header_1_truncation_and_trailing_bytes() {
    let bytes = Raw::valid().bytes();
    for cut in 0..bytes.len() {
        let needed = if cut < 40 { 40 } else { bytes.len() as u64 };
        assert_eq!(
            TensorView::parse(&bytes[..cut]),
            Err(Error::Truncated {
                needed,
                available: cut as u64
            }),
            "cut at {cut}"
        );
    }
    // Trailing bytes are not part of the descriptor.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0xFF; 13]);
    let v = TensorView::parse(&longer).unwrap();
    assert_eq!(v.as_bytes(), &bytes[..]);
    // total_len below the header is truncation too.
    let mut r = Raw::valid();
    r.total_len = Some(39);
    assert_eq!(
        r.parse(),
        Err(Error::Truncated {
            needed: 40,
            available: 39
        })
    );
}

#[test]
fn md_header_2_magic() {
    let mut r = Raw::valid();
    r.magic = *b"HRAZ";
    assert_eq!(r.parse(), Err(Error::BadMagic(*b"HRAZ")));
}

#[test]
fn md_header_3_reserved_zero() {
    let mut r = Raw::valid();
    r.reserved = 0x8001;
    assert_eq!(r.parse(), Err(Error::HeaderReservedNonZero(0x8001)));
}

#[test]
fn md_header_4_at_most_32_dims() {
    let mut r = Raw::valid();
    r.ndim = 33;
    assert_eq!(r.parse(), Err(Error::TooManyDims { ndim: 33, max: 32 }));
    r.ndim = 255;
    assert_eq!(r.parse(), Err(Error::TooManyDims { ndim: 255, max: 32 }));
    // 32 dims of size 1 are fine.
    let shape = [1u64; 32];
    let h = BufferHandle::new(4, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
    let mut out = [0u8; 512];
    let n = TensorDescriptor::new(DType::F32, &shape, &[h])
        .encode(&mut out)
        .unwrap();
    assert_eq!(TensorView::parse(&out[..n]).unwrap().ndim(), 32);
}

#[test]
fn md_header_5_data_buffer_in_table() {
    let mut r = Raw::valid();
    r.data = 1;
    assert_eq!(
        r.parse(),
        Err(Error::DataBufferOutOfRange { index: 1, count: 1 })
    );
    let mut r = Raw::valid();
    r.count = 0;
    assert_eq!(
        r.parse(),
        Err(Error::DataBufferOutOfRange { index: 0, count: 0 })
    );
}

#[test]
fn md_version_1_other_major_rejected() {
    for major in [0u8, 2, 255] {
        let mut r = Raw::valid();
        r.major = major;
        r.minor = 7;
        assert_eq!(
            r.parse(),
            Err(Error::UnsupportedVersion { major, minor: 7 })
        );
    }
}

#[test]
fn md_version_2_any_minor_and_header_extension_accepted() {
    let mut r = Raw::valid();
    r.minor = 200;
    // A later minor puts 8 bytes of new header fields before the shape.
    let mut body = vec![0xAB; 8];
    body.extend_from_slice(&r.body);
    r.body = body;
    r.shape_offset = 48;
    r.table_offset = 64;
    let bytes = r.bytes();
    let v = TensorView::parse(&bytes).unwrap();
    assert_eq!(v.version(), (1, 200));
    assert!(v.shape().iter().eq([2, 3]));
}

#[test]
fn md_flags_1_required_rejected_optional_ignored() {
    for bit in 1..8 {
        let mut r = Raw::valid();
        r.flags = 1 << bit;
        assert_eq!(r.parse(), Err(Error::UnknownFlags(1 << bit)));
    }
    for bit in 8..16 {
        let mut r = Raw::valid();
        r.flags = (1 << bit) | 1;
        let bytes = r.bytes();
        let v = TensorView::parse(&bytes).unwrap();
        assert!(v.is_read_only());
        assert_eq!(v.flags().bits(), (1 << bit) | 1);
    }
    let mut r = Raw::valid();
    r.flags = Flags::READ_ONLY.bits();
    assert!(r.parse().is_ok());
}

#[test]
fn md_dtype_1_unknown_dtype_rejected() {
    for code in 0..=255u8 {
        let mut r = Raw::valid();
        r.dtype = code;
        match DType::from_code(code) {
            // Element sizes above 4 make the 24-byte buffer too small for 6
            // elements, which is a different error: only check the dtype rule.
            Some(_) => assert_ne!(r.parse().err(), Some(Error::InvalidDType(code))),
            None => assert_eq!(r.parse(), Err(Error::InvalidDType(code))),
        }
    }
    assert_eq!(DType::ALL.len(), 15);
    for (i, d) in DType::ALL.iter().enumerate() {
        assert_eq!(d.code() as usize, i + 1);
    }
}

#[test]
fn md_region_1_offsets_multiple_of_8() {
    let mut r = Raw::valid();
    r.body.insert(0, 0);
    r.shape_offset = 41;
    r.table_offset = 57;
    assert_eq!(
        r.parse(),
        Err(Error::MisalignedRegion {
            region: Region::Shape,
            offset: 41
        })
    );
    let mut r = Raw::valid();
    r.table_offset = 60;
    assert_eq!(
        r.parse(),
        Err(Error::MisalignedRegion {
            region: Region::Table,
            offset: 60
        })
    );
}

#[test]
fn md_region_2_regions_inside_body() {
    let mut r = Raw::valid();
    r.shape_offset = 32; // inside the header
    assert!(matches!(
        r.parse(),
        Err(Error::RegionOutOfBounds {
            region: Region::Shape,
            offset: 32,
            ..
        })
    ));
    let mut r = Raw::valid();
    r.table_offset = 64; // ends at 80 > 72
    assert_eq!(
        r.parse(),
        Err(Error::RegionOutOfBounds {
            region: Region::Table,
            offset: 64,
            len: 16,
            total_len: 72
        })
    );
    let mut r = Raw::valid();
    r.count = u16::MAX; // a count past the slice
    r.data = 0;
    assert!(matches!(
        r.parse(),
        Err(Error::RegionOutOfBounds {
            region: Region::Table,
            ..
        })
    ));
    let mut r = Raw::valid();
    r.strides_offset = u32::MAX - 7;
    assert!(matches!(
        r.parse(),
        Err(Error::RegionOutOfBounds {
            region: Region::Strides,
            ..
        })
    ));
}

#[test]
fn md_region_3_regions_disjoint() {
    let mut r = Raw::valid();
    r.strides_offset = 48; // overlaps the second half of the shape
    r.body.extend_from_slice(&[0; 8]);
    assert_eq!(
        r.parse(),
        Err(Error::RegionsOverlap {
            first: Region::Shape,
            second: Region::Strides
        })
    );
    let mut r = Raw::valid();
    r.table_offset = 48;
    assert_eq!(
        r.parse(),
        Err(Error::RegionsOverlap {
            first: Region::Shape,
            second: Region::Table
        })
    );
    // Empty regions overlap nothing: a scalar's empty shape may sit at the table.
    let mut r = Raw::valid();
    r.ndim = 0;
    r.body = handle_bytes(4).to_vec();
    r.table_offset = 40;
    assert!(r.parse().is_ok());
}

#[test]
fn md_shape_1_dims_and_product_bounded() {
    let mut r = Raw::valid();
    r.body[0..8].copy_from_slice(&(i64::MAX as u64 + 1).to_le_bytes());
    assert_eq!(
        r.parse(),
        Err(Error::DimTooLarge {
            axis: 0,
            size: i64::MAX as u64 + 1
        })
    );
    let mut r = Raw::valid();
    r.body[0..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    r.body[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert_eq!(r.parse(), Err(Error::ShapeOverflow));
}

#[test]
fn md_shape_2_stride_min_rejected() {
    let mut r = Raw::valid();
    let table = r.body.split_off(16);
    r.body.extend_from_slice(&i64::MIN.to_le_bytes());
    r.body.extend_from_slice(&1i64.to_le_bytes());
    r.body.extend_from_slice(&table);
    r.strides_offset = 56;
    r.table_offset = 72;
    assert_eq!(
        r.parse(),
        Err(Error::StrideTooLarge {
            axis: 0,
            stride: i64::MIN
        })
    );
}

#[test]
fn md_table_1_first_invalid_entry_reported() {
    let mut r = Raw::valid();
    r.count = 3;
    r.body.extend_from_slice(&handle_bytes(0));
    let mut bad = handle_bytes(0);
    bad[13] = 0x09;
    r.body.extend_from_slice(&bad);
    assert_eq!(
        r.parse(),
        Err(Error::InvalidEntry {
            index: 2,
            error: EntryError::InvalidSyncMode(0x09)
        })
    );
}

#[test]
fn md_table_2_standalone_table_length() {
    use hurray_core::BufferTable;
    for len in [1usize, 15, 17, 31] {
        assert_eq!(
            BufferTable::parse(&vec![0u8; len]),
            Err(Error::TableLength { len })
        );
    }
    assert!(BufferTable::parse(&[]).unwrap().is_empty());
}

#[test]
fn md_extent_1_byte_offset_multiple_of_element_size() {
    let mut r = Raw::valid();
    r.byte_offset = 2;
    assert_eq!(
        r.parse(),
        Err(Error::MisalignedByteOffset {
            byte_offset: 2,
            element_size: 4
        })
    );
}

#[test]
fn md_extent_2_elements_inside_data_buffer() {
    // Compact [2, 3] f32 needs 24 bytes: offset 4 pushes it to 28.
    let mut r = Raw::valid();
    r.byte_offset = 4;
    assert_eq!(
        r.parse(),
        Err(Error::ExtentOutOfBounds {
            start: 4,
            end: 28,
            byte_size: 24
        })
    );

    // Strided: negative stride reaching before the buffer start.
    let data = BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap();
    let mut out = [0u8; 256];
    let data = [data];
    let reversed = TensorDescriptor {
        strides: Some(&[-1]),
        byte_offset: 60,
        ..TensorDescriptor::new(DType::F32, &[16], &data)
    };
    assert!(reversed.encode(&mut out).is_ok()); // elements at 60, 56, ..., 0
    let too_far = TensorDescriptor {
        strides: Some(&[-1]),
        ..reversed
    };
    let too_far = TensorDescriptor {
        shape: &[17],
        ..too_far
    };
    assert_eq!(
        too_far.encode(&mut out),
        Err(Error::ExtentOutOfBounds {
            start: -4,
            end: 64,
            byte_size: 64
        })
    );
    // Overflowing extents are errors, not wraps.
    let huge = TensorDescriptor {
        strides: Some(&[i64::MAX, i64::MAX, i64::MAX]),
        ..TensorDescriptor::new(DType::C128, &[2, 2, 2], &data)
    };
    assert_eq!(
        huge.encode(&mut out),
        Err(Error::ExtentOutOfBounds {
            start: 0,
            end: (3 * i64::MAX as i128 + 1) * 16,
            byte_size: 64
        })
    );
    // A zero-sized axis addresses nothing, whatever the offset.
    let nothing = [BufferHandle::empty(DeviceTag::Cpu)];
    let empty = TensorDescriptor {
        byte_offset: 1 << 40,
        ..TensorDescriptor::new(DType::F32, &[0, 1 << 30], &nothing)
    };
    assert!(empty.encode(&mut out).is_ok());
}

#[test]
fn md_canon_1_reencode_reproduces_bytes() {
    let bytes = Raw::valid().bytes();
    let v = TensorView::parse(&bytes).unwrap();
    let b = DescriptorBuilder::<8, 4>::from_view(&v).unwrap();
    let again: heapless::Vec<u8, 256> = b.to_vec().unwrap();
    assert_eq!(&again[..], &bytes[..]);
}
