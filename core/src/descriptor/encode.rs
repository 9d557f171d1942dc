//! Encoding a descriptor from native values.
//!
//! [`TensorDescriptor`] borrows everything it describes, so it is built and
//! encoded without an allocator (and in a `const` where its inputs are).
//! [`TensorDescriptor::encode`] checks the values with the parser's own
//! rules — the same functions, run on the values instead of on bytes read
//! back — so it never emits a descriptor a reader must reject, and refuses
//! exactly what a reader would refuse, with the reader's error. The
//! commonest families (row-, column-major with or without quantization,
//! CSR, CSC) are first tried by a one-pass acceptance that can only say
//! "every rule holds"; anything else, and every refusal, goes through the
//! rules themselves (ADR-120). The proof is by test: the property tests of
//! `core/tests/properties.rs` (generated descriptors, the fuzz corpus and
//! the plain families' edges) and the fuzz target `descriptor_structured`
//! compare the encoder's verdict with the parser's on the written bytes.

use crate::Quantity;
use crate::element::ElementType;
use crate::error::{DescriptorErrorKind, EncodeError};
use crate::handle::{BufferHandle, BufferHandleEntry, code_error};

use super::arrays::{DimValues, Values};
use super::cursor::Writer;
use crate::table::BufferTable;
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, IntoBytes};

