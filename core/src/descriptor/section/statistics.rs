//! Statistics section (72 bytes): advisory summaries of the data, each group
//! valid only when its bit of `computed_mask` is set; the field map and
//! mask bits are `docs/spec/metadata.md` § Statistics section.
//!
//! A reader checks every valid group against the spec's ranges (ratio in
//! `[0, 1]`, `stddev >= 0`, `nm_n <= nm_m`, flags 0 or 1, `min <= max`,
//! `abs_max = max(|min|, |max|)`) and `nnz` against a sparse layout's own.
//! Fields whose bit is clear are carried untouched, so re-encoding is exact.

use zerocopy::little_endian::{F64, U32, U64};

use crate::FieldName;
use crate::field::{at, field_row, wire_fields};

use crate::error::{DescriptorError, DescriptorErrorKind};

use super::super::cursor::{Reader, Writer};

wire_fields! {
    /// The statistics section as it lies on the wire.
    StatisticsEntry {
        /// Validity bits.
        computed_mask: U32,
        /// Reserved, zero.
        reserved: U32 as "_reserved",
        /// Non-zero count.
        nnz: U64,
        /// Fraction of zeros.
        sparsity_ratio: F64,
        /// Smallest value.
        value_min: F64,
        /// Largest value.
        value_max: F64,
        /// Largest magnitude.
        value_abs_max: F64,
        /// Mean.
        value_mean: F64,
        /// Population standard deviation.
        value_stddev: F64,
        /// N of N:M structured sparsity.
        nm_n: u8,
        /// M of N:M structured sparsity.
        nm_m: u8,
        /// 1 if a NaN is present.
        has_nan: u8,
        /// 1 if an infinity is present.
        has_inf: u8,
        /// Reserved, zero.
        reserved2: [u8; 4] as "_reserved2",
    } = 72;
}

/// Offset of `nnz` in the section.
pub(crate) const NNZ_AT: u32 = at!(StatisticsEntry.nnz);

/// Advisory statistics of a tensor's values. Getters return `None` for a
/// group whose mask bit is clear.
///
/// ```
/// use hurray_core::Statistics;
/// let s = Statistics::new().with_nnz(12).with_value_range(-1.0, 3.0);
/// assert_eq!(s.nnz(), Some(12));
/// assert_eq!(s.value_range(), Some((-1.0, 3.0, 3.0)));
/// assert_eq!(s.value_stats(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Statistics {
    raw: StatisticsEntry,
}

/// `computed_mask` bits.
mod bit {
    pub(super) const NNZ: u32 = 1 << 0;
    pub(super) const SPARSITY: u32 = 1 << 1;
    pub(super) const RANGE: u32 = 1 << 2;
    pub(super) const STATS: u32 = 1 << 3;
    pub(super) const NM: u32 = 1 << 4;
    pub(super) const NAN_INF: u32 = 1 << 5;
    pub(super) const DEFINED: u32 = 0b11_1111;
}

/// The group rules by bit of `check`'s broken-rule word: the offset and
/// name of the field at fault.
const RULES: [(u8, FieldName); 6] = [
    field_row!(StatisticsEntry.sparsity_ratio, SparsityRatio),
    field_row!(StatisticsEntry.value_min, ValueRange),
    field_row!(StatisticsEntry.value_stddev, ValueStddev),
    field_row!(StatisticsEntry.nm_n, NmN),
    field_row!(StatisticsEntry.has_nan, HasNan),
    field_row!(StatisticsEntry.has_inf, HasInf),
];

/// The sign bit of an IEEE binary64.
const SIGN: u64 = 1 << 63;
/// The bits of `1.0`.
const ONE: u64 = 0x3FF0_0000_0000_0000;
/// The bits of `+inf`, the largest magnitude that is not NaN.
const INF: u64 = 0x7FF0_0000_0000_0000;

/// An integer with the order of the (not NaN) float whose bits are `bits`,
/// ±0 equal: positive floats order like their bits, negative ones in
/// reverse.
#[allow(clippy::cast_possible_wrap)] // below 2^63
const fn key(bits: u64) -> i64 {
    let magnitude = (bits & !SIGN) as i64;
    if bits & SIGN != 0 {
        magnitude.wrapping_neg()
    } else {
        magnitude
    }
}

