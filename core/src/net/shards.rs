//! Shard consistency of a parallel transfer (upstream § Shard Consistency):
//! [`check_shards`] takes every shard's descriptor message and proves they
//! tile their parent exactly. No allocation: O(n²) pairwise box tests over
//! at most [`MAX_SHARDS`](super::MAX_SHARDS) shards, checked arithmetic.

use super::transfer::DescriptorMessage;
use crate::error::error_enum;

error_enum! {
    /// Why a set of shards does not form one tensor (answer: `SHARD_MISMATCH`).
    #[non_exhaustive]
    pub enum ShardError {
        /// Not as many shards as `total_shards` says.
        Count {
            /// `total_shards` of the first shard.
            expected: u32,
            /// Shards given.
            found: u32,
        } => "{found} shards where total_shards is {expected}";
        /// Shard at position `index` disagrees with the first on
        /// `total_shards`, carries no shard section, or repeats an index.
        Index {
            /// Position in the slice.
            index: u32,
        } => "shard {index}: bad or repeated shard index";
        /// Shard at `index` has another parent shape, element type, rank or
        /// layout than the first.
        Inconsistent {
            /// Position in the slice.
            index: u32,
            /// What differs.
            what: &'static str,
        } => "shard {index}: {what} differs from shard 0";
        /// Two shards overlap.
        Overlap {
            /// Position of one.
            a: u32,
            /// Position of the other.
            b: u32,
        } => "shards {a} and {b} overlap";
        /// The shards do not cover the parent (their volumes fall short).
        Coverage {
            /// Elements the shards cover.
            covered: u64,
            /// Elements of the parent.
            parent: u64,
        } => "shards cover {covered} of the parent's {parent} elements";
        /// A volume overflows `u64`.
        Overflow => "shard volume overflows";
    }
}

impl core::error::Error for ShardError {}

fn volume(mut dims: impl Iterator<Item = u64>) -> Option<u64> {
    dims.try_fold(1u64, |acc, d| acc.checked_mul(d))
}

/// Checks that `shards` (every shard of one parallel transfer, any order)
/// share parent shape, element type and layout, carry each index of
/// `0..total_shards` once, do not overlap and cover the parent exactly.
///
/// ```
/// use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor};
/// use hurray_core::net::{DescriptorMessage, ShardError, check_shards};
///
/// let b = [BufferHandle::new(8, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
/// let (mut d0, mut d1) = ([0u8; 128], [0u8; 128]);
/// let top = TensorDescriptor::row_major(ElementType::UInt8, &[2, 4], &b).with_shard(&[4, 4], &[0, 0]);
/// let bottom = TensorDescriptor::row_major(ElementType::UInt8, &[2, 4], &b).with_shard(&[4, 4], &[2, 0]);
/// let msg = |v, i| DescriptorMessage { descriptor: v, total_data_bytes: 8, shard_index: i, total_shards: 2 };
/// let s0 = msg(top.encode_view(&mut d0)?, 0);
/// let s1 = msg(bottom.encode_view(&mut d1)?, 1);
/// assert_eq!(check_shards(&[s1, s0]), Ok(()));
/// assert_eq!(check_shards(&[s0, s0]), Err(ShardError::Index { index: 1 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The first [`ShardError`] found.
pub fn check_shards(shards: &[DescriptorMessage<'_>]) -> Result<(), ShardError> {
    let n = u32::try_from(shards.len()).unwrap_or(u32::MAX);
    // As many shards as the first says (and at least that one).
    let Some(first) = shards.first().filter(|f| f.total_shards == n) else {
        let expected = shards.first().map_or(1, |f| f.total_shards);
        return Err(ShardError::Count { expected, found: n });
    };
    let Some(shape) = first.descriptor.shard().map(|s| s.parent_shape) else {
        // One unsharded tensor is its own cover.
        return if n == 1 {
            Ok(())
        } else {
            Err(ShardError::Index { index: 0 })
        };
    };
    let parent = volume(shape.iter()).ok_or(ShardError::Overflow)?;
    let mut covered = 0u64;
    for (i, s) in shards.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let Some(shard) = s.descriptor.shard() else {
            return Err(ShardError::Index { index });
        };
        if s.total_shards != n
            || shards
                .iter()
                .take(i)
                .any(|o| o.shard_index == s.shard_index)
        {
            return Err(ShardError::Index { index });
        }
        let inconsistent = |what| Err(ShardError::Inconsistent { index, what });
        if !shard.parent_shape.iter().eq(shape.iter()) {
            return inconsistent("parent_shape");
        }
        if s.descriptor.element_type() != first.descriptor.element_type() {
            return inconsistent("element type");
        }
        if s.descriptor.layout().tag() != first.descriptor.layout().tag() {
            return inconsistent("layout");
        }
        let v = volume(s.descriptor.shape().iter()).ok_or(ShardError::Overflow)?;
        covered = covered.checked_add(v).ok_or(ShardError::Overflow)?;
        for (a, o) in (0u32..).zip(shards.iter().take(i)) {
            if overlaps(s, o) {
                return Err(ShardError::Overlap { a, b: index });
            }
        }
    }
    // Disjoint boxes inside the parent whose volumes add up to it cover it.
    if covered != parent {
        return Err(ShardError::Coverage { covered, parent });
    }
    Ok(())
}

