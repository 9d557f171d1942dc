//! Composite member section (16 bytes): `member_role: uint8` (0 correction,
//! 1 base), `_reserved: uint8[15]`. Carried by overlay members only.

use crate::FieldName;
use crate::error::DescriptorError;
use crate::field::{at, wire_fields};

wire_fields! {
    /// The composite member section on the wire.
    MemberFields {
        /// [`MemberRole`] code.
        member_role: u8,
        /// Reserved, zero.
        reserved: [u8; 15] as "_reserved",
    } = 16;
}

use super::super::cursor::{Reader, Writer};

/// The role of an overlay member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MemberRole {
    /// A correction applied over what lies below it (`0x00`).
    Correction,
    /// The base that spans the whole index space (`0x01`).
    Base,
}

impl MemberRole {
    /// The wire byte.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Correction => 0,
            Self::Base => 1,
        }
    }

    /// Reads the section into `role`. The role travels through the
    /// out-parameter, not the result: a `Result<MemberRole, _>` holds the
    /// one-byte role at byte 4, so its error was moved on through an
    /// unaligned `memcpy` of bytes 5..40 (ADR-133).
    #[cfg_attr(target_pointer_width = "32", inline(always))]
    pub(crate) fn parse(
        r: &mut Reader<'_>,
        role: &mut Option<Self>,
    ) -> Result<(), DescriptorError> {
        let at = r.pos();
        let f = r.take::<MemberFields>()?;
        *role = Some(match f.member_role {
            0 => Self::Correction,
            1 => Self::Base,
            v => {
                return Err(DescriptorError::invalid(
                    at,
                    FieldName::MemberRole,
                    u64::from(v),
                ));
            }
        });
        let reserved_at = at.saturating_add(at!(MemberFields.reserved));
        crate::descriptor::layout::reserved(
            &f.reserved,
            reserved_at,
            FieldName::CompositeMemberReserved,
        )
    }

    pub(crate) fn encode(self, w: &mut Writer<'_>) {
        w.value(&MemberFields {
            member_role: self.code(),
            reserved: [0; 15],
        });
    }
}
