//! `docs/spec/stream.md`: one test per MUST, named after its identifier,
//! over streams assembled field by field (`common::Desc`, never the
//! crate's encoder), plus the split-invariance property.

mod common;

use common::{Desc, composite, cpu, entry, lay, member, ty};
use hurray_core::stream::{
    Event, Phase, StreamDecoder, StreamError, StreamErrorKind as K, StreamLimits, StreamWriter,
    WriteError,
};
use hurray_core::{CompositeErrorKind, DescriptorErrorKind, TensorView};
use proptest::prelude::*;

/// An event with its borrows copied out (`Data` merged per buffer when
/// `merge` is set, which makes the events independent of the split).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Descriptor(Vec<u8>),
    Data {
        buffer: u32,
        offset: u64,
        bytes: Vec<u8>,
    },
    TensorEnd,
    CompositeEnd(u32),
}

fn push(out: &mut Vec<Ev>, ev: Event<'_, '_>) {
    match ev {
        Event::NeedMore => unreachable!(),
        Event::Descriptor(v) => out.push(Ev::Descriptor(v.as_bytes().to_vec())),
        Event::Data {
            buffer,
            offset,
            bytes,
        } => {
            assert!(!bytes.is_empty(), "empty Data event");
            if let Some(Ev::Data {
                buffer: b,
                offset: o,
                bytes: prev,
            }) = out.last_mut()
            {
                if *b == buffer && *o + prev.len() as u64 == offset {
                    prev.extend_from_slice(bytes);
                    return;
                }
            }
            out.push(Ev::Data {
                buffer,
                offset,
                bytes: bytes.to_vec(),
            });
        }
        Event::TensorEnd => out.push(Ev::TensorEnd),
        Event::CompositeEnd { members } => out.push(Ev::CompositeEnd(members)),
        _ => unreachable!(),
    }
}

/// Feeds `stream` cut at `cuts` (sorted offsets), then ends it: the events
/// until the first error, and the verdict.
fn run_split(
    stream: &[u8],
    cuts: &[usize],
    limits: StreamLimits<'_>,
    scratch: usize,
) -> (Vec<Ev>, Result<(), StreamError>) {
    let mut desc = vec![0u8; 1024];
    let mut comp = vec![0u8; scratch];
    let mut dec = StreamDecoder::with_limits(&mut desc, &mut comp, limits);
    let mut out = Vec::new();
    let mut prev = 0;
    let mut bounds: Vec<usize> = cuts
        .iter()
        .copied()
        .filter(|&c| c <= stream.len())
        .collect();
    bounds.push(stream.len());
    for end in bounds {
        let mut input = &stream[prev..end.max(prev)];
        prev = end.max(prev);
        loop {
            // `ready` foretells exactly whether this call gives NeedMore.
            let ready = dec.ready(input);
            let result = dec.decode(input);
            assert_eq!(
                ready,
                !matches!(result, Ok((_, Event::NeedMore))),
                "ready() at stream byte {}",
                prev - input.len()
            );
            match result {
                Ok((used, Event::NeedMore)) => {
                    assert_eq!(used, input.len(), "NeedMore must take every byte");
                    break;
                }
                Ok((used, ev)) => {
                    input = &input[used..];
                    push(&mut out, ev);
                }
                Err(e) => return (out, Err(e)),
            }
        }
    }
    let end = dec.finish();
    (out, end)
}

fn run(stream: &[u8]) -> (Vec<Ev>, Result<(), StreamError>) {
    run_split(stream, &[], StreamLimits::DEFAULT, 4096)
}

/// The stream cut after every byte (every 13th under Miri, which runs each
/// decode call about a thousand times slower).
fn every_byte(stream: &[u8]) -> (Vec<Ev>, Result<(), StreamError>) {
    let cuts: Vec<usize> = (1..stream.len()).step_by(common::miri_step(13)).collect();
    run_split(stream, &cuts, StreamLimits::DEFAULT, 4096)
}

/// A float32 row-major tensor of `shape` with one CPU buffer.
fn dense(shape: &[u64]) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    Desc::dense(ty::F32, shape, n * 4).bytes()
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn head(rule: u8, op: u8, count: u32, shape: &[u64]) -> Vec<u8> {
    Desc::new(ty::F32, lay::COMPOSITE, shape)
        .layout(composite(rule, op, count))
        .bytes()
}

