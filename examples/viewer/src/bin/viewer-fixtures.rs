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

/// One quantized tensor of `quant.hrry`: the storage codes of its logical
/// elements (row-major), and its parameters.
struct Quantized {
    name: &'static str,
    t: ElementType,
    shape: Vec<u64>,
    scheme: Scheme<'static>,
    codes: Vec<u32>,
    /// The scales as the tensor stores them.
    scales: Vec<u8>,
    /// The zero points (`int32`), when the scheme has them.
    zero_points: Option<Vec<i32>>,
}

/// The NF4 table of the spec, as its decimals.
const NF4: [f64; 16] = [
    -1.0,
    -0.6961928009986877,
    -0.5250730514526367,
    -0.39491748809814453,
    -0.28444138169288635,
    -0.18477343022823334,
    -0.09105003625154495,
    0.0,
    0.07958029955625534,
    0.16093020141124725,
    0.24611230194568634,
    0.33791524171829224,
    0.44070982933044434,
    0.5626170039176941,
    0.7229568362236023,
    1.0,
];

/// The real value of a storage code, from the spec's element-type tables
/// (written apart from the viewer's decoder on purpose: this is the oracle).
fn code_value(t: ElementType, q: u32) -> f64 {
    let signed = |bits: u32| {
        let q = i64::from(q);
        if q >= 1 << (bits - 1) {
            q - (1 << bits)
        } else {
            q
        }
    };
    // sign, exponent bits, mantissa bits, bias
    let float = |e: u32, m: u32, bias: i32| {
        let sign = if q >> (e + m) & 1 == 1 { -1.0 } else { 1.0 };
        let exp = (q >> m) & ((1 << e) - 1);
        let frac = f64::from(q & ((1 << m) - 1)) / f64::from(1u32 << m);
        if exp == 0 {
            sign * frac * 2f64.powi(1 - bias)
        } else {
            sign * (1.0 + frac) * 2f64.powi(exp as i32 - bias)
        }
    };
    match t {
        ElementType::Int8 => signed(8) as f64,
        ElementType::Int4 => signed(4) as f64,
        ElementType::UInt8 | ElementType::UInt4 | ElementType::UInt2 => f64::from(q),
        ElementType::Float8E4M3 => float(4, 3, 7),
        ElementType::Float8E5M2 => float(5, 2, 15),
        ElementType::Float4E2M1 => {
            let m = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][(q & 7) as usize];
            if q & 8 != 0 { -m } else { m }
        }
        ElementType::Float6E2M3 => float(2, 3, 1),
        ElementType::Float6E3M2 => float(3, 2, 3),
        other => panic!("no oracle for {other:?}"),
    }
}

fn bits_of(t: ElementType) -> u64 {
    match t {
        ElementType::UInt2 => 2,
        ElementType::Int4 | ElementType::UInt4 | ElementType::Float4E2M1 => 4,
        ElementType::Float6E2M3 | ElementType::Float6E3M2 => 6,
        _ => 8,
    }
}

impl Quantized {
    /// `(axis, block size, padded)` of the scheme (block 0: per channel;
    /// `None`: per tensor).
    fn blocks(&self) -> Option<(usize, u64, bool)> {
        match self.scheme {
            Scheme::PerChannel { axis, .. } => Some((axis as usize, 0, false)),
            Scheme::PerBlock {
                axis, block_size, ..
            }
            | Scheme::Nf4 {
                axis, block_size, ..
            } => Some((axis as usize, u64::from(block_size), true)),
            Scheme::Mxfp {
                axis, block_size, ..
            } => Some((axis as usize, u64::from(block_size), false)),
            _ => None,
        }
    }

    /// The logical multi-indices in row-major order.
    fn positions(&self) -> Vec<Vec<u64>> {
        let n: u64 = self.shape.iter().product();
        (0..n)
            .map(|mut g| {
                let mut ix = vec![0; self.shape.len()];
                for (i, d) in self.shape.iter().enumerate().rev() {
                    ix[i] = g % d;
                    g /= d;
                }
                ix
            })
            .collect()
    }

    /// The parameter index of a position: the channel, or the spec's block
    /// index `outer × ⌈S / K⌉ + ⌊i_axis / K⌋`.
    fn param(&self, ix: &[u64]) -> usize {
        let Some((axis, k, _)) = self.blocks() else {
            return 0;
        };
        if k == 0 {
            return ix[axis] as usize;
        }
        let mut outer = 0;
        for (j, d) in self.shape.iter().enumerate() {
            if j != axis {
                outer = outer * d + ix[j];
            }
        }
        (outer * self.shape[axis].div_ceil(k) + ix[axis] / k) as usize
    }

