//! The composites a stream has open, in a caller's scratch bytes.
//!
//! A stream reader holds one descriptor at a time, so it cannot keep
//! borrowing a composite head or its earlier members as
//! [`CompositeValidator`](crate::CompositeValidator) does. This stack keeps
//! what the rules of `crate::composite` need instead: per open composite
//! (at most [`MAX_COMPOSITE_DEPTH`] of them) its progress in a small fixed
//! array, and in the caller's scratch its head's shape (partition and
//! overlay) and its members' boxes (partition: `2 × rank` little-endian
//! `u64` each). The rules themselves are `crate::composite`'s
//! (`Progress::push`, `Progress::finish`); nothing here re-states them.
//!
//! Scratch is used as a stack: a nested composite's frame lies above its
//! parent's, and only the top frame grows. A frame that would not fit is a
//! typed error ([`Overflow::Scratch`]) before anything is written.

use zerocopy::FromBytes;
use zerocopy::little_endian::U64;

use crate::composite::{
    BoxStore, CompositeError, CompositeErrorKind, MAX_COMPOSITE_DEPTH, MemberBox, Progress,
};
use crate::descriptor::{Dims, TensorView};

/// One open composite.
#[derive(Debug, Clone, Copy)]
struct Frame {
    progress: Progress,
    /// Where its bytes start in the scratch.
    start: usize,
    /// The head's rank (member boxes have the same rank).
    rank: usize,
    /// Bytes of the head's shape kept (0 for a group).
    shape_len: usize,
    /// Boxes kept.
    boxes: u32,
}

/// Why the stack refused a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// A composite rule (nesting depth included).
    Rule(CompositeError),
    /// The scratch is too small: bytes needed and available.
    Scratch { needed: u64, available: u64 },
}

/// Bytes of one kept value.
const WORD: usize = 8;

/// The open composites of a stream (see the module documentation).
#[derive(Debug)]
pub(crate) struct OpenComposites {
    frames: [Option<Frame>; MAX_COMPOSITE_DEPTH as usize],
    depth: usize,
}

/// The top frame's view of its scratch, as the rules see it.
struct Store<'x> {
    /// The frame's bytes and everything free above them.
    bytes: &'x mut [u8],
    rank: usize,
    shape_len: usize,
    boxes: &'x mut u32,
    /// Set when a box did not fit: bytes needed, available.
    short: Option<(u64, u64)>,
}

/// Writes `values` little-endian into the 8-byte words of `slot` (as many
/// as both have; byte by byte, so no length can mismatch).
fn put_words(slot: &mut [u8], values: impl Iterator<Item = u64>) {
    for (chunk, v) in slot.chunks_exact_mut(WORD).zip(values) {
        for (d, b) in chunk.iter_mut().zip(v.to_le_bytes()) {
            *d = b;
        }
    }
}

fn dims(bytes: &[u8]) -> Dims<'_> {
    // Any whole number of 8-byte words is a `[U64]` (unaligned): the
    // callers pass exact multiples, and an error can only give an empty run.
    Dims::new(<[U64]>::ref_from_bytes(bytes).unwrap_or_default())
}

impl Store<'_> {
    const fn box_len(&self) -> usize {
        self.rank.saturating_mul(2 * WORD)
    }

    /// Where box `i` lies in the frame's bytes (after the head's shape).
    fn box_at(&self, i: u32) -> Option<core::ops::Range<usize>> {
        let len = self.box_len();
        let at = usize::try_from(i).ok()?.checked_mul(len)?;
        let at = at.checked_add(self.shape_len)?;
        Some(at..at.checked_add(len)?)
    }

    fn kept(&self, i: u32) -> Option<(Dims<'_>, Dims<'_>)> {
        let b = self.bytes.get(self.box_at(i)?)?;
        let (o, s) = b.split_at_checked(self.rank.checked_mul(WORD)?)?;
        Some((dims(o), dims(s)))
    }
}

impl<'m> BoxStore<'m> for Store<'_> {
    fn head_shape(&self) -> Dims<'_> {
        dims(self.bytes.get(..self.shape_len).unwrap_or_default())
    }

    fn find_overlap(&self, b: &MemberBox<'_>) -> Option<u32> {
        (0..*self.boxes).find(|&i| {
            self.kept(i)
                .is_some_and(|(offset, shape)| MemberBox { offset, shape }.overlaps(b))
        })
    }

    fn keep(&mut self, b: MemberBox<'m>) -> Result<(), u32> {
        let at = self.box_at(*self.boxes);
        let Some(slot) = at.clone().and_then(|r| self.bytes.get_mut(r)) else {
            let needed = at.map_or(u64::MAX, |r| r.end as u64);
            self.short = Some((needed, self.bytes.len() as u64));
            return Err(*self.boxes);
        };
        put_words(slot, b.offset.iter().chain(b.shape.iter()));
        *self.boxes = self.boxes.saturating_add(1);
        Ok(())
    }
}

