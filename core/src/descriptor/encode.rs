//! Encoding a descriptor from native values.
//!
//! [`TensorDescriptor`] borrows everything it describes, so it is built and
//! encoded without an allocator (and in a `const` where its inputs are).
//! [`TensorDescriptor::encode`] checks the values with the parser's own
//! rules — the same functions, run on the values instead of on bytes read
//! back — so it never emits a descriptor a reader must reject, and refuses
//! exactly what a reader would refuse, with the reader's error. The proof
//! is by test: `core/tests/encoder_verdict.rs` and the fuzz target
//! `descriptor_structured` compare the encoder's verdict with the parser's
//! on the written bytes.

use crate::element::ElementType;
use crate::error::{DescriptorErrorKind, EncodeError};
use crate::handle::BufferHandle;

use super::arrays::{DimValues, Values};
use super::cursor::Writer;
use crate::table::BufferTable;
use zerocopy::little_endian::U32;

use super::header::{self, DESCRIPTOR_MAGIC, FixedHeader, Flags, VERSION_MAJOR, VERSION_MINOR};
use super::layout::{LayoutSpec, tag};
use super::section::ext_type::ExtensionType;
use super::section::member::MemberRole;
use super::section::quantization::{Params, QuantCtx};
use super::section::quantization::{Quantization, Scheme};
use super::section::shard;
use super::section::statistics::Statistics;
use super::{Parts, PartsAt, ReadOptions, TensorView};
use crate::element::Packing;
use crate::table;

/// A descriptor to encode: borrowed native values.
///
/// ```
/// use hurray_core::{
///     BufferHandle, DeviceTag, ElementType, LayoutSpec, SyncMode, TensorDescriptor, TensorView,
/// };
///
/// let buffers = [BufferHandle::new(48, 64, DeviceTag::Cuda, SyncMode::Event)?];
/// let desc = TensorDescriptor::new(ElementType::Float32, &[3, 4], LayoutSpec::Strided(&[1, 3]), &buffers);
/// let mut out = [0u8; 128];
/// let len = desc.encode(&mut out)?;
/// assert_eq!(len, desc.encoded_len());
/// let view = TensorView::parse(&out[..len])?;
/// assert_eq!(view.buffers().get(0), Some(buffers[0]));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorDescriptor<'a> {
    /// The element (storage) type.
    pub element_type: ElementType,
    /// The shape.
    pub shape: DimValues<'a>,
    /// Byte offset of element `[0, …, 0]` in buffer 0.
    pub byte_offset: u64,
    /// The layout and its fields.
    pub layout: LayoutSpec<'a>,
    /// The buffer table.
    pub buffers: Buffers<'a>,
    /// The quantization section.
    pub quantization: Option<Quantization<'a>>,
    /// The shard section: `(parent_shape, shard_offset)`.
    pub shard: Option<(DimValues<'a>, DimValues<'a>)>,
    /// The statistics section.
    pub statistics: Option<Statistics>,
    /// The extension type section (required for a private element type).
    pub extension_type: Option<ExtensionType>,
    /// The composite member section.
    pub member_role: Option<MemberRole>,
}

/// The buffer table to encode: native handles, or the validated table of a
/// parsed descriptor (written back as its wire entries lie).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffers<'a> {
    /// Native handles.
    Handles(&'a [BufferHandle]),
    /// A validated table ([`TensorView::buffers`]).
    Table(BufferTable<'a>),
}

impl<'a> Buffers<'a> {
    /// Number of buffers.
    #[must_use]
    #[inline]
    pub const fn len(&self) -> usize {
        match self {
            Self::Handles(h) => h.len(),
            Self::Table(t) => t.len(),
        }
    }

    /// Whether there is no buffer.
    #[must_use]
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The handle at `index`.
    #[must_use]
    #[inline]
    pub fn get(&self, index: usize) -> Option<BufferHandle> {
        match self {
            Self::Handles(h) => h.get(index).copied(),
            Self::Table(t) => t.get(index),
        }
    }

    /// `byte_size` of buffer `index`, 0 past the end (read from a table's
    /// validated entry, not decoded again): what the size rules read.
    #[inline]
    pub(crate) fn byte_size(&self, index: usize) -> u64 {
        match self {
            Self::Handles(h) => h.get(index).map_or(0, |h| h.byte_size()),
            Self::Table(t) => t.entries().get(index).map_or(0, |e| e.byte_size.get()),
        }
    }

    /// The handles, in order.
    #[must_use]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = BufferHandle> + 'a {
        let this = *self;
        (0..self.len()).map(move |i| {
            this.get(i)
                .unwrap_or(BufferHandle::empty(crate::DeviceTag::Cpu))
        })
    }

    /// Writes the entries (at most 255).
    fn write(&self, w: &mut Writer<'_>) {
        match self {
            Self::Handles(h) => h.iter().take(255).for_each(|h| w.array(h.to_bytes())),
            // A table holds at most 255 entries.
            Self::Table(t) => w.bytes(t.as_bytes()),
        }
    }
}

