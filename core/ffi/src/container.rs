//! Files and streams through the C ABI: a file view over a caller's bytes
//! (pointer + length: an mmap, a flash region), the sans-I/O stream decoder
//! fed chunks, and the stream and file writers into a caller's buffer.
//!
//! Nothing here allocates. The decoder and the writers keep their state in
//! storage the caller owns (`hurray_stream_decoder`,
//! `hurray_stream_writer`, `hurray_file_writer`: plain structs of a fixed
//! size, checked at compile time to hold the Rust state on every target),
//! and borrow the caller's buffers for as long as they are used.
//!
//! Every check is the core's: `hurray_file_open` validates the whole file
//! (`FileView`: header, trailer, index CRC, KV, entries, every descriptor
//! and composite) before it returns; the lookups re-open the index (one
//! pass over it, no descriptor or data byte) and check the one tensor they
//! hand out, so a `hurray_file` holds no Rust state and may be copied.
//!
//! Errors: `HURRAY_E_INVALID_FILE` / `HURRAY_E_INVALID_STREAM` with the
//! absolute byte offset in `value` (and, saturated, in `offset`), the
//! stream's tensor index in `index`; `HURRAY_E_WRITER_MISUSE` when a writer
//! refuses what it was given; `HURRAY_E_OUTPUT_TOO_SMALL` when its output
//! buffer is full.

use core::mem::{align_of, size_of};

use hurray_core::TensorView;
use hurray_core::file::{
    FileError, FileIndex, FileOptions, FileWriter, IndexEntry, KvValue, Tensor, WriteError,
    WriterOptions,
};
use hurray_core::stream::{
    Event, StreamDecoder, StreamError, StreamWriter, WriteError as StreamWriteError,
};

use crate::descriptor::{hurray_read_options, hurray_tensor_view, view_of};
use crate::{
    HURRAY_E_CAPACITY_EXCEEDED, HURRAY_E_INDEX_OUT_OF_RANGE, HURRAY_E_INVALID_FILE,
    HURRAY_E_INVALID_STREAM, HURRAY_E_INVALID_VIEW, HURRAY_E_NOT_FOUND, HURRAY_E_OUTPUT_TOO_SMALL,
    HURRAY_E_WRITER_MISUSE, HURRAY_OK, fail, get, guard, hurray_error, hurray_status, input, put,
    slice_in, slice_out, tri,
};

// ---------------------------------------------------------------------------
// Files.

/// A validated hurray file over the caller's bytes (`hurray_file_open`).
/// Holds no Rust state: the lookups re-open the index from these fields.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_file {
    /// First byte of the file.
    pub bytes: *const u8,
    /// Its length.
    pub len: usize,
    /// The caller's name table (`hurray_file_table_len` slots), or null.
    pub table: *mut u32,
    /// Its slots.
    pub table_len: usize,
    /// Tensors in the index.
    pub tensor_count: u64,
    /// `data_buffer_alignment`.
    pub alignment: u32,
    /// The header's flags (`HURRAY_FILE_FLAG_*`).
    pub flags: u32,
    /// Container major version.
    pub version_major: u8,
    /// Container minor version.
    pub version_minor: u8,
}

/// One tensor of a file.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_file_tensor {
    /// Its name (UTF-8, not NUL-terminated).
    pub name: *const u8,
    /// The name's length in bytes.
    pub name_len: usize,
    /// Its validated descriptor (borrows the file's bytes).
    pub descriptor: hurray_tensor_view,
    /// Absolute offset of its descriptor.
    pub descriptor_offset: u64,
    /// Absolute offset of its first buffer.
    pub data_offset: u64,
    /// Bytes from its first buffer's start to its last one's end.
    pub data_length: u64,
}

/// The file's index carries a CRC-32C.
pub const HURRAY_FILE_FLAG_INDEX_CRC32C: u32 = 1;
/// The file's index is sorted by name.
pub const HURRAY_FILE_FLAG_SORTED_INDEX: u32 = 2;
/// The file has a KV metadata section.
pub const HURRAY_FILE_FLAG_KV_METADATA: u32 = 4;

#[allow(clippy::cast_possible_truncation)] // saturated first
const fn file_detail(e: FileError) -> hurray_error {
    let at = e.offset();
    hurray_error {
        status: HURRAY_E_INVALID_FILE,
        offset: if at > u32::MAX as u64 {
            u32::MAX
        } else {
            at as u32
        },
        index: 0,
        value: at,
        expected: 0,
    }
}

#[allow(clippy::cast_possible_truncation)] // saturated first
const fn stream_detail(e: StreamError) -> hurray_error {
    let at = e.offset();
    hurray_error {
        status: HURRAY_E_INVALID_STREAM,
        offset: if at > u32::MAX as u64 {
            u32::MAX
        } else {
            at as u32
        },
        index: e.tensor(),
        value: at,
        expected: 0,
    }
}

const fn misuse() -> hurray_error {
    hurray_error {
        status: HURRAY_E_WRITER_MISUSE,
        offset: 0,
        index: 0,
        value: 0,
        expected: 0,
    }
}

const fn status_only(status: hurray_status) -> hurray_error {
    hurray_error {
        status,
        offset: 0,
        index: 0,
        value: 0,
        expected: 0,
    }
}

/// Borrows the caller's table.
///
/// # Safety
/// `table` is null (with any `len`: no table) or points to `len` writable
/// `u32`s not otherwise accessed for `'a`.
unsafe fn table_of<'a>(table: *mut u32, len: usize) -> Result<&'a mut [u32], hurray_status> {
    if table.is_null() || len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { slice_out(table, len) }
}

