//! Everything in the harness that depends on the descriptor wire format.
//!
//! The rest of the program (stream reassembly, stack painting, instruction
//! counting, reporting) only calls what this module exports, so switching the
//! harness to another wire format is an edit of this file alone:
//!
//! * [`View`], [`DecodeError`], [`BuildError`] — the core's types;
//! * [`decode`] — the decode+validate entry point that is measured,
//!   [`decode_prefix`] — the same for the head of a stream, and
//!   [`log_decoded`], which logs what a view holds;
//! * [`frame`], [`more_needed`], [`declared_len`] — the three facts the
//!   stream reassembler needs (which bytes a decoded frame occupies, whether
//!   an error only means "more bytes to come", how long a rejected frame says
//!   it is), and [`with_declared_len`], which forges a frame's length;
//! * [`VALID`] — descriptors held in flash, with what each must decode to;
//! * [`build_all`] and [`builder_overflow`] — the heapless builder;
//! * [`CORRUPT`] — corrupted inputs with the exact typed error each must get;
//! * [`STREAM`] — which descriptors, valid and rejected, make up the byte
//!   stream, in order.
//!
//! Format: the hurray tensor descriptor (`"HRRY"`, version 1.0): a 20-byte
//! fixed header, the shape, `byte_offset`, the layout's own fields, the
//! buffer count and the 16-byte handles, then the optional sections.

use hurray_core::layout::Compressed;
use hurray_core::{
    BufferHandle, BuilderLayout, DescriptorBuilder, DescriptorError, DescriptorErrorKind,
    DeviceTag, ElementType, EncodeError, Error, FieldName, MemoryClass, Quantity, SyncMode,
    TensorView,
};

/// Capacity of the stream reassembly buffer, in bytes (the largest frame).
pub const MAX_FRAME: usize = 256;

/// A decoded, validated descriptor.
pub type View<'a> = TensorView<'a>;
/// Why a descriptor was rejected.
pub type DecodeError = DescriptorError;
/// Why the builder could not build one.
pub type BuildError = EncodeError;

/// Decodes and validates one descriptor (exactly its bytes): the path whose
/// stack, size and instructions are measured.
///
/// # Errors
/// The core's typed error for the first rule the bytes break, with its offset.
#[inline(never)]
pub fn decode(bytes: &[u8]) -> Result<View<'_>, DecodeError> {
    TensorView::parse(bytes)
}

/// Decodes the descriptor at the start of a stream (bytes after it are the
/// next frame's).
///
/// # Errors
/// As [`decode`], but trailing bytes are not an error.
pub fn decode_prefix(bytes: &[u8]) -> Result<View<'_>, DecodeError> {
    TensorView::parse_prefix(bytes).map(|(view, _)| view)
}

/// Logs what a decoded descriptor holds.
pub fn log_decoded(name: &str, view: &View<'_>) {
    defmt::info!(
        "decoded {}: {} layout, rank {}, {} elements of {}, {} buffers, buffer 0 {} B",
        name,
        view.layout().name(),
        view.rank(),
        view.element_count(),
        view.element_type(),
        view.buffers().len(),
        view.buffers().get(0).map_or(0, |b| b.byte_size())
    );
}

/// The bytes of the stream that a decoded descriptor occupies.
#[must_use]
pub fn frame<'a>(view: &View<'a>) -> &'a [u8] {
    view.as_bytes()
}

/// Offset of `descriptor_length` (u32 LE) in the fixed header.
const LENGTH_AT: usize = 6;

/// A copy of `bytes` in `out` whose header declares `claimed` bytes instead
/// of its real length (for a frame too large for the reassembly buffer).
#[must_use]
pub fn with_declared_len<'o>(bytes: &[u8], claimed: u32, out: &'o mut [u8; MAX_FRAME]) -> &'o [u8] {
    let n = bytes.len().min(MAX_FRAME);
    let (head, _) = out.split_at_mut(n);
    head.copy_from_slice(bytes.get(..n).unwrap_or(&[]));
    if let Some(length) = head.get_mut(LENGTH_AT..LENGTH_AT + 4) {
        length.copy_from_slice(&claimed.to_le_bytes());
    }
    head
}

/// If `error` only says that the input ends too early (the header, or the
/// declared `descriptor_length`, reaches past it), the length the descriptor
/// needs; `None` for any other fault.
#[must_use]
pub fn more_needed(error: &DecodeError) -> Option<u64> {
    match error.kind() {
        DescriptorErrorKind::Truncated { needed, .. } => Some(needed),
        _ => None,
    }
}