    fn scale(&self, p: usize) -> f64 {
        let s = &self.scales;
        match self.scheme {
            Scheme::Mxfp { .. } => 2f64.powi(i32::from(s[p]) - 127),
            Scheme::PerBlock {
                scale_type: ElementType::Float16,
                ..
            } => f16_value(u16::from_le_bytes([s[2 * p], s[2 * p + 1]])),
            Scheme::PerBlock {
                scale_type: ElementType::BFloat16,
                ..
            } => f64::from(f32::from_bits(
                u32::from(u16::from_le_bytes([s[2 * p], s[2 * p + 1]])) << 16,
            )),
            Scheme::PerTensor { scale, .. } => f64::from(scale),
            _ => f64::from(f32::from_le_bytes(s[4 * p..4 * p + 4].try_into().unwrap())),
        }
    }

    /// The real value of every logical element, by the spec's formulas (in
    /// float32, as the spec says).
    fn reals(&self) -> Vec<f32> {
        self.positions()
            .iter()
            .zip(&self.codes)
            .map(|(ix, &q)| {
                let p = self.param(ix);
                let s = self.scale(p) as f32;
                match self.scheme {
                    Scheme::Nf4 { .. } => s * NF4[q as usize] as f32,
                    Scheme::Mxfp { .. } => s * code_value(self.t, q) as f32,
                    Scheme::PerTensor { zero_point, .. } => {
                        (code_value(self.t, q) as f32 - zero_point as f32) * s
                    }
                    _ => {
                        let z = self.zero_points.as_ref().map_or(0, |z| z[p]);
                        (code_value(self.t, q) as f32 - z as f32) * s
                    }
                }
            })
            .collect()
    }

    /// The data buffer: codes packed LSB first at their row-major place in
    /// the shape whose axis is padded to whole blocks (per block, NF4).
    fn data(&self) -> Vec<u8> {
        let mut stored = self.shape.clone();
        if let Some((a, k, true)) = self.blocks() {
            stored[a] = self.shape[a].div_ceil(k) * k;
        }
        let n: u64 = stored.iter().product();
        let bits = bits_of(self.t);
        let mut out = vec![0u8; self.t.storage_bytes(n).unwrap() as usize];
        for (ix, &q) in self.positions().iter().zip(&self.codes) {
            let mut at = 0;
            for (i, d) in stored.iter().enumerate() {
                at = at * d + ix[i];
            }
            for b in 0..bits {
                if q >> b & 1 == 1 {
                    let bit = at * bits + b;
                    out[(bit / 8) as usize] |= 1 << (bit % 8);
                }
            }
        }
        out
    }

    /// The tensor with its expected min/max per 2-D slice.
    fn tensor(&self) -> Res<T> {
        let data = self.data();
        let mut buffers = vec![data];
        buffers.push(self.scales.clone());
        if let Some(z) = &self.zero_points {
            buffers.push(z.iter().flat_map(|z| z.to_le_bytes()).collect());
        }
        if matches!(self.scheme, Scheme::PerTensor { .. }) {
            buffers.truncate(1);
        }
        let handles: Vec<BufferHandle> = buffers.iter().map(|b| handle(b.len())).collect();
        let desc = encode(
            &TensorDescriptor::row_major(self.t, &self.shape, &handles)
                .with_quantization(self.scheme),
        )?;
        let r = self.shape.len();
        let per_slice = (self.shape[r - 2] * self.shape[r - 1]) as usize;
        let draws = self
            .reals()
            .chunks(per_slice)
            .enumerate()
            .map(|(i, v)| {
                let lo = v
                    .iter()
                    .copied()
                    .filter(|x| x.is_finite())
                    .fold(f32::INFINITY, f32::min);
                let hi = v
                    .iter()
                    .copied()
                    .filter(|x| x.is_finite())
                    .fold(f32::NEG_INFINITY, f32::max);
                (i as u64, lo, hi)
            })
            .collect();
        Ok(T {
            name: self.name,
            desc,
            buffers,
            draws,
        })
    }
}

/// An f16 bit pattern's value (normal numbers only: what the fixtures use).
fn f16_value(h: u16) -> f64 {
    let e = i32::from(h >> 10 & 0x1f);
    let m = f64::from(h & 0x3ff) / 1024.0;
    let s = if h >> 15 == 1 { -1.0 } else { 1.0 };
    s * (1.0 + m) * 2f64.powi(e - 15)
}

