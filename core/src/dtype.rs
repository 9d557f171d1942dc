//! Element types of a tensor (byte 8 of the descriptor header).

/// A tensor's element type.
///
/// Codes are normative (`docs/spec/metadata.md` § DType Codes). Decoding goes
/// through [`DType::from_code`]; an unknown byte is
/// [`Error::InvalidDType`](crate::Error::InvalidDType).
///
/// ```
/// use hurray_core::DType;
/// assert_eq!(DType::F32.size_bytes(), 4);
/// assert_eq!(DType::from_code(DType::Bf16.code()), Some(DType::Bf16));
/// assert_eq!(DType::Bf16.dlpack(), (4, 16, 1)); // kDLBfloat, 16 bits, 1 lane
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
#[repr(u8)]
pub enum DType {
    /// One byte, 0 or 1.
    Bool = 0x01,
    /// Signed 8-bit integer.
    I8 = 0x02,
    /// Signed 16-bit integer.
    I16 = 0x03,
    /// Signed 32-bit integer.
    I32 = 0x04,
    /// Signed 64-bit integer.
    I64 = 0x05,
    /// Unsigned 8-bit integer.
    U8 = 0x06,
    /// Unsigned 16-bit integer.
    U16 = 0x07,
    /// Unsigned 32-bit integer.
    U32 = 0x08,
    /// Unsigned 64-bit integer.
    U64 = 0x09,
    /// IEEE 754 binary16.
    F16 = 0x0A,
    /// bfloat16.
    Bf16 = 0x0B,
    /// IEEE 754 binary32.
    F32 = 0x0C,
    /// IEEE 754 binary64.
    F64 = 0x0D,
    /// Complex of two binary32 (real, imaginary).
    C64 = 0x0E,
    /// Complex of two binary64 (real, imaginary).
    C128 = 0x0F,
}

impl DType {
    /// Every dtype, in ascending code order.
    pub const ALL: &'static [Self] = &[
        Self::Bool,
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
        Self::U8,
        Self::U16,
        Self::U32,
        Self::U64,
        Self::F16,
        Self::Bf16,
        Self::F32,
        Self::F64,
        Self::C64,
        Self::C128,
    ];

    /// Decodes a dtype byte; `None` for an unknown code.
    #[must_use]
    #[inline]
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x01 => Self::Bool,
            0x02 => Self::I8,
            0x03 => Self::I16,
            0x04 => Self::I32,
            0x05 => Self::I64,
            0x06 => Self::U8,
            0x07 => Self::U16,
            0x08 => Self::U32,
            0x09 => Self::U64,
            0x0A => Self::F16,
            0x0B => Self::Bf16,
            0x0C => Self::F32,
            0x0D => Self::F64,
            0x0E => Self::C64,
            0x0F => Self::C128,
            _ => return None,
        })
    }

    /// The wire byte of this dtype.
    #[must_use]
    #[inline]
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Size of one element in bytes.
    #[must_use]
    #[inline]
    pub const fn size_bytes(self) -> u32 {
        match self {
            Self::Bool | Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 | Self::F16 | Self::Bf16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 | Self::C64 => 8,
            Self::C128 => 16,
        }
    }

    /// The DLPack `DLDataType` of this dtype as `(code, bits, lanes)`.
    #[must_use]
    #[inline]
    pub const fn dlpack(self) -> (u8, u8, u16) {
        const INT: u8 = 0;
        const UINT: u8 = 1;
        const FLOAT: u8 = 2;
        const BFLOAT: u8 = 4;
        const COMPLEX: u8 = 5;
        const BOOL: u8 = 6;
        let code = match self {
            Self::Bool => BOOL,
            Self::I8 | Self::I16 | Self::I32 | Self::I64 => INT,
            Self::U8 | Self::U16 | Self::U32 | Self::U64 => UINT,
            Self::F16 | Self::F32 | Self::F64 => FLOAT,
            Self::Bf16 => BFLOAT,
            Self::C64 | Self::C128 => COMPLEX,
        };
        // size_bytes() <= 16, so bits <= 128 fits u8.
        #[allow(clippy::cast_possible_truncation)]
        let bits = self.size_bytes().wrapping_mul(8) as u8;
        (code, bits, 1)
    }
}
