//! Helpers shared by the fuzz targets: an owned copy of everything a
//! `TensorView` describes (which re-encodes through `TensorDescriptor`), the
//! walk over every accessor with the invariants a validated view must keep,
//! and an oracle for buffer handles written from the spec independently of
//! the crate.
#![allow(dead_code)] // each target uses a part

use hurray_core::layout::{BlockPaged, CompositeHead, Compressed, Coo, Hilbert, TileSpec};
use hurray_core::{
    BufferHandle, DYNAMIC, DescriptorError, DescriptorErrorKind, ElementType, ExtensionType, Flags,
    Layout, LayoutSpec, MemberRole, Packing, Quantization, ReadOptions, Scheme, Statistics,
    TensorDescriptor, TensorView,
};

/// One tiled level, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedLevel {
    pub tile_shape: Vec<u64>,
    pub outer_layout: u8,
    pub inner_layout: u8,
    pub outer_strides: Option<Vec<i64>>,
    pub inner_strides: Option<Vec<i64>>,
}

/// A layout, owned (private layouts borrow their opaque bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedLayout<'a> {
    RowMajor,
    ColumnMajor,
    Strided(Vec<i64>),
    Tiled(Vec<OwnedLevel>),
    Morton(Vec<u32>),
    Coo(Coo),
    Csr(Compressed),
    Csc(Compressed),
    Csf { nnz: u64, mode_order: Vec<u32> },
    BlockPaged(BlockPaged),
    Composite(CompositeHead),
    Hilbert(Hilbert),
    Extension { tag: u8, id: u64, data: &'a [u8] },
}

/// Everything a descriptor holds, as native values.
#[derive(Debug, Clone, PartialEq)]
pub struct Owned<'a> {
    pub element_type: ElementType,
    pub shape: Vec<u64>,
    pub byte_offset: u64,
    pub layout: OwnedLayout<'a>,
    pub buffers: Vec<BufferHandle>,
    pub quantization: Option<Quantization<'a>>,
    pub shard: Option<(Vec<u64>, Vec<u64>)>,
    pub statistics: Option<Statistics>,
    pub extension_type: Option<ExtensionType>,
    pub member_role: Option<MemberRole>,
}

impl<'a> Owned<'a> {
    /// The owned copy of a view.
    pub fn of(v: &TensorView<'a>) -> Self {
        let layout = match v.layout() {
            Layout::RowMajor => OwnedLayout::RowMajor,
            Layout::ColumnMajor => OwnedLayout::ColumnMajor,
            Layout::Strided(s) => OwnedLayout::Strided(s.iter().collect()),
            Layout::Tiled(t) => OwnedLayout::Tiled(
                t.levels()
                    .map(|l| OwnedLevel {
                        tile_shape: l.tile_shape.iter().collect(),
                        outer_layout: l.outer_layout,
                        inner_layout: l.inner_layout,
                        outer_strides: l.outer_strides.map(|s| s.iter().collect()),
                        inner_strides: l.inner_strides.map(|s| s.iter().collect()),
                    })
                    .collect(),
            ),
            Layout::Morton(b) => OwnedLayout::Morton(b.iter().collect()),
            Layout::Coo(c) => OwnedLayout::Coo(c),
            Layout::Csr(c) => OwnedLayout::Csr(c),
            Layout::Csc(c) => OwnedLayout::Csc(c),
            Layout::Csf(c) => OwnedLayout::Csf {
                nnz: c.nnz(),
                mode_order: c.mode_order().iter().collect(),
            },
            Layout::BlockPaged(b) => OwnedLayout::BlockPaged(b),
            Layout::Composite(h) => OwnedLayout::Composite(h),
            Layout::Hilbert(h) => OwnedLayout::Hilbert(h),
            Layout::Extension(e) => OwnedLayout::Extension {
                tag: e.tag(),
                id: e.id(),
                data: e.data(),
            },
            other => panic!("a layout this harness does not know: {other:?}"),
        };
        Self {
            element_type: v.element_type(),
            shape: v.shape().iter().collect(),
            byte_offset: v.byte_offset(),
            layout,
            buffers: v.buffers().iter().collect(),
            quantization: v.quantization(),
            shard: v.shard().map(|s| {
                (
                    s.parent_shape.iter().collect(),
                    s.shard_offset.iter().collect(),
                )
            }),
            statistics: v.statistics(),
            extension_type: v.extension_type(),
            member_role: v.member_role(),
        }
    }