/// A partition member of `shape` at `offset` in `parent`.
fn part(shape: &[u64], parent: &[u64], offset: &[u64]) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    Desc::dense(ty::F32, shape, n * 4)
        .shard(parent, offset)
        .bytes()
}

const PARTITION: u8 = 1;
const OVERLAY: u8 = 2;
const GROUP: u8 = 3;

#[test]
fn st_frame_1_tensors_lie_back_to_back_without_padding() {
    let (a, b) = (dense(&[3, 4]), dense(&[2]));
    let (da, db) = (data(48, 1), data(8, 2));
    let stream = cat(&[&a, &da, &b, &db]);
    assert_eq!(stream.len(), a.len() + 48 + b.len() + 8); // nothing between
    let want = vec![
        Ev::Descriptor(a.clone()),
        Ev::Data {
            buffer: 0,
            offset: 0,
            bytes: da.clone(),
        },
        Ev::TensorEnd,
        Ev::Descriptor(b.clone()),
        Ev::Data {
            buffer: 0,
            offset: 0,
            bytes: db.clone(),
        },
        Ev::TensorEnd,
    ];
    assert_eq!(run(&stream), (want.clone(), Ok(())));
    assert_eq!(every_byte(&stream), (want, Ok(())));
    // One byte of padding after the data is read as the next descriptor.
    let padded = cat(&[&a, &da, &[0], &b, &db]);
    let (_, end) = run(&padded);
    assert_eq!(end.unwrap_err().offset(), (a.len() + 48) as u64);
}

#[test]
fn st_frame_2_buffers_follow_in_table_order_each_exactly_its_size() {
    // Two buffers (a sparse COO matrix: values then indices) and an empty one.
    let d = Desc::new(ty::F32, lay::ROW, &[0])
        .buffers(&[cpu(0)])
        .bytes();
    let coo = Desc::new(ty::F32, lay::COO, &[4, 4])
        .layout(common::coo(2, 0))
        .buffers(&[cpu(8), cpu(32)])
        .bytes();
    let (values, indices) = (data(8, 3), data(32, 4));
    let stream = cat(&[&d, &coo, &values, &indices]);
    let want = vec![
        Ev::Descriptor(d),
        Ev::TensorEnd,
        Ev::Descriptor(coo),
        Ev::Data {
            buffer: 0,
            offset: 0,
            bytes: values,
        },
        Ev::Data {
            buffer: 1,
            offset: 0,
            bytes: indices,
        },
        Ev::TensorEnd,
    ];
    assert_eq!(every_byte(&stream), (want, Ok(())));
}

#[test]
fn st_frame_3_an_empty_stream_is_valid() {
    assert_eq!(run(&[]), (vec![], Ok(())));
}

#[test]
fn st_desc_1_each_descriptor_is_validated_before_its_data() {
    let mut bad = dense(&[2]);
    let len = bad.len();
    bad[len - 1] = 0xAA; // reserved byte of the handle
    let stream = cat(&[&dense(&[1]), &data(4, 0), &bad, &data(8, 0)]);
    let (events, end) = every_byte(&stream);
    assert_eq!(events.len(), 3, "the first tensor only: {events:?}");
    let e = end.unwrap_err();
    let first = dense(&[1]).len() + 4;
    assert_eq!(e.tensor(), 1);
    assert_eq!(e.offset(), (first + len - 16) as u64); // the entry, stream-absolute
    assert!(
        matches!(e.kind(), K::Descriptor(d) if matches!(d.kind(), DescriptorErrorKind::Buffer { index: 0, .. }))
    );
    // Bad magic and an unknown major version are caught from the first bytes.
    let (_, end) = run(b"HRAY\x01\x00\x3d\x00\x00\x00");
    assert!(
        matches!(end.unwrap_err().kind(), K::Descriptor(d) if d.kind() == DescriptorErrorKind::BadMagic(*b"HRAY"))
    );
    let (_, end) = run(b"HRRY\x02\x00\x3d\x00\x00\x00");
    let e = end.unwrap_err();
    assert_eq!(e.offset(), 4);
    assert!(
        matches!(e.kind(), K::Descriptor(d) if d.kind() == DescriptorErrorKind::UnsupportedVersion { major: 2, minor: 0 })
    );
}

