//! Helpers shared by the core's integration tests.

/// A 16-byte handle entry assembled field by field from the spec's layout,
/// independently of the crate's encoder.
pub(crate) fn entry(size: u64, align: u32, dev: u8, sync: u8, class: u8, reserved: u8) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&size.to_le_bytes());
    b[8..12].copy_from_slice(&align.to_le_bytes());
    b[12] = dev;
    b[13] = sync;
    b[14] = class;
    b[15] = reserved;
    b
}
