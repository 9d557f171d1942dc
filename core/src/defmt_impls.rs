//! `defmt::Format` for the types that cannot derive it (their fields are
//! zerocopy little-endian wrappers). Every other public type derives it with
//! `#[cfg_attr(feature = "defmt", derive(defmt::Format))]`.

use defmt::{Format, Formatter, write};

use crate::builder::DescriptorBuilder;
use crate::descriptor::{DescriptorHeader, Dims, Strides, TensorDescriptor, TensorView};
use crate::handle::BufferHandleEntry;
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

impl Format for DescriptorHeader {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "DescriptorHeader {{ magic: {=[u8; 4]:a}, version: {=u8}.{=u8}, flags: {=u16:#x}, dtype: {=u8:#x}, ndim: {=u8}, buffer_count: {=u16}, data_buffer: {=u16}, reserved: {=u16}, byte_offset: {=u64}, shape_offset: {=u32}, strides_offset: {=u32}, table_offset: {=u32}, total_len: {=u32} }}",
            self.magic,
            self.version_major,
            self.version_minor,
            self.flags.get(),
            self.dtype,
            self.ndim,
            self.buffer_count.get(),
            self.data_buffer.get(),
            self.reserved.get(),
            self.byte_offset.get(),
            self.shape_offset.get(),
            self.strides_offset.get(),
            self.table_offset.get(),
            self.total_len.get()
        );
    }
}

impl Format for Dims<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "[");
        for (i, d) in self.iter().enumerate() {
            if i > 0 {
                write!(f, ", ");
            }
            write!(f, "{=u64}", d);
        }
        write!(f, "]");
    }
}

impl Format for Strides<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "[");
        for (i, s) in self.iter().enumerate() {
            if i > 0 {
                write!(f, ", ");
            }
            write!(f, "{=i64}", s);
        }
        write!(f, "]");
    }
}

impl Format for TensorView<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TensorView {{ dtype: {}, shape: {}, strides: {}, byte_offset: {=u64}, flags: {}, data_buffer: {} of {=usize} }}",
            self.dtype(),
            self.shape(),
            self.strides(),
            self.byte_offset(),
            self.flags(),
            self.data_buffer(),
            self.buffers().len()
        );
    }
}

impl Format for TensorDescriptor<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "TensorDescriptor {{ dtype: {}, shape: {=[?]}, strides: {}, byte_offset: {=u64}, flags: {}, buffers: {=[?]}, data_buffer: {=u16} }}",
            self.dtype,
            self.shape,
            self.strides,
            self.byte_offset,
            self.flags,
            self.buffers,
            self.data_buffer
        );
    }
}

impl<const NDIM: usize, const NBUF: usize> Format for DescriptorBuilder<NDIM, NBUF> {
    fn format(&self, f: Formatter<'_>) {
        self.descriptor().format(f);
    }
}

impl Format for Iter<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Iter {{ remaining: {=usize} }}", self.len());
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
    is_format::<crate::DType>();
    is_format::<crate::Error>();
    is_format::<crate::EntryError>();
    is_format::<crate::Flags>();
    is_format::<crate::Region>();
    is_format::<DescriptorHeader>();
    is_format::<Dims<'static>>();
    is_format::<Strides<'static>>();
    is_format::<TensorView<'static>>();
    is_format::<TensorDescriptor<'static>>();
    is_format::<DescriptorBuilder<4, 4>>();
}
