//! Statistics section (72 bytes): advisory summaries of the data, each group
//! valid only when its bit of `computed_mask` is set; the field map and
//! mask bits are `docs/spec/metadata.md` § Statistics section.
//!
//! A reader checks every valid group against the spec's ranges (ratio in
//! `[0, 1]`, `stddev >= 0`, `nm_n <= nm_m`, flags 0 or 1, `min <= max`,
//! `abs_max = max(|min|, |max|)`) and `nnz` against a sparse layout's own.
//! Fields whose bit is clear are carried untouched, so re-encoding is exact.

use zerocopy::little_endian::{F64, U32, U64};

use crate::field::wire_fields;

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
pub(crate) const NNZ_AT: u32 = crate::field::at!(StatisticsEntry.nnz);

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

/// The sign bit of an IEEE binary64.
const SIGN: u64 = 1 << 63;
/// `key(1.0)`.
#[allow(clippy::cast_possible_wrap)]
const ONE: i64 = 0x3FF0_0000_0000_0000;

/// An integer with the order of the float whose bits are `bits` (±0 equal);
/// `None` for NaN. Positive floats order like their bits; negative ones in
/// reverse.
#[allow(clippy::cast_possible_wrap)] // both casts are below 2^63
const fn key(bits: u64) -> Option<i64> {
    let magnitude = bits & !SIGN;
    if magnitude > 0x7FF0_0000_0000_0000 {
        return None; // NaN
    }
    Some(if bits & SIGN != 0 {
        (magnitude as i64).wrapping_neg()
    } else {
        magnitude as i64
    })
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
        Self::from_entry(entry).check(at)?;
        Ok(entry)
    }

    /// The section's rules (`at`: its offset): the parser's, and the
    /// encoder's over the entry it writes.
    pub(crate) fn check(&self, at: u32) -> Result<(), DescriptorError> {
        let (s, raw) = (self, self.raw);
        let fail = |off: u32, kind| Err(DescriptorError::new(at.saturating_add(off), kind));
        let inconsistent = |field| DescriptorErrorKind::StatisticsInconsistent { field };
        let reserved = |field| DescriptorErrorKind::ReservedNonZero { field };
        let undefined = s.mask() & !bit::DEFINED;
        if undefined != 0 {
            return fail(0, DescriptorErrorKind::ReservedFlags(undefined));
        }
        if raw.reserved.get() != 0 {
            return fail(4, reserved("statistics._reserved"));
        }
        if raw.reserved2 != [0; 4] {
            return fail(68, reserved("statistics._reserved2"));
        }
        // Float rules through integer keys: no soft-float code on firmware.
        if s.has(bit::SPARSITY) {
            let ratio = key(raw.sparsity_ratio.get().to_bits());
            if !matches!(ratio, Some(k) if (0..=ONE).contains(&k)) {
                return fail(16, inconsistent("sparsity_ratio"));
            }
        }
        if s.has(bit::RANGE) {
            let (min, max) = (raw.value_min.get().to_bits(), raw.value_max.get().to_bits());
            let abs = key(raw.value_abs_max.get().to_bits());
            let ok = match (key(min), key(max), abs) {
                (Some(lo), Some(hi), Some(a)) => {
                    lo <= hi && Some(a) == key(min & !SIGN).max(key(max & !SIGN))
                }
                _ => false,
            };
            if !ok {
                return fail(24, inconsistent("value_range"));
            }
        }
        if s.has(bit::STATS) && !matches!(key(raw.value_stddev.get().to_bits()), Some(k) if k >= 0)
        {
            return fail(56, inconsistent("value_stddev"));
        }
        if s.nm_sparsity().is_some_and(|(n, m)| n > m) {
            return fail(64, inconsistent("nm_n"));
        }
        if s.has(bit::NAN_INF) {
            if raw.has_nan > 1 {
                return fail(66, inconsistent("has_nan"));
            }
            if raw.has_inf > 1 {
                return fail(67, inconsistent("has_inf"));
            }
        }
        Ok(())
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