/// The length a rejected descriptor declares for itself, when its header is
/// intact enough to trust it (magic and major version right, length at least
/// a header): the reassembler skips that many bytes and stays in step.
#[must_use]
pub fn declared_len(bytes: &[u8]) -> Option<usize> {
    let header = bytes.first_chunk::<HEADER>()?;
    let (magic, rest) = header.split_first_chunk::<4>()?;
    if *magic != hurray_core::DESCRIPTOR_MAGIC || rest.first() != Some(&1) {
        return None;
    }
    let length = header.get(LENGTH_AT..LENGTH_AT + 4)?;
    let total = u32::from_le_bytes(length.try_into().ok()?);
    usize::try_from(total).ok().filter(|&n| n >= HEADER)
}

const HEADER: usize = hurray_core::HEADER_LEN;

/// What a valid descriptor must decode to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// The layout tag.
    pub layout_tag: u8,
    /// Number of dimensions.
    pub rank: u32,
    /// Product of the shape.
    pub elements: u64,
    /// Entries in the buffer table.
    pub buffers: usize,
    /// `byte_size` of buffer 0 (the data, or a sparse layout's values).
    pub data_size: u64,
}

/// A valid descriptor held in flash.
#[derive(Debug, Clone, Copy)]
pub struct Valid {
    /// Short name for the log.
    pub name: &'static str,
    /// The descriptor's bytes.
    pub bytes: &'static [u8],
    /// What it must decode to.
    pub expect: Expect,
}

/// Whether `view` is what `expect` describes.
#[must_use]
pub fn matches(view: &View<'_>, expect: &Expect) -> bool {
    view.layout().tag() == expect.layout_tag
        && view.rank() == expect.rank
        && view.element_count() == Some(expect.elements)
        && view.buffers().len() == expect.buffers
        && view.buffers().get(0).map(|b| b.byte_size()) == Some(expect.data_size)
}

/// Eight-byte alignment for descriptors in flash (the decoder itself
/// accepts any alignment).
#[repr(C, align(8))]
pub struct Aligned<const N: usize>(pub [u8; N]);

/// A rank-4 dense (row-major) float32 tensor of shape 2 × 3 × 4 × 5 in one
/// 480-byte CPU buffer. 77 bytes.
pub static DENSE_RANK4: Aligned<77> = Aligned([
    b'H', b'R', b'R', b'Y', 1, 0, // magic, version 1.0
    77, 0, 0, 0, // descriptor_length
    0, 0, 0, 0, // flags: no section
    0x03, 0x01, // type float32, layout row-major
    4, 0, 0, 0, // rank
    2, 0, 0, 0, 0, 0, 0, 0, // shape[0] (offset 20)
    3, 0, 0, 0, 0, 0, 0, 0, // shape[1]
    4, 0, 0, 0, 0, 0, 0, 0, // shape[2]
    5, 0, 0, 0, 0, 0, 0, 0, // shape[3]
    0, 0, 0, 0, 0, 0, 0, 0, // byte_offset (52)
    1, // buffer_count (60)
    0xE0, 0x01, 0, 0, 0, 0, 0, 0, // buffer 0 (61): 480 bytes
    64, 0, 0, 0, 0x00, 0x00, 0x00, 0, // align 64, CPU, producer-synced, standard
]);

/// A 4 × 6 float32 CSR matrix with 8 stored values: values (32 bytes),
/// column indices (8 × u64) and row pointers (5 × u64), all on the CPU.
/// 109 bytes.
pub static CSR: Aligned<109> = Aligned([
    b'H', b'R', b'R', b'Y', 1, 0, // magic, version 1.0
    109, 0, 0, 0, // descriptor_length
    0, 0, 0, 0, // flags: no section
    0x03, 0x07, // type float32, layout CSR
    2, 0, 0, 0, // rank
    4, 0, 0, 0, 0, 0, 0, 0, // shape[0]: rows (offset 20)
    6, 0, 0, 0, 0, 0, 0, 0, // shape[1]: columns
    0, 0, 0, 0, 0, 0, 0, 0, // byte_offset (36): 0 for sparse layouts
    8, 0, 0, 0, 0, 0, 0, 0, // nnz (44)
    0, 0, 0, 0, 0, 0, 0, 0, // reserved (52)
    3, // buffer_count (60)
    32, 0, 0, 0, 0, 0, 0, 0, // buffer 0 (61): values, 8 × f32
    64, 0, 0, 0, 0x00, 0x00, 0x00, 0, // align 64, CPU, producer-synced, standard
    64, 0, 0, 0, 0, 0, 0, 0, // buffer 1 (77): column indices, 8 × u64
    64, 0, 0, 0, 0x00, 0x00, 0x00, 0, // align 64, CPU, producer-synced, standard
    40, 0, 0, 0, 0, 0, 0, 0, // buffer 2 (93): row pointers, 5 × u64
    64, 0, 0, 0, 0x00, 0x00, 0x00, 0, // align 64, CPU, producer-synced, standard
]);