impl Default for Statistics {
    fn default() -> Self {
        Self::new()
    }
}

impl Statistics {
    /// No statistic known.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            raw: StatisticsEntry {
                computed_mask: U32::new(0),
                reserved: U32::new(0),
                nnz: U64::new(0),
                sparsity_ratio: F64::new(0.0),
                value_min: F64::new(0.0),
                value_max: F64::new(0.0),
                value_abs_max: F64::new(0.0),
                value_mean: F64::new(0.0),
                value_stddev: F64::new(0.0),
                nm_n: 0,
                nm_m: 0,
                has_nan: 0,
                has_inf: 0,
                reserved2: [0; 4],
            },
        }
    }

    const fn has(&self, b: u32) -> bool {
        self.raw.computed_mask.get() & b != 0
    }

    const fn set(mut self, b: u32) -> Self {
        self.raw.computed_mask = U32::new(self.raw.computed_mask.get() | b);
        self
    }

    /// The raw `computed_mask`.
    #[must_use]
    pub const fn mask(&self) -> u32 {
        self.raw.computed_mask.get()
    }

    /// The wire form.
    #[must_use]
    pub const fn entry(&self) -> &StatisticsEntry {
        &self.raw
    }

    /// Non-zero element count.
    #[must_use]
    pub const fn nnz(&self) -> Option<u64> {
        nnz_of(&self.raw)
    }

    /// Fraction of zero elements, in `[0, 1]`.
    #[must_use]
    pub fn sparsity_ratio(&self) -> Option<f64> {
        self.has(bit::SPARSITY)
            .then(|| self.raw.sparsity_ratio.get())
    }

    /// `(min, max, abs_max)`.
    #[must_use]
    pub fn value_range(&self) -> Option<(f64, f64, f64)> {
        self.has(bit::RANGE).then(|| {
            (
                self.raw.value_min.get(),
                self.raw.value_max.get(),
                self.raw.value_abs_max.get(),
            )
        })
    }

    /// `(mean, stddev)`.
    #[must_use]
    pub fn value_stats(&self) -> Option<(f64, f64)> {
        self.has(bit::STATS)
            .then(|| (self.raw.value_mean.get(), self.raw.value_stddev.get()))
    }

    /// `(n, m)` of N:M structured sparsity.
    #[must_use]
    pub const fn nm_sparsity(&self) -> Option<(u8, u8)> {
        if self.has(bit::NM) {
            Some((self.raw.nm_n, self.raw.nm_m))
        } else {
            None
        }
    }

    /// `(has_nan, has_inf)`.
    #[must_use]
    pub const fn nan_inf(&self) -> Option<(bool, bool)> {
        if self.has(bit::NAN_INF) {
            Some((self.raw.has_nan == 1, self.raw.has_inf == 1))
        } else {
            None
        }
    }

    /// With a known non-zero count.
    #[must_use]
    pub const fn with_nnz(mut self, nnz: u64) -> Self {
        self.raw.nnz = U64::new(nnz);
        self.set(bit::NNZ)
    }

    /// With a known sparsity ratio.
    #[must_use]
    pub const fn with_sparsity_ratio(mut self, ratio: f64) -> Self {
        self.raw.sparsity_ratio = F64::new(ratio);
        self.set(bit::SPARSITY)
    }

    /// With a known value range; `abs_max` is derived.
    #[must_use]
    pub const fn with_value_range(mut self, min: f64, max: f64) -> Self {
        self.raw.value_min = F64::new(min);
        self.raw.value_max = F64::new(max);
        self.raw.value_abs_max = F64::new(min.abs().max(max.abs()));
        self.set(bit::RANGE)
    }

    /// With a known mean and standard deviation.
    #[must_use]
    pub const fn with_value_stats(mut self, mean: f64, stddev: f64) -> Self {
        self.raw.value_mean = F64::new(mean);
        self.raw.value_stddev = F64::new(stddev);
        self.set(bit::STATS)
    }

    /// With a known N:M structured sparsity.
    #[must_use]
    pub const fn with_nm_sparsity(mut self, n: u8, m: u8) -> Self {
        self.raw.nm_n = n;
        self.raw.nm_m = m;
        self.set(bit::NM)
    }

    /// With known NaN/infinity presence.
    #[must_use]
    pub const fn with_nan_inf(mut self, has_nan: bool, has_inf: bool) -> Self {
        self.raw.has_nan = has_nan as u8;
        self.raw.has_inf = has_inf as u8;
        self.set(bit::NAN_INF)
    }

    /// A statistics value from its (validated) wire form.
    #[must_use]
    pub const fn from_entry(raw: &StatisticsEntry) -> Self {
        Self { raw: *raw }
    }

    pub(crate) fn parse<'a>(r: &mut Reader<'a>) -> Result<&'a StatisticsEntry, DescriptorError> {
        let at = r.pos();
        let entry = r.take::<StatisticsEntry>()?;
        check(entry, at)?;
        Ok(entry)
    }

    pub(crate) fn encode(&self, w: &mut Writer<'_>) {
        w.value(&self.raw);
    }
}