/// Slots of the name table `hurray_file_open` needs for O(log n) lookups
/// and for an index in any order (twice the entry count); read after the
/// header, trailer and index bounds are checked.
///
/// # Safety
/// `bytes` addresses `len` readable bytes (or is null with `len == 0`);
/// `out` is null or storage for one `size_t`; `err` is null or storage for
/// one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_table_len(
    bytes: *const u8,
    len: usize,
    out: *mut usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: `bytes`/`len` address readable bytes (contract).
        let raw = tri!(unsafe { input(bytes, len) });
        match FileIndex::table_len(raw) {
            // SAFETY: `out` is null or storage for one `size_t` (contract).
            Ok(n) => unsafe { put(out, n) },
            // SAFETY: `err` is null or storage for one detail (contract).
            Err(e) => unsafe { fail(err, file_detail(e)) },
        }
    })
}

/// Re-opens the index of a file `hurray_file_open` accepted.
///
/// # Safety
/// `f`'s bytes and table are alive, unmodified (the bytes) and not in use
/// by another call (the table).
unsafe fn reopen<'a>(f: &hurray_file) -> Result<FileIndex<'a>, hurray_status> {
    // SAFETY: forwarded from this function's contract.
    let raw = unsafe { input(f.bytes, f.len) }?;
    // SAFETY: forwarded from this function's contract.
    let table = unsafe { table_of(f.table, f.table_len) }?;
    FileIndex::parse_with(raw, &FileOptions::STRICT, table).map_err(|_| HURRAY_E_INVALID_VIEW)
}

/// Validates a whole file — every reader rule of the file format, every
/// descriptor (strict), every composite — and fills `out`. `table` may be
/// null when the index is sorted by name, in file order, or has at most 64
/// entries; otherwise it must hold `hurray_file_table_len` slots, and is
/// used again by every lookup.
///
/// # Safety
/// `bytes` addresses `len` readable bytes that stay alive and unmodified
/// while `out` is used; `table` is null or addresses `table_len` writable
/// `u32`s kept for the file's lookups (one call at a time); `out` is null
/// or storage for one `hurray_file`; `err` is null or storage for one
/// `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_open(
    bytes: *const u8,
    len: usize,
    table: *mut u32,
    table_len: usize,
    out: *mut hurray_file,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(out));
        // SAFETY: `bytes`/`len` address readable bytes (contract).
        let raw = tri!(unsafe { input(bytes, len) });
        // SAFETY: `table` is null or `table_len` writable slots (contract).
        let slots = tri!(unsafe { table_of(table, table_len) });
        let index = match FileIndex::parse_with(raw, &FileOptions::STRICT, slots) {
            Ok(i) => i,
            // SAFETY: `err` is null or storage for one detail (contract).
            Err(e) => return unsafe { fail(err, file_detail(e)) },
        };
        let view = match index.verify() {
            Ok(v) => v,
            // SAFETY: as above.
            Err(e) => return unsafe { fail(err, file_detail(e)) },
        };
        let (version_major, version_minor) = view.version();
        let f = hurray_file {
            bytes,
            len,
            table,
            table_len,
            tensor_count: u64::from(view.len()),
            alignment: view.alignment(),
            flags: view.flags().bits(),
            version_major,
            version_minor,
        };
        // SAFETY: `out` was checked and is storage for one file (contract).
        unsafe { put(out, f) }
    })
}

fn tensor_of(t: &Tensor<'_>) -> hurray_file_tensor {
    let e = t.entry();
    hurray_file_tensor {
        name: e.name.as_ptr(),
        name_len: e.name.len(),
        descriptor: view_of(t.descriptor(), hurray_read_options::STRICT),
        descriptor_offset: e.descriptor_offset,
        data_offset: e.data_offset,
        data_length: e.data_length,
    }
}

/// Finds the tensor named `name` (`name_len` bytes of UTF-8, no NUL
/// needed): O(log n) with a sorted index or a table. `HURRAY_E_NOT_FOUND`
/// when the file has none.
///
/// # Safety
/// `file` is null or points to a file `hurray_file_open` filled, whose
/// bytes and table are still alive (and the bytes unmodified); `name`
/// addresses `name_len` readable bytes; `out` is null or storage for one
/// `hurray_file_tensor`; `err` is null or storage for one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_find(
    file: *const hurray_file,
    name: *const u8,
    name_len: usize,
    out: *mut hurray_file_tensor,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(out));
        // SAFETY: `file` is null or an initialised file (contract).
        let f = tri!(unsafe { get(file) });
        // SAFETY: `name` addresses `name_len` readable bytes (contract).
        let raw = tri!(unsafe { input(name, name_len) });
        let Ok(name) = core::str::from_utf8(raw) else {
            // SAFETY: `err` is null or storage for one detail (contract).
            return unsafe { fail(err, status_only(HURRAY_E_NOT_FOUND)) };
        };
        // SAFETY: the file's bytes and table are alive (contract).
        let index = tri!(unsafe { reopen(&f) });
        match index.get(name) {
            // SAFETY: `out` was checked and is storage for one tensor.
            Ok(Some(t)) => unsafe { put(out, tensor_of(&t)) },
            // SAFETY: `err` is null or storage for one detail (contract).
            Ok(None) => unsafe { fail(err, status_only(HURRAY_E_NOT_FOUND)) },
            Err(_) => HURRAY_E_INVALID_VIEW,
        }
    })
}

