//! Composite head (`0x0B`): a data-less descriptor that binds the next
//! `member_count` descriptors of a stream as its members
//! (`docs/spec/layouts.md` § Composite head).
//!
//! Wire fields: [`CompositeFields`], with their rules in the spec.
//!
//! A head has no buffers and `byte_offset` 0. Rules that span members are
//! checked by [`CompositeValidator`](crate::CompositeValidator).

use zerocopy::little_endian::U32;

use crate::FieldName;
use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::field::{at, wire_fields};

use super::super::cursor::{Reader, Writer};
use super::Layout;

/// How a composite's members form its logical view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum CompositionRule {
    /// Members' boxes tile the index space exactly (`0x01`).
    Partition,
    /// A base member plus corrections applied in order (`0x02`).
    Overlay,
    /// Independent tensors under one identity (`0x03`).
    Group,
    /// An implementation-private rule `0xF0`–`0xFE`.
    Private(u8),
}

/// How overlay corrections combine with what lies under them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CombineOp {
    /// Not an overlay (`0x00`).
    None,
    /// The latest member covering an index wins (`0x01`).
    Replace,
    /// Covering members' values are added to the base (`0x02`).
    Add,
}

/// The fields of a composite head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CompositeHead {
    /// The composition rule.
    pub rule: CompositionRule,
    /// The combine operation (overlay only).
    pub combine_op: CombineOp,
    /// Number of member descriptors that follow.
    pub member_count: u32,
}

/// `member_count` of an open composite (reserved).
const OPEN: u32 = u32::MAX;

impl CompositionRule {
    /// The wire byte.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Partition => 1,
            Self::Overlay => 2,
            Self::Group => 3,
            Self::Private(c) => c,
        }
    }
}

impl CombineOp {
    /// The wire byte.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Replace => 1,
            Self::Add => 2,
        }
    }
}

wire_fields! {
    /// The composite head's fields on the wire.
    CompositeFields {
        /// [`CompositionRule`] code.
        composition_rule: u8,
        /// [`CombineOp`] code.
        combine_op: u8,
        /// Reserved, zero.
        reserved: [u8; 2] as "_reserved",
        /// Member descriptors that follow.
        member_count: U32,
    } = 8;
}

/// Offset of `composition_rule` in the layout fields.
pub(crate) const RULE_AT: u32 = at!(CompositeFields.composition_rule);

impl CompositeHead {
    /// Reads the fields and checks them: the parsed layout.
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Layout<'static>, DescriptorError> {
        let base = r.pos();
        Self::from_fields(r.take::<CompositeFields>()?, base)
    }

    /// The fields' rules (`base`: their offset): the parser's, and the
    /// encoder's over the fields it writes; the result is the layout
    /// itself (as block-paged's).
    pub(super) fn from_fields(
        f: &CompositeFields,
        base: u32,
    ) -> Result<Layout<'static>, DescriptorError> {
        let invalid = |at: u32, field, value: u64| {
            let kind = DescriptorErrorKind::InvalidValue { field, value };
            Err(DescriptorError::new(base.saturating_add(at), kind))
        };
        let rule = match f.composition_rule {
            1 => CompositionRule::Partition,
            2 => CompositionRule::Overlay,
            3 => CompositionRule::Group,
            c @ crate::codes::PRIVATE_FIRST..=crate::codes::PRIVATE_LAST => {
                CompositionRule::Private(c)
            }
            v => return invalid(RULE_AT, FieldName::CompositionRule, u64::from(v)),
        };
        let op = f.combine_op;
        let combine_op = match (rule, op) {
            (CompositionRule::Overlay, 1) => CombineOp::Replace,
            (CompositionRule::Overlay, 2) => CombineOp::Add,
            (CompositionRule::Partition | CompositionRule::Group, 0) => CombineOp::None,
            (CompositionRule::Private(_), 0) => CombineOp::None,
            (CompositionRule::Private(_), 1) => CombineOp::Replace,
            (CompositionRule::Private(_), 2) => CombineOp::Add,
            _ => {
                let at = at!(CompositeFields.combine_op);
                return invalid(at, FieldName::CombineOp, u64::from(op));
            }
        };
        if f.reserved != [0; 2] {
            let at = base.saturating_add(at!(CompositeFields.reserved));
            return Err(DescriptorError::reserved(at, FieldName::CompositeReserved));
        }
        let member_count = f.member_count.get();
        if member_count == OPEN || (rule == CompositionRule::Overlay && member_count == 0) {
            let at = at!(CompositeFields.member_count);
            return invalid(at, FieldName::MemberCount, u64::from(member_count));
        }
        Ok(Layout::Composite(Self {
            rule,
            combine_op,
            member_count,
        }))
    }

    pub(super) fn encode(&self, w: &mut Writer<'_>) {
        w.value(&self.fields());
    }

    /// The wire fields of these values.
    pub(super) const fn fields(&self) -> CompositeFields {
        CompositeFields {
            composition_rule: self.rule.code(),
            combine_op: self.combine_op.code(),
            reserved: [0; 2],
            member_count: U32::new(self.member_count),
        }
    }
}
