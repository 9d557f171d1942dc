//! The tensor descriptor: a fixed header, the shape, optional strides and the
//! buffer table (`docs/spec/metadata.md`).
//!
//! # Contract
//!
//! [`TensorView::parse`] accepts any `&[u8]` and either returns a view whose
//! every accessor is infallible, or a typed [`Error`]. It checks, in order:
//! the header (length, magic, major version, required flags, reserved field,
//! dtype, ndim, data-buffer index, total length), the three regions (8-byte
//! aligned, after the header, inside `total_len`, pairwise disjoint), every
//! dimension and stride, every buffer-table entry, and finally that the
//! elements addressed by shape × strides × dtype from `byte_offset` lie
//! inside the data buffer's `byte_size`, using overflow-checked 128-bit
//! arithmetic. It never panics, never allocates and never copies: shape,
//! strides and table are zerocopy views into the input.
//!
//! [`TensorDescriptor::encode`] writes the canonical layout (header, shape,
//! strides, table, back to back) and then runs `TensorView::parse` over its
//! own output, so the encoder cannot emit a descriptor the decoder rejects.

use core::fmt;

use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{I64, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::handle::{BufferHandle, ENTRY_LEN};
use crate::table::BufferTable;

/// The four bytes every descriptor starts with.
pub const DESCRIPTOR_MAGIC: [u8; 4] = *b"HRAY";
/// The major version this crate reads and writes. A reader MUST reject any other.
pub const VERSION_MAJOR: u8 = 1;
/// The minor version this crate writes. A reader accepts any minor version.
pub const VERSION_MINOR: u8 = 0;
/// Length of the fixed header in bytes.
pub const HEADER_LEN: usize = 40;
/// The most dimensions a descriptor may declare.
pub const MAX_NDIM: u8 = 32;

/// The fixed 40-byte header of a tensor descriptor (`docs/spec/metadata.md` § Header).
///
/// | Offset | Field            | Type      |
/// |-------:|------------------|-----------|
/// | 0      | `magic`          | `"HRAY"`  |
/// | 4      | `version_major`  | u8        |
/// | 5      | `version_minor`  | u8        |
/// | 6      | `flags`          | u16 LE    |
/// | 8      | `dtype`          | u8        |
/// | 9      | `ndim`           | u8        |
/// | 10     | `buffer_count`   | u16 LE    |
/// | 12     | `data_buffer`    | u16 LE    |
/// | 14     | `reserved`       | u16 LE    |
/// | 16     | `byte_offset`    | u64 LE    |
/// | 24     | `shape_offset`   | u32 LE    |
/// | 28     | `strides_offset` | u32 LE    |
/// | 32     | `table_offset`   | u32 LE    |
/// | 36     | `total_len`      | u32 LE    |
///
/// Any 40 bytes form a `DescriptorHeader`; [`TensorView::parse`] validates it.
#[derive(
    FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy, PartialEq, Eq, Hash,
)]
#[repr(C)]
pub struct DescriptorHeader {
    /// [`DESCRIPTOR_MAGIC`].
    pub magic: [u8; 4],
    /// Major version; readers reject any but [`VERSION_MAJOR`].
    pub version_major: u8,
    /// Minor version; later minors only add ignorable flags and header space.
    pub version_minor: u8,
    /// [`Flags`] bits.
    pub flags: U16,
    /// [`DType`] code.
    pub dtype: u8,
    /// Number of dimensions, at most [`MAX_NDIM`].
    pub ndim: u8,
    /// Entries in the buffer table, at least 1.
    pub buffer_count: U16,
    /// Index in the table of the buffer holding the elements.
    pub data_buffer: U16,
    /// Reserved; must be zero.
    pub reserved: U16,
    /// Offset in bytes of element `[0, …, 0]` from the data buffer's start.
    pub byte_offset: U64,
    /// Offset of the shape (`ndim` × u64 LE) from the descriptor start.
    pub shape_offset: U32,
    /// Offset of the strides (`ndim` × i64 LE, in elements), or 0 for compact row-major.
    pub strides_offset: U32,
    /// Offset of the buffer table (`buffer_count` × 16 bytes).
    pub table_offset: U32,
    /// Length of the whole descriptor in bytes.
    pub total_len: U32,
}