/// Tensor `i` of the file: in index order (by name when the index is
/// sorted) when `file_order` is 0, in the order of the bytes otherwise
/// (a composite's head before its members). O(n) per call.
///
/// # Safety
/// As `hurray_file_find`, without `name`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_tensor_at(
    file: *const hurray_file,
    i: u64,
    file_order: u8,
    out: *mut hurray_file_tensor,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(out));
        // SAFETY: `file` is null or an initialised file (contract).
        let f = tri!(unsafe { get(file) });
        // SAFETY: the file's bytes and table are alive (contract).
        let index = tri!(unsafe { reopen(&f) });
        let Ok(i) = usize::try_from(i) else {
            return HURRAY_E_INDEX_OUT_OF_RANGE;
        };
        let t = if file_order == 0 {
            index.iter().nth(i)
        } else {
            index.iter_file_order().nth(i)
        };
        match t {
            // SAFETY: `out` was checked and is storage for one tensor.
            Some(Ok(t)) => unsafe { put(out, tensor_of(&t)) },
            Some(Err(_)) => HURRAY_E_INVALID_VIEW,
            None => HURRAY_E_INDEX_OUT_OF_RANGE,
        }
    })
}

/// The bytes of buffer `i` (table order) of a tensor of `file`: a pointer
/// into the file's bytes and its length.
///
/// # Safety
/// `file` as in `hurray_file_find`; `tensor` is null or points to a tensor
/// of this file; `data` and `len` are null or storage for one pointer and
/// one `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_buffer(
    file: *const hurray_file,
    tensor: *const hurray_file_tensor,
    i: u32,
    data: *mut *const u8,
    len: *mut u64,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(data));
        tri!(crate::check_out(len));
        // SAFETY: `file` is null or an initialised file (contract).
        let f = tri!(unsafe { get(file) });
        // SAFETY: `tensor` is null or an initialised tensor (contract).
        let t = tri!(unsafe { get(tensor) });
        // SAFETY: the tensor's name points into the file's bytes (contract).
        let raw = tri!(unsafe { input(t.name, t.name_len) });
        let Ok(name) = core::str::from_utf8(raw) else {
            return HURRAY_E_INVALID_VIEW;
        };
        // SAFETY: the file's bytes and table are alive (contract).
        let index = tri!(unsafe { reopen(&f) });
        let Ok(Some(t)) = index.get(name) else {
            return HURRAY_E_INVALID_VIEW;
        };
        match t.buffer(i) {
            Some(b) => {
                // SAFETY: both were checked above and are storage for one value.
                unsafe { put(data, b.as_ptr()) };
                // SAFETY: as above.
                unsafe { put(len, b.len() as u64) }
            }
            None => HURRAY_E_INDEX_OUT_OF_RANGE,
        }
    })
}

// ---------------------------------------------------------------------------
// State in the caller's storage.

/// Where in `storage` (`words` 64-bit words) a `T` lies: its first address
/// aligned for `T`, and that address's distance from `storage` (recorded in
/// the magic, so that a copy of the struct to an address of another
/// alignment is refused rather than misread).
fn place<T>(storage: *mut u64, words: usize) -> Option<(*mut T, usize)> {
    let bytes = storage.cast::<u8>();
    let off = bytes.align_offset(align_of::<T>());
    let end = off.checked_add(size_of::<T>())?;
    if end > words.checked_mul(8)? {
        return None;
    }
    Some((bytes.wrapping_add(off).cast::<T>(), off))
}

/// The magic a struct holds when its state was written `off` bytes into
/// its storage.
const fn magic_at(magic: u64, off: usize) -> u64 {
    magic ^ (off as u64)
}

/// Borrows the state of type `T` placed in a caller's struct.
///
/// # Safety
/// `magic` and `storage` point into one struct; when `*magic` matches,
/// `hurray_*_init` wrote a `T` at the placed address and the caller gives
/// this call sole use of it.
unsafe fn state<'a, T>(
    magic: *const u64,
    storage: *mut u64,
    words: usize,
    expected: u64,
) -> Result<&'a mut T, hurray_status> {
    let (at, off) = place::<T>(storage, words).ok_or(HURRAY_E_INVALID_VIEW)?;
    // SAFETY: `magic` points to an aligned, initialised u64 (contract).
    if unsafe { magic.read() } != magic_at(expected, off) {
        return Err(HURRAY_E_INVALID_VIEW);
    }
    // SAFETY: the magic says a `T` was written at `at` (same offset, so the
    // struct was not moved to another alignment), inside `storage`
    // (`place` checked the bounds); sole use by this function's contract.
    Ok(unsafe { &mut *at })
}

/// Writes `value` into a caller's struct and sets its magic.
///
/// # Safety
/// `magic` and `storage` (`words` words) point into one writable struct.
unsafe fn install<T>(
    magic: *mut u64,
    storage: *mut u64,
    words: usize,
    expected: u64,
    value: T,
) -> hurray_status {
    let Some((at, off)) = place::<T>(storage, words) else {
        return HURRAY_E_INVALID_VIEW;
    };
    // SAFETY: `at` is aligned for `T` and `size_of::<T>()` bytes inside the
    // writable storage (`place` checked both).
    unsafe { at.write(value) };
    // SAFETY: `magic` points to a writable u64 of the same struct.
    unsafe { magic.write(magic_at(expected, off)) };
    HURRAY_OK
}

// ---------------------------------------------------------------------------
// The stream decoder.

