//! Implementation-private layouts (`0xF0`–`0xFE`).
//!
//! Wire fields: `extension_layout_id: uint64`, `extension_data_length:
//! uint32`, `extension_data: bytes[length]`. A reader rejects an id it was
//! not told about ([`ReadOptions::extension_layouts`](crate::ReadOptions)),
//! as the spec requires of a strict reader; an accepted one is carried as
//! opaque bytes.

use zerocopy::little_endian::{U32, U64};

use crate::error::{DescriptorError, DescriptorErrorKind};
use crate::field::wire_fields;

wire_fields! {
    /// A private layout's fixed fields on the wire (its data follows).
    ExtensionLayoutFields {
        /// The implementation-defined id.
        extension_layout_id: U64,
        /// Bytes of opaque data that follow.
        extension_data_length: U32,
    } = 12;
}

use super::super::cursor::{Reader, Writer};

/// A private layout: its tag, id and opaque metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ExtensionLayout<'a> {
    tag: u8,
    id: u64,
    data: &'a [u8],
}

impl<'a> ExtensionLayout<'a> {
    /// The id, by reference (for the reader options `encode_view` parses with).
    pub(crate) const fn id_ref(&self) -> &u64 {
        &self.id
    }

    /// The layout tag, `0xF0`–`0xFE`.
    #[must_use]
    pub const fn tag(&self) -> u8 {
        self.tag
    }

    /// The implementation-defined layout id.
    #[must_use]
    pub const fn id(&self) -> u64 {
        self.id
    }

    /// The opaque metadata.
    #[must_use]
    pub const fn data(&self) -> &'a [u8] {
        self.data
    }

    pub(super) fn parse(
        r: &mut Reader<'a>,
        tag: u8,
        known: &[u64],
    ) -> Result<super::Layout<'a>, DescriptorError> {
        let at = r.pos();
        let f = r.take::<ExtensionLayoutFields>()?;
        let id = f.extension_layout_id.get();
        if !known.contains(&id) {
            let kind = DescriptorErrorKind::UnknownExtensionLayout(id);
            return Err(DescriptorError::new(at, kind));
        }
        let data = r.bytes(f.extension_data_length.get() as usize)?;
        Ok(super::Layout::Extension(Self { tag, id, data }))
    }
}

pub(super) fn encode(id: u64, data: &[u8], w: &mut Writer<'_>) {
    #[allow(clippy::cast_possible_truncation)]
    // A longer payload cannot fit a descriptor; the encoder's own
    // `descriptor_length` check reports it.
    let len = data.len().min(u32::MAX as usize) as u32;
    w.value(&ExtensionLayoutFields {
        extension_layout_id: U64::new(id),
        extension_data_length: U32::new(len),
    });
    w.bytes(data);
}
