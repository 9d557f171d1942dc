//! Streams and files on the firmware: the core's stream writer and
//! decoder, and its file writer and view, with no allocator.
//!
//! 1. Writes a stream of five tensors — a float32 vector, a group composite
//!    of two members (uint8, int16), a float32 matrix — with
//!    [`StreamWriter`] into RAM, and sends it to the host through
//!    semihosting as `target/firmware-stream.hrrys` (CI reads it there with
//!    the std reader and `hurray verify`).
//! 2. Decodes it with [`StreamDecoder`] (a 256-byte descriptor buffer, 64
//!    bytes of composite scratch) whole, byte by byte and in pseudo-random
//!    chunks, and checks every event.
//! 3. Writes the same tensors as a file ([`FileWriter`], 4 KiB alignment,
//!    sorted index) into a static buffer, sends it as
//!    `target/firmware-file.hrry`, and opens it with [`FileView`].
//! 4. Measures the stream decoder's and the file view's stack high-water
//!    mark and instructions (as the descriptor's, `docs/perf.md`).

use core::hint::black_box;

use hurray_core::file::{FileView, FileWriter, IndexEntry, WriterOptions};
use hurray_core::layout::{CombineOp, CompositeHead, CompositionRule};
use hurray_core::stream::{Event, StreamDecoder, StreamWriter};
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, LayoutSpec, SyncMode, TensorDescriptor, TensorView,
};

use crate::{Tally, count, stack};

/// Tensors in the stream and the file.
pub const TENSORS: usize = 5;
/// The stream's capacity.
pub const STREAM_CAP: usize = 1024;
/// The file's capacity: the writer pads each tensor's descriptor and its data
/// to the 4 KiB alignment, so each tensor with data takes about 8 KiB.
pub const FILE_CAP: usize = 40 * 1024;
/// Names in the file.
const NAMES: [&str; TENSORS] = ["bias", "pair", "pair.codes", "pair.scale", "weights"];

const DATA0: [u8; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
const DATA2: [u8; 8] = [200, 201, 202, 203, 204, 205, 206, 207];
const DATA3: [u8; 12] = [0, 31, 62, 93, 124, 155, 186, 217, 248, 23, 54, 85];
const DATA4: [u8; 16] = [9; 16];
/// Each tensor's one buffer (none for the composite head).
const DATA: [&[u8]; TENSORS] = [&DATA0, &[], &DATA2, &DATA3, &DATA4];

/// Encoded descriptors.
struct Descriptors {
    bytes: [[u8; 128]; TENSORS],
    len: [usize; TENSORS],
}

fn cpu(size: u64) -> Option<BufferHandle> {
    BufferHandle::new(size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).ok()
}

/// The five descriptors, encoded (None if the encoder refused one: a bug).
fn descriptors() -> Option<Descriptors> {
    let mut d = Descriptors {
        bytes: [[0; 128]; TENSORS],
        len: [0; TENSORS],
    };
    let b16 = [cpu(16)?];
    let b8 = [cpu(8)?];
    let b12 = [cpu(12)?];
    let head = LayoutSpec::Composite(CompositeHead {
        rule: CompositionRule::Group,
        combine_op: CombineOp::None,
        member_count: 2,
    });
    let specs = [
        TensorDescriptor::row_major(ElementType::Float32, &[4], &b16),
        TensorDescriptor::new(ElementType::Float32, &[2], head, &[]),
        TensorDescriptor::row_major(ElementType::UInt8, &[8], &b8),
        TensorDescriptor::row_major(ElementType::Int16, &[2, 3], &b12),
        TensorDescriptor::row_major(ElementType::Float32, &[2, 2], &b16),
    ];
    for ((spec, out), len) in specs.iter().zip(&mut d.bytes).zip(&mut d.len) {
        *len = spec.encode(out).ok()?;
    }
    Some(d)
}

impl Descriptors {
    fn view(&self, i: usize) -> Option<TensorView<'_>> {
        let bytes = self.bytes.get(i)?.get(..*self.len.get(i)?)?;
        TensorView::parse(bytes).ok()
    }
}

