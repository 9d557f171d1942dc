//! Everything in the harness that depends on the descriptor wire format.
//!
//! The rest of the program (stream reassembly, stack painting, instruction
//! counting, reporting) only calls what this module exports, so switching the
//! harness to another wire format is an edit of this file alone:
//!
//! * [`View`], [`DecodeError`] — the decoder's output types;
//! * [`decode`] — the decode+validate entry point that is measured, and
//!   [`log_decoded`], which logs what a view holds;
//! * [`frame`], [`more_needed`], [`declared_len`] — the three facts the
//!   stream reassembler needs (which bytes a decoded frame occupies, whether
//!   an error only means "more bytes to come", how long a rejected frame says
//!   it is), and [`with_declared_len`], which forges a frame's length;
//! * [`VALID`] — descriptors held in flash, with what each must decode to;
//! * [`build_dense_rank4`] and [`builder_overflow`] — the heapless builder;
//! * [`CORRUPT`] — corrupted inputs with the exact typed error each must get;
//! * [`STREAM`] — which descriptors, valid and rejected, make up the byte
//!   stream, in order.
//!
//! Format today: the private `"HRAY"` descriptor of `hurray-core` 0.1 (a
//! 40-byte header, the shape, optional strides, the 16-byte buffer table).
//! That format has no sparse layout: [`CSR_PLACEHOLDER`] is the closest
//! thing it can express (three buffers, explicit strides) and MUST be
//! replaced by a real CSR descriptor when the core speaks the hurray format.

use hurray_core::{
    BufferHandle, DType, DescriptorBuilder, DeviceTag, EntryError, Error, Region, SyncMode,
    TensorView,
};

/// Capacity of the stream reassembly buffer, in bytes (the largest frame).
pub const MAX_FRAME: usize = 256;

/// A decoded, validated descriptor.
pub type View<'a> = TensorView<'a>;
/// Why a descriptor was rejected.
pub type DecodeError = Error;

/// Decodes and validates one descriptor: the path whose stack, size and
/// instructions are measured.
///
/// # Errors
/// The core's typed error for the first rule the bytes break.
#[inline(never)]
pub fn decode(bytes: &[u8]) -> Result<View<'_>, DecodeError> {
    TensorView::parse(bytes)
}

/// Logs what a decoded descriptor holds.
pub fn log_decoded(name: &str, view: &View<'_>) {
    defmt::info!(
        "decoded {}: {} elements of {}, shape rank {}, {} buffers, data buffer {} B",
        name,
        view.element_count(),
        view.dtype(),
        view.ndim(),
        view.buffers().len(),
        view.data_buffer().byte_size()
    );
}

/// The bytes of the stream that a decoded descriptor occupies.
#[must_use]
pub fn frame<'a>(view: &View<'a>) -> &'a [u8] {
    view.as_bytes()
}

/// A copy of `bytes` in `out` whose header declares `claimed` bytes instead
/// of its real length (for a frame too large for the reassembly buffer).
#[must_use]
pub fn with_declared_len<'o>(bytes: &[u8], claimed: u32, out: &'o mut [u8; MAX_FRAME]) -> &'o [u8] {
    let n = bytes.len().min(MAX_FRAME);
    let (head, _) = out.split_at_mut(n);
    head.copy_from_slice(bytes.get(..n).unwrap_or(&[]));
    // `total_len`: bytes 36..40 of the HRAY header.
    if let Some(total) = head.get_mut(36..40) {
        total.copy_from_slice(&claimed.to_le_bytes());
    }
    head
}

/// If `error` only says that the input ends too early, the length the
/// descriptor needs; `None` for any other fault.
#[must_use]
pub fn more_needed(error: &DecodeError) -> Option<u64> {
    match *error {
        Error::Truncated { needed, .. } => Some(needed),
        _ => None,
    }
}

