//! Block-paged layout (`0x0A`, rank 3): a paged KV cache.
//!
//! Wire fields: [`BlockPagedFields`], with their rules in
//! `docs/spec/layouts.md` § Block-paged.
//!
//! Buffers: `page_pool` (exactly `num_pages × page_size × shape[1] ×
//! shape[2]` elements), `block_table` (a whole number of indices) and
//! `seq_ptr` (exactly `num_seqs + 1` indices).

use zerocopy::little_endian::{U32, U64};

use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::field::{at, wire_fields};
use crate::{FieldName, Quantity};

use super::super::cursor::{Reader, Writer};
use super::super::extent::{Ctx, ELEMENTS, Need, Shape, Sizes, mul};
use super::Layout;

/// Which projection of attention a block-paged tensor holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KvRole {
    /// Keys (`0x00`).
    Key,
    /// Values (`0x01`).
    Value,
    /// Fused or not a KV tensor (`0x02`).
    Fused,
}

impl KvRole {
    /// The wire byte.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Key => 0,
            Self::Value => 1,
            Self::Fused => 2,
        }
    }
}

/// The fields of a block-paged layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BlockPaged {
    /// Tokens per page (≥ 1).
    pub page_size: u32,
    /// Physical pages in the pool.
    pub num_pages: u64,
    /// Sequences in the batch.
    pub num_seqs: u32,
    /// Key, value or fused.
    pub kv_role: KvRole,
    /// Transformer layer, or `None` when not layer-scoped.
    pub layer_index: Option<u32>,
    /// Whether `block_table` and `seq_ptr` hold uint64 (else uint32).
    pub wide_indices: bool,
}

wire_fields! {
    /// The block-paged layout's fields on the wire.
    BlockPagedFields {
        /// Tokens per page.
        page_size: U32,
        /// Physical pages in the pool.
        num_pages: U64,
        /// The paged axis (0).
        paged_axis: U32,
        /// Sequences in the batch.
        num_seqs: U32,
        /// [`KvRole`] code.
        kv_role: u8,
        /// Layer, or `0xFFFFFFFF`.
        layer_index: U32,
        /// 0 = uint32 indices, 1 = uint64.
        block_table_index_type: u8,
        /// Reserved, zero.
        reserved: [u8; 6] as "_reserved",
    } = 32;
}

/// `layer_index` value meaning "not layer-scoped".
const NO_LAYER: u32 = u32::MAX;

impl BlockPaged {
    /// Bytes per `block_table`/`seq_ptr` entry.
    #[must_use]
    pub const fn index_width(&self) -> u64 {
        if self.wide_indices { 8 } else { 4 }
    }

    /// Reads the fields and checks them: the parsed layout.
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Layout<'static>, DescriptorError> {
        let base = r.pos();
        Self::from_fields(r.take::<BlockPagedFields>()?, base)
    }

    /// The fields' rules (`base`: their offset): the parser's, and the
    /// encoder's over the fields it writes. The result is the layout
    /// itself, so that each rule's error is written once, where the
    /// parser returns it (no move between result types).
    pub(super) fn from_fields(
        f: &BlockPagedFields,
        base: u32,
    ) -> Result<Layout<'static>, DescriptorError> {
        let invalid = |at: u32, field, value: u64| {
            let kind = DescriptorErrorKind::InvalidValue { field, value };
            Err(DescriptorError::new(base.saturating_add(at), kind))
        };
        let page_size = f.page_size.get();
        if page_size == 0 {
            return invalid(at!(BlockPagedFields.page_size), FieldName::PageSize, 0);
        }
        let paged_axis = f.paged_axis.get();
        if paged_axis != 0 {
            let at = at!(BlockPagedFields.paged_axis);
            return invalid(at, FieldName::PagedAxis, u64::from(paged_axis));
        }
        let kv_role = match f.kv_role {
            0 => KvRole::Key,
            1 => KvRole::Value,
            2 => KvRole::Fused,
            v => {
                let at = at!(BlockPagedFields.kv_role);
                return invalid(at, FieldName::KvRole, u64::from(v));
            }
        };
        let wide_indices = match f.block_table_index_type {
            0 => false,
            1 => true,
            v => {
                let at = at!(BlockPagedFields.block_table_index_type);
                return invalid(at, FieldName::BlockTableIndexType, u64::from(v));
            }
        };
        let at = base.saturating_add(at!(BlockPagedFields.reserved));
        super::reserved(&f.reserved, at, FieldName::BlockPagedReserved)?;
        let layer = f.layer_index.get();
        Ok(Layout::BlockPaged(Self {
            page_size,
            num_pages: f.num_pages.get(),
            num_seqs: f.num_seqs.get(),
            kv_role,
            layer_index: if layer == NO_LAYER { None } else { Some(layer) },
            wide_indices,
        }))
    }

    /// Page slots in the pool: `num_pages × page_size`.
    #[must_use]
    pub const fn slots(&self) -> Option<u64> {
        mul(self.num_pages, self.page_size as u64)
    }

    pub(super) fn check(&self, ctx: &Ctx<impl Shape, impl Sizes>) -> Result<(), DescriptorError> {
        // No slots make an empty pool whatever a slot would hold (as a zero
        // dimension makes a shape's element count zero). A slot holds
        // `shape[1] × shape[2]` elements (rank 3, checked at parse): a
        // product of two overflows only when neither is zero.
        let per_slot = if self.num_pages == 0 || self.page_size == 0 {
            Some(0)
        } else {
            ctx.shape
                .dim(1)
                .zip(ctx.shape.dim(2))
                .and_then(|(a, b)| mul(a, b))
        };
        let pool = self.slots().zip(per_slot).and_then(|(s, p)| mul(s, p));
        // `block_table` holds a whole number of indices: as many as fit
        // (a size that is no multiple of the width names the largest
        // multiple below it).
        let (width, shift) = if self.wide_indices { (8, 3) } else { (4, 2) };
        let table = ctx.size(1) >> shift;
        let seq_ptr = u64::from(self.num_seqs).saturating_add(1);
        ctx.needs(&[
            Need::counted(0, pool, ELEMENTS, Quantity::PagePoolSize),
            Need::exactly(1, table, width),
            Need::exactly(2, seq_ptr, width),
        ])
    }

    pub(super) fn encode(&self, w: &mut Writer<'_>) {
        w.value(&self.fields());
    }

    /// The wire fields of these values.
    pub(super) fn fields(&self) -> BlockPagedFields {
        BlockPagedFields {
            page_size: U32::new(self.page_size),
            num_pages: U64::new(self.num_pages),
            paged_axis: U32::new(0),
            num_seqs: U32::new(self.num_seqs),
            kv_role: self.kv_role.code(),
            layer_index: U32::new(self.layer_index.unwrap_or(NO_LAYER)),
            block_table_index_type: u8::from(self.wide_indices),
            reserved: [0; 6],
        }
    }
}