/// Writes the stream; its length.
fn write_stream(d: &Descriptors, out: &mut [u8]) -> Option<usize> {
    let mut sink = &mut *out;
    let mut w = StreamWriter::new(&mut sink, [0u8; 64]);
    for (i, data) in DATA.iter().enumerate() {
        let view = d.view(i)?;
        let bufs: &[&[u8]] = if data.is_empty() { &[] } else { &[data] };
        w.write_tensor(&view, bufs).ok()?;
    }
    w.finish().ok()?;
    usize::try_from(w.position()).ok()
}

/// What decoding a stream found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub struct Summary {
    /// Descriptors.
    pub tensors: u32,
    /// Tensor ends.
    pub ends: u32,
    /// Composite ends.
    pub composites: u32,
    /// Data bytes.
    pub data: u32,
    /// Data bytes that differ from what was written.
    pub wrong: u32,
}

/// Decodes `bytes` in chunks `next_len` picks; `None` on an error.
fn decode_stream(bytes: &[u8], mut next_len: impl FnMut(usize) -> usize) -> Option<Summary> {
    let mut dec = StreamDecoder::new([0u8; 256], [0u8; 64]);
    let mut s = Summary {
        tensors: 0,
        ends: 0,
        composites: 0,
        data: 0,
        wrong: 0,
    };
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = next_len(rest.len()).clamp(1, rest.len());
        let (mut chunk, tail) = rest.split_at(n);
        rest = tail;
        loop {
            let (used, ev) = dec.decode(chunk).ok()?;
            chunk = chunk.get(used..).unwrap_or_default();
            match ev {
                Event::NeedMore => break,
                Event::Descriptor(_) => s.tensors += 1,
                Event::Data { offset, bytes, .. } => {
                    let want = DATA
                        .get(s.tensors.saturating_sub(1) as usize)
                        .and_then(|d| d.get(offset as usize..offset as usize + bytes.len()));
                    if want != Some(bytes) {
                        s.wrong += 1;
                    }
                    s.data += bytes.len() as u32;
                }
                Event::TensorEnd => s.ends += 1,
                Event::CompositeEnd { .. } => s.composites += 1,
                _ => {}
            }
        }
    }
    dec.finish().ok()?;
    Some(s)
}

const EXPECTED: Summary = Summary {
    tensors: TENSORS as u32,
    ends: TENSORS as u32,
    composites: 1,
    data: 16 + 8 + 12 + 16,
    wrong: 0,
};

/// Writes the file; its length.
fn write_file(d: &Descriptors, out: &mut [u8]) -> Option<usize> {
    let cap = out.len();
    let mut index = [IndexEntry::default(); TENSORS];
    let options = WriterOptions {
        sorted_index: true,
        ..WriterOptions::default()
    };
    let mut w = FileWriter::new(&mut *out, options, &mut index)
        .inspect_err(|e| defmt::error!("file writer: {}", e))
        .ok()?;
    for (i, (name, data)) in NAMES.iter().zip(DATA).enumerate() {
        let view = d.view(i)?;
        let bufs: &[&[u8]] = if data.is_empty() { &[] } else { &[data] };
        w.write_tensor(name, &view, bufs)
            .inspect_err(|e| defmt::error!("file writer: {}: {}", name, e))
            .ok()?;
    }
    let rest = w
        .finish(&[])
        .inspect_err(|e| defmt::error!("file writer: finish: {}", e))
        .ok()?;
    Some(cap - rest.len())
}

/// Opens the file and checks every tensor's bytes.
fn open_file(bytes: &[u8]) -> bool {
    let Ok(view) = FileView::parse(bytes) else {
        return false;
    };
    view.len() as usize == TENSORS
        && NAMES.iter().zip(DATA).all(|(name, data)| {
            view.get(name).is_some_and(|t| {
                let mut bufs = t.buffers();
                match bufs.next() {
                    Some(b) => b == data && bufs.next().is_none(),
                    None => data.is_empty(),
                }
            })
        })
}

/// The probes the instruction counter runs (`fn(&'static [u8]) -> bool`).
fn probe_stream(bytes: &'static [u8]) -> bool {
    decode_stream(bytes, |rest| rest) == Some(EXPECTED)
}

fn probe_file(bytes: &'static [u8]) -> bool {
    FileView::parse(bytes).is_ok()
}

/// What the measurements found, for the summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Measured {
    /// Stack of a stream decode (whole input), bytes.
    pub stream_stack: usize,
    /// Stack of a file open (`FileView::parse`), bytes.
    pub file_stack: usize,
    /// Instructions of a stream decode of the five tensors.
    pub stream_insns: u32,
    /// Instructions of a file open of the five tensors.
    pub file_insns: u32,
}