#[test]
fn st_desc_2_a_decoder_stays_failed() {
    let mut desc = [0u8; 128];
    let mut dec = StreamDecoder::new(&mut desc, &mut []);
    let e = dec.decode(b"XXXXXXXXXX").unwrap_err();
    assert_eq!(dec.decode(&dense(&[1])).unwrap_err(), e);
    assert_eq!(dec.finish().unwrap_err(), e);
    assert_eq!(dec.error(), Some(e));
}

#[test]
fn st_eof_1_the_end_is_accepted_only_between_tensors() {
    let t = cat(&[&dense(&[3, 4]), &data(48, 9)]);
    assert_eq!(run(&t).1, Ok(()));
    for cut in (1..t.len()).step_by(common::miri_step(5)) {
        let (_, end) = run(&t[..cut]);
        let e = end.unwrap_err();
        let inside = if cut < t.len() - 48 {
            Phase::Descriptor
        } else {
            Phase::Data
        };
        assert_eq!(e.kind(), K::UnexpectedEof { inside }, "cut at {cut}");
        assert_eq!(e.offset(), cut as u64);
    }
}

#[test]
fn st_comp_1_a_head_binds_the_next_members_and_checks_each_on_arrival() {
    let h = head(PARTITION, 0, 2, &[4, 4]);
    let l = part(&[4, 2], &[4, 4], &[0, 0]);
    let r = part(&[4, 2], &[4, 4], &[0, 2]);
    let (dl, dr) = (data(32, 5), data(32, 6));
    let stream = cat(&[&h, &l, &dl, &r, &dr]);
    let want = vec![
        Ev::Descriptor(h.clone()),
        Ev::TensorEnd,
        Ev::Descriptor(l.clone()),
        Ev::Data {
            buffer: 0,
            offset: 0,
            bytes: dl.clone(),
        },
        Ev::TensorEnd,
        Ev::Descriptor(r.clone()),
        Ev::Data {
            buffer: 0,
            offset: 0,
            bytes: dr.clone(),
        },
        Ev::TensorEnd,
        Ev::CompositeEnd(2),
    ];
    assert_eq!(every_byte(&stream), (want, Ok(())));
    // A member whose parent_shape is not the head's is refused on arrival,
    // before its data.
    let wrong = part(&[4, 2], &[4, 8], &[0, 2]);
    let stream = cat(&[&h, &l, &dl, &wrong, &dr]);
    let (events, end) = every_byte(&stream);
    assert_eq!(events.len(), 5);
    let e = end.unwrap_err();
    assert_eq!(e.offset(), (h.len() + l.len() + 32) as u64);
    assert!(
        matches!(e.kind(), K::Composite(c) if c.member == 1 && c.kind == CompositeErrorKind::ParentShapeMismatch)
    );
}

#[test]
fn st_comp_2_close_time_checks_run_at_the_last_member() {
    let h = head(PARTITION, 0, 2, &[4, 4]);
    let l = part(&[4, 2], &[4, 4], &[0, 0]);
    let small = part(&[2, 2], &[4, 4], &[0, 2]); // leaves a gap
    let stream = cat(&[&h, &l, &data(32, 0), &small, &data(16, 0)]);
    let (events, end) = every_byte(&stream);
    assert_eq!(events.last(), Some(&Ev::TensorEnd));
    let e = end.unwrap_err();
    assert_eq!(e.offset(), stream.len() as u64);
    assert!(matches!(e.kind(), K::Composite(c) if c.kind == CompositeErrorKind::CoverageGap));
    // Overlapping members are refused when the second arrives.
    let over = part(&[4, 2], &[4, 4], &[0, 1]);
    let (_, end) = run(&cat(&[&h, &l, &data(32, 0), &over, &data(32, 0)]));
    assert!(
        matches!(end.unwrap_err().kind(), K::Composite(c) if c.kind == CompositeErrorKind::Overlap { other: 0 })
    );
    // An overlay's base must come first.
    let oh = head(OVERLAY, 1, 1, &[2]);
    let corr = Desc::dense(ty::F32, &[2], 8)
        .shard(&[2], &[0])
        .member(member(0))
        .bytes();
    let (_, end) = run(&cat(&[&oh, &corr, &data(8, 0)]));
    assert!(
        matches!(end.unwrap_err().kind(), K::Composite(c) if matches!(c.kind, CompositeErrorKind::WrongRole { .. }))
    );
    let base = Desc::dense(ty::F32, &[2], 8)
        .shard(&[2], &[0])
        .member(member(1))
        .bytes();
    assert_eq!(run(&cat(&[&oh, &base, &data(8, 0)])).1, Ok(()));
}

