//! The speed race: our decoder against the format's reference decoder
//! (registry `hurray-core` 0.1.0), on the same bytes, in one process.
//!
//! Run: `cargo run --release --example race` (a benchmark, not a test: the
//! figures go to `docs/perf.md`; the allocation counts are asserted by
//! `tests/allocations.rs`).
//!
//! Inputs: the reference's own benchmark shapes (`tests/differential/
//! shapes.rs`: dense row-major float32 [256, 256], per-block-affine int4
//! [256, 256] with its quantization section, a CSR float32 1024 × 1024
//! with 4 non-zeros per row, a strided float32 rank-8 tensor), built by both
//! encoders (which must write the same bytes), and every descriptor of the
//! shared public corpus (`../shared/conformance`, or the directory or
//! manifest `HURRAY_CONFORMANCE_DIR` names).
//!
//! For each input: decode + validate with both (ours `TensorView::parse`,
//! theirs `TensorDescriptor::decode`, whose value is dropped each time), in
//! interleaved rounds; the best round's nanoseconds per descriptor of each,
//! their ratio, and the heap allocations of one decode of each (a counting
//! global allocator, off while timing). Then the same for encoding the
//! benchmark shapes (ours into a reused buffer, including the check of its
//! values by the parser's rules; theirs into a new `Vec`, as its API returns).
//!
//! `race calls N decode|encode ours|theirs INDEX` runs exactly N calls of
//! one side on one input (the order above) and prints nothing: for
//! instruction counts under callgrind, which do not move with the load.

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../tests/differential/shapes.rs"]
mod shapes;

#[allow(dead_code, unreachable_pub, missing_docs, unsafe_code)]
#[path = "../tests/differential/counting.rs"]
mod counting;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hurray::TensorView;

/// Interleaved rounds per measurement; the best one counts.
const ROUNDS: usize = 21;
/// Time one side of one round should take.
const ROUND: Duration = Duration::from_millis(4);

/// Nanoseconds per call of `f`, best of [`ROUNDS`], for each of two
/// closures run in alternation.
fn race(mut ours: impl FnMut(), mut theirs: impl FnMut()) -> (f64, f64) {
    let iterations = |f: &mut dyn FnMut()| {
        let mut n = 1u32;
        loop {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            if t.elapsed() >= ROUND / 4 || n >= 1 << 24 {
                let per = t.elapsed().as_secs_f64() / f64::from(n);
                return ((ROUND.as_secs_f64() / per).ceil() as u32).max(1);
            }
            n *= 2;
        }
    };
    let (n_ours, n_theirs) = (iterations(&mut ours), iterations(&mut theirs));
    let time = |f: &mut dyn FnMut(), n: u32| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_secs_f64() * 1e9 / f64::from(n)
    };
    let (mut best_ours, mut best_theirs) = (f64::MAX, f64::MAX);
    for _ in 0..ROUNDS {
        best_ours = best_ours.min(time(&mut ours, n_ours));
        best_theirs = best_theirs.min(time(&mut theirs, n_theirs));
    }
    (best_ours, best_theirs)
}

/// The shared corpus' descriptors, as `(file stem, bytes)`.
fn shared_corpus() -> Vec<(String, Vec<u8>)> {
    let manifest = match std::env::var_os("HURRAY_CONFORMANCE_DIR") {
        Some(d) => {
            let p = PathBuf::from(d);
            if p.is_file() {
                p
            } else {
                p.join("manifest.json")
            }
        }
        None => {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/manifest.json")
        }
    };
    let Ok(text) = std::fs::read(&manifest) else {
        eprintln!(
            "no shared corpus at {} (set HURRAY_CONFORMANCE_DIR)",
            manifest.display()
        );
        return Vec::new();
    };
    let json: serde_json::Value = serde_json::from_slice(&text).expect("a conformance manifest");
    let dir = manifest.parent().expect("a manifest lies in a directory");
    json["descriptors"]
        .as_array()
        .expect("a descriptors list")
        .iter()
        .map(|d| {
            let file = d["file"].as_str().expect("a file name");
            let stem = file
                .rsplit('/')
                .next()
                .unwrap_or(file)
                .trim_end_matches(".bin");
            let bytes = std::fs::read(dir.join(file)).expect("a readable vector");
            (stem.to_owned(), bytes)
        })
        .collect()
}

struct Row {
    name: String,
    bytes: usize,
    ours_ns: f64,
    theirs_ns: f64,
    ours_allocs: u64,
    theirs_allocs: u64,
}

