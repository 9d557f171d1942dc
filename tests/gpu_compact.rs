//! The stream-compaction example (`examples/gpu_compact.rs`) against a CPU
//! reference on random inputs of several sizes, including 0 and 1 element.
#![cfg(feature = "gpu")]

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../examples/gpu_compact.rs"]
mod compact;

/// The workspace's one decision whether a GPU test can run here.
#[path = "../gpu/tests/common/gate.rs"]
mod gate;

use compact::{Compactor, reference};
use hurray::gpu::GpuContext;

fn random(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 32) as u32
        })
        .collect()
}

#[test]
fn compaction_matches_the_cpu_reference() {
    let test = "compaction_matches_the_cpu_reference";
    let Some(ctx) = gate::need(test, GpuContext::new()) else {
        return;
    };
    let compactor = Compactor::new(&ctx).unwrap();
    let cases = [
        (0usize, 1u32 << 31),
        (1, u32::MAX),
        (1, 0),
        (63, 1 << 31),
        (64, 1 << 31),
        (65, 1 << 30),
        (1000, 1 << 29),
        (100_000, 1 << 31),
    ];
    for (i, &(n, threshold)) in cases.iter().enumerate() {
        let input = random(n, i as u64 + 1);
        let mut got = compactor.run(&ctx, &input, threshold).unwrap();
        got.sort_unstable();
        assert_eq!(
            got,
            reference(&input, threshold),
            "n = {n}, threshold = {threshold}"
        );
    }
    // Over 65535 workgroups of 64: the keep pass runs as a 2-D grid.
    let big = random(4_500_000, 99);
    let mut got = compactor.run(&ctx, &big, 1 << 24).unwrap();
    got.sort_unstable();
    assert_eq!(got, reference(&big, 1 << 24));
}