type Decoder = StreamDecoder<'static, &'static mut [u8], &'static mut [u8]>;

/// 64-bit words of a `hurray_stream_decoder`'s storage.
pub const HURRAY_STREAM_DECODER_WORDS: usize = 96;
const DECODER_MAGIC: u64 = 0x6872_7279_6465_6331; // "hrrydec1"

// Room for the state at any 8-byte-aligned address (the storage's own
// alignment), aligned up to the state's alignment.
const _: () =
    assert!(size_of::<Decoder>() + align_of::<Decoder>() - 8 <= HURRAY_STREAM_DECODER_WORDS * 8);

/// A stream decoder's state, in the caller's memory (`hurray_stream_init`).
/// Opaque: only the library reads or writes it. It borrows the descriptor
/// buffer and scratch given to `hurray_stream_init`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_stream_decoder {
    /// Set by `hurray_stream_init`.
    pub magic: u64,
    /// The decoder.
    pub storage: [u64; HURRAY_STREAM_DECODER_WORDS],
}

/// What `hurray_stream_decode` found.
pub type hurray_event_kind = u32;
/// Every input byte was taken in: feed more, or call `hurray_stream_finish`.
pub const HURRAY_EVENT_NEED_MORE: hurray_event_kind = 0;
/// A descriptor was read and validated: `descriptor` (valid until the next call).
pub const HURRAY_EVENT_DESCRIPTOR: hurray_event_kind = 1;
/// Bytes of buffer `buffer` at `offset`: `data`, `len` (a slice of the input).
pub const HURRAY_EVENT_DATA: hurray_event_kind = 2;
/// The current tensor's data is complete.
pub const HURRAY_EVENT_TENSOR_END: hurray_event_kind = 3;
/// The innermost composite closed (its `members`), its rules checked.
pub const HURRAY_EVENT_COMPOSITE_END: hurray_event_kind = 4;

/// One event of the stream decoder.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_stream_event {
    /// `HURRAY_EVENT_*`.
    pub kind: hurray_event_kind,
    /// `DATA`: the buffer's index in the table.
    pub buffer: u32,
    /// `DATA`: where in the buffer `data` starts.
    pub offset: u64,
    /// `DATA`: the bytes, inside the caller's input.
    pub data: *const u8,
    /// `DATA`: how many.
    pub len: usize,
    /// `COMPOSITE_END`: its member count.
    pub members: u32,
    /// `DESCRIPTOR`: the descriptor, in the decoder's descriptor buffer.
    pub descriptor: hurray_tensor_view,
}

/// Borrows an initialised decoder.
///
/// # Safety
/// `d` is null or points to a decoder `hurray_stream_init` set up, whose
/// buffers are alive, used by no other call.
unsafe fn decoder<'a>(d: *mut hurray_stream_decoder) -> Result<&'a mut Decoder, hurray_status> {
    crate::check_out(d)?;
    // SAFETY: `d` is non-null and aligned (checked) and, by this
    // function's contract, an initialised decoder struct used by no one else.
    unsafe {
        state(
            core::ptr::addr_of!((*d).magic),
            core::ptr::addr_of_mut!((*d).storage).cast::<u64>(),
            HURRAY_STREAM_DECODER_WORDS,
            DECODER_MAGIC,
        )
    }
}

/// Sets up a stream decoder in `d`: descriptors up to `descriptor_len`
/// bytes are collected in `descriptor` (its length is the longest
/// descriptor accepted), and open composites use `scratch` (may be null
/// with 0: no partition or overlay composite).
///
/// # Safety
/// `d` is null or storage for one decoder; `descriptor` and `scratch`
/// address writable bytes that stay alive, and are touched by nothing
/// else, while the decoder is used.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_stream_init(
    d: *mut hurray_stream_decoder,
    descriptor: *mut u8,
    descriptor_len: usize,
    scratch: *mut u8,
    scratch_len: usize,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(d));
        // SAFETY: writable bytes alive while the decoder is (contract).
        let desc: &'static mut [u8] = tri!(unsafe { slice_out(descriptor, descriptor_len) });
        let scratch: &'static mut [u8] = if scratch_len == 0 {
            &mut []
        } else {
            // SAFETY: as above.
            tri!(unsafe { slice_out(scratch, scratch_len) })
        };
        let dec: Decoder = StreamDecoder::new(desc, scratch);
        // SAFETY: `d` is non-null, aligned (checked), writable storage for
        // one decoder struct (contract).
        unsafe {
            install(
                core::ptr::addr_of_mut!((*d).magic),
                core::ptr::addr_of_mut!((*d).storage).cast::<u64>(),
                HURRAY_STREAM_DECODER_WORDS,
                DECODER_MAGIC,
                dec,
            )
        }
    })
}