/// The length a rejected descriptor declares for itself, when its header is
/// intact enough to trust it (magic and version right, length at least a
/// header): the reassembler skips that many bytes and stays in step.
#[must_use]
pub fn declared_len(bytes: &[u8]) -> Option<usize> {
    let header = bytes.first_chunk::<HEADER>()?;
    let (magic, rest) = header.split_first_chunk::<4>()?;
    if *magic != hurray_core::DESCRIPTOR_MAGIC || rest.first() != Some(&1) {
        return None;
    }
    let total = header.last_chunk::<4>().map(|b| u32::from_le_bytes(*b))?;
    usize::try_from(total).ok().filter(|&n| n >= HEADER)
}

const HEADER: usize = hurray_core::HEADER_LEN;

/// What a valid descriptor must decode to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect {
    /// Number of dimensions.
    pub ndim: usize,
    /// Product of the shape.
    pub elements: u64,
    /// Entries in the buffer table.
    pub buffers: usize,
    /// `byte_size` of the buffer that holds the elements.
    pub data_size: u64,
    /// Whether explicit strides are present.
    pub strided: bool,
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
    view.ndim() == expect.ndim
        && view.element_count() == expect.elements
        && view.buffers().len() == expect.buffers
        && view.data_buffer().byte_size() == expect.data_size
        && view.strides().is_some() == expect.strided
}

/// Eight-byte alignment for descriptors in flash (the format's regions are
/// 8-byte aligned; the decoder itself accepts any alignment).
#[repr(C, align(8))]
pub struct Aligned<const N: usize>(pub [u8; N]);

/// A rank-4 dense (compact row-major), read-only f32 tensor of shape
/// 2 × 3 × 4 × 5 in one 480-byte CPU buffer. 88 bytes.
pub static DENSE_RANK4: Aligned<88> = Aligned([
    b'H', b'R', b'A', b'Y', 1, 0, 0x01, 0x00, // magic, v1.0, flags READ_ONLY
    0x0C, 4, 1, 0, 0, 0, 0, 0, // dtype f32, ndim 4, 1 buffer, data 0, reserved
    0, 0, 0, 0, 0, 0, 0, 0, // byte_offset 0
    40, 0, 0, 0, 0, 0, 0, 0, // shape at 40, no strides
    72, 0, 0, 0, 88, 0, 0, 0, // table at 72, total 88
    2, 0, 0, 0, 0, 0, 0, 0, // shape[0]
    3, 0, 0, 0, 0, 0, 0, 0, // shape[1]
    4, 0, 0, 0, 0, 0, 0, 0, // shape[2]
    5, 0, 0, 0, 0, 0, 0, 0, // shape[3]
    0xE0, 0x01, 0, 0, 0, 0, 0, 0, // buffer 0: 480 bytes
    64, 0, 0, 0, 1, 0, 0, 0, // align 64, CPU, producer-synced, standard, 0
]);

/// PLACEHOLDER for a CSR descriptor — switch to the hurray format's CSR
/// layout. The HRAY format has no sparse layout; the closest it can say is a
/// 4 × 6 CSR matrix's three buffers (row pointers: 5 × i32, column indices:
/// 8 × i32, values: 8 × f32) with the 8 values, strided, as the data buffer.
/// 104 bytes.
pub static CSR_PLACEHOLDER: Aligned<104> = Aligned([
    b'H', b'R', b'A', b'Y', 1, 0, 0x00, 0x00, // magic, v1.0, no flags
    0x0C, 1, 3, 0, 2, 0, 0, 0, // dtype f32, ndim 1, 3 buffers, data 2, reserved
    0, 0, 0, 0, 0, 0, 0, 0, // byte_offset 0
    40, 0, 0, 0, 48, 0, 0, 0, // shape at 40, strides at 48
    56, 0, 0, 0, 104, 0, 0, 0, // table at 56, total 104
    8, 0, 0, 0, 0, 0, 0, 0, // shape[0]: 8 stored values
    1, 0, 0, 0, 0, 0, 0, 0, // strides[0]: 1 element
    20, 0, 0, 0, 0, 0, 0, 0, // buffer 0 (row pointers): 20 bytes
    64, 0, 0, 0, 1, 0, 0, 0, // align 64, CPU, producer-synced
    32, 0, 0, 0, 0, 0, 0, 0, // buffer 1 (column indices): 32 bytes
    64, 0, 0, 0, 1, 0, 0, 0, // align 64, CPU, producer-synced
    32, 0, 0, 0, 0, 0, 0, 0, // buffer 2 (values): 32 bytes
    64, 0, 0, 0, 1, 0, 0, 0, // align 64, CPU, producer-synced
]);

