//! COO (`0x06`), CSR (`0x07`) and CSC (`0x08`) sparse layouts.
//!
//! Wire fields: COO `nnz: uint64, is_sorted: uint8, _reserved: uint8[7]`;
//! CSR and CSC `nnz: uint64, _reserved: uint8[8]`.
//!
//! Buffers: COO `values` (≥ `nnz` elements) and `indices` (exactly
//! `nnz × rank` uint64); CSR/CSC `values` (≥ `nnz` elements), the minor
//! index array (exactly `nnz` uint64) and the pointer array (exactly
//! `n + 1` uint64, `n` = rows for CSR, columns for CSC). The index arrays'
//! contents (sortedness, bounds) are data, checked by
//! [`validate_contents`](crate::validate_contents) where the host can read
//! them.

use zerocopy::little_endian::U64;

use crate::error::DescriptorError;
use crate::field::{at, wire_fields};
use crate::{FieldName, Quantity};

use super::super::cursor::{Reader, Writer};
use super::super::extent::{Ctx, Need, Shape, Sizes, mul};
use super::Layout;

/// The fields of a COO layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Coo {
    /// Number of stored elements.
    pub nnz: u64,
    /// Whether the entries are in strictly increasing lexicographic order.
    pub sorted: bool,
}

wire_fields! {
    /// The COO layout's fields on the wire.
    CooFields {
        /// Stored elements.
        nnz: U64,
        /// 1 if sorted, else 0.
        is_sorted: u8,
        /// Reserved, zero.
        reserved: [u8; 7] as "_reserved",
    } = 16;
    /// The CSR and CSC layouts' fields on the wire.
    CompressedFields {
        /// Stored elements.
        nnz: U64,
        /// Reserved, zero.
        reserved: [u8; 8] as "_reserved",
    } = 16;
}

impl Coo {
    /// Reads the fields and checks them: the parsed layout (each error
    /// written where the parser returns it, as block-paged's).
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Layout<'static>, DescriptorError> {
        let base = r.pos();
        let f = r.take::<CooFields>()?;
        let at = |off: u32| base.saturating_add(off);
        let sorted = match f.is_sorted {
            0 => false,
            1 => true,
            v => {
                let at = at(at!(CooFields.is_sorted));
                return Err(DescriptorError::invalid(at, FieldName::IsSorted, v.into()));
            }
        };
        super::reserved(
            &f.reserved,
            at(at!(CooFields.reserved)),
            FieldName::CooReserved,
        )?;
        Ok(Layout::Coo(Self {
            nnz: f.nnz.get(),
            sorted,
        }))
    }

    pub(super) fn check(&self, ctx: &Ctx<impl Shape, impl Sizes>) -> Result<(), DescriptorError> {
        let coords = mul(self.nnz, ctx.shape.rank() as u64);
        ctx.needs(&[
            Need::values(0, self.nnz),
            Need::counted(1, coords, 8, Quantity::CooIndexCount),
        ])
    }

    pub(super) fn encode(&self, w: &mut Writer<'_>) {
        w.value(&CooFields {
            nnz: U64::new(self.nnz),
            is_sorted: u8::from(self.sorted),
            reserved: [0; 7],
        });
    }
}

/// The fields of a CSR or CSC layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Compressed {
    /// Number of stored elements.
    pub nnz: u64,
}

impl Compressed {
    /// Reads the fields and checks them: the parsed layout, CSR or CSC
    /// (`csr`).
    pub(super) fn parse(r: &mut Reader<'_>, csr: bool) -> Result<Layout<'static>, DescriptorError> {
        let base = r.pos();
        let f = r.take::<CompressedFields>()?;
        // The eight reserved bytes compared as one word.
        if u64::from_ne_bytes(f.reserved) != 0 {
            let at = base.saturating_add(at!(CompressedFields.reserved));
            return Err(DescriptorError::reserved(at, FieldName::CompressedReserved));
        }
        let c = Self { nnz: f.nnz.get() };
        Ok(if csr { Layout::Csr(c) } else { Layout::Csc(c) })
    }

    /// `major` is the compressed dimension's size (rows for CSR).
    pub(super) fn check(
        &self,
        ctx: &Ctx<impl Shape, impl Sizes>,
        major: Option<u64>,
    ) -> Result<(), DescriptorError> {
        let pointers = major.and_then(|n| n.checked_add(1));
        ctx.needs(&[
            Need::values(0, self.nnz),
            Need::exactly(1, self.nnz, 8),
            Need::counted(2, pointers, 8, Quantity::PointerCount),
        ])
    }

    pub(super) fn encode(&self, w: &mut Writer<'_>) {
        w.value(&CompressedFields {
            nnz: U64::new(self.nnz),
            reserved: [0; 8],
        });
    }
}
