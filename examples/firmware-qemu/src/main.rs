//! hurray-core on an emulated Cortex-M4F (QEMU `mps2-an386`).
//!
//! Run it from this directory with `cargo run --release` (the runner,
//! `qemu-run`, starts QEMU and decodes the defmt log with `defmt-print`).
//! The program:
//!
//! 1. decodes the descriptors held in flash ([`cases::VALID`]) and checks
//!    what each decodes to;
//! 2. builds the rank-4 dense and the CSR ones with the core's heapless
//!    builder and checks each is byte for byte the one in flash, and that a
//!    full builder says so with a typed error;
//! 3. rejects every corrupted input of [`cases::CORRUPT`] with exactly its
//!    error;
//! 4. feeds [`cases::STREAM`] through a 256-byte [`stream::Reassembler`] split
//!    at every single point, byte by byte, and in pseudo-random chunks, and
//!    checks the sequence of decoded and rejected frames each time, plus a
//!    frame too large for the buffer;
//! 5. measures the decode path's stack high-water mark (painting) and its
//!    instructions per decode (SysTick under `-icount`);
//! 6. writes a stream and a file of five tensors, sends them to the host
//!    and decodes them on the target ([`containers`]), with their stack and
//!    instruction counts;
//! 7. checks the stack stayed clear of the MPU guard, prints one summary line
//!    and exits through semihosting: 0 when every check passed.
//!
//! Exit status: 0 all passed, 1 a check failed, 2 panic, 3 HardFault,
//! 4 stack overflow (guard hit, or the painted stack came within
//! [`stack::GUARD_MARGIN`] bytes of it), 5 bad command line.
//! With the argument `overflow` it instead recurses into the guard on
//! purpose, to show that the guard turns an overflow into exit status 4.
#![no_std]
#![no_main]

mod cases;
mod containers;
mod count;
mod stack;
mod stream;

use core::hint::black_box;

use cortex_m_rt::{ExceptionFrame, entry, exception};
use defmt_semihosting as _;

use crate::cases::{Frame, MAX_FRAME};
use crate::stream::{Reassembler, StreamError};

/// Exit statuses (see the module docs).
mod status {
    pub const PASSED: i32 = 0;
    pub const FAILED: i32 = 1;
    pub const PANIC: i32 = 2;
    pub const HARD_FAULT: i32 = 3;
    pub const STACK_OVERFLOW: i32 = 4;
    pub const USAGE: i32 = 5;
}

/// Counts checks; logs each failure.
struct Tally {
    passed: u32,
    failed: u32,
}

impl Tally {
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
            defmt::error!("FAILED: {}", what);
        }
    }
}

#[entry]
fn main() -> ! {
    // The first and only `take`: it cannot be `None`.
    let Some(mut p) = cortex_m::Peripherals::take() else {
        exit(status::FAILED)
    };
    stack::guard_on(&mut p.MPU);
    match mode() {
        Some(Mode::Run) => run(&mut p),
        Some(Mode::Overflow) => {
            defmt::info!("overflow: recursing into the stack guard on purpose");
            let depth = stack::overflow(0);
            defmt::error!(
                "recursion returned at depth {}: the guard did not fire",
                depth
            );
            exit(status::FAILED)
        }
        None => {
            defmt::error!("usage: hurray-firmware-qemu [overflow]");
            exit(status::USAGE)
        }
    }
}

enum Mode {
    Run,
    Overflow,
}

/// The mode from the semihosting command line (QEMU's `-semihosting-config arg=`).
fn mode() -> Option<Mode> {
    let Ok(args) = semihosting::experimental::env::args::<128>() else {
        return Some(Mode::Run);
    };
    let mut it = (&args).skip(1);
    match it.next() {
        None => Some(Mode::Run),
        Some(Ok("overflow")) => Some(Mode::Overflow),
        Some(_) => None,
    }
}

fn run(p: &mut cortex_m::Peripherals) -> ! {
    let mut t = Tally {
        passed: 0,
        failed: 0,
    };
    defmt::info!(
        "hurray-core on a Cortex-M4F (QEMU mps2-an386): stack {} B, its lowest {} B an MPU guard",
        stack::program_peak().1,
        stack::GUARD_LEN
    );

    flash(&mut t);
    builder(&mut t);
    corrupted(&mut t);
    streams(&mut t);
    let stack_decode = decode_stack(&mut t);
    let (dense, csr) = instructions(&mut t, &mut p.SYST);
    // Streams and files (src/containers.rs): their own checks and measurements.
    let counter = count::Counter::calibrate(&mut p.SYST);
    containers::run(&mut t, counter.as_ref());

    let (peak, size) = stack::program_peak();
    let clear = stack::clear_of_guard();
    t.check(clear, "stack stayed clear of the guard");
    defmt::println!(
        "summary: {} passed, {} failed; decode stack {} B, program stack {} of {} B; instructions: rank-4 dense {}, {} {}",
        t.passed,
        t.failed,
        stack_decode,
        peak,
        size,
        dense,
        cases::CSR_LABEL,
        csr
    );
    if !clear {
        exit(status::STACK_OVERFLOW)
    }
    exit(if t.failed == 0 {
        status::PASSED
    } else {
        status::FAILED
    })
}

