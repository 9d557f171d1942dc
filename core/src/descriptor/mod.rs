//! The hurray tensor descriptor: parse and validate in place
//! ([`TensorView`]), encode ([`TensorDescriptor`]).
//!
//! # Contract
//!
//! * [`TensorView::parse`], [`TensorView::parse_prefix`] and
//!   [`TensorView::parse_with`] accept **any** byte slice. They never panic,
//!   never allocate, never read past the declared `descriptor_length`, and
//!   return a [`DescriptorError`] naming the rule broken and the byte offset
//!   of the field at fault.
//! * They check every rule of `docs/spec/metadata.md` a reader can check
//!   without the buffers' contents: the header, the codes, rank and layout
//!   restrictions, every layout field, every buffer handle and their
//!   colocation, the buffer count each layout and quantization scheme
//!   needs, `byte_offset`, the byte extent the elements occupy against each
//!   buffer's size (sub-byte and 6-bit types included), the quantization
//!   scheme's parameters and parameter-buffer sizes, the shard box, the
//!   statistics' ranges, the extension type and composite member sections,
//!   and that `descriptor_length` equals the bytes the fields occupy.
//!   Where a dimension is dynamic (`u64::MAX`) the size checks that need it
//!   are skipped, as the spec forbids computing them.
//! * After a parse returns `Ok`, every accessor of the [`TensorView`] is
//!   infallible and panic-free.
//! * The encoders only emit bytes the parser accepts (they run the parser's
//!   own rules on their values, not on bytes read back: ADR-115), and
//!   encoding what a view describes reproduces its bytes.

mod arrays;
mod cursor;
mod encode;
mod extent;
mod header;
pub mod layout;
mod section;
mod walk;

pub use arrays::{DimValues, Dims, StrideValues, Strides, Values, ValuesIter, WordValues, Words};
pub use encode::{Buffers, TensorDescriptor};
pub use header::{
    DESCRIPTOR_MAGIC, DYNAMIC, FixedHeader, Flags, HEADER_LEN, MAX_RANK, VERSION_MAJOR,
    VERSION_MINOR,
};
pub use layout::{Layout, LayoutSpec};
pub use section::ext_type::{ExtensionType, ExtensionTypeEntry};
pub use section::member::{MemberFields, MemberRole};
pub use section::quantization::{NO_BUFFER, Quantization, Scheme};
pub use walk::{Field, FieldPath};

/// The quantization section's field maps and scheme tags.
pub mod quantization {
    pub use super::section::quantization::{
        BlockScaleFields, PerBlockFields, PerChannelFields, PerTensorFields, SchemeHeader,
        scheme_tag,
    };
}
pub use section::shard::Shard;
pub use section::statistics::{Statistics, StatisticsEntry};

use core::marker::PhantomData;

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use crate::element::{ElementType, Packing};
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::handle::BufferHandleEntry;
use crate::table::BufferTable;
use crate::{FieldName, Quantity};

use cursor::Reader;
use extent::{Ctx, Shape, Sizes, overflow};
use layout::{Family, Rules};
use section::quantization::{Params, QuantCtx};

/// What a reader accepts beyond the format's public codes.
///
/// The default ([`ReadOptions::STRICT`]) refuses every private layout,
/// quantization scheme and composition rule, as the spec requires of a
/// reader with no out-of-band agreement. Private device tags, memory classes
/// and element types are accepted (they are data: the element type carries
/// its own size description), and reported as `Private(code)`.
///
/// ```
/// use hurray_core::ReadOptions;
/// const MINE: ReadOptions<'static> = ReadOptions::STRICT.with_extension_layouts(&[0x5EED]);
/// assert_eq!(MINE.extension_layouts, &[0x5EED]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadOptions<'o> {
    /// Ids of private layouts (`0xF0`–`0xFE`) this reader understands.
    pub extension_layouts: &'o [u64],
    /// Accept private quantization schemes (carried as opaque bytes; their
    /// parameter buffers cannot be checked).
    pub private_schemes: bool,
    /// Accept private composition rules on a composite head.
    pub private_composition_rules: bool,
}

impl ReadOptions<'static> {
    /// No private layout, scheme or composition rule.
    pub const STRICT: Self = Self {
        extension_layouts: &[],
        private_schemes: false,
        private_composition_rules: false,
    };
}

impl Default for ReadOptions<'_> {
    fn default() -> Self {
        ReadOptions::STRICT
    }
}

impl<'o> ReadOptions<'o> {
    /// These options, also accepting the private layouts `ids`.
    #[must_use]
    pub const fn with_extension_layouts<'p>(self, ids: &'p [u64]) -> ReadOptions<'p> {
        ReadOptions {
            extension_layouts: ids,
            private_schemes: self.private_schemes,
            private_composition_rules: self.private_composition_rules,
        }
    }

    /// These options, also accepting private quantization schemes.
    #[must_use]
    pub const fn with_private_schemes(mut self) -> Self {
        self.private_schemes = true;
        self
    }

    /// These options, also accepting private composition rules.
    #[must_use]
    pub const fn with_private_composition_rules(mut self) -> Self {
        self.private_composition_rules = true;
        self
    }
}