/// Feeds `len` input bytes: reports how many were taken (`*used`) and the
/// event found. Call again with the rest of the input until the event is
/// `HURRAY_EVENT_NEED_MORE`. The same bytes give the same events however
/// they are split. After an error the decoder stays failed.
///
/// # Safety
/// `d` as set up by `hurray_stream_init`; `input` addresses `len` readable
/// bytes (a `DATA` event points into them); `used` and `event` are storage
/// for one value each; `err` is null or storage for one `hurray_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_stream_decode(
    d: *mut hurray_stream_decoder,
    input_bytes: *const u8,
    len: usize,
    used: *mut usize,
    event: *mut hurray_stream_event,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(used));
        tri!(crate::check_out(event));
        // SAFETY: as this function's contract.
        let dec = tri!(unsafe { decoder(d) });
        // SAFETY: `input`/`len` address readable bytes (contract).
        let raw = tri!(unsafe { input(input_bytes, len) });
        let (n, ev) = match dec.decode(raw) {
            Ok(r) => r,
            // SAFETY: `err` is null or storage for one detail (contract).
            Err(e) => return unsafe { fail(err, stream_detail(e)) },
        };
        let mut out = hurray_stream_event {
            kind: HURRAY_EVENT_NEED_MORE,
            buffer: 0,
            offset: 0,
            data: core::ptr::null(),
            len: 0,
            members: 0,
            descriptor: hurray_tensor_view::EMPTY,
        };
        match ev {
            Event::Descriptor(v) => {
                out.kind = HURRAY_EVENT_DESCRIPTOR;
                out.descriptor = view_of(&v, hurray_read_options::STRICT);
            }
            Event::Data {
                buffer,
                offset,
                bytes,
            } => {
                out.kind = HURRAY_EVENT_DATA;
                out.buffer = buffer;
                out.offset = offset;
                out.data = bytes.as_ptr();
                out.len = bytes.len();
            }
            Event::TensorEnd => out.kind = HURRAY_EVENT_TENSOR_END,
            Event::CompositeEnd { members } => {
                out.kind = HURRAY_EVENT_COMPOSITE_END;
                out.members = members;
            }
            _ => {}
        }
        // SAFETY: both were checked and are storage for one value (contract).
        unsafe { put(used, n) };
        // SAFETY: as above.
        unsafe { put(event, out) }
    })
}

/// The input has ended: `HURRAY_OK` only between two top-level tensors.
///
/// # Safety
/// As `hurray_stream_decode`, for `d` and `err`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_stream_finish(
    d: *mut hurray_stream_decoder,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: as this function's contract.
        let dec = tri!(unsafe { decoder(d) });
        match dec.finish() {
            Ok(()) => HURRAY_OK,
            // SAFETY: `err` is null or storage for one detail (contract).
            Err(e) => unsafe { fail(err, stream_detail(e)) },
        }
    })
}

// ---------------------------------------------------------------------------
// The stream writer.

type SWriter = StreamWriter<&'static mut [u8], &'static mut [u8]>;

/// 64-bit words of a `hurray_stream_writer`'s storage.
pub const HURRAY_STREAM_WRITER_WORDS: usize = 76;
const SWRITER_MAGIC: u64 = 0x6872_7279_7377_7231; // "hrryswr1"

// Room for the state at any 8-byte-aligned address (the storage's own
// alignment), aligned up to the state's alignment.
const _: () =
    assert!(size_of::<SWriter>() + align_of::<SWriter>() - 8 <= HURRAY_STREAM_WRITER_WORDS * 8);

/// A stream writer's state, in the caller's memory (opaque).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_stream_writer {
    /// Set by `hurray_stream_writer_init`.
    pub magic: u64,
    /// The writer.
    pub storage: [u64; HURRAY_STREAM_WRITER_WORDS],
}

/// Borrows the slices of the caller's buffer pointers.
///
/// # Safety
/// `buffers` and `lens` address `count` values each; each buffer pointer
/// addresses its length in readable bytes. `out` has room for `count`.
unsafe fn gather(
    buffers: *const *const u8,
    lens: *const usize,
    count: usize,
    out: &mut [&[u8]; 255],
) -> Result<usize, hurray_status> {
    if count > out.len() {
        return Err(HURRAY_E_CAPACITY_EXCEEDED);
    }
    // SAFETY: forwarded from this function's contract.
    let ptrs = unsafe { slice_in(buffers, count) }?;
    // SAFETY: as above.
    let lens = unsafe { slice_in(lens, count) }?;
    for ((slot, &p), &l) in out.iter_mut().zip(ptrs).zip(lens) {
        // SAFETY: each pointer addresses its length in readable bytes.
        *slot = unsafe { input(p, l) }?;
    }
    Ok(count)
}

/// Sets up a stream writer in `w` that writes into `out` (`cap` bytes);
/// `scratch` (may be null with 0) holds open composites.
///
/// # Safety
/// `w` is null or storage for one writer; `out` and `scratch` address
/// writable bytes alive, and touched by nothing else, while `w` is used.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_stream_writer_init(
    w: *mut hurray_stream_writer,
    out: *mut u8,
    cap: usize,
    scratch: *mut u8,
    scratch_len: usize,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(w));
        // SAFETY: writable bytes alive while the writer is (contract).
        let sink: &'static mut [u8] = tri!(unsafe { slice_out(out, cap) });
        let scratch: &'static mut [u8] = if scratch_len == 0 {
            &mut []
        } else {
            // SAFETY: as above.
            tri!(unsafe { slice_out(scratch, scratch_len) })
        };
        let writer: SWriter = StreamWriter::new(sink, scratch);
        // SAFETY: `w` is non-null, aligned (checked), writable storage for
        // one writer struct (contract).
        unsafe {
            install(
                core::ptr::addr_of_mut!((*w).magic),
                core::ptr::addr_of_mut!((*w).storage).cast::<u64>(),
                HURRAY_STREAM_WRITER_WORDS,
                SWRITER_MAGIC,
                writer,
            )
        }
    })
}

