//! A fixed-capacity descriptor builder for firmware (no allocator).

use heapless::Vec;

use crate::descriptor::{Flags, TensorDescriptor, TensorView};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::handle::BufferHandle;

/// Builds a tensor descriptor in fixed-capacity storage: at most `NDIM`
/// dimensions and `NBUF` buffers, all inline (`heapless`).
///
/// Capacity overflows are errors ([`Error::BufferTooSmall`]), never panics.
///
/// ```
/// use hurray_core::{BufferHandle, DType, DescriptorBuilder, DeviceTag, SyncMode, TensorView};
///
/// let mut b = DescriptorBuilder::<4, 2>::new(DType::I16);
/// b.push_dim(3)?.push_dim(5)?;
/// b.push_buffer(BufferHandle::new(64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?)?;
/// let bytes: heapless::Vec<u8, 256> = b.to_vec()?;
/// let view = TensorView::parse(&bytes)?;
/// assert_eq!(view.element_count(), 15);
/// # Ok::<(), hurray_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorBuilder<const NDIM: usize, const NBUF: usize> {
    dtype: DType,
    shape: Vec<u64, NDIM>,
    strides: Option<Vec<i64, NDIM>>,
    byte_offset: u64,
    flags: Flags,
    buffers: Vec<BufferHandle, NBUF>,
    data_buffer: u16,
}

const fn full(capacity: usize) -> Error {
    Error::BufferTooSmall {
        needed: (capacity as u64).saturating_add(1),
        available: capacity as u64,
    }
}

impl<const NDIM: usize, const NBUF: usize> DescriptorBuilder<NDIM, NBUF> {
    /// An empty builder: a scalar of `dtype`, no buffers, no flags.
    #[must_use]
    pub const fn new(dtype: DType) -> Self {
        Self {
            dtype,
            shape: Vec::new(),
            strides: None,
            byte_offset: 0,
            flags: Flags::EMPTY,
            buffers: Vec::new(),
            data_buffer: 0,
        }
    }

    /// Copies a parsed descriptor into a builder, to modify and re-emit it.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when the view has more than `NDIM` dimensions
    /// or `NBUF` buffers.
    pub fn from_view(view: &TensorView<'_>) -> Result<Self> {
        let mut b = Self::new(view.dtype());
        for d in view.shape() {
            b.push_dim(d)?;
        }
        if let Some(strides) = view.strides() {
            let mut s = Vec::new();
            for v in strides {
                s.push(v).map_err(|_| full(NDIM))?;
            }
            b.strides = Some(s);
        }
        for h in view.buffers() {
            b.push_buffer(h)?;
        }
        b.byte_offset = view.byte_offset();
        b.flags = view.flags();
        b.data_buffer = view.data_buffer_index();
        Ok(b)
    }

    /// Appends a dimension (outermost first).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when `NDIM` dimensions are already present.
    pub fn push_dim(&mut self, size: u64) -> Result<&mut Self> {
        self.shape.push(size).map_err(|_| full(NDIM))?;
        Ok(self)
    }

    /// Sets explicit strides, in elements (one per dimension at encode time).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when more than `NDIM` strides are given.
    pub fn set_strides(&mut self, strides: &[i64]) -> Result<&mut Self> {
        let mut s = Vec::new();
        s.extend_from_slice(strides).map_err(|_| full(NDIM))?;
        self.strides = Some(s);
        Ok(self)
    }

    /// Returns to compact row-major layout (no strides region).
    pub fn clear_strides(&mut self) -> &mut Self {
        self.strides = None;
        self
    }

    /// Appends a buffer to the table and returns its index.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when `NBUF` buffers are already present.
    pub fn push_buffer(&mut self, handle: BufferHandle) -> Result<u16> {
        let index = u16::try_from(self.buffers.len()).map_err(|_| full(NBUF))?;
        self.buffers.push(handle).map_err(|_| full(NBUF))?;
        Ok(index)
    }

    /// Chooses which buffer holds the elements (default 0).
    pub const fn set_data_buffer(&mut self, index: u16) -> &mut Self {
        self.data_buffer = index;
        self
    }

    /// Sets the offset in bytes of the first element in the data buffer.
    pub const fn set_byte_offset(&mut self, byte_offset: u64) -> &mut Self {
        self.byte_offset = byte_offset;
        self
    }

    /// Sets or clears [`Flags::READ_ONLY`].
    pub const fn set_read_only(&mut self, read_only: bool) -> &mut Self {
        self.flags = self.flags.with(Flags::READ_ONLY, read_only);
        self
    }

    /// The descriptor as borrowed parts, ready to [`encode`](TensorDescriptor::encode).
    #[must_use]
    pub fn descriptor(&self) -> TensorDescriptor<'_> {
        TensorDescriptor {
            dtype: self.dtype,
            shape: &self.shape,
            strides: self.strides.as_deref(),
            byte_offset: self.byte_offset,
            flags: self.flags,
            buffers: &self.buffers,
            data_buffer: self.data_buffer,
        }
    }

    /// Encodes into `out`; see [`TensorDescriptor::encode`].
    ///
    /// # Errors
    /// Those of [`TensorDescriptor::encode`].
    pub fn encode(&self, out: &mut [u8]) -> Result<usize> {
        self.descriptor().encode(out)
    }

    /// Encodes into a new fixed-capacity byte vector of capacity `N`.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when the encoding exceeds `N` bytes, and those
    /// of [`TensorDescriptor::encode`].
    pub fn to_vec<const N: usize>(&self) -> Result<Vec<u8, N>> {
        let desc = self.descriptor();
        let len = desc.encoded_len();
        let mut out: Vec<u8, N> = Vec::new();
        out.resize(len, 0).map_err(|_| Error::BufferTooSmall {
            needed: len as u64,
            available: N as u64,
        })?;
        desc.encode(&mut out)?;
        Ok(out)
    }
}
