//! Composite member section (16 bytes): `member_role: uint8` (0 correction,
//! 1 base), `_reserved: uint8[15]`. Carried by overlay members only.

use crate::error::{DescriptorError, DescriptorErrorKind};

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

    pub(crate) fn parse(r: &mut Reader<'_>) -> Result<Self, DescriptorError> {
        let at = r.pos();
        let role = match r.u8()? {
            0 => Self::Correction,
            1 => Self::Base,
            v => {
                return Err(DescriptorError::new(
                    at,
                    DescriptorErrorKind::InvalidValue {
                        field: "member_role",
                        value: u64::from(v),
                    },
                ));
            }
        };
        r.reserved(15, "composite_member._reserved")?;
        Ok(role)
    }

    pub(crate) fn encode(self, w: &mut Writer<'_>) {
        w.u8(self.code());
        w.zeros(15);
    }
}