/// Every quantization scheme of the spec, on the storage types the viewer
/// decodes: partial blocks, blocks along a leading axis, sub-byte rows that
/// start mid-byte, shared and separate parameter buffers.
fn quantized() -> Res<Vec<T>> {
    let codes = |n: u64, m: u32, f: &dyn Fn(u32) -> bool| -> Vec<u32> {
        let mut v = Vec::new();
        let mut x = 0u32;
        while (v.len() as u64) < n {
            let c = (x.wrapping_mul(37).wrapping_add(11)) % m;
            x += 1;
            if f(c) {
                v.push(c);
            }
        }
        v
    };
    let any = |_: u32| true;
    let f32s = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let f16s = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| f32_to_f16(*x).to_le_bytes())
            .collect()
    };
    let bf16s = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
            .collect()
    };
    let ramp = |n: usize, k: f32| -> Vec<f32> { (0..n).map(|i| 0.25 + k * i as f32).collect() };
    let e8m0 = |n: usize| -> Vec<u8> { (0..n).map(|i| 124 + (i % 7) as u8).collect() };
    let zps = |n: usize, lo: i32, span: i32| -> Vec<i32> {
        (0..n).map(|i| lo + (i as i32 * 5) % span).collect()
    };
    let qs = vec![
        Quantized {
            name: "pb_i4_f16",
            t: ElementType::Int4,
            shape: vec![6, 20],
            scheme: Scheme::PerBlock {
                axis: 1,
                block_size: 8,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
                scale_type: ElementType::Float16,
            },
            codes: codes(120, 16, &any),
            scales: f16s(&ramp(18, 0.5)),
            zero_points: Some(zps(18, -8, 16)),
        },
        Quantized {
            name: "pb_u8_bf16_axis0",
            t: ElementType::UInt8,
            shape: vec![10, 6],
            scheme: Scheme::PerBlock {
                axis: 0,
                block_size: 4,
                scale_buffer: 1,
                zero_point_buffer: None,
                scale_type: ElementType::BFloat16,
            },
            codes: codes(60, 256, &any),
            scales: bf16s(&ramp(18, -0.75)),
            zero_points: None,
        },
        Quantized {
            name: "pb_u2_f32",
            t: ElementType::UInt2,
            shape: vec![4, 6],
            scheme: Scheme::PerBlock {
                axis: 1,
                block_size: 4,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
                scale_type: ElementType::Float32,
            },
            codes: codes(24, 4, &any),
            scales: f32s(&ramp(8, 1.5)),
            zero_points: Some(zps(8, 0, 4)),
        },
        Quantized {
            name: "nf4",
            t: ElementType::UInt4,
            shape: vec![4, 32],
            scheme: Scheme::Nf4 {
                axis: 1,
                block_size: 16,
                scale_buffer: 1,
            },
            codes: codes(128, 16, &any),
            scales: f32s(&ramp(8, 0.3)),
            zero_points: None,
        },
        Quantized {
            name: "nf4_partial",
            t: ElementType::UInt4,
            shape: vec![3, 9],
            scheme: Scheme::Nf4 {
                axis: 1,
                block_size: 8,
                scale_buffer: 1,
            },
            codes: codes(27, 16, &any),
            scales: f32s(&ramp(6, 1.1)),
            zero_points: None,
        },
        Quantized {
            name: "nf4_cube",
            t: ElementType::UInt4,
            shape: vec![2, 12, 5],
            scheme: Scheme::Nf4 {
                axis: 1,
                block_size: 8,
                scale_buffer: 1,
            },
            codes: codes(120, 16, &any),
            scales: f32s(&ramp(20, 0.7)),
            zero_points: None,
        },
        Quantized {
            name: "mx_e4m3",
            t: ElementType::Float8E4M3,
            shape: vec![4, 32],
            scheme: Scheme::Mxfp {
                axis: 1,
                block_size: 16,
                scale_buffer: 1,
            },
            codes: codes(128, 256, &|c| c & 0x7f != 0x7f),
            scales: e8m0(8),
            zero_points: None,
        },
        Quantized {
            name: "mx_e5m2",
            t: ElementType::Float8E5M2,
            shape: vec![2, 32],
            scheme: Scheme::Mxfp {
                axis: 1,
                block_size: 32,
                scale_buffer: 1,
            },
            codes: codes(64, 256, &|c| (c >> 2) & 0x1f != 0x1f),
            scales: e8m0(2),
            zero_points: None,
        },
        Quantized {
            name: "mx_e2m1",
            t: ElementType::Float4E2M1,
            shape: vec![3, 64],
            scheme: Scheme::Mxfp {
                axis: 1,
                block_size: 32,
                scale_buffer: 1,
            },
            codes: codes(192, 16, &any),
            scales: e8m0(6),
            zero_points: None,
        },
        Quantized {
            name: "mx_e2m3_axis0",
            t: ElementType::Float6E2M3,
            shape: vec![16, 5],
            scheme: Scheme::Mxfp {
                axis: 0,
                block_size: 16,
                scale_buffer: 1,
            },
            codes: codes(80, 64, &any),
            scales: e8m0(5),
            zero_points: None,
        },
        Quantized {
            name: "mx_e3m2",
            t: ElementType::Float6E3M2,
            shape: vec![3, 16],
            scheme: Scheme::Mxfp {
                axis: 1,
                block_size: 16,
                scale_buffer: 1,
            },
            codes: codes(48, 64, &any),
            scales: e8m0(3),
            zero_points: None,
        },
        Quantized {
            name: "mx_i8",
            t: ElementType::Int8,
            shape: vec![2, 32],
            scheme: Scheme::Mxfp {
                axis: 1,
                block_size: 32,
                scale_buffer: 1,
            },
            codes: codes(64, 256, &any),
            scales: e8m0(2),
            zero_points: None,
        },
        Quantized {
            name: "mx_i4",
            t: ElementType::Int4,
            shape: vec![2, 32],
            scheme: Scheme::Mxfp {
                axis: 1,
                block_size: 16,
                scale_buffer: 1,
            },
            codes: codes(64, 16, &any),
            scales: e8m0(4),
            zero_points: None,
        },
        Quantized {
            name: "pc_i4",
            t: ElementType::Int4,
            shape: vec![5, 7],
            scheme: Scheme::PerChannel {
                axis: 1,
                scale_buffer: 1,
                zero_point_buffer: Some(2),
            },
            codes: codes(35, 16, &any),
            scales: f32s(&ramp(7, 0.5)),
            zero_points: Some(zps(7, -8, 16)),
        },
        Quantized {
            name: "pt_u4",
            t: ElementType::UInt4,
            shape: vec![3, 5],
            scheme: Scheme::PerTensor {
                scale: 0.25,
                zero_point: 8,
            },
            codes: codes(15, 16, &any),
            scales: Vec::new(),
            zero_points: None,
        },
    ];
    qs.iter().map(Quantized::tensor).collect()
}

