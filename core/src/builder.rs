//! A fixed-capacity descriptor builder for firmware: no allocator, capacity
//! in const generics, every method fallible instead of panicking.

use heapless::Vec;

use crate::descriptor::layout::{BlockPaged, CompositeHead, Compressed, Coo, Hilbert};
use crate::descriptor::{
    Buffers, ExtensionType, Layout, LayoutSpec, MemberRole, Quantization, Scheme, Statistics,
    TensorDescriptor, TensorView, Values,
};
use crate::element::ElementType;
use crate::error::EncodeError;
use crate::handle::BufferHandle;

/// The layouts a builder can hold (everything but tiled and private
/// layouts, whose fields borrow; encode those with [`TensorDescriptor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BuilderLayout {
    /// Row-major.
    RowMajor,
    /// Column-major.
    ColumnMajor,
    /// Strided: the strides are set with [`DescriptorBuilder::set_strides`].
    Strided,
    /// Morton: the bits are set with [`DescriptorBuilder::set_words`].
    Morton,
    /// Coordinate list.
    Coo(Coo),
    /// Compressed sparse rows.
    Csr(Compressed),
    /// Compressed sparse columns.
    Csc(Compressed),
    /// Compressed sparse fiber: the mode order is set with
    /// [`DescriptorBuilder::set_words`].
    Csf {
        /// Stored elements.
        nnz: u64,
    },
    /// Block-paged.
    BlockPaged(BlockPaged),
    /// Composite head.
    Composite(CompositeHead),
    /// Hilbert curve.
    Hilbert(Hilbert),
}

/// Builds a descriptor of at most `RANK` dimensions and `NBUF` buffers.
///
/// ```
/// use hurray_core::{BufferHandle, DescriptorBuilder, DeviceTag, ElementType, SyncMode, TensorView};
///
/// let mut b = DescriptorBuilder::<4, 2>::new(ElementType::Float16);
/// b.push_dim(2)?.push_dim(3)?;
/// b.push_buffer(BufferHandle::new(12, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?)?;
/// let bytes: heapless::Vec<u8, 128> = b.to_vec()?;
/// let view = TensorView::parse(&bytes)?;
/// assert!(view.shape().iter().eq([2, 3]));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct DescriptorBuilder<const RANK: usize, const NBUF: usize> {
    element_type: ElementType,
    layout: BuilderLayout,
    shape: Vec<u64, RANK>,
    strides: Vec<i64, RANK>,
    words: Vec<u32, RANK>,
    byte_offset: u64,
    buffers: Vec<BufferHandle, NBUF>,
    quantization: Option<Quantization<'static>>,
    shard: Option<(Vec<u64, RANK>, Vec<u64, RANK>)>,
    statistics: Option<Statistics>,
    extension_type: Option<ExtensionType>,
    member_role: Option<MemberRole>,
}

const fn full(what: &'static str, capacity: usize) -> EncodeError {
    #[allow(clippy::cast_possible_truncation)]
    EncodeError::CapacityExceeded {
        what,
        capacity: if capacity > u32::MAX as usize {
            u32::MAX
        } else {
            capacity as u32
        },
    }
}

fn fill<T: Copy, const N: usize>(
    what: &'static str,
    src: impl IntoIterator<Item = T>,
) -> Result<Vec<T, N>, EncodeError> {
    let mut v = Vec::new();
    for x in src {
        v.push(x).map_err(|_| full(what, N))?;
    }
    Ok(v)
}

/// Setters that store their argument as it is.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($field:ident: $ty:ty);)*) => {$(
        $(#[$doc])*
        pub const fn $name(&mut self, $field: $ty) -> &mut Self {
            self.$field = $field;
            self
        }
    )*};
}

impl<const RANK: usize, const NBUF: usize> DescriptorBuilder<RANK, NBUF> {
    /// An empty row-major descriptor of `element_type`: rank 0, no buffers.
    #[must_use]
    pub const fn new(element_type: ElementType) -> Self {
        Self {
            element_type,
            layout: BuilderLayout::RowMajor,
            shape: Vec::new(),
            strides: Vec::new(),
            words: Vec::new(),
            byte_offset: 0,
            buffers: Vec::new(),
            quantization: None,
            shard: None,
            statistics: None,
            extension_type: None,
            member_role: None,
        }
    }