assert_eq_size!(DescriptorHeader, [u8; HEADER_LEN]);
assert_eq_align!(DescriptorHeader, u8);
const_assert_eq!(core::mem::offset_of!(DescriptorHeader, flags), 6);
const_assert_eq!(core::mem::offset_of!(DescriptorHeader, dtype), 8);
const_assert_eq!(core::mem::offset_of!(DescriptorHeader, buffer_count), 10);
const_assert_eq!(core::mem::offset_of!(DescriptorHeader, byte_offset), 16);
const_assert_eq!(core::mem::offset_of!(DescriptorHeader, shape_offset), 24);
const_assert_eq!(core::mem::offset_of!(DescriptorHeader, table_offset), 32);
const_assert_eq!(core::mem::offset_of!(DescriptorHeader, total_len), 36);

/// The descriptor's flag bits.
///
/// Bits 0–7 are *required*: a reader MUST reject a descriptor that sets one
/// it does not know. Bits 8–15 are *optional*: a reader MUST ignore those it
/// does not know. Version 1.0 defines only [`Flags::READ_ONLY`].
///
/// ```
/// use hurray_core::Flags;
/// let f = Flags::READ_ONLY;
/// assert!(f.contains(Flags::READ_ONLY));
/// assert_eq!(f.bits(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Flags(u16);

impl Flags {
    /// No flag set.
    pub const EMPTY: Self = Self(0);
    /// The consumer MUST NOT write to the data buffer.
    pub const READ_ONLY: Self = Self(1 << 0);
    /// The bits a reader must understand.
    pub const REQUIRED_MASK: u16 = 0x00FF;
    /// The required bits this version knows.
    pub const KNOWN_REQUIRED: u16 = Self::READ_ONLY.0;

    /// Flags from raw bits (any bits; [`TensorView::parse`] does the checking).
    #[must_use]
    #[inline]
    pub const fn from_bits(bits: u16) -> Self {
        Self(bits)
    }

    /// The raw bits.
    #[must_use]
    #[inline]
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// Whether every bit of `other` is set.
    #[must_use]
    #[inline]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` with the bits of `other` set or cleared.
    #[must_use]
    #[inline]
    pub const fn with(self, other: Self, on: bool) -> Self {
        if on {
            Self(self.0 | other.0)
        } else {
            Self(self.0 & !other.0)
        }
    }
}

/// The three variable-length regions of a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Region {
    /// `ndim` × u64 sizes.
    Shape,
    /// `ndim` × i64 strides.
    Strides,
    /// `buffer_count` × 16-byte entries.
    Table,
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Shape => "shape",
            Self::Strides => "strides",
            Self::Table => "table",
        })
    }
}

/// A descriptor's shape: `ndim` sizes, viewed in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims<'a>(&'a [U64]);

/// A descriptor's strides, in elements: `ndim` signed steps, viewed in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strides<'a>(&'a [I64]);

macro_rules! lane_view {
    ($name:ident, $raw:ty, $item:ty) => {
        impl<'a> $name<'a> {
            /// Number of dimensions.
            #[must_use]
            #[inline]
            pub const fn len(&self) -> usize {
                self.0.len()
            }
            /// Whether there are no dimensions (a scalar).
            #[must_use]
            #[inline]
            pub const fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
            /// The value for `axis`, or `None` past the last axis.
            #[must_use]
            #[inline]
            pub fn get(&self, axis: usize) -> Option<$item> {
                self.0.get(axis).map(|v| v.get())
            }
            /// The values, outermost axis first.
            #[inline]
            pub fn iter(&self) -> core::iter::Map<core::slice::Iter<'a, $raw>, fn(&$raw) -> $item> {
                self.0
                    .iter()
                    .map((|v: &$raw| v.get()) as fn(&$raw) -> $item)
            }
            /// The raw little-endian values.
            #[must_use]
            #[inline]
            pub const fn as_raw(&self) -> &'a [$raw] {
                self.0
            }
            /// Copies the values into `out`, returning the filled prefix.
            ///
            /// # Errors
            /// [`Error::BufferTooSmall`] when `out` is shorter than [`len`](Self::len).
            pub fn copy_to<'o>(&self, out: &'o mut [$item]) -> Result<&'o [$item]> {
                let n = self.0.len();
                let available = out.len() as u64;
                let Some(dst) = out.get_mut(..n) else {
                    return Err(Error::BufferTooSmall {
                        needed: n as u64,
                        available,
                    });
                };
                for (d, s) in dst.iter_mut().zip(self.0) {
                    *d = s.get();
                }
                Ok(dst)
            }
        }

        impl<'a> IntoIterator for $name<'a> {
            type Item = $item;
            type IntoIter = core::iter::Map<core::slice::Iter<'a, $raw>, fn(&$raw) -> $item>;
            fn into_iter(self) -> Self::IntoIter {
                self.iter()
            }
        }
    };
}