    /// Runs `f` on the `TensorDescriptor` of these values.
    pub fn with_descriptor<R>(&self, f: impl FnOnce(&TensorDescriptor<'_>) -> R) -> R {
        let tiles: Vec<TileSpec<'_>> = match &self.layout {
            OwnedLayout::Tiled(levels) => levels
                .iter()
                .map(|l| TileSpec {
                    tile_shape: &l.tile_shape,
                    outer_layout: l.outer_layout,
                    inner_layout: l.inner_layout,
                    outer_strides: l.outer_strides.as_deref(),
                    inner_strides: l.inner_strides.as_deref(),
                })
                .collect(),
            _ => Vec::new(),
        };
        let layout = match &self.layout {
            OwnedLayout::RowMajor => LayoutSpec::RowMajor,
            OwnedLayout::ColumnMajor => LayoutSpec::ColumnMajor,
            OwnedLayout::Strided(s) => LayoutSpec::Strided(s),
            OwnedLayout::Tiled(_) => LayoutSpec::Tiled(&tiles),
            OwnedLayout::Morton(b) => LayoutSpec::Morton(b),
            OwnedLayout::Coo(c) => LayoutSpec::Coo(*c),
            OwnedLayout::Csr(c) => LayoutSpec::Csr(*c),
            OwnedLayout::Csc(c) => LayoutSpec::Csc(*c),
            OwnedLayout::Csf { nnz, mode_order } => LayoutSpec::Csf {
                nnz: *nnz,
                mode_order,
            },
            OwnedLayout::BlockPaged(b) => LayoutSpec::BlockPaged(*b),
            OwnedLayout::Composite(h) => LayoutSpec::Composite(*h),
            OwnedLayout::Hilbert(h) => LayoutSpec::Hilbert(*h),
            OwnedLayout::Extension { tag, id, data } => LayoutSpec::Extension {
                tag: *tag,
                id: *id,
                data,
            },
        };
        let mut d = TensorDescriptor::new(self.element_type, &self.shape, layout, &self.buffers)
            .with_byte_offset(self.byte_offset);
        d.quantization = self.quantization;
        d.shard = self
            .shard
            .as_ref()
            .map(|(p, o)| (p[..].into(), o[..].into()));
        d.statistics = self.statistics;
        d.extension_type = self.extension_type;
        d.member_role = self.member_role;
        f(&d)
    }

    /// Encodes these values.
    pub fn encode(&self) -> Result<Vec<u8>, hurray_core::EncodeError> {
        self.with_descriptor(|d| {
            let mut out = vec![0u8; d.encoded_len()];
            let n = d.encode(&mut out)?;
            assert_eq!(n, out.len(), "encoded_len and encode disagree");
            Ok(out)
        })
    }

    /// Encodes these values and returns every byte the encoder wrote,
    /// whatever its verdict, with the verdict: `TensorDescriptor::encode`
    /// writes the whole descriptor before its own read-back decides, so on
    /// `EncodeError::Invalid` the buffer holds what it refused. A harness
    /// that parses these bytes itself checks the encoder's output whether or
    /// not the encoder reads it back.
    pub fn encode_written(&self) -> (Vec<u8>, Result<usize, hurray_core::EncodeError>) {
        self.with_descriptor(|d| {
            let mut out = vec![0u8; d.encoded_len()];
            let verdict = d.encode(&mut out);
            (out, verdict)
        })
    }

    /// The reader options that accept what these values use.
    pub fn ids(&self) -> Vec<u64> {
        match self.layout {
            OwnedLayout::Extension { id, .. } => vec![id],
            _ => Vec::new(),
        }
    }
}

