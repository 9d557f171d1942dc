//! The buffer table: a packed array of 16-byte [`BufferHandleEntry`]s.
//!
//! # Contract
//!
//! * [`BufferTable::parse`] accepts any `&[u8]`: its length must be a multiple
//!   of 16, every entry must decode, and every entry must share buffer 0's
//!   device tag and memory class (device colocation,
//!   `docs/spec/buffer-protocol.md` § Device Colocation), else it returns a
//!   [`DescriptorError`] naming the *first* fault and the offset of its
//!   entry. It never panics and never copies.
//! * After `parse` succeeds, [`BufferTable::get`] and [`BufferTable::iter`]
//!   return a [`BufferHandle`] for every index below [`BufferTable::len`];
//!   they cannot fail.
//!
//! Validation is a single pass with a branch-free check per entry (see
//! `docs/impl/validation.md`); only a chunk that holds a bad entry is scanned
//! again to name the first fault.

use zerocopy::little_endian::U32;
use zerocopy::{FromBytes, IntoBytes};

use crate::MIN_BUFFER_ALIGNMENT;
use crate::codes::{DeviceTag, MemoryClass};
use crate::error::{DescriptorError, DescriptorErrorKind, EncodeError};
use crate::handle::{BufferHandle, BufferHandleEntry, ENTRY_LEN};

/// A validated, zero-copy view of a buffer table: the handles of one tensor.
///
/// ```
/// use hurray_core::{BufferHandle, BufferTable, DescriptorErrorKind, DeviceTag, Error, SyncMode};
///
/// let handles = [
///     BufferHandle::new(4096, 64, DeviceTag::Cuda, SyncMode::Event).unwrap(),
///     BufferHandle::empty(DeviceTag::Cuda),
/// ];
/// let mut bytes = [0u8; 32];
/// assert_eq!(BufferTable::encode(&handles, &mut bytes), Ok(32));
///
/// let table = BufferTable::parse(&bytes).unwrap();
/// assert_eq!(table.len(), 2);
/// assert_eq!(table.get(0), Some(handles[0]));
/// assert!(table.iter().eq(handles));
///
/// // A bad entry is reported with its index and the offset of its entry.
/// bytes[16 + 15] = 0xAA; // reserved byte of entry 1
/// let err = BufferTable::parse(&bytes).unwrap_err();
/// assert_eq!(err.offset(), 16);
/// assert_eq!(err.kind(), DescriptorErrorKind::Buffer { index: 1, error: Error::ReservedNonZero(0xAA) });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BufferTable<'a> {
    entries: &'a [BufferHandleEntry],
}

// --- the fast path -------------------------------------------------------------
//
// `entry_ok` is the branch-free twin of `BufferHandleEntry::decode`, written
// over the entry's four little-endian u32 words so that the compiler can check
// several entries per instruction. The per-device memory-class table is packed
// into one u64 (4 bits per named device) built at compile time from
// `DeviceTag::allows`.

/// Bit `4 * dev + class` set when named device `dev` allows named class
/// `class`. Evaluated at compile time: an out-of-range index fails the
/// build, so the runtime panic lints do not apply.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const VALIDITY: u64 = {
    let mut bits = 0u64;
    let mut d = 0;
    while d < DeviceTag::NAMED.len() {
        let mut c = 0;
        while c < MemoryClass::NAMED.len() {
            if DeviceTag::NAMED[d].allows(MemoryClass::NAMED[c]) {
                bits |= 1
                    << (4 * DeviceTag::NAMED[d].code() as u32
                        + MemoryClass::NAMED[c].code() as u32);
            }
            c += 1;
        }
        d += 1;
    }
    bits
};
/// The highest named device code (8) and sync mode code (2).
const LAST_DEVICE: u32 = 0x08;
const LAST_SYNC: u32 = 0x02;
const LAST_CLASS: u32 = 0x03;

/// The branch-free form of [`BufferHandleEntry::decode`] over the entry's
/// words `[size_lo, size_hi, alignment, dev | sync << 8 | class << 16 | reserved << 24]`:
/// `true` exactly when `decode` returns `Ok` (a unit test checks all 2^24
/// code combinations).
#[inline(always)]
#[allow(clippy::indexing_slicing)] // a fixed-size array indexed by constants
const fn entry_ok(w: &[U32; 4]) -> bool {
    let codes = w[3].get();
    let sync = (codes >> 8) & 0xFF;
    pair_ok(codes) & (sync <= last_sync(codes)) & (codes >> 24 == 0) & size_ok(w)
}