lane_view!(Dims, U64, u64);
lane_view!(Strides, I64, i64);

/// A validated, zero-copy view of a tensor descriptor.
///
/// ```
/// use hurray_core::{BufferHandle, DType, DeviceTag, SyncMode, TensorDescriptor, TensorView};
///
/// let data = [BufferHandle::new(2 * 3 * 4, 64, DeviceTag::Cuda, SyncMode::Event).unwrap()];
/// let desc = TensorDescriptor::new(DType::F32, &[2, 3], &data);
/// let mut bytes = [0u8; 128];
/// let n = desc.encode(&mut bytes).unwrap();
///
/// let view = TensorView::parse(&bytes[..n]).unwrap();
/// assert_eq!(view.dtype(), DType::F32);
/// assert!(view.shape().iter().eq([2, 3]));
/// assert_eq!(view.element_count(), 6);
/// assert_eq!(view.data_buffer(), data[0]);
///
/// // A shape that needs more bytes than the data buffer holds is rejected.
/// let too_big = TensorDescriptor::new(DType::F32, &[2, 4], &data);
/// assert!(too_big.encode(&mut bytes).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorView<'a> {
    bytes: &'a [u8],
    header: &'a DescriptorHeader,
    dtype: DType,
    shape: Dims<'a>,
    strides: Option<Strides<'a>>,
    table: BufferTable<'a>,
    data: BufferHandle,
    element_count: u64,
}

/// `[offset, offset + len)` of one region, checked against the header and `total_len`.
fn region(body: &[u8], which: Region, offset: u32, len: u64) -> Result<(&[u8], u64, u64)> {
    let total_len = body.len() as u64;
    if !offset.is_multiple_of(8) {
        return Err(Error::MisalignedRegion {
            region: which,
            offset,
        });
    }
    let start = u64::from(offset);
    let end = start.saturating_add(len);
    let bytes = match (usize::try_from(start), usize::try_from(end)) {
        (Ok(s), Ok(e)) if start >= HEADER_LEN as u64 => body.get(s..e),
        _ => None,
    };
    match bytes {
        Some(b) => Ok((b, start, end)),
        None => Err(Error::RegionOutOfBounds {
            region: which,
            offset,
            len,
            // body.len() came from a u32.
            #[allow(clippy::cast_possible_truncation)]
            total_len: total_len as u32,
        }),
    }
}

const fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < a.1 && b.0 < b.1 && a.0 < b.1 && b.0 < a.1
}

impl<'a> TensorView<'a> {
    /// Parses and validates a descriptor at the start of `bytes`.
    ///
    /// Bytes past the header's `total_len` are ignored, so a descriptor may be
    /// followed by other data.
    ///
    /// # Errors
    /// The first rule broken, in the order of the module contract; see
    /// [`Error`] for each variant.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let available = bytes.len() as u64;
        let Ok((header, _)) = DescriptorHeader::ref_from_prefix(bytes) else {
            return Err(Error::Truncated {
                needed: HEADER_LEN as u64,
                available,
            });
        };
        if header.magic != DESCRIPTOR_MAGIC {
            return Err(Error::BadMagic(header.magic));
        }
        if header.version_major != VERSION_MAJOR {
            return Err(Error::UnsupportedVersion {
                major: header.version_major,
                minor: header.version_minor,
            });
        }
        let unknown = header.flags.get() & Flags::REQUIRED_MASK & !Flags::KNOWN_REQUIRED;
        if unknown != 0 {
            return Err(Error::UnknownFlags(unknown));
        }
        if header.reserved.get() != 0 {
            return Err(Error::HeaderReservedNonZero(header.reserved.get()));
        }
        let Some(dtype) = DType::from_code(header.dtype) else {
            return Err(Error::InvalidDType(header.dtype));
        };
        let ndim = header.ndim;
        if ndim > MAX_NDIM {
            return Err(Error::TooManyDims {
                ndim,
                max: MAX_NDIM,
            });
        }
        let count = header.buffer_count.get();
        let data_index = header.data_buffer.get();
        if data_index >= count {
            return Err(Error::DataBufferOutOfRange {
                index: data_index,
                count,
            });
        }
        let total_len = header.total_len.get();
        let Some(body) = bytes.get(..total_len as usize) else {
            return Err(Error::Truncated {
                needed: u64::from(total_len),
                available,
            });
        };
        if body.len() < HEADER_LEN {
            return Err(Error::Truncated {
                needed: HEADER_LEN as u64,
                available: u64::from(total_len),
            });
        }

