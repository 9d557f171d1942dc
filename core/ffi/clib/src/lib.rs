//! # hurray-rs-clib
//!
//! The C library of hurray-rs: every function of `hurray.h`
//! (`core/ffi/include/hurray.h`, implemented by `hurray_ffi`), packed as
//! `libhurray_c.a`.
//!
//! * Hosts: `cargo build -p hurray-rs-clib --release`, then link
//!   `target/release/libhurray_c.a` with `-lpthread -ldl -lm`. The standard
//!   library supplies the panic runtime, and each exported function catches
//!   any unwind (`HURRAY_E_PANIC`).
//! * Bare-metal firmware (`target_os = "none"`): `cargo build -p
//!   hurray-rs-clib --release --target thumbv7em-none-eabihf`. A `no_std`
//!   static library must bring a `#[panic_handler]`; this crate's spins. It
//!   is never reached: every exported function is panic-free, which
//!   `core/nopanic` proves at link time.
//!
//! The panic handler is a global choice, so it lives here, in the final
//! artifact, and not in `hurray_ffi`, which Rust programs may link with
//! their own handler.
#![cfg_attr(target_os = "none", no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// Links the C ABI into the archive; its `#[unsafe(no_mangle)]` functions are
// the library's exported symbols.
pub use hurray_ffi;

/// Bare metal only: spin forever. Unreachable, since no exported function
/// can panic (`core/nopanic`).
#[cfg(target_os = "none")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        core::hint::spin_loop();
    }
}
