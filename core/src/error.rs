//! The error types of the core crate, one per failure domain:
//!
//! * [`Error`] — a single buffer handle is invalid (the seed's error: every
//!   [`BufferHandle`](crate::BufferHandle) constructor and decoder returns it);
//! * [`DescriptorError`] — a tensor descriptor or buffer table is invalid: a
//!   [`DescriptorErrorKind`] plus the byte offset, inside the descriptor, of
//!   the field at fault. A bad buffer handle is nested in it
//!   ([`DescriptorErrorKind::Buffer`]) rather than copied;
//! * [`EncodeError`] — an encoder or builder was given an output or input it
//!   cannot use.
//!
//! Every type is `Copy`, carries the raw value that was wrong and, where
//! there is one, what was expected. `Display` writes literal text through
//! `write!` and never allocates.

use crate::Flags;
use crate::codes::{DeviceTag, MemoryClass};

/// Declares an error enum and its `Display` from one list: each variant with
/// its doc, its fields and, after `=>`, its message (`write!`'s format
/// string and arguments, which may name the fields). A tuple variant names
/// its fields for the message: `InvalidTypeTag(c: u8) => "… {c:#04x} …"`.
/// The enum derives what every error here derives (`Copy`, `defmt::Format`);
/// a generic one (`WriteError<E>`) prints its parameter through `Debug`.
macro_rules! error_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident $(<$g:ident>)? {
            $(
                $(#[$vmeta:meta])*
                $variant:ident
                $({ $($(#[$fmeta:meta])* $field:ident: $fty:ty,)* })?
                $(( $($bind:ident: $tty:ty),* ))?
                => $fmt:literal $(, $arg:expr)*;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub enum $name $(<$g>)? {
            $(
                $(#[$vmeta])*
                $variant $({ $($(#[$fmeta])* $field: $fty,)* })? $(($($tty),*))?,
            )*
        }

        impl $(<$g: core::fmt::Debug>)? core::fmt::Display for $name $(<$g>)? {
            #[allow(unused_variables)]
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    $(Self::$variant $({ $($field,)* })? $(($($bind),*))? => {
                        write!(f, $fmt $(, $arg)*)
                    })*
                }
            }
        }
    };
}
pub(crate) use error_enum;

/// `core::result::Result` specialised to [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

error_enum! {
    /// Why a buffer handle is invalid.
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, Error, SyncMode};
    ///
    /// let err = BufferHandle::new(512, 3, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap_err();
    /// assert_eq!(err, Error::AlignmentNotPowerOfTwo { alignment: 3 });
    /// // Display never allocates; on a host it reads like this:
    /// assert_eq!(format!("{err}"), "alignment 3 is not a power of two");
    /// ```
    #[non_exhaustive]
    pub enum Error {
        /// The alignment is zero or not a power of two.
        AlignmentNotPowerOfTwo {
            /// The alignment found.
            alignment: u32,
        } => "alignment {alignment} is not a power of two";
        /// A non-empty buffer declares an alignment below the minimum.
        AlignmentBelowMinimum {
            /// The alignment found.
            alignment: u32,
            /// The minimum for a non-empty buffer
            /// ([`MIN_BUFFER_ALIGNMENT`](crate::MIN_BUFFER_ALIGNMENT)).
            minimum: u32,
        } => "alignment {alignment} is below the minimum {minimum} for a non-empty buffer";
        /// The sync-mode byte is not a known code, or the mode is not allowed
        /// for the device (a CPU buffer must be `ProducerSynced`).
        InvalidSyncMode(c: u8) => "sync mode {c:#04x} is unknown or not allowed for this device";
        /// The device-tag byte is reserved (`0x09`–`0xEF`) or invalid (`0xFF`).
        InvalidDeviceTag(c: u8) => "device tag {c:#04x} is reserved or invalid";
        /// The memory-class byte is reserved (`0x04`–`0xEF`) or invalid (`0xFF`).
        InvalidMemoryClass(c: u8) => "memory class {c:#04x} is reserved or invalid";
        /// The memory class is not valid on this device
        /// (`docs/spec/buffer-protocol.md` § Per-Device Validity).
        MemoryClassNotAllowed {
            /// The device.
            device_tag: DeviceTag,
            /// The class it does not allow.
            memory_class: MemoryClass,
        } => "memory class {} ({:#04x}) is not valid on device {} ({:#04x})",
            memory_class.name(),
            memory_class.code(),
            device_tag.name(),
            device_tag.code();
        /// The reserved byte (offset 15) is not zero.
        ReservedNonZero(c: u8) => "reserved byte is {c:#04x}, must be zero";
    }
}

impl core::error::Error for Error {}

/// Declares an error that is a kind at a byte offset — the struct, `new`,
/// `kind`, `offset`, `Display` (`at byte {offset}{where}: {kind}`) and
/// `Error`, whose `source` is the error the listed kinds nest — so the
/// three error types of that shape are written once.
macro_rules! located_error {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($offset:ty, $kind:ty), $where:literal;
        $(#[$new_doc:meta])* new;
        $(#[$offset_doc:meta])* offset;
        source $($nested:pat => $source:expr),*;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub struct $name {
            offset: $offset,
            kind: $kind,
        }

        impl $name {
            $(#[$new_doc])*
            #[must_use]
            #[inline]
            pub const fn new(offset: $offset, kind: $kind) -> Self {
                Self { offset, kind }
            }

            /// What was wrong.
            #[must_use]
            #[inline]
            pub const fn kind(&self) -> $kind {
                self.kind
            }

            $(#[$offset_doc])*
            #[must_use]
            #[inline]
            pub const fn offset(&self) -> $offset {
                self.offset
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, concat!("at byte {}", $where, ": {}"), self.offset, self.kind)
            }
        }

        impl core::error::Error for $name {
            fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
                match &self.kind {
                    $($nested => Some($source),)*
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use located_error;

located_error! {
    /// A tensor descriptor or buffer table was rejected: what was wrong
    /// ([`kind`](Self::kind)) and the byte offset of the field at fault
    /// ([`offset`](Self::offset)), counted from the first byte of the descriptor
    /// (or of the table, for [`BufferTable::parse`](crate::BufferTable::parse)).
    ///
    /// ```
    /// use hurray_core::{DescriptorErrorKind, TensorView};
    ///
    /// let err = TensorView::parse(b"HRAY\x01\x00").unwrap_err();
    /// assert_eq!(err.offset(), 0);
    /// assert_eq!(err.kind(), DescriptorErrorKind::Truncated { needed: 20, available: 6 });
    /// assert_eq!(err.to_string(), "at byte 0: truncated: 20 bytes needed, 6 available");
    /// ```
    pub struct DescriptorError(u32, DescriptorErrorKind), "";
    /// An error of `kind` at byte `offset`.
    new;
    /// The byte offset of the field at fault.
    offset;
    source DescriptorErrorKind::Buffer { error, .. } => error;
}

/// Declares a `u8` enum of names the spec uses, one variant per name, with
/// `name` and a `Display` that writes it. An error carries the variant, not
/// the text, so a program that never prints an error keeps no text
/// (and `defmt` prints the variant from the host's copy).
macro_rules! names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident, $doc:literal { $($variant:ident = $text:literal,)* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[non_exhaustive]
        #[repr(u8)]
        pub enum $name {
            $(#[doc = concat!("`", $text, "`", $doc)] $variant,)*
        }

        impl $name {
            /// Every name, in declaration order.
            pub const ALL: &[Self] = &[$(Self::$variant),*];

            /// The name as the spec writes it.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names! {
    /// A descriptor field (or a rule over several, such as `value_range`)
    /// that a [`DescriptorErrorKind`] names; [`name`](Self::name) is the
    /// spec's spelling.
    ///
    /// ```
    /// use hurray_core::{DescriptorErrorKind, FieldName};
    ///
    /// let kind = DescriptorErrorKind::InvalidValue { field: FieldName::KvRole, value: 9 };
    /// assert_eq!(kind.to_string(), "kv_role = 9 is not a valid value");
    /// assert_eq!(FieldName::KvRole.name(), "kv_role");
    /// ```
    pub enum FieldName, ", a field of the descriptor." {
        MortonBits = "morton_bits", HilbertOrder = "hilbert_order", HilbertRank = "hilbert_rank",
        IsSorted = "is_sorted", Nnz = "nnz",
        CooReserved = "coo._reserved", CompressedReserved = "compressed._reserved",
        CsfReserved = "csf._reserved",
        TileShape = "tile_shape", OuterLayout = "outer_layout", InnerLayout = "inner_layout",
        TiledReserved = "tiled._reserved",
        PageSize = "page_size", PagedAxis = "paged_axis", KvRole = "kv_role",
        BlockTableIndexType = "block_table_index_type", BlockPagedReserved = "block_paged._reserved",
        CompositionRule = "composition_rule", CombineOp = "combine_op",
        MemberCount = "member_count", CompositeReserved = "composite._reserved",
        Shape = "shape", ParentShape = "parent_shape", ShardOffset = "shard_offset",
        QuantizationLength = "quantization_length", SchemeTag = "scheme_tag",
        SchemeVersion = "scheme_version", ScaleTypeTag = "scale_type_tag",
        ZeroPointBufferIndex = "zero_point_buffer_index", Axis = "axis",
        BlockSize = "block_size", Scale = "scale", ZeroPoint = "zero_point",
        PerTensorReserved = "per_tensor._reserved", PerChannelReserved = "per_channel._reserved",
        PerBlockReserved = "per_block._reserved", QuantizationPadding = "quantization padding",
        SparsityRatio = "sparsity_ratio", ValueRange = "value_range",
        ValueStddev = "value_stddev", NmN = "nm_n", HasNan = "has_nan", HasInf = "has_inf",
        StatisticsReserved = "statistics._reserved",
        StatisticsReserved2 = "statistics._reserved2",
        MemberRole = "member_role", CompositeMemberReserved = "composite_member._reserved",
        BitWidth = "bit_width", PackingFactor = "packing_factor", IsFloat = "is_float",
        IsSigned = "is_signed", SignBits = "sign_bits", ExponentBits = "exponent_bits",
        MantissaBits = "mantissa_bits", ExponentBias = "exponent_bias",
        ExtensionTypeReserved = "extension_type._reserved",
    }
}

names! {
    /// A size computed from a descriptor's fields: what a
    /// [`DescriptorErrorKind::Overflow`] says overflowed.
    pub enum Quantity, ", a size computed from the fields." {
        ElementCount = "element count", BufferSize = "buffer size",
        BufferExtent = "buffer extent", StrideExtent = "stride extent", TileGrid = "tile grid",
        MortonCurveSize = "Morton curve size", CooIndexCount = "COO index count",
        PointerCount = "pointer count", CsfPointerCount = "CSF pointer count",
        PagePoolSize = "page pool size", ParameterCount = "quantization parameter count",
        DescriptorLength = "descriptor_length",
    }
}

impl DescriptorError {
    /// [`DescriptorErrorKind::InvalidValue`]: `field` holds `value`.
    #[inline]
    pub(crate) const fn invalid(offset: u32, field: FieldName, value: u64) -> Self {
        Self::new(offset, DescriptorErrorKind::InvalidValue { field, value })
    }

    /// [`DescriptorErrorKind::ReservedNonZero`]: reserved `field` is not zero.
    #[inline]
    pub(crate) const fn reserved(offset: u32, field: FieldName) -> Self {
        Self::new(offset, DescriptorErrorKind::ReservedNonZero { field })
    }
}

error_enum! {
    /// What is wrong with a tensor descriptor.
    ///
    /// Variants that name a field, a section or a computed size hold a code
    /// ([`FieldName`], [`Flags`], [`Quantity`]) that displays as the spec
    /// writes it (`kv_role`, `shard`, `element count`).
    #[non_exhaustive]
    // A word-wide tag on 32-bit targets: with the default byte tag a
    // `Result<T, DescriptorError>` shares byte 0 with it, so every `?`
    // between results of different `T` moved bytes 1..40 unaligned through
    // `memcpy` (ADR-133: −428 B of M4 flash). On x86-64, where unaligned
    // moves cost nothing, the byte tag decodes in up to 5 instructions fewer.
    #[cfg_attr(target_pointer_width = "32", repr(u32))]
    pub enum DescriptorErrorKind {
        // --- framing ------------------------------------------------------------
        /// The input, or the declared `descriptor_length`, ends before a field
        /// the descriptor must contain.
        Truncated {
            /// Bytes needed from the start of the descriptor.
            needed: u64,
            /// Bytes available.
            available: u64,
        } => "truncated: {needed} bytes needed, {available} available";
        /// The first four bytes are not `"HRRY"`.
        BadMagic(m: [u8; 4]) => "bad magic {m:02x?}, expected \"HRRY\"";
        /// The major version is not 1.
        UnsupportedVersion {
            /// Major version found.
            major: u8,
            /// Minor version found.
            minor: u8,
        } => "unsupported descriptor version {major}.{minor}";
        /// `descriptor_length` does not equal the bytes the descriptor's fields
        /// occupy (for a 1.0 descriptor), or is smaller than them.
        LengthMismatch {
            /// The declared `descriptor_length`.
            declared: u32,
            /// Bytes the fields occupy.
            consumed: u32,
        } => "descriptor_length is {declared} but the fields occupy {consumed} bytes";
        /// The input holds bytes after the descriptor (`TensorView::parse`
        /// wants exactly one descriptor; use `parse_prefix` for a stream).
        TrailingBytes {
            /// The declared `descriptor_length`.
            declared: u32,
            /// Bytes in the input.
            available: u64,
        } => "{available} bytes given for a descriptor of {declared} bytes";
        /// A reserved flag bit is set.
        ReservedFlags(bits: u32) => "reserved flag bits {bits:#010x} are set";

        // --- codes ----------------------------------------------------------------
        /// The `type_tag` is reserved, unassigned or invalid.
        InvalidTypeTag(c: u8) => "type tag {c:#04x} is reserved or invalid";
        /// The `layout_tag` is reserved, unassigned or invalid.
        InvalidLayoutTag(c: u8) => "layout tag {c:#04x} is reserved or invalid";
        /// An enumerated field holds a value the spec does not define.
        InvalidValue {
            /// The field.
            field: FieldName,
            /// The value found.
            value: u64,
        } => "{field} = {value} is not a valid value";
        /// A reserved field or byte is not zero.
        ReservedNonZero {
            /// The field.
            field: FieldName,
        } => "reserved field {field} is not zero";

        // --- shape and layout -----------------------------------------------------
        /// `rank` exceeds 64.
        RankTooLarge(r: u32) => "rank {r} exceeds 64";
        /// The layout is not allowed at this rank (rank 0 is row-major only;
        /// CSR and CSC need rank 2, CSF rank ≥ 3, block-paged rank 3; a Hilbert
        /// rank mismatch is an `InvalidValue` of `hilbert_rank`).
        RankNotAllowed {
            /// The layout tag.
            layout_tag: u8,
            /// The rank.
            rank: u32,
        } => "layout {layout_tag:#04x} is not allowed at rank {rank}";
        /// A dimension is the dynamic sentinel where a concrete size is required
        /// (a shard, a quantization axis).
        DynamicDimension {
            /// The field holding it.
            field: FieldName,
            /// The axis.
            axis: u32,
        } => "{field}[{axis}] is dynamic where a size is required";
        /// Nested tiled levels exceed the limit of 8.
        TilingTooDeep => "tiled layout nests more than 8 levels";
        /// What lies inside a tile (strided inner layout or a nested tile grid)
        /// reaches outside the tile of this level.
        TileOverrun {
            /// The level (0 = outermost).
            level: u8,
        } => "the inside of a level-{level} tile reaches outside it";
        /// A size computation overflows `u64` (shape product, extent, curve size).
        Overflow {
            /// What was being computed.
            what: Quantity,
        } => "{what} overflows";
        /// `mode_order` of a CSF descriptor is not a permutation of `0..rank`.
        NotAPermutation {
            /// The first repeated or out-of-range value.
            value: u32,
        } => "mode_order is not a permutation (value {value})";
        /// A Morton or Hilbert dimension does not fit the curve.
        ShapeDoesNotFitCurve {
            /// The axis.
            axis: u32,
            /// Its size.
            size: u64,
        } => "shape[{axis}] = {size} does not fit the curve";
        /// An extension layout id this reader was not told about.
        UnknownExtensionLayout(id: u64) => "extension layout id {id:#x} is not recognised";

        // --- buffers ----------------------------------------------------------------
        /// A standalone buffer table's length is not a multiple of 16.
        TableLength {
            /// The length in bytes.
            len: u64,
        } => "buffer table length {len} is not a multiple of 16";
        /// A buffer handle is invalid.
        Buffer {
            /// The index of the buffer in the table.
            index: u32,
            /// What is wrong with it.
            error: Error,
        } => "buffer {index}: {error}";
        /// A buffer's device tag or memory class differs from buffer 0's
        /// (device colocation).
        NotColocated {
            /// The index of the buffer.
            index: u32,
        } => "buffer {index} differs from buffer 0 in device tag or memory class";
        /// The buffer count is not what the layout and quantization scheme need.
        BufferCount {
            /// Buffers required.
            expected: u32,
            /// Buffers declared.
            found: u8,
        } => "{found} buffers declared, {expected} required";
        /// A buffer is smaller than the elements the descriptor addresses in it.
        BufferTooSmall {
            /// The buffer.
            index: u32,
            /// Bytes needed.
            needed: u64,
            /// Its `byte_size`.
            byte_size: u64,
        } => "buffer {index} holds {byte_size} bytes, {needed} are addressed";
        /// A buffer that holds an array of a fixed length has another size.
        BufferSizeMismatch {
            /// The buffer.
            index: u32,
            /// Bytes expected.
            expected: u64,
            /// Its `byte_size`.
            byte_size: u64,
        } => "buffer {index} holds {byte_size} bytes, must hold exactly {expected}";
        /// Strides reach bytes outside the data buffer.
        ExtentOutOfBounds {
            /// Lowest byte addressed, relative to the buffer start (negative:
            /// before it).
            start: i64,
            /// One past the highest byte addressed.
            end: i64,
            /// The data buffer's `byte_size`.
            byte_size: u64,
        } => "tensor spans bytes [{start}, {end}) but the data buffer holds {byte_size}";
        /// `byte_offset` lies past the end of buffer 0.
        ByteOffsetOutOfRange {
            /// The offset.
            byte_offset: u64,
            /// Buffer 0's `byte_size`.
            byte_size: u64,
        } => "byte_offset {byte_offset} is past the end of buffer 0 ({byte_size} bytes)";
        /// `byte_offset` is not a multiple of the element type's natural
        /// alignment (stricter than the format's reference reader).
        ByteOffsetMisaligned {
            /// The offset.
            byte_offset: u64,
            /// The element alignment.
            alignment: u32,
        } => "byte_offset {byte_offset} is not a multiple of the element alignment {alignment}";
        /// `byte_offset` must be 0 for this layout (sparse, indirect, composite).
        ByteOffsetNotZero(o: u64) => "byte_offset is {o}, must be 0 for this layout";

        // --- sections ---------------------------------------------------------------
        /// The extension type section is present without a private type tag, or
        /// missing with one.
        ExtensionTypeMismatch {
            /// The type tag.
            type_tag: u8,
            /// Whether the section is present.
            present: bool,
        } => "{}{type_tag:#04x}{}",
            if *present {
                "extension type section present for built-in type "
            } else {
                "private type "
            },
            if *present { "" } else { " needs an extension type section" };
        /// A section or flag is not allowed on this descriptor (a shard on CSF or
        /// block-paged, quantization or a member section on a composite head).
        SectionNotAllowed {
            /// The section's flag.
            section: Flags,
            /// The layout tag.
            layout_tag: u8,
        } => "{} section is not allowed with layout {layout_tag:#04x}", section_name(*section);
        /// A shard box leaves its parent: `shard_offset + shape > parent_shape`.
        ShardOutOfBounds {
            /// The axis.
            axis: u32,
        } => "shard_offset[{axis}] + shape[{axis}] exceeds parent_shape[{axis}]";
        /// A quantization scheme does not accept the tensor's storage type.
        StorageTypeNotAllowed {
            /// The scheme tag.
            scheme: u8,
            /// The storage type tag.
            type_tag: u8,
        } => "quantization scheme {scheme:#04x} does not accept storage type {type_tag:#04x}";
        /// A quantization `axis` is not below the rank.
        AxisOutOfRange {
            /// The axis.
            axis: u32,
            /// The rank.
            rank: u32,
        } => "quantization axis {axis} is not below rank {rank}";
        /// A quantization parameter buffer index is out of range or is one of
        /// the layout's own buffers.
        ParameterBufferIndex {
            /// The index found.
            index: u32,
            /// The first index parameter buffers may use.
            first: u32,
            /// The buffer count.
            count: u8,
        } => "parameter buffer index {index} is outside [{first}, {count})";
        /// An inline quantization parameter is out of its range (scale not
        /// finite or zero, zero point outside the storage type).
        ParameterOutOfRange {
            /// The field.
            field: FieldName,
        } => "{field} is out of range";
        /// A statistics value contradicts the descriptor or the spec's range.
        StatisticsInconsistent {
            /// The field.
            field: FieldName,
        } => "statistics field {field} is inconsistent";
        /// A quantization scheme or composition rule in the private range that
        /// this reader has no agreement for.
        PrivateCodeRefused {
            /// The field.
            field: FieldName,
            /// The code.
            code: u8,
        } => "{field} {code:#04x} is implementation-private and not agreed with this reader";
    }
}

/// The name of the section whose flag is `flag`.
const fn section_name(flag: Flags) -> &'static str {
    match flag {
        Flags::HAS_QUANTIZATION => "quantization",
        Flags::HAS_SHARD => "shard",
        Flags::HAS_EXTENSION_TYPE => "extension type",
        Flags::HAS_STATISTICS => "statistics",
        Flags::HAS_COMPOSITE_MEMBER => "composite member",
        _ => "unknown",
    }
}

error_enum! {
    /// Why an encoder or builder could not produce a descriptor.
    ///
    /// ```
    /// use hurray_core::{BufferHandle, DeviceTag, ElementType, EncodeError, TensorDescriptor};
    ///
    /// let buffers = [BufferHandle::empty(DeviceTag::Cpu)];
    /// let desc = TensorDescriptor::row_major(ElementType::Float32, &[0], &buffers);
    /// let mut out = [0u8; 8];
    /// assert!(matches!(desc.encode(&mut out), Err(EncodeError::OutputTooSmall { .. })));
    /// ```
    #[non_exhaustive]
    pub enum EncodeError {
        /// The output slice is too small.
        OutputTooSmall {
            /// Bytes needed.
            needed: u64,
            /// Bytes available.
            available: u64,
        } => "output too small: {needed} bytes needed, {available} available";
        /// A fixed-capacity builder is full.
        CapacityExceeded {
            /// What ran out (`"dims"`, `"buffers"`, …).
            what: &'static str,
            /// The capacity.
            capacity: u32,
        } => "capacity of {capacity} {what} exceeded";
        /// An input slice has the wrong length for the others (strides vs shape,
        /// …).
        LengthMismatch {
            /// What was given.
            what: &'static str,
            /// Its length.
            len: u32,
            /// The length required.
            expected: u32,
        } => "{what} has length {len}, expected {expected}";
        /// This part has no encoding here: the builder cannot hold it (tiled and
        /// private layouts, private schemes: use
        /// [`TensorDescriptor`](crate::TensorDescriptor)), or the values describe
        /// nothing a descriptor can carry (a private layout or scheme under a
        /// public tag; tiled levels whose codes, strides and nesting disagree).
        Unsupported {
            /// What it cannot hold.
            what: &'static str,
        } => "cannot encode {what}";
        /// The fields describe a descriptor a reader must reject; the error is
        /// what the decoder reports for the encoded bytes.
        Invalid(e: DescriptorError) => "invalid descriptor: {e}";
    }
}

impl core::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DescriptorError> for EncodeError {
    #[inline]
    fn from(e: DescriptorError) -> Self {
        Self::Invalid(e)
    }
}

#[cfg(feature = "std")]
mod std_impls {
    use super::{DescriptorError, EncodeError, Error};

    impl From<Error> for std::io::Error {
        /// Hurray errors are malformed input: [`std::io::ErrorKind::InvalidData`].
        fn from(e: Error) -> Self {
            Self::new(std::io::ErrorKind::InvalidData, e)
        }
    }

    impl From<DescriptorError> for std::io::Error {
        /// Hurray errors are malformed input: [`std::io::ErrorKind::InvalidData`].
        fn from(e: DescriptorError) -> Self {
            Self::new(std::io::ErrorKind::InvalidData, e)
        }
    }

    impl From<EncodeError> for std::io::Error {
        /// An encoder error is a bad argument: [`std::io::ErrorKind::InvalidInput`].
        fn from(e: EncodeError) -> Self {
            Self::new(std::io::ErrorKind::InvalidInput, e)
        }
    }
}
