//! Any bytes through the stream decoder, fed whole and in chunks cut where
//! the input says: never a panic, and the same events (data joined per
//! buffer) and the same verdict — error kind, stream offset, tensor —
//! whatever the cuts; `ready` foretells every `NeedMore`; the borrow-free
//! `step` path agrees with `decode`;
//! and a stream the decoder accepts is written back by our writer to the
//! same bytes.
//!
//! Input: byte 0 is a cut count `k` (mod 16), then `k` little-endian
//! `u16` cut offsets, then the stream.
#![no_main]

use hurray_core::TensorView;
use hurray_core::stream::{Event, Step, StreamDecoder, StreamError, StreamWriter};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Descriptor(Vec<u8>),
    Data(u32, u64, Vec<u8>),
    TensorEnd,
    CompositeEnd(u32),
}

fn record(out: &mut Vec<Ev>, ev: Ev) {
    if let Ev::Data(b, o, bytes) = &ev {
        assert!(!bytes.is_empty(), "an empty Data event");
        if let Some(Ev::Data(pb, po, prev)) = out.last_mut() {
            if pb == b && *po + prev.len() as u64 == *o {
                prev.extend_from_slice(bytes);
                return;
            }
        }
    }
    out.push(ev);
}

fn chunks<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut prev = 0;
    for &c in cuts.iter().chain([stream.len()].iter()) {
        let c = c.clamp(prev, stream.len());
        out.push(&stream[prev..c]);
        prev = c;
    }
    out
}

/// Through `decode` (borrowed events).
fn run(stream: &[u8], cuts: &[usize]) -> (Vec<Ev>, Result<(), StreamError>) {
    let (mut desc, mut scratch) = ([0u8; 2048], [0u8; 512]);
    let mut dec = StreamDecoder::new(&mut desc, &mut scratch);
    let mut out = Vec::new();
    for chunk in chunks(stream, cuts) {
        let mut input = chunk;
        loop {
            let ready = dec.ready(input);
            let result = dec.decode(input);
            assert_eq!(
                ready,
                !matches!(result, Ok((_, Event::NeedMore))),
                "ready() was wrong"
            );
            match result {
                Ok((used, Event::NeedMore)) => {
                    assert_eq!(used, input.len());
                    break;
                }
                Ok((used, event)) => {
                    input = &input[used..];
                    let ev = match event {
                        Event::Descriptor(v) => Ev::Descriptor(v.as_bytes().to_vec()),
                        Event::Data {
                            buffer,
                            offset,
                            bytes,
                        } => Ev::Data(buffer, offset, bytes.to_vec()),
                        Event::TensorEnd => Ev::TensorEnd,
                        Event::CompositeEnd { members } => Ev::CompositeEnd(members),
                        _ => unreachable!(),
                    };
                    record(&mut out, ev);
                }
                Err(e) => return (out, Err(e)),
            }
        }
    }
    let end = dec.finish();
    (out, end)
}

/// Through `step` and `current` (the std shells' path).
fn run_steps(stream: &[u8], cuts: &[usize]) -> (Vec<Ev>, Result<(), StreamError>) {
    let (mut desc, mut scratch) = ([0u8; 2048], [0u8; 512]);
    let mut dec = StreamDecoder::new(&mut desc, &mut scratch);
    let mut out = Vec::new();
    for chunk in chunks(stream, cuts) {
        let mut input = chunk;
        loop {
            match dec.step(input) {
                Ok((_, Step::NeedMore)) => break,
                Ok((used, step)) => {
                    let ev = match step {
                        Step::Descriptor => Ev::Descriptor(
                            dec.current()
                                .expect("a validated descriptor")
                                .as_bytes()
                                .to_vec(),
                        ),
                        Step::Data {
                            buffer,
                            offset,
                            len,
                        } => Ev::Data(buffer, offset, input[used - len..used].to_vec()),
                        Step::TensorEnd => Ev::TensorEnd,
                        Step::CompositeEnd { members } => Ev::CompositeEnd(members),
                        _ => unreachable!(),
                    };
                    input = &input[used..];
                    record(&mut out, ev);
                }
                Err(e) => return (out, Err(e)),
            }
        }
    }
    let end = dec.finish();
    (out, end)
}

/// Our writer over the events of an accepted stream.
fn rewrite(events: &[Ev]) -> Vec<u8> {
    let mut out = vec![0u8; 1 << 17];
    let mut sink = &mut out[..];
    let mut scratch = [0u8; 512];
    let mut w = StreamWriter::new(&mut sink, &mut scratch);
    for ev in events {
        match ev {
            Ev::Descriptor(d) => w
                .begin_tensor(&TensorView::parse(d).expect("accepted descriptors parse"))
                .expect("the writer takes what the decoder accepted"),
            Ev::Data(_, _, bytes) => w.write_data(bytes).expect("data fits"),
            Ev::TensorEnd => w.end_tensor().expect("the tensor is complete"),
            Ev::CompositeEnd(_) => {}
        }
    }
    w.finish().expect("an accepted stream ends cleanly");
    let n = w.position() as usize;
    out.truncate(n);
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&k, rest)) = data.split_first() else {
        return;
    };
    let k = usize::from(k % 16);
    if rest.len() < 2 * k {
        return;
    }
    let (cut_bytes, stream) = rest.split_at(2 * k);
    let mut cuts: Vec<usize> = cut_bytes
        .chunks_exact(2)
        .map(|c| usize::from(u16::from_le_bytes([c[0], c[1]])) % (stream.len() + 1))
        .collect();
    cuts.sort_unstable();

    let whole = run(stream, &[]);
    assert_eq!(run(stream, &cuts), whole, "a split changed the events");
    let bytes: Vec<usize> = (1..stream.len().min(300)).collect();
    if stream.len() <= 300 {
        assert_eq!(
            run(stream, &bytes),
            whole,
            "byte by byte changed the events"
        );
    }
    assert_eq!(run_steps(stream, &cuts), whole, "step and decode disagree");
    if whole.1.is_ok() && stream.len() <= 1 << 17 {
        assert_eq!(
            rewrite(&whole.0),
            stream,
            "re-writing an accepted stream changed it"
        );
    }
});
