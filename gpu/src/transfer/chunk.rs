//! How a transfer is cut: the one chunking plan of both directions.
//!
//! A read and a write of `len` bytes are cut into chunks of [`chunk_len`]
//! bytes, [`DEPTH`] of them in flight at once (while the host copies one,
//! the GPU copies the next). Requests are widened to wgpu's 4-byte copy
//! granularity by [`widen`]. Nothing here touches the GPU; every function
//! is total (no panic, no overflow, for any input the engines pass: ranges
//! the handle checked against the buffer's allocation).

use wgpu::COPY_BUFFER_ALIGNMENT;

use crate::staging::CHUNK;

/// Chunks in flight at once.
pub(crate) const DEPTH: usize = 4;
/// Transfers up to this size go in one chunk: below it, the ~10 µs that each
/// extra submission costs on the H200 outweighs what overlapping saves (the
/// host copy, split over the pool, is what takes the time).
const ONE_CHUNK: u64 = 2 << 20;
/// The smallest chunk of a longer transfer.
const MIN_CHUNK: u64 = 1 << 20;

/// `(start, widened_len, skip)`: the 4-byte-aligned copy that covers
/// `[offset, offset + len)`, and where the request starts inside it. The
/// caller checked `offset + len <= byte_len <= allocation_len`, and
/// `allocation_len` is a multiple of 4, so the widened end stays inside it.
pub(crate) const fn widen(offset: u64, len: u64) -> (u64, u64, u64) {
    let start = offset - offset % COPY_BUFFER_ALIGNMENT;
    let end = (offset + len).next_multiple_of(COPY_BUFFER_ALIGNMENT);
    (start, end - start, offset - start)
}

/// The chunk size for a transfer of `len` bytes (a multiple of 4): the whole
/// transfer up to 2 MiB, else a quarter of it between 1 MiB and [`CHUNK`]
/// (so a 16 MiB transfer overlaps GPU and host work four ways), never above
/// `max_staging` (a multiple of 4, at least 4).
pub(crate) fn chunk_len(len: u64, max_staging: u64) -> u64 {
    let c = if len <= ONE_CHUNK {
        len
    } else {
        len.div_ceil(DEPTH as u64)
            .clamp(MIN_CHUNK, CHUNK)
            .next_multiple_of(64 << 10)
    };
    c.next_multiple_of(COPY_BUFFER_ALIGNMENT)
        .clamp(COPY_BUFFER_ALIGNMENT, max_staging)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_aligned_bounded_and_cover_small_transfers_whole() {
        for len in [1, 3, 4, 5, 1000, 2 << 20, (2 << 20) + 4, 16 << 20, 1 << 30] {
            let (start, widened, skip) = widen(len / 3, len - len / 3);
            assert_eq!(start % 4, 0);
            assert_eq!(widened % 4, 0);
            assert!(skip < 4 && start + skip == len / 3);
            for max in [4, 1 << 20, 256 << 20] {
                let c = chunk_len(widened, max);
                assert_eq!(c % 4, 0, "{len} {max}");
                assert!((4..=max).contains(&c), "{len} {max}");
                if widened <= ONE_CHUNK && widened <= max {
                    assert_eq!(c, widened.max(4));
                }
                if widened > ONE_CHUNK && max >= CHUNK {
                    assert!((MIN_CHUNK..=CHUNK).contains(&c));
                }
            }
        }
    }
}
