//! CRC-32C (Castagnoli, reflected polynomial `0x82F63B78`), portable:
//! slicing by 8 over tables computed at compile time (8 KiB of flash), no
//! panic path (ADR-104: the `crc` crate's sliced loop keeps one that the
//! link-time proof rejects; hosts use the CPU's CRC instructions through
//! `hurray_io`).

/// The eight 256-entry tables: `T[0]` byte-at-a-time, `T[k]` the effect of
/// a byte followed by `k` zero bytes.
static T: [[u32; 256]; 8] = tables();

#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]
const fn tables() -> [[u32; 256]; 8] {
    // Evaluated at compile time: an out-of-bounds index here is a build
    // error, not a run-time panic.
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut b = 0;
        while b < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            b += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// `T[K][byte]`: a `u8` index into a 256-entry table is always in bounds.
#[inline(always)]
fn t<const K: usize>(byte: u32) -> u32 {
    #[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
    T[K][usize::from(byte as u8)]
}

/// CRC-32C of `bytes` continued from `crc` (the finished value of the
/// bytes before, 0 to start).
pub(crate) fn update(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let x = u64::from_le_bytes(word);
        #[allow(clippy::cast_possible_truncation)]
        let lo = (x as u32) ^ c;
        let hi = (x >> 32) as u32;
        c = t::<7>(lo)
            ^ t::<6>(lo >> 8)
            ^ t::<5>(lo >> 16)
            ^ t::<4>(lo >> 24)
            ^ t::<3>(hi)
            ^ t::<2>(hi >> 8)
            ^ t::<1>(hi >> 16)
            ^ t::<0>(hi >> 24);
    }
    for &b in chunks.remainder() {
        c = t::<0>(c ^ u32::from(b)) ^ (c >> 8);
    }
    !c
}