impl<'a> From<&'a [BufferHandle]> for Buffers<'a> {
    #[inline]
    fn from(h: &'a [BufferHandle]) -> Self {
        Self::Handles(h)
    }
}

impl<'a, const K: usize> From<&'a [BufferHandle; K]> for Buffers<'a> {
    #[inline]
    fn from(h: &'a [BufferHandle; K]) -> Self {
        Self::Handles(h)
    }
}

impl<'a> From<BufferTable<'a>> for Buffers<'a> {
    #[inline]
    fn from(t: BufferTable<'a>) -> Self {
        Self::Table(t)
    }
}

impl<'a> From<&TensorView<'a>> for TensorDescriptor<'a> {
    /// What the view describes, borrowing its bytes: encoding it writes
    /// the view's fields back as they lie (see [`TensorView::descriptor`]).
    #[inline]
    fn from(view: &TensorView<'a>) -> Self {
        view.descriptor()
    }
}

impl<'a> TensorDescriptor<'a> {
    /// A descriptor with no optional section and `byte_offset` 0.
    #[must_use]
    pub const fn new(
        element_type: ElementType,
        shape: &'a [u64],
        layout: LayoutSpec<'a>,
        buffers: &'a [BufferHandle],
    ) -> Self {
        Self {
            element_type,
            shape: Values::Native(shape),
            byte_offset: 0,
            layout,
            buffers: Buffers::Handles(buffers),
            quantization: None,
            shard: None,
            statistics: None,
            extension_type: None,
            member_role: None,
        }
    }

    /// A row-major descriptor.
    #[must_use]
    pub const fn row_major(
        element_type: ElementType,
        shape: &'a [u64],
        buffers: &'a [BufferHandle],
    ) -> Self {
        Self::new(element_type, shape, LayoutSpec::RowMajor, buffers)
    }

    /// A column-major descriptor.
    #[must_use]
    pub const fn column_major(
        element_type: ElementType,
        shape: &'a [u64],
        buffers: &'a [BufferHandle],
    ) -> Self {
        Self::new(element_type, shape, LayoutSpec::ColumnMajor, buffers)
    }

    /// With a `byte_offset`.
    #[must_use]
    pub const fn with_byte_offset(mut self, byte_offset: u64) -> Self {
        self.byte_offset = byte_offset;
        self
    }

    /// With a quantization section.
    #[must_use]
    pub const fn with_quantization(mut self, scheme: Scheme<'a>) -> Self {
        self.quantization = Some(Quantization::new(scheme));
        self
    }

    /// With a shard section.
    #[must_use]
    pub const fn with_shard(mut self, parent_shape: &'a [u64], shard_offset: &'a [u64]) -> Self {
        self.shard = Some((Values::Native(parent_shape), Values::Native(shard_offset)));
        self
    }

    /// With a statistics section.
    #[must_use]
    pub const fn with_statistics(mut self, statistics: Statistics) -> Self {
        self.statistics = Some(statistics);
        self
    }

    /// With an extension type section.
    #[must_use]
    pub const fn with_extension_type(mut self, extension_type: ExtensionType) -> Self {
        self.extension_type = Some(extension_type);
        self
    }

    /// With a composite member section.
    #[must_use]
    pub const fn with_member_role(mut self, role: MemberRole) -> Self {
        self.member_role = Some(role);
        self
    }

    /// The flag word this descriptor encodes.
    #[must_use]
    pub const fn flags(&self) -> Flags {
        Flags::EMPTY
            .with(Flags::HAS_QUANTIZATION, self.quantization.is_some())
            .with(Flags::HAS_SHARD, self.shard.is_some())
            .with(Flags::HAS_EXTENSION_TYPE, self.extension_type.is_some())
            .with(Flags::HAS_STATISTICS, self.statistics.is_some())
            .with(Flags::HAS_COMPOSITE_MEMBER, self.member_role.is_some())
    }