/// The header and the declared descriptor at the start of `bytes`, with
/// the bytes after it: the input must hold the header and
/// `descriptor_length` bytes, and that length must cover the header.
fn split_descriptor(bytes: &[u8]) -> Result<(&FixedHeader, &[u8], &[u8]), DescriptorError> {
    let truncated = |offset, needed: u64| {
        let available = bytes.len() as u64;
        DescriptorError::new(offset, DescriptorErrorKind::Truncated { needed, available })
    };
    let Ok((header, _)) = FixedHeader::ref_from_prefix(bytes) else {
        return Err(truncated(0, HEADER_LEN as u64));
    };
    let declared = header.descriptor_length.get();
    if (declared as usize) < HEADER_LEN {
        #[allow(clippy::cast_possible_truncation)]
        let consumed = HEADER_LEN as u32;
        let kind = DescriptorErrorKind::LengthMismatch { declared, consumed };
        return Err(DescriptorError::new(header::at::LENGTH, kind));
    }
    match bytes.split_at_checked(declared as usize) {
        Some((desc, rest)) => Ok((header, desc, rest)),
        None => Err(truncated(header::at::LENGTH, u64::from(declared))),
    }
}

/// A validated, zero-copy view of one tensor descriptor.
///
/// ```
/// use hurray_core::{ElementType, Layout, TensorView};
///
/// // The 61-byte worked example of the format's metadata spec: row-major
/// // float32 [3, 4], one 192-byte CPU buffer aligned to 64.
/// let bytes = [
///     b'H', b'R', b'R', b'Y', 1, 0, 61, 0, 0, 0, 0, 0, 0, 0, 0x03, 0x01, 2, 0, 0, 0,
///     3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, // shape
///     0, 0, 0, 0, 0, 0, 0, 0, // byte_offset
///     1, // buffer_count
///     192, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, // handle
/// ];
/// let view = TensorView::parse(&bytes)?;
/// assert_eq!(view.element_type(), ElementType::Float32);
/// assert!(view.shape().iter().eq([3, 4]));
/// assert_eq!(view.layout(), Layout::RowMajor);
/// assert_eq!(view.buffers().get(0).unwrap().byte_size(), 192);
/// assert_eq!(view.element_count(), Some(12));
/// # Ok::<(), hurray_core::DescriptorError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorView<'a> {
    /// The descriptor's bytes; the header, shape, `byte_offset`, buffer
    /// table and the fixed-size sections are read from them on access.
    bytes: &'a [u8],
    layout: Layout<'a>,
    element_type: ElementType,
    packing: Packing,
    member_role: Option<MemberRole>,
    at: SectionsAt,
}

/// Where the shape begins: right after the fixed header.
#[allow(clippy::cast_possible_truncation)] // 20
const SHAPE_AT: u32 = HEADER_LEN as u32;

/// Where the parts a [`TensorView`] reads on access begin, in bytes from
/// the start of the descriptor (0: the section is absent; no section can
/// start inside the header). Recorded by the parse, so the view stays small
/// (no copy of decoded parts into the result) and the accessors slice the
/// validated bytes without checking them again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SectionsAt {
    /// The buffer table's count byte.
    table: u32,
    /// The quantization section's length field.
    quantization: u32,
    shard: u32,
    statistics: u32,
    extension_type: u32,
}

/// The decoded parts of a descriptor while it is checked: what the rules
/// that tie the parts together ([`Parts`]) read. Lives on the parser's
/// stack only; the [`TensorView`] keeps offsets instead.
struct Parsed<'a, 'p> {
    layout_tag: u8,
    element_type: ElementType,
    packing: Packing,
    shape: Dims<'a>,
    byte_offset: u64,
    layout: HeldLayout<'a, 'p>,
    /// The layout's borrow, where it is held by value.
    held: PhantomData<&'p ()>,
    buffers: BufferTable<'a>,
    quantization: Option<Params>,
    has_shard: bool,
    statistics: Option<&'a StatisticsEntry>,
    member_role: Option<MemberRole>,
}

/// How [`Parsed`] holds the layout: by reference on a 64-bit target (the
/// 40-byte layout is not copied into the parts: x86-64 decode ~38
/// instructions fewer on every shape, ADR-128), by value on a 32-bit one
/// (by reference there, a Cortex-M4 CSR or strided decode took ~340
/// instructions more).
#[cfg(not(target_pointer_width = "32"))]
type HeldLayout<'a, 'p> = &'p Layout<'a>;
/// How [`Parsed`] holds the layout (see the 64-bit form).
#[cfg(target_pointer_width = "32")]
type HeldLayout<'a, 'p> = Layout<'a>;

/// The layout as [`Parsed`] holds it.
#[cfg(not(target_pointer_width = "32"))]
const fn hold<'a, 'p>(layout: &'p Layout<'a>) -> HeldLayout<'a, 'p> {
    layout
}
/// The layout as [`Parsed`] holds it.
#[cfg(target_pointer_width = "32")]
const fn hold<'a, 'p>(layout: &'p Layout<'a>) -> HeldLayout<'a, 'p> {
    *layout
}

impl<'a> TensorView<'a> {
    /// Parses and validates exactly one descriptor: `bytes` must be as long
    /// as its `descriptor_length`.
    ///
    /// # Errors
    /// The first rule the bytes break, with its offset; a longer input is
    /// [`DescriptorErrorKind::TrailingBytes`].
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DescriptorError> {
        Self::parse_impl(bytes, &ReadOptions::STRICT, true)
    }

