//! What the page asks of `hurray_core`, as plain functions over byte
//! slices that answer in JSON (see the crate documentation's contract).

use std::fmt::Write;

use hurray_core::TensorView;
use hurray_core::field::FieldValue;
use hurray_core::file::kv::DEFAULT_MAX_KV_ENTRIES;
use hurray_core::file::{
    FILE_HEADER_LEN, FileError, FileHeader, FileView, INDEX_COUNT_LEN, KvArray, KvSection, KvValue,
    MIN_ENTRY_LEN, TRAILER_LEN, Trailer, crc32c, read_entry,
};
use hurray_core::stream::{Step, StreamDecoder};
use zerocopy::FromBytes;

use crate::json::{self, string};
use crate::quant::draw_plan;

/// The largest index and KV section the page reads (each): a file whose
/// index is larger is refused before a byte of it is read.
pub const MAX_SECTION: u64 = 256 << 20;
/// The largest descriptor the page reads.
pub const MAX_DESCRIPTOR: u64 = 1 << 20;

fn file_error(e: &FileError) -> String {
    json::error(
        json::variant(&format!("{:?}", e.kind())),
        e.offset(),
        &e.to_string(),
    )
}

fn u64_le(b: &[u8], at: usize) -> Option<u64> {
    let s: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(s))
}

/// Step 1 of opening a file: its first [`FILE_HEADER_LEN`] bytes and last
/// [`TRAILER_LEN`] bytes, and its length. Checks the header and the
/// trailer with the core's rules, and that the index and KV section lie
/// inside the file and are at most [`MAX_SECTION`] bytes; answers where
/// they are (`{"alignment", "flags", "index": [off, len], "kv": [off, len],
/// "crc", "check_crc"}`), or the error.
#[must_use]
pub fn file_plan(head: &[u8], tail: &[u8], file_len: u64) -> String {
    let min = (FILE_HEADER_LEN + TRAILER_LEN) as u64;
    if file_len < min || head.len() != FILE_HEADER_LEN || tail.len() != TRAILER_LEN {
        return json::error(
            "Truncated",
            0,
            &format!(
                "at byte 0: a file is at least {min} bytes (header and trailer), this one has {file_len}"
            ),
        );
    }
    let (Ok(header), Ok(trailer)) = (
        FileHeader::ref_from_bytes(head),
        Trailer::ref_from_bytes(tail),
    ) else {
        return json::error("Truncated", 0, "at byte 0: short header or trailer");
    };
    let trailer_at = file_len - TRAILER_LEN as u64;
    if let Err(e) = trailer.check(trailer_at) {
        return file_error(&e);
    }
    let flags = match header.check() {
        Ok(f) => f,
        Err(e) => return file_error(&e),
    };
    let (io, il) = (trailer.index_offset.get(), trailer.index_length.get());
    let (ko, kl) = (trailer.kv_offset.get(), u64::from(trailer.kv_length.get()));
    let inside = |o: u64, l: u64| {
        o >= min - TRAILER_LEN as u64 && o.checked_add(l).is_some_and(|e| e <= trailer_at)
    };
    if !inside(io, il) || il < INDEX_COUNT_LEN as u64 || il > MAX_SECTION {
        return json::error(
            "IndexBounds",
            trailer_at,
            &format!(
                "at byte {trailer_at}: the index ({il} bytes at {io}) is not inside the file or exceeds the viewer's {MAX_SECTION}-byte limit"
            ),
        );
    }
    if kl != 0 && (!inside(ko, kl) || kl > MAX_SECTION) {
        return json::error(
            "KvBounds",
            trailer_at + 16,
            &format!(
                "at byte {}: the KV section ({kl} bytes at {ko}) is not inside the file",
                trailer_at + 16
            ),
        );
    }
    let mut o = String::new();
    let _ = write!(
        o,
        "{{\"version\":[{},{}],\"flags\":{},\"alignment\":{},\"index\":[{io},{il}],\"kv\":[{ko},{kl}],\"crc\":{},\"check_crc\":{}}}",
        header.version_major,
        header.version_minor,
        flags.bits(),
        header.data_buffer_alignment.get(),
        trailer.index_crc32c.get(),
        flags.contains(hurray_core::file::FileFlags::HAS_INDEX_CRC32C),
    );
    o
}

