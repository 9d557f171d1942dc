//! Rules that span a composite head and its members
//! (`docs/spec/layouts.md` § Composite).
//!
//! A composite head (layout `0x0B`) binds the next `member_count`
//! descriptors of a stream. [`TensorView::parse`](crate::TensorView::parse)
//! checks each descriptor alone; [`CompositeValidator`] checks the members
//! against their head as they arrive, in bounded memory (`N` member boxes,
//! a const generic), and reaches one verdict at the last member: the rules
//! of `docs/spec/layouts.md` § Composite members (`[LY-MEMBER-1]` to
//! `[LY-MEMBER-6]`: shards and parent shape, value type, overlay roles, a
//! partition's disjoint exact cover, torn and too-deep composites).
//!
//! [`read_composite`] walks a whole composite (nested composites included,
//! at most 8 levels deep) from a byte stream.
//!
//! ```
//! use hurray_core::{
//!     BufferHandle, CompositeValidator, DeviceTag, ElementType, LayoutSpec, TensorDescriptor,
//!     TensorView, layout::{CombineOp, CompositeHead, CompositionRule},
//! };
//!
//! let head = TensorDescriptor::new(
//!     ElementType::Float32,
//!     &[8, 8],
//!     LayoutSpec::Composite(CompositeHead {
//!         rule: CompositionRule::Partition,
//!         combine_op: CombineOp::None,
//!         member_count: 2,
//!     }),
//!     &[],
//! );
//! let buf = [BufferHandle::new(128, 64, DeviceTag::Cpu, hurray_core::SyncMode::ProducerSynced)?];
//! let left = TensorDescriptor::row_major(ElementType::Float32, &[8, 4], &buf).with_shard(&[8, 8], &[0, 0]);
//! let right = TensorDescriptor::row_major(ElementType::Float32, &[8, 4], &buf).with_shard(&[8, 8], &[0, 4]);
//! let (mut h, mut l, mut r) = ([0u8; 128], [0u8; 128], [0u8; 128]);
//! let (hn, ln, rn) = (head.encode(&mut h)?, left.encode(&mut l)?, right.encode(&mut r)?);
//!
//! let head = TensorView::parse(&h[..hn])?;
//! let mut v = CompositeValidator::<4>::new(&head)?;
//! v.push(&TensorView::parse(&l[..ln])?)?;
//! v.push(&TensorView::parse(&r[..rn])?)?;
//! v.finish()?; // exact cover of [8, 8]
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

use core::fmt;

use heapless::Vec;

use crate::descriptor::layout::{CompositeHead, CompositionRule};
use crate::descriptor::{Dims, FixedHeader, Layout, MemberRole, ReadOptions, TensorView};
use crate::element::ElementType;
use crate::error::{DescriptorError, error_enum};
use zerocopy::FromBytes;

/// The deepest nesting of composites a reader accepts.
pub const MAX_COMPOSITE_DEPTH: u8 = 8;

/// Why a composite was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CompositeError {
    /// The member at fault (0-based), or `u32::MAX` for the head itself.
    pub member: u32,
    /// What is wrong.
    pub kind: CompositeErrorKind,
}

error_enum! {
    /// What is wrong with a composite.
    #[non_exhaustive]
    pub enum CompositeErrorKind {
        /// The descriptor given as a head is not a composite head.
        NotAHead => "not a composite head";
        /// A descriptor of the stream is invalid on its own.
        Member(e: DescriptorError) => "{e}";
        /// A partition or overlay member has no shard section.
        MissingShard => "no shard section";
        /// A member's `parent_shape` is not the head's shape.
        ParentShapeMismatch => "parent_shape is not the head's shape";
        /// A member's value type is not the head's.
        TypeMismatch {
            /// The head's type tag.
            head: u8,
            /// The member's type tag.
            member: u8,
        } => "value type {member:#04x} is not the head's {head:#04x}";
        /// An overlay member has no member role section.
        MissingRole => "overlay member has no member role";
        /// A partition or group member carries a member role section.
        UnexpectedRole => "only overlay members carry a member role";
        /// The first overlay member is not the base, or a later one is.
        WrongRole {
            /// The role found.
            found: MemberRole,
        } => "role {found:?} is out of place (the base comes first, alone)";
        /// The overlay base does not span the head's index space.
        BaseDoesNotSpan => "the overlay base does not span the head";
        /// Two partition members overlap.
        Overlap {
            /// The earlier member.
            other: u32,
        } => "overlaps member {other}";
        /// The partition members leave part of the head uncovered.
        CoverageGap => "the partition leaves part of the head uncovered";
        /// More members than the validator can hold boxes for.
        CapacityExceeded {
            /// The capacity.
            capacity: u32,
        } => "more than {capacity} members to track";
        /// More members were pushed than the head declares.
        TooManyMembers => "more members than declared";
        /// The stream ended before the declared members arrived.
        Torn {
            /// Members declared.
            expected: u32,
            /// Members received.
            found: u32,
        } => "torn: {found} of {expected} members arrived";
        /// Composites nest deeper than [`MAX_COMPOSITE_DEPTH`].
        NestingTooDeep => "composites nest deeper than {MAX_COMPOSITE_DEPTH}";
    }
}

