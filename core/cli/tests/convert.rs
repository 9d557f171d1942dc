//! `hurray convert`: a safetensors file written here by hand (the format's
//! header rules) becomes a `.hrry` file whose tensors hold the same values,
//! types and shapes.

use std::path::PathBuf;

use hurray_cli::convert::{ConvertError, safetensors_to_hrry};
use hurray_core::ElementType;

struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp(name: &str) -> Temp {
    Temp(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id())))
}

/// A safetensors file of `tensors` (name, dtype, shape, bytes), data in
/// the given order.
fn safetensors(tensors: &[(&str, &str, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut at = 0usize;
    let mut header = serde_json::Map::new();
    for (name, dtype, shape, bytes) in tensors {
        header.insert(
            (*name).to_owned(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + bytes.len()]}),
        );
        at += bytes.len();
    }
    header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
    let mut json = serde_json::to_vec(&header).unwrap();
    while !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend(json);
    for (_, _, _, bytes) in tensors {
        out.extend(bytes);
    }
    out
}

#[test]
fn converted_values_types_and_shapes_agree() {
    let f32s: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
    let f16s: Vec<u16> = (0..10).map(|i| 0x3c00 + i).collect();
    let i64s: Vec<i64> = vec![-1, 0, i64::MAX, i64::MIN, 42];
    let tensors = vec![
        (
            "layer.0.weight",
            "F32",
            vec![2, 3, 4],
            f32s.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        (
            "layer.0.bias",
            "F16",
            vec![10],
            f16s.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        (
            "ids",
            "I64",
            vec![5],
            i64s.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        ("empty", "BF16", vec![0, 7], vec![]),
        ("scalar", "U8", vec![], vec![9]),
    ];
    let input = temp("in.safetensors");
    std::fs::write(&input.0, safetensors(&tensors)).unwrap();
    let output = temp("out.hrry");
    let c = safetensors_to_hrry(&input.0, &output.0).unwrap();
    assert_eq!(c.tensors, 5);
    assert_eq!(c.bytes, 96 + 20 + 40 + 1);
    let mut file = hurray_io::file::open(&output.0).unwrap();
    let view = file.view().unwrap();
    assert_eq!(view.len(), 5);
    for (name, dtype, shape, bytes) in &tensors {
        let t = view.get(name).unwrap_or_else(|| panic!("{name} missing"));
        let d = t.descriptor();
        let want = match *dtype {
            "F32" => ElementType::Float32,
            "F16" => ElementType::Float16,
            "I64" => ElementType::Int64,
            "BF16" => ElementType::BFloat16,
            _ => ElementType::UInt8,
        };
        assert_eq!(d.element_type(), want, "{name}");
        let got_shape: Vec<u64> = d.shape().iter().collect();
        assert_eq!(&got_shape, shape, "{name}");
        let got: Vec<u8> = t.buffers().flatten().copied().collect();
        assert_eq!(&got, bytes, "{name}");
    }
    // The values themselves, decoded from the .hrry buffer.
    let w = view.get("layer.0.weight").unwrap().buffer(0).unwrap();
    let values: Vec<f32> = w
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, f32s);
    let ids = view.get("ids").unwrap().buffer(0).unwrap();
    let ids: Vec<i64> = ids
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ids, i64s);
}

#[test]
fn a_bad_header_writes_nothing() {
    let mut bytes = safetensors(&[("a", "F32", vec![2], vec![0; 8])]);
    // Claim more data than the file holds.
    let json_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    bytes.truncate(8 + json_len + 4);
    let input = temp("bad.safetensors");
    std::fs::write(&input.0, &bytes).unwrap();
    let output = temp("bad.hrry");
    let err = safetensors_to_hrry(&input.0, &output.0).unwrap_err();
    assert!(matches!(err, ConvertError::Header(_)), "{err}");
    assert!(!output.0.exists());
    // Booleans change size between the formats: refused.
    let input2 = temp("bool.safetensors");
    std::fs::write(
        &input2.0,
        safetensors(&[("b", "BOOL", vec![3], vec![1, 0, 1])]),
    )
    .unwrap();
    assert!(matches!(
        safetensors_to_hrry(&input2.0, &output.0),
        Err(ConvertError::Header(_))
    ));
    assert!(!output.0.exists());
}
