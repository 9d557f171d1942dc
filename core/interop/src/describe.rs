//! Describing a strided tensor that lives at a raw address as a hurray
//! descriptor: the part both imports share, and [`describe_strided`] for
//! callers that hold their own arrays.
//!
//! # The buffer an import declares
//!
//! A hurray buffer's base address must be a multiple of its alignment, and a
//! non-empty buffer's alignment at least 64 (`BP-ALIGN-2`, `BP-ALIGN-4`);
//! producers hand out element pointers with no such promise (NumPy's are
//! 16-byte aligned, DLPack's "256-byte" rule is not kept by PyTorch, CuPy
//! or TensorFlow). So buffer 0 is declared to start at the lowest byte the
//! strides reach, *rounded down to 64*, and `byte_offset` is the distance
//! from there to element `[0, …, 0]`. Its `byte_size` ends at the last byte
//! the strides reach. The up to 63 bytes below the first addressed byte are
//! covered by the declaration but never addressed by the descriptor, so no
//! reader following it touches them. Its alignment is the largest power of
//! two dividing the base, capped at 4096.
//!
//! An empty tensor (a zero dimension) declares an empty buffer (size 0,
//! alignment 1) at the element pointer, which may be null.

use hurray_core::interop::{self, InteropError};
use hurray_core::layout;
use hurray_core::{
    BufferHandle, DeviceTag, ElementType, LayoutSpec, MemoryClass, SyncMode, TensorDescriptor,
    TensorView,
};

use crate::error::ImportError;

/// The most dimensions an export or import handles (DLPack consumers
/// commonly stop at 32 or 64; hurray's own limit is 64).
pub const MAX_NDIM: usize = 32;

/// The longest descriptor an import writes: header, shape, `byte_offset`,
/// strides and one buffer handle at [`MAX_NDIM`] dimensions.
pub const MAX_DESCRIPTOR_LEN: usize = 20 + 8 * MAX_NDIM + 8 + 8 * MAX_NDIM + 1 + 16;

/// Stack storage for one imported descriptor.
///
/// ```
/// let buf = hurray_interop::DescriptorBuf::new();
/// assert_eq!(buf.capacity(), hurray_interop::MAX_DESCRIPTOR_LEN);
/// ```
#[derive(Debug, Clone)]
pub struct DescriptorBuf {
    bytes: [u8; MAX_DESCRIPTOR_LEN],
}

impl DescriptorBuf {
    /// A zeroed buffer.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            bytes: [0; MAX_DESCRIPTOR_LEN],
        }
    }

    /// Its length, [`MAX_DESCRIPTOR_LEN`].
    #[must_use]
    pub const fn capacity(&self) -> usize {
        MAX_DESCRIPTOR_LEN
    }

    /// The bytes, to hand to an import.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl Default for DescriptorBuf {
    fn default() -> Self {
        Self::new()
    }
}

/// A private hurray device tag (`0xF0`–`0xFE`) that the caller pairs with a
/// DLPack/Arrow device code hurray does not map (for example `kDLMAIA` or
/// `kDLTPU`). Registered pairs are used in both directions, before the
/// built-in table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrivateDevice {
    /// The hurray device tag, `0xF0`–`0xFE`.
    pub tag: u8,
    /// The DLPack `DLDeviceType` / Arrow `ArrowDeviceType`.
    pub code: i32,
}

/// The (device tag, memory class) of an interchange device code: a
/// registered private pair first, then the built-in table.
pub(crate) fn device_from_code(
    code: i32,
    private: &[PrivateDevice],
) -> Result<(DeviceTag, MemoryClass), InteropError> {
    if let Some(tag) = private
        .iter()
        .find(|p| p.code == code)
        .and_then(|p| DeviceTag::private(p.tag))
    {
        return Ok((tag, MemoryClass::Standard));
    }
    interop::from_dlpack(code)
}