/// A 16 × 8 float16 transposed view (strides 1, 16) of a CUDA buffer in
/// pinned host memory, event-synced, starting 64 bytes in. 77 bytes.
pub static STRIDED: Aligned<77> = Aligned([
    b'H', b'R', b'R', b'Y', 1, 0, // magic, version 1.0
    77, 0, 0, 0, // descriptor_length
    0, 0, 0, 0, // flags: no section
    0x01, 0x03, // type float16, layout strided
    2, 0, 0, 0, // rank
    16, 0, 0, 0, 0, 0, 0, 0, // shape[0] (offset 20)
    8, 0, 0, 0, 0, 0, 0, 0, // shape[1]
    64, 0, 0, 0, 0, 0, 0, 0, // byte_offset (36)
    1, 0, 0, 0, 0, 0, 0, 0, // strides[0] (44), in elements
    16, 0, 0, 0, 0, 0, 0, 0, // strides[1] (52)
    1, // buffer_count (60)
    0x40, 0x01, 0, 0, 0, 0, 0, 0, // buffer 0 (61): 320 bytes
    0, 0x10, 0, 0, 0x01, 0x01, 0x01, 0, // align 4096, CUDA, event, host-pinned
]);

/// Index in [`VALID`] of the rank-4 dense descriptor.
pub const DENSE_RANK4_INDEX: usize = 0;
/// Index in [`VALID`] of the CSR descriptor.
pub const CSR_INDEX: usize = 1;
/// How the summary line names the CSR descriptor.
pub const CSR_LABEL: &str = "CSR";

/// Every valid descriptor held in flash.
pub static VALID: [Valid; 3] = [
    Valid {
        name: "dense rank-4 float32",
        bytes: &DENSE_RANK4.0,
        expect: Expect {
            layout_tag: 0x01,
            rank: 4,
            elements: 120,
            buffers: 1,
            data_size: 480,
        },
    },
    Valid {
        name: "CSR 4x6 nnz 8",
        bytes: &CSR.0,
        expect: Expect {
            layout_tag: 0x07,
            rank: 2,
            elements: 24,
            buffers: 3,
            data_size: 32,
        },
    },
    Valid {
        name: "strided float16 transpose",
        bytes: &STRIDED.0,
        expect: Expect {
            layout_tag: 0x03,
            rank: 2,
            elements: 128,
            buffers: 1,
            data_size: 320,
        },
    },
];

/// A CPU buffer of `byte_size` bytes aligned to 64, checked at compile time.
const fn cpu(byte_size: u64) -> BufferHandle {
    match BufferHandle::new(byte_size, 64, DeviceTag::Cpu, SyncMode::ProducerSynced) {
        Ok(h) => h,
        Err(_) => panic!("invalid CPU buffer handle"),
    }
}

/// The two descriptors the heapless builder makes: `(index in VALID, bytes)`.
/// Each must equal its flash copy byte for byte.
pub fn build_all() -> [(usize, Result<heapless::Vec<u8, MAX_FRAME>, BuildError>); 2] {
    let dense = || {
        let mut b = DescriptorBuilder::<4, 1>::new(ElementType::Float32);
        b.push_dim(2)?.push_dim(3)?.push_dim(4)?.push_dim(5)?;
        b.push_buffer(cpu(480))?;
        b.to_vec()
    };
    let csr = || {
        let mut b = DescriptorBuilder::<2, 3>::new(ElementType::Float32);
        b.set_shape(&[4, 6])?
            .set_layout(BuilderLayout::Csr(Compressed { nnz: 8 }));
        b.push_buffer(cpu(32))?;
        b.push_buffer(cpu(64))?;
        b.push_buffer(cpu(40))?;
        b.to_vec()
    };
    [(DENSE_RANK4_INDEX, dense()), (CSR_INDEX, csr())]
}