    /// [`parse`](Self::parse) with reader options.
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn parse_with(bytes: &'a [u8], options: &ReadOptions<'_>) -> Result<Self, DescriptorError> {
        Self::parse_impl(bytes, options, true)
    }

    /// Parses the descriptor at the start of `bytes` (a stream) and returns
    /// it with the bytes after it.
    ///
    /// # Errors
    /// As [`parse`](Self::parse), but trailing bytes are not an error.
    pub fn parse_prefix(bytes: &'a [u8]) -> Result<(Self, &'a [u8]), DescriptorError> {
        Self::parse_prefix_with(bytes, &ReadOptions::STRICT)
    }

    /// [`parse_prefix`](Self::parse_prefix) with reader options.
    ///
    /// # Errors
    /// As [`parse_prefix`](Self::parse_prefix).
    pub fn parse_prefix_with(
        bytes: &'a [u8],
        options: &ReadOptions<'_>,
    ) -> Result<(Self, &'a [u8]), DescriptorError> {
        let view = Self::parse_impl(bytes, options, false)?;
        let rest = bytes.get(view.bytes.len()..).unwrap_or_default();
        Ok((view, rest))
    }

    /// The one parser behind every public entry point (a single layer, so
    /// the view is built in place rather than copied through wrappers).
    /// `exact`: the input must be exactly one descriptor.
    #[cfg_attr(
        not(target_pointer_width = "32"),
        allow(unused_labels, clippy::needless_return)
    )]
    fn parse_impl(
        bytes: &'a [u8],
        options: &ReadOptions<'_>,
        exact: bool,
    ) -> Result<Self, DescriptorError> {
        // On a 32-bit target every error lands in `res` and leaves through
        // one move at the end: a call that returns `Result<(), _>` writes
        // it there in place (ADR-133).
        #[cfg(target_pointer_width = "32")]
        let mut res: Result<(), DescriptorError>;
        'parse: {
            /// Leaves the parse with error `$e`: on a 32-bit target through
            /// `res` and the one move at the end, on a 64-bit one returned
            /// at once (x86-64 decode took 3-8 instructions more through
            /// `res`: ADR-133).
            macro_rules! fail {
                ($e:expr) => {{
                    #[cfg(target_pointer_width = "32")]
                    {
                        res = Err($e);
                        break 'parse;
                    }
                    #[cfg(not(target_pointer_width = "32"))]
                    return Err($e);
                }};
            }
            /// `$e`'s value, or out of the parse with its error.
            macro_rules! or_fail {
                ($e:expr) => {
                    match $e {
                        Ok(v) => v,
                        Err(e) => fail!(e),
                    }
                };
            }
            /// A rule returning `Result<(), _>`: on a 32-bit target written
            /// into `res` in place.
            macro_rules! check {
                ($e:expr) => {
                    #[cfg(target_pointer_width = "32")]
                    {
                        res = $e;
                        if res.is_err() {
                            break 'parse;
                        }
                    }
                    #[cfg(not(target_pointer_width = "32"))]
                    $e?
                };
            }
            let (header, desc, rest) = or_fail!(split_descriptor(bytes));
            let (flags, element_type) = or_fail!(header.check());
            let trailing = exact && !rest.is_empty();
            let mut r = Reader::new(desc);
            or_fail!(r.bytes(HEADER_LEN));
            let err = |offset: u32, kind| DescriptorError::new(offset, kind);
            let rank = header.rank.get();
            let layout_tag = header.layout_tag;

            let shape = Dims::new(or_fail!(r.take_slice::<U64>(u64::from(rank))));
            let byte_offset_at = r.pos();
            let byte_offset = or_fail!(r.u64());
            let layout_at = r.pos();
            // Row-major has no fields and no rank rule: skip the layout parser's
            // frame for the most common layout.
            let mut layout = Layout::RowMajor;
            if layout_tag != layout::tag::ROW_MAJOR {
                layout = or_fail!(Layout::parse(
                    &mut r,
                    layout_tag,
                    shape,
                    options.extension_layouts,
                ));
            }
            if let Layout::Composite(layout::CompositeHead {
                rule: layout::CompositionRule::Private(code),
                ..
            }) = layout
            {
                if !options.private_composition_rules {
                    let at = layout_at.saturating_add(layout::composite::RULE_AT);
                    let field = FieldName::CompositionRule;
                    let kind = DescriptorErrorKind::PrivateCodeRefused { field, code };
                    fail!(err(at, kind));
                }
            }

            let table_at = r.pos();
            let count = or_fail!(r.u8());
            let entries = or_fail!(r.take_slice::<BufferHandleEntry>(u64::from(count)));
            let Some(buffers) = BufferTable::from_descriptor_entries(entries) else {
                let at = table_at.saturating_add(1);
                fail!(BufferTable::descriptor_fault(entries, at));
            };

            let quantization_at = r.pos();
            let quantization = if flags.contains(Flags::HAS_QUANTIZATION) {
                let ctx = QuantCtx {
                    shape,
                    storage: element_type,
                    storage_code: header.type_tag,
                    accept_private: options.private_schemes,
                    page_size: match layout {
                        Layout::BlockPaged(b) => Some(b.page_size),
                        _ => None,
                    },
                };
                Some(or_fail!(Quantization::parse(&mut r, &ctx)))
            } else {
                None
            };
            let shard_at = if flags.contains(Flags::HAS_SHARD) {
                let at = r.pos();
                or_fail!(Shard::parse(&mut r, shape));
                at
            } else {
                0
            };
            let statistics_at = r.pos();
            let statistics = if flags.contains(Flags::HAS_STATISTICS) {
                Some(or_fail!(Statistics::parse(&mut r)))
            } else {
                None
            };
            let (extension_type_at, extension_type) = if flags.contains(Flags::HAS_EXTENSION_TYPE) {
                (r.pos(), Some(or_fail!(ExtensionType::parse(&mut r))))
            } else {
                (0, None)
            };
            let mut member_role = None;
            if flags.contains(Flags::HAS_COMPOSITE_MEMBER) {
                check!(MemberRole::parse(&mut r, &mut member_role));
            }

            // A 1.0 descriptor is exactly its fields; a later minor version may
            // append fields this reader skips.
            let consumed = r.pos();
            let declared = header.descriptor_length.get();
            if header.version_minor == 0 && consumed != declared {
                let kind = DescriptorErrorKind::LengthMismatch { declared, consumed };
                fail!(err(header::at::LENGTH, kind));
            }

            let packing = ExtensionType::packing_of(element_type, extension_type);
            let parsed = Parsed {
                layout_tag,
                element_type,
                packing,
                shape,
                byte_offset,
                layout: hold(&layout),
                held: PhantomData,
                buffers,
                quantization,
                has_shard: shard_at != 0,
                statistics,
                member_role,
            };
            let at = PartsAt {
                byte_offset: byte_offset_at,
                table: table_at,
                statistics: statistics_at,
            };
            // The quantized weights' family first tries the one-pass
            // acceptance (ADR-127; off on bare metal, where the flash budget
            // keeps the one path); a `false` runs the rules in their order.
            #[cfg(not(target_os = "none"))]
            let accepted = quantization.is_some_and(|p| parsed.quantized_dense_holds(&p));
            #[cfg(target_os = "none")]
            let accepted = false;
            // Debug builds (every test, the property tests and the fuzz
            // corpus among them) hold the acceptance to the rules it shortcuts.
            debug_assert!(!accepted || parsed.check(&at).is_ok());
            if !accepted {
                check!(parsed.check(&at));
            }
            if trailing {
                fail!(trailing_bytes(declared, bytes.len()));
            }
            return Ok(Self {
                bytes: desc,
                layout,
                element_type,
                packing,
                member_role,
                at: SectionsAt {
                    table: table_at,
                    quantization: quantization.map_or(0, |_| quantization_at),
                    shard: shard_at,
                    statistics: statistics.map_or(0, |_| statistics_at),
                    extension_type: extension_type_at,
                },
            });
        }
        // Only a failed rule leaves the block, with its error in `res`.
        #[cfg(target_pointer_width = "32")]
        return Err(match res {
            Err(e) => e,
            Ok(()) => DescriptorError::new(0, DescriptorErrorKind::TilingTooDeep),
        });
    }

    /// What this view describes, as the encoder takes it: every array,
    /// the layout and the buffer table borrowed from the view's bytes (no
    /// copy, no allocation). Encoding it gives a descriptor that parses to
    /// the same values (the same bytes for a 1.0 descriptor); change a
    /// field to re-encode it with that change.
    ///
    /// ```
    /// # use hurray_core::{BufferHandle, DeviceTag, ElementType, TensorDescriptor, TensorView};
    /// let buffers = [BufferHandle::empty(DeviceTag::Cpu)];
    /// let mut bytes = [0u8; 128];
    /// let n = TensorDescriptor::row_major(ElementType::Int8, &[0, 3], &buffers).encode(&mut bytes)?;
    /// let view = TensorView::parse(&bytes[..n])?;
    /// let mut again = [0u8; 128];
    /// let m = view.descriptor().encode(&mut again)?;
    /// assert_eq!(&again[..m], view.as_bytes());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[must_use]
    pub fn descriptor(&self) -> TensorDescriptor<'a> {
        TensorDescriptor {
            element_type: self.element_type,
            shape: self.shape().into(),
            byte_offset: self.byte_offset(),
            layout: LayoutSpec::Parsed(self.layout),
            buffers: encode::Buffers::Table(self.buffers()),
            quantization: self.quantization(),
            shard: self
                .shard()
                .map(|s| (s.parent_shape.into(), s.shard_offset.into())),
            statistics: self.statistics(),
            extension_type: self.extension_type(),
            member_role: self.member_role,
        }
    }

    /// The descriptor's bytes (exactly `descriptor_length` long).
    #[must_use]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The fixed header as it lies on the wire.
    #[must_use]
    pub const fn header(&self) -> &'a FixedHeader {
        /// Read when the bytes hold no header, which a parsed view's always
        /// do.
        const NONE: &[u8; HEADER_LEN] = &[0; HEADER_LEN];
        let head = match self.bytes.first_chunk::<HEADER_LEN>() {
            Some(head) => head,
            None => NONE,
        };
        zerocopy::transmute_ref!(head)
    }

    /// `(version_major, version_minor)`.
    #[must_use]
    pub const fn version(&self) -> (u8, u8) {
        let header = self.header();
        (header.version_major, header.version_minor)
    }

    /// The flag word.
    #[must_use]
    pub const fn flags(&self) -> Flags {
        // Validated at parse: no reserved bit is set.
        match Flags::from_bits(self.header().flags.get()) {
            Some(f) => f,
            None => Flags::EMPTY,
        }
    }

    /// The element (storage) type.
    #[must_use]
    pub const fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// How elements are packed (from the extension type section for a
    /// private type).
    #[must_use]
    pub const fn packing(&self) -> Packing {
        self.packing
    }

    /// Number of dimensions.
    #[must_use]
    pub const fn rank(&self) -> u32 {
        self.header().rank.get()
    }

    /// The shape (`u64::MAX` marks a dynamic dimension).
    #[must_use]
    pub fn shape(&self) -> Dims<'a> {
        Dims::new(self.slice_at(SHAPE_AT, self.rank() as usize))
    }

    /// Whether any dimension is dynamic.
    #[must_use]
    pub fn is_dynamic(&self) -> bool {
        self.shape().iter().any(|n| n == DYNAMIC)
    }

    /// Product of the shape; `None` when a dimension is dynamic (or the
    /// product overflows).
    #[must_use]
    pub fn element_count(&self) -> Option<u64> {
        if self.is_dynamic() {
            return None;
        }
        self.shape().product_from(0)
    }

    /// Byte offset of element `[0, …, 0]` in buffer 0 (0 for non-dense
    /// layouts).
    #[must_use]
    pub fn byte_offset(&self) -> u64 {
        let at = SHAPE_AT.saturating_add(self.rank().saturating_mul(8));
        self.value_at::<U64>(at).map_or(0, |v| v.get())
    }

    /// The layout and its fields.
    #[must_use]
    pub const fn layout(&self) -> Layout<'a> {
        self.layout
    }

    /// The validated buffer table.
    #[must_use]
    pub fn buffers(&self) -> BufferTable<'a> {
        let count = self.value_at::<u8>(self.at.table).copied().unwrap_or(0);
        let entries = self.slice_at(self.at.table.saturating_add(1), usize::from(count));
        BufferTable::validated(entries)
    }

    /// The quantization section, if present (decoded from the validated
    /// bytes on access: the view keeps only where it lies).
    #[must_use]
    pub fn quantization(&self) -> Option<Quantization<'a>> {
        let at = self.at.quantization;
        if at == 0 {
            return None;
        }
        let len = self.value_at::<U32>(at)?.get();
        let payload = self.bytes.get(at.saturating_add(4) as usize..)?;
        Quantization::read(payload.get(..len as usize)?)
    }

    /// The shard section, if present.
    #[must_use]
    pub fn shard(&self) -> Option<Shard<'a>> {
        if self.at.shard == 0 {
            return None;
        }
        let rank = self.rank();
        Some(Shard {
            parent_shape: Dims::new(self.slice_at(self.at.shard, rank as usize)),
            shard_offset: Dims::new(self.slice_at(
                self.at.shard.saturating_add(rank.saturating_mul(8)),
                rank as usize,
            )),
        })
    }

    /// The statistics section, if present.
    #[must_use]
    pub fn statistics(&self) -> Option<Statistics> {
        self.section_at::<StatisticsEntry>(self.at.statistics)
            .map(Statistics::from_entry)
    }

    /// The extension type section, if present.
    #[must_use]
    pub fn extension_type(&self) -> Option<ExtensionType> {
        self.section_at::<ExtensionTypeEntry>(self.at.extension_type)
            .map(ExtensionType::from_entry)
    }

    /// The composite member role, if present.
    #[must_use]
    pub const fn member_role(&self) -> Option<MemberRole> {
        self.member_role
    }

    /// The strides of a row-major, column-major or strided tensor in
    /// elements, written into `out`; `None` for other layouts, a shape with
    /// a dynamic dimension, an `out` shorter than the rank, or a row- or
    /// column-major stride that does not fit an `i64`.
    ///
    /// ```
    /// # use hurray_core::{BufferHandle, DeviceTag, ElementType, TensorDescriptor, TensorView};
    /// let buffers = [BufferHandle::empty(DeviceTag::Cpu)];
    /// let desc = TensorDescriptor::column_major(ElementType::Int8, &[0, 3, 4], &buffers);
    /// let mut bytes = [0u8; 128];
    /// let n = desc.encode(&mut bytes).unwrap();
    /// let view = TensorView::parse(&bytes[..n]).unwrap();
    /// let mut strides = [0i64; 3];
    /// assert_eq!(view.strides(&mut strides), Some(&[1, 0, 0][..]));
    /// ```
    pub fn strides<'o>(&self, out: &'o mut [i64]) -> Option<&'o [i64]> {
        let shape = self.shape();
        let rank = shape.len();
        let out = out.get_mut(..rank)?;
        match self.layout {
            Layout::Strided(s) => {
                s.copy_to(out)?;
            }
            Layout::RowMajor | Layout::ColumnMajor => {
                if self.is_dynamic() {
                    return None;
                }
                let mut acc = 1i64;
                let order: &mut dyn Iterator<Item = usize> = if self.layout == Layout::RowMajor {
                    &mut (0..rank).rev()
                } else {
                    &mut (0..rank)
                };
                for axis in order {
                    let slot = out.get_mut(axis)?;
                    *slot = acc;
                    let n = i64::try_from(shape.get(axis)?).ok()?;
                    acc = acc.checked_mul(n)?;
                }
            }
            _ => return None,
        }
        Some(out)
    }

    /// The value of type `T` at `at` in the validated bytes (`None` only
    /// past their end, which a parsed view never asks for).
    fn value_at<T>(&self, at: u32) -> Option<&'a T>
    where
        T: FromBytes + KnownLayout + Immutable + Unaligned,
    {
        let rest = self.bytes.get(at as usize..)?;
        T::ref_from_prefix(rest).ok().map(|(value, _)| value)
    }

    /// A fixed-size section recorded at `at` (0: absent).
    fn section_at<T>(&self, at: u32) -> Option<&'a T>
    where
        T: FromBytes + KnownLayout + Immutable + Unaligned,
    {
        if at == 0 { None } else { self.value_at(at) }
    }

    /// `count` values of type `T` from `at` in the validated bytes (empty
    /// only past their end, which a parsed view never asks for).
    fn slice_at<T>(&self, at: u32, count: usize) -> &'a [T]
    where
        T: FromBytes + KnownLayout + Immutable + Unaligned,
    {
        let rest = self.bytes.get(at as usize..).unwrap_or_default();
        <[T]>::ref_from_prefix_with_elems(rest, count).map_or(&[][..], |(s, _)| s)
    }
}

