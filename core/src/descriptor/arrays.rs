//! Zero-copy views of the little-endian arrays inside a descriptor (shape,
//! strides, Morton bits, CSF mode order). Each wraps a slice of zerocopy
//! wire integers and hands out native values.

use zerocopy::little_endian::{I64, U32, U64};

macro_rules! le_array {
    ($(#[$meta:meta])* $name:ident, $raw:ty, $item:ty) => {
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

        #[cfg(feature = "defmt")]
        impl defmt::Format for $name<'_> {
            fn format(&self, f: defmt::Formatter<'_>) {
                defmt::write!(f, "[");
                for (i, v) in self.iter().enumerate() {
                    if i > 0 {
                        defmt::write!(f, ", ");
                    }
                    defmt::write!(f, "{}", v);
                }
                defmt::write!(f, "]");
            }
        }
    };
}

le_array!(
    /// A run of `uint64` values: a shape, a tile shape, a shard's parent
    /// shape or offset. `u64::MAX` in a shape is the dynamic sentinel
    /// ([`DYNAMIC`](crate::DYNAMIC)).
    Dims, U64, u64
);
le_array!(
    /// A run of `int64` strides, in elements (or tiles).
    Strides, I64, i64
);
le_array!(
    /// A run of `uint32` values (Morton bits, CSF mode order).
    Words, U32, u32
);

impl Dims<'_> {
    /// The product of the values from index `skip` on, `None` when it does
    /// not fit in `u64`. A zero anywhere makes the product zero, whatever
    /// the other factors and their order: a shape `[2^40, 2^40, 0]` has no
    /// elements, it does not overflow.
    #[must_use]
    pub(crate) fn product_from(&self, skip: usize) -> Option<u64> {
        // The common case costs one pass; only an overflow looks for a zero.
        match self.iter().skip(skip).try_fold(1u64, u64::checked_mul) {
            Some(product) => Some(product),
            None if self.iter().skip(skip).any(|d| d == 0) => Some(0),
            None => None,
        }
    }
}
