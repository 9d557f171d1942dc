//! `defmt::Format` for the types that cannot derive it (their fields are
//! zerocopy little-endian wrappers, floats or borrowed slices). Every other
//! public type derives it with `#[cfg_attr(feature = "defmt", derive(defmt::Format))]`.

use defmt::{Format, Formatter, write};

use crate::builder::DescriptorBuilder;
use crate::descriptor::{
    FixedHeader, LayoutSpec, Quantization, Scheme, Statistics, TensorDescriptor, TensorView,
};
use crate::handle::BufferHandleEntry;
use crate::layout::{TileSpec, TiledLevels};
use crate::table::Iter;

impl Format for BufferHandleEntry {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "BufferHandleEntry {{ byte_size: {=u64}, alignment: {=u32}, device_tag: {=u8:#x}, sync_mode: {=u8:#x}, memory_class: {=u8:#x}, reserved: {=u8:#x} }}",
            self.byte_size.get(),
            self.alignment.get(),
            self.device_tag,
            self.sync_mode,
            self.memory_class,
            self.reserved
        );
    }
}

impl Format for FixedHeader {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "FixedHeader {{ magic: {=[u8; 4]:a}, version: {=u8}.{=u8}, descriptor_length: {=u32}, flags: {=u32:#x}, type_tag: {=u8:#x}, layout_tag: {=u8:#x}, rank: {=u32} }}",
            self.magic,
            self.version_major,
            self.version_minor,
            self.descriptor_length.get(),
            self.flags.get(),
            self.type_tag,
            self.layout_tag,
            self.rank.get()
        );
    }
}

impl Format for TensorView<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TensorView {{ {} {} shape: {}, byte_offset: {=u64}, buffers: {=usize} }}",
            self.element_type(),
            self.layout(),
            self.shape(),
            self.byte_offset(),
            self.buffers().len()
        );
    }
}

impl Format for TensorDescriptor<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TensorDescriptor {{ {} layout {=u8:#x} shape: {}, byte_offset: {=u64}, buffers: {} }}",
            self.element_type,
            self.layout.tag(),
            self.shape,
            self.byte_offset,
            self.buffers
        );
    }
}

/// Writes `items` as `[a, b, …]`.
pub(crate) fn list<T: Format>(f: Formatter<'_>, items: impl Iterator<Item = T>) {
    write!(f, "[");
    for (i, v) in items.enumerate() {
        if i > 0 {
            write!(f, ", ");
        }
        write!(f, "{}", v);
    }
    write!(f, "]");
}

impl<N: Format + Copy, W: Copy + Into<N>> Format for crate::Values<'_, N, W> {
    fn format(&self, f: Formatter<'_>) {
        list(f, self.iter());
    }
}

impl Format for crate::Buffers<'_> {
    fn format(&self, f: Formatter<'_>) {
        list(f, self.iter());
    }
}

impl Format for LayoutSpec<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "LayoutSpec({=u8:#x})", self.tag());
    }
}

impl Format for TileSpec<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TileSpec {{ tile_shape: {=[?]}, outer: {=u8:#x}, inner: {=u8:#x} }}",
            self.tile_shape, self.outer_layout, self.inner_layout
        );
    }
}

impl Format for Scheme<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Scheme({=str}, {=u8:#x})", self.name(), self.tag());
    }
}

impl Format for Quantization<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "Quantization {{ {}, padding: {=u32} }}",
            self.scheme, self.padding
        );
    }
}

impl Format for Statistics {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "Statistics {{ mask: {=u32:#x}, nnz: {} }}",
            self.mask(),
            self.nnz()
        );
    }
}

impl<const RANK: usize, const NBUF: usize> Format for DescriptorBuilder<RANK, NBUF> {
    fn format(&self, f: Formatter<'_>) {
        self.descriptor().format(f);
    }
}

impl Format for Iter<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Iter {{ remaining: {=usize} }}", self.len());
    }
}

impl Format for TiledLevels<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "TiledLevels");
    }
}

impl<const N: usize> Format for crate::CompositeValidator<'_, N> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "CompositeValidator {{ remaining: {=u32} }}",
            self.remaining()
        );
    }
}

/// Compile-time proof that every public type of the crate is `defmt::Format`.
#[allow(dead_code)]
const fn every_public_type_is_format() {
    const fn is_format<T: Format + ?Sized>() {}
    is_format::<crate::BufferHandle>();
    is_format::<BufferHandleEntry>();
    is_format::<crate::BufferTable<'static>>();
    is_format::<Iter<'static>>();
    is_format::<crate::DeviceTag>();
    is_format::<crate::SyncMode>();
    is_format::<crate::MemoryClass>();
    is_format::<crate::ElementType>();
    is_format::<crate::Packing>();
    is_format::<crate::Error>();
    is_format::<crate::DescriptorError>();
    is_format::<crate::DescriptorErrorKind>();
    is_format::<crate::EncodeError>();
    is_format::<crate::interop::InteropError>();
    is_format::<crate::Flags>();
    is_format::<FixedHeader>();
    is_format::<crate::Dims<'static>>();
    is_format::<crate::Strides<'static>>();
    is_format::<crate::Words<'static>>();
    is_format::<crate::Layout<'static>>();
    is_format::<LayoutSpec<'static>>();
    is_format::<crate::layout::Tiled<'static>>();
    is_format::<crate::layout::TileLevel<'static>>();
    is_format::<TileSpec<'static>>();
    is_format::<TiledLevels<'static>>();
    is_format::<crate::layout::Coo>();
    is_format::<crate::layout::Compressed>();
    is_format::<crate::layout::Csf<'static>>();
    is_format::<crate::layout::BlockPaged>();
    is_format::<crate::layout::KvRole>();
    is_format::<crate::layout::CompositeHead>();
    is_format::<crate::layout::CompositionRule>();
    is_format::<crate::layout::CombineOp>();
    is_format::<crate::layout::Hilbert>();
    is_format::<crate::layout::ExtensionLayout<'static>>();
    is_format::<Scheme<'static>>();
    is_format::<Quantization<'static>>();
    is_format::<crate::Shard<'static>>();
    is_format::<Statistics>();
    is_format::<crate::ExtensionType>();
    is_format::<crate::MemberRole>();
    is_format::<crate::ReadOptions<'static>>();
    is_format::<TensorView<'static>>();
    is_format::<TensorDescriptor<'static>>();
    is_format::<DescriptorBuilder<4, 4>>();
    is_format::<crate::BuilderLayout>();
    is_format::<crate::CompositeError>();
    is_format::<crate::DataError>();
    is_format::<crate::DataErrorKind>();
    is_format::<crate::CompositeErrorKind>();
    is_format::<crate::CompositeValidator<'static, 4>>();
}