        // ndim <= 32 and count <= u16::MAX: these products cannot overflow.
        let lanes_len = u64::from(ndim).saturating_mul(8);
        let (shape_bytes, s0, s1) =
            region(body, Region::Shape, header.shape_offset.get(), lanes_len)?;
        let strides_offset = header.strides_offset.get();
        let (strides_bytes, st) = if strides_offset == 0 {
            (None, (0, 0))
        } else {
            let (b, a0, a1) = region(body, Region::Strides, strides_offset, lanes_len)?;
            (Some(b), (a0, a1))
        };
        let (table_bytes, t0, t1) = region(
            body,
            Region::Table,
            header.table_offset.get(),
            u64::from(count).saturating_mul(ENTRY_LEN as u64),
        )?;
        if overlaps((s0, s1), st) {
            return Err(Error::RegionsOverlap {
                first: Region::Shape,
                second: Region::Strides,
            });
        }
        if overlaps((s0, s1), (t0, t1)) {
            return Err(Error::RegionsOverlap {
                first: Region::Shape,
                second: Region::Table,
            });
        }
        if overlaps(st, (t0, t1)) {
            return Err(Error::RegionsOverlap {
                first: Region::Strides,
                second: Region::Table,
            });
        }

        // Region lengths are exact multiples of the element sizes, so these views succeed.
        let shape = match <[U64]>::ref_from_bytes(shape_bytes) {
            Ok(s) => Dims(s),
            Err(_) => return Err(Error::ShapeOverflow),
        };
        let strides = match strides_bytes.map(<[I64]>::ref_from_bytes) {
            None => None,
            Some(Ok(s)) => Some(Strides(s)),
            Some(Err(_)) => return Err(Error::ShapeOverflow),
        };

        let mut element_count: u64 = 1;
        for (axis, size) in (0u8..).zip(shape.iter()) {
            if size > i64::MAX as u64 {
                return Err(Error::DimTooLarge { axis, size });
            }
            element_count = element_count
                .checked_mul(size)
                .ok_or(Error::ShapeOverflow)?;
        }
        if let Some(strides) = strides {
            for (axis, stride) in (0u8..).zip(strides.iter()) {
                if stride == i64::MIN {
                    return Err(Error::StrideTooLarge { axis, stride });
                }
            }
        }

        let table = BufferTable::parse(table_bytes)?;
        let Some(data) = table.get(usize::from(data_index)) else {
            return Err(Error::DataBufferOutOfRange {
                index: data_index,
                count,
            });
        };

        let byte_offset = header.byte_offset.get();
        let element_size = dtype.size_bytes();
        if byte_offset.checked_rem(u64::from(element_size)) != Some(0) {
            return Err(Error::MisalignedByteOffset {
                byte_offset,
                element_size,
            });
        }
        if element_count > 0 {
            check_extent(
                byte_offset,
                element_size,
                element_count,
                shape,
                strides,
                data,
            )?;
        }

        Ok(Self {
            bytes: body,
            header,
            dtype,
            shape,
            strides,
            table,
            data,
            element_count,
        })
    }

    /// The raw header.
    #[must_use]
    #[inline]
    pub const fn header(&self) -> &'a DescriptorHeader {
        self.header
    }

    /// The descriptor's bytes (exactly `total_len` of them).
    #[must_use]
    #[inline]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// `(major, minor)` version of the descriptor.
    #[must_use]
    #[inline]
    pub const fn version(&self) -> (u8, u8) {
        (self.header.version_major, self.header.version_minor)
    }

    /// The flag bits (unknown optional bits included, as found).
    #[must_use]
    #[inline]
    pub const fn flags(&self) -> Flags {
        Flags(self.header.flags.get())
    }

    /// Whether the consumer must not write to the data buffer.
    #[must_use]
    #[inline]
    pub const fn is_read_only(&self) -> bool {
        self.flags().contains(Flags::READ_ONLY)
    }

    /// The element type.
    #[must_use]
    #[inline]
    pub const fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of dimensions (0 for a scalar).
    #[must_use]
    #[inline]
    pub const fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The shape.
    #[must_use]
    #[inline]
    pub const fn shape(&self) -> Dims<'a> {
        self.shape
    }

    /// The strides in elements, or `None` for compact row-major layout.
    #[must_use]
    #[inline]
    pub const fn strides(&self) -> Option<Strides<'a>> {
        self.strides
    }

    /// The product of the shape (1 for a scalar, 0 when any axis is 0).
    #[must_use]
    #[inline]
    pub const fn element_count(&self) -> u64 {
        self.element_count
    }

    /// Offset in bytes of the first element within the data buffer.
    #[must_use]
    #[inline]
    pub const fn byte_offset(&self) -> u64 {
        self.header.byte_offset.get()
    }

    /// The whole buffer table.
    #[must_use]
    #[inline]
    pub const fn buffers(&self) -> BufferTable<'a> {
        self.table
    }

    /// Index of the data buffer in the table.
    #[must_use]
    #[inline]
    pub const fn data_buffer_index(&self) -> u16 {
        self.header.data_buffer.get()
    }

    /// The handle of the buffer holding the elements.
    #[must_use]
    #[inline]
    pub const fn data_buffer(&self) -> BufferHandle {
        self.data
    }
}