fn f32_to_f16(x: f32) -> u16 {
    // Normal numbers with at most 11 significant bits (what the fixtures
    // use): exact.
    if x == 0.0 {
        return 0;
    }
    let b = x.to_bits();
    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
    let m = (b >> 13) & 0x3ff;
    assert!(
        e > 0 && e < 31 && b & 0x1fff == 0,
        "{x} is not exact in float16"
    );
    ((b >> 31) << 15 | (e as u32) << 10 | m) as u16
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
            // As f64: the exact value of the f32, which the page's JSON
            // numbers carry too.
            .map(|(s, lo, hi)| format!("[{s},{},{}]", f64::from(*lo), f64::from(*hi)))
            .collect();
        let _ = write!(
            m,
            "{}{{\"name\":{},\"type\":\"{}\",\"quant\":\"{}\",\"shape\":[{}],\"draws\":[{}]}}",
            if i > 0 { "," } else { "" },
            quote(name),
            view.element_type().name(),
            view.quantization().map_or("none", |q| q.scheme.name()),
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
    let qs = quantized()?;
    let qnamed: Vec<(String, &T)> = qs.iter().map(|t| (t.name.to_owned(), t)).collect();
    write_file(&out.join("quant.hrry"), &qs)?;
    m.push(',');
    entry(&mut m, "quant.hrry", "file", &qnamed, None);
    std::fs::write(out.join("quant.hrrs"), write_stream(&qs)?)?;
    let qorder: Vec<(String, &T)> = qs
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("#{i}"), t))
        .collect();
    m.push(',');
    entry(&mut m, "quant.hrrs", "stream", &qorder, None);
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

#[cfg(test)]
mod tests {
    use super::*;
    use hurray_viewer::quant::{cpu_min_max, draw_plan, window};

    /// The viewer's CPU path (the plan, the window's reads, its decoder)
    /// gives the min/max this file's spec oracle wrote, for every scheme.
    #[test]
    fn the_viewer_cpu_path_agrees_with_the_spec_oracle() {
        let ts = quantized().unwrap();
        assert_eq!(ts.len(), 15);
        for t in &ts {
            let v = TensorView::parse(&t.desc).unwrap();
            let plan = draw_plan(&v).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            for &(slice, lo, hi) in &t.draws {
                let w = window(&plan, slice, plan.rows, plan.cols).unwrap();
                let mut data = Vec::new();
                for &(off, len) in &w.reads {
                    data.extend_from_slice(&t.buffers[0][off as usize..(off + len) as usize]);
                }
                let param = |r: Option<(u32, u64, u64)>| {
                    r.map_or(Vec::new(), |(b, off, len)| {
                        t.buffers[b as usize][off as usize..(off + len) as usize].to_vec()
                    })
                };
                let (s, z) = (
                    param(w.scale_read(&plan.quant)),
                    param(w.zero_point_read(&plan.quant)),
                );
                let got = cpu_min_max(&plan, &w, &data, &s, &z);
                assert_eq!(got, Some((lo, hi)), "{}[{slice}]", t.name);
                assert!(lo < hi, "{}: a flat fixture tests nothing", t.name);
            }
        }
    }
}