/// A 16 × 8 f16 transposed view (strides 1, 16) of a CUDA buffer in pinned
/// host memory, event-synced, starting 64 bytes in. 104 bytes.
pub static STRIDED: Aligned<104> = Aligned([
    b'H', b'R', b'A', b'Y', 1, 0, 0x00, 0x00, // magic, v1.0, no flags
    0x0A, 2, 2, 0, 1, 0, 0, 0, // dtype f16, ndim 2, 2 buffers, data 1, reserved
    64, 0, 0, 0, 0, 0, 0, 0, // byte_offset 64
    40, 0, 0, 0, 56, 0, 0, 0, // shape at 40, strides at 56
    72, 0, 0, 0, 104, 0, 0, 0, // table at 72, total 104
    16, 0, 0, 0, 0, 0, 0, 0, // shape[0]
    8, 0, 0, 0, 0, 0, 0, 0, // shape[1]
    1, 0, 0, 0, 0, 0, 0, 0, // strides[0]
    16, 0, 0, 0, 0, 0, 0, 0, // strides[1]
    0, 0, 0, 0, 0, 0, 0, 0, // buffer 0 (empty auxiliary): 0 bytes
    1, 0, 0, 0, 1, 0, 0, 0, // align 1, CPU, producer-synced
    0x40, 0x01, 0, 0, 0, 0, 0, 0, // buffer 1: 320 bytes
    0, 0x10, 0, 0, 2, 1, 1, 0, // align 4096, CUDA, event, host-pinned
]);

/// Index in [`VALID`] of the rank-4 dense descriptor.
pub const DENSE_RANK4_INDEX: usize = 0;
/// Index in [`VALID`] of the CSR descriptor (a placeholder today).
pub const CSR_INDEX: usize = 1;
/// How the summary line names the CSR descriptor.
pub const CSR_LABEL: &str = "CSR (placeholder)";

/// Every valid descriptor held in flash.
pub static VALID: [Valid; 3] = [
    Valid {
        name: "dense rank-4 f32",
        bytes: &DENSE_RANK4.0,
        expect: Expect {
            ndim: 4,
            elements: 120,
            buffers: 1,
            data_size: 480,
            strided: false,
        },
    },
    Valid {
        name: "CSR 4x6 nnz 8 (PLACEHOLDER: strided values + 3 buffers)",
        bytes: &CSR_PLACEHOLDER.0,
        expect: Expect {
            ndim: 1,
            elements: 8,
            buffers: 3,
            data_size: 32,
            strided: true,
        },
    },
    Valid {
        name: "strided f16 transpose",
        bytes: &STRIDED.0,
        expect: Expect {
            ndim: 2,
            elements: 128,
            buffers: 2,
            data_size: 320,
            strided: true,
        },
    },
];

/// Builds [`DENSE_RANK4`] with the core's heapless builder.
///
/// # Errors
/// Any error of the builder (none is expected).
pub fn build_dense_rank4() -> Result<heapless::Vec<u8, MAX_FRAME>, DecodeError> {
    let mut b = DescriptorBuilder::<4, 1>::new(DType::F32);
    b.push_dim(2)?.push_dim(3)?.push_dim(4)?.push_dim(5)?;
    b.push_buffer(BufferHandle::new(
        480,
        64,
        DeviceTag::Cpu,
        SyncMode::ProducerSynced,
    )?)?;
    b.set_read_only(true);
    b.to_vec()
}

