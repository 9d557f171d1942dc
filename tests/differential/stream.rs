//! Our stream decoder held against the reference's `StreamReader`
//! (registry `hurray-io` 0.1.0, depended on as `reference_io`), over the
//! same bytes in memory. Shared, through `#[path]`, by
//! `tests/stream_cross.rs` and `fuzz/fuzz_targets/stream_differential.rs`;
//! the includer names the descriptor harness `differential`.
//!
//! # Contract
//!
//! [`stream_differ`] reads the bytes with both: ours (one chunk; the
//! descriptor buffer as long as the input, so no descriptor that can
//! complete is refused for room) and theirs (`next_item`, which validates
//! composites; its descriptor and buffer limits set to the input's length,
//! so a claimed size can make it allocate no more than the input — a
//! larger claim cannot complete either way).
//!
//! * Every tensor both finished must be equal: the descriptor field by
//!   field (`differential::same_values`) and every buffer byte for byte.
//! * Both accept: the same number of tensors — [`StreamVerdict::Agree`].
//! * Both reject: [`StreamVerdict::BothReject`].
//! * Only the reference accepts: our rejection must be a documented case
//!   ([`StreamStricter`], rows of the stream table of `docs/spec/README.md`):
//!   a descriptor the descriptor harness explains, or a composite nested
//!   deeper than the spec's 8 (the reference allows 64).
//! * Anything else is a [`Finding`].

use ::reference as theirs;
use hurray_core::stream::{Event, StreamDecoder, StreamError, StreamErrorKind};
use hurray_core::{CompositeErrorKind, TensorView};
use reference_io::stream::{StreamItem, StreamReader, StreamReaderOptions};

use crate::differential::{Finding, Stricter, Verdict, differ, same_values};

/// A tensor read whole: descriptor bytes and buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The descriptor's bytes.
    pub descriptor: Vec<u8>,
    /// Each buffer's bytes.
    pub buffers: Vec<Vec<u8>>,
}

/// A documented case where our stream reader rejects what the reference's
/// accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamStricter {
    /// A descriptor the descriptor harness explains.
    Descriptor(Stricter),
    /// Composites nested deeper than 8 (the reference's limit is 64).
    CompositeDepth,
}

/// What one input did to the two stream readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamVerdict {
    /// Both accept the same tensors (this many).
    Agree(usize),
    /// Both reject.
    BothReject,
    /// The reference accepts; we reject for a documented reason.
    Stricter(StreamStricter),
    /// Not given to the reference: a composite head announces more members
    /// than the input has bytes, and the reference reserves room for every
    /// announced member before reading one (`Vec::with_capacity`; a hostile
    /// count aborts it with an out-of-memory, found by `stream_differential`).
    /// Our decoder still reads the input (and must not panic).
    ReferenceUnsafe,
}

/// Whether every composite head the reference could decode in `bytes`
/// announces at most as many members as `bytes` has bytes (each member
/// takes at least one), so that its `Vec::with_capacity(member_count)` is
/// bounded by the input.
fn member_counts_fit(bytes: &[u8]) -> bool {
    (0..bytes.len())
        .filter(|&i| bytes[i..].starts_with(b"HRRY"))
        .all(|i| match theirs::TensorDescriptor::decode(&bytes[i..]) {
            Ok(d) => match &d.layout {
                theirs::LayoutDescriptor::Composite(c) => c.member_count as usize <= bytes.len(),
                _ => true,
            },
            Err(_) => true,
        })
}

/// Our decoder over `bytes` in one chunk: the tensors it finished and its
/// verdict.
pub fn ours(bytes: &[u8]) -> (Vec<Read>, Result<(), StreamError>) {
    let mut desc = vec![0u8; bytes.len().max(1)];
    let mut scratch = vec![0u8; 1 << 16];
    let mut dec = StreamDecoder::new(&mut desc[..], &mut scratch[..]);
    let mut out = Vec::new();
    let mut open: Option<Read> = None;
    let mut input = bytes;
    loop {
        match dec.decode(input) {
            Ok((_, Event::NeedMore)) => break,
            Ok((used, event)) => {
                input = &input[used..];
                match event {
                    Event::Descriptor(v) => {
                        open = Some(Read {
                            descriptor: v.as_bytes().to_vec(),
                            buffers: vec![Vec::new(); v.buffers().len()],
                        });
                    }
                    Event::Data { buffer, bytes, .. } => {
                        if let Some(r) = open.as_mut() {
                            r.buffers[buffer as usize].extend_from_slice(bytes);
                        }
                    }
                    Event::TensorEnd => out.extend(open.take()),
                    _ => {}
                }
            }
            Err(e) => return (out, Err(e)),
        }
    }
    let end = dec.finish();
    (out, end)
}