/// The `nnz` of an entry, if its mask says it is present (read in place,
/// without copying the entry).
pub(crate) const fn nnz_of(raw: &StatisticsEntry) -> Option<u64> {
    if raw.computed_mask.get() & bit::NNZ != 0 {
        Some(raw.nnz.get())
    } else {
        None
    }
}

/// The bits of a float field, read as an integer.
fn bits(f: F64) -> u64 {
    let u: U64 = zerocopy::transmute!(f);
    u.get()
}

/// The section's rules (`at`: its offset): the parser's, and the encoder's
/// over the entry it writes. The float rules compare bits, never floats
/// (no soft-float code on firmware); each group rule is one bit of a word,
/// a bit below its group's mask bit (`has_inf` at its group's), in the
/// order of `RULES`, and the first broken one is named.
pub(crate) fn check(raw: &StatisticsEntry, at: u32) -> Result<(), DescriptorError> {
    let mask = raw.computed_mask.get();
    let undefined = mask & !bit::DEFINED;
    let (off, kind) = if undefined != 0 {
        let kind = DescriptorErrorKind::ReservedFlags(undefined);
        (at!(StatisticsEntry.computed_mask), kind)
    } else if raw.reserved.get() != 0 || raw.reserved2 != [0; 4] {
        let (off, field) = if raw.reserved.get() == 0 {
            (
                at!(StatisticsEntry.reserved2),
                FieldName::StatisticsReserved2,
            )
        } else {
            (at!(StatisticsEntry.reserved), FieldName::StatisticsReserved)
        };
        (off, DescriptorErrorKind::ReservedNonZero { field })
    } else {
        let (min, max, abs) = (
            bits(raw.value_min),
            bits(raw.value_max),
            bits(raw.value_abs_max),
        );
        let (ratio, stddev) = (bits(raw.sparsity_ratio), bits(raw.value_stddev));
        // In [0, 1] and at least 0 (-0 included, NaN not).
        let ratio_ok = ratio <= ONE || ratio == SIGN;
        let stddev_ok = stddev <= INF || stddev == SIGN;
        // Neither bound NaN, `min <= max`, and `abs_max` the larger
        // magnitude (-0 where both are zero).
        let top = (min & !SIGN).max(max & !SIGN);
        let range_ok =
            top <= INF && key(min) <= key(max) && (abs == top || (abs == SIGN && top == 0));
        let broken = u32::from(!ratio_ok)
            | u32::from(!range_ok) << 1
            | u32::from(!stddev_ok) << 2
            | u32::from(raw.nm_n > raw.nm_m) << 3
            | u32::from(raw.has_nan > 1) << 4
            | u32::from(raw.has_inf > 1) << 5;
        let broken = broken & (mask >> 1 | (mask & bit::NAN_INF));
        let Some(&(off, field)) = RULES.get(broken.trailing_zeros() as usize) else {
            return Ok(());
        };
        (
            u32::from(off),
            DescriptorErrorKind::StatisticsInconsistent { field },
        )
    };
    Err(DescriptorError::new(at.saturating_add(off), kind))
}
