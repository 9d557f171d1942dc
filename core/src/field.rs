//! Field maps: each fixed part of the wire format is one zerocopy struct,
//! and the struct is the only place its bytes are named.
//!
//! `wire_struct!` wraps a `#[repr(C)]` struct definition and, beside it,
//! lists its fields as data ([`WireStruct::FIELDS`]: name, offset from
//! `offset_of!`, wire type). The parser reads through the struct, error
//! offsets come from `offset_of!`, the encoder writes the struct, and
//! [`TensorView::for_each_field`](crate::TensorView::for_each_field) walks the
//! same tables for an annotated dump — so no offset is written twice.
//!
//! Nothing here can panic: a field's bytes are cut from its part with
//! `get`, and a part shorter than its table yields no field.

use zerocopy::little_endian::{F32, F64, I32, I64, U16, U32, U64};

/// The wire type of one field, and how to read its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Kind {
    /// `uint8`.
    U8,
    /// `uint16` LE.
    U16,
    /// `uint32` LE.
    U32,
    /// `uint64` LE.
    U64,
    /// `int32` LE.
    I32,
    /// `int64` LE.
    I64,
    /// `float32` LE.
    F32,
    /// `float64` LE.
    F64,
    /// A run of bytes (a magic number, reserved bytes, an opaque payload).
    Bytes,
}

/// A field's value, read from its bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum FieldValue<'a> {
    /// `uint8`.
    U8(u8),
    /// `uint16`.
    U16(u16),
    /// `uint32`.
    U32(u32),
    /// `uint64`.
    U64(u64),
    /// `int32`.
    I32(i32),
    /// `int64`.
    I64(i64),
    /// `float32`.
    F32(f32),
    /// `float64`.
    F64(f64),
    /// Raw bytes.
    Bytes(&'a [u8]),
}

impl<'a> FieldValue<'a> {
    /// Reads `bytes` as `kind`; a length that does not match the kind is
    /// read as [`FieldValue::Bytes`].
    #[must_use]
    pub fn read(kind: Kind, bytes: &'a [u8]) -> Self {
        macro_rules! le {
            ($variant:ident, $t:ty) => {
                match <[u8; size_of::<$t>()]>::try_from(bytes) {
                    Ok(b) => Self::$variant(<$t>::from_le_bytes(b)),
                    Err(_) => Self::Bytes(bytes),
                }
            };
        }
        match kind {
            Kind::U8 => le!(U8, u8),
            Kind::U16 => le!(U16, u16),
            Kind::U32 => le!(U32, u32),
            Kind::U64 => le!(U64, u64),
            Kind::I32 => le!(I32, i32),
            Kind::I64 => le!(I64, i64),
            Kind::F32 => le!(F32, f32),
            Kind::F64 => le!(F64, f64),
            Kind::Bytes => Self::Bytes(bytes),
        }
    }

    /// The value as an unsigned integer, where it is one.
    #[must_use]
    pub const fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v as u64),
            Self::U16(v) => Some(v as u64),
            Self::U32(v) => Some(v as u64),
            Self::U64(v) => Some(v),
            _ => None,
        }
    }
}

/// A type that can be a field of a wire struct.
pub trait WireType {
    /// Its wire type.
    const KIND: Kind;
}

macro_rules! wire_types {
    ($($t:ty => $k:ident),* $(,)?) => {
        $(impl WireType for $t { const KIND: Kind = Kind::$k; })*
    };
}
wire_types!(u8 => U8, U16 => U16, U32 => U32, U64 => U64, I32 => I32, I64 => I64,
    F32 => F32, F64 => F64);
impl<const N: usize> WireType for [u8; N] {
    const KIND: Kind = Kind::Bytes;
}

/// One field of a wire struct: its spec name, offset and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FieldDef {
    /// The spec's field name (`"descriptor_length"`, `"_reserved"`).
    pub name: &'static str,
    /// Offset from the start of the part.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
    /// Wire type.
    pub kind: Kind,
}

/// A fixed part of the wire format with its field table.
pub trait WireStruct {
    /// The fields in wire order (names, offsets and types from the struct).
    const FIELDS: &'static [FieldDef];
}

/// Declares a wire struct and its [`WireStruct`] field table. A field may
/// carry `#[wire(name = "…")]`-style renaming as `as "…"` after its type,
/// for Rust names that cannot be the spec's (`reserved` → `"_reserved"`).
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty $(as $wire:literal)? ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field : $ty ),*
        }

        impl $crate::field::WireStruct for $name {
            const FIELDS: &'static [$crate::field::FieldDef] = &[
                $($crate::field::FieldDef {
                    name: $crate::field::wire_name!(stringify!($field) $(, $wire)?),
                    offset: ::core::mem::offset_of!($name, $field),
                    len: ::core::mem::size_of::<$ty>(),
                    kind: <$ty as $crate::field::WireType>::KIND,
                }),*
            ];
        }
    };
}
pub(crate) use wire_struct;

/// The spec's name of a field: its Rust name unless renamed.
macro_rules! wire_name {
    ($name:expr) => {
        $name
    };
    ($name:expr, $wire:literal) => {
        $wire
    };
}
pub(crate) use wire_name;

/// Declares plain wire structs (all derives, `#[repr(C)]`, public
/// fields) with their field tables and asserts each one's size: `Name {
/// fields } = size;`.
macro_rules! wire_fields {
    ($($(#[$m:meta])* $name:ident {
        $($(#[$fm:meta])* $f:ident : $t:ty $(as $w:literal)?),* $(,)?
    } = $len:literal;)*) => {$(
        $crate::field::wire_struct! {
            $(#[$m])*
            #[derive(
                zerocopy::FromBytes, zerocopy::IntoBytes, zerocopy::KnownLayout,
                zerocopy::Immutable, zerocopy::Unaligned, Debug, Clone, Copy, PartialEq,
            )]
            #[repr(C)]
            pub struct $name { $($(#[$fm])* pub $f: $t $(as $w)?),* }
        }
        static_assertions::assert_eq_size!($name, [u8; $len]);
    )*};
}
pub(crate) use wire_fields;

/// The offset of a field in its wire struct, as a descriptor offset
/// (`u32`; every wire struct is far smaller than 4 GiB). A constant
/// wherever it is written: inside a function too, where a call of
/// `offset32` left to the optimizer cost M4 flash (+24 B in the statistics
/// rules).
macro_rules! at {
    ($s:ident . $f:ident) => {
        const { $crate::field::offset32(::core::mem::offset_of!($s, $f)) }
    };
}
pub(crate) use at;

/// A field offset as a descriptor offset.
#[allow(clippy::cast_possible_truncation)] // wire structs are under 100 bytes
pub(crate) const fn offset32(offset: usize) -> u32 {
    offset as u32
}

/// A rule row's field, for the rows of the statistics and extension type
/// rules: its offset in its wire struct as a byte (both structs are under
/// 100 bytes, their sizes asserted where they are declared) and the name
/// an error gives it.
macro_rules! field_row {
    ($s:ident . $f:ident, $name:ident) => {
        $crate::field::row(::core::mem::offset_of!($s, $f), $crate::FieldName::$name)
    };
}
pub(crate) use field_row;

/// A [`field_row!`]: `offset`, in a struct under 256 bytes, as a byte.
#[allow(clippy::cast_possible_truncation)] // see `field_row!`
pub(crate) const fn row(offset: usize, name: crate::FieldName) -> (u8, crate::FieldName) {
    (offset as u8, name)
}