fn kv_value(o: &mut String, v: &KvValue<'_>) {
    match v {
        KvValue::String(s) => string(o, s),
        KvValue::Int64(i) => string(o, &i.to_string()),
        KvValue::Uint64(u) => string(o, &u.to_string()),
        KvValue::Float64(f) => string(o, &f.to_string()),
        KvValue::Bool(b) => string(o, &b.to_string()),
        KvValue::Bytes(b) => string(o, &format!("<{} bytes>", b.len())),
        KvValue::Array(a) => kv_array(o, a),
    }
}

fn kv_array(o: &mut String, a: &KvArray<'_>) {
    let mut s = String::from("[");
    for (i, v) in a.iter().take(16).enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let mut one = String::new();
        kv_value(&mut one, &v);
        s.push_str(one.trim_matches('"'));
    }
    if a.len() > 16 {
        let _ = write!(s, ", … ({} in all)", a.len());
    }
    s.push(']');
    string(o, &s);
}

/// The KV section as `[["key", "value"], …]` (values rendered as text).
fn kv_json(o: &mut String, kv: &KvSection<'_>) {
    o.push('[');
    for (i, (k, v)) in kv.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push('[');
        string(o, k);
        o.push(',');
        kv_value(o, &v);
        o.push(']');
    }
    o.push(']');
}

/// Step 2 of opening a file: its index (at `index_offset`) and KV section
/// (at `kv_offset`; empty when there is none). Checks the index CRC when
/// `check_crc`, the entry count against the index length, every entry
/// (the core's `read_entry`) and every KV entry; answers `{"tensors":
/// [{"name", "desc": [off, len], "data": [off, len]}], "kv": [[k, v]]}`.
#[must_use]
pub fn file_index(
    index: &[u8],
    index_offset: u64,
    kv: &[u8],
    kv_offset: u64,
    crc: u32,
    check_crc: bool,
) -> String {
    if check_crc {
        let computed = crc32c(index);
        if computed != crc {
            return json::error(
                "CrcMismatch",
                index_offset,
                &format!(
                    "at byte {index_offset}: index CRC-32C mismatch: stored {crc:#010x}, computed {computed:#010x}"
                ),
            );
        }
    }
    let kv = if kv.is_empty() {
        KvSection::default()
    } else {
        match KvSection::parse(kv, kv_offset, DEFAULT_MAX_KV_ENTRIES) {
            Ok(k) => k,
            Err(e) => return file_error(&e),
        }
    };
    let Some(count) = u64_le(index, 0) else {
        return json::error(
            "IndexLength",
            index_offset,
            &format!("at byte {index_offset}: index shorter than its count"),
        );
    };
    if count > (index.len() / MIN_ENTRY_LEN) as u64 {
        return json::error(
            "IndexLength",
            index_offset,
            &format!(
                "at byte {index_offset}: {count} entries cannot fit a {}-byte index",
                index.len()
            ),
        );
    }
    let mut o = String::from("{\"tensors\":[");
    let mut pos = INDEX_COUNT_LEN;
    for i in 0..count {
        let (e, next) = match read_entry(index, pos, index_offset) {
            Ok(x) => x,
            Err(e) => return file_error(&e),
        };
        pos = next;
        if i > 0 {
            o.push(',');
        }
        o.push_str("{\"name\":");
        string(&mut o, e.name);
        let _ = write!(
            o,
            ",\"desc\":[{},{}],\"data\":[{},{}]}}",
            e.descriptor_offset, e.descriptor_length, e.data_offset, e.data_length
        );
    }
    o.push_str("],\"kv\":");
    kv_json(&mut o, &kv);
    o.push('}');
    o
}

