//! The field walker (`TensorView::for_each_field`) over literal fixtures:
//! names as the spec writes them, byte ranges, values.

use hurray_core::field::FieldValue;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, Scheme, Statistics, SyncMode, TensorDescriptor,
    TensorView,
};

/// A field's value, owned: numbers widened to `u64`, bytes copied.
#[derive(Debug, PartialEq)]
enum Owned {
    U64(u64),
    Bytes(Vec<u8>),
}

fn fields(view: &TensorView<'_>) -> Vec<(String, std::ops::Range<usize>, Owned)> {
    let mut out = Vec::new();
    view.for_each_field(|f| {
        let value = match f.value {
            FieldValue::Bytes(b) => Owned::Bytes(b.to_vec()),
            v => Owned::U64(v.as_u64().unwrap_or(u64::MAX)),
        };
        out.push((f.path.to_string(), f.range(), value));
    });
    out
}

/// The 61-byte worked example of the metadata spec, field by field.
#[test]
fn walk_worked_example_names_every_field() {
    let bytes = [
        b'H', b'R', b'R', b'Y', 1, 0, 61, 0, 0, 0, 0, 0, 0, 0, 0x03, 0x01, 2, 0, 0, 0, 3, 0, 0, 0,
        0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 192, 0, 0, 0, 0, 0, 0, 0,
        64, 0, 0, 0, 0, 0, 0, 0,
    ];
    let view = TensorView::parse(&bytes).unwrap();
    let got: Vec<(String, std::ops::Range<usize>)> =
        fields(&view).into_iter().map(|(p, r, _)| (p, r)).collect();
    let want = [
        ("magic", 0..4),
        ("version_major", 4..5),
        ("version_minor", 5..6),
        ("descriptor_length", 6..10),
        ("flags", 10..14),
        ("type_tag", 14..15),
        ("layout_tag", 15..16),
        ("rank", 16..20),
        ("shape[0]", 20..28),
        ("shape[1]", 28..36),
        ("byte_offset", 36..44),
        ("buffer_count", 44..45),
        ("buffer[0].byte_size", 45..53),
        ("buffer[0].alignment", 53..57),
        ("buffer[0].device_tag", 57..58),
        ("buffer[0].sync_mode", 58..59),
        ("buffer[0].memory_class", 59..60),
        ("buffer[0]._reserved", 60..61),
    ];
    let want: Vec<(String, std::ops::Range<usize>)> = want
        .iter()
        .map(|(p, r)| ((*p).to_owned(), r.clone()))
        .collect();
    assert_eq!(got, want);
    let values = fields(&view);
    assert_eq!(values[3].2, Owned::U64(61));
    assert_eq!(values[9].2, Owned::U64(4));
    assert_eq!(values[0].2, Owned::Bytes(b"HRRY".to_vec()));
}

/// Sections: the quantization scheme's fields come from its struct (with
/// `_reserved` renamed), the payload's padding is one opaque field, the
/// statistics section is walked through its struct.
#[test]
fn walk_sections_use_the_wire_structs() {
    let buffers = [
        BufferHandle::new(64 * 64 / 2, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
        BufferHandle::new(64 * 2 * 2, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
    ];
    let scheme = Scheme::PerBlock {
        axis: 1,
        block_size: 32,
        scale_buffer: 1,
        zero_point_buffer: None,
        scale_type: ElementType::Float16,
    };
    let mut desc = TensorDescriptor::row_major(ElementType::Int4, &[64, 64], &buffers)
        .with_quantization(scheme)
        .with_statistics(Statistics::new().with_nnz(7));
    if let Some(q) = desc.quantization.as_mut() {
        q.padding = 3;
    }
    let mut out = [0u8; 256];
    let view = desc.encode_view(&mut out).unwrap();
    let all = fields(&view);
    let names: Vec<&str> = all.iter().map(|(p, _, _)| p.as_str()).collect();
    let q = names
        .iter()
        .position(|&n| n == "quantization_length")
        .unwrap();
    assert_eq!(
        &names[q..q + 10],
        [
            "quantization_length",
            "quant.scheme_tag",
            "quant.scheme_version",
            "quant.flags",
            "quant.axis",
            "quant.block_size",
            "quant.scale_buffer_index",
            "quant.zero_point_buffer_index",
            "quant.scale_type_tag",
            "quant._reserved",
        ]
    );
    assert_eq!(names[q + 10], "quant.payload");
    assert_eq!(all[q + 10].1.len(), 3, "the padding is one field");
    assert_eq!(all[q].2, Owned::U64(24 + 3));
    assert_eq!(all[q + 3].2, Owned::U64(1), "SYMMETRIC");
    assert_eq!(all[q + 7].2, Owned::U64(u64::from(u32::MAX)));
    let s = names.iter().position(|&n| n == "statistics.nnz").unwrap();
    assert_eq!(all[s].2, Owned::U64(7));
    assert_eq!(names[s - 1], "statistics._reserved");
    assert_eq!(*names.last().unwrap(), "statistics._reserved2");
    assert_eq!(all.last().unwrap().1.end, view.as_bytes().len());
}