use super::extent::{self, Sizes};
use super::header::{
    self, DESCRIPTOR_MAGIC, DYNAMIC, FixedHeader, Flags, MAX_RANK, VERSION_MAJOR, VERSION_MINOR,
};
use super::layout::{LayoutSpec, tag};
use super::section::ext_type::{self, ExtensionType};
use super::section::member::MemberRole;
use super::section::quantization::{Params, QuantCtx};
use super::section::quantization::{Quantization, Scheme};
use super::section::shard;
use super::section::statistics::{self, Statistics};
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
        if let Some(len) = self.encode_plain(&header, out) {
            return Ok(len);
        }
        self.check_lengths(header.layout_tag)?;
        let mut w = Writer::new(out);
        let at = self.write(&header, &mut w);
        let len = w.finish()?;
        if u32::try_from(len).is_err() {
            return Err(EncodeError::Invalid(crate::DescriptorError::new(
                header::at::LENGTH,
                DescriptorErrorKind::Overflow {
                    what: Quantity::DescriptorLength,
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
        self.check_rest(header, at, element_type)
    }

    /// The plain families accepted and written in one pass (ADR-130,
    /// ADR-131): `Some(len)` once every rule held and the bytes fitted
    /// `out`. The front is written while it is checked — the shape counted
    /// as it is copied, the handles' placement compared as their entries
    /// are stored — and the rest of the acceptance
    /// ([`plain_holds`](Self::plain_holds)) runs before the section and the
    /// header are written. `None` is no verdict: any other descriptor, a
    /// refusal or an output too small. What was written by then is whole
    /// parts at the places and with the bytes the general path writes
    /// there, which then writes the whole descriptor again, checks it and
    /// names the fault, as it always did.
    #[inline(always)]
    fn encode_plain(&self, header: &FixedHeader, out: &mut [u8]) -> Option<usize> {
        // Dense may carry a quantization section; compressed, none.
        // (and the length of the layout's fields: a compressed one's `nnz`
        // and reserved word).
        let (sections, fields) = match self.layout {
            LayoutSpec::RowMajor | LayoutSpec::ColumnMajor => (Flags::HAS_QUANTIZATION.bits(), 0),
            LayoutSpec::Csr(_) | LayoutSpec::Csc(_) => (0, COMPRESSED_LEN),
            _ => return None,
        };
        if header.flags.get() & !sections != 0 {
            return None;
        }
        let packing = self.element_type.packing()?;
        let (rank, count) = (self.shape.len(), self.buffers.len());
        // A plain family has at most 3 buffers: the count byte is then
        // the general path's, and so is every offset below.
        if rank > MAX_RANK as usize || count > 3 {
            return None;
        }
        // Where the section goes: the header, the shape, `byte_offset`, the
        // layout's fields, the buffer count and the entries.
        let front = rank
            .wrapping_mul(8)
            .wrapping_add(count.wrapping_mul(crate::handle::ENTRY_LEN))
            .wrapping_add(FRONT_LEN.wrapping_add(fields));
        let (head, rest) = out.split_first_chunk_mut::<{ header::HEADER_LEN }>()?;
        let (shape, rest) = match self.shape {
            Values::Native(d) => {
                let (dims, rest) = <[U64]>::mut_from_prefix_with_elems(rest, rank).ok()?;
                // Counted as it is copied.
                let copied = dims.iter_mut().zip(d).map(|(w, &n)| {
                    *w = U64::new(n);
                    n
                });
                (count_or_dynamic(copied), rest)
            }
            Values::Wire(d) => (
                count_or_dynamic(d.iter().map(|n| n.get())),
                put(rest, d.as_bytes())?,
            ),
        };
        let (offset, rest) = rest.split_first_chunk_mut::<8>()?;
        *offset = self.byte_offset.to_le_bytes();
        let rest = match self.layout {
            LayoutSpec::Csr(_) | LayoutSpec::Csc(_) => {
                let (f, rest) = rest.split_first_chunk_mut::<COMPRESSED_LEN>()?;
                self.layout.encode(&mut Writer::new(f));
                rest
            }
            _ => rest,
        };
        let (n, rest) = rest.split_first_mut()?;
        #[allow(clippy::cast_possible_truncation)] // at most 3 (above)
        {
            *n = count as u8;
        }
        let rest = match self.buffers {
            Buffers::Handles(h) => {
                let (entries, rest) =
                    <[BufferHandleEntry]>::mut_from_prefix_with_elems(rest, count).ok()?;
                if !store_colocated(entries, h) {
                    return None;
                }
                rest
            }
            Buffers::Table(t) => put(rest, t.as_bytes())?,
        };
        // The header now (its length patched in last): nothing of it kept.
        let head: &mut FixedHeader = zerocopy::transmute_mut!(head);
        *head = *header;
        // Only the section rules' error offsets read `front` (a refusal is
        // no verdict here), so a wrapped value is harmless.
        #[allow(clippy::cast_possible_truncation)]
        if !self.plain_holds(packing, shape, front as u32, header) {
            return None;
        }
        let len = match &self.quantization {
            Some(q) => front.wrapping_add(q.write_to(rest)?),
            None => front,
        };
        #[allow(clippy::cast_possible_truncation)] // a few hundred bytes
        let length = U32::new(len as u32);
        head.descriptor_length = length;
        Some(len)
    }

    /// The rest of the plain families' acceptance, once the front was
    /// written ([`encode_plain`](Self::encode_plain)): for a row-, column-
    /// major (with or without quantization), CSR or CSC descriptor with no
    /// other section, a public type (`packing`), a bounded rank and
    /// colocated handles, the comparisons the rules come down to when the
    /// header was built from these values; `shape`: the element count
    /// (`None` on overflow) and whether a dimension is dynamic. `false` is
    /// no verdict: the general path runs every rule and names the first one
    /// broken (it also takes an overflowing element count, which a zero may
    /// excuse, and a compressed tensor of dynamic shape).
    #[inline(always)] // one caller, `encode_plain`
    fn plain_holds(
        &self,
        packing: Packing,
        (count, dynamic): (Option<u64>, bool),
        quantization_at: u32,
        header: &FixedHeader,
    ) -> bool {
        let (rank, b) = (self.shape.len(), self.buffers);
        let offset = self.byte_offset;
        match self.layout {
            LayoutSpec::RowMajor | LayoutSpec::ColumnMajor => {
                let scalar_ok = rank > 0 || matches!(self.layout, LayoutSpec::RowMajor);
                let alignment = u64::from(self.element_type.natural_alignment());
                let size = b.byte_size(0);
                let (elements, buffers) = match &self.quantization {
                    None => (count, 1),
                    Some(q) => match self.quantization_holds(q, (quantization_at, header), dynamic)
                    {
                        Some((padded, buffers)) => (padded.or(count), buffers),
                        None => return false,
                    },
                };
                let needed = elements
                    .and_then(|n| packing.bytes_for(n))
                    .and_then(|bytes| offset.checked_add(bytes));
                scalar_ok
                    && b.len() == buffers
                    && offset <= size
                    && extent::is_multiple_of_pow2(offset, alignment)
                    && (dynamic || needed.is_some_and(|end| end <= size))
            }
            LayoutSpec::Csr(c) | LayoutSpec::Csc(c) => {
                let major = self
                    .shape
                    .get(usize::from(matches!(self.layout, LayoutSpec::Csc(_))));
                let pointers = major.and_then(|n| n.checked_add(1));
                rank == 2
                    && b.len() == 3
                    && offset == 0
                    && !dynamic
                    && count.is_some()
                    && packing
                        .bytes_for(c.nnz)
                        .is_some_and(|v| v <= b.byte_size(0))
                    && c.nnz.checked_mul(8) == Some(b.byte_size(1))
                    && pointers.and_then(|p| p.checked_mul(8)) == Some(b.byte_size(2))
            }
            _ => false,
        }
    }

    /// For a quantized dense descriptor, whether the section's own rules
    /// (the parser's function) and its parameter buffers' indices and
    /// sizes hold: then the descriptor's buffer count, and the element
    /// count buffer 0 holds when the scheme pads to whole blocks (`at`:
    /// the section's offset, `header` the descriptor's). `None`
    /// is no verdict (a private scheme's buffers are left to the general
    /// path too). Over a dynamic shape no size is checked, as the parser's
    /// `Parts::check` does.
    #[inline(never)]
    fn quantization_holds(
        &self,
        q: &Quantization<'_>,
        (at, header): (u32, &FixedHeader),
        dynamic: bool,
    ) -> Option<(Option<u64>, usize)> {
        // Per-block affine gets a copy of its own, where the scheme is
        // known and the rules' matches on it fold away (ADR-127).
        match q.scheme {
            Scheme::PerBlock { .. } => self.scheme_holds(q, (at, header), dynamic),
            Scheme::Private { .. } => None,
            _ => self.scheme_holds(q, (at, header), dynamic),
        }
    }

    /// [`quantization_holds`](Self::quantization_holds)' body, for a
    /// public scheme.
    #[inline(always)]
    fn scheme_holds(
        &self,
        q: &Quantization<'_>,
        (at, header): (u32, &FixedHeader),
        dynamic: bool,
    ) -> Option<(Option<u64>, usize)> {
        let s = &q.scheme;
        let ctx = QuantCtx {
            shape: self.shape,
            storage: self.element_type,
            storage_code: header.type_tag,
            accept_private: true,
            page_size: None,
        };
        // The section's own rules, inlined here (ADR-125).
        if !matches!(q.check(&ctx, at), Ok(true)) {
            return None;
        }
        // What the buffer rules read of the scheme, derived once.
        let p = s.params();
        p.dense_holds(&self.buffers, (!dynamic).then_some(&self.shape))
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
            // The first handle's own codes, as the parser reads them (the
            // rest then sit on the same codes or fail colocation).
            if let Some(error) = code_error(first.device_tag(), first.memory_class()) {
                let offset = at.parts.table.saturating_add(1);
                let kind = crate::DescriptorErrorKind::Buffer { index: 0, error };
                return Err(crate::DescriptorError::new(offset, kind).into());
            }
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

    /// The rest: the sections' own rules, then the rules that tie the parts
    /// together.
    #[inline(never)]
    fn check_rest(
        &self,
        header: &FixedHeader,
        at: &Written,
        element_type: ElementType,
    ) -> Result<(), EncodeError> {
        if let Some(q) = &self.quantization {
            let ctx = QuantCtx {
                shape: self.shape,
                storage: element_type,
                storage_code: header.type_tag,
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
            statistics::check(s.entry(), at.parts.statistics)?;
        }
        if let Some(e) = &self.extension_type {
            ext_type::check(e.entry(), at.extension_type)?;
        }
        let ext = self.extension_type.as_ref().map(ExtensionType::entry);
        let packing = ExtensionType::packing_of(element_type, ext);
        Ok(self.parts(header, element_type, packing).check(&at.parts)?)
    }

    /// The values as the rules that tie the parts together read them.
    #[inline]
    const fn parts(
        &self,
        header: &FixedHeader,
        element_type: ElementType,
        packing: Packing,
    ) -> Checked<'_, 'a> {
        let params = match &self.quantization {
            Some(q) => Some(q.scheme.params()),
            None => None,
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

/// The CSR and CSC layouts' fields: `nnz` and a reserved word.
const COMPRESSED_LEN: usize = 16;

/// The fixed header, `byte_offset` and the buffer count.
const FRONT_LEN: usize = header::HEADER_LEN + 8 + 1;

/// Copies `bytes` to the front of `out`; the rest, or `None` if they do
/// not fit.
#[inline(always)]
fn put<'o>(out: &'o mut [u8], bytes: &[u8]) -> Option<&'o mut [u8]> {
    let (dst, rest) = out.split_at_mut_checked(bytes.len())?;
    dst.copy_from_slice(bytes);
    Some(rest)
}

/// The element count (`None` on overflow) and whether a dimension is
/// dynamic, in one pass over every dimension: the product wraps with a
/// sticky overflow, which gives the checked product's verdict.
#[inline(always)]
fn count_or_dynamic(dims: impl Iterator<Item = u64>) -> (Option<u64>, bool) {
    let (mut count, mut overflow, mut dynamic) = (1u64, false, false);
    for n in dims {
        let (product, o) = count.overflowing_mul(n);
        count = product;
        overflow |= o;
        dynamic |= n == DYNAMIC;
    }
    ((!overflow).then_some(count), dynamic)
}

/// Stores the handles' wire entries (`entries` as long as `handles`) and
/// says whether they are colocated as the parser's rule has it: the first
/// handle's codes ones the parser reads, and every handle's device tag and
/// memory class codes the first's (`table::colocated`, compared as the
/// entries are stored instead of in a pass of their own).
#[inline(always)]
fn store_colocated(entries: &mut [BufferHandleEntry], handles: &[BufferHandle]) -> bool {
    let Some(first) = handles.first() else {
        return false;
    };
    if code_error(first.device_tag(), first.memory_class()).is_some() {
        return false;
    }
    let first = first.to_entry();
    let mut colocated = true;
    for (e, h) in entries.iter_mut().zip(handles) {
        let entry = h.to_entry();
        colocated &=
            entry.device_tag == first.device_tag && entry.memory_class == first.memory_class;
        *e = entry;
    }
    colocated
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
/// (with what the header check derived from them).
struct Checked<'d, 'a> {
    desc: &'d TensorDescriptor<'a>,
    layout_tag: u8,
    element_type: ElementType,
    packing: Packing,
    /// What the rules read of the quantization scheme, derived once.
    params: Option<Params>,
}

impl<'a> Parts for Checked<'_, 'a> {
    type Dims = DimValues<'a>;
    type Sizes = Buffers<'a>;
    type Layout = LayoutSpec<'a>;
    super::parts_getters! {
        layout_tag -> u8 = |p| p.layout_tag;
        element_type -> ElementType = |p| p.element_type;
        packing -> Packing = |p| p.packing;
        dims -> DimValues<'a> = |p| p.desc.shape;
        byte_offset -> u64 = |p| p.desc.byte_offset;
        layout -> &LayoutSpec<'a> = |p| &p.desc.layout;
        sizes -> Buffers<'a> = |p| p.desc.buffers;
        params -> Option<&Params> = |p| p.params.as_ref();
        has_shard -> bool = |p| p.desc.shard.is_some();
        has_member -> bool = |p| p.desc.member_role.is_some();
        stats_nnz -> Option<u64> = |p| p.desc.statistics.and_then(|s| s.nnz());
    }
}

#[cfg(test)]
mod tests {
    use super::{Buffers, LayoutSpec, Quantization, Scheme, TensorDescriptor, Writer};
    use crate::descriptor::layout::Compressed;
    use crate::{BufferHandle, DeviceTag, ElementType, EncodeError, SyncMode};

    /// What the general path does with `d` and `out`: the write, the length
    /// check and the rules (the encoder before ADR-130, step by step).
    fn general(d: &TensorDescriptor<'_>, out: &mut [u8]) -> Result<usize, EncodeError> {
        let header = d.header();
        d.check_lengths(header.layout_tag)?;
        let mut w = Writer::new(out);
        let at = d.write(&header, &mut w);
        let len = w.finish()?;
        d.check(&header, &at)?;
        Ok(len)
    }

    /// A `Private` device tag built by hand with a code outside the private
    /// range, which the infallible `BufferHandle::empty` cannot refuse, is
    /// refused by both paths with the error the parser gives the same bytes,
    /// so every encoded descriptor still parses.
    #[test]
    fn a_hand_built_private_code_is_refused_as_the_parser_refuses_it() {
        let shape = [0u64];
        for bad in [0x09u8, 0x20, 0xEF, 0xFF] {
            let handles = [BufferHandle::empty(DeviceTag::Private(bad))];
            let d = TensorDescriptor::row_major(ElementType::Float32, &shape, &handles);
            let Err(EncodeError::Invalid(e)) = d.encode(&mut [0u8; 256]) else {
                panic!("{bad:#x} encoded");
            };
            assert_eq!(general(&d, &mut [0u8; 256]), Err(EncodeError::Invalid(e)));
            // The same descriptor with a private code the parser accepts,
            // then the device byte (byte 12 of the entry) replaced by `bad`.
            let good = [BufferHandle::empty(DeviceTag::Private(0xF9))];
            let d = TensorDescriptor::row_major(ElementType::Float32, &shape, &good);
            let mut bytes = [0u8; 256];
            let n = d.encode(&mut bytes).unwrap();
            let device_byte = usize::try_from(e.offset()).unwrap() + 12;
            assert_eq!(bytes[device_byte], 0xF9);
            bytes[device_byte] = bad;
            assert_eq!(
                crate::TensorView::parse(&bytes[..n]).err(),
                Some(e),
                "{bad:#x}"
            );
        }
    }

    /// The straight path (ADR-130) writes what the general path writes and
    /// only where the general path accepts; it leaves every refusal and an
    /// output too small to the general path, which then answers as before:
    /// over dense, quantized (per-block with and without padding, per-tensor)
    /// and compressed descriptors, buffer sizes around their edges, a
    /// misplaced handle, and outputs of every length up to the descriptor's.
    #[test]
    fn the_straight_path_writes_what_the_general_path_writes() {
        let cuda = |n| BufferHandle::new(n, 64, DeviceTag::Cuda, SyncMode::Event).unwrap();
        let shape = [256u64, 256];
        let per_block = |padding, zero: Option<u32>| Quantization {
            scheme: Scheme::PerBlock {
                axis: 1,
                block_size: 64,
                scale_buffer: 1,
                zero_point_buffer: zero,
                scale_type: ElementType::Float16,
            },
            padding,
        };
        let per_tensor = Quantization::new(Scheme::PerTensor {
            scale: 0.5,
            zero_point: 1,
        });
        let (mut straight, mut accepted) = (0, 0);
        for delta in [0u64, 1, u64::MAX] {
            let sized = |n: u64| cuda(n.wrapping_add(delta));
            let dense = [sized(256 * 256 * 4)];
            let quantized = [sized(256 * 128), cuda(1024 * 2)];
            let asymmetric = [cuda(256 * 128), cuda(1024 * 2), cuda(1024 * 4)];
            let misplaced = [cuda(256 * 128), BufferHandle::empty(DeviceTag::Cpu)];
            let csr = [cuda(5 * 4), sized(5 * 8), cuda(257 * 8)];
            let mut cases = [
                TensorDescriptor::row_major(ElementType::Float32, &shape, &dense),
                TensorDescriptor::column_major(ElementType::Float32, &shape, &dense)
                    .with_byte_offset(4),
                TensorDescriptor::row_major(ElementType::Int4, &shape, &quantized),
                TensorDescriptor::row_major(ElementType::Int4, &shape, &quantized),
                TensorDescriptor::row_major(ElementType::Int4, &shape, &asymmetric),
                TensorDescriptor::row_major(ElementType::Int4, &shape, &misplaced),
                TensorDescriptor::row_major(ElementType::Int4, &shape[..1], &quantized[..1]),
                TensorDescriptor::new(
                    ElementType::Float32,
                    &shape,
                    LayoutSpec::Csr(Compressed { nnz: 5 }),
                    &csr,
                ),
            ];
            cases[2].quantization = Some(per_block(0, None));
            cases[3].quantization = Some(per_block(3, None));
            cases[4].quantization = Some(per_block(0, Some(2)));
            cases[5].quantization = Some(per_block(0, None));
            cases[6].quantization = Some(per_tensor);
            for d in &cases {
                let full = d.encoded_len();
                // Every length on Miri would be slow: the edges there.
                let edges = [0, 20, full - 1, full];
                for n in (0..=full).filter(|n| !cfg!(miri) || edges.contains(n)) {
                    let (mut a, mut b) = ([0xA5u8; 256], [0xA5u8; 256]);
                    if let Some(len) = d.encode_plain(&d.header(), &mut a[..n]) {
                        straight += 1;
                        assert_eq!(general(d, &mut b[..n]), Ok(len), "{d:?}");
                        assert_eq!(a, b, "{d:?}");
                    }
                    let (mut a, mut b) = ([0xA5u8; 256], [0xA5u8; 256]);
                    let verdict = d.encode(&mut a[..n]);
                    assert_eq!(verdict, general(d, &mut b[..n]), "{d:?}");
                    assert_eq!(a, b, "{d:?} into {n} bytes");
                    accepted += usize::from(verdict.is_ok());
                }
            }
            // A parsed descriptor's wire shape and validated table take the
            // straight path too (with a native layout: a parsed one is left
            // to the general path), and write themselves back as they lie.
            if delta != 0 {
                continue;
            }
            let mut out = [0u8; 256];
            let len = cases[2].encode(&mut out).unwrap();
            let view = crate::TensorView::parse(&out[..len]).unwrap();
            let mut again = view.descriptor();
            assert!(matches!(again.buffers, Buffers::Table(_)));
            assert!(matches!(again.shape, super::Values::Wire(_)));
            again.layout = LayoutSpec::RowMajor;
            let mut back = [0u8; 256];
            assert_eq!(again.encode_plain(&again.header(), &mut back), Some(len));
            assert_eq!(back[..len], out[..len]);
        }
        // Both paths were taken, and some descriptors were refused.
        assert!(
            straight > 0 && accepted > straight / 2,
            "{straight} {accepted}"
        );
    }
}