impl CompositeError {
    /// `kind` at `member` (`u32::MAX`: the head).
    pub(crate) const fn at(member: u32, kind: CompositeErrorKind) -> Self {
        Self { member, kind }
    }
}

impl fmt::Display for CompositeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.member == u32::MAX {
            write!(f, "composite head: ")?;
        } else {
            write!(f, "composite member {}: ", self.member)?;
        }
        write!(f, "{}", self.kind)
    }
}

impl core::error::Error for CompositeError {}

/// One member's box in the head's index space.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemberBox<'a> {
    pub(crate) offset: Dims<'a>,
    pub(crate) shape: Dims<'a>,
}

impl MemberBox<'_> {
    /// Whether two boxes share an element: they overlap on every axis.
    pub(crate) fn overlaps(&self, other: &MemberBox<'_>) -> bool {
        let mut axes = self
            .offset
            .iter()
            .zip(self.shape.iter())
            .zip(other.offset.iter().zip(other.shape.iter()));
        // Shard parsing guarantees offset + shape <= parent <= u64::MAX.
        axes.all(|((a0, an), (b0, bn))| a0 < b0.saturating_add(bn) && b0 < a0.saturating_add(an))
    }
}

/// The number of elements of `shape`, saturating.
fn volume(shape: Dims<'_>) -> u128 {
    shape
        .iter()
        .fold(1u128, |v, n| v.saturating_mul(u128::from(n)))
}

/// Where the head's shape and the earlier partition boxes of one open
/// composite are kept: borrowed from the descriptors
/// ([`CompositeValidator`]), or copied into a caller's scratch bytes by a
/// reader that holds one descriptor at a time (the stream decoder).
pub(crate) trait BoxStore<'m> {
    /// The head's shape.
    fn head_shape(&self) -> Dims<'_>;
    /// The first kept box that overlaps `b`, by member index.
    fn find_overlap(&self, b: &MemberBox<'_>) -> Option<u32>;
    /// Keeps `b`; `Err(capacity)` when there is no room.
    fn keep(&mut self, b: MemberBox<'m>) -> Result<(), u32>;
}

/// The progress of one open composite, apart from where its boxes are kept:
/// the one place the rules of the module documentation are written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Progress {
    head: CompositeHead,
    head_type: ElementType,
    seen: u32,
    volume: u128,
}

impl Progress {
    /// The progress of `head`, or `NotAHead`.
    pub(crate) const fn new(head: &TensorView<'_>) -> Result<Self, CompositeError> {
        let Layout::Composite(h) = head.layout() else {
            return Err(CompositeError::at(u32::MAX, CompositeErrorKind::NotAHead));
        };
        Ok(Self {
            head: h,
            head_type: head.element_type(),
            seen: 0,
            volume: 0,
        })
    }

    /// The head's layout fields.
    pub(crate) const fn head(&self) -> CompositeHead {
        self.head
    }

    /// Members checked so far.
    pub(crate) const fn seen(&self) -> u32 {
        self.seen
    }

    /// Members still expected.
    pub(crate) const fn remaining(&self) -> u32 {
        self.head.member_count.saturating_sub(self.seen)
    }