#[test]
fn st_comp_3_a_torn_composite_is_rejected() {
    let h = head(GROUP, 0, 2, &[1]);
    let m = dense(&[1]);
    let stream = cat(&[&h, &m, &data(4, 0)]);
    let (events, end) = every_byte(&stream);
    assert_eq!(events.len(), 5);
    let e = end.unwrap_err();
    assert_eq!(e.offset(), stream.len() as u64);
    assert!(
        matches!(e.kind(), K::Composite(c) if c.kind == CompositeErrorKind::Torn { expected: 2, found: 1 })
    );
    // A head alone is torn too; with zero members it is complete at once.
    assert!(run(&h).1.is_err());
    let empty = head(GROUP, 0, 0, &[1]);
    assert_eq!(
        run(&empty),
        (
            vec![
                Ev::Descriptor(empty.clone()),
                Ev::TensorEnd,
                Ev::CompositeEnd(0)
            ],
            Ok(())
        )
    );
}

#[test]
fn st_comp_4_composites_nest_at_most_eight_deep() {
    let g = head(GROUP, 0, 1, &[1]);
    let leaf = cat(&[&dense(&[1]), &data(4, 0)]);
    let nest = |levels: usize| {
        let mut s = Vec::new();
        for _ in 0..levels {
            s.extend_from_slice(&g);
        }
        s.extend_from_slice(&leaf);
        s
    };
    let (events, end) = every_byte(&nest(8));
    assert_eq!(end, Ok(()));
    let closes = events
        .iter()
        .filter(|e| matches!(e, Ev::CompositeEnd(1)))
        .count();
    assert_eq!(closes, 8);
    let (_, end) = run(&nest(9));
    let e = end.unwrap_err();
    assert_eq!(e.offset(), (8 * g.len()) as u64);
    assert!(matches!(e.kind(), K::Composite(c) if c.kind == CompositeErrorKind::NestingTooDeep));
}

#[test]
fn st_comp_5_nothing_lies_between_a_head_and_its_first_member() {
    let h = head(GROUP, 0, 1, &[1]);
    let m = dense(&[1]);
    assert_eq!(run(&cat(&[&h, &m, &data(4, 0)])).1, Ok(()));
    // Padding to 8 (or to any alignment) after the head is not a descriptor.
    let pad = (8 - h.len() % 8) % 8 + 8;
    let padded = cat(&[&h, &vec![0u8; pad], &m, &data(4, 0)]);
    let e = run(&padded).1.unwrap_err();
    assert_eq!(e.offset(), h.len() as u64);
    assert!(
        matches!(e.kind(), K::Descriptor(d) if matches!(d.kind(), DescriptorErrorKind::BadMagic(_)))
    );
}

#[test]
fn st_limit_1_descriptor_length_is_checked_from_its_first_ten_bytes() {
    let t = dense(&[3, 4]);
    let limits = StreamLimits::DEFAULT.max_descriptor_len(60);
    // Ten bytes are enough to refuse it: nothing else is taken in.
    let (_, end) = run_split(&t[..10], &[], limits, 0);
    let e = end.unwrap_err();
    assert_eq!(
        e.kind(),
        K::DescriptorTooLong {
            length: 61,
            limit: 60
        }
    );
    assert_eq!(e.offset(), 6);
    // The descriptor buffer bounds it too.
    let mut small = [0u8; 32];
    let mut dec = StreamDecoder::new(&mut small, &mut []);
    let e = dec.decode(&t).unwrap_err();
    assert_eq!(
        e.kind(),
        K::DescriptorTooLong {
            length: 61,
            limit: 32
        }
    );
    // A length below the fixed header is the descriptor's own error.
    let (_, end) = run(b"HRRY\x01\x00\x13\x00\x00\x00");
    assert!(
        matches!(end.unwrap_err().kind(), K::Descriptor(d) if d.kind() == DescriptorErrorKind::LengthMismatch { declared: 19, consumed: 20 })
    );
}

