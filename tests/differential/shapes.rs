//! The reference implementation's own benchmark shapes
//! (`hurray-core/benches/core.rs` upstream: dense row-major float32
//! [256, 256] and per-block-affine int4 [256, 256]; its CSR lookup bench's
//! 1024 × 1024 matrix with 4 non-zeros per row; and a strided rank-8
//! tensor), each built with both encoders from the same values.
//!
//! Shared by `tests/cross_decode.rs` (both encoders write the same bytes),
//! `tests/allocations.rs` (heap allocations per decode) and
//! `examples/race.rs` (the speed race).

use ::reference as theirs;
use hurray_core::layout::Compressed;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, EncodeError, LayoutSpec, Scheme, SyncMode,
    TensorDescriptor,
};

/// One benchmark descriptor: our encoder's input and the reference's value.
pub struct Shape {
    /// Short name, for tables.
    pub name: &'static str,
    element_type: ElementType,
    dims: Vec<u64>,
    strides: Vec<i64>,
    csr_nnz: Option<u64>,
    quantization: Option<Scheme<'static>>,
    buffers: Vec<BufferHandle>,
    /// The same descriptor as the reference implementation's value.
    pub reference: theirs::TensorDescriptor,
}

impl Shape {
    /// Our encoder's description of the descriptor.
    pub fn ours(&self) -> TensorDescriptor<'_> {
        let layout = match (self.csr_nnz, self.strides.is_empty()) {
            (Some(nnz), _) => LayoutSpec::Csr(Compressed { nnz }),
            (None, false) => LayoutSpec::Strided(&self.strides),
            (None, true) => LayoutSpec::RowMajor,
        };
        let d = TensorDescriptor::new(self.element_type, &self.dims, layout, &self.buffers);
        match self.quantization {
            Some(s) => d.with_quantization(s),
            None => d,
        }
    }

    /// Our encoding, into a new vector.
    ///
    /// # Errors
    /// What our encoder reports.
    pub fn encode_ours(&self) -> Result<Vec<u8>, EncodeError> {
        let d = self.ours();
        let mut out = vec![0u8; d.encoded_len()];
        let n = d.encode(&mut out)?;
        out.truncate(n);
        Ok(out)
    }
}

/// A CPU buffer of `size` bytes, aligned to 64 (both implementations'
/// minimum for a non-empty buffer).
fn ours_cpu(size: u64) -> BufferHandle {
    BufferHandle::new(size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).expect("a valid handle")
}

fn theirs_cpu(size: u64) -> theirs::BufferHandle {
    theirs::BufferHandle::new(
        size,
        64,
        theirs::DeviceTag::Cpu,
        theirs::SyncMode::ProducerSynced,
    )
    .expect("a valid handle")
}

fn theirs_descriptor(
    element_type: theirs::ElementType,
    dims: &[u64],
    layout: theirs::LayoutDescriptor,
    sizes: &[u64],
    quantization: Option<Vec<u8>>,
) -> theirs::TensorDescriptor {
    theirs::TensorDescriptor::new(
        1,
        0,
        element_type,
        theirs::Shape::new(dims.to_vec()).expect("rank <= 64"),
        0,
        layout,
        sizes.iter().map(|&s| theirs_cpu(s)).collect(),
        quantization,
        None,
        None,
        None,
    )
    .expect("the reference accepts its own benchmark shapes")
}

/// The four shapes, in the order of the race's table.
pub fn race_shapes() -> Vec<Shape> {
    let mut shapes = Vec::new();

    // Dense row-major float32 [256, 256]: 256 KiB in one buffer.
    let sizes = [256 * 256 * 4];
    shapes.push(Shape {
        name: "dense f32 [256, 256]",
        element_type: ElementType::Float32,
        dims: vec![256, 256],
        strides: Vec::new(),
        csr_nnz: None,
        quantization: None,
        buffers: sizes.iter().map(|&s| ours_cpu(s)).collect(),
        reference: theirs_descriptor(
            theirs::ElementType::Float32,
            &[256, 256],
            theirs::LayoutDescriptor::RowMajor,
            &sizes,
            None,
        ),
    });

    // Int4 [256, 256], symmetric per-block affine along axis 1, blocks of
    // 64, float16 scales in buffer 1: 4 blocks per row, 1024 scales.
    let sizes = [256 * 256 / 2, 4 * 256 * 2];
    let pba = theirs::PerBlockAffine::new_symmetric(1, 64, 1, theirs::ElementType::Float16)
        .expect("a valid scheme");
    shapes.push(Shape {
        name: "int4 [256, 256] per-block",
        element_type: ElementType::Int4,
        dims: vec![256, 256],
        strides: Vec::new(),
        csr_nnz: None,
        quantization: Some(Scheme::PerBlock {
            axis: 1,
            block_size: 64,
            scale_buffer: 1,
            zero_point_buffer: None,
            scale_type: ElementType::Float16,
        }),
        buffers: sizes.iter().map(|&s| ours_cpu(s)).collect(),
        reference: theirs_descriptor(
            theirs::ElementType::Int4,
            &[256, 256],
            theirs::LayoutDescriptor::RowMajor,
            &sizes,
            Some(theirs::QuantizationDescriptor::PerBlockAffine(pba).encode_to_vec()),
        ),
    });

    // CSR float32 1024 x 1024, 4 non-zeros per row: values, column
    // indices (u64) and row pointers (u64).
    let nnz = 1024 * 4;
    let sizes = [nnz * 4, nnz * 8, (1024 + 1) * 8];
    shapes.push(Shape {
        name: "CSR f32 [1024, 1024]",
        element_type: ElementType::Float32,
        dims: vec![1024, 1024],
        strides: Vec::new(),
        csr_nnz: Some(nnz),
        quantization: None,
        buffers: sizes.iter().map(|&s| ours_cpu(s)).collect(),
        reference: theirs_descriptor(
            theirs::ElementType::Float32,
            &[1024, 1024],
            theirs::LayoutDescriptor::Csr(theirs::layout::CsrLayout::new(nnz)),
            &sizes,
            None,
        ),
    });

    // Strided float32 [4; 8]: the column-major strides of the same 4^8
    // elements, written out (a transposed view of a contiguous buffer).
    let dims = vec![4u64; 8];
    let strides: Vec<i64> = (0..8).map(|k| 4i64.pow(k)).collect();
    let sizes = [4u64.pow(8) * 4];
    shapes.push(Shape {
        name: "strided f32 rank 8",
        element_type: ElementType::Float32,
        dims: dims.clone(),
        strides: strides.clone(),
        csr_nnz: None,
        quantization: None,
        buffers: sizes.iter().map(|&s| ours_cpu(s)).collect(),
        reference: theirs_descriptor(
            theirs::ElementType::Float32,
            &dims,
            theirs::LayoutDescriptor::Strided(theirs::layout::StridedLayout::new(strides)),
            &sizes,
            None,
        ),
    });
    shapes
}