/// The device tag and memory class of an entry's code word (`dev | sync <<
/// 8 | class << 16 | reserved << 24`) are a pair `decode` accepts.
#[inline(always)]
const fn pair_ok(codes: u32) -> bool {
    let dev = codes & 0xFF;
    let class = (codes >> 16) & 0xFF;
    let dev_named = dev <= LAST_DEVICE;
    let dev_private = (dev >= 0xF0) & (dev <= 0xFE);
    let class_private = (class >= 0xF0) & (class <= 0xFE);
    let named_pair_ok = dev_named
        & (class <= LAST_CLASS)
        & ((VALIDITY >> (((dev & 0xF) << 2) | (class & 3))) & 1 != 0);
    let private_pair_ok = dev_private & ((class == 0) | class_private);
    named_pair_ok | private_pair_ok
}

/// The highest sync mode code the device of `codes` allows: a CPU buffer
/// (device 0) has none to synchronise.
#[inline(always)]
const fn last_sync(codes: u32) -> u32 {
    if codes & 0xFF == 0 { 0 } else { LAST_SYNC }
}

/// The alignment of an entry's words is a power of two, and at least
/// [`MIN_BUFFER_ALIGNMENT`] unless the buffer is empty.
#[inline(always)]
#[allow(clippy::indexing_slicing)] // a fixed-size array indexed by constants
const fn size_ok(w: &[U32; 4]) -> bool {
    let [lo, hi, align] = [w[0].get(), w[1].get(), w[2].get()];
    let pow2 = (align != 0) & (align & align.wrapping_sub(1) == 0);
    // Given `pow2`, `align >= 64` is `align & !63 != 0`.
    let min_ok = ((lo | hi) == 0) | (align & !(MIN_BUFFER_ALIGNMENT - 1) != 0);
    pow2 & min_ok
}

/// Entries checked together before the loop looks at the running verdict.
const CHUNK: usize = 64;

/// Offset of entry `index` in the table.
fn entry_at(index: usize) -> u32 {
    u32::try_from(index.saturating_mul(ENTRY_LEN)).unwrap_or(u32::MAX)
}

/// The device-tag and memory-class bytes of an entry, as they sit in its
/// last word.
fn placement(e: &BufferHandleEntry) -> u32 {
    u32::from(e.device_tag) | u32::from(e.memory_class) << 16
}

/// Checks `entries` one by one (their first index is `base`): each must
/// decode and sit where `first` (entry 0's placement) does.
fn check_each(
    entries: &[BufferHandleEntry],
    base: usize,
    first: u32,
) -> Result<(), DescriptorError> {
    for (i, e) in entries.iter().enumerate() {
        let i = base.saturating_add(i);
        if let Err(error) = e.decode() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            let kind = DescriptorErrorKind::Buffer { index, error };
            return Err(DescriptorError::new(entry_at(i), kind));
        }
        colocated(i, placement(e), first)?;
    }
    Ok(())
}

/// The first fault of a table the branch-free check refused (kept out of
/// line: valid tables never reach it), its offset counted from `at`.
#[cold]
#[inline(never)]
fn first_fault(entries: &[BufferHandleEntry], first: u32, at: u32) -> DescriptorError {
    let e = match check_each(entries, 0, first) {
        Err(e) => e,
        // Unreachable: `entry_ok` refuses exactly what `decode` refuses (a
        // unit test checks every code combination).
        Ok(()) => DescriptorError::new(
            0,
            DescriptorErrorKind::Buffer {
                index: 0,
                error: crate::Error::ReservedNonZero(0),
            },
        ),
    };
    DescriptorError::new(at.saturating_add(e.offset()), e.kind())
}

/// Handle `index` sits where entry 0 does (`placement`: its device tag and
/// memory class, as [`placement`] packs them; the error's offset is the
/// entry's, in the table). The parser's rule over entries, and the
/// encoder's over the handles it is given ([`handle_placement`]).
pub(crate) fn colocated(index: usize, placement: u32, first: u32) -> Result<(), DescriptorError> {
    if placement != first {
        let index32 = u32::try_from(index).unwrap_or(u32::MAX);
        return Err(DescriptorError::new(
            entry_at(index),
            DescriptorErrorKind::NotColocated { index: index32 },
        ));
    }
    Ok(())
}

/// A handle's placement, packed as [`placement`] packs an entry's.
pub(crate) const fn handle_placement(h: &BufferHandle) -> u32 {
    h.device_tag().code() as u32 | (h.memory_class().code() as u32) << 16
}

