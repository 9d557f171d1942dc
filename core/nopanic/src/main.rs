//! Link-time proof that the decoders of `hurray_core` cannot panic.
//!
//! This bare-metal program feeds opaque bytes (`core::hint::black_box`, so
//! the optimizer can assume nothing about them) to every decoding and
//! validation entry point of the core, and to the C ABI functions of
//! `hurray_ffi` built on them, and reads every accessor of what they
//! return. Its `#[panic_handler]` calls a function that exists nowhere: the
//! program links only if the optimizer removed every call to the panic
//! handler, i.e. proved that no panic is reachable from these entry points.
//! A new panic path in a decoder turns into a link error naming
//! `hurray_can_panic`. The handler is this program's own: a panic handler is
//! a global choice, made by the final artifact, never by a library.
//!
//! Build: `cargo build --release --target thumbv7em-none-eabihf`
//! (from `core/nopanic/`); CI does, and reports the `.text` size.
#![no_std]
#![no_main]

use core::hint::black_box;

use hurray_core::{BufferHandle, BufferHandleEntry, BufferTable, TensorView, interop};

/// Bytes the decoders see; `black_box` hides their value from the optimizer.
static INPUT: [u8; 1024] = [0; 1024];

/// Folds everything a decoder returns into one word, so nothing is optimized out.
#[inline(never)]
fn exercise(bytes: &[u8]) -> u64 {
    let mut acc = 0u64;
    if let Some(first) = bytes.first_chunk::<16>() {
        match BufferHandle::from_bytes(first) {
            Ok(h) => {
                acc ^= h.byte_size() ^ u64::from(h.alignment()) ^ u64::from(h.device_tag().code());
                acc ^= u64::from(h.sync_mode().code()) ^ u64::from(h.memory_class().code());
                acc ^= u64::from(h.is_address_aligned(acc));
                acc ^= h.dlpack_device_type().map_or(1, |c| c as u64);
                acc ^= h.arrow_device_type().map_or(2, |c| c as u64);
            }
            Err(_) => acc ^= 3,
        }
        acc ^= u64::from(BufferHandleEntry::from_array(*first).decode().is_ok());
    }
    match BufferTable::parse(bytes) {
        Ok(t) => {
            for h in t.iter() {
                acc = acc.wrapping_add(h.byte_size());
            }
            acc ^= t.get(acc as usize % 7).map_or(0, BufferHandle::byte_size);
        }
        Err(_) => acc ^= 5,
    }
    match TensorView::parse(bytes) {
        Ok(v) => {
            acc ^= v.element_count() ^ v.byte_offset() ^ u64::from(v.dtype().size_bytes());
            for d in v.shape() {
                acc = acc.wrapping_mul(31).wrapping_add(d);
            }
            if let Some(s) = v.strides() {
                for x in s {
                    acc = acc.wrapping_add(x as u64);
                }
            }
            for h in v.buffers() {
                acc ^= h.byte_size();
            }
            acc ^= v.data_buffer().byte_size() ^ u64::from(v.is_read_only());
            acc ^= u64::from(v.version().0) ^ v.ndim() as u64;
        }
        Err(_) => acc ^= 7,
    }
    acc ^= ffi(bytes);
    acc ^= interop::from_dlpack(acc as i32).map_or(11, |(d, m)| u64::from(d.code() ^ m.code()));
    acc ^= interop::from_arrow(acc as i32 >> 3).map_or(13, |(d, m)| u64::from(d.code() ^ m.code()));
    acc
}

/// The C ABI over the same bytes: no panic can reach the boundary either.
#[inline(never)]
fn ffi(bytes: &[u8]) -> u64 {
    use hurray_ffi::*;
    let mut handle = hurray_buffer_handle::default();
    let mut err = hurray_error::default();
    let mut view = core::mem::MaybeUninit::<hurray_tensor_view>::uninit();
    let mut table = core::mem::MaybeUninit::<hurray_table>::uninit();
    let mut dim = 0u64;
    let mut out = [0u8; 16];
    let (ptr, len) = (bytes.as_ptr(), bytes.len());
    // SAFETY: `ptr`/`len` describe a live slice, every output points to a
    // local of the right type, and `view`/`table` are only passed back to the
    // library after a successful parse initialised them.
    unsafe {
        let mut acc = hurray_handle_decode(ptr, len, &mut handle, &mut err) as u64;
        acc ^= hurray_handle_encode(&handle, out.as_mut_ptr(), out.len(), &mut err) as u64;
        if hurray_table_parse(ptr, len, table.as_mut_ptr(), &mut err) == HURRAY_OK {
            acc ^= hurray_table_get(table.as_ptr(), acc as usize % 5, &mut handle) as u64;
        }
        if hurray_tensor_parse(ptr, len, view.as_mut_ptr(), &mut err) == HURRAY_OK {
            acc ^= hurray_tensor_dim(view.as_ptr(), acc as usize % 3, &mut dim) as u64 ^ dim;
            acc ^= hurray_tensor_data_buffer(view.as_ptr(), &mut handle) as u64;
        }
        acc ^ err.value ^ handle.byte_size ^ u64::from(out[3])
    }
}

/// The entry point; never run, only linked.
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    let input = black_box(&INPUT);
    let len = black_box(input.len());
    let bytes = input.get(..len).unwrap_or(&[]);
    let result = exercise(bytes);
    black_box(result);
    loop {}
}

unsafe extern "C" {
    /// Deliberately undefined: a reference to it that survives optimization
    /// is a link error, the proof's failure.
    fn hurray_can_panic() -> !;
}

/// Calls the undefined `hurray_can_panic`, so this program links only if the
/// optimizer removed every path to the panic handler.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: the symbol does not exist, so this call never executes: the
    // program links only when no call to the panic handler remains.
    unsafe { hurray_can_panic() }
}