    /// A builder holding everything `view` describes.
    ///
    /// # Errors
    /// [`EncodeError::CapacityExceeded`] when the view does not fit the
    /// capacities; [`EncodeError::Unsupported`] for a tiled or private
    /// layout or a private quantization scheme.
    pub fn from_view(view: &TensorView<'_>) -> Result<Self, EncodeError> {
        let mut b = Self::new(view.element_type());
        b.shape = fill("dims", view.shape().iter())?;
        b.layout = match view.layout() {
            Layout::RowMajor => BuilderLayout::RowMajor,
            Layout::ColumnMajor => BuilderLayout::ColumnMajor,
            Layout::Strided(s) => {
                b.strides = fill("dims", s.iter())?;
                BuilderLayout::Strided
            }
            Layout::Morton(bits) => {
                b.words = fill("dims", bits.iter())?;
                BuilderLayout::Morton
            }
            Layout::Coo(c) => BuilderLayout::Coo(c),
            Layout::Csr(c) => BuilderLayout::Csr(c),
            Layout::Csc(c) => BuilderLayout::Csc(c),
            Layout::Csf(c) => {
                b.words = fill("dims", c.mode_order().iter())?;
                BuilderLayout::Csf { nnz: c.nnz() }
            }
            Layout::BlockPaged(p) => BuilderLayout::BlockPaged(p),
            Layout::Composite(h) => BuilderLayout::Composite(h),
            Layout::Hilbert(h) => BuilderLayout::Hilbert(h),
            Layout::Tiled(_) | Layout::Extension(_) => {
                return Err(EncodeError::Unsupported {
                    what: "this layout in a builder",
                });
            }
        };
        b.byte_offset = view.byte_offset();
        b.buffers = fill("buffers", view.buffers().iter())?;
        b.quantization = match view.quantization() {
            None => None,
            Some(q) => Some(Quantization {
                scheme: own_scheme(q.scheme).ok_or(EncodeError::Unsupported {
                    what: "private quantization scheme",
                })?,
                padding: q.padding,
            }),
        };
        if let Some(s) = view.shard() {
            b.shard = Some((
                fill("dims", s.parent_shape.iter())?,
                fill("dims", s.shard_offset.iter())?,
            ));
        }
        b.statistics = view.statistics();
        b.extension_type = view.extension_type();
        b.member_role = view.member_role();
        Ok(b)
    }

    /// Appends a dimension.
    ///
    /// # Errors
    /// [`EncodeError::CapacityExceeded`] past `RANK` dimensions.
    pub fn push_dim(&mut self, size: u64) -> Result<&mut Self, EncodeError> {
        self.shape.push(size).map_err(|_| full("dims", RANK))?;
        Ok(self)
    }

    /// Replaces the shape.
    ///
    /// # Errors
    /// [`EncodeError::CapacityExceeded`] past `RANK` dimensions.
    pub fn set_shape(&mut self, shape: &[u64]) -> Result<&mut Self, EncodeError> {
        self.shape = fill("dims", shape.iter().copied())?;
        Ok(self)
    }

    setters! {
        /// Sets the layout (its array fields, if any, come from
        /// [`set_strides`](Self::set_strides) / [`set_words`](Self::set_words)).
        set_layout(layout: BuilderLayout);
        /// Sets `byte_offset`.
        set_byte_offset(byte_offset: u64);
        /// Sets (or clears) the statistics section.
        set_statistics(statistics: Option<Statistics>);
        /// Sets (or clears) the extension type section.
        set_extension_type(extension_type: Option<ExtensionType>);
        /// Sets (or clears) the composite member section.
        set_member_role(member_role: Option<MemberRole>);
    }

    /// Makes the layout strided with these strides (in elements).
    ///
    /// # Errors
    /// [`EncodeError::CapacityExceeded`] past `RANK` strides.
    pub fn set_strides(&mut self, strides: &[i64]) -> Result<&mut Self, EncodeError> {
        self.strides = fill("dims", strides.iter().copied())?;
        self.layout = BuilderLayout::Strided;
        Ok(self)
    }

    /// Sets the Morton bits or CSF mode order.
    ///
    /// # Errors
    /// [`EncodeError::CapacityExceeded`] past `RANK` values.
    pub fn set_words(&mut self, words: &[u32]) -> Result<&mut Self, EncodeError> {
        self.words = fill("dims", words.iter().copied())?;
        Ok(self)
    }