/// The interchange device code of a pair: a registered private tag first,
/// then the built-in table.
pub(crate) fn device_to_code(
    tag: DeviceTag,
    class: MemoryClass,
    private: &[PrivateDevice],
) -> Result<i32, InteropError> {
    if let (DeviceTag::Private(code), MemoryClass::Standard) = (tag, class) {
        if let Some(p) = private.iter().find(|p| p.tag == code) {
            return Ok(p.code);
        }
    }
    interop::to_dlpack(tag, class)
}

/// What an import found: a strided tensor at an address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawTensor<'s> {
    pub(crate) element_type: ElementType,
    pub(crate) shape: &'s [u64],
    /// `None`: compact row-major.
    pub(crate) strides: Option<&'s [i64]>,
    /// Address of element `[0, …, 0]`.
    pub(crate) address: usize,
    pub(crate) device_tag: DeviceTag,
    pub(crate) memory_class: MemoryClass,
    pub(crate) sync_mode: SyncMode,
}

/// The result of describing: the parsed view of the bytes written and the
/// distance from buffer 0's base back from the first element.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Described<'d> {
    pub(crate) view: TensorView<'d>,
    /// `address - base`, which is also the descriptor's `byte_offset`.
    pub(crate) front: usize,
}

const fn overflow(what: &'static str) -> ImportError {
    ImportError::Overflow { what }
}

/// Whether `strides` are the compact strides of `shape` in row-major
/// (`rev = true`) or column-major order; size-1 dimensions match anything.
fn is_compact(shape: &[u64], strides: &[i64], row_major: bool) -> bool {
    let mut expected: i128 = 1;
    let mut check = |(&n, &s): (&u64, &i64)| {
        let ok = n <= 1 || i128::from(s) == expected;
        expected = expected.saturating_mul(i128::from(n));
        ok
    };
    if row_major {
        shape.iter().zip(strides).rev().all(&mut check)
    } else {
        shape.iter().zip(strides).all(&mut check)
    }
}

/// Writes the descriptor of `t` into `out` and parses it back.
pub(crate) fn describe<'d>(
    t: &RawTensor<'_>,
    out: &'d mut [u8],
) -> Result<Described<'d>, ImportError> {
    let ndim = t.shape.len();
    if ndim > MAX_NDIM || t.strides.is_some_and(|s| s.len() != ndim) {
        return Err(ImportError::Ndim(i64::try_from(ndim).unwrap_or(i64::MAX)));
    }
    let packing =
        t.element_type
            .packing()
            .ok_or(ImportError::DataType(InteropError::NoDataType(
                t.element_type,
            )))?;
    let count = t
        .shape
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .ok_or(overflow("element count"))?;
    // Shapes are copied out so the descriptor can name them as u64.
    let shape = t.shape;
    let layout = match t.strides {
        None => LayoutSpec::RowMajor,
        Some(s) if is_compact(shape, s, true) => LayoutSpec::RowMajor,
        Some(s) if ndim > 1 && is_compact(shape, s, false) => LayoutSpec::ColumnMajor,
        Some(s) => LayoutSpec::Strided(s),
    };

    let (handle, front) = if count == 0 {
        let empty =
            BufferHandle::with_memory_class(0, 1, t.device_tag, t.sync_mode, t.memory_class)
                .map_err(ImportError::Handle)?;
        (empty, 0usize)
    } else {
        // The element offsets the strides reach, then the bytes those
        // touch: the core's own rules, as its reader applies them.
        let (lo, hi) = match t.strides {
            None => (
                0,
                i64::try_from(count - 1).map_err(|_| overflow("element count"))?,
            ),
            Some(s) => layout::stride_range(shape.iter().copied(), s.iter().copied())
                .ok_or(overflow("stride extent"))?,
        };
        let (lo_b, hi_b) = packing.byte_span(lo, hi).ok_or(overflow("byte extent"))?;
        let (lo_b, hi_b) = (i128::from(lo_b), i128::from(hi_b));
        let address = i128::try_from(t.address).map_err(|_| overflow("address"))?;
        let start = address.checked_add(lo_b).ok_or(overflow("byte extent"))?;
        let end = address.checked_add(hi_b).ok_or(overflow("byte extent"))?;
        let (Ok(start), Ok(end)) = (u64::try_from(start), u64::try_from(end)) else {
            return Err(overflow(
                "byte extent below address 0 or above the address space",
            ));
        };
        let base = start & !63;
        let alignment = 1u32 << base.trailing_zeros().min(12);
        let front = t.address as u64 - base; // base <= start <= address
        let natural = t.element_type.natural_alignment();
        if !front.is_multiple_of(u64::from(natural)) {
            return Err(ImportError::MisalignedData {
                address: t.address,
                alignment: natural,
            });
        }
        let handle = BufferHandle::with_memory_class(
            end - base,
            alignment,
            t.device_tag,
            t.sync_mode,
            t.memory_class,
        )
        .map_err(ImportError::Handle)?;
        (
            handle,
            usize::try_from(front).map_err(|_| overflow("byte offset"))?,
        )
    };
    let buffers = [handle];
    let desc = TensorDescriptor::new(t.element_type, shape, layout, &buffers)
        .with_byte_offset(front as u64);
    // The encoder parses what it wrote (strictly, as any reader would) and
    // hands back that view.
    let view = desc.encode_view(out)?;
    Ok(Described { view, front })
}