impl OpenComposites {
    /// No composite open. Every method that keeps or reads heads' shapes
    /// and member boxes takes the caller's scratch, always the same bytes.
    pub(crate) const fn new() -> Self {
        Self {
            frames: [None; MAX_COMPOSITE_DEPTH as usize],
            depth: 0,
        }
    }

    /// Composites open (0 at top level).
    pub(crate) const fn depth(&self) -> usize {
        self.depth
    }

    fn top(&self) -> Option<Frame> {
        self.frames
            .get(self.depth.checked_sub(1)?)
            .copied()
            .flatten()
    }

    /// Checks `view` as the next member of the innermost open composite
    /// (if any), then, when it is a head, opens a composite for it.
    pub(crate) fn push(
        &mut self,
        scratch: &mut [u8],
        view: &TensorView<'_>,
    ) -> Result<(), Overflow> {
        // The common case, a tensor outside any composite that is no head:
        // nothing to check or keep.
        if self.depth == 0 && view.header().layout_tag != crate::layout::tag::COMPOSITE {
            return Ok(());
        }
        if let Some(mut f) = self.top() {
            let (_, above) = scratch.split_at_mut(f.start.min(scratch.len()));
            let mut store = Store {
                bytes: above,
                rank: f.rank,
                shape_len: f.shape_len,
                boxes: &mut f.boxes,
                short: None,
            };
            let r = f.progress.push(view, &mut store);
            let short = store.short;
            if let Err(e) = r {
                return Err(match (short, e.kind) {
                    (Some((needed, _)), CompositeErrorKind::CapacityExceeded { .. }) => {
                        Overflow::Scratch {
                            needed: needed.saturating_add(f.start as u64),
                            available: scratch.len() as u64,
                        }
                    }
                    _ => Overflow::Rule(e),
                });
            }
            if let Some(slot) = self.frames.get_mut(self.depth.saturating_sub(1)) {
                *slot = Some(f);
            }
        }
        let Ok(progress) = Progress::new(view) else {
            return Ok(()); // Not a head: nothing to open.
        };
        let index = self
            .top()
            .map_or(u32::MAX, |f| f.progress.seen().saturating_sub(1));
        if self.depth >= MAX_COMPOSITE_DEPTH as usize {
            let kind = CompositeErrorKind::NestingTooDeep;
            return Err(Overflow::Rule(CompositeError::at(index, kind)));
        }
        let start = self.top().map_or(0, |f| self.end_of(&f));
        let rank = view.shape().len();
        let shape_len = if progress.needs_head_shape() {
            rank.saturating_mul(WORD)
        } else {
            0
        };
        let end = start.saturating_add(shape_len);
        let Some(slot) = scratch.get_mut(start..end) else {
            return Err(Overflow::Scratch {
                needed: end as u64,
                available: scratch.len() as u64,
            });
        };
        put_words(slot, view.shape().iter());
        if let Some(f) = self.frames.get_mut(self.depth) {
            *f = Some(Frame {
                progress,
                start,
                rank,
                shape_len,
                boxes: 0,
            });
            self.depth = self.depth.saturating_add(1);
        }
        Ok(())
    }

    /// Where a frame's bytes end.
    fn end_of(&self, f: &Frame) -> usize {
        let boxes = usize::try_from(f.boxes).unwrap_or(usize::MAX);
        f.start
            .saturating_add(f.shape_len)
            .saturating_add(boxes.saturating_mul(f.rank.saturating_mul(2 * WORD)))
    }

    /// Whether the innermost open composite has all its members (and the
    /// last of them has been finished by the caller).
    pub(crate) fn top_is_complete(&self) -> bool {
        self.top().is_some_and(|f| f.progress.remaining() == 0)
    }

    /// Runs the close-time checks of the innermost composite and closes it;
    /// returns its member count.
    pub(crate) fn close_top(&mut self, scratch: &[u8]) -> Result<u32, CompositeError> {
        let Some(f) = self.top() else {
            return Ok(0);
        };
        let end = f.start.saturating_add(f.shape_len);
        let shape = dims(scratch.get(f.start..end).unwrap_or_default());
        f.progress.finish(shape)?;
        self.depth = self.depth.saturating_sub(1);
        if let Some(slot) = self.frames.get_mut(self.depth) {
            *slot = None;
        }
        Ok(f.progress.head().member_count)
    }

    /// The verdict on the innermost open composite at the end of the
    /// stream: it is torn.
    pub(crate) fn torn(&self) -> Option<CompositeError> {
        Some(self.top()?.progress.torn())
    }
}
