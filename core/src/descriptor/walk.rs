//! The field walker: every field of a validated descriptor, in wire order,
//! with its name, byte range and value — from the same field maps the
//! parser reads ([`WireStruct::FIELDS`]), so a dump tool keeps no offsets of
//! its own.
//!
//! # Contract
//!
//! [`TensorView::for_each_field`] visits each byte of the descriptor exactly
//! once: the fields' ranges are contiguous, start at 0 and end at
//! `descriptor_length` (bytes a later minor version appended are one opaque
//! field). It never panics and never allocates; it calls back once per
//! field.

use core::fmt;
use core::ops::Range;

use crate::field::{FieldValue, Kind, WireStruct};
use crate::handle::BufferHandleEntry;

use super::TensorView;
use super::header::{FixedHeader, Flags};
use super::layout::{
    BlockPagedFields, CompositeFields, CompressedFields, CooFields, ExtensionLayoutFields,
    HilbertFields, Layout, TileCodes, tag,
};
use super::section::ext_type::ExtensionTypeEntry;
use super::section::member::MemberFields;
use super::section::quantization::{
    BlockScaleFields, PerBlockFields, PerChannelFields, PerTensorFields, SchemeHeader, scheme_tag,
};
use super::section::statistics::StatisticsEntry;

/// Where a field sits: an optional part (`"buffer"` with its index,
/// `"quant"`, `"tiled"` with its level, …), the field's spec name, and its
/// index in an array field. Displays as the spec writes it:
/// `buffer[1].byte_size`, `shape[0]`, `tiled[0].tile_shape[2]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FieldPath {
    /// The part the field belongs to; empty for the header and the fields
    /// after it.
    pub part: &'static str,
    /// The part's index (buffer number, tile level).
    pub part_index: Option<u32>,
    /// The spec's field name.
    pub name: &'static str,
    /// The element's index in an array field.
    pub index: Option<u32>,
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.part.is_empty() {
            f.write_str(self.part)?;
            if let Some(i) = self.part_index {
                write!(f, "[{i}]")?;
            }
            f.write_str(".")?;
        }
        f.write_str(self.name)?;
        if let Some(i) = self.index {
            write!(f, "[{i}]")?;
        }
        Ok(())
    }
}

/// One field of a descriptor.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Field<'a> {
    /// Its name and place.
    pub path: FieldPath,
    /// Offset of its first byte in the descriptor.
    pub offset: usize,
    /// Its bytes.
    pub bytes: &'a [u8],
    /// Its value.
    pub value: FieldValue<'a>,
}

impl Field<'_> {
    /// Its byte range in the descriptor.
    #[must_use]
    pub const fn range(&self) -> Range<usize> {
        self.offset..self.offset.saturating_add(self.bytes.len())
    }
}

/// The walking cursor.
struct Walk<'a, 'f> {
    bytes: &'a [u8],
    pos: usize,
    part: &'static str,
    part_index: Option<u32>,
    visit: &'f mut dyn FnMut(Field<'a>),
}

impl<'a> Walk<'a, '_> {
    fn emit(&mut self, name: &'static str, index: Option<u32>, kind: Kind, len: usize) {
        let end = self.pos.saturating_add(len);
        let bytes = self.bytes.get(self.pos..end).unwrap_or_default();
        let path = FieldPath {
            part: self.part,
            part_index: self.part_index,
            name,
            index,
        };
        (self.visit)(Field {
            path,
            offset: self.pos,
            bytes,
            value: FieldValue::read(kind, bytes),
        });
        self.pos = end;
    }

    const fn enter(&mut self, part: &'static str, part_index: Option<u32>) {
        self.part = part;
        self.part_index = part_index;
    }

    /// Every field of the wire struct `T`, in order.
    fn part<T: WireStruct>(&mut self) {
        for def in T::FIELDS {
            self.emit(def.name, None, def.kind, def.len);
        }
    }

    fn array(&mut self, name: &'static str, kind: Kind, width: usize, count: usize) {
        for i in 0..count {
            #[allow(clippy::cast_possible_truncation)]
            self.emit(name, Some(i as u32), kind, width); // count <= 64
        }
    }

    fn run(&mut self, name: &'static str, len: usize) {
        if len > 0 {
            self.emit(name, None, Kind::Bytes, len);
        }
    }

    /// The little-endian `u32` at `at`, or 0.
    fn u32_at(&self, at: usize) -> usize {
        let bytes = self.bytes.get(at..at.saturating_add(4));
        bytes
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, |b| u32::from_le_bytes(b) as usize)
    }
}