/// A fifth dimension pushed onto a builder with room for four: the builder's
/// result, and the error it must be.
pub fn builder_overflow() -> (Result<(), DecodeError>, DecodeError) {
    let mut b = DescriptorBuilder::<4, 1>::new(DType::F32);
    let got = (|| {
        b.push_dim(1)?.push_dim(1)?.push_dim(1)?.push_dim(1)?;
        b.push_dim(1).map(|_| ())
    })();
    let expected = Error::BufferTooSmall {
        needed: 5,
        available: 4,
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
    /// The exact error.
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

const fn corrupt(name: &'static str, patch: &'static [(usize, u8)], expect: Error) -> Corrupt {
    Corrupt {
        name,
        base: &DENSE_RANK4.0,
        patch,
        keep: None,
        expect,
    }
}

/// Corrupted descriptors; each must be rejected with exactly its error.
pub static CORRUPT: [Corrupt; 19] = [
    corrupt("bad magic", &[(3, b'X')], Error::BadMagic(*b"HRAX")),
    corrupt(
        "major version 2",
        &[(4, 2)],
        Error::UnsupportedVersion { major: 2, minor: 0 },
    ),
    corrupt(
        "unknown required flag",
        &[(6, 0x03)],
        Error::UnknownFlags(0x0002),
    ),
    corrupt("dtype 0x7f", &[(8, 0x7F)], Error::InvalidDType(0x7F)),
    corrupt(
        "33 dimensions",
        &[(9, 33)],
        Error::TooManyDims { ndim: 33, max: 32 },
    ),
    corrupt(
        "data buffer past the table",
        &[(12, 1)],
        Error::DataBufferOutOfRange { index: 1, count: 1 },
    ),
    corrupt(
        "header reserved field",
        &[(14, 1)],
        Error::HeaderReservedNonZero(1),
    ),
    Corrupt {
        keep: Some(87),
        ..corrupt(
            "one byte short",
            &[],
            Error::Truncated {
                needed: 88,
                available: 87,
            },
        )
    },
    corrupt(
        "total length inside the header",
        &[(36, 39)],
        Error::Truncated {
            needed: 40,
            available: 39,
        },
    ),
    corrupt(
        "misaligned shape",
        &[(24, 41)],
        Error::MisalignedRegion {
            region: Region::Shape,
            offset: 41,
        },
    ),
    corrupt(
        "table past the end",
        &[(32, 80)],
        Error::RegionOutOfBounds {
            region: Region::Table,
            offset: 80,
            len: 16,
            total_len: 88,
        },
    ),
    corrupt(
        "table over the shape",
        &[(32, 64)],
        Error::RegionsOverlap {
            first: Region::Shape,
            second: Region::Table,
        },
    ),
    corrupt(
        "dimension above i64::MAX",
        &[(47, 0x80)],
        Error::DimTooLarge {
            axis: 0,
            size: (1 << 63) | 2,
        },
    ),
    corrupt(
        "shape product overflows",
        &[(44, 1), (52, 1)],
        Error::ShapeOverflow,
    ),
    corrupt(
        "misaligned byte offset",
        &[(16, 2)],
        Error::MisalignedByteOffset {
            byte_offset: 2,
            element_size: 4,
        },
    ),
    corrupt(
        "shape beyond the buffer",
        &[(64, 6)],
        Error::ExtentOutOfBounds {
            start: 0,
            end: 576,
            byte_size: 480,
        },
    ),
    corrupt(
        "unknown sync mode",
        &[(85, 0x07)],
        Error::InvalidEntry {
            index: 0,
            error: EntryError::InvalidSyncMode(0x07),
        },
    ),
    corrupt(
        "alignment 3",
        &[(80, 3)],
        Error::InvalidEntry {
            index: 0,
            error: EntryError::AlignmentNotPowerOfTwo { alignment: 3 },
        },
    ),
    Corrupt {
        base: &CSR_PLACEHOLDER.0,
        ..corrupt(
            "stride i64::MIN",
            &[(48, 0), (55, 0x80)],
            Error::StrideTooLarge {
                axis: 0,
                stride: i64::MIN,
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
/// ones among them (an entry error and an extent error).
pub static STREAM: [Frame; 6] = [
    Frame::Valid(0),
    Frame::Valid(1),
    Frame::Rejected(16),
    Frame::Valid(2),
    Frame::Rejected(15),
    Frame::Valid(0),
];
