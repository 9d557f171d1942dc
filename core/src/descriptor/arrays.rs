//! Zero-copy views of the little-endian arrays inside a descriptor (shape,
//! strides, Morton bits, CSF mode order). Each wraps a slice of zerocopy
//! wire integers and hands out native values.

use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::{Immutable, IntoBytes};

use super::cursor::Writer;

macro_rules! le_array {
    ($(#[$meta:meta])* $name:ident, $raw:ty, $item:ty, $values:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name<'a>(&'a [$raw]);

        impl<'a> $name<'a> {
            /// Wraps wire values.
            #[must_use]
            #[inline]
            pub const fn new(raw: &'a [$raw]) -> Self {
                Self(raw)
            }

            /// Number of values.
            #[must_use]
            #[inline]
            pub const fn len(&self) -> usize {
                self.0.len()
            }

            /// Whether there are no values.
            #[must_use]
            #[inline]
            pub const fn is_empty(&self) -> bool {
                self.0.is_empty()
            }

            /// The value at `index`, or `None` past the end.
            #[must_use]
            #[inline]
            pub fn get(&self, index: usize) -> Option<$item> {
                self.0.get(index).map(|v| v.get())
            }

            /// The values, in order.
            pub fn iter(&self) -> impl DoubleEndedIterator<Item = $item> + ExactSizeIterator + 'a {
                self.0.iter().map(|v| v.get())
            }

            /// The wire values, for zero-copy use.
            #[must_use]
            #[inline]
            pub const fn as_raw(&self) -> &'a [$raw] {
                self.0
            }

            /// Copies the values into `out`, returning the filled prefix;
            /// `None` if `out` is shorter than [`len`](Self::len).
            pub fn copy_to<'o>(&self, out: &'o mut [$item]) -> Option<&'o [$item]> {
                let out = out.get_mut(..self.0.len())?;
                for (o, v) in out.iter_mut().zip(self.0) {
                    *o = v.get();
                }
                Some(out)
            }
        }

        impl<'a> From<$name<'a>> for $values<'a> {
            #[inline]
            fn from(v: $name<'a>) -> Self {
                Self::Wire(v.as_raw())
            }
        }

        #[cfg(feature = "defmt")]
        impl defmt::Format for $name<'_> {
            fn format(&self, f: defmt::Formatter<'_>) {
                crate::defmt_impls::list(f, self.iter());
            }
        }
    };
}

le_array!(
    /// A run of `uint64` values: a shape, a tile shape, a shard's parent
    /// shape or offset. `u64::MAX` in a shape is the dynamic sentinel
    /// ([`DYNAMIC`](crate::DYNAMIC)).
    Dims, U64, u64, DimValues
);
le_array!(
    /// A run of `int64` strides, in elements (or tiles).
    Strides, I64, i64, StrideValues
);
le_array!(
    /// A run of `uint32` values (Morton bits, CSF mode order).
    Words, U32, u32, WordValues
);

/// The product of `dims` from index `skip` on, `None` when it does not fit
/// in `u64`. A zero anywhere makes the product zero, whatever the other
/// factors and their order: a shape `[2^40, 2^40, 0]` has no elements, it
/// does not overflow.
pub(super) fn product_from(dims: impl Iterator<Item = u64> + Clone, skip: usize) -> Option<u64> {
    // The common case costs one pass; only an overflow looks for a zero.
    match dims.clone().skip(skip).try_fold(1u64, u64::checked_mul) {
        Some(product) => Some(product),
        None if dims.skip(skip).any(|d| d == 0) => Some(0),
        None => None,
    }
}