/// The fast rule for an entry of a table whose entry 0 passed [`entry_ok`],
/// over the same four words: `true` exactly when the entry decodes and is
/// colocated with entry 0 (`first` is entry 0's [`placement`]).
///
/// Colocation makes every entry's device tag and memory class entry 0's,
/// so the pairing rule (the `VALIDITY` lookup), checked once for entry 0,
/// holds for all of them, and the CPU rule (no sync mode on the CPU device)
/// becomes a bound on the sync byte, `max_sync`: 0 on the CPU, else the
/// last sync code. The code word XOR entry 0's placement, rotated so that
/// the sync byte is its low byte, is then at most `max_sync` exactly when
/// the device tag and memory class equal entry 0's, the reserved byte is 0
/// and the sync byte is in bounds: one comparison where [`entry_ok`] makes
/// eight, and no per-entry table lookup (which the vector unit can only
/// emulate). A unit test checks the equivalence.
#[inline(always)]
#[allow(clippy::indexing_slicing)] // a fixed-size array indexed by constants
const fn colocated_ok(w: &[U32; 4], first: u32, max_sync: u32) -> bool {
    ((w[3].get() ^ first).rotate_right(8) <= max_sync) & size_ok(w)
}

/// The colocated rule over many entries: the portable form, a branch-free
/// fold that LLVM vectorises where it can (the firmware targets, wasm32,
/// aarch64). x86-64 uses `sse2::Colocated` instead, with the same
/// interface.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[derive(Clone, Copy)]
struct Colocated {
    first: u32,
    max_sync: u32,
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
impl Colocated {
    /// The rule for a table whose entry 0 has placement `first` and whose
    /// entries' sync bytes may be at most `max_sync`.
    #[inline(always)]
    const fn new(first: u32, max_sync: u32) -> Self {
        Self { first, max_sync }
    }

    /// Whether every entry of `words` passes [`colocated_ok`].
    #[inline(always)]
    fn all_ok(&self, words: &[[U32; 4]]) -> bool {
        words.iter().fold(true, |ok, w| {
            ok & colocated_ok(w, self.first, self.max_sync)
        })
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use sse2::Colocated;

/// The colocated rule four entries at a time on SSE2 (x86-64's baseline),
/// through `safe_arch`'s safe wrappers (ADR-129).
///
/// LLVM vectorises the portable fold by gathering each of the four words
/// of four entries into a vector one 32-bit word at a time. Here each
/// entry is loaded whole (one 16-byte load), four entries are transposed
/// with eight unpacks into vectors of sizes' low and high words,
/// alignments and code words, and the rule is computed lane-wise into two
/// accumulators tested once per call (a chunk): eight entries per loop
/// iteration, then a group of four, then the scalar rule for the last 0–3.
///
/// * `zero` must stay 0: the code word XOR entry 0's placement, minus the
///   byte-wise bound `[0, max_sync, 0, 0]` with unsigned saturation (0
///   exactly when the device tag and memory class are entry 0's, the
///   reserved byte is 0 and the sync byte is at most `max_sync`), and
///   `align & (align - 1)` (at most one bit set);
/// * `sign` must have no lane with its top bit set: `align - req`, with
///   `req` 64 for a non-empty buffer and 1 for an empty one. For an
///   alignment of 0 or a power of two (up to 2^31), that difference is
///   negative exactly when `align < req`, and it cannot overflow.
///
/// Together: `colocated_ok` for every entry (a unit test plants a fault
/// in each lane and word and compares with the entry-by-entry walk).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use safe_arch::{
        add_i32_m128i, bitand_m128i, bitandnot_m128i, bitor_m128i, bitxor_m128i,
        cmp_eq_mask_i32_m128i, load_unaligned_m128i, m128i, move_mask_i8_m128i,
        set_splat_i32_m128i, shr_imm_i32_m128i, sub_i32_m128i, sub_saturating_u8_m128i,
        unpack_high_i32_m128i, unpack_high_i64_m128i, unpack_low_i32_m128i, unpack_low_i64_m128i,
        zeroed_m128i,
    };
    use zerocopy::little_endian::U32;

    use super::colocated_ok;

    /// The colocated rule's constants for one table, splat over 4 lanes.
    #[derive(Clone, Copy)]
    pub(super) struct Colocated {
        /// Entry 0's placement (device tag and memory class bytes).
        first: m128i,
        /// The byte-wise bound of a code word XOR `first`: `[0, max_sync, 0, 0]`.
        bound: m128i,
        /// All ones, to subtract 1 from each alignment.
        minus_one: m128i,
        /// 63: the difference between the two minimum alignments.
        step: m128i,
        /// The scalar forms, for the entries past the last group of four.
        first_u32: u32,
        max_sync: u32,
    }

    impl Colocated {
        /// The rule for a table whose entry 0 has placement `first` and whose
        /// entries' sync bytes may be at most `max_sync` (0 or 2).
        #[allow(clippy::cast_possible_wrap)] // bit patterns, reinterpreted
        #[inline(always)]
        pub(super) fn new(first: u32, max_sync: u32) -> Self {
            Self {
                first: set_splat_i32_m128i(first as i32),
                bound: set_splat_i32_m128i((max_sync << 8) as i32),
                minus_one: set_splat_i32_m128i(-1),
                step: set_splat_i32_m128i(63),
                first_u32: first,
                max_sync,
            }
        }