/// Options accepting every private code, and the private layouts `ids`.
pub fn permissive(ids: &[u64]) -> ReadOptions<'_> {
    ReadOptions::STRICT
        .with_extension_layouts(ids)
        .with_private_schemes()
        .with_private_composition_rules()
}

/// The private layout id a strict parse refused, if that is why it failed.
pub fn refused_id(e: &DescriptorError) -> Option<u64> {
    match e.kind() {
        DescriptorErrorKind::UnknownExtensionLayout(id) => Some(id),
        _ => None,
    }
}

/// Bits per element of a packing.
fn packing_bits(p: Packing) -> u64 {
    match p {
        Packing::Bytes(n) => 8 * u64::from(n),
        Packing::Bits(b) => u64::from(b),
        Packing::SixBitGroups => 6,
    }
}

/// Calls every accessor of a validated view and checks what must hold of
/// any descriptor the decoder accepts.
pub fn check_view(v: &TensorView<'_>) {
    let header = v.header();
    let bytes = v.as_bytes();
    assert_eq!(bytes.len(), header.descriptor_length.get() as usize);
    assert_eq!(&bytes[..4], b"HRRY");
    assert_eq!(v.version(), (header.version_major, header.version_minor));
    assert_eq!(v.version().0, 1);
    let flags = v.flags();
    assert_eq!(flags.bits(), header.flags.get());
    assert_eq!(v.element_type().code(), header.type_tag);
    assert_eq!(v.layout().tag(), header.layout_tag);
    assert_eq!(v.rank(), header.rank.get());
    assert!(v.rank() <= 64);
    assert_eq!(v.shape().len(), v.rank() as usize);

    // Sections: present exactly when flagged.
    assert_eq!(
        v.quantization().is_some(),
        flags.contains(Flags::HAS_QUANTIZATION)
    );
    assert_eq!(v.shard().is_some(), flags.contains(Flags::HAS_SHARD));
    assert_eq!(
        v.statistics().is_some(),
        flags.contains(Flags::HAS_STATISTICS)
    );
    assert_eq!(
        v.extension_type().is_some(),
        flags.contains(Flags::HAS_EXTENSION_TYPE)
    );
    assert_eq!(
        v.member_role().is_some(),
        flags.contains(Flags::HAS_COMPOSITE_MEMBER)
    );
    assert_eq!(v.element_type().is_private(), v.extension_type().is_some());

    // Element type and packing.
    let t = v.element_type();
    match (t.bits(), v.extension_type()) {
        (Some(bits), None) => assert_eq!(u64::from(bits), packing_bits(v.packing())),
        (None, Some(e)) => assert_eq!(u64::from(e.bit_width()), packing_bits(v.packing())),
        other => panic!("element width from nowhere: {other:?}"),
    }
    let _ = (
        t.name(),
        t.natural_alignment(),
        t.is_sub_byte(),
        t.integer_range(),
    );

    // Shape.
    let dynamic = v.shape().iter().any(|n| n == DYNAMIC);
    assert_eq!(v.is_dynamic(), dynamic);
    // A zero dimension makes the count zero whatever the others are (the
    // core's rule since [2^40, 2^40, 0] was wrongly an overflow).
    let product = if v.shape().iter().any(|n| n == 0) {
        Some(0)
    } else {
        v.shape().iter().try_fold(1u64, u64::checked_mul)
    };
    if dynamic {
        assert_eq!(v.element_count(), None);
    } else {
        // The decoder checks the product against the buffers: it fits.
        assert!(
            product.is_some(),
            "accepted a shape whose product overflows"
        );
        assert_eq!(v.element_count(), product);
    }
    let mut shape = [0u64; 64];
    assert_eq!(
        v.shape().copy_to(&mut shape).map(<[u64]>::len),
        Some(v.shape().len())
    );

    // Buffers: colocated with buffer 0.
    let buffers = v.buffers();
    assert_eq!(buffers.len(), buffers.iter().count());
    if let Some(first) = buffers.get(0) {
        for h in buffers {
            assert_eq!(h.device_tag(), first.device_tag());
            assert_eq!(h.memory_class(), first.memory_class());
            assert!(h.device_tag().allows(h.memory_class()));
            assert!(h.alignment().is_power_of_two());
            assert!(h.is_empty() || h.alignment() >= 64);
            let _ = (h.dlpack_device_type(), h.arrow_device_type());
        }
    }
    assert_eq!(buffers.get(buffers.len()), None);

    // The field walker covers every byte once, in order, with no empty
    // field, and names the shape as the view reports it.
    let (mut at, mut shape) = (0usize, Vec::new());
    v.for_each_field(|f| {
        assert_eq!(f.offset, at, "{} is not where the last field ended", f.path);
        assert!(!f.bytes.is_empty(), "{} is empty", f.path);
        at = f.range().end;
        if f.path.part.is_empty() && f.path.name == "shape" {
            shape.push(f.value.as_u64().expect("a shape entry is a u64"));
        }
    });
    assert_eq!(
        at,
        v.as_bytes().len(),
        "the fields end before the descriptor"
    );
    assert!(v.shape().iter().eq(shape));

    // Layout fields.
    let rank = v.shape().len();
    match v.layout() {
        Layout::RowMajor | Layout::ColumnMajor => {}
        Layout::Strided(s) => assert_eq!(s.len(), rank),
        Layout::Tiled(t) => {
            assert!((1..=8).contains(&t.depth()));
            let levels: Vec<_> = t.levels().collect();
            assert_eq!(levels.len(), usize::from(t.depth()));
            for (i, l) in levels.iter().enumerate() {
                assert_eq!(l.tile_shape.len(), rank);
                assert!(l.tile_shape.iter().all(|n| n > 0));
                assert_eq!(l.outer_strides.is_some(), l.outer_layout == 3);
                assert_eq!(l.inner_strides.is_some(), l.inner_layout == 3);
                // Only the last level ends the nesting.
                assert_eq!(l.inner_layout == 4, i + 1 < levels.len());
            }
        }
        Layout::Morton(b) => {
            assert_eq!(b.len(), rank);
            assert!(b.iter().all(|x| x > 0));
        }
        Layout::Coo(_) => assert!(rank >= 1),
        Layout::Csr(_) | Layout::Csc(_) => assert_eq!(rank, 2),
        Layout::Csf(c) => {
            assert!(rank >= 3);
            let mut seen: Vec<u32> = c.mode_order().iter().collect();
            seen.sort_unstable();
            assert!(seen.iter().copied().eq(0..rank as u32), "not a permutation");
        }
        Layout::BlockPaged(b) => {
            assert_eq!(rank, 3);
            assert!(b.page_size >= 1);
            let _ = (b.index_width(), b.slots(), b.kv_role.code());
        }
        Layout::Composite(h) => {
            assert_eq!(buffers.len(), 0);
            assert_ne!(h.member_count, u32::MAX);
        }
        Layout::Hilbert(h) => {
            assert_eq!(h.rank as usize, rank);
            assert!(h.order > 0);
            let _ = h.side();
        }
        Layout::Extension(e) => {
            assert!((0xF0..=0xFE).contains(&e.tag()));
            assert!(!buffers.is_empty());
        }
        other => panic!("a layout this harness does not know: {other:?}"),
    }
    assert!(
        rank > 0 || v.layout() == Layout::RowMajor,
        "a scalar must be row-major"
    );
    let _ = v.layout().name();
    if !matches!(
        v.layout(),
        Layout::RowMajor
            | Layout::ColumnMajor
            | Layout::Strided(_)
            | Layout::Tiled(_)
            | Layout::Morton(_)
            | Layout::Hilbert(_)
            | Layout::Extension(_)
    ) {
        assert_eq!(v.byte_offset(), 0);
    } else if let Some(data) = buffers.get(0) {
        assert!(v.byte_offset() <= data.byte_size());
    }

    // Strides: defined for dense orders with a concrete shape.
    let mut strides = [0i64; 64];
    match (v.layout(), v.strides(&mut strides)) {
        (Layout::Strided(s), Some(out)) => assert!(out.iter().copied().eq(s.iter())),
        (Layout::RowMajor, Some(out)) => {
            let mut acc = 1i64;
            for (axis, st) in out.iter().enumerate().rev() {
                assert_eq!(*st, acc);
                acc = acc.wrapping_mul(v.shape().get(axis).unwrap() as i64);
            }
        }
        (Layout::ColumnMajor, Some(out)) => {
            let mut acc = 1i64;
            for (axis, st) in out.iter().enumerate() {
                assert_eq!(*st, acc);
                acc = acc.wrapping_mul(v.shape().get(axis).unwrap() as i64);
            }
        }
        (Layout::RowMajor | Layout::ColumnMajor, None) => {}
        (Layout::Strided(_), None) => panic!("explicit strides not returned"),
        (_, s) => assert_eq!(s, None),
    }

    // Sections' contents.
    if let Some(q) = v.quantization() {
        let s = q.scheme;
        let _ = (s.tag(), s.name(), s.encoded_len(), s.blocks());
        let (scale, zero) = s.parameter_buffers();
        for i in [scale, zero].into_iter().flatten() {
            assert!(
                (i as usize) < buffers.len(),
                "parameter buffer {i} out of the table"
            );
        }
        if let Scheme::PerTensor { scale, .. } = s {
            assert!(scale.is_finite() && scale != 0.0);
        }
    }
    if let Some(s) = v.shard() {
        for ((n, p), o) in v
            .shape()
            .iter()
            .zip(s.parent_shape.iter())
            .zip(s.shard_offset.iter())
        {
            assert!(n != DYNAMIC && p != DYNAMIC && o != DYNAMIC);
            assert!(o.checked_add(n).is_some_and(|end| end <= p));
        }
    }
    if let Some(s) = v.statistics() {
        let _ = (s.mask(), s.sparsity_ratio(), s.value_stats(), s.nan_inf());
        if let (Some(a), Some(b)) = (s.nnz(), v.layout().nnz()) {
            assert_eq!(a, b, "statistics nnz contradicts the layout");
        }
        if let Some((min, max, abs)) = s.value_range() {
            assert!(min <= max && abs == min.abs().max(max.abs()));
        }
        if let Some((n, m)) = s.nm_sparsity() {
            assert!(n <= m);
        }
    }
    if let Some(e) = v.extension_type() {
        let _ = (e.is_float(), e.is_signed(), e.entry());
    }
}