impl<'a> TensorView<'a> {
    /// Calls `visit` for every field of the descriptor, in wire order: its
    /// name and place, byte range and value (the walker behind an annotated
    /// dump).
    ///
    /// ```
    /// # use hurray_core::{BufferHandle, DeviceTag, ElementType, TensorDescriptor};
    /// let buffers = [BufferHandle::empty(DeviceTag::Cpu)];
    /// let mut out = [0u8; 128];
    /// let view = TensorDescriptor::row_major(ElementType::Int8, &[0, 2], &buffers)
    ///     .encode_view(&mut out)?;
    /// let mut names = Vec::new();
    /// view.for_each_field(|f| names.push((f.path.to_string(), f.range())));
    /// assert_eq!(names[2], ("version_minor".to_string(), 5..6));
    /// assert_eq!(names[8], ("shape[0]".to_string(), 20..28));
    /// assert_eq!(names.last().unwrap().0, "buffer[0]._reserved");
    /// # Ok::<(), hurray_core::EncodeError>(())
    /// ```
    pub fn for_each_field(&self, mut visit: impl FnMut(Field<'a>)) {
        let mut w = Walk {
            bytes: self.as_bytes(),
            pos: 0,
            part: "",
            part_index: None,
            visit: &mut visit,
        };
        let rank = self.shape().len();
        w.part::<FixedHeader>();
        w.array("shape", Kind::U64, 8, rank);
        w.emit("byte_offset", None, Kind::U64, 8);
        self.walk_layout(&mut w, rank);
        w.enter("", None);
        w.emit("buffer_count", None, Kind::U8, 1);
        for i in 0..self.buffers().len() {
            #[allow(clippy::cast_possible_truncation)]
            w.enter("buffer", Some(i as u32)); // at most 255
            w.part::<BufferHandleEntry>();
        }
        let flags = self.flags();
        if let Some(q) = self.quantization() {
            w.enter("", None);
            let len = w.u32_at(w.pos);
            w.emit("quantization_length", None, Kind::U32, 4);
            let end = w.pos.saturating_add(len);
            w.enter("quant", None);
            w.part::<SchemeHeader>();
            match q.scheme.tag() {
                scheme_tag::PER_TENSOR => w.part::<PerTensorFields>(),
                scheme_tag::PER_CHANNEL => w.part::<PerChannelFields>(),
                scheme_tag::PER_BLOCK => w.part::<PerBlockFields>(),
                scheme_tag::NF4 | scheme_tag::MXFP => w.part::<BlockScaleFields>(),
                _ => {}
            }
            w.run("payload", end.saturating_sub(w.pos));
        }
        if flags.contains(Flags::HAS_SHARD) {
            w.enter("shard", None);
            w.array("parent_shape", Kind::U64, 8, rank);
            w.array("shard_offset", Kind::U64, 8, rank);
        }
        if flags.contains(Flags::HAS_STATISTICS) {
            w.enter("statistics", None);
            w.part::<StatisticsEntry>();
        }
        if flags.contains(Flags::HAS_EXTENSION_TYPE) {
            w.enter("extension_type", None);
            w.part::<ExtensionTypeEntry>();
        }
        if flags.contains(Flags::HAS_COMPOSITE_MEMBER) {
            w.enter("composite_member", None);
            w.part::<MemberFields>();
        }
        w.enter("", None);
        w.run("(later minor version)", w.bytes.len().saturating_sub(w.pos));
    }

    fn walk_layout(&self, w: &mut Walk<'a, '_>, rank: usize) {
        match self.layout() {
            Layout::Strided(_) => w.array("strides", Kind::I64, 8, rank),
            Layout::Tiled(t) => {
                for (level, l) in (0u32..).zip(t.levels()) {
                    w.enter("tiled", Some(level));
                    w.array("tile_shape", Kind::U64, 8, rank);
                    w.part::<TileCodes>();
                    if l.outer_layout == tag::STRIDED {
                        w.array("outer_strides", Kind::I64, 8, rank);
                    }
                    if l.inner_layout == tag::STRIDED {
                        w.array("inner_strides", Kind::I64, 8, rank);
                    }
                }
            }
            Layout::Morton(_) => w.array("morton_bits", Kind::U32, 4, rank),
            Layout::Coo(_) => w.part::<CooFields>(),
            Layout::Csr(_) | Layout::Csc(_) => w.part::<CompressedFields>(),
            Layout::Csf(_) => {
                w.emit("nnz", None, Kind::U64, 8);
                w.array("mode_order", Kind::U32, 4, rank);
                w.emit("_reserved", None, Kind::Bytes, 8);
            }
            Layout::BlockPaged(_) => w.part::<BlockPagedFields>(),
            Layout::Composite(_) => w.part::<CompositeFields>(),
            Layout::Hilbert(_) => w.part::<HilbertFields>(),
            Layout::Extension(e) => {
                w.part::<ExtensionLayoutFields>();
                w.run("extension_data", e.data().len());
            }
            Layout::RowMajor | Layout::ColumnMajor => {}
        }
    }
}