fn print(title: &str, rows: &[Row]) {
    println!("\n{title}");
    println!(
        "| {:<28} | {:>5} | {:>8} | {:>9} | {:>6} | {:>11} | {:>10} |",
        "input", "bytes", "ours ns", "theirs ns", "ratio", "ours allocs", "their allocs"
    );
    println!(
        "|{:-<30}|{:->7}|{:->10}|{:->11}|{:->8}|{:->13}|{:->12}|",
        "", "", "", "", "", "", ""
    );
    for r in rows {
        println!(
            "| {:<28} | {:>5} | {:>8.1} | {:>9.1} | {:>5.2}x | {:>11} | {:>10} |",
            r.name,
            r.bytes,
            r.ours_ns,
            r.theirs_ns,
            r.theirs_ns / r.ours_ns,
            r.ours_allocs,
            r.theirs_allocs
        );
    }
}

fn main() {
    let shapes = shapes::race_shapes();
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    for s in &shapes {
        let ours = s.encode_ours().expect("our encoder accepts the shape");
        let theirs = s
            .reference
            .encode()
            .expect("the reference encodes its shape");
        assert!(
            ours == theirs,
            "{}: the two encoders write different bytes",
            s.name
        );
        inputs.push((s.name.to_owned(), ours));
    }
    inputs.extend(shared_corpus());

    // `race calls N (decode|encode) (ours|theirs) INDEX`: exactly N calls of
    // one side on one input and nothing else, for counting instructions
    // under `valgrind --tool=callgrind` (the difference between two N is
    // independent of the machine's load).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, n, op, side, i] = &args[..] {
        assert_eq!(
            mode, "calls",
            "usage: race [calls N decode|encode ours|theirs INDEX]"
        );
        let n: u32 = n.parse().expect("a call count");
        let i: usize = i.parse().expect("an input index");
        let d = shapes.get(i).map(shapes::Shape::ours);
        let mut out = [0u8; 512];
        for _ in 0..n {
            match (op.as_str(), side.as_str()) {
                ("decode", "ours") => {
                    let _ = black_box(TensorView::parse(black_box(&inputs[i].1)));
                }
                ("decode", "theirs") => {
                    let _ = black_box(reference::TensorDescriptor::decode(black_box(&inputs[i].1)));
                }
                ("encode", "ours") => {
                    let _ = black_box(black_box(d.as_ref().expect("a shape")).encode(&mut out));
                }
                ("encode", "theirs") => {
                    let _ = black_box(black_box(&shapes[i].reference).encode());
                }
                _ => panic!("unknown operation {op} {side}"),
            }
        }
        return;
    }

    let mut decode = Vec::new();
    for (name, bytes) in &inputs {
        TensorView::parse(bytes).unwrap_or_else(|e| panic!("{name}: we reject it: {e}"));
        reference::TensorDescriptor::decode(bytes)
            .unwrap_or_else(|e| panic!("{name}: the reference rejects it: {e:?}"));
        let (_, ours_allocs) = counting::count(|| TensorView::parse(black_box(bytes)).is_ok());
        let (_, theirs_allocs) =
            counting::count(|| reference::TensorDescriptor::decode(black_box(bytes)).is_ok());
        counting::ON.store(false, Ordering::Relaxed);
        let (ours_ns, theirs_ns) = race(
            || {
                black_box(&TensorView::parse(black_box(bytes)));
            },
            || {
                black_box(&reference::TensorDescriptor::decode(black_box(bytes)));
            },
        );
        decode.push(Row {
            name: name.clone(),
            bytes: bytes.len(),
            ours_ns,
            theirs_ns,
            ours_allocs,
            theirs_allocs,
        });
    }

    let mut encode = Vec::new();
    for s in &shapes {
        let d = s.ours();
        let mut out = vec![0u8; d.encoded_len()];
        let (_, ours_allocs) = counting::count(|| d.encode(&mut out).is_ok());
        let (_, theirs_allocs) = counting::count(|| s.reference.encode().is_ok());
        counting::ON.store(false, Ordering::Relaxed);
        let (ours_ns, theirs_ns) = race(
            || {
                black_box(&black_box(&d).encode(&mut out));
            },
            || {
                black_box(&black_box(&s.reference).encode());
            },
        );
        encode.push(Row {
            name: s.name.to_owned(),
            bytes: out.len(),
            ours_ns,
            theirs_ns,
            ours_allocs,
            theirs_allocs,
        });
    }

    println!(
        "race: ours (hurray-rs-core) vs theirs (reference hurray-core 0.1.0), best of {ROUNDS} \
         interleaved rounds of ~{} ms each; ratio = theirs / ours",
        ROUND.as_millis()
    );
    print("decode + validate, ns per descriptor", &decode);
    print("encode, ns per descriptor", &encode);
    let slowest = decode
        .iter()
        .map(|r| r.theirs_ns / r.ours_ns)
        .fold(f64::MAX, f64::min);
    let allocating = decode.iter().filter(|r| r.ours_allocs > 0).count();
    println!(
        "\ngoal (decode: ours >= 3x faster on every input, zero allocations): {} \
         (lowest ratio {slowest:.2}x; {allocating} inputs where we allocate)",
        if slowest >= 3.0 && allocating == 0 {
            "met"
        } else {
            "NOT met"
        }
    );
}
