//! `hurray convert`: a safetensors file into a `.hrry` file.
//!
//! The safetensors header (an 8-byte little-endian length, then a JSON
//! object `name -> {dtype, shape, data_offsets}` and an optional
//! `__metadata__` object of strings) is validated whole before a byte is
//! written, in the style of safetensors itself: a header length within
//! [`MAX_HEADER`] and the file, every dtype known, every shape's byte size
//! (overflow checked) equal to its data range, every range inside the data
//! section, no two ranges overlapping. Each tensor then becomes one
//! row-major tensor of one host buffer (`cpu`, 64-byte alignment), in data
//! order, with its bytes unchanged; the output appears only once written
//! and synced (`hurray_io::file::create`: temporary name, `fsync`, rename).
//! `__metadata__` is not carried over.
//!
//! Refused: `BOOL` (one byte per value in safetensors, one bit in hurray:
//! the values would change size), and any dtype hurray has no code for.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use hurray_core::file::WriterOptions;
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};

/// The largest header accepted (safetensors' own limit: 100 MB).
pub const MAX_HEADER: u64 = 100_000_000;

/// Why a conversion failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConvertError {
    /// Reading the input failed.
    Io(io::Error),
    /// The safetensors header breaks a rule (what, and the tensor if any).
    Header(String),
    /// Writing the output failed (nothing is left at its path).
    Write(hurray_io::file::Error),
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "reading the safetensors file: {e}"),
            Self::Header(m) => write!(f, "safetensors header: {m}"),
            Self::Write(e) => write!(f, "writing the .hrry file: {e}"),
        }
    }
}

impl std::error::Error for ConvertError {}

impl From<io::Error> for ConvertError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<hurray_io::file::Error> for ConvertError {
    fn from(e: hurray_io::file::Error) -> Self {
        Self::Write(e)
    }
}

/// What a conversion wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Converted {
    /// Tensors written.
    pub tensors: usize,
    /// Data bytes written (buffers, padding excluded).
    pub bytes: u64,
}

/// One validated entry of the header.
#[derive(Debug)]
struct Entry {
    name: String,
    element: ElementType,
    shape: Vec<u64>,
    begin: u64,
    end: u64,
}

/// The hurray element type of a safetensors dtype, and its bytes per value.
fn element(dtype: &str) -> Option<(ElementType, u64)> {
    Some(match dtype {
        "F16" => (ElementType::Float16, 2),
        "BF16" => (ElementType::BFloat16, 2),
        "F32" => (ElementType::Float32, 4),
        "F64" => (ElementType::Float64, 8),
        "I8" => (ElementType::Int8, 1),
        "U8" => (ElementType::UInt8, 1),
        "I16" => (ElementType::Int16, 2),
        "U16" => (ElementType::UInt16, 2),
        "I32" => (ElementType::Int32, 4),
        "U32" => (ElementType::UInt32, 4),
        "I64" => (ElementType::Int64, 8),
        "U64" => (ElementType::UInt64, 8),
        "F8_E4M3" => (ElementType::Float8E4M3, 1),
        "F8_E5M2" => (ElementType::Float8E5M2, 1),
        "F8_E8M0" => (ElementType::Float8E8M0, 1),
        _ => return None,
    })
}

