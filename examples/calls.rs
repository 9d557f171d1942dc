//! Runs one decoder or encoder `N` times on one of the reference's benchmark
//! shapes (`tests/differential/shapes.rs`), for counting instructions per call
//! with callgrind: the difference between two runs of `2N` and `N` calls,
//! divided by `N`, is the cost of one call with the program's start-up and
//! the shape's set-up cancelled (and does not depend on the machine's load).
//!
//! ```sh
//! cargo build --release --example calls
//! for n in 100000 200000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/calls ours decode dense $n 2>&1 | grep Collected
//! done
//! ```
//!
//! Arguments: `ours|reference`, `decode|encode`, `dense|per-block|csr|strided`,
//! the number of calls. `docs/perf.md` lists the figures.

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../tests/differential/shapes.rs"]
mod shapes;

use std::hint::black_box;

use hurray::TensorView;

fn usage() -> ! {
    eprintln!("usage: calls ours|reference decode|encode dense|per-block|csr|strided CALLS");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [side, op, shape, calls] = &args[..] else {
        usage()
    };
    let Ok(calls) = calls.parse::<u64>() else {
        usage()
    };
    let index = match shape.as_str() {
        "dense" => 0,
        "per-block" => 1,
        "csr" => 2,
        "strided" => 3,
        _ => usage(),
    };
    let shapes = shapes::race_shapes();
    let s = &shapes[index];
    let bytes = s.encode_ours().expect("our encoder accepts the shape");
    match (side.as_str(), op.as_str()) {
        ("ours", "decode") => {
            for _ in 0..calls {
                black_box(&TensorView::parse(black_box(&bytes)));
            }
        }
        ("reference", "decode") => {
            for _ in 0..calls {
                black_box(&reference::TensorDescriptor::decode(black_box(&bytes)));
            }
        }
        ("ours", "encode") => {
            let d = s.ours();
            let mut out = vec![0u8; d.encoded_len()];
            for _ in 0..calls {
                black_box(&black_box(&d).encode(&mut out));
            }
        }
        ("reference", "encode") => {
            for _ in 0..calls {
                black_box(&black_box(&s.reference).encode());
            }
        }
        _ => usage(),
    }
}