        /// Whether every entry of `words` passes [`colocated_ok`].
        #[inline(always)]
        pub(super) fn all_ok(&self, words: &[[U32; 4]]) -> bool {
            let (mut zero, mut sign) = (zeroed_m128i(), zeroed_m128i());
            let groups = words.chunks_exact(8);
            let rest = groups.remainder();
            for group in groups {
                if let [e0, e1, e2, e3, e4, e5, e6, e7] = group {
                    let [z0, s0] = self.four(e0, e1, e2, e3);
                    let [z1, s1] = self.four(e4, e5, e6, e7);
                    zero = bitor_m128i(zero, bitor_m128i(z0, z1));
                    sign = bitor_m128i(sign, bitor_m128i(s0, s1));
                }
            }
            let groups = rest.chunks_exact(4);
            let tail = groups.remainder();
            for group in groups {
                if let [e0, e1, e2, e3] = group {
                    let [z, s] = self.four(e0, e1, e2, e3);
                    zero = bitor_m128i(zero, z);
                    sign = bitor_m128i(sign, s);
                }
            }
            // Lanes whose sign bit is set become all ones; a lane of
            // `zero` is then 0 exactly when both rules held for its entries.
            let bad = bitor_m128i(zero, shr_imm_i32_m128i::<31>(sign));
            let vector_ok =
                move_mask_i8_m128i(cmp_eq_mask_i32_m128i(bad, zeroed_m128i())) == 0xFFFF;
            let tail_ok = tail.iter().fold(true, |ok, w| {
                ok & colocated_ok(w, self.first_u32, self.max_sync)
            });
            vector_ok & tail_ok
        }

        /// The two accumulators' contributions of four entries: `[zero, sign]`
        /// (see the module's note).
        #[inline(always)]
        fn four(&self, e0: &[U32; 4], e1: &[U32; 4], e2: &[U32; 4], e3: &[U32; 4]) -> [m128i; 2] {
            let load = |e: &[U32; 4]| load_unaligned_m128i(zerocopy::transmute_ref!(e));
            let (e0, e1, e2, e3) = (load(e0), load(e1), load(e2), load(e3));
            // [lo0 lo1 hi0 hi1], [lo2 lo3 hi2 hi3], [al0 al1 cd0 cd1], [al2 al3 cd2 cd3]
            let sizes01 = unpack_low_i32_m128i(e0, e1);
            let sizes23 = unpack_low_i32_m128i(e2, e3);
            let tails01 = unpack_high_i32_m128i(e0, e1);
            let tails23 = unpack_high_i32_m128i(e2, e3);
            let size = bitor_m128i(
                unpack_low_i64_m128i(sizes01, sizes23),
                unpack_high_i64_m128i(sizes01, sizes23),
            );
            let align = unpack_low_i64_m128i(tails01, tails23);
            let codes = unpack_high_i64_m128i(tails01, tails23);

            let codes_bad = sub_saturating_u8_m128i(bitxor_m128i(codes, self.first), self.bound);
            let align_m1 = add_i32_m128i(align, self.minus_one);
            let not_pow2 = bitand_m128i(align, align_m1);
            // align - req = (align - 1) - (63 if the buffer is not empty).
            let empty = cmp_eq_mask_i32_m128i(size, zeroed_m128i());
            let below_min = sub_i32_m128i(align_m1, bitandnot_m128i(empty, self.step));
            [bitor_m128i(codes_bad, not_pow2), below_min]
        }
    }
}

/// Validates every entry and their colocation with the branch-free fast
/// path (for large tables); on failure names the first invalid one.
///
/// Entry 0 is checked in full ([`entry_ok`]); every entry then by
/// [`colocated_ok`], a chunk of [`CHUNK`] at a time (on x86-64, four
/// entries per SSE2 vector by `sse2::Colocated`). A chunk that holds a
/// bad entry (or an entry 0 that fails) is walked by [`check_each`], so the
/// error is the first fault in table order, as the entry-by-entry rule
/// names it.
fn validate_entries(entries: &[BufferHandleEntry]) -> Result<(), DescriptorError> {
    // Same bytes, seen as four little-endian words per entry; cannot fail
    // (16-byte entries, alignment 1), but a failure would only skip the fast path.
    let words = <[[U32; 4]]>::ref_from_bytes(entries.as_bytes()).unwrap_or(&[]);
    let first = entries.first().map_or(0, placement);
    let fast_ok = words.len() == entries.len() && words.first().is_none_or(entry_ok);
    let max_sync = last_sync(first);
    let rule = Colocated::new(first, max_sync);
    for (n, (chunk, words)) in entries
        .chunks(CHUNK)
        .zip(words.chunks(CHUNK).chain(core::iter::repeat(&[][..])))
        .enumerate()
    {
        if fast_ok && rule.all_ok(words) {
            continue;
        }
        check_each(chunk, n.saturating_mul(CHUNK), first)?;
    }
    Ok(())
}

impl<'a> BufferTable<'a> {
    /// Views and validates a buffer table in place.
    ///
    /// # Errors
    /// * [`DescriptorErrorKind::TableLength`] — `bytes.len()` is not a
    ///   multiple of 16.
    /// * [`DescriptorErrorKind::Buffer`] — the first entry that does not
    ///   decode, with its index and [`Error`](crate::Error).
    /// * [`DescriptorErrorKind::NotColocated`] — the first entry whose device
    ///   tag or memory class differs from entry 0's.
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DescriptorError> {
        match <[BufferHandleEntry]>::ref_from_bytes(bytes) {
            Ok(entries) => Self::from_entries(entries),
            Err(_) => Err(DescriptorError::new(
                entry_at(bytes.len() / ENTRY_LEN),
                DescriptorErrorKind::TableLength {
                    len: bytes.len() as u64,
                },
            )),
        }
    }

