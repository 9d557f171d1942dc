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

use crate::error::{DescriptorError, DescriptorErrorKind};

use super::super::cursor::{Reader, Writer};
use super::super::extent::Ctx;

/// The fields of a COO layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Coo {
    /// Number of stored elements.
    pub nnz: u64,
    /// Whether the entries are in strictly increasing lexicographic order.
    pub sorted: bool,
}

impl Coo {
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Self, DescriptorError> {
        let nnz = r.u64()?;
        let at = r.pos();
        let sorted = match r.u8()? {
            0 => false,
            1 => true,
            v => {
                return Err(DescriptorError::new(
                    at,
                    DescriptorErrorKind::InvalidValue {
                        field: "is_sorted",
                        value: u64::from(v),
                    },
                ));
            }
        };
        r.reserved(7, "coo._reserved")?;
        Ok(Self { nnz, sorted })
    }

    pub(super) fn check(&self, ctx: &Ctx<'_>) -> Result<(), DescriptorError> {
        let values = ctx.element_bytes(0, self.nnz)?;
        ctx.at_least(0, values)?;
        let rank = ctx.shape.len() as u64;
        let coords = self.nnz.checked_mul(rank).ok_or(ctx.err(
            1,
            DescriptorErrorKind::Overflow {
                what: "COO index count",
            },
        ))?;
        ctx.exactly(1, ctx.array_bytes(1, coords, 8)?)
    }

    pub(super) fn encode(&self, w: &mut Writer<'_>) {
        w.u64(self.nnz);
        w.u8(u8::from(self.sorted));
        w.zeros(7);
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
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Self, DescriptorError> {
        let nnz = r.u64()?;
        r.reserved(8, "compressed._reserved")?;
        Ok(Self { nnz })
    }

    /// `major` is the compressed dimension's size (rows for CSR).
    pub(super) fn check(&self, ctx: &Ctx<'_>, major: Option<u64>) -> Result<(), DescriptorError> {
        let values = ctx.element_bytes(0, self.nnz)?;
        ctx.at_least(0, values)?;
        ctx.exactly(1, ctx.array_bytes(1, self.nnz, 8)?)?;
        let pointers = major.and_then(|n| n.checked_add(1)).ok_or(ctx.err(
            2,
            DescriptorErrorKind::Overflow {
                what: "pointer count",
            },
        ))?;
        ctx.exactly(2, ctx.array_bytes(2, pointers, 8)?)
    }

    pub(super) fn encode(&self, w: &mut Writer<'_>) {
        w.u64(self.nnz);
        w.zeros(8);
    }
}