    /// Appends a buffer handle and returns its index.
    ///
    /// # Errors
    /// [`EncodeError::CapacityExceeded`] past `NBUF` buffers (or 255).
    pub fn push_buffer(&mut self, handle: BufferHandle) -> Result<u8, EncodeError> {
        let index = u8::try_from(self.buffers.len()).map_err(|_| full("buffers", 255))?;
        self.buffers
            .push(handle)
            .map_err(|_| full("buffers", NBUF))?;
        Ok(index)
    }

    /// Sets (or clears) the quantization scheme.
    pub const fn set_quantization(&mut self, scheme: Option<Scheme<'static>>) -> &mut Self {
        self.quantization = match scheme {
            Some(s) => Some(Quantization::new(s)),
            None => None,
        };
        self
    }

    /// Sets the shard section.
    ///
    /// # Errors
    /// [`EncodeError::CapacityExceeded`] past `RANK` values.
    pub fn set_shard(
        &mut self,
        parent_shape: &[u64],
        shard_offset: &[u64],
    ) -> Result<&mut Self, EncodeError> {
        self.shard = Some((
            fill("dims", parent_shape.iter().copied())?,
            fill("dims", shard_offset.iter().copied())?,
        ));
        Ok(self)
    }

    /// The descriptor these values describe.
    #[must_use]
    pub fn descriptor(&self) -> TensorDescriptor<'_> {
        let layout = match self.layout {
            BuilderLayout::RowMajor => LayoutSpec::RowMajor,
            BuilderLayout::ColumnMajor => LayoutSpec::ColumnMajor,
            BuilderLayout::Strided => LayoutSpec::Strided(&self.strides),
            BuilderLayout::Morton => LayoutSpec::Morton(&self.words),
            BuilderLayout::Coo(c) => LayoutSpec::Coo(c),
            BuilderLayout::Csr(c) => LayoutSpec::Csr(c),
            BuilderLayout::Csc(c) => LayoutSpec::Csc(c),
            BuilderLayout::Csf { nnz } => LayoutSpec::Csf {
                nnz,
                mode_order: &self.words,
            },
            BuilderLayout::BlockPaged(p) => LayoutSpec::BlockPaged(p),
            BuilderLayout::Composite(h) => LayoutSpec::Composite(h),
            BuilderLayout::Hilbert(h) => LayoutSpec::Hilbert(h),
        };
        TensorDescriptor {
            element_type: self.element_type,
            shape: Values::Native(&self.shape),
            byte_offset: self.byte_offset,
            layout,
            buffers: Buffers::Handles(&self.buffers),
            quantization: self.quantization,
            shard: self
                .shard
                .as_ref()
                .map(|(p, o)| (Values::Native(p.as_slice()), Values::Native(o.as_slice()))),
            statistics: self.statistics,
            extension_type: self.extension_type,
            member_role: self.member_role,
        }
    }

    /// Encodes into `out`; see [`TensorDescriptor::encode`].
    ///
    /// # Errors
    /// As [`TensorDescriptor::encode`].
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        self.descriptor().encode(out)
    }

    /// Encodes into a fixed-capacity vector.
    ///
    /// # Errors
    /// As [`TensorDescriptor::encode`]; `OutputTooSmall` when `N` is short.
    pub fn to_vec<const N: usize>(&self) -> Result<Vec<u8, N>, EncodeError> {
        let mut out = Vec::new();
        out.resize_default(N).map_err(|_| full("bytes", N))?;
        let len = self.encode(&mut out)?;
        out.truncate(len);
        Ok(out)
    }
}

/// A scheme that borrows nothing (every public one), as `'static`.
const fn own_scheme(s: Scheme<'_>) -> Option<Scheme<'static>> {
    // Each public variant, rebuilt field by field with the new lifetime.
    macro_rules! rebuild {
        ($($variant:ident { $($field:ident),* }),*) => {
            match s {
                $(Scheme::$variant { $($field),* } => Scheme::$variant { $($field),* },)*
                Scheme::Private { .. } => return None,
            }
        };
    }
    Some(rebuild! {
        PerTensor { scale, zero_point },
        PerChannel { axis, scale_buffer, zero_point_buffer },
        PerBlock { axis, block_size, scale_buffer, zero_point_buffer, scale_type },
        Nf4 { axis, block_size, scale_buffer },
        Mxfp { axis, block_size, scale_buffer }
    })
}
