//! Writes the viewer test's inputs with our writers, and a `manifest.json`
//! of what the page must show for each: tensors, CPU min/max of each drawn
//! window (computed here from the values written, not by the viewer's
//! code), and, for the hostile ones, the core's error text.
//!
//! `viewer-fixtures OUT_DIR [--big]`: `--big` adds `big.hrry`, one float32
//! [16384, 16384] tensor (1 GiB), for the time-to-first-table measure.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::Path;

use hurray_core::file::{FileView, FileWriter, IndexEntry, KvValue, WriterOptions};
use hurray_core::stream::{Event, StreamDecoder, StreamWriter};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, Scheme, SyncMode, TensorDescriptor, TensorView,
};

/// `std::fs::File` as the core writer's sink.
struct Sink(BufWriter<File>);

impl embedded_io::ErrorType for Sink {
    type Error = std::io::Error;
}

impl embedded_io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> Result<usize, std::io::Error> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> Result<(), std::io::Error> {
        self.0.flush()
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// One tensor to write: name, descriptor bytes, buffers, and the expected
/// drawn windows `(slice, min, max)`.
struct T {
    name: &'static str,
    desc: Vec<u8>,
    buffers: Vec<Vec<u8>>,
    draws: Vec<(u64, f32, f32)>,
}

fn handle(n: usize) -> BufferHandle {
    // Sizes here are small and non-zero: the handle is valid.
    BufferHandle::new(n as u64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).expect("valid handle")
}

fn encode(d: &TensorDescriptor<'_>) -> Res<Vec<u8>> {
    let mut out = vec![0u8; 4096];
    let n = d.encode(&mut out)?;
    out.truncate(n);
    Ok(out)
}

fn tensors() -> Res<Vec<T>> {
    let mut v = Vec::new();
    // ramp: float32 [64, 128], r*128 + c.
    let data: Vec<u8> = (0..64 * 128)
        .flat_map(|i| (i as f32).to_le_bytes())
        .collect();
    let h = [handle(data.len())];
    let desc = encode(&TensorDescriptor::row_major(
        ElementType::Float32,
        &[64, 128],
        &h,
    ))?;
    v.push(T {
        name: "ramp",
        desc,
        buffers: vec![data],
        draws: vec![(0, 0.0, 8191.0)],
    });
    // q8: int8 [16, 32] per tensor, scale 0.5, zero point 3: q = i - 128.
    let data: Vec<u8> = (0..512)
        .map(|i: i32| ((i % 256) - 128) as i8 as u8)
        .collect();
    let h = [handle(data.len())];
    let desc = encode(
        &TensorDescriptor::row_major(ElementType::Int8, &[16, 32], &h).with_quantization(
            Scheme::PerTensor {
                scale: 0.5,
                zero_point: 3,
            },
        ),
    )?;
    v.push(T {
        name: "q8",
        desc,
        buffers: vec![data],
        draws: vec![(0, -65.5, 62.0)],
    });
    // qc: int8 [4, 8] per channel along axis 0: q = c, scale r+1, zero point r.
    let data: Vec<u8> = (0..32).map(|i| (i % 8) as u8).collect();
    let scales: Vec<u8> = (1..=4).flat_map(|s| (s as f32).to_le_bytes()).collect();
    let zps: Vec<u8> = (0..4).flat_map(|z: i32| z.to_le_bytes()).collect();
    let h = [handle(32), handle(16), handle(16)];
    let desc = encode(
        &TensorDescriptor::row_major(ElementType::Int8, &[4, 8], &h).with_quantization(
            Scheme::PerChannel {
                axis: 0,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            },
        ),
    )?;
    v.push(T {
        name: "qc",
        desc,
        buffers: vec![data, scales, zps],
        draws: vec![(0, -12.0, 16.0)],
    });
    // cube: float16 [3, 8, 8], slice*100 + r*8 + c (all exact in float16).
    let data: Vec<u8> = (0..3 * 64)
        .flat_map(|i: u32| f32_to_f16((i / 64 * 100 + i % 64) as f32).to_le_bytes())
        .collect();
    let h = [handle(data.len())];
    let desc = encode(&TensorDescriptor::row_major(
        ElementType::Float16,
        &[3, 8, 8],
        &h,
    ))?;
    v.push(T {
        name: "cube",
        desc,
        buffers: vec![data],
        draws: vec![(0, 0.0, 63.0), (1, 100.0, 163.0), (2, 200.0, 263.0)],
    });
    // u16: uint16 [1000], i.
    let data: Vec<u8> = (0..1000u16).flat_map(u16::to_le_bytes).collect();
    let h = [handle(data.len())];
    let desc = encode(&TensorDescriptor::row_major(
        ElementType::UInt16,
        &[1000],
        &h,
    ))?;
    v.push(T {
        name: "u16",
        desc,
        buffers: vec![data],
        draws: vec![(0, 0.0, 511.0)], /* the 512-wide window */
    });
    // f64: float64 [2, 2], listed but not drawn.
    let data: Vec<u8> = (0..4).flat_map(|i| f64::from(i).to_le_bytes()).collect();
    let h = [handle(data.len())];
    let desc = encode(&TensorDescriptor::row_major(
        ElementType::Float64,
        &[2, 2],
        &h,
    ))?;
    v.push(T {
        name: "f64",
        desc,
        buffers: vec![data],
        draws: vec![],
    });
    Ok(v)
}

fn f32_to_f16(x: f32) -> u16 {
    // Small non-negative integers only (what the fixtures use).
    if x == 0.0 {
        return 0;
    }
    let b = x.to_bits();
    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let m = (b >> 13) & 0x3ff;
    ((e as u32) << 10 | m) as u16
}

fn write_file(path: &Path, ts: &[T]) -> Res<Vec<u8>> {
    let mut index = vec![IndexEntry::default(); ts.len()];
    let options = WriterOptions {
        has_kv: true,
        ..Default::default()
    };
    let mut w = FileWriter::new(Vec::new(), options, &mut index[..])?;
    for t in ts {
        let view = TensorView::parse(&t.desc)?;
        let bufs: Vec<&[u8]> = t.buffers.iter().map(Vec::as_slice).collect();
        w.write_tensor(t.name, &view, &bufs)?;
    }
    let bytes = w.finish(&[
        ("producer", KvValue::String("viewer-fixtures")),
        ("epoch", KvValue::Uint64(3)),
    ])?;
    FileView::parse(&bytes)?;
    std::fs::write(path, &bytes)?;
    Ok(bytes)
}

fn write_stream(ts: &[T]) -> Res<Vec<u8>> {
    let mut w = StreamWriter::new(Vec::new(), &mut []);
    for t in ts {
        let view = TensorView::parse(&t.desc)?;
        let bufs: Vec<&[u8]> = t.buffers.iter().map(Vec::as_slice).collect();
        w.write_tensor(&view, &bufs)?;
    }
    w.finish()?;
    Ok(w.into_inner())
}

fn stream_error(bytes: &[u8]) -> Option<String> {
    let (mut d, mut s) = (vec![0u8; 64 << 10], vec![0u8; 16 << 10]);
    let mut dec = StreamDecoder::new(&mut d[..], &mut s[..]);
    let mut input = bytes;
    loop {
        match dec.decode(input) {
            Err(e) => return Some(e.to_string()),
            Ok((used, ev)) => {
                input = &input[used..];
                if ev == Event::NeedMore {
                    break;
                }
            }
        }
    }
    dec.finish().err().map(|e| e.to_string())
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn entry(m: &mut String, file: &str, kind: &str, ts: &[(String, &T)], error: Option<String>) {
    let _ = write!(
        m,
        "{{\"file\":{},\"kind\":\"{kind}\",\"tensors\":[",
        quote(file)
    );
    for (i, (name, t)) in ts.iter().enumerate() {
        let view = TensorView::parse(&t.desc).expect("written above");
        let shape: Vec<String> = view.shape().iter().map(|d| d.to_string()).collect();
        let draws: Vec<String> = t
            .draws
            .iter()
            .map(|(s, lo, hi)| format!("[{s},{lo},{hi}]"))
            .collect();
        let _ = write!(
            m,
            "{}{{\"name\":{},\"type\":\"{}\",\"shape\":[{}],\"draws\":[{}]}}",
            if i > 0 { "," } else { "" },
            quote(name),
            view.element_type().name(),
            shape.join(","),
            draws.join(",")
        );
    }
    let _ = write!(
        m,
        "],\"error\":{}}}",
        error.map_or("null".into(), |e| quote(&e))
    );
}

fn big(path: &Path) -> Res<()> {
    const N: usize = 16384;
    let mut data = vec![0u8; N * N * 4];
    // The first 512 rows hold r*16384 + c; the rest stay zero.
    for r in 0..512 {
        for c in 0..N {
            let at = (r * N + c) * 4;
            data[at..at + 4].copy_from_slice(&((r * N + c) as f32).to_le_bytes());
        }
    }
    let h = [BufferHandle::new(
        data.len() as u64,
        64,
        DeviceTag::Cpu,
        SyncMode::ProducerSynced,
    )?];
    let desc = encode(&TensorDescriptor::row_major(
        ElementType::Float32,
        &[N as u64, N as u64],
        &h,
    ))?;
    let view = TensorView::parse(&desc)?;
    let tmp = path.with_extension("tmp");
    let mut index = [IndexEntry::default(); 1];
    let mut w = FileWriter::new(
        Sink(BufWriter::new(File::create(&tmp)?)),
        WriterOptions::default(),
        &mut index[..],
    )?;
    w.write_tensor("big", &view, &[&data])?;
    let mut sink = w.finish(&[])?;
    sink.0.flush()?;
    sink.0.get_ref().sync_all()?;
    std::fs::rename(tmp, path)?;
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = Path::new(
        args.get(1)
            .ok_or("usage: viewer-fixtures OUT_DIR [--big]")?,
    );
    std::fs::create_dir_all(out)?;
    let ts = tensors()?;
    let named: Vec<(String, &T)> = ts.iter().map(|t| (t.name.to_owned(), t)).collect();
    let by_order: Vec<(String, &T)> = ts
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("#{i}"), t))
        .collect();
    let mut m = String::from("{\"files\":[");