/// Borrows an initialised stream writer.
///
/// # Safety
/// As `decoder`, for a writer `hurray_stream_writer_init` set up.
unsafe fn swriter<'a>(w: *mut hurray_stream_writer) -> Result<&'a mut SWriter, hurray_status> {
    crate::check_out(w)?;
    // SAFETY: as in `decoder`.
    unsafe {
        state(
            core::ptr::addr_of!((*w).magic),
            core::ptr::addr_of_mut!((*w).storage).cast::<u64>(),
            HURRAY_STREAM_WRITER_WORDS,
            SWRITER_MAGIC,
        )
    }
}

/// Writes one tensor: `view`'s descriptor, then its `count` buffers
/// (`buffers[i]`, `lens[i]` bytes, each exactly its table size). Nothing is
/// written when the buffers or the composite rules refuse it
/// (`HURRAY_E_WRITER_MISUSE`); `HURRAY_E_OUTPUT_TOO_SMALL` when the output
/// is full.
///
/// # Safety
/// `w` as set up; `view` points to a view this library produced (bytes
/// alive); `buffers` and `lens` address `count` values, each buffer its
/// length in readable bytes; `err` is null or storage for one detail.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_stream_write_tensor(
    w: *mut hurray_stream_writer,
    view: *const hurray_tensor_view,
    buffers: *const *const u8,
    lens: *const usize,
    count: usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: as this function's contract.
        let writer = tri!(unsafe { swriter(w) });
        let mut slots: [&[u8]; 255] = [&[]; 255];
        // SAFETY: as this function's contract.
        let n = tri!(unsafe { gather(buffers, lens, count, &mut slots) });
        // SAFETY: `view` points to a view whose bytes are alive (contract).
        unsafe {
            crate::descriptor::with_view(view, |v| {
                stream_write(writer, v, slots.get(..n).unwrap_or_default(), err)
            })
        }
    })
}

fn stream_write(
    w: &mut SWriter,
    v: &TensorView<'_>,
    bufs: &[&[u8]],
    err: *mut hurray_error,
) -> hurray_status {
    match w.write_tensor(v, bufs) {
        Ok(()) => HURRAY_OK,
        Err(e) => {
            let d = match e {
                StreamWriteError::SinkFull | StreamWriteError::Sink(_) => {
                    status_only(HURRAY_E_OUTPUT_TOO_SMALL)
                }
                _ => misuse(),
            };
            // SAFETY: `err` is null or storage for one detail (caller's contract).
            unsafe { fail(err, d) }
        }
    }
}

/// Checks the stream ends between tensors (no composite open) and reports
/// the bytes written.
///
/// # Safety
/// `w` as set up; `written` is storage for one `size_t`; `err` as above.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_stream_writer_finish(
    w: *mut hurray_stream_writer,
    written: *mut usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(written));
        // SAFETY: as this function's contract.
        let writer = tri!(unsafe { swriter(w) });
        if writer.finish().is_err() {
            // SAFETY: `err` is null or storage for one detail (contract).
            return unsafe { fail(err, misuse()) };
        }
        let n = usize::try_from(writer.position()).unwrap_or(usize::MAX);
        // SAFETY: checked above; storage for one `size_t` (contract).
        unsafe { put(written, n) }
    })
}

// ---------------------------------------------------------------------------
// The file writer.

type FWriter = FileWriter<'static, &'static mut [u8], &'static mut [IndexEntry<'static>]>;

/// 64-bit words of a `hurray_file_writer`'s storage.
pub const HURRAY_FILE_WRITER_WORDS: usize = 24;
/// 64-bit words of one `hurray_file_slot`.
pub const HURRAY_FILE_SLOT_WORDS: usize = 6;
const FWRITER_MAGIC: u64 = 0x6872_7279_6677_7231; // "hrryfwr1"

// Room for the state at any 8-byte-aligned address (the storage's own
// alignment), aligned up to the state's alignment.
const _: () =
    assert!(size_of::<FWriter>() + align_of::<FWriter>() - 8 <= HURRAY_FILE_WRITER_WORDS * 8);
const _: () = assert!(size_of::<IndexEntry<'static>>() <= HURRAY_FILE_SLOT_WORDS * 8);
const _: () = assert!(align_of::<IndexEntry<'static>>() <= align_of::<u64>());

/// A file writer's state, in the caller's memory (opaque).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_file_writer {
    /// Set by `hurray_file_writer_init`.
    pub magic: u64,
    /// The writer.
    pub storage: [u64; HURRAY_FILE_WRITER_WORDS],
    /// The number of slots it was given.
    pub slots: usize,
    /// The output buffer's capacity.
    pub cap: usize,
}

/// One tensor's index entry, kept by the file writer until it finishes
/// (opaque; the caller provides one per tensor to come).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_file_slot {
    /// The entry.
    pub storage: [u64; HURRAY_FILE_SLOT_WORDS],
}

/// Writer options: `alignment` (0: 4096), `sorted_index` (nonzero: write
/// the index sorted by name), `has_kv` (nonzero: a KV section follows at
/// `hurray_file_writer_finish`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_file_writer_options {
    /// `data_buffer_alignment`: 0 for the default (4096), else a power of
    /// two in 4096..=2097152.
    pub alignment: u32,
    /// Sort the index by name.
    pub sorted_index: u8,
    /// A KV section will be written.
    pub has_kv: u8,
}