/// The values of an array field an encoder writes: native values, or the
/// wire values a parsed descriptor holds, borrowed as they lie (no copy,
/// no allocation). Every value of the native type has a wire form and the
/// reverse, so both are equally valid input.
///
/// ```
/// use hurray_core::{DimValues, Values};
/// let native: DimValues<'_> = Values::from(&[3u64, 4][..]);
/// assert_eq!(native.len(), 2);
/// assert!(native.iter().eq([3, 4]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Values<'a, N, W> {
    /// Native values.
    Native(&'a [N]),
    /// Little-endian wire values (from a parsed descriptor).
    Wire(&'a [W]),
}

/// A shape or another run of `uint64` values to encode.
pub type DimValues<'a> = Values<'a, u64, U64>;
/// Strides to encode.
pub type StrideValues<'a> = Values<'a, i64, I64>;
/// Morton bits or a CSF mode order to encode.
pub type WordValues<'a> = Values<'a, u32, U32>;

impl<N, W> Values<'_, N, W> {
    /// Number of values.
    #[must_use]
    #[inline]
    pub const fn len(&self) -> usize {
        match self {
            Self::Native(v) => v.len(),
            Self::Wire(v) => v.len(),
        }
    }

    /// Whether there are no values.
    #[must_use]
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a, N: Copy, W: Copy + Into<N>> Values<'a, N, W> {
    /// The value at `index`, or `None` past the end.
    #[must_use]
    #[inline]
    pub fn get(&self, index: usize) -> Option<N> {
        match self {
            Self::Native(v) => v.get(index).copied(),
            Self::Wire(v) => v.get(index).map(|&w| w.into()),
        }
    }

    /// The values, in order.
    #[must_use]
    pub const fn iter(&self) -> ValuesIter<'a, N, W> {
        ValuesIter(*self)
    }
}

/// Iterator over [`Values`], yielding native values.
#[derive(Debug, Clone)]
pub struct ValuesIter<'a, N, W>(Values<'a, N, W>);

impl<N: Copy, W: Copy + Into<N>> Iterator for ValuesIter<'_, N, W> {
    type Item = N;

    #[inline]
    fn next(&mut self) -> Option<N> {
        match &mut self.0 {
            Values::Native(v) => {
                let (first, rest) = v.split_first()?;
                *v = rest;
                Some(*first)
            }
            Values::Wire(v) => {
                let (first, rest) = v.split_first()?;
                *v = rest;
                Some((*first).into())
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.0.len(), Some(self.0.len()))
    }
}

impl<N: Copy, W: Copy + Into<N>> ExactSizeIterator for ValuesIter<'_, N, W> {}

impl<'a, N, W> From<&'a [N]> for Values<'a, N, W> {
    #[inline]
    fn from(v: &'a [N]) -> Self {
        Self::Native(v)
    }
}

impl<'a, N, W, const K: usize> From<&'a [N; K]> for Values<'a, N, W> {
    #[inline]
    fn from(v: &'a [N; K]) -> Self {
        Self::Native(v)
    }
}

impl<N: IntoBytes + Immutable, W: IntoBytes + Immutable> Values<'_, N, W> {
    /// Writes the values in wire order: one copy of the wire values, and on
    /// a little-endian target one copy of the native values too (their
    /// bytes already are the wire bytes).
    pub(crate) fn write(&self, w: &mut Writer<'_>)
    where
        N: Copy + ToLe,
    {
        match self {
            Self::Wire(v) => w.bytes(v.as_bytes()),
            Self::Native(v) => write_native(v, w),
        }
    }
}

/// Writes native integers little-endian: on a little-endian target their
/// bytes already are the wire bytes (one copy).
pub(crate) fn write_native<N: IntoBytes + Immutable + ToLe>(v: &[N], w: &mut Writer<'_>) {
    #[cfg(target_endian = "little")]
    w.bytes(v.as_bytes());
    #[cfg(not(target_endian = "little"))]
    v.iter().for_each(|n| n.write_le(w));
}

/// A native integer written little-endian (the big-endian path of
/// [`Values::write`]).
pub(crate) trait ToLe {
    /// Writes `self` little-endian.
    #[allow(dead_code)] // used on big-endian targets only
    fn write_le(&self, w: &mut Writer<'_>);
}

macro_rules! to_le {
    ($($t:ty),*) => {$(
        impl ToLe for $t {
            #[inline]
            fn write_le(&self, w: &mut Writer<'_>) {
                w.bytes(&self.to_le_bytes());
            }
        }
    )*};
}
to_le!(u64, i64, u32);