/// Checks a whole file with [`FileView::parse`] (every descriptor, data
/// range and composite): `{"ok": n}` or the error.
#[must_use]
pub fn verify_file(bytes: &[u8]) -> String {
    match FileView::parse(bytes) {
        Ok(v) => format!("{{\"ok\":{}}}", v.len()),
        Err(e) => file_error(&e),
    }
}

/// A field's value as the pane shows it: numbers in decimal (and hex for
/// unsigned ones above 9), bytes in hex (the first 16).
fn field_value(v: &FieldValue<'_>) -> String {
    match *v {
        FieldValue::Bytes(b) => {
            let mut s: String = b.iter().take(16).map(|x| format!("{x:02x}")).collect();
            if b.len() > 16 {
                let _ = write!(s, "… ({} bytes)", b.len());
            }
            s
        }
        FieldValue::I32(x) => x.to_string(),
        FieldValue::I64(x) => x.to_string(),
        FieldValue::F32(x) => x.to_string(),
        FieldValue::F64(x) => x.to_string(),
        ref u => match u.as_u64() {
            Some(x) if x > 9 => format!("{x} ({x:#x})"),
            Some(x) => x.to_string(),
            None => format!("{u:?}"),
        },
    }
}

/// Describes a descriptor (`base`: its absolute offset, for errors;
/// `alignment`: where its buffers start after one another in the data
/// region, 1 in a stream): every accessor of the view, the buffer table
/// with each buffer's offset from the first, and the draw plan.
#[must_use]
pub fn describe(bytes: &[u8], base: u64, alignment: u64) -> String {
    let v = match TensorView::parse(bytes) {
        Ok(v) => v,
        Err(e) => {
            let at = base.saturating_add(u64::from(e.offset()));
            return json::error(
                json::variant(&format!("{:?}", e.kind())),
                at,
                &format!("at byte {at}: {}", e.kind()),
            );
        }
    };
    describe_view(&v, alignment)
}

/// [`describe`] of a parsed view.
#[must_use]
pub fn describe_view(v: &TensorView<'_>, alignment: u64) -> String {
    let mut o = String::from("{\"type\":");
    string(&mut o, v.element_type().name());
    o.push_str(",\"shape\":[");
    for (i, d) in v.shape().iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(o, "{d}");
    }
    o.push_str("],\"layout\":");
    string(&mut o, v.layout().name());
    let device = v.buffers().get(0).map_or("none", |b| b.device_tag().name());
    o.push_str(",\"device\":");
    string(&mut o, device);
    let mut bytes = 0u64;
    let mut at = 0u64;
    o.push_str(",\"buffers\":[");
    for (i, b) in v.buffers().iter().enumerate() {
        if i > 0 {
            o.push(',');
            at = at
                .div_ceil(alignment.max(1))
                .saturating_mul(alignment.max(1));
        }
        let _ = write!(
            o,
            "{{\"size\":{},\"offset\":{at},\"alignment\":{},\"device\":\"{}\",\"sync\":\"{:?}\",\"class\":\"{:?}\"}}",
            b.byte_size(),
            b.alignment(),
            b.device_tag().name(),
            b.sync_mode(),
            b.memory_class()
        );
        at = at.saturating_add(b.byte_size());
        bytes = bytes.saturating_add(b.byte_size());
    }
    let _ = write!(o, "],\"bytes\":{bytes}");
    // The annotated fields: the core's walker, every byte of the descriptor
    // once, in wire order.
    o.push_str(",\"fields\":[");
    let mut first = true;
    v.for_each_field(|f| {
        if !first {
            o.push(',');
        }
        first = false;
        o.push('[');
        string(&mut o, &f.path.to_string());
        let r = f.range();
        let _ = write!(o, ",{},{},", r.start, r.end);
        let mut val = field_value(&f.value);
        // Tags also in words.
        let word = match (f.path.part, f.path.name) {
            ("", "type_tag") => Some(v.element_type().name()),
            ("", "layout_tag") => Some(v.layout().name()),
            ("quant", "scheme_tag") => v.quantization().map(|q| q.scheme.name()),
            _ => None,
        };
        if let Some(w) = word {
            let _ = write!(val, " ({w})");
        }
        string(&mut o, &val);
        o.push(']');
    });
    o.push_str("],\"draw\":");
    match draw_plan(v) {
        Ok(p) => {
            let _ = write!(
                o,
                "{{\"rows\":{},\"cols\":{},\"slices\":{},\"bits\":{},\"quant\":",
                p.rows, p.cols, p.slices, p.bits
            );
            string(&mut o, p.quant.name);
            o.push('}');
        }
        Err(why) => {
            o.push_str("{\"why\":");
            string(&mut o, &why);
            o.push('}');
        }
    }
    o.push('}');
    o
}