/// Describes a strided tensor whose element `[0, …, 0]` is at `address`:
/// writes its descriptor into `out` (at most [`MAX_DESCRIPTOR_LEN`] bytes)
/// and returns the view and the address of buffer 0's base (see the module
/// documentation for how the buffer is declared). `strides` are in
/// elements; `None` means compact row-major. Nothing is dereferenced.
///
/// # Errors
/// As the imports: too many dimensions, a type with no packing, overflow,
/// a misaligned first element, a handle the device table refuses (a CPU
/// buffer that is not `ProducerSynced`).
///
/// ```
/// use hurray_core::{DeviceTag, ElementType, Layout, MemoryClass, SyncMode};
/// use hurray_interop::{describe_strided, DescriptorBuf};
///
/// let data = [0f32; 12];
/// let mut buf = DescriptorBuf::new();
/// // A transposed 3x4 view: strides (1, 3).
/// let (view, base) = describe_strided(
///     ElementType::Float32, &[4, 3], Some(&[1, 4]), data.as_ptr() as usize,
///     DeviceTag::Cpu, MemoryClass::Standard, SyncMode::ProducerSynced, buf.as_mut_slice(),
/// )?;
/// assert_eq!(view.layout(), Layout::ColumnMajor);
/// assert_eq!(base + view.byte_offset() as usize, data.as_ptr() as usize);
/// # Ok::<(), hurray_interop::ImportError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn describe_strided<'d>(
    element_type: ElementType,
    shape: &[u64],
    strides: Option<&[i64]>,
    address: usize,
    device_tag: DeviceTag,
    memory_class: MemoryClass,
    sync_mode: SyncMode,
    out: &'d mut [u8],
) -> Result<(TensorView<'d>, usize), ImportError> {
    let d = describe(
        &RawTensor {
            element_type,
            shape,
            strides,
            address,
            device_tag,
            memory_class,
            sync_mode,
        },
        out,
    )?;
    Ok((d.view, address - d.front))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hurray_core::Layout;

    fn cpu(
        et: ElementType,
        shape: &[u64],
        strides: Option<&[i64]>,
        address: usize,
    ) -> Result<(Vec<u8>, usize, usize), ImportError> {
        let mut buf = DescriptorBuf::new();
        let d = describe(
            &RawTensor {
                element_type: et,
                shape,
                strides,
                address,
                device_tag: DeviceTag::Cpu,
                memory_class: MemoryClass::Standard,
                sync_mode: SyncMode::ProducerSynced,
            },
            buf.as_mut_slice(),
        )?;
        Ok((
            d.view.as_bytes().to_vec(),
            d.front,
            d.view.buffers().get(0).unwrap().byte_size() as usize,
        ))
    }

    #[test]
    fn base_is_rounded_down_to_64_and_size_ends_at_the_last_byte() {
        // float32 [3, 4] at 0x1010: bytes 0x1010..0x1040; base 0x1000.
        let (bytes, front, size) = cpu(ElementType::Float32, &[3, 4], None, 0x1010).unwrap();
        assert_eq!(front, 0x10);
        assert_eq!(size, 0x10 + 48);
        let v = TensorView::parse(&bytes).unwrap();
        assert_eq!(v.byte_offset(), 0x10);
        assert_eq!(v.layout(), Layout::RowMajor);
        assert_eq!(v.buffers().get(0).unwrap().alignment(), 4096);
    }

    #[test]
    fn negative_strides_put_the_base_below_the_first_element() {
        // int16 [4] stride -1 at 0x2006: elements at 0x2000..=0x2006.
        let (bytes, front, size) = cpu(ElementType::Int16, &[4], Some(&[-1]), 0x2006).unwrap();
        assert_eq!((front, size), (6, 8));
        let v = TensorView::parse(&bytes).unwrap();
        assert!(matches!(v.layout(), Layout::Strided(_)));
    }

    #[test]
    fn compact_strides_become_row_or_column_major() {
        let (b, ..) = cpu(ElementType::Int8, &[2, 1, 3], Some(&[3, 99, 1]), 64).unwrap();
        assert_eq!(TensorView::parse(&b).unwrap().layout(), Layout::RowMajor);
        let (b, ..) = cpu(ElementType::Int8, &[2, 3], Some(&[1, 2]), 64).unwrap();
        assert_eq!(TensorView::parse(&b).unwrap().layout(), Layout::ColumnMajor);
    }

    #[test]
    fn empty_tensor_declares_an_empty_buffer_at_any_address() {
        let (b, front, size) = cpu(ElementType::Float64, &[0, 5], Some(&[5, 1]), 0).unwrap();
        assert_eq!((front, size), (0, 0));
        assert_eq!(
            TensorView::parse(&b)
                .unwrap()
                .buffers()
                .get(0)
                .unwrap()
                .alignment(),
            1
        );
    }

    #[test]
    fn misaligned_first_element_is_refused() {
        assert_eq!(
            cpu(ElementType::Float32, &[2], None, 0x1002).unwrap_err(),
            ImportError::MisalignedData {
                address: 0x1002,
                alignment: 4
            }
        );
    }

    #[test]
    fn extent_outside_the_address_space_is_refused() {
        assert!(matches!(
            cpu(ElementType::Int8, &[3], Some(&[-1]), 1),
            Err(ImportError::Overflow { .. })
        ));
        assert!(matches!(
            cpu(ElementType::Int8, &[3], Some(&[i64::MAX]), 64),
            Err(ImportError::Overflow { .. })
        ));
        assert!(matches!(
            cpu(ElementType::Int64, &[u64::MAX / 2, 4], None, 64),
            Err(ImportError::Overflow { .. })
        ));
    }

    #[test]
    fn sub_byte_extents_are_in_packed_bytes() {
        // int4 [5]: 3 bytes; float6 [5]: two 3-byte groups.
        assert_eq!(cpu(ElementType::Int4, &[5], None, 128).unwrap().2, 3);
        assert_eq!(cpu(ElementType::Float6E2M3, &[5], None, 128).unwrap().2, 6);
    }

    #[test]
    fn private_devices_map_both_ways_before_the_table() {
        let map = [PrivateDevice {
            tag: 0xF3,
            code: interop::KDL_MAIA,
        }];
        assert_eq!(
            device_from_code(interop::KDL_MAIA, &map),
            Ok((DeviceTag::Private(0xF3), MemoryClass::Standard))
        );
        assert_eq!(
            device_to_code(DeviceTag::Private(0xF3), MemoryClass::Standard, &map),
            Ok(interop::KDL_MAIA)
        );
        assert!(device_from_code(interop::KDL_MAIA, &[]).is_err());
        assert!(device_to_code(DeviceTag::Private(0xF4), MemoryClass::Standard, &map).is_err());
    }
}