    /// Whether the rule needs the head's shape (partition and overlay).
    pub(crate) const fn needs_head_shape(&self) -> bool {
        matches!(
            self.head.rule,
            CompositionRule::Partition | CompositionRule::Overlay
        )
    }

    /// Checks the next member against the head and the kept boxes.
    pub(crate) fn push<'m>(
        &mut self,
        member: &TensorView<'m>,
        store: &mut impl BoxStore<'m>,
    ) -> Result<(), CompositeError> {
        let index = self.seen;
        let fail = |kind| Err(CompositeError::at(index, kind));
        if self.remaining() == 0 {
            return fail(CompositeErrorKind::TooManyMembers);
        }
        self.seen = self.seen.saturating_add(1);
        if !self.needs_head_shape() {
            // Group: members are independent; only the member section is
            // out of place.
            if member.member_role().is_some() && self.head.rule == CompositionRule::Group {
                return fail(CompositeErrorKind::UnexpectedRole);
            }
            return Ok(());
        }
        let Some(shard) = member.shard() else {
            return fail(CompositeErrorKind::MissingShard);
        };
        if !shard.parent_shape.iter().eq(store.head_shape().iter()) {
            return fail(CompositeErrorKind::ParentShapeMismatch);
        }
        let type_ok = if member.quantization().is_some() {
            matches!(
                self.head_type,
                ElementType::Float16
                    | ElementType::BFloat16
                    | ElementType::Float32
                    | ElementType::Float64
            )
        } else {
            member.element_type() == self.head_type
        };
        if !type_ok {
            return fail(CompositeErrorKind::TypeMismatch {
                head: self.head_type.code(),
                member: member.element_type().code(),
            });
        }
        let b = MemberBox {
            offset: shard.shard_offset,
            shape: member.shape(),
        };
        if self.head.rule == CompositionRule::Overlay {
            let role = member.member_role();
            match (index, role) {
                (_, None) => return fail(CompositeErrorKind::MissingRole),
                (0, Some(MemberRole::Base)) => {
                    let spans = b.offset.iter().all(|o| o == 0)
                        && b.shape.iter().eq(store.head_shape().iter());
                    if !spans {
                        return fail(CompositeErrorKind::BaseDoesNotSpan);
                    }
                }
                (0, Some(found)) | (_, Some(found @ MemberRole::Base)) => {
                    return fail(CompositeErrorKind::WrongRole { found });
                }
                (_, Some(MemberRole::Correction)) => {}
            }
            return Ok(());
        }
        // Partition.
        if member.member_role().is_some() {
            return fail(CompositeErrorKind::UnexpectedRole);
        }
        if let Some(other) = store.find_overlap(&b) {
            return fail(CompositeErrorKind::Overlap { other });
        }
        self.volume = self.volume.saturating_add(volume(b.shape));
        if let Err(capacity) = store.keep(b) {
            return fail(CompositeErrorKind::CapacityExceeded { capacity });
        }
        Ok(())
    }

    /// The verdict once every member has been pushed.
    pub(crate) fn finish(&self, head_shape: Dims<'_>) -> Result<(), CompositeError> {
        if self.remaining() > 0 {
            return Err(self.torn());
        }
        // Disjoint boxes inside the head cover it exactly when their
        // volumes add up to its volume.
        if self.head.rule == CompositionRule::Partition && self.volume != volume(head_shape) {
            return Err(CompositeError::at(
                self.seen,
                CompositeErrorKind::CoverageGap,
            ));
        }
        Ok(())
    }

    /// The error of a composite whose members stopped early.
    pub(crate) const fn torn(&self) -> CompositeError {
        let kind = CompositeErrorKind::Torn {
            expected: self.head.member_count,
            found: self.seen,
        };
        CompositeError::at(self.seen, kind)
    }
}

/// The boxes of a [`CompositeValidator`]: borrowed from its members.
#[derive(Debug, Clone)]
struct Borrowed<'a, const N: usize> {
    head_shape: Dims<'a>,
    boxes: Vec<MemberBox<'a>, N>,
}