#[test]
fn st_limit_2_buffer_and_total_sizes_are_checked_before_any_data() {
    let t = Desc::dense(ty::U8, &[1000], 1000).bytes();
    let limits = StreamLimits::DEFAULT.max_buffer_bytes(999);
    let (events, end) = run_split(&t, &[], limits, 0);
    assert!(events.is_empty());
    let e = end.unwrap_err();
    assert_eq!(
        e.kind(),
        K::BufferTooLarge {
            buffer: 0,
            size: 1000,
            limit: 999
        }
    );
    assert_eq!(e.offset(), (t.len() - 16) as u64);
    let total = (t.len() + 999) as u64;
    let (events, end) = run_split(&t, &[], StreamLimits::DEFAULT.max_total_bytes(total), 0);
    assert!(events.is_empty());
    assert_eq!(
        end.unwrap_err().kind(),
        K::TotalTooLarge {
            needed: total + 1,
            limit: total
        }
    );
    // A descriptor that alone passes the total is refused from its prefix.
    let (_, end) = run_split(&t, &[], StreamLimits::DEFAULT.max_total_bytes(20), 0);
    assert_eq!(
        end.unwrap_err().kind(),
        K::TotalTooLarge {
            needed: t.len() as u64,
            limit: 20
        }
    );
    // Exactly at the limits is fine.
    let ok = StreamLimits::DEFAULT
        .max_buffer_bytes(1000)
        .max_total_bytes(total + 1);
    let s = cat(&[&t, &data(1000, 0)]);
    assert_eq!(run_split(&s, &[], ok, 0).1, Ok(()));
}

#[test]
fn st_limit_3_scratch_for_partition_boxes_is_bounded() {
    let h = head(PARTITION, 0, 2, &[4, 4]);
    let l = part(&[4, 2], &[4, 4], &[0, 0]);
    let r = part(&[4, 2], &[4, 4], &[0, 2]);
    let s = cat(&[&h, &l, &data(32, 0), &r, &data(32, 0)]);
    // head shape 16 bytes + 2 boxes of 32: 80 bytes.
    assert_eq!(run_split(&s, &[], StreamLimits::DEFAULT, 80).1, Ok(()));
    let e = run_split(&s, &[], StreamLimits::DEFAULT, 79).1.unwrap_err();
    assert_eq!(
        e.kind(),
        K::ScratchTooSmall {
            needed: 80,
            available: 79
        }
    );
    let e = run_split(&s, &[], StreamLimits::DEFAULT, 8).1.unwrap_err();
    assert_eq!(
        e.kind(),
        K::ScratchTooSmall {
            needed: 16,
            available: 8
        }
    );
    // A group needs none.
    let g = cat(&[&head(GROUP, 0, 1, &[4, 4]), &dense(&[1]), &data(4, 0)]);
    assert_eq!(run_split(&g, &[], StreamLimits::DEFAULT, 0).1, Ok(()));
}

#[test]
fn st_sync_1_a_cross_machine_reader_refuses_device_sync_modes() {
    // A CUDA buffer with event sync (device 0x01, sync 0x01).
    let t = Desc::new(ty::F32, lay::ROW, &[2])
        .buffers(&[entry(8, 64, 1, 1, 0, 0)])
        .bytes();
    let s = cat(&[&t, &data(8, 0)]);
    assert_eq!(run(&s).1, Ok(()));
    let limits = StreamLimits::DEFAULT.require_producer_synced();
    let e = run_split(&s, &[], limits, 0).1.unwrap_err();
    assert_eq!(
        e.kind(),
        K::NotProducerSynced {
            buffer: 0,
            sync_mode: 1
        }
    );
    assert_eq!(e.offset(), (t.len() - 16 + 13) as u64);
}