/// The error for bytes after an exact parse's descriptor (out of line:
/// valid input never builds it).
#[cold]
#[inline(never)]
const fn trailing_bytes(declared: u32, available: usize) -> DescriptorError {
    DescriptorError::new(
        declared,
        DescriptorErrorKind::TrailingBytes {
            declared,
            available: available as u64,
        },
    )
}

/// The accessors of a [`Parts`] implementation, one line each: the name,
/// the type and the expression over the parts (`|p| …`).
macro_rules! parts_getters {
    ($($(#[$attr:meta])* $name:ident -> $ty:ty = |$p:ident| $e:expr;)*) => {
        $(
            $(#[$attr])*
            fn $name(&self) -> $ty {
                let $p = self;
                $e
            }
        )*
    };
}
pub(crate) use parts_getters;

/// What the rules that tie a descriptor's parts together read: a parsed
/// view's parts ([`TensorView`]), or the values an encoder is given. One set
/// of rules for both, written once as this trait's provided methods and
/// compiled for each side's own forms (no dispatch per value, no copy of
/// the parts on the decode path), so the encoder refuses exactly what the
/// parser would.
pub(crate) trait Parts {
    /// The shape's form.
    type Dims: Shape;
    /// The buffers' form.
    type Sizes: Sizes;
    /// The layout's form.
    type Layout: Rules;
    /// The layout tag (the header's): what most rules dispatch on.
    fn layout_tag(&self) -> u8;
    /// The element type.
    fn element_type(&self) -> ElementType;
    /// How elements are packed.
    fn packing(&self) -> Packing;
    /// The shape.
    fn dims(&self) -> Self::Dims;
    /// `byte_offset`.
    fn byte_offset(&self) -> u64;
    /// The layout.
    fn layout(&self) -> &Self::Layout;
    /// The buffers.
    fn sizes(&self) -> Self::Sizes;
    /// What the rules read of the quantization scheme, if any.
    fn params(&self) -> Option<&Params>;
    /// Whether a shard section is present.
    fn has_shard(&self) -> bool;
    /// Whether a composite member section is present.
    fn has_member(&self) -> bool;
    /// The statistics section's `nnz`, if it has one.
    fn stats_nnz(&self) -> Option<u64>;

    /// The rules that tie the parts together (inlined: each caller, one
    /// per side, builds the parts in place).
    #[inline]
    fn check(&self, at: &PartsAt) -> Result<(), DescriptorError> {
        let family = Family::of(self.layout_tag());
        self.check_sections_allowed(family)?;
        self.check_buffer_count(at.table, family)?;
        self.check_byte_offset(at.byte_offset, family)?;
        // Statistics nnz against a sparse layout's.
        if self.stats_nnz().is_some()
            && family == Family::Sparse
            && self.stats_nnz() != self.layout().stored()
        {
            let at = at.statistics.saturating_add(section::statistics::NNZ_AT);
            let kind = DescriptorErrorKind::StatisticsInconsistent {
                field: FieldName::Nnz,
            };
            return Err(DescriptorError::new(at, kind));
        }
        // Sizes: only for a shape with no dynamic dimension. On a 64-bit
        // target one pass over the shape tells that and gives the element
        // count (a rank-8 shape ~50 instructions fewer); on a 32-bit one,
        // where a checked 64-bit product is ~40 B of code at each place and
        // a count kept across the parameter rule cost 244 B of flash, the
        // scan for the dynamic marker, and the product after that rule.
        let early_count = if cfg!(target_pointer_width = "32") {
            if self.dims().is_dynamic() {
                return Ok(());
            }
            None
        } else {
            let Some(count) = self.dims().elements() else {
                return Ok(());
            };
            Some(count)
        };
        let mut ctx = Ctx {
            shape: self.dims(),
            packing: self.packing(),
            byte_offset: self.byte_offset(),
            buffers: self.sizes(),
            table_at: at.table,
            padded_elements: None,
        };
        if let Some(p) = self.params() {
            self.check_parameters(p, &mut ctx)?;
        }
        let count = match early_count {
            Some(count) => count,
            None => self.dims().product_from(0),
        };
        let Some(count) = count else {
            return Err(overflow!(ctx, 0, Quantity::ElementCount));
        };
        self.layout().sizes(&ctx, count)
    }

    /// For a row- or column-major descriptor with a public quantization
    /// scheme (the quantized weights' family): whether every rule of
    /// [`check`](Self::check) holds, in one pass — the buffer count with
    /// the parameter buffers after the data buffer, `byte_offset`, the
    /// parameter buffers' exact sizes and buffer 0's extent (whole blocks
    /// where the scheme pads). `false` is no verdict: `check`'s rules then
    /// run in their order and name the fault. The parser's acceptance
    /// (ADR-127; the parameter buffers' rules are [`Params::dense_holds`],
    /// which the encoder's `quantization_holds` runs on its values); the
    /// section's own rules were checked before it. Off bare metal, as the
    /// parse's use of it is.
    #[cfg(not(target_os = "none"))]
    #[inline(always)]
    fn quantized_dense_holds(&self, p: &Params) -> bool {
        if p.private
            || !matches!(
                self.layout_tag(),
                layout::tag::ROW_MAJOR | layout::tag::COLUMN_MAJOR
            )
        {
            return false;
        }
        let (b, shape) = (self.sizes(), self.dims());
        let dynamic = shape.is_dynamic();
        let Some((padded, buffers)) = p.dense_holds(&b, (!dynamic).then_some(&shape)) else {
            return false;
        };
        let (offset, size) = (self.byte_offset(), b.byte_size(0));
        let alignment = u64::from(self.element_type().natural_alignment());
        if b.count() != buffers || offset > size || !extent::is_multiple_of_pow2(offset, alignment)
        {
            return false;
        }
        if dynamic {
            return true;
        }
        let Some(n) = shape.product_from(0) else {
            return false;
        };
        self.packing()
            .bytes_for(padded.unwrap_or(n))
            .and_then(|bytes| offset.checked_add(bytes))
            .is_some_and(|end| end <= size)
    }

    /// A virtual layout (composite head) has no quantization and is no
    /// member; a CSF or block-paged tensor is never a shard.
    fn check_sections_allowed(&self, family: Family) -> Result<(), DescriptorError> {
        let refused = match family {
            Family::Virtual if self.params().is_some() => Flags::HAS_QUANTIZATION,
            Family::Virtual if self.has_member() => Flags::HAS_COMPOSITE_MEMBER,
            _ if self.has_shard()
                && matches!(
                    self.layout_tag(),
                    layout::tag::CSF | layout::tag::BLOCK_PAGED
                ) =>
            {
                Flags::HAS_SHARD
            }
            _ => return Ok(()),
        };
        let kind = DescriptorErrorKind::SectionNotAllowed {
            section: refused,
            layout_tag: self.layout_tag(),
        };
        Err(DescriptorError::new(header::at::FLAGS, kind))
    }

    /// Buffer count: the layout's own buffers plus the distinct parameter
    /// buffers of the quantization scheme, which come after them.
    fn check_buffer_count(&self, table_at: u32, family: Family) -> Result<(), DescriptorError> {
        let err = |kind| Err(DescriptorError::new(table_at, kind));
        #[allow(clippy::cast_possible_truncation)]
        let rank = self.dims().rank() as u32; // <= 64
        let own = family.layout_buffers(self.layout_tag(), rank);
        let count = self.sizes().count();
        #[allow(clippy::cast_possible_truncation)]
        let found = count as u8; // at most 255 entries
        let (mut params, mut private_scheme) = (0, false);
        if let Some(p) = self.params() {
            let (scale, zero) = (p.scale, p.zero);
            // The first parameter buffer outside the scheme's part of the
            // table, the scale's before the zero point's.
            let outside = |i: &u32| *i < own || *i as usize >= count;
            if let Some(index) = scale.filter(outside).or(zero.filter(outside)) {
                let first = own;
                return err(DescriptorErrorKind::ParameterBufferIndex {
                    index,
                    first,
                    count: found,
                });
            }
            params = match (scale, zero) {
                (Some(s), Some(z)) if s != z => 2,
                (Some(_), _) => 1,
                _ => 0,
            };
            private_scheme = p.private;
        }
        let expected = own.saturating_add(params);
        let count_ok = match family {
            // Nothing is known of a private layout's or scheme's buffers
            // beyond the layout's minimum.
            Family::Extension => count >= 1,
            _ if private_scheme => count >= own as usize,
            _ => count == expected as usize,
        };
        if !count_ok {
            return err(DescriptorErrorKind::BufferCount { expected, found });
        }
        Ok(())
    }

    /// `byte_offset`: zero unless the layout is dense (or private); for a
    /// dense layout inside buffer 0 and aligned to the element type.
    fn check_byte_offset(&self, at: u32, family: Family) -> Result<(), DescriptorError> {
        let byte_offset = self.byte_offset();
        let kind = if family != Family::Dense && family != Family::Extension {
            if byte_offset == 0 {
                return Ok(());
            }
            DescriptorErrorKind::ByteOffsetNotZero(byte_offset)
        } else if self.sizes().count() > 0 {
            let byte_size = self.sizes().byte_size(0);
            let alignment = self.element_type().natural_alignment();
            if byte_offset > byte_size {
                DescriptorErrorKind::ByteOffsetOutOfRange {
                    byte_offset,
                    byte_size,
                }
            } else if !extent::is_multiple_of_pow2(byte_offset, u64::from(alignment)) {
                DescriptorErrorKind::ByteOffsetMisaligned {
                    byte_offset,
                    alignment,
                }
            } else {
                return Ok(());
            }
        } else {
            return Ok(());
        };
        Err(DescriptorError::new(at, kind))
    }

    /// Sizes of the quantization parameter buffers, as rows of the buffer
    /// rules; where the scheme pads, the element count including block
    /// padding goes to `ctx`.
    fn check_parameters(
        &self,
        p: &Params,
        ctx: &mut Ctx<Self::Dims, Self::Sizes>,
    ) -> Result<(), DescriptorError> {
        let overflow = overflow!(ctx, 0, Quantity::ParameterCount);
        let Some(scale) = p.scale else {
            return Ok(());
        };
        #[allow(clippy::cast_possible_truncation)]
        let (scale, zero) = (scale as u8, p.zero.map(|z| z as u8)); // < count <= 255
        let paged = if self.layout_tag() == layout::tag::BLOCK_PAGED {
            self.layout().paged()
        } else {
            None
        };
        let (axis, k) = (p.axis, p.block_size);
        let entries = match paged {
            // Per-channel: one parameter per slice along the axis.
            _ if k == 0 => ctx.shape.dim(axis as usize).ok_or(overflow)?,
            // Per-page-slot parameters, paged through the block table (the
            // axis and block size were checked with the section).
            Some(b) => b.slots().ok_or(overflow)?,
            None => {
                let along = ctx.shape.dim(axis as usize).ok_or(overflow)?;
                let per_axis = extent::div_ceil(along, u64::from(k));
                let others = ctx.shape.product_but(axis).ok_or(overflow)?;
                let blocks = extent::mul(per_axis, others).ok_or(overflow)?;
                let dense_order = matches!(
                    self.layout_tag(),
                    layout::tag::ROW_MAJOR | layout::tag::COLUMN_MAJOR
                );
                if p.pads && dense_order {
                    ctx.padded_elements = Some(extent::mul(blocks, u64::from(k)).ok_or(overflow)?);
                }
                blocks
            }
        };
        // The scale buffer, then a separate zero-point buffer; a zero point
        // sharing the scale's buffer follows the scales in it.
        let mut rows = [
            extent::Need::exactly(scale, entries, p.scale_width),
            extent::Need::exactly(zero.unwrap_or(scale), entries, 4),
        ];
        let rows = match zero {
            Some(z) if z == scale => {
                let scale_bytes = ctx.array_bytes(scale, entries, u64::from(p.scale_width))?;
                let zero_bytes = ctx.array_bytes(z, entries, 4)?;
                let bytes = scale_bytes.checked_add(zero_bytes).ok_or(overflow)?;
                rows[0] = extent::Need::exactly(scale, bytes, 1);
                &rows[..1]
            }
            Some(_) => &rows[..],
            None => &rows[..1],
        };
        ctx.needs(rows)
    }
}

/// Where the parts lie, for the errors' offsets.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PartsAt {
    pub(crate) byte_offset: u32,
    pub(crate) table: u32,
    pub(crate) statistics: u32,
}

impl<'a> Parts for Parsed<'a, '_> {
    type Dims = Dims<'a>;
    type Sizes = BufferTable<'a>;
    type Layout = Layout<'a>;
    parts_getters! {
        layout_tag -> u8 = |p| p.layout_tag;
        element_type -> ElementType = |p| p.element_type;
        packing -> Packing = |p| p.packing;
        dims -> Dims<'a> = |p| p.shape;
        byte_offset -> u64 = |p| p.byte_offset;
        // Held by reference or by value ([`HeldLayout`]): one borrow of it.
        #[allow(clippy::needless_borrow)] // the reference, on a 64-bit target
        layout -> &Layout<'a> = |p| &p.layout;
        sizes -> BufferTable<'a> = |p| p.buffers;
        params -> Option<&Params> = |p| p.quantization.as_ref();
        has_shard -> bool = |p| p.has_shard;
        has_member -> bool = |p| p.member_role.is_some();
        stats_nnz -> Option<u64> = |p| p.statistics.and_then(section::statistics::nnz_of);
    }
}

#[cfg(test)]
mod tests {
    use super::{Layout, TensorView};

    /// The view keeps offsets, not decoded sections (ADR-119, ADR-121): it
    /// stays small enough that returning it is a few stores, not a
    /// `memcpy`: 88 bytes on a 64-bit target, of which the layout is 40
    /// (112 while the view held the decoded quantization section).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_view_holds_offsets_not_sections() {
        let view = core::mem::size_of::<TensorView<'_>>();
        let layout = core::mem::size_of::<Layout<'_>>();
        assert!(view <= 88, "TensorView is {view} bytes (Layout {layout})");
    }
}