impl<'a, const N: usize> BoxStore<'a> for Borrowed<'a, N> {
    fn head_shape(&self) -> Dims<'_> {
        self.head_shape
    }

    fn find_overlap(&self, b: &MemberBox<'_>) -> Option<u32> {
        (0u32..)
            .zip(self.boxes.iter())
            .find_map(|(i, prev)| prev.overlaps(b).then_some(i))
    }

    fn keep(&mut self, b: MemberBox<'a>) -> Result<(), u32> {
        #[allow(clippy::cast_possible_truncation)]
        let capacity = N.min(u32::MAX as usize) as u32;
        self.boxes.push(b).map_err(|_| capacity)
    }
}

/// Checks the members of one composite head as they arrive; see the module
/// documentation for the rules. `N` bounds the partition boxes it keeps.
#[derive(Debug, Clone)]
pub struct CompositeValidator<'a, const N: usize> {
    progress: Progress,
    store: Borrowed<'a, N>,
}

impl<'a, const N: usize> CompositeValidator<'a, N> {
    /// Starts checking the members of `head`.
    ///
    /// # Errors
    /// [`CompositeErrorKind::NotAHead`] when `head` is not a composite head.
    pub fn new(head: &TensorView<'a>) -> Result<Self, CompositeError> {
        let progress = Progress::new(head)?;
        Ok(Self {
            progress,
            store: Borrowed {
                head_shape: head.shape(),
                boxes: Vec::new(),
            },
        })
    }

    /// Members still expected.
    #[must_use]
    pub const fn remaining(&self) -> u32 {
        self.progress.remaining()
    }

    /// Checks the next member.
    ///
    /// # Errors
    /// The first rule the member breaks.
    pub fn push(&mut self, member: &TensorView<'a>) -> Result<(), CompositeError> {
        self.progress.push(member, &mut self.store)
    }

    /// The verdict once every member has been pushed.
    ///
    /// # Errors
    /// [`CompositeErrorKind::Torn`] if members are missing;
    /// [`CompositeErrorKind::CoverageGap`] if a partition leaves a gap.
    pub fn finish(self) -> Result<(), CompositeError> {
        self.progress.finish(self.store.head_shape)
    }
}

/// Reads a whole composite from the start of `bytes`: the head, then each
/// member (recursing into nested composites, at most
/// [`MAX_COMPOSITE_DEPTH`] levels), checking every rule. Returns the head
/// and the bytes after the last member. `N` bounds the members of any one
/// partition.
///
/// # Errors
/// The first descriptor or composite rule broken, with the member index.
pub fn read_composite<'a, const N: usize>(
    bytes: &'a [u8],
    options: &ReadOptions<'_>,
) -> Result<(TensorView<'a>, &'a [u8]), CompositeError> {
    read_level::<N>(bytes, options, 1)
}

fn read_level<'a, const N: usize>(
    bytes: &'a [u8],
    options: &ReadOptions<'_>,
    depth: u8,
) -> Result<(TensorView<'a>, &'a [u8]), CompositeError> {
    let head_err = |kind| CompositeError::at(u32::MAX, kind);
    if depth > MAX_COMPOSITE_DEPTH {
        return Err(head_err(CompositeErrorKind::NestingTooDeep));
    }
    let (head, mut rest) = TensorView::parse_prefix_with(bytes, options)
        .map_err(|e| head_err(CompositeErrorKind::Member(e)))?;
    let mut v = CompositeValidator::<N>::new(&head)?;
    while v.remaining() > 0 && !rest.is_empty() {
        let index = v.progress.seen();
        let member_err = |kind| CompositeError::at(index, kind);
        let layout_tag = FixedHeader::ref_from_prefix(rest)
            .ok()
            .map(|(h, _)| h.layout_tag);
        let (member, after) = if layout_tag == Some(crate::layout::tag::COMPOSITE) {
            // A nested head: read its whole subtree, then check it as a member.
            read_level::<N>(rest, options, depth.saturating_add(1)).map_err(|e| match e.kind {
                CompositeErrorKind::NestingTooDeep => member_err(e.kind),
                _ => e,
            })?
        } else {
            TensorView::parse_prefix_with(rest, options)
                .map_err(|e| member_err(CompositeErrorKind::Member(e)))?
        };
        v.push(&member)?;
        rest = after;
    }
    v.finish()?;
    Ok((head, rest))
}