    /// The number of bytes [`encode`](Self::encode) writes.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        let mut w = Writer::new(&mut []);
        self.write(&self.header(), &mut w);
        w.pos()
    }

    /// Encodes into `out` and returns the length written.
    ///
    /// The values are checked with the parser's own rules, run on the
    /// values rather than on bytes read back: a descriptor this returns
    /// `Ok` for parses (with the private codes it uses) to the same values,
    /// and one it refuses as [`EncodeError::Invalid`] is refused by the
    /// parser with the same error. On a refusal after the write, `out`
    /// holds the bytes that were refused.
    ///
    /// # Errors
    /// * [`EncodeError::OutputTooSmall`] — `out` is shorter than
    ///   [`encoded_len`](Self::encoded_len);
    /// * [`EncodeError::LengthMismatch`] — strides, Morton bits, mode order,
    ///   tile arrays or shard arrays whose length is not the rank;
    /// * [`EncodeError::CapacityExceeded`] — more than 255 buffers;
    /// * [`EncodeError::Unsupported`] — values with no encoding: a private
    ///   layout or scheme under a public tag, tiled levels whose codes,
    ///   strides and nesting disagree;
    /// * [`EncodeError::Invalid`] — the values describe a descriptor a
    ///   reader must reject (the error is the reader's).
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let header = self.header();
        self.check_lengths(header.layout_tag)?;
        let mut w = Writer::new(out);
        let at = self.write(&header, &mut w);
        let len = w.finish()?;
        if u32::try_from(len).is_err() {
            return Err(EncodeError::Invalid(crate::DescriptorError::new(
                header::at::LENGTH,
                DescriptorErrorKind::Overflow {
                    what: "descriptor_length",
                },
            )));
        }
        self.check(&header, &at)?;
        Ok(len)
    }

    /// [`encode`](Self::encode), returning the view of what was written
    /// (one parse, with the private codes this descriptor uses: the one the
    /// caller would otherwise make).
    ///
    /// # Errors
    /// As [`encode`](Self::encode).
    ///
    /// ```
    /// # use hurray_core::{BufferHandle, DeviceTag, ElementType, TensorDescriptor};
    /// let buffers = [BufferHandle::empty(DeviceTag::Cpu)];
    /// let mut out = [0u8; 128];
    /// let view = TensorDescriptor::row_major(ElementType::Int8, &[0, 2], &buffers).encode_view(&mut out)?;
    /// assert!(view.shape().iter().eq([0, 2]));
    /// # Ok::<(), hurray_core::EncodeError>(())
    /// ```
    pub fn encode_view<'o>(&self, out: &'o mut [u8]) -> Result<TensorView<'o>, EncodeError> {
        let len = self.encode(out)?;
        let out: &'o [u8] = out;
        let bytes = out.get(..len).unwrap_or_default();
        Ok(TensorView::parse_with(bytes, &self.read_options())?)
    }

    /// The reader options that accept the private codes this descriptor
    /// itself uses.
    const fn read_options(&self) -> ReadOptions<'_> {
        let ids: &[u64] = match &self.layout {
            LayoutSpec::Extension { id, .. } => core::slice::from_ref(id),
            LayoutSpec::Parsed(super::Layout::Extension(e)) => core::slice::from_ref(e.id_ref()),
            _ => &[],
        };
        ReadOptions {
            extension_layouts: ids,
            private_schemes: true,
            private_composition_rules: true,
        }
    }

    /// The fixed header (`descriptor_length` 0: patched in once known).
    #[inline(always)] // two callers; `encode`'s is the hot one
    fn header(&self) -> FixedHeader {
        #[allow(clippy::cast_possible_truncation)]
        let rank = self.shape.len().min(u32::MAX as usize) as u32;
        FixedHeader {
            magic: DESCRIPTOR_MAGIC,
            version_major: VERSION_MAJOR,
            version_minor: VERSION_MINOR,
            descriptor_length: U32::new(0),
            flags: U32::new(self.flags().bits()),
            type_tag: self.element_type.code(),
            layout_tag: self.layout.tag(),
            rank: U32::new(rank),
        }
    }

    /// The parser's rules, in the parser's order, on the values (`at`:
    /// where [`write`](Self::write) put each part, for the errors'
    /// offsets). Nothing is read back from the output.
    fn check(&self, header: &FixedHeader, at: &Written) -> Result<(), EncodeError> {
        let element_type = self.check_front(header, at)?;
        if header.flags.get() == 0 {
            return self.check_plain(header, at, element_type);
        }
        self.check_sections(header, at, element_type)
    }

    /// The rules up to the buffer table: header, layout fields, colocation.
    #[inline]
    fn check_front(&self, header: &FixedHeader, at: &Written) -> Result<ElementType, EncodeError> {
        let (_, element_type) = header.check()?;
        if !self
            .layout
            .check_fields(header.layout_tag, self.shape, at.layout)?
        {
            let what = match self.layout {
                LayoutSpec::Tiled(_) => "tiled levels whose codes, strides and nesting disagree",
                _ => "a private layout under a public tag",
            };
            return Err(EncodeError::Unsupported { what });
        }
        // Colocation: every handle against the first (which trivially is).
        if let Buffers::Handles([first, rest @ ..]) = self.buffers {
            let first = rest.first().map_or(0, |_| table::handle_placement(first));
            for (i, h) in (1..).zip(rest) {
                table::colocated(i, table::handle_placement(h), first).map_err(|e| {
                    let offset = at.parts.table.saturating_add(1).saturating_add(e.offset());
                    crate::DescriptorError::new(offset, e.kind())
                })?;
            }
        }
        Ok(element_type)
    }

    /// The rest for a descriptor with no optional section (the commonest):
    /// the same rules, compiled knowing there is none. A private type,
    /// which needs its section, was refused by the header check.
    #[inline(never)]
    fn check_plain(
        &self,
        header: &FixedHeader,
        at: &Written,
        element_type: ElementType,
    ) -> Result<(), EncodeError> {
        let packing = element_type.packing().unwrap_or(Packing::Bytes(1));
        Ok(self
            .parts::<false>(header, element_type, packing)
            .check(&at.parts)?)
    }

    /// The rest: the sections' own rules, then the rules that tie the parts
    /// together.
    #[inline(never)]
    fn check_sections(
        &self,
        header: &FixedHeader,
        at: &Written,
        element_type: ElementType,
    ) -> Result<(), EncodeError> {
        if let Some(q) = &self.quantization {
            let ctx = QuantCtx {
                shape: self.shape,
                storage: element_type,
                accept_private: true,
                page_size: self.layout.block_paged().map(|b| b.page_size),
            };
            if !q.check(&ctx, at.quantization)? {
                let what = "a private quantization scheme under a public tag";
                return Err(EncodeError::Unsupported { what });
            }
        }
        if let Some((parent, offset)) = self.shard {
            shard::check(self.shape.iter(), parent.iter(), offset.iter(), at.shard)?;
        }
        if let Some(s) = &self.statistics {
            s.check(at.parts.statistics)?;
        }
        if let Some(e) = &self.extension_type {
            e.check(at.extension_type)?;
        }
        let packing = match (element_type.packing(), &self.extension_type) {
            (Some(p), _) => p,
            (None, Some(ext)) => ext.packing(),
            // A private type without its section was refused above.
            (None, None) => Packing::Bytes(1),
        };
        Ok(self
            .parts::<true>(header, element_type, packing)
            .check(&at.parts)?)
    }

    /// The values as the rules that tie the parts together read them.
    #[inline]
    const fn parts<const SECTIONS: bool>(
        &self,
        header: &FixedHeader,
        element_type: ElementType,
        packing: Packing,
    ) -> Checked<'_, 'a, SECTIONS> {
        let params = match &self.quantization {
            Some(q) if SECTIONS => Some(q.scheme.params()),
            _ => None,
        };
        Checked {
            desc: self,
            layout_tag: header.layout_tag,
            element_type,
            packing,
            params,
        }
    }

    fn check_lengths(&self, layout_tag: u8) -> Result<(), EncodeError> {
        let rank = self.shape.len();
        let mismatch = |what, len: usize| {
            #[allow(clippy::cast_possible_truncation)]
            Err(EncodeError::LengthMismatch {
                what,
                len: len.min(u32::MAX as usize) as u32,
                expected: rank.min(u32::MAX as usize) as u32,
            })
        };
        let same = |what, len: usize| {
            if len == rank {
                Ok(())
            } else {
                mismatch(what, len)
            }
        };
        // Only these layouts hold arrays (a parsed one has the same tag).
        if matches!(
            layout_tag,
            tag::STRIDED | tag::TILED | tag::MORTON | tag::CSF
        ) {
            self.layout.for_each_array(same)?;
        }
        if let Some((parent, offset)) = self.shard {
            same("parent_shape", parent.len())?;
            same("shard_offset", offset.len())?;
        }
        if self.buffers.len() > usize::from(u8::MAX) {
            return Err(EncodeError::CapacityExceeded {
                what: "buffers",
                capacity: 255,
            });
        }
        Ok(())
    }

    /// Writes the descriptor; returns where each part went.
    fn write(&self, header: &FixedHeader, w: &mut Writer<'_>) -> Written {
        // Truncating is harmless: the offsets are read only once the whole
        // length passed `u32` (`encode`), so each fits.
        #[allow(clippy::cast_possible_truncation)]
        let pos = |w: &Writer<'_>| w.pos() as u32;
        let mut at = Written::default();
        w.value(header);
        self.shape.write(w);
        at.parts.byte_offset = pos(w);
        w.u64(self.byte_offset);
        at.layout = pos(w);
        // Row- and column-major have no fields.
        if !matches!(header.layout_tag, tag::ROW_MAJOR | tag::COLUMN_MAJOR) {
            self.layout.encode(w);
        }
        at.parts.table = pos(w);
        #[allow(clippy::cast_possible_truncation)]
        w.u8(self.buffers.len().min(255) as u8);
        self.buffers.write(w);
        at.quantization = pos(w);
        if let Some(q) = &self.quantization {
            q.encode(w);
        }
        at.shard = pos(w);
        if let Some((parent, offset)) = self.shard {
            parent.write(w);
            offset.write(w);
        }
        at.parts.statistics = pos(w);
        if let Some(s) = &self.statistics {
            s.encode(w);
        }
        at.extension_type = pos(w);
        if let Some(e) = &self.extension_type {
            e.encode(w);
        }
        if let Some(m) = self.member_role {
            m.encode(w);
        }
        #[allow(clippy::cast_possible_truncation)]
        let total = w.pos().min(u32::MAX as usize) as u32;
        w.patch_u32(header::at::LENGTH as usize, total);
        at
    }
}