/// One KV entry for `hurray_file_writer_finish`: `tag` picks the value
/// (`HURRAY_KV_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hurray_kv {
    /// The key (UTF-8, not NUL-terminated).
    pub key: *const u8,
    /// Its length.
    pub key_len: usize,
    /// `HURRAY_KV_STRING` (`bytes` as UTF-8), `_INT64` (`i`), `_UINT64`
    /// (`u`), `_FLOAT64` (`f`), `_BOOL` (`u` != 0), `_BYTES` (`bytes`).
    pub tag: u8,
    /// Signed value.
    pub i: i64,
    /// Unsigned value.
    pub u: u64,
    /// Float value.
    pub f: f64,
    /// String or bytes.
    pub bytes: *const u8,
    /// Their length.
    pub bytes_len: usize,
}

/// KV string.
pub const HURRAY_KV_STRING: u8 = 1;
/// KV signed integer.
pub const HURRAY_KV_INT64: u8 = 2;
/// KV unsigned integer.
pub const HURRAY_KV_UINT64: u8 = 3;
/// KV float.
pub const HURRAY_KV_FLOAT64: u8 = 4;
/// KV bool.
pub const HURRAY_KV_BOOL: u8 = 5;
/// KV bytes.
pub const HURRAY_KV_BYTES: u8 = 6;
/// The most KV entries `hurray_file_writer_finish` takes.
pub const HURRAY_KV_MAX: usize = 32;

/// Sets up a file writer in `w` writing into `out` (`cap` bytes), keeping
/// one index entry per tensor in `slots` (`slot_count` of them: the most
/// tensors the file can hold). Writes the header.
///
/// # Safety
/// `w` is null or storage for one writer; `options` is null (defaults) or
/// an initialised struct; `out` and `slots` address writable memory alive,
/// and touched by nothing else, while `w` is used; every name given to
/// `hurray_file_write_tensor` stays alive until `hurray_file_writer_finish`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_writer_init(
    w: *mut hurray_file_writer,
    options: *const hurray_file_writer_options,
    out: *mut u8,
    cap: usize,
    slots: *mut hurray_file_slot,
    slot_count: usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(w));
        let mut o = WriterOptions::default();
        if !options.is_null() {
            // SAFETY: non-null: an initialised struct (contract).
            let c = tri!(unsafe { get(options) });
            if c.alignment != 0 {
                o.alignment = c.alignment;
            }
            o.sorted_index = c.sorted_index != 0;
            o.has_kv = c.has_kv != 0;
        }
        // SAFETY: writable bytes alive while the writer is (contract).
        let sink: &'static mut [u8] = tri!(unsafe { slice_out(out, cap) });
        let entries: &'static mut [IndexEntry<'static>] = if slot_count == 0 {
            &mut []
        } else {
            // SAFETY: writable slots (contract), each large and aligned
            // enough for an entry (const assertions above): write a valid
            // entry into every one before viewing them as entries.
            tri!(unsafe { entries_of(slots, slot_count) })
        };
        let writer: FWriter = match FileWriter::new(sink, o, entries) {
            Ok(w) => w,
            Err(e) => {
                // SAFETY: `err` is null or storage for one detail (contract).
                return unsafe { fail(err, file_write_detail(&e)) };
            }
        };
        // SAFETY: `w` is non-null, aligned (checked), writable storage for
        // one writer struct (contract).
        unsafe {
            core::ptr::addr_of_mut!((*w).slots).write(slot_count);
            core::ptr::addr_of_mut!((*w).cap).write(cap);
            install(
                core::ptr::addr_of_mut!((*w).magic),
                core::ptr::addr_of_mut!((*w).storage).cast::<u64>(),
                HURRAY_FILE_WRITER_WORDS,
                FWRITER_MAGIC,
                writer,
            )
        }
    })
}

/// Initialises as many default entries as fit in `count` slots (at least
/// `count`: a slot is as large as an entry on every target) and views them
/// as such.
///
/// # Safety
/// `slots` addresses `count` writable slots alive for `'a`.
unsafe fn entries_of<'a>(
    slots: *mut hurray_file_slot,
    count: usize,
) -> Result<&'a mut [IndexEntry<'static>], hurray_status> {
    // SAFETY: forwarded from this function's contract (checks null,
    // alignment and size).
    let raw = unsafe { slice_out(slots, count) }?;
    let first = raw.as_mut_ptr().cast::<IndexEntry<'static>>();
    // The slots are u64-aligned, which is enough for an entry (asserted).
    let n = count.saturating_mul(size_of::<hurray_file_slot>()) / size_of::<IndexEntry<'static>>();
    for i in 0..n {
        // SAFETY: entry `i` lies inside the `count` slots (`n` entries fit
        // in their bytes) and is aligned (the array is u64-aligned, entries
        // need at most that and are laid end to end).
        unsafe { first.add(i).write(IndexEntry::default()) };
    }
    // SAFETY: `n` consecutive initialised entries (written above), in
    // memory the caller gives us sole use of for `'a`.
    Ok(unsafe { core::slice::from_raw_parts_mut(first, n) })
}

fn file_write_detail<E>(e: &WriteError<E>) -> hurray_error {
    match e {
        WriteError::Sink(_) => status_only(HURRAY_E_OUTPUT_TOO_SMALL),
        _ => misuse(),
    }
}

/// Borrows an initialised file writer.
///
/// # Safety
/// As `decoder`, for a writer `hurray_file_writer_init` set up.
unsafe fn fwriter<'a>(w: *mut hurray_file_writer) -> Result<&'a mut FWriter, hurray_status> {
    crate::check_out(w)?;
    // SAFETY: as in `decoder`.
    unsafe {
        state(
            core::ptr::addr_of!((*w).magic),
            core::ptr::addr_of_mut!((*w).storage).cast::<u64>(),
            HURRAY_FILE_WRITER_WORDS,
            FWRITER_MAGIC,
        )
    }
}