/// Checks that every element addressed lies in `[0, data.byte_size())`.
fn check_extent(
    byte_offset: u64,
    element_size: u32,
    element_count: u64,
    shape: Dims<'_>,
    strides: Option<Strides<'_>>,
    data: BufferHandle,
) -> Result<()> {
    // Element offsets (relative to element [0, ..., 0]) of the lowest and
    // highest element addressed. Every dimension is >= 1 here.
    let (mut lo, mut hi) = (0i128, 0i128);
    match strides {
        None => hi = i128::from(element_count).saturating_sub(1),
        Some(strides) => {
            for (size, stride) in shape.iter().zip(strides.iter()) {
                // size <= i64::MAX and |stride| <= i64::MAX: the product fits
                // i128, so `checked_mul` only guards the argument, not a real case.
                let span = i128::from(size)
                    .saturating_sub(1)
                    .checked_mul(i128::from(stride))
                    .ok_or(Error::ShapeOverflow)?;
                if span < 0 {
                    lo = lo.checked_add(span).ok_or(Error::ShapeOverflow)?;
                } else {
                    hi = hi.checked_add(span).ok_or(Error::ShapeOverflow)?;
                }
            }
        }
    }
    let esize = i128::from(element_size);
    let base = i128::from(byte_offset);
    let start = lo.checked_mul(esize).and_then(|v| v.checked_add(base));
    let end = hi
        .checked_add(1)
        .and_then(|v| v.checked_mul(esize))
        .and_then(|v| v.checked_add(base));
    let (Some(start), Some(end)) = (start, end) else {
        return Err(Error::ShapeOverflow);
    };
    let byte_size = data.byte_size();
    if start < 0 || end > i128::from(byte_size) {
        return Err(Error::ExtentOutOfBounds {
            start,
            end,
            byte_size,
        });
    }
    Ok(())
}

/// The parts of a tensor descriptor, for encoding.
///
/// ```
/// use hurray_core::{BufferHandle, DType, DeviceTag, Flags, SyncMode, TensorDescriptor, TensorView};
///
/// let data = [BufferHandle::new(4096, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
/// // A transposed 16 x 8 view of a row-major 8 x 16 f32 matrix.
/// let desc = TensorDescriptor {
///     strides: Some(&[1, 16]),
///     flags: Flags::READ_ONLY,
///     ..TensorDescriptor::new(DType::F32, &[16, 8], &data)
/// };
/// let mut out = [0u8; 256];
/// let n = desc.encode(&mut out).unwrap();
/// assert_eq!(n, desc.encoded_len());
/// let view = TensorView::parse(&out[..n]).unwrap();
/// assert!(view.is_read_only());
/// assert!(view.strides().unwrap().iter().eq([1, 16]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorDescriptor<'a> {
    /// Element type.
    pub dtype: DType,
    /// Sizes, outermost axis first.
    pub shape: &'a [u64],
    /// Strides in elements, or `None` for compact row-major.
    pub strides: Option<&'a [i64]>,
    /// Offset in bytes of the first element within the data buffer.
    pub byte_offset: u64,
    /// Flag bits.
    pub flags: Flags,
    /// The buffer table.
    pub buffers: &'a [BufferHandle],
    /// Index in `buffers` of the buffer holding the elements.
    pub data_buffer: u16,
}

impl<'a> TensorDescriptor<'a> {
    /// A compact row-major tensor whose elements live in `buffers[0]`, no flags.
    #[must_use]
    #[inline]
    pub const fn new(dtype: DType, shape: &'a [u64], buffers: &'a [BufferHandle]) -> Self {
        Self {
            dtype,
            shape,
            strides: None,
            byte_offset: 0,
            flags: Flags::EMPTY,
            buffers,
            data_buffer: 0,
        }
    }