#[test]
fn st_write_1_buffers_must_match_the_table() {
    let t = dense(&[3, 4]);
    let view = TensorView::parse(&t).unwrap();
    let mut out = Vec::new();
    let mut sink = embedded_sink(&mut out);
    let mut w = StreamWriter::new(&mut sink, &mut []);
    assert_eq!(
        w.write_tensor(&view, &[]),
        Err(WriteError::BufferCount {
            expected: 1,
            found: 0
        })
    );
    assert_eq!(
        w.write_tensor(&view, &[&[0; 47]]),
        Err(WriteError::BufferSize {
            buffer: 0,
            expected: 48,
            found: 47
        })
    );
    assert_eq!(w.position(), 0, "nothing written for a refused tensor");
    let d = data(48, 7);
    w.write_tensor(&view, &[&d]).unwrap();
    // In pieces: overrun and early end are refused.
    w.begin_tensor(&view).unwrap();
    w.write_data(&d[..40]).unwrap();
    assert_eq!(
        w.write_data(&d[..9]),
        Err(WriteError::DataOverrun {
            remaining: 8,
            found: 9
        })
    );
    assert_eq!(
        w.end_tensor(),
        Err(WriteError::DataIncomplete { remaining: 8 })
    );
    w.write_data(&d[40..]).unwrap();
    w.end_tensor().unwrap();
    w.finish().unwrap();
    assert_eq!(out, cat(&[&t, &d, &t, &d]));
    assert_eq!(run(&out).1, Ok(()));
}

#[test]
fn st_write_2_a_stream_does_not_end_inside_a_tensor_or_composite() {
    let h = head(GROUP, 0, 2, &[1]);
    let hv = TensorView::parse(&h).unwrap();
    let m = dense(&[1]);
    let mv = TensorView::parse(&m).unwrap();
    let mut out = Vec::new();
    let mut sink = embedded_sink(&mut out);
    let mut w = StreamWriter::new(&mut sink, &mut []);
    w.write_tensor(&hv, &[]).unwrap();
    w.write_tensor(&mv, &[&[0; 4]]).unwrap();
    assert!(
        matches!(w.finish(), Err(WriteError::Composite(c)) if c.kind == CompositeErrorKind::Torn { expected: 2, found: 1 })
    );
    w.begin_tensor(&mv).unwrap();
    assert_eq!(w.finish(), Err(WriteError::DataIncomplete { remaining: 4 }));
    w.write_data(&[0; 4]).unwrap();
    w.end_tensor().unwrap();
    w.finish().unwrap();
    // A partition member that breaks the rules is refused before a byte of it.
    let ph = head(PARTITION, 0, 1, &[4]);
    let bad = part(&[2], &[8], &[0]);
    let mut scratch = [0u8; 64];
    let mut w = StreamWriter::new(&mut sink, &mut scratch);
    w.write_tensor(&TensorView::parse(&ph).unwrap(), &[])
        .unwrap();
    let before = w.position();
    let r = w.write_tensor(&TensorView::parse(&bad).unwrap(), &[&[0; 8]]);
    assert!(
        matches!(r, Err(WriteError::Composite(c)) if c.kind == CompositeErrorKind::ParentShapeMismatch)
    );
    assert_eq!(w.position(), before);
}

/// A growing byte sink for tests.
struct VecSink<'a>(&'a mut Vec<u8>);

impl embedded_io::ErrorType for VecSink<'_> {
    type Error = core::convert::Infallible;
}

impl embedded_io::Write for VecSink<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        // At most 5 bytes a call: the writer must loop.
        let n = buf.len().min(5);
        self.0.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

fn embedded_sink(v: &mut Vec<u8>) -> VecSink<'_> {
    VecSink(v)
}

#[test]
fn st_write_3_a_full_sink_is_an_error_not_a_panic() {
    let t = dense(&[3, 4]);
    let view = TensorView::parse(&t).unwrap();
    let mut out = [0u8; 70];
    let mut sink = &mut out[..];
    let mut w = StreamWriter::new(&mut sink, &mut []);
    let r = w.write_tensor(&view, &[&[0; 48]]);
    assert!(matches!(r, Err(WriteError::Sink(_))), "{r:?}");
}

/// A stream with a bit of everything: plain tensors, an empty one, a
/// nested composite (a group holding a partition), a multi-buffer tensor.
fn sample() -> Vec<u8> {
    let g = head(GROUP, 0, 2, &[1]);
    let h = head(PARTITION, 0, 2, &[4, 4]);
    let l = part(&[4, 2], &[4, 4], &[0, 0]);
    let r = part(&[4, 2], &[4, 4], &[0, 2]);
    let coo = Desc::new(ty::F32, lay::COO, &[4, 4])
        .layout(common::coo(2, 0))
        .buffers(&[cpu(8), cpu(32)])
        .bytes();
    let empty = Desc::new(ty::F32, lay::ROW, &[0])
        .buffers(&[cpu(0)])
        .bytes();
    cat(&[
        &dense(&[3]),
        &data(12, 1),
        &g,
        &h,
        &l,
        &data(32, 2),
        &r,
        &data(32, 3),
        &empty,
        &coo,
        &data(8, 4),
        &data(32, 5),
    ])
}