/// 1. Descriptors held in flash.
fn flash(t: &mut Tally) {
    for case in &cases::VALID {
        match cases::decode(black_box(case.bytes)) {
            Ok(view) => {
                let ok = cases::matches(&view, &case.expect);
                if ok {
                    cases::log_decoded(case.name, &view);
                }
                t.check(ok, case.name);
            }
            Err(e) => {
                defmt::error!("flash: {} rejected: {}", case.name, e);
                t.check(false, case.name);
            }
        }
    }
}

/// 2. The heapless builder.
fn builder(t: &mut Tally) {
    for (index, built) in cases::build_all() {
        let case = &cases::VALID[index];
        match built {
            Ok(bytes) => {
                let same = bytes.as_slice() == case.bytes;
                defmt::info!(
                    "builder: {}: {} bytes, identical to the flash copy: {}",
                    case.name,
                    bytes.len(),
                    same
                );
                t.check(same, "builder output equals the flash descriptor");
                t.check(cases::decode(&bytes).is_ok(), "builder output decodes");
            }
            Err(e) => {
                defmt::error!("builder: {} failed: {}", case.name, e);
                t.check(false, "builder");
            }
        }
    }
    let (got, expected) = cases::builder_overflow();
    defmt::info!("builder: a dimension past capacity -> {}", got);
    t.check(got == Err(expected), "full builder reports its typed error");
}

/// 3. Corrupted inputs, each with its exact error.
fn corrupted(t: &mut Tally) {
    let mut buf = [0u8; MAX_FRAME];
    for case in &cases::CORRUPT {
        let bytes = case.apply(&mut buf);
        let got = cases::decode(black_box(bytes)).map(|_| ());
        let ok = got == Err(case.expect);
        if ok {
            defmt::info!("rejected: {} -> {}", case.name, case.expect);
        } else {
            defmt::error!("{}: expected {}, got {}", case.name, case.expect, got);
        }
        t.check(ok, case.name);
    }
}

/// The stream's bytes: every frame of [`cases::STREAM`], back to back.
fn stream_bytes() -> heapless::Vec<u8, 1024> {
    let mut out = heapless::Vec::new();
    let mut buf = [0u8; MAX_FRAME];
    for frame in &cases::STREAM {
        let bytes = match *frame {
            Frame::Valid(i) => cases::VALID[i].bytes,
            Frame::Rejected(i) => cases::CORRUPT[i].apply(&mut buf),
        };
        // The stream is a few hundred bytes: it fits.
        let _ = out.extend_from_slice(bytes);
    }
    out
}

/// What one frame of the stream turned into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Decoded, with the index in `VALID` whose bytes it equals.
    Decoded(Option<usize>),
    /// Rejected.
    Rejected(StreamError),
}

/// Feeds `bytes` in chunks whose lengths `next_len` picks; returns the
/// outcomes (at most 8) and whether the reassembler ended empty.
fn feed(
    bytes: &[u8],
    mut next_len: impl FnMut(usize) -> usize,
) -> (heapless::Vec<Outcome, 8>, bool) {
    let mut r = Reassembler::<MAX_FRAME>::new();
    let mut out = heapless::Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = next_len(rest.len()).clamp(1, rest.len());
        let (mut chunk, tail) = rest.split_at(n);
        rest = tail;
        while !chunk.is_empty() {
            let took = r.push(chunk);
            chunk = chunk.get(took..).unwrap_or(&[]);
            while let Some(item) = r.next() {
                let outcome = match item {
                    Ok(view) => Outcome::Decoded(
                        cases::VALID
                            .iter()
                            .position(|v| v.bytes == cases::frame(&view)),
                    ),
                    Err(e) => Outcome::Rejected(e),
                };
                let _ = out.push(outcome);
            }
            if took == 0 && r.pending() >= MAX_FRAME {
                return (out, false);
            }
        }
    }
    let empty = r.pending() == 0;
    (out, empty)
}

/// Whether `got` is exactly what [`cases::STREAM`] must give.
fn stream_ok(got: &(heapless::Vec<Outcome, 8>, bool)) -> bool {
    got.1
        && got.0.len() == cases::STREAM.len()
        && got.0.iter().zip(&cases::STREAM).all(|(o, f)| match *f {
            Frame::Valid(i) => *o == Outcome::Decoded(Some(i)),
            Frame::Rejected(i) => {
                *o == Outcome::Rejected(StreamError::Descriptor(cases::CORRUPT[i].expect))
            }
        })
}