/// Parses and validates the whole header (see the module docs); entries in
/// data order.
fn parse_header(json: &[u8], data_len: u64) -> Result<Vec<Entry>, ConvertError> {
    let bad = |m: String| ConvertError::Header(m);
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| bad(format!("not JSON: {e}")))?;
    let map = value
        .as_object()
        .ok_or_else(|| bad("not a JSON object".into()))?;
    let mut entries = Vec::with_capacity(map.len());
    for (name, v) in map {
        if name == "__metadata__" {
            continue;
        }
        let t = |m: &str| bad(format!("tensor {name:?}: {m}"));
        let o = v.as_object().ok_or_else(|| t("not an object"))?;
        let dtype = o
            .get("dtype")
            .and_then(|d| d.as_str())
            .ok_or_else(|| t("no dtype"))?;
        let (element, size) = element(dtype).ok_or_else(|| {
            t(&format!(
                "dtype {dtype} has no hurray equivalent of the same byte size"
            ))
        })?;
        let shape: Vec<u64> = o
            .get("shape")
            .and_then(|s| s.as_array())
            .ok_or_else(|| t("no shape"))?
            .iter()
            .map(|d| d.as_u64().ok_or_else(|| t("a dimension is not a u64")))
            .collect::<Result<_, _>>()?;
        let offsets = o
            .get("data_offsets")
            .and_then(|s| s.as_array())
            .filter(|a| a.len() == 2)
            .ok_or_else(|| t("data_offsets is not [begin, end]"))?;
        let (Some(begin), Some(end)) = (
            offsets.first().and_then(serde_json::Value::as_u64),
            offsets.get(1).and_then(serde_json::Value::as_u64),
        ) else {
            return Err(t("data_offsets is not [begin, end]"));
        };
        if begin > end || end > data_len {
            return Err(t(&format!(
                "data [{begin}, {end}) outside the data section of {data_len} bytes"
            )));
        }
        let bytes = shape
            .iter()
            .try_fold(size, |acc, d| acc.checked_mul(*d))
            .ok_or_else(|| t("the shape's byte size overflows"))?;
        if bytes != end - begin {
            return Err(t(&format!(
                "shape {shape:?} of {dtype} is {bytes} bytes, its data range {}",
                end - begin
            )));
        }
        entries.push(Entry {
            name: name.clone(),
            element,
            shape,
            begin,
            end,
        });
    }
    entries.sort_by_key(|e| (e.begin, e.end));
    for pair in entries.windows(2) {
        if let [a, b] = pair {
            if b.begin < a.end && b.begin != b.end && a.begin != a.end {
                return Err(bad(format!(
                    "tensors {:?} and {:?} overlap",
                    a.name, b.name
                )));
            }
        }
    }
    Ok(entries)
}

/// Converts the safetensors file `input` into the `.hrry` file `output`.
///
/// # Errors
/// [`ConvertError`]: the input's header is checked whole before anything
/// is written; a failed write leaves nothing at `output`.
pub fn safetensors_to_hrry(input: &Path, output: &Path) -> Result<Converted, ConvertError> {
    let mut f = File::open(input)?;
    let file_len = f.metadata()?.len();
    let mut len = [0u8; 8];
    f.read_exact(&mut len)
        .map_err(|_| ConvertError::Header("shorter than its 8-byte header length".into()))?;
    let header_len = u64::from_le_bytes(len);
    if header_len > MAX_HEADER || header_len > file_len - 8 {
        return Err(ConvertError::Header(format!(
            "header length {header_len} exceeds the file ({file_len} bytes) or {MAX_HEADER}"
        )));
    }
    let mut json = vec![0u8; usize::try_from(header_len).unwrap_or(0)];
    f.read_exact(&mut json)?;
    let data_start = 8 + header_len;
    let entries = parse_header(&json, file_len - data_start)?;
    let options = WriterOptions {
        tensor_count_hint: entries.len() as u64,
        ..WriterOptions::default()
    };
    let mut w = hurray_io::file::create(output, options)?;
    let mut buf = Vec::new();
    let mut bytes = 0u64;
    for e in &entries {
        let n = e.end - e.begin;
        let handle = if n == 0 {
            BufferHandle::empty(DeviceTag::Cpu)
        } else {
            BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)
                .map_err(|err| ConvertError::Header(format!("tensor {:?}: {err}", e.name)))?
        };
        let handles = [handle];
        let desc = TensorDescriptor::row_major(e.element, &e.shape, &handles);
        let mut d = vec![0u8; 256 + 16 * e.shape.len()];
        let k = desc
            .encode(&mut d)
            .map_err(|err| ConvertError::Header(format!("tensor {:?}: {err}", e.name)))?;
        d.truncate(k);
        let view = TensorView::parse(&d)
            .map_err(|err| ConvertError::Header(format!("tensor {:?}: {err}", e.name)))?;
        buf.clear();
        buf.resize(usize::try_from(n).unwrap_or(0), 0);
        f.seek(SeekFrom::Start(data_start + e.begin))?;
        f.read_exact(&mut buf)?;
        w.write_tensor(&e.name, &view, &[&buf])?;
        bytes += n;
    }
    w.finish(&[])?;
    Ok(Converted {
        tensors: entries.len(),
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_rules_are_checked_whole() {
        let ok = br#"{"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},"__metadata__":{"x":"y"}}"#;
        assert_eq!(parse_header(ok, 12).unwrap().len(), 1);
        for (json, len) in [
            (&br#"{"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,10]}}"#[..], 12),
            (br#"{"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}}"#, 11),
            (br#"{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}"#, 2),
            (br#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}"#, 8),
            (br#"{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#, 8),
            (br#"[1,2]"#, 0),
            (br#"{"a":{"dtype":"F16","shape":[2],"data_offsets":[4,2]}}"#, 8),
        ] {
            assert!(
                matches!(parse_header(json, len), Err(ConvertError::Header(_))),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
    }
}