    /// Validates the (at most 255) entries of a descriptor's table one by
    /// one: the same rules as [`from_entries`](Self::from_entries) in less
    /// code, for the firmware decode path.
    /// (Inlined into its one caller, the descriptor parse: the call's frame
    /// cost as much as checking an entry.) `None` when a rule is broken:
    /// [`descriptor_fault`](Self::descriptor_fault) names the first, so
    /// that the parse returns the error as it is built, not moved through
    /// a `Result` (ADR-133).
    #[inline(always)]
    pub(crate) fn from_descriptor_entries(entries: &'a [BufferHandleEntry]) -> Option<Self> {
        let Some(e0) = entries.first() else {
            return Some(Self { entries });
        };
        let [.., codes0]: &[U32; 4] = zerocopy::transmute_ref!(e0);
        let codes0 = codes0.get();
        let first = codes0 & 0x00FF_00FF; // = placement(e0)
        let last_sync = last_sync(codes0);
        // Every entry must sit where entry 0 does, so entry 0's device tag
        // and memory class stand for all of them: their pair is checked
        // once, and each entry by the colocated rule of `from_entries`
        // (the same verdict as `entry_ok` and colocation entry by entry,
        // in fewer instructions per entry).
        // Each entry's bytes are read once, without a branch; only a table
        // that breaks a rule is walked again to name the first fault.
        let mut ok = pair_ok(codes0);
        for e in entries {
            ok &= colocated_ok(zerocopy::transmute_ref!(e), first, last_sync);
        }
        ok.then_some(Self { entries })
    }

    /// The first broken rule of entries
    /// [`from_descriptor_entries`](Self::from_descriptor_entries) refused,
    /// at its offset counted from `at` (where entry 0 lies in the
    /// descriptor).
    pub(crate) fn descriptor_fault(entries: &[BufferHandleEntry], at: u32) -> DescriptorError {
        first_fault(entries, entries.first().map_or(0, placement), at)
    }

    /// Entries a parse already validated (a [`TensorView`](crate::TensorView)'s
    /// table, read again on access).
    pub(crate) const fn validated(entries: &'a [BufferHandleEntry]) -> Self {
        Self { entries }
    }

    /// Validates a slice of raw entries.
    ///
    /// # Errors
    /// As [`parse`](Self::parse), without the length check.
    #[inline]
    pub fn from_entries(entries: &'a [BufferHandleEntry]) -> Result<Self, DescriptorError> {
        validate_entries(entries)?;
        Ok(Self { entries })
    }

    /// Number of entries.
    #[must_use]
    #[inline]
    pub const fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has no entries.
    #[must_use]
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The handle at `index`, or `None` past the end.
    #[must_use]
    #[inline]
    pub const fn get(&self, index: usize) -> Option<BufferHandle> {
        match self.entries.split_at_checked(index) {
            Some((_, [first, ..])) => decode_validated(first),
            _ => None,
        }
    }

    /// An iterator over the handles, in table order.
    #[must_use]
    #[inline]
    pub fn iter(&self) -> Iter<'a> {
        Iter {
            inner: self.entries.iter(),
        }
    }