#[test]
fn st_split_1_any_split_gives_the_same_events() {
    let s = sample();
    let whole = run(&s);
    assert_eq!(whole.1, Ok(()));
    assert_eq!(
        whole
            .0
            .iter()
            .filter(|e| matches!(e, Ev::CompositeEnd(_)))
            .count(),
        2
    );
    assert_eq!(every_byte(&s), whole);
    // And the same error at the same offset for a broken stream, cut anywhere.
    let mut broken = s.clone();
    broken[100] ^= 0xFF;
    let whole = run(&broken);
    assert!(whole.1.is_err());
    assert_eq!(every_byte(&broken), whole);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 1 } else { 256 }))]

    #[test]
    fn random_splits_give_the_same_events(cuts in proptest::collection::vec(0usize..400, 0..12)) {
        let s = sample();
        let mut cuts = cuts;
        cuts.sort_unstable();
        prop_assert_eq!(run_split(&s, &cuts, StreamLimits::DEFAULT, 4096), run(&s));
    }

    #[test]
    fn random_bytes_never_panic_and_split_alike(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        flip in 0usize..400,
        cuts in proptest::collection::vec(0usize..400, 0..6),
    ) {
        // Hostile bytes behind a valid start, and a valid stream with one byte flipped.
        let mut s = sample();
        if flip < s.len() { s[flip] ^= 0x5A; }
        s.extend_from_slice(&bytes);
        let mut cuts = cuts;
        cuts.sort_unstable();
        prop_assert_eq!(run_split(&s, &cuts, StreamLimits::DEFAULT, 4096), run(&s));
        let mut h = b"HRRY\x01\x00".to_vec();
        h.extend_from_slice(&bytes);
        prop_assert_eq!(run_split(&h, &cuts, StreamLimits::DEFAULT, 4096), run(&h));
    }
}

#[test]
fn st_eof_1_the_end_right_after_a_descriptor_event() {
    // `finish` straight after the Descriptor event of a tensor without data
    // (a group head of 0 members, an empty tensor) is a clean end; after
    // one with data still owed it is not.
    for (t, ok) in [
        (head(GROUP, 0, 0, &[1]), true),
        (
            Desc::new(ty::F32, lay::ROW, &[0])
                .buffers(&[cpu(0)])
                .bytes(),
            true,
        ),
        (dense(&[2]), false),
    ] {
        let mut desc = [0u8; 256];
        let mut dec = StreamDecoder::new(&mut desc, &mut []);
        let (used, ev) = dec.decode(&t).unwrap();
        assert_eq!(used, t.len());
        assert!(matches!(ev, Event::Descriptor(_)));
        assert_eq!(dec.finish().is_ok(), ok, "{t:02x?}");
    }
}

#[test]
fn an_accepted_stream_is_written_back_to_the_same_bytes() {
    // The writer, fed the decoder's events (data in the pieces they came
    // in), reproduces the stream byte for byte.
    let s = sample();
    let (events, end) = run_split(&s, &[5, 77, 78, 200, 301], StreamLimits::DEFAULT, 4096);
    end.unwrap();
    let mut out = Vec::new();
    let mut sink = embedded_sink(&mut out);
    let mut scratch = [0u8; 256];
    let mut w = StreamWriter::new(&mut sink, &mut scratch);
    for ev in &events {
        match ev {
            Ev::Descriptor(d) => w.begin_tensor(&TensorView::parse(d).unwrap()).unwrap(),
            Ev::Data { bytes, .. } => w.write_data(bytes).unwrap(),
            Ev::TensorEnd => w.end_tensor().unwrap(),
            Ev::CompositeEnd(_) => {}
        }
        if let Ev::CompositeEnd(_) = ev {
            assert!(w.depth() < 2);
        }
    }
    w.finish().unwrap();
    assert_eq!(out, s);
}