/// Where [`TensorDescriptor::write`] put each part (offsets in the
/// descriptor), for the errors of its checks.
#[derive(Debug, Clone, Copy, Default)]
struct Written {
    parts: PartsAt,
    layout: u32,
    quantization: u32,
    shard: u32,
    extension_type: u32,
}

/// An encoder's values as the rules that tie the parts together read them
/// (with what the header check derived from them); `SECTIONS` false: the
/// descriptor has no optional section, and the rules are compiled knowing it.
struct Checked<'d, 'a, const SECTIONS: bool> {
    desc: &'d TensorDescriptor<'a>,
    layout_tag: u8,
    element_type: ElementType,
    packing: Packing,
    /// What the rules read of the quantization scheme, derived once.
    params: Option<Params>,
}

impl<'a, const SECTIONS: bool> Parts for Checked<'_, 'a, SECTIONS> {
    type Dims = DimValues<'a>;
    type Sizes = Buffers<'a>;
    type Layout = LayoutSpec<'a>;
    fn layout_tag(&self) -> u8 {
        self.layout_tag
    }
    fn element_type(&self) -> ElementType {
        self.element_type
    }
    fn packing(&self) -> Packing {
        self.packing
    }
    fn dims(&self) -> DimValues<'a> {
        self.desc.shape
    }
    fn byte_offset(&self) -> u64 {
        self.desc.byte_offset
    }
    fn layout(&self) -> &LayoutSpec<'a> {
        &self.desc.layout
    }
    fn sizes(&self) -> Buffers<'a> {
        self.desc.buffers
    }
    fn params(&self) -> Option<&Params> {
        self.params.as_ref().filter(|_| SECTIONS)
    }
    fn has_shard(&self) -> bool {
        SECTIONS && self.desc.shard.is_some()
    }
    fn has_member(&self) -> bool {
        SECTIONS && self.desc.member_role.is_some()
    }
    fn stats_nnz(&self) -> Option<u64> {
        self.desc
            .statistics
            .filter(|_| SECTIONS)
            .and_then(|s| s.nnz())
    }
}