/// The most data bytes a stream keeps per tensor for drawing, and in all.
pub const STREAM_KEEP_TENSOR: u64 = 16 << 20;
/// See [`STREAM_KEEP_TENSOR`].
pub const STREAM_KEEP_TOTAL: u64 = 64 << 20;

/// One tensor of a stream: its descriptor, where it starts, and its data
/// when small enough to keep.
#[derive(Debug, Default)]
pub struct StreamTensor {
    /// The descriptor bytes.
    pub descriptor: Vec<u8>,
    /// Stream offset of the descriptor.
    pub offset: u64,
    /// The buffers' bytes back to back, or `None` when over the keep limits.
    pub data: Option<Vec<u8>>,
}

/// A stream read chunk by chunk through the core's sans-I/O decoder.
#[derive(Debug)]
pub struct Stream {
    dec: StreamDecoder<'static, Vec<u8>, Vec<u8>>,
    /// The tensors so far.
    pub tensors: Vec<StreamTensor>,
    kept: u64,
    /// The first error, as JSON.
    pub error: Option<String>,
}

impl Default for Stream {
    fn default() -> Self {
        Self::new()
    }
}

impl Stream {
    /// A stream with descriptors up to 64 KiB and composite room for rank 32.
    #[must_use]
    pub fn new() -> Self {
        Self {
            dec: StreamDecoder::new(vec![0; 64 << 10], vec![0; 16 << 10]),
            tensors: Vec::new(),
            kept: 0,
            error: None,
        }
    }

    fn fail(&mut self, e: &hurray_core::stream::StreamError) {
        self.error = Some(json::error(
            json::variant(&format!("{:?}", e.kind())),
            e.offset(),
            &e.to_string(),
        ));
    }