/// 4. The stream, split every way.
fn streams(t: &mut Tally) {
    let bytes = stream_bytes();
    let len = bytes.len();

    // Two pieces, split at every point.
    let mut all_splits = true;
    for split in 1..len {
        let mut first = true;
        let got = feed(&bytes, |rest| {
            if core::mem::take(&mut first) {
                split
            } else {
                rest
            }
        });
        all_splits &= stream_ok(&got);
    }
    t.check(all_splits, "stream split in two at every point");

    // Pseudo-random chunks of 1..=40 bytes (xorshift32), eight seeds.
    let mut random_ok = true;
    for seed in 1..=8u32 {
        let mut x = seed.wrapping_mul(0x9E37_79B9);
        random_ok &= stream_ok(&feed(&bytes, |_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 40) as usize + 1
        }));
    }
    t.check(random_ok, "stream in random chunks, 8 seeds");
    // One byte at a time.
    let one = stream_ok(&feed(&bytes, |_| 1));
    t.check(one, "stream byte by byte");
    defmt::info!(
        "stream: {} frames in {} bytes; every two-piece split ({}): {}, 1-byte chunks: {}, random chunks: {}",
        cases::STREAM.len(),
        len,
        len - 1,
        all_splits,
        one,
        random_ok
    );

    // A frame too large for the buffer is skipped whole; the next one decodes.
    let mut big: heapless::Vec<u8, 1024> = heapless::Vec::new();
    const CLAIMED: usize = 600;
    let mut forged = [0u8; MAX_FRAME];
    let dense = cases::VALID[cases::DENSE_RANK4_INDEX].bytes;
    let _ = big.extend_from_slice(cases::with_declared_len(dense, CLAIMED as u32, &mut forged));
    let _ = big.resize(CLAIMED, 0xAA);
    let _ = big.extend_from_slice(dense);
    let got = feed(&big, |_| 7);
    let want = [
        Outcome::Rejected(StreamError::FrameTooLarge {
            needed: CLAIMED as u64,
            capacity: MAX_FRAME,
        }),
        Outcome::Decoded(Some(cases::DENSE_RANK4_INDEX)),
    ];
    let ok = got.1 && got.0.as_slice() == want;
    defmt::info!(
        "stream: frame larger than the buffer skipped, next one decoded: {}",
        ok
    );
    t.check(ok, "oversized frame skipped");
}

/// 5a. Stack high-water mark of the decode path, over every input.
fn decode_stack(t: &mut Tally) -> usize {
    let mut worst = 0;
    for case in &cases::VALID {
        let (ok, used) = stack::measure(|| cases::decode(black_box(case.bytes)).is_ok());
        defmt::info!("stack: decode {} used {} B", case.name, used);
        t.check(ok, case.name);
        worst = worst.max(used);
    }
    let mut buf = [0u8; MAX_FRAME];
    for case in &cases::CORRUPT {
        let bytes = case.apply(&mut buf);
        let (_, used) = stack::measure(|| cases::decode(black_box(bytes)).is_err());
        worst = worst.max(used);
    }
    defmt::info!(
        "stack: decode path high-water mark {} B (goal <= 1024)",
        worst
    );
    worst
}

/// 5b. Instructions per decode+validate.
fn instructions(t: &mut Tally, syst: &mut cortex_m::peripheral::SYST) -> (u32, u32) {
    let Some(counter) = count::Counter::calibrate(syst) else {
        defmt::error!(
            "instruction counter: SysTick is not linear in instructions; run QEMU with -icount shift=10"
        );
        t.check(false, "instruction counter calibrates");
        return (0, 0);
    };
    t.check(true, "instruction counter calibrates");
    defmt::info!(
        "count: {} SysTick ticks per 1000 instructions",
        counter.ticks_per_1000()
    );
    fn decode_ok(bytes: &'static [u8]) -> bool {
        cases::decode(bytes).is_ok()
    }
    let mut counts = [0u32; cases::VALID.len()];
    for (case, n) in cases::VALID.iter().zip(&mut counts) {
        let (ok, insns) = counter.count(decode_ok, case.bytes);
        // A second run must take exactly as many: the count is deterministic.
        let (_, again) = counter.count(decode_ok, case.bytes);
        defmt::info!("count: decode {} = {} instructions", case.name, insns);
        t.check(ok && insns == again, case.name);
        *n = insns;
    }
    (counts[cases::DENSE_RANK4_INDEX], counts[cases::CSR_INDEX])
}

fn exit(code: i32) -> ! {
    semihosting::process::exit(code)
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    // SAFETY: SCB's fault status registers are only read, and this handler
    // never returns, so nothing else observes them.
    let scb = unsafe { &*cortex_m::peripheral::SCB::PTR };
    let (overflow, mmfar) = stack::fault_is_overflow(scb);
    if overflow {
        defmt::error!(
            "HardFault: stack overflow into the MPU guard (fault address {=u32:#x}, pc {=u32:#x})",
            mmfar,
            frame.pc()
        );
        exit(status::STACK_OVERFLOW)
    }
    defmt::error!(
        "HardFault at pc {=u32:#x}, CFSR {=u32:#x}",
        frame.pc(),
        scb.cfsr.read()
    );
    exit(status::HARD_FAULT)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    if let Some(loc) = info.location() {
        defmt::error!("panic at {}:{}", loc.file(), loc.line());
    } else {
        defmt::error!("panic");
    }
    exit(status::PANIC)
}