/// Writes one named tensor (its descriptor, its buffers on the file's
/// alignment). `HURRAY_E_WRITER_MISUSE` for a bad or duplicate name,
/// buffers that do not match the table, a composite rule, or more tensors
/// than slots.
///
/// # Safety
/// `w` as set up; `name` addresses `name_len` bytes alive until
/// `hurray_file_writer_finish`; `view`, `buffers`, `lens`, `count`, `err`
/// as in `hurray_stream_write_tensor`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_write_tensor(
    w: *mut hurray_file_writer,
    name: *const u8,
    name_len: usize,
    view: *const hurray_tensor_view,
    buffers: *const *const u8,
    lens: *const usize,
    count: usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        // SAFETY: as this function's contract.
        let writer = tri!(unsafe { fwriter(w) });
        // SAFETY: the name's bytes stay alive until finish (contract).
        let raw: &'static [u8] = tri!(unsafe { input(name, name_len) });
        let Ok(name) = core::str::from_utf8(raw) else {
            // SAFETY: `err` is null or storage for one detail (contract).
            return unsafe { fail(err, misuse()) };
        };
        let mut slots: [&[u8]; 255] = [&[]; 255];
        // SAFETY: as this function's contract.
        let n = tri!(unsafe { gather(buffers, lens, count, &mut slots) });
        // SAFETY: `view` points to a view whose bytes are alive (contract).
        unsafe {
            crate::descriptor::with_view(view, |v| {
                match writer.write_tensor(name, v, slots.get(..n).unwrap_or_default()) {
                    Ok(()) => HURRAY_OK,
                    // SAFETY: `err` is null or storage for one detail.
                    Err(e) => fail(err, file_write_detail(&e)),
                }
            })
        }
    })
}

/// Converts one C KV entry.
///
/// # Safety
/// The entry's pointers address their lengths in readable bytes alive for `'a`.
unsafe fn kv_of<'a>(k: &hurray_kv) -> Result<(&'a str, KvValue<'a>), hurray_status> {
    // SAFETY: forwarded from this function's contract.
    let key = unsafe { input(k.key, k.key_len) }?;
    let key = core::str::from_utf8(key).map_err(|_| HURRAY_E_WRITER_MISUSE)?;
    // SAFETY: as above.
    let bytes = || unsafe { input(k.bytes, k.bytes_len) };
    let value = match k.tag {
        HURRAY_KV_STRING => {
            KvValue::String(core::str::from_utf8(bytes()?).map_err(|_| HURRAY_E_WRITER_MISUSE)?)
        }
        HURRAY_KV_INT64 => KvValue::Int64(k.i),
        HURRAY_KV_UINT64 => KvValue::Uint64(k.u),
        HURRAY_KV_FLOAT64 => KvValue::Float64(k.f),
        HURRAY_KV_BOOL => KvValue::Bool(k.u != 0),
        HURRAY_KV_BYTES => KvValue::Bytes(bytes()?),
        _ => return Err(HURRAY_E_WRITER_MISUSE),
    };
    Ok((key, value))
}

/// Writes the KV section (`kv_count` entries, at most `HURRAY_KV_MAX`;
/// only when the options said `has_kv`), the index and the trailer, and
/// reports the file's length. The writer cannot be used afterwards.
///
/// # Safety
/// `w` as set up; `kv` addresses `kv_count` initialised entries (or is
/// null with 0); `written` is storage for one `size_t`; `err` as above.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hurray_file_writer_finish(
    w: *mut hurray_file_writer,
    kv: *const hurray_kv,
    kv_count: usize,
    written: *mut usize,
    err: *mut hurray_error,
) -> hurray_status {
    guard(|| {
        tri!(crate::check_out(written));
        // SAFETY: as this function's contract.
        let live: *mut FWriter = tri!(unsafe { fwriter(w) });
        if kv_count > HURRAY_KV_MAX {
            return HURRAY_E_CAPACITY_EXCEEDED;
        }
        // SAFETY: `kv` addresses `kv_count` entries (contract).
        let entries = tri!(unsafe { slice_in(kv, kv_count) });
        let mut pairs: [(&str, KvValue<'_>); HURRAY_KV_MAX] =
            [("", KvValue::Bool(false)); HURRAY_KV_MAX];
        for (slot, k) in pairs.iter_mut().zip(entries) {
            // SAFETY: each entry's pointers are alive (contract).
            *slot = match unsafe { kv_of(k) } {
                Ok(p) => p,
                // SAFETY: `err` is null or storage for one detail (contract).
                Err(s) => return unsafe { fail(err, status_only(s)) },
            };
        }
        // SAFETY: `live` is the writer checked above; it is moved out and
        // the magic cleared, so it is never used again.
        let writer = unsafe {
            core::ptr::addr_of_mut!((*w).magic).write(0);
            live.read()
        };
        match writer.finish(pairs.get(..kv_count).unwrap_or_default()) {
            Ok(rest) => {
                // The sink given back is the unwritten tail of the caller's buffer.
                // SAFETY: `w` points to a writer struct (checked above).
                let cap = unsafe { (*w).cap };
                let total = cap.saturating_sub(rest.len());
                // SAFETY: checked above; storage for one `size_t` (contract).
                unsafe { put(written, total) }
            }
            // SAFETY: `err` is null or storage for one detail (contract).
            Err(e) => unsafe { fail(err, file_write_detail(&e)) },
        }
    })
}