/// Whether two shard boxes share an element.
fn overlaps(a: &DescriptorMessage<'_>, b: &DescriptorMessage<'_>) -> bool {
    let (Some(sa), Some(sb)) = (a.descriptor.shard(), b.descriptor.shard()) else {
        return false;
    };
    let axes = sa
        .shard_offset
        .iter()
        .zip(a.descriptor.shape().iter())
        .zip(sb.shard_offset.iter().zip(b.descriptor.shape().iter()));
    let mut any = false;
    for ((ao, al), (bo, bl)) in axes {
        any = true;
        let (ae, be) = (ao.saturating_add(al), bo.saturating_add(bl));
        if al == 0 || bl == 0 || ae <= bo || be <= ao {
            return false;
        }
    }
    any
}

/// Tag of our extension layout entry that carries a [`ShardSelect`]
/// (`[NP-SHARD-4]`; in the implementation-private `0xF0`–`0xFE` range, so a
/// peer that does not know it steps over it).
pub const SHARD_SELECT_TAG: u8 = 0xF5;

/// The first four metadata bytes of a [`ShardSelect`] entry.
pub const SHARD_SELECT_MAGIC: [u8; 4] = *b"HRS1";

/// Bytes of a [`ShardSelect`] layout entry: tag, `uint16` length, magic,
/// `uint16` index, `uint16` count.
pub const SHARD_SELECT_ENTRY_LEN: usize = 1 + 2 + 8;

/// A shard selection (`[NP-SHARD-4]`, our rule): "of this tensor cut into
/// exactly `count` shards, send me shard `index` only". It lets a client
/// spread one tensor over `count` connections, connection `k` asking for
/// shard `k`.
///
/// It travels as an extension layout entry ([`SHARD_SELECT_TAG`], metadata
/// [`SHARD_SELECT_MAGIC`], `index: uint16`, `count: uint16`) in the
/// request's layout list; a server advertises that it honours selections
/// of up to `count` shards with the same entry (`index` 0) in its hello's
/// layout list. An entry with our tag but other metadata is someone
/// else's and is stepped over.
///
/// ```
/// use hurray_core::net::{LayoutList, ShardSelect};
///
/// let sel = ShardSelect::new(2, 4).unwrap();
/// let entry = sel.entry();
/// let list = LayoutList::parse(1, &entry).unwrap();
/// assert_eq!(ShardSelect::find(&list), Some(sel));
/// assert!(sel.takes(4, 2) && !sel.takes(4, 1) && !sel.takes(8, 2));
/// assert_eq!(ShardSelect::new(4, 4), None); // index below count
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ShardSelect {
    index: u16,
    count: u16,
}

impl ShardSelect {
    /// Shard `index` of `count`; `None` unless `count` is 1 to
    /// [`MAX_SHARDS`](super::MAX_SHARDS) and `index` below it.
    #[must_use]
    #[inline]
    pub const fn new(index: u16, count: u16) -> Option<Self> {
        if count == 0 || count as u32 > super::MAX_SHARDS || index >= count {
            return None;
        }
        Some(Self { index, count })
    }

    /// What a server advertises to honour selections of up to `count`
    /// shards (index 0).
    #[must_use]
    #[inline]
    pub const fn advertise(count: u16) -> Option<Self> {
        Self::new(0, count)
    }

    /// The selected shard.
    #[must_use]
    #[inline]
    pub const fn index(&self) -> u16 {
        self.index
    }

    /// The number of shards the tensor is cut into.
    #[must_use]
    #[inline]
    pub const fn count(&self) -> u16 {
        self.count
    }

    /// The layout entry's wire bytes.
    #[must_use]
    pub const fn entry(&self) -> [u8; SHARD_SELECT_ENTRY_LEN] {
        let [m0, m1, m2, m3] = SHARD_SELECT_MAGIC;
        let [i0, i1] = self.index.to_le_bytes();
        let [c0, c1] = self.count.to_le_bytes();
        let tag = SHARD_SELECT_TAG;
        [tag, 8, 0, m0, m1, m2, m3, i0, i1, c0, c1]
    }

    /// The first valid selection entry of `list`, if any (entries with our
    /// tag but other metadata, or values out of range, are not ours).
    #[must_use]
    pub fn find(list: &super::LayoutList<'_>) -> Option<Self> {
        list.iter().find_map(|e| {
            if e.tag != SHARD_SELECT_TAG {
                return None;
            }
            match e.ext_metadata {
                &[a, b, c, d, i0, i1, c0, c1] if [a, b, c, d] == SHARD_SELECT_MAGIC => {
                    Self::new(u16::from_le_bytes([i0, i1]), u16::from_le_bytes([c0, c1]))
                }
                _ => None,
            }
        })
    }

    /// Whether a descriptor with these shard fields answers this selection:
    /// shard `index` of exactly `count`, or — only for index 0, from a
    /// server that cannot cut the tensor into `count` shards — the whole
    /// tensor (`total_shards` 1).
    #[must_use]
    #[inline]
    pub const fn takes(&self, total_shards: u32, shard_index: u32) -> bool {
        (total_shards == self.count as u32 && shard_index == self.index as u32)
            || (total_shards == 1 && shard_index == 0 && self.index == 0)
    }
}