/// A fifth dimension pushed onto a builder with room for four: the builder's
/// result, and the error it must be.
pub fn builder_overflow() -> (Result<(), BuildError>, BuildError) {
    let mut b = DescriptorBuilder::<4, 1>::new(ElementType::Float32);
    let got = (|| {
        b.push_dim(1)?.push_dim(1)?.push_dim(1)?.push_dim(1)?;
        b.push_dim(1).map(|_| ())
    })();
    let expected = EncodeError::CapacityExceeded {
        what: "dims",
        capacity: 4,
    };
    (got, expected)
}

/// A corrupted copy of a valid descriptor and the error it must get.
#[derive(Debug, Clone, Copy)]
pub struct Corrupt {
    /// What was broken.
    pub name: &'static str,
    /// The valid descriptor it starts from.
    pub base: &'static [u8],
    /// `(offset, new byte)` patches.
    pub patch: &'static [(usize, u8)],
    /// Keep only this many bytes (`None`: all).
    pub keep: Option<usize>,
    /// The exact error: what, and at which byte.
    pub expect: DecodeError,
}

impl Corrupt {
    /// Writes the corrupted bytes into `out` and returns them.
    #[must_use]
    pub fn apply<'o>(&self, out: &'o mut [u8; MAX_FRAME]) -> &'o [u8] {
        let len = self.keep.unwrap_or(self.base.len()).min(self.base.len());
        let (head, _) = out.split_at_mut(len);
        head.copy_from_slice(self.base.get(..len).unwrap_or(&[]));
        for &(at, byte) in self.patch {
            if let Some(b) = head.get_mut(at) {
                *b = byte;
            }
        }
        head
    }
}

const fn corrupt(
    name: &'static str,
    patch: &'static [(usize, u8)],
    offset: u32,
    kind: DescriptorErrorKind,
) -> Corrupt {
    Corrupt {
        name,
        base: &DENSE_RANK4.0,
        patch,
        keep: None,
        expect: DescriptorError::new(offset, kind),
    }
}

/// A handle error inside buffer `index` of a one-buffer descriptor's table.
const fn in_buffer(index: u32, error: Error) -> DescriptorErrorKind {
    DescriptorErrorKind::Buffer { index, error }
}

/// Index in [`CORRUPT`] of the unknown sync mode (a well-framed rejection).
const SYNC_MODE: usize = 11;
/// Index in [`CORRUPT`] of the shape beyond its buffer (well-framed too).
const SHAPE_BEYOND: usize = 15;