/// Runs 1-4.
pub fn run(t: &mut Tally, counter: Option<&count::Counter>) -> Measured {
    let mut m = Measured::default();
    let Some(d) = descriptors() else {
        t.check(false, "containers: descriptors encode");
        return m;
    };
    // 'static buffers (for the instruction probes), taken once.
    let Some(stream) = cortex_m::singleton!(: [u8; STREAM_CAP] = [0; STREAM_CAP]) else {
        t.check(false, "containers: stream buffer");
        return m;
    };
    let Some(file) = cortex_m::singleton!(: [u8; FILE_CAP] = [0; FILE_CAP]) else {
        t.check(false, "containers: file buffer");
        return m;
    };

    // 1. The stream, written and sent to the host.
    let Some(len) = write_stream(&d, stream) else {
        t.check(false, "containers: stream writes");
        return m;
    };
    let stream: &'static [u8] = stream.get(..len).unwrap_or_default();
    let sent = semihosting::fs::write(c"target/firmware-stream.hrrys", stream).is_ok();
    t.check(sent, "containers: stream sent to the host");
    defmt::info!(
        "stream: {} tensors (a group composite of 2), {} bytes, sent as target/firmware-stream.hrrys: {}",
        TENSORS,
        len,
        sent
    );

    // 2. Decoded whole, byte by byte, in random chunks.
    let whole = decode_stream(black_box(stream), |rest| rest);
    t.check(whole == Some(EXPECTED), "containers: stream decodes whole");
    let bytewise = decode_stream(black_box(stream), |_| 1);
    t.check(
        bytewise == Some(EXPECTED),
        "containers: stream decodes byte by byte",
    );
    let mut random = true;
    for seed in 1..=8u32 {
        let mut x = seed.wrapping_mul(0x9E37_79B9);
        random &= decode_stream(stream, |_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 40) as usize + 1
        }) == Some(EXPECTED);
    }
    t.check(random, "containers: stream decodes in random chunks");
    // A cut inside the composite is refused at the end of the input.
    let cut = stream.get(..len / 2).unwrap_or_default();
    t.check(
        decode_stream(cut, |rest| rest).is_none(),
        "containers: a cut stream is refused",
    );
    defmt::info!(
        "stream: decoded {}; whole, byte by byte and in random chunks alike: {}",
        whole,
        whole == bytewise && random
    );

    // 3. The file, written, sent, opened.
    let Some(flen) = write_file(&d, file) else {
        t.check(false, "containers: file writes");
        return m;
    };
    let file: &'static [u8] = file.get(..flen).unwrap_or_default();
    let sent = semihosting::fs::write(c"target/firmware-file.hrry", file).is_ok();
    t.check(sent, "containers: file sent to the host");
    let opened = open_file(black_box(file));
    t.check(opened, "containers: file opens, every tensor's bytes");
    defmt::info!(
        "file: {} tensors, {} bytes, sent as target/firmware-file.hrry: {}, opened and read back: {}",
        TENSORS,
        flen,
        sent,
        opened
    );

    // 4. Stack and instructions.
    let (ok, used) = stack::measure(|| probe_stream(black_box(stream)));
    t.check(ok, "containers: stream decode (stack probe)");
    m.stream_stack = used;
    let (ok, used) = stack::measure(|| probe_file(black_box(file)));
    t.check(ok, "containers: file open (stack probe)");
    m.file_stack = used;
    if let Some(c) = counter {
        let (ok, n) = c.count(probe_stream, stream);
        let (_, again) = c.count(probe_stream, stream);
        t.check(ok && n == again, "containers: stream decode count");
        m.stream_insns = n;
        let (ok, n) = c.count(probe_file, file);
        let (_, again) = c.count(probe_file, file);
        t.check(ok && n == again, "containers: file open count");
        m.file_insns = n;
    }
    defmt::println!(
        "containers: stream decode ({} tensors, {} B) stack {} B, {} instructions; file open ({} tensors, {} B) stack {} B, {} instructions",
        TENSORS,
        len,
        m.stream_stack,
        m.stream_insns,
        TENSORS,
        flen,
        m.file_stack,
        m.file_insns
    );
    m
}