    /// The raw entries (already validated).
    #[must_use]
    #[inline]
    pub const fn entries(&self) -> &'a [BufferHandleEntry] {
        self.entries
    }

    /// The table's wire bytes.
    #[must_use]
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.entries.as_bytes()
    }

    /// Encodes `handles` as a buffer table at the start of `out`.
    ///
    /// Returns the number of bytes written (`16 * handles.len()`).
    ///
    /// # Errors
    /// [`EncodeError::OutputTooSmall`] when `out` is shorter than that;
    /// nothing is written then.
    pub fn encode(handles: &[BufferHandle], out: &mut [u8]) -> Result<usize, EncodeError> {
        let needed = handles.len().saturating_mul(ENTRY_LEN);
        let Some(dst) = out.get_mut(..needed) else {
            return Err(EncodeError::OutputTooSmall {
                needed: needed as u64,
                available: out.len() as u64,
            });
        };
        for (chunk, h) in dst.chunks_exact_mut(ENTRY_LEN).zip(handles) {
            chunk.copy_from_slice(&h.to_bytes());
        }
        Ok(needed)
    }
}

/// Decodes an entry that a `BufferTable` already validated.
#[inline]
const fn decode_validated(e: &BufferHandleEntry) -> Option<BufferHandle> {
    match e.decode() {
        Ok(h) => Some(h),
        // Unreachable: every entry of a `BufferTable` passed `validate_entries`.
        Err(_) => None,
    }
}

impl<'a> IntoIterator for BufferTable<'a> {
    type Item = BufferHandle;
    type IntoIter = Iter<'a>;
    #[inline]
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &BufferTable<'a> {
    type Item = BufferHandle;
    type IntoIter = Iter<'a>;
    #[inline]
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Iterator over the handles of a [`BufferTable`].
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    inner: core::slice::Iter<'a, BufferHandleEntry>,
}