    /// The canonical layout: `(lanes_len, strides_offset, table_offset, total_len)`,
    /// saturating for absurd inputs (which `encode` rejects before using it).
    const fn layout(&self) -> (usize, usize, usize, usize) {
        let lanes = self.shape.len().saturating_mul(8);
        let (strides_offset, table_offset) = if self.strides.is_some() {
            (
                HEADER_LEN.saturating_add(lanes),
                HEADER_LEN.saturating_add(lanes.saturating_mul(2)),
            )
        } else {
            (0, HEADER_LEN.saturating_add(lanes))
        };
        let total = table_offset.saturating_add(self.buffers.len().saturating_mul(ENTRY_LEN));
        (lanes, strides_offset, table_offset, total)
    }

    /// Bytes [`encode`](Self::encode) writes (saturating at `usize::MAX` for absurd inputs).
    #[must_use]
    pub const fn encoded_len(&self) -> usize {
        self.layout().3
    }

    /// Writes the canonical encoding at the start of `out` and returns its length.
    ///
    /// The output is parsed back before returning, so `Ok` means
    /// [`TensorView::parse`] accepts it.
    ///
    /// # Errors
    /// * [`Error::TooManyDims`], [`Error::StridesLength`],
    ///   [`Error::DataBufferOutOfRange`] for inconsistent parts;
    /// * [`Error::BufferTooSmall`] when `out` is shorter than
    ///   [`encoded_len`](Self::encoded_len) (then nothing is written);
    /// * any error of [`TensorView::parse`] for the written bytes (for
    ///   example [`Error::ExtentOutOfBounds`]); `out`'s contents are then
    ///   unspecified.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize> {
        let ndim = self.shape.len();
        let Some(ndim_u8) = u8::try_from(ndim).ok().filter(|&n| n <= MAX_NDIM) else {
            return Err(Error::TooManyDims {
                ndim: u8::try_from(ndim).unwrap_or(u8::MAX),
                max: MAX_NDIM,
            });
        };
        if let Some(s) = self.strides {
            if s.len() != ndim {
                return Err(Error::StridesLength {
                    ndim,
                    strides: s.len(),
                });
            }
        }
        let count = u16::try_from(self.buffers.len()).unwrap_or(u16::MAX);
        if usize::from(count) != self.buffers.len() || self.data_buffer >= count {
            return Err(Error::DataBufferOutOfRange {
                index: self.data_buffer,
                count,
            });
        }
        let (lanes, strides_offset, table_offset, total) = self.layout();
        let available = out.len() as u64;
        let Some(out) = out.get_mut(..total) else {
            return Err(Error::BufferTooSmall {
                needed: total as u64,
                available,
            });
        };
        // ndim <= 32 and count <= u16::MAX were checked: total < 40 + 512 + 2^20 fits u32.
        let as_u32 = |v: usize| U32::new(u32::try_from(v).unwrap_or(u32::MAX));
        let header = DescriptorHeader {
            magic: DESCRIPTOR_MAGIC,
            version_major: VERSION_MAJOR,
            version_minor: VERSION_MINOR,
            flags: U16::new(self.flags.bits()),
            dtype: self.dtype.code(),
            ndim: ndim_u8,
            buffer_count: U16::new(count),
            data_buffer: U16::new(self.data_buffer),
            reserved: U16::new(0),
            byte_offset: U64::new(self.byte_offset),
            shape_offset: as_u32(HEADER_LEN),
            strides_offset: as_u32(strides_offset),
            table_offset: as_u32(table_offset),
            total_len: as_u32(total),
        };
        let (head, rest) = out.split_at_mut(HEADER_LEN);
        head.copy_from_slice(header.as_bytes());
        let (shape_out, rest) = rest.split_at_mut(lanes);
        for (dst, v) in shape_out.chunks_exact_mut(8).zip(self.shape) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
        let rest = match self.strides {
            Some(strides) => {
                let (strides_out, rest) = rest.split_at_mut(lanes);
                for (dst, v) in strides_out.chunks_exact_mut(8).zip(strides) {
                    dst.copy_from_slice(&v.to_le_bytes());
                }
                rest
            }
            None => rest,
        };
        BufferTable::encode(self.buffers, rest)?;
        TensorView::parse(out)?;
        Ok(total)
    }
}