    /// Feeds the next chunk; `false` once the stream has failed.
    pub fn feed(&mut self, mut input: &[u8]) -> bool {
        while self.error.is_none() {
            match self.dec.step(input) {
                Err(e) => self.fail(&e),
                Ok((used, step)) => {
                    let taken = input.get(..used).unwrap_or(&[]);
                    input = input.get(used..).unwrap_or(&[]);
                    match step {
                        Step::NeedMore => return true,
                        Step::Descriptor => {
                            let d = self
                                .dec
                                .current()
                                .map(|v| v.as_bytes().to_vec())
                                .unwrap_or_default();
                            let size: u64 = self
                                .dec
                                .current()
                                .map_or(0, |v| v.buffers().iter().map(|b| b.byte_size()).sum());
                            let keep =
                                size <= STREAM_KEEP_TENSOR && self.kept + size <= STREAM_KEEP_TOTAL;
                            if keep {
                                self.kept += size;
                            }
                            let offset = self.dec.position().saturating_sub(d.len() as u64);
                            self.tensors.push(StreamTensor {
                                offset,
                                descriptor: d,
                                data: keep.then(Vec::new),
                            });
                        }
                        Step::Data { len, .. } => {
                            let piece = taken.get(taken.len().saturating_sub(len)..).unwrap_or(&[]);
                            if let Some(Some(d)) = self.tensors.last_mut().map(|t| t.data.as_mut())
                            {
                                d.extend_from_slice(piece);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        false
    }

    /// The end of the input: an error unless it fell between two tensors.
    pub fn finish(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.dec.finish() {
                self.fail(&e);
            }
        }
    }

    /// Bytes taken in so far.
    #[must_use]
    pub fn position(&self) -> u64 {
        self.dec.position()
    }
}

/// A whole stream at once: `{"tensors": [{"offset", …describe}], "error"}`
/// (for tests; the page feeds chunks through the same [`Stream`]).
#[must_use]
pub fn stream_feed(bytes: &[u8]) -> String {
    let mut s = Stream::new();
    s.feed(bytes);
    s.finish();
    stream_json(&s)
}

/// The tensors of a stream so far and its error, as JSON.
#[must_use]
pub fn stream_json(s: &Stream) -> String {
    let mut o = String::from("{\"tensors\":[");
    for (i, t) in s.tensors.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(
            o,
            "{{\"name\":\"#{i}\",\"offset\":{},\"kept\":{},\"view\":",
            t.offset,
            t.data.is_some()
        );
        o.push_str(&describe(&t.descriptor, t.offset, 1));
        o.push('}');
    }
    o.push(']');
    if let Some(e) = &s.error {
        o.push(',');
        let inner = e.strip_prefix('{').and_then(|e| e.strip_suffix('}'));
        o.push_str(inner.unwrap_or("\"error\":null"));
    }
    o.push('}');
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use hurray_core::file::{FileWriter, IndexEntry, WriterOptions};
    use hurray_core::stream::StreamWriter;
    use hurray_core::{BufferHandle, DeviceTag, ElementType, Scheme, SyncMode, TensorDescriptor};

    fn desc() -> Vec<u8> {
        let h = [BufferHandle::new(24, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
        let d = TensorDescriptor::row_major(ElementType::Int8, &[4, 6], &h).with_quantization(
            Scheme::PerTensor {
                scale: 0.5,
                zero_point: 0,
            },
        );
        let mut out = vec![0; 256];
        let n = d.encode(&mut out).unwrap();
        out.truncate(n);
        out
    }

    fn file() -> Vec<u8> {
        let d = desc();
        let view = TensorView::parse(&d).unwrap();
        let mut index = [IndexEntry::default(); 1];
        let options = WriterOptions {
            has_kv: true,
            ..Default::default()
        };
        let mut w = FileWriter::new(Vec::new(), options, &mut index[..]).unwrap();
        w.write_tensor("w", &view, &[&[0; 24]]).unwrap();
        w.finish(&[("k", KvValue::String("v"))]).unwrap()
    }

    fn field(json: &str, key: &str) -> String {
        let at = json.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
        json[at..].split([',', '}']).next().unwrap().to_owned()
    }

    #[test]
    fn a_file_opens_from_its_slices() {
        let f = file();
        let n = f.len();
        let plan = file_plan(&f[..64], &f[n - 40..], n as u64);
        assert!(!plan.contains("error"), "{plan}");
        let index: Vec<u64> = plan
            .split("\"index\":[")
            .nth(1)
            .unwrap()
            .split(']')
            .next()
            .unwrap()
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        let kv: Vec<u64> = plan
            .split("\"kv\":[")
            .nth(1)
            .unwrap()
            .split(']')
            .next()
            .unwrap()
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        let (io, il) = (index[0] as usize, index[1] as usize);
        let (ko, kl) = (kv[0] as usize, kv[1] as usize);
        let idx = file_index(
            &f[io..io + il],
            io as u64,
            &f[ko..ko + kl],
            ko as u64,
            0,
            false,
        );
        assert!(idx.starts_with("{\"tensors\":[{\"name\":\"w\""), "{idx}");
        assert!(idx.ends_with("\"kv\":[[\"k\",\"v\"]]}"), "{idx}");
        assert_eq!(verify_file(&f), "{\"ok\":1}");
    }

    #[test]
    fn a_broken_trailer_is_a_typed_error_with_its_offset() {
        let mut f = file();
        let n = f.len();
        f[n - 1] ^= 0xff;
        let plan = file_plan(&f[..64], &f[n - 40..], n as u64);
        assert_eq!(field(&plan, "offset"), (n - 4).to_string(), "{plan}");
        assert!(plan.contains("trailer magic"), "{plan}");
        // The same text as the core's whole-file check.
        let whole = verify_file(&f);
        assert_eq!(field(&whole, "offset"), field(&plan, "offset"));
    }

    #[test]
    fn a_short_file_is_refused_before_reading() {
        let plan = file_plan(&[], &[], 10);
        assert!(plan.contains("\"kind\":\"Truncated\""), "{plan}");
    }

    #[test]
    fn an_index_count_larger_than_its_bytes_is_refused() {
        let mut index = vec![0u8; 40];
        index[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let r = file_index(&index, 1000, &[], 0, 0, false);
        assert!(
            r.contains("\"kind\":\"IndexLength\"") && r.contains("\"offset\":1000"),
            "{r}"
        );
    }

    #[test]
    fn describe_lists_the_fields_and_the_draw_plan() {
        let d = describe(&desc(), 0, 64);
        assert!(
            d.starts_with("{\"type\":\"int8\",\"shape\":[4,6],\"layout\":\"row_major\""),
            "{d}"
        );
        assert!(
            d.contains(
                "\"draw\":{\"rows\":4,\"cols\":6,\"slices\":1,\"bits\":8,\"quant\":\"per_tensor_affine\"}"
            ),
            "{d}"
        );
        // The fields pane is the core's walker: names, byte ranges, values.
        assert!(d.contains("[\"shape[0]\",20,28,\"4\"]"), "{d}");
        assert!(d.contains("[\"quant.scale\","), "{d}");
        assert!(d.contains(",\"0.5\"]"), "{d}");
        let bad = describe(&desc()[..20], 100, 64);
        assert!(bad.contains("\"offset\":"), "{bad}");
        assert!(bad.starts_with("{\"error\":"), "{bad}");
    }

    #[test]
    fn a_stream_is_decoded_chunk_by_chunk() {
        let d = desc();
        let view = TensorView::parse(&d).unwrap();
        let mut w = StreamWriter::new(Vec::new(), &mut []);
        for i in 0..3u8 {
            w.write_tensor(&view, &[&[i; 24]]).unwrap();
        }
        w.finish().unwrap();
        let bytes = w.into_inner();
        let mut s = Stream::new();
        for c in bytes.chunks(5) {
            assert!(s.feed(c));
        }
        s.finish();
        assert!(s.error.is_none());
        assert_eq!(s.tensors.len(), 3);
        assert_eq!(s.tensors[2].data.as_deref(), Some(&[2u8; 24][..]));
        assert_eq!(s.tensors[1].offset, (d.len() + 24) as u64);
        let cut = stream_feed(&bytes[..bytes.len() - 1]);
        assert!(cut.contains("\"error\":{\"kind\":"), "{cut}");
    }

    #[test]
    fn cpu_min_max_dequantizes_per_channel() {
        use crate::quant::{cpu_min_max, window};
        let h = [
            BufferHandle::new(4, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
            BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
            BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap(),
        ];
        let d = TensorDescriptor::row_major(ElementType::Int8, &[2, 2], &h).with_quantization(
            Scheme::PerChannel {
                axis: 0,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            },
        );
        let mut out = vec![0; 256];
        let v = d.encode_view(&mut out).unwrap();
        let plan = draw_plan(&v).unwrap();
        let w = window(&plan, 0, 2, 2).unwrap();
        assert_eq!(w.params, Some((0, 1)));
        // Rows are channels: (q - z[r]) * s[r].
        let data = [1u8, 5, 0xff, 3]; // 1, 5, -1, 3
        let scales: Vec<u8> = [2f32, 10.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let zps: Vec<u8> = [1i32, 0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let r = cpu_min_max(&plan, &w, &data, &scales, &zps);
        assert_eq!(r, Some((-10.0, 30.0)));
        assert_eq!(cpu_min_max(&plan, &w, &data[..3], &scales, &zps), None);
    }
}