    let file = write_file(&out.join("pattern.hrry"), &ts)?;
    entry(&mut m, "pattern.hrry", "file", &named, None);
    let stream = write_stream(&ts)?;
    std::fs::write(out.join("pattern.hrrs"), &stream)?;
    m.push(',');
    entry(&mut m, "pattern.hrrs", "stream", &by_order, None);
    std::fs::write(out.join("ramp.hrrd"), &ts[0].desc)?;
    m.push(',');
    entry(
        &mut m,
        "ramp.hrrd",
        "descriptor",
        &[("ramp.hrrd".to_owned(), &ts[0])],
        None,
    );

    // Hostile inputs, each with the core's own error text.
    let mut hostile: Vec<(&str, &str, Vec<u8>)> = Vec::new();
    let mut b = file.clone();
    let last = b.len() - 1;
    b[last] ^= 0xff;
    hostile.push(("bad-trailer.hrry", "file", b));
    let mut b = file.clone();
    b[64] ^= 0xff; // the first descriptor's magic
    hostile.push(("bad-descriptor.hrry", "file", b));
    hostile.push(("short.hrry", "file", file[..100].to_vec()));
    hostile.push((
        "truncated.hrrs",
        "stream",
        stream[..stream.len() - 7].to_vec(),
    ));
    let mut b = stream.clone();
    b[0] ^= 0xff;
    hostile.push(("bad-magic.hrrs", "stream", b));
    let mut b = ts[0].desc.clone();
    b[0] ^= 0xff;
    hostile.push(("garbage.hrrd", "descriptor", b));
    let d = &ts[0].desc;
    hostile.push(("cut.hrrd", "descriptor", d[..d.len() - 3].to_vec()));
    for (name, kind, bytes) in hostile {
        std::fs::write(out.join(name), &bytes)?;
        let err = match kind {
            "file" => FileView::parse(&bytes).err().map(|e| e.to_string()),
            "stream" => stream_error(&bytes),
            _ => TensorView::parse(&bytes).err().map(|e| e.to_string()),
        };
        let err = err.ok_or_else(|| format!("{name} was meant to be rejected"))?;
        m.push(',');
        entry(&mut m, name, kind, &[], Some(err));
    }
    m.push_str("]}\n");
    std::fs::write(out.join("manifest.json"), m)?;
    if args.iter().any(|a| a == "--big") {
        big(&out.join("big.hrry"))?;
    }
    Ok(())
}