/// A tensor the reference read: its descriptor value and buffers.
pub type TheirRead = (theirs::TensorDescriptor, Vec<Vec<u8>>);

fn flatten(item: StreamItem, out: &mut Vec<TheirRead>) {
    match item {
        StreamItem::Tensor(t) => {
            out.push((t.descriptor, t.buffers.iter().map(|b| b.to_vec()).collect()))
        }
        StreamItem::Composite(c) => {
            out.push((c.head, Vec::new()));
            for m in c.members {
                flatten(m, out);
            }
        }
    }
}

/// The reference's reader over `bytes` (`next_item`, composites
/// validated), its sizes bounded by the input's length.
pub fn reference(bytes: &[u8]) -> (Vec<TheirRead>, Result<(), reference_io::Error>) {
    let options = StreamReaderOptions {
        max_descriptor_bytes: bytes.len() as u64,
        max_buffer_bytes: bytes.len() as u64,
        ..StreamReaderOptions::default()
    };
    let mut reader = StreamReader::with_options(bytes, options);
    let mut out = Vec::new();
    loop {
        match pollster::block_on(reader.next_item()) {
            Ok(None) => return (out, Ok(())),
            Ok(Some(item)) => flatten(item, &mut out),
            Err(e) => return (out, Err(e)),
        }
    }
}

/// Both readers over `bytes`.
///
/// # Errors
/// A [`Finding`] when they disagree in a way no documented case explains.
pub fn stream_differ(bytes: &[u8]) -> Result<StreamVerdict, Finding> {
    let (mine, my_end) = ours(bytes);
    if !member_counts_fit(bytes) {
        let _ = (mine, my_end);
        return Ok(StreamVerdict::ReferenceUnsafe);
    }
    let (their, their_end) = reference(bytes);
    for (i, (m, (t, tb))) in mine.iter().zip(&their).enumerate() {
        let view = TensorView::parse(&m.descriptor).map_err(|e| {
            Finding(format!(
                "tensor {i}: our own descriptor fails to parse: {e}"
            ))
        })?;
        same_values(&view, t).map_err(|e| Finding(format!("tensor {i}: {e}")))?;
        if &m.buffers != tb {
            return Err(Finding(format!("tensor {i}: the buffers' bytes differ")));
        }
    }
    match (my_end, their_end) {
        (Ok(()), Ok(())) if mine.len() == their.len() => Ok(StreamVerdict::Agree(mine.len())),
        (Ok(()), Ok(())) => Err(Finding(format!(
            "both accept, but we read {} tensors and the reference {}",
            mine.len(),
            their.len()
        ))),
        (Err(_), Err(_)) => Ok(StreamVerdict::BothReject),
        (Ok(()), Err(e)) => Err(Finding(format!(
            "we accept {} tensors; the reference rejects: {e:?}",
            mine.len()
        ))),
        (Err(e), Ok(())) => explain(bytes, e).ok_or_else(|| {
            Finding(format!(
                "the reference accepts {} tensors; we reject with {e} ({:?}), which no \
                 documented case explains",
                their.len(),
                e.kind()
            ))
        }),
    }
}

/// The documented case behind our rejection of a stream the reference
/// accepts, if there is one.
fn explain(bytes: &[u8], e: StreamError) -> Option<StreamVerdict> {
    match e.kind() {
        StreamErrorKind::Descriptor(d) => {
            // The descriptor at fault, cut from the stream by its own length.
            let start = usize::try_from(e.offset().checked_sub(u64::from(d.offset()))?).ok()?;
            let len = u32::from_le_bytes(bytes.get(start + 6..start + 10)?.try_into().ok()?);
            let one = bytes.get(start..start.checked_add(len as usize)?)?;
            match differ(one) {
                Ok(Verdict::Stricter(case, _)) => {
                    Some(StreamVerdict::Stricter(StreamStricter::Descriptor(case)))
                }
                _ => None,
            }
        }
        StreamErrorKind::Composite(c) if c.kind == CompositeErrorKind::NestingTooDeep => {
            Some(StreamVerdict::Stricter(StreamStricter::CompositeDepth))
        }
        _ => None,
    }
}