/// Corrupted descriptors; each must be rejected with exactly its error.
pub static CORRUPT: [Corrupt; 25] = [
    corrupt(
        "bad magic",
        &[(3, b'X')],
        0,
        DescriptorErrorKind::BadMagic(*b"HRRX"),
    ),
    corrupt(
        "major version 2",
        &[(4, 2)],
        4,
        DescriptorErrorKind::UnsupportedVersion { major: 2, minor: 0 },
    ),
    corrupt(
        "reserved flag bit",
        &[(10, 0x80)],
        10,
        DescriptorErrorKind::ReservedFlags(0x80),
    ),
    corrupt(
        "reserved type tag",
        &[(14, 0x47)],
        14,
        DescriptorErrorKind::InvalidTypeTag(0x47),
    ),
    corrupt(
        "unassigned layout tag",
        &[(15, 0x0C)],
        15,
        DescriptorErrorKind::InvalidLayoutTag(0x0C),
    ),
    corrupt(
        "rank 65",
        &[(16, 65)],
        16,
        DescriptorErrorKind::RankTooLarge(65),
    ),
    corrupt(
        "CSR at rank 4",
        &[(15, 0x07)],
        60,
        DescriptorErrorKind::RankNotAllowed {
            layout_tag: 0x07,
            rank: 4,
        },
    ),
    Corrupt {
        keep: Some(76),
        ..corrupt(
            "one byte short",
            &[],
            6,
            DescriptorErrorKind::Truncated {
                needed: 77,
                available: 76,
            },
        )
    },
    corrupt(
        "length inside the header",
        &[(6, 19)],
        6,
        DescriptorErrorKind::LengthMismatch {
            declared: 19,
            consumed: 20,
        },
    ),
    corrupt(
        "length one byte short of the fields",
        &[(6, 76)],
        61,
        DescriptorErrorKind::LengthMismatch {
            declared: 76,
            consumed: 77,
        },
    ),
    corrupt(
        "two buffers declared, one present",
        &[(60, 2)],
        61,
        DescriptorErrorKind::LengthMismatch {
            declared: 77,
            consumed: 93,
        },
    ),
    corrupt(
        "unknown sync mode",
        &[(74, 0x07)],
        61,
        in_buffer(0, Error::InvalidSyncMode(0x07)),
    ),
    corrupt(
        "alignment 3",
        &[(69, 3)],
        61,
        in_buffer(0, Error::AlignmentNotPowerOfTwo { alignment: 3 }),
    ),
    corrupt(
        "reserved device tag",
        &[(73, 0x09)],
        61,
        in_buffer(0, Error::InvalidDeviceTag(0x09)),
    ),
    corrupt(
        "CPU memory marked peer-to-peer",
        &[(75, 0x03)],
        61,
        in_buffer(
            0,
            Error::MemoryClassNotAllowed {
                device_tag: DeviceTag::Cpu,
                memory_class: MemoryClass::PeerToPeer,
            },
        ),
    ),
    corrupt(
        "shape beyond the buffer",
        &[(44, 6)],
        61,
        DescriptorErrorKind::BufferTooSmall {
            index: 0,
            needed: 576,
            byte_size: 480,
        },
    ),
    corrupt(
        "misaligned byte offset",
        &[(52, 2)],
        52,
        DescriptorErrorKind::ByteOffsetMisaligned {
            byte_offset: 2,
            alignment: 4,
        },
    ),
    corrupt(
        "byte offset past the buffer",
        &[(53, 2)],
        52,
        DescriptorErrorKind::ByteOffsetOutOfRange {
            byte_offset: 512,
            byte_size: 480,
        },
    ),
    corrupt(
        "element count overflows",
        &[(24, 1), (32, 1)],
        61,
        DescriptorErrorKind::Overflow {
            what: Quantity::ElementCount,
        },
    ),
    Corrupt {
        base: &CSR.0,
        ..corrupt(
            "CSR index array of 7",
            &[(77, 56)],
            77,
            DescriptorErrorKind::BufferSizeMismatch {
                index: 1,
                expected: 64,
                byte_size: 56,
            },
        )
    },
    Corrupt {
        base: &CSR.0,
        ..corrupt(
            "CSR row pointers for 5 rows",
            &[(20, 5)],
            93,
            DescriptorErrorKind::BufferSizeMismatch {
                index: 2,
                expected: 48,
                byte_size: 40,
            },
        )
    },
    Corrupt {
        base: &CSR.0,
        ..corrupt(
            "CSR reserved field",
            &[(52, 1)],
            52,
            DescriptorErrorKind::ReservedNonZero {
                field: FieldName::CompressedReserved,
            },
        )
    },
    Corrupt {
        base: &CSR.0,
        ..corrupt(
            "CSR byte offset",
            &[(36, 8)],
            36,
            DescriptorErrorKind::ByteOffsetNotZero(8),
        )
    },
    Corrupt {
        base: &CSR.0,
        ..corrupt(
            "CSR buffer on another device",
            &[(105, 0x01)],
            93,
            DescriptorErrorKind::NotColocated { index: 2 },
        )
    },
    Corrupt {
        base: &STRIDED.0,
        ..corrupt(
            "stride past the buffer",
            &[(52, 17)],
            61,
            DescriptorErrorKind::ExtentOutOfBounds {
                start: 64,
                end: 334,
                byte_size: 320,
            },
        )
    },
];

/// One descriptor of the byte stream: a valid one (index in [`VALID`]) or a
/// corrupted one (index in [`CORRUPT`]) whose header still frames it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Must decode to `VALID[i]`.
    Valid(usize),
    /// Must be rejected with `CORRUPT[i].expect`, and the stream go on.
    Rejected(usize),
}

/// The stream, in order: valid descriptors with two well-framed corrupted
/// ones among them (a handle error and a buffer too small for the shape).
pub static STREAM: [Frame; 6] = [
    Frame::Valid(DENSE_RANK4_INDEX),
    Frame::Valid(CSR_INDEX),
    Frame::Rejected(SYNC_MODE),
    Frame::Valid(2),
    Frame::Rejected(SHAPE_BEYOND),
    Frame::Valid(DENSE_RANK4_INDEX),
];