/// The spec's rules for a 16-byte handle, restated independently of the
/// crate (`docs/spec/buffer-protocol.md`): `Some(rule)` names a broken rule.
pub fn handle_violation(b: &[u8; 16]) -> Option<&'static str> {
    let size = u64::from_le_bytes(b[0..8].try_into().unwrap());
    let align = u32::from_le_bytes(b[8..12].try_into().unwrap());
    let (dev, sync, class, reserved) = (b[12], b[13], b[14], b[15]);
    let private = |c: u8| (0xF0..=0xFE).contains(&c);
    if !(dev <= 0x08 || private(dev)) {
        return Some("device tag");
    }
    if sync > 2 || (dev == 0x00 && sync != 0) {
        return Some("sync mode");
    }
    if !(class <= 0x03 || private(class)) {
        return Some("memory class");
    }
    let pair = if private(dev) {
        class == 0 || private(class)
    } else if private(class) {
        false
    } else {
        match dev {
            0x01 | 0x02 | 0x04 | 0x07 => true, // CUDA, ROCm, Vulkan, Level Zero: all four
            0x05 => class == 0,                // WebGPU: standard only
            _ => class != 0x03,                // CPU, Metal, Hexagon, OpenCL: no peer
        }
    };
    if !pair {
        return Some("per-device validity");
    }
    if !align.is_power_of_two() || (size > 0 && align < 64) {
        return Some("alignment");
    }
    if reserved != 0 {
        return Some("reserved");
    }
    None
}