impl Iterator for Iter<'_> {
    type Item = BufferHandle;
    #[inline]
    fn next(&mut self) -> Option<BufferHandle> {
        self.inner.next().and_then(decode_validated)
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<BufferHandle> {
        self.inner.next_back().and_then(decode_validated)
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl core::iter::FusedIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptor parse's table check as one result: the verdict, and
    /// the first fault (located from `at`) when it refuses.
    fn descriptor_table(
        entries: &[BufferHandleEntry],
        at: u32,
    ) -> Result<BufferTable<'_>, DescriptorError> {
        BufferTable::from_descriptor_entries(entries)
            .ok_or_else(|| BufferTable::descriptor_fault(entries, at))
    }

    /// The branch-free fast path agrees with `decode` on every combination of
    /// the three code bytes (2^24 cases; a sample under Miri), for the size
    /// and alignment shapes that matter to the other rules.
    #[test]
    fn fast_path_agrees_with_decode_exhaustively() {
        let step = if cfg!(miri) { 4099 } else { 1 };
        let shapes: &[(u64, u32)] = if cfg!(miri) {
            &[(1024, 64)]
        } else {
            &[(1024, 64), (0, 1), (5, 3), (100, 32)]
        };
        let mut checked = 0u64;
        for &(size, align) in shapes {
            for codes in (0u32..1 << 24).step_by(step) {
                let [dev, sync, class, _] = codes.to_le_bytes();
                for reserved in [0u8, 1] {
                    let e = entry(size, align, dev, sync, class, reserved);
                    assert_eq!(entry_ok(&words_of(&e)), e.decode().is_ok(), "{e:?}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 0);
    }

    /// Every entry 0 that decodes, as `(device tag, memory class)` codes:
    /// each named device with each class it allows, and private pairs.
    fn valid_firsts() -> impl Iterator<Item = (u8, u8)> {
        let named = (0u8..=8)
            .flat_map(|d| (0u8..=3).map(move |c| (d, c)))
            .chain([(0xF0, 0), (0xF0, 0xF0), (0xFE, 0xFE), (0xF3, 0xF7)]);
        named.filter(|&(dev, class)| entry(1024, 64, dev, 0, class, 0).decode().is_ok())
    }

    fn entry(
        size: u64,
        align: u32,
        dev: u8,
        sync: u8,
        class: u8,
        reserved: u8,
    ) -> BufferHandleEntry {
        BufferHandleEntry {
            byte_size: size.into(),
            alignment: align.into(),
            device_tag: dev,
            sync_mode: sync,
            memory_class: class,
            reserved,
        }
    }

    /// Given an entry 0 that passes [`entry_ok`], the colocated rule says
    /// exactly what `entry_ok` and colocation with entry 0 say together:
    /// for every valid entry 0, every sync byte, and device tags, memory
    /// classes and reserved bytes at and around every boundary, over the
    /// size and alignment shapes the other rules care about.
    #[test]
    fn colocated_rule_agrees_with_decode_and_colocation() {
        // Under Miri, a sample of each axis (the boundaries kept).
        let (devs, classes, first_step): (&[u8], &[u8], usize) = if cfg!(miri) {
            (&[0, 1, 9, 0xF0, 0xFF], &[0, 4, 0xF0, 0xFF], 11)
        } else {
            (
                &[0, 1, 2, 7, 8, 9, 0x7F, 0x80, 0xEF, 0xF0, 0xF3, 0xFE, 0xFF],
                &[0, 1, 2, 3, 4, 0x80, 0xEF, 0xF0, 0xF7, 0xFE, 0xFF],
                1,
            )
        };
        let syncs = (0u8..=255).filter(|s| !cfg!(miri) || matches!(s, 0..=3 | 0xFF));
        let shapes: &[(u64, u32)] = &[
            (1024, 64),
            (0, 1),
            (0, 0),
            (5, 3),
            (1 << 32, 32),
            (100, 128),
            (7, 0),
            (1, 1 << 31),
            (0, 0xFFFF_FFC0),
        ];
        let shapes = if cfg!(miri) { &shapes[..4] } else { shapes };
        let mut checked = 0u64;
        for (dev0, class0) in valid_firsts().step_by(first_step) {
            let first = u32::from(dev0) | u32::from(class0) << 16;
            let max_sync = if dev0 == 0 { 0 } else { LAST_SYNC };
            let filler = words_of(&entry(1024, 64, dev0, 0, class0, 0));
            for &dev in devs.iter().chain(&[dev0]) {
                for &class in classes.iter().chain(&[class0]) {
                    for sync in syncs.clone() {
                        for reserved in [0u8, 1, 0x80] {
                            for &(size, align) in shapes {
                                let e = entry(size, align, dev, sync, class, reserved);
                                let w = words_of(&e);
                                let slow = e.decode().is_ok() && placement(&e) == first;
                                assert_eq!(
                                    colocated_ok(&w, first, max_sync),
                                    slow,
                                    "{e:?} first {first:#x}"
                                );
                                // The many-entry form (SSE2 on x86-64), with
                                // the entry in each of 8 lanes in turn among
                                // valid ones, for the sync bytes at the
                                // edges (the bound is per byte: the others
                                // fail as 3 does).
                                // (Under Miri, every fifth case.)
                                let edge = matches!(sync, 0..=4 | 0x7F | 0x80 | 0xFE | 0xFF);
                                if edge && (!cfg!(miri) || checked.is_multiple_of(5)) {
                                    let mut group = [filler; 8];
                                    group[(checked % 8) as usize] = w;
                                    assert_eq!(
                                        Colocated::new(first, max_sync).all_ok(&group),
                                        slow,
                                        "{e:?} in lane {} first {first:#x}",
                                        checked % 8
                                    );
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 1_000, "{checked}");
    }

    fn words_of(e: &BufferHandleEntry) -> [U32; 4] {
        <[U32; 4]>::read_from_bytes(e.as_bytes()).unwrap()
    }

    /// A fault planted in each word of an entry, at every position of a
    /// table of 79 entries (a full chunk, then a group of eight, a group of
    /// four and a tail of three: every lane of the vector path and the
    /// scalar tail), on a CPU table (no sync mode allowed) and a CUDA one:
    /// the table's verdict is the entry-by-entry walk's, and every position
    /// and word sees faults.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // indices below 79
    fn a_fault_in_any_lane_and_word_is_the_walks_first_fault() {
        const LEN: usize = CHUNK + 15;
        // Under Miri: each lane of the first group of four, the second half
        // of a group of eight, then chunk 1's group of eight, group of four
        // and tail; a few bits of each byte; the CUDA table only.
        let all: [usize; LEN] = core::array::from_fn(|i| i);
        let (positions, bits, devs): (&[usize], &[u32], &[(u8, u8)]) = if cfg!(miri) {
            (&[0, 1, 2, 3, 6, 66, 73, 78], &[0, 9, 18, 31], &[(1, 0)])
        } else {
            (
                &all,
                &[
                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 23, 24, 25, 30, 31,
                ],
                &[(0, 0), (1, 0)],
            )
        };
        for &(dev, class) in devs {
            // Valid entries of every shape the size rule tells apart: empty
            // with alignment 1 and 2^31, non-empty with 64 and 4096, a size
            // above 4 GiB; sync modes where the device has them.
            let table: [BufferHandleEntry; LEN] = core::array::from_fn(|i| {
                let sync = if dev == 0 { 0 } else { (i % 3) as u8 };
                let (size, align) =
                    [(0, 1), (4096, 64), (0, 1 << 31), (1 << 40, 4096), (1, 128)][i % 5];
                entry(size, align, dev, sync, class, 0)
            });
            assert_eq!(validate_entries(&table), Ok(()));
            for &i in positions {
                for word in 0..4 {
                    let mut faults = 0;
                    for &bit in bits {
                        let mut bad = table;
                        if word < 2 {
                            // An empty buffer aligned below 64: any size
                            // bit is then a fault.
                            bad[i].byte_size = 0.into();
                            bad[i].alignment = (1u32 << (i % 6)).into();
                        }
                        let bytes = bad[i].as_mut_bytes();
                        let b = word * 4 + (bit / 8) as usize;
                        bytes[b] ^= 1 << (bit % 8);
                        let expected = check_each(&bad, 0, placement(&bad[0]));
                        faults += usize::from(expected.is_err());
                        assert_eq!(
                            validate_entries(&bad),
                            expected,
                            "entry {i} word {word} bit {bit} dev {dev}"
                        );
                    }
                    assert!(
                        faults > 0,
                        "entry {i} word {word} dev {dev}: no fault planted"
                    );
                }
            }
        }
    }

    /// Tables of varied valid entries with one or two faults planted at
    /// random places: the table's verdict is the entry-by-entry walk's
    /// (same first fault, same index and offset), on both sides of every
    /// chunk boundary.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // indices below 200
    fn table_verdict_is_the_first_fault_in_table_order() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let rounds = if cfg!(miri) { 12 } else { 1500 };
        let firsts = valid_firsts().count() as u64;
        let mut faults = 0;
        for _ in 0..rounds {
            let len = (next() % 200) as usize + 1;
            let (dev, class) = valid_firsts().nth((next() % firsts) as usize).unwrap();
            let mut all = [entry(0, 1, 0, 0, 0, 0); 200];
            let table = &mut all[..len];
            for e in table.iter_mut() {
                *e = {
                    let r = next();
                    let sync = if dev == 0 { 0 } else { (r % 3) as u8 };
                    let size = (r >> 8) % 3 * (r >> 20);
                    let align = if size == 0 {
                        1 << ((r >> 60) % 8)
                    } else {
                        64 << ((r >> 58) % 8)
                    };
                    entry(size, align, dev, sync, class, 0)
                };
            }
            for _ in 0..(next() % 3) {
                let i = (next() % len as u64) as usize;
                let byte = (next() % 16) as usize;
                table[i].as_mut_bytes()[byte] ^= 1 << (next() % 8);
            }
            let first = placement(&table[0]);
            let expected = check_each(table, 0, first);
            faults += usize::from(expected.is_err());
            assert_eq!(validate_entries(table), expected, "{table:?}");
        }
        assert!(
            faults > rounds / 8,
            "{faults} of {rounds} tables had a fault"
        );
    }

    /// The descriptor's table check (entry 0's pair once, every entry
    /// against its placement) gives the same verdict and the same first
    /// fault as the general one, over two-entry tables whose code bytes
    /// run through every class of value (named, private, reserved, out of
    /// range) and whose sizes and alignments break and keep their rules.
    #[test]
    fn descriptor_table_check_agrees_with_general_check() {
        let devs = [0u8, 1, 2, 8, 9, 0xEF, 0xF0, 0xFE, 0xFF];
        let syncs = [0u8, 1, 2, 3];
        let classes = [0u8, 1, 2, 3, 4, 0xF0, 0xFE, 0xFF];
        let mut codes = [0u32; 9 * 4 * 8 * 2];
        let mut n = 0;
        for d in devs {
            for s in syncs {
                for c in classes {
                    for r in [0u8, 1] {
                        codes[n] = u32::from_le_bytes([d, s, c, r]);
                        n += 1;
                    }
                }
            }
        }
        let entry = |codes: u32, size: u64, align: u32| {
            let [dev, sync, class, reserved] = codes.to_le_bytes();
            entry(size, align, dev, sync, class, reserved)
        };
        let step = if cfg!(miri) { 97 } else { 1 };
        let mut checked = 0u64;
        for &a in codes.iter().step_by(step) {
            for &b in codes.iter().step_by(step) {
                for (size, align) in [(1024u64, 64u32), (0, 1), (5, 3), (100, 32)] {
                    let table = [entry(a, 4096, 128), entry(b, size, align)];
                    assert_eq!(
                        descriptor_table(&table, 0),
                        BufferTable::from_entries(&table),
                        "{table:?}"
                    );
                    // Located from where the table lies in a descriptor.
                    assert_eq!(
                        descriptor_table(&table, 45).map_err(|e| (e.offset(), e.kind())),
                        BufferTable::from_entries(&table).map_err(|e| (e.offset() + 45, e.kind())),
                        "{table:?}"
                    );
                    let one = [entry(b, size, align)];
                    assert_eq!(
                        descriptor_table(&one, 0),
                        BufferTable::from_entries(&one),
                        "{one:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 100);
        assert_eq!(
            BufferTable::from_descriptor_entries(&[]).map(|t| t.len()),
            Some(0)
        );
    }
}
