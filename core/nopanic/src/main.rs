//! Link-time proof that the decoders of `hurray_core` cannot panic.
//!
//! This bare-metal program feeds opaque bytes (`core::hint::black_box`, so
//! the optimizer can assume nothing about them) to every decoding and
//! validation entry point of the core — buffer handles, buffer tables, the
//! tensor descriptor with every reader option, the DLPack/Arrow mapping —
//! and to the C ABI functions of `hurray_ffi` built on them, and reads every
//! accessor of what they return: header fields, every layout's fields, the
//! tiled levels, every optional section — and to the network protocol's
//! codec and both session machines (`hurray_core::net`). Its `#[panic_handler]` calls a
//! function that exists nowhere: the program links only if the optimizer
//! removed every call to the panic handler, i.e. proved that no panic is
//! reachable from these entry points. A new panic path in a decoder turns
//! into a link error naming `hurray_can_panic`. The handler is this
//! program's own: a panic handler is a global choice, made by the final
//! artifact, never by a library.
//!
//! With the `encoders` feature it also feeds opaque values to every encoder
//! (`TensorDescriptor`, `DescriptorBuilder`, `BufferTable::encode`, the
//! handle constructors and the C encoders), which must be panic-free too.
//!
//! Build: `cargo build --release --target thumbv7em-none-eabihf`
//! (from `core/nopanic/`; add `--features encoders` for the encoders); CI
//! builds both and reports the default (decode path) build's `.text` size.
#![no_std]
#![no_main]

use core::hint::black_box;

use hurray_core::interop;
use hurray_core::{
    BufferHandle, BufferHandleEntry, BufferTable, Layout, Packing, ReadOptions, Scheme, TensorView,
};

/// Bytes the decoders see; `black_box` hides their value from the optimizer.
static INPUT: [u8; 1024] = [0; 1024];

/// Mixes a value into the accumulator.
#[inline(always)]
fn mix(acc: &mut u64, v: u64) {
    *acc = acc.wrapping_mul(31).wrapping_add(v);
}

/// Everything a handle exposes.
#[inline(never)]
fn handle(acc: &mut u64, h: BufferHandle) {
    mix(acc, h.byte_size() ^ u64::from(h.alignment()));
    mix(acc, u64::from(h.device_tag().code() ^ h.sync_mode().code()));
    mix(
        acc,
        u64::from(h.memory_class().code()) ^ u64::from(h.is_empty()),
    );
    mix(acc, u64::from(h.is_address_aligned(*acc)));
    mix(
        acc,
        u64::from(h.device_tag().is_private() ^ h.device_tag().allows(h.memory_class())),
    );
    mix(acc, h.dlpack_device_type().map_or(1, |c| c as u64));
    mix(acc, h.arrow_device_type().map_or(2, |c| c as u64));
    mix(
        acc,
        h.device_tag().name().len() as u64 ^ h.memory_class().name().len() as u64,
    );
    mix(
        acc,
        u64::from(h.to_bytes()[7]) ^ u64::from(h.to_entry().reserved),
    );
}

/// Every field of a layout.
#[inline(never)]
fn layout(acc: &mut u64, l: Layout<'_>) {
    mix(
        acc,
        u64::from(l.tag()) ^ l.name().len() as u64 ^ l.nnz().unwrap_or(3),
    );
    match l {
        Layout::Strided(s) => s.iter().for_each(|x| mix(acc, x as u64)),
        Layout::Tiled(t) => {
            mix(acc, u64::from(t.depth()));
            for level in t.levels() {
                mix(acc, u64::from(level.outer_layout ^ level.inner_layout));
                level.tile_shape.iter().for_each(|x| mix(acc, x));
                for s in [level.outer_strides, level.inner_strides]
                    .into_iter()
                    .flatten()
                {
                    s.iter().for_each(|x| mix(acc, x as u64));
                }
            }
        }
        Layout::Morton(bits) => bits.iter().for_each(|b| mix(acc, u64::from(b))),
        Layout::Coo(c) => mix(acc, c.nnz ^ u64::from(c.sorted)),
        Layout::Csr(c) | Layout::Csc(c) => mix(acc, c.nnz),
        Layout::Csf(c) => {
            mix(acc, c.nnz());
            c.mode_order().iter().for_each(|m| mix(acc, u64::from(m)));
        }
        Layout::BlockPaged(b) => {
            mix(
                acc,
                u64::from(b.page_size) ^ b.num_pages ^ u64::from(b.num_seqs),
            );
            mix(
                acc,
                u64::from(b.kv_role.code()) ^ u64::from(b.layer_index.unwrap_or(5)),
            );
            mix(acc, b.index_width() ^ b.slots().unwrap_or(7));
        }
        Layout::Composite(h) => {
            mix(acc, u64::from(h.rule.code() ^ h.combine_op.code()));
            mix(acc, u64::from(h.member_count));
        }
        Layout::Hilbert(h) => mix(acc, u64::from(h.order ^ h.rank) ^ h.side().unwrap_or(9)),
        Layout::Extension(e) => {
            mix(acc, u64::from(e.tag()) ^ e.id());
            e.data().iter().for_each(|b| mix(acc, u64::from(*b)));
        }
        _ => mix(acc, 11),
    }
}

/// Every accessor of a validated descriptor.
#[inline(never)]
fn view(acc: &mut u64, v: &TensorView<'_>) {
    mix(
        acc,
        v.as_bytes().len() as u64 ^ u64::from(v.header().rank.get()),
    );
    let (major, minor) = v.version();
    mix(acc, u64::from(major ^ minor) ^ u64::from(v.flags().bits()));
    let t = v.element_type();
    mix(acc, u64::from(t.code()) ^ u64::from(t.bits().unwrap_or(13)));
    mix(
        acc,
        u64::from(t.natural_alignment()) ^ t.name().len() as u64,
    );
    mix(acc, t.storage_bytes(*acc).unwrap_or(17));
    mix(
        acc,
        interop::to_dlpack_dtype(t).map_or(19, |(c, b, l)| u64::from(c ^ b) ^ u64::from(l)),
    );
    mix(
        acc,
        match v.packing() {
            Packing::Bytes(n) => u64::from(n),
            Packing::Bits(b) => u64::from(b),
            Packing::SixBitGroups => 6,
        },
    );
    mix(acc, v.packing().bytes_for(*acc).unwrap_or(23));
    mix(acc, u64::from(v.rank()) ^ u64::from(v.is_dynamic()));
    v.shape().iter().for_each(|n| mix(acc, n));
    mix(acc, v.shape().get(*acc as usize % 3).unwrap_or(29));
    mix(acc, v.element_count().unwrap_or(31) ^ v.byte_offset());
    layout(acc, v.layout());
    for h in v.buffers() {
        handle(acc, h);
    }
    if let Some(q) = v.quantization() {
        let s = q.scheme;
        mix(
            acc,
            u64::from(s.tag()) ^ u64::from(q.padding) ^ s.name().len() as u64,
        );
        mix(acc, s.encoded_len() as u64);
        let (scale, zero) = s.parameter_buffers();
        mix(acc, u64::from(scale.unwrap_or(37) ^ zero.unwrap_or(41)));
        mix(acc, s.blocks().map_or(43, |(a, b)| u64::from(a ^ b)));
        match s {
            Scheme::PerTensor { scale, zero_point } => {
                mix(acc, u64::from(scale.to_bits()) ^ zero_point as u64);
            }
            Scheme::PerBlock { scale_type, .. } => mix(acc, u64::from(scale_type.code())),
            Scheme::Private {
                version,
                flags,
                payload,
                ..
            } => {
                mix(acc, u64::from(version) ^ u64::from(flags));
                payload.iter().for_each(|b| mix(acc, u64::from(*b)));
            }
            _ => mix(acc, 47),
        }
    }
    if let Some(s) = v.shard() {
        s.parent_shape.iter().for_each(|n| mix(acc, n));
        s.shard_offset.iter().for_each(|n| mix(acc, n));
    }
    if let Some(s) = v.statistics() {
        mix(acc, u64::from(s.mask()) ^ s.nnz().unwrap_or(53));
        mix(acc, s.sparsity_ratio().map_or(59, f64::to_bits));
        mix(
            acc,
            s.value_range()
                .map_or(61, |(a, b, c)| a.to_bits() ^ b.to_bits() ^ c.to_bits()),
        );
        mix(
            acc,
            s.value_stats()
                .map_or(67, |(a, b)| a.to_bits() ^ b.to_bits()),
        );
        mix(acc, s.nm_sparsity().map_or(71, |(n, m)| u64::from(n ^ m)));
        mix(
            acc,
            s.nan_inf().map_or(73, |(n, i)| u64::from(n) ^ u64::from(i)),
        );
    }
    if let Some(e) = v.extension_type() {
        mix(
            acc,
            u64::from(e.bit_width()) ^ u64::from(e.is_float()) ^ u64::from(e.is_signed()),
        );
        mix(acc, u64::from(e.entry().exponent_bias.get()));
    }
    mix(acc, v.member_role().map_or(79, |r| u64::from(r.code())));
    let mut strides = [0i64; 64];
    if let Some(s) = v.strides(&mut strides) {
        s.iter().for_each(|x| mix(acc, *x as u64));
    }
    // The field walker (name, byte range, value of every field).
    v.for_each_field(|f| {
        let range = f.range();
        let value = f.value.as_u64().unwrap_or(f.bytes.len() as u64);
        mix(
            acc,
            (range.start ^ range.end) as u64 ^ f.path.name.len() as u64 ^ value,
        );
    });
}

/// Folds everything a decoder returns into one word, so nothing is optimized out.
#[inline(never)]
fn exercise(bytes: &[u8], ids: &[u64]) -> u64 {
    let mut acc = 0u64;
    if let Some(first) = bytes.first_chunk::<16>() {
        match BufferHandle::from_bytes(first) {
            Ok(h) => handle(&mut acc, h),
            Err(_) => mix(&mut acc, 3),
        }
        mix(
            &mut acc,
            u64::from(BufferHandleEntry::from_array(*first).decode().is_ok()),
        );
    }
    match BufferTable::parse(bytes) {
        Ok(t) => {
            for h in t.iter().rev() {
                handle(&mut acc, h);
            }
            let size = t.get(acc as usize % 7).map_or(0, BufferHandle::byte_size);
            mix(&mut acc, size);
            mix(
                &mut acc,
                t.len() as u64 ^ t.entries().len() as u64 ^ t.as_bytes().len() as u64,
            );
        }
        Err(e) => mix(&mut acc, u64::from(e.offset())),
    }
    let permissive = ReadOptions::STRICT
        .with_extension_layouts(ids)
        .with_private_schemes()
        .with_private_composition_rules();
    match TensorView::parse(bytes) {
        Ok(v) => view(&mut acc, &v),
        Err(e) => mix(&mut acc, u64::from(e.offset())),
    }
    match TensorView::parse_with(bytes, &permissive) {
        Ok(v) => view(&mut acc, &v),
        Err(e) => mix(&mut acc, u64::from(e.offset())),
    }
    // A stream: descriptors back to back until one fails.
    let mut rest = bytes;
    while let Ok((v, next)) = TensorView::parse_prefix_with(rest, &permissive) {
        view(&mut acc, &v);
        rest = next;
    }
    if let Ok((v, _)) = TensorView::parse_prefix(bytes) {
        view(&mut acc, &v);
    }
    mix(&mut acc, ffi(bytes, ids));
    #[cfg(feature = "files")]
    mix(&mut acc, ffi_containers(bytes));
    mix(&mut acc, stream(bytes, black_box(7)));
    mix(&mut acc, net(bytes));
    let code = acc as i32;
    mix(
        &mut acc,
        interop::from_dlpack(code).map_or(11, |(d, m)| u64::from(d.code() ^ m.code())),
    );
    mix(
        &mut acc,
        interop::from_arrow(code >> 3).map_or(13, |(d, m)| u64::from(d.code() ^ m.code())),
    );
    let [c, b, l0, l1] = code.to_le_bytes();
    mix(
        &mut acc,
        interop::from_dlpack_dtype(c, b, u16::from_le_bytes([l0, l1]))
            .map_or(17, |t| u64::from(t.code())),
    );
    acc
}

/// The stream decoder over the same bytes, in chunks of a size the
/// optimizer cannot see, through `decode` (borrowed events) and `step`
/// (the std shells' path), with limits, then the end of the input.
#[inline(never)]
fn stream(bytes: &[u8], chunk: usize) -> u64 {
    use hurray_core::stream::{Event, Step, StreamDecoder, StreamLimits};
    let mut acc = 0u64;
    let (mut desc, mut scratch) = ([0u8; 512], [0u8; 256]);
    let limits = StreamLimits::DEFAULT
        .max_buffer_bytes(black_box(1 << 20))
        .max_total_bytes(black_box(1 << 30))
        .require_producer_synced();
    let mut dec = StreamDecoder::with_limits(&mut desc[..], &mut scratch[..], limits);
    'feed: for piece in bytes.chunks(chunk.max(1)) {
        let mut input = piece;
        loop {
            mix(&mut acc, u64::from(dec.ready(input)));
            match dec.decode(input) {
                Ok((used, event)) => {
                    input = input.get(used..).unwrap_or_default();
                    match event {
                        Event::NeedMore => break,
                        Event::Descriptor(v) => view(&mut acc, &v),
                        Event::Data {
                            buffer,
                            offset,
                            bytes,
                        } => mix(
                            &mut acc,
                            u64::from(buffer)
                                ^ offset
                                ^ bytes.len() as u64
                                ^ u64::from(bytes.first().copied().unwrap_or(0)),
                        ),
                        Event::TensorEnd => mix(&mut acc, 1),
                        Event::CompositeEnd { members } => mix(&mut acc, u64::from(members)),
                        _ => mix(&mut acc, 2),
                    }
                }
                Err(e) => {
                    mix(&mut acc, e.offset() ^ e.tensor());
                    break 'feed;
                }
            }
        }
    }
    mix(
        &mut acc,
        dec.finish().map_or(5, |()| 6) ^ dec.position() ^ dec.tensors(),
    );
    mix(&mut acc, dec.depth() as u64);
    let (mut desc, mut scratch) = ([0u8; 256], [0u8; 64]);
    let mut dec = StreamDecoder::new(&mut desc, &mut scratch);
    let mut input = bytes;
    while let Ok((used, step)) = dec.step(input) {
        input = input.get(used..).unwrap_or_default();
        match step {
            Step::NeedMore => break,
            Step::Descriptor => {
                if let Some(v) = dec.current() {
                    view(&mut acc, &v);
                }
            }
            Step::Data { len, .. } => mix(&mut acc, len as u64),
            _ => mix(&mut acc, 7),
        }
    }
    mix(&mut acc, dec.finish().map_or(8, |()| 9));
    acc
}

/// The C ABI's file view and stream decoder over the same bytes (with the
/// core's file decoders, feature `files`).
#[cfg(feature = "files")]
#[inline(never)]
fn ffi_containers(bytes: &[u8]) -> u64 {
    use hurray_ffi::*;
    let mut err = hurray_error::default();
    let (ptr, len) = (bytes.as_ptr(), bytes.len());
    let mut table = [0u32; 16];
    let mut n = 0usize;
    let mut file = core::mem::MaybeUninit::<hurray_file>::uninit();
    let mut tensor = core::mem::MaybeUninit::<hurray_file_tensor>::uninit();
    let mut dec = hurray_stream_decoder {
        magic: 0,
        storage: [0; HURRAY_STREAM_DECODER_WORDS],
    };
    let mut desc = [0u8; 256];
    let mut scratch = [0u8; 64];
    let mut event = core::mem::MaybeUninit::<hurray_stream_event>::uninit();
    let (mut data, mut size) = (core::ptr::null::<u8>(), 0u64);
    // SAFETY: `ptr`/`len` describe a live slice; every output points to a
    // local of the right type; `file`, `tensor` and `event` are read only
    // after a call returned `HURRAY_OK` (which initialised them); the
    // decoder's buffers outlive it.
    unsafe {
        let mut acc = hurray_file_table_len(ptr, len, &mut n, &mut err) as u64;
        let t = table.len().min(n);
        if hurray_file_open(ptr, len, table.as_mut_ptr(), t, file.as_mut_ptr(), &mut err)
            == HURRAY_OK
        {
            let f = file.as_ptr();
            acc ^= hurray_file_find(f, ptr, len.min(8), tensor.as_mut_ptr(), &mut err) as u64;
            if hurray_file_tensor_at(f, acc % 3, (acc & 1) as u8, tensor.as_mut_ptr()) == HURRAY_OK
            {
                acc ^=
                    hurray_file_buffer(f, tensor.as_ptr(), 0, &mut data, &mut size) as u64 ^ size;
            }
        }
        acc ^= hurray_stream_init(
            &mut dec,
            desc.as_mut_ptr(),
            desc.len(),
            scratch.as_mut_ptr(),
            scratch.len(),
        ) as u64;
        let mut input = bytes;
        while !input.is_empty() {
            let step = 1 + (acc as usize % 7);
            let chunk = input.get(..step).unwrap_or(input);
            input = input.get(step..).unwrap_or(&[]);
            let mut at = chunk;
            let mut used = 0usize;
            while hurray_stream_decode(
                &mut dec,
                at.as_ptr(),
                at.len(),
                &mut used,
                event.as_mut_ptr(),
                &mut err,
            ) == HURRAY_OK
            {
                let e = event.as_ptr();
                acc ^= u64::from((*e).kind) ^ (*e).offset;
                at = at.get(used..).unwrap_or(&[]);
                if (*e).kind == HURRAY_EVENT_NEED_MORE {
                    break;
                }
            }
        }
        acc ^= hurray_stream_finish(&mut dec, &mut err) as u64;
        acc ^ err.value ^ n as u64
    }
}

/// The network codec and both session machines over the same bytes: every
/// decoder, every field of what they return, and a server and a client
/// session fed the bytes as messages, with their timers and control queue.
#[inline(never)]
fn net(bytes: &[u8]) -> u64 {
    use hurray_core::net::*;
    let mut acc = 0u64;
    let max = black_box(4096u32);
    let mut rest = bytes;
    while let Ok(Status::Complete(frame)) = Frame::parse(rest, max) {
        mix(
            &mut acc,
            u64::from(frame.message_type() ^ frame.stream_id()),
        );
        match Message::decode(&frame) {
            Ok(m) => mix(&mut acc, message(&m)),
            Err(e) => mix(
                &mut acc,
                u64::from(e.offset()) ^ e.kind().error_code().code() as u64,
            ),
        }
        rest = rest.get(frame.len()..).unwrap_or(&[]);
    }
    if let Ok(Status::Partial { needed }) = Frame::parse(bytes, max) {
        mix(&mut acc, needed as u64);
    }
    // Each payload decoder on its own.
    let p = bytes.get(12..).unwrap_or(&[]);
    for kind in 1..=13u32 {
        if let Some(t) = MessageType::from_code(kind) {
            match Message::decode_payload(t, p) {
                Ok(m) => mix(&mut acc, message(&m)),
                Err(e) => mix(&mut acc, u64::from(e.offset())),
            }
        }
    }
    if let Ok(list) = LayoutList::parse(black_box(3), p) {
        for e in list.iter() {
            mix(&mut acc, u64::from(e.tag) ^ e.ext_metadata.len() as u64);
        }
    }
    let mut shards = [None, None];
    if let Ok(m) = DescriptorMessage::decode(p) {
        shards = [Some(m), Some(m)];
    }
    if let [Some(a), Some(b)] = shards {
        mix(&mut acc, check_shards(&[a, b]).map_or(19, |()| 23));
    }
    mix(&mut acc, sessions(bytes));
    acc
}

/// Every field of a decoded message.
#[inline(never)]
fn message(m: &hurray_core::net::Message<'_>) -> u64 {
    use hurray_core::net::Message;
    let mut acc = u64::from(m.message_type().code()) ^ m.payload_len() as u64;
    match m {
        Message::ClientHello(h) | Message::ServerHello(h) => {
            mix(&mut acc, u64::from(h.protocol_version ^ h.max_message_size));
            mix(&mut acc, h.capabilities.bits() ^ h.devices.len() as u64);
            mix(
                &mut acc,
                u64::from(h.accepts_memory_class(2) ^ h.lists_device(1)),
            );
            for e in h.layouts.iter() {
                mix(&mut acc, u64::from(e.tag) ^ e.ext_metadata.len() as u64);
            }
        }
        Message::TensorRequest(r) => {
            mix(&mut acc, r.key.len() as u64 ^ u64::from(r.min_alignment));
            mix(
                &mut acc,
                u64::from(r.flags.bits() ^ u32::from(r.preferred_device)),
            );
            mix(&mut acc, u64::from(r.preferred_layouts.contains_tag(2)));
        }
        Message::TensorDescriptor(d) => {
            view(&mut acc, &d.descriptor);
            mix(
                &mut acc,
                d.total_data_bytes ^ u64::from(d.shard_index ^ d.total_shards),
            );
            mix(&mut acc, u64::from(d.member_count()));
        }
        Message::TensorPut(p) => {
            view(&mut acc, &p.descriptor);
            mix(&mut acc, p.key.len() as u64 ^ p.total_data_bytes);
        }
        Message::TensorData(d) => mix(&mut acc, d.offset ^ d.end().unwrap_or(5)),
        Message::Error(e) => mix(&mut acc, u64::from(e.code.code()) ^ e.text.len() as u64),
        Message::Ping(t) | Message::Pong(t) => mix(&mut acc, t.0),
        Message::RdmaRegister(r) => mix(&mut acc, r.remote_addr ^ r.length ^ r.rkey.len() as u64),
        _ => {}
    }
    acc
}

/// A server and a client session fed `bytes` as received messages.
#[inline(never)]
fn sessions(bytes: &[u8]) -> u64 {
    use hurray_core::net::*;
    let hello = Hello {
        protocol_version: PROTOCOL_VERSION,
        max_message_size: black_box(2048),
        capabilities: Capabilities::PARALLEL_STREAMS,
        layouts: LayoutList::EMPTY,
        devices: &[0],
        memory_classes: &[],
    };
    let t = black_box(100u64);
    let mut out = [0u8; 512];
    let mut acc = 0u64;
    let mut server = ServerSession::<4>::new(
        ServerConfig {
            hello,
            handshake_timeout: t,
            idle_timeout: t,
            request_timeout: t,
        },
        0,
    );
    let mut client = ClientSession::<4>::new(
        ClientConfig {
            hello,
            handshake_timeout: t,
            idle_timeout: t,
            request_timeout: t,
        },
        0,
    );
    let mut rest = bytes;
    for now in 0..black_box(8u64) {
        match server.handle(now, rest) {
            Ok(Status::Complete((e, used))) => {
                if let ServerEvent::Request { stream_id, .. } = e {
                    acc ^= server
                        .send_error(stream_id, ErrorCode::UnknownTensor, "no", &mut out)
                        .map_or(1, |n| n as u64);
                }
                if let ServerEvent::PutEnd { stream_id } = e {
                    acc ^= server
                        .send_put_ack(stream_id, &mut out)
                        .map_or(2, |n| n as u64);
                }
                rest = rest.get(used..).unwrap_or(&[]);
            }
            Ok(Status::Partial { needed }) => acc ^= needed as u64,
            Err(e) => acc ^= u64::from(e.error_code().code()),
        }
        while let Ok(Some(n)) = server.poll_transmit(&mut out) {
            acc ^= n as u64;
        }
        acc ^= server
            .handle_timeout(now)
            .map_or(3, |s| u64::from(s.unwrap_or(4)));
        match client.handle(now, rest) {
            Ok(Status::Complete((_, used))) => rest = rest.get(used..).unwrap_or(&[]),
            Ok(Status::Partial { needed }) => acc ^= needed as u64,
            Err(e) => acc ^= u64::from(e.stream_id),
        }
        while let Ok(Some(n)) = client.poll_transmit(&mut out) {
            acc ^= n as u64;
        }
        acc ^= client
            .handle_timeout(now)
            .map_or(5, |s| u64::from(s.unwrap_or(6)));
        acc ^= client.poll_timeout().unwrap_or(7) ^ server.poll_timeout().unwrap_or(8);
        acc ^= client.open_streams() as u64 ^ server.open_streams() as u64;
    }
    acc
}

/// The C ABI over the same bytes: no panic can reach the boundary either.
#[inline(never)]
fn ffi(bytes: &[u8], ids: &[u64]) -> u64 {
    use core::mem::MaybeUninit;
    use hurray_ffi::*;
    let mut handle = hurray_buffer_handle::default();
    let mut err = hurray_error::default();
    let mut view = MaybeUninit::<hurray_tensor_view>::uninit();
    let mut table = MaybeUninit::<hurray_table>::uninit();
    let mut level = hurray_tile_level::default();
    let mut quant = MaybeUninit::<hurray_quantization>::uninit();
    let mut stats = hurray_statistics::default();
    let mut ext = hurray_extension_type::default();
    let (mut u64s, mut u64s2, mut i64s, mut u32s) =
        ([0u64; 64], [0u64; 64], [0i64; 64], [0u32; 64]);
    let (mut value, mut code) = (0u64, 0i32);
    let (mut dev, mut class, mut bits, mut lanes) = (0u8, 0u8, 0u8, 0u16);
    let mut out = [0u8; 16];
    let (ptr, len) = (bytes.as_ptr(), bytes.len());
    let options = hurray_read_options {
        extension_layouts: ids.as_ptr(),
        extension_layout_count: ids.len(),
        private_schemes: 1,
        private_composition_rules: 1,
    };
    let pick = |acc: u64, n: usize| acc as usize % n;
    // SAFETY: `ptr`/`len` describe a live slice, `options` points to a live
    // struct whose ids outlive every view, every output points to a local of
    // the right type and size, and `view`/`table` are only passed back to the
    // library after a successful parse initialised them.
    unsafe {
        let mut acc = hurray_handle_decode(ptr, len, &mut handle, &mut err) as u64;
        acc ^= hurray_handle_validate(&handle, &mut err) as u64;
        acc ^= hurray_handle_encode(&handle, out.as_mut_ptr(), out.len(), &mut err) as u64;
        acc ^= hurray_memory_class_allowed(handle.device_tag, handle.memory_class) as u64;
        acc ^= hurray_to_dlpack_device(handle.device_tag, handle.memory_class, &mut code) as u64;
        acc ^= hurray_to_arrow_device(handle.device_tag, handle.memory_class, &mut code) as u64;
        acc ^= hurray_from_dlpack_device(code, &mut dev, &mut class) as u64;
        acc ^= hurray_from_arrow_device(code >> 1, &mut dev, &mut class) as u64;
        acc ^= hurray_to_dlpack_dtype(out[3], &mut bits, &mut dev, &mut lanes) as u64;
        acc ^= hurray_from_dlpack_dtype(out[4], bits, lanes, &mut dev) as u64;
        acc ^= u64::from(hurray_element_type_bits(out[5]) ^ hurray_element_type_alignment(out[6]));
        acc ^=
            u64::from(HURRAY_DEVICE_MAPPINGS[pick(acc, HURRAY_DEVICE_MAPPING_COUNT)].dlpack as u32);
        acc ^= u64::from(HURRAY_DTYPE_MAPPINGS[pick(acc, HURRAY_DTYPE_MAPPING_COUNT)].bits);
        if hurray_table_parse(ptr, len, table.as_mut_ptr(), &mut err) == HURRAY_OK {
            acc ^= hurray_table_get(table.as_ptr(), pick(acc, 5), &mut handle) as u64;
        }
        let parsed = [
            hurray_tensor_parse(ptr, len, view.as_mut_ptr(), &mut err),
            hurray_tensor_parse_prefix(ptr, len, view.as_mut_ptr(), &mut err),
            hurray_tensor_parse_prefix_with(ptr, len, &options, view.as_mut_ptr(), &mut err),
            hurray_tensor_parse_with(ptr, len, &options, view.as_mut_ptr(), &mut err),
        ];
        if parsed.contains(&HURRAY_OK) {
            let v = view.as_ptr();
            let n = u64s.len();
            acc ^= hurray_tensor_dim(v, pick(acc, 3), &mut value) as u64 ^ value;
            acc ^= hurray_tensor_shape(v, u64s.as_mut_ptr(), n) as u64;
            acc ^= hurray_tensor_strides(v, i64s.as_mut_ptr(), n) as u64;
            acc ^= hurray_tensor_buffer(v, pick(acc, 4), &mut handle) as u64;
            acc ^= hurray_tensor_storage_bytes(v, acc, &mut value) as u64 ^ value;
            acc ^= hurray_tensor_morton_bits(v, u32s.as_mut_ptr(), n) as u64;
            acc ^= hurray_tensor_mode_order(v, u32s.as_mut_ptr(), n) as u64;
            acc ^= hurray_tensor_tile_level(v, pick(acc, 9), &mut level) as u64;
            acc ^= hurray_tensor_tile_shape(v, pick(acc, 9), u64s.as_mut_ptr(), n) as u64;
            acc ^= hurray_tensor_tile_strides(v, pick(acc, 9), 1, i64s.as_mut_ptr(), n) as u64;
            acc ^= hurray_tensor_quantization(v, quant.as_mut_ptr()) as u64;
            acc ^= hurray_tensor_shard(v, u64s.as_mut_ptr(), u64s2.as_mut_ptr(), n) as u64;
            acc ^= hurray_tensor_statistics(v, &mut stats) as u64 ^ stats.nnz;
            acc ^= hurray_tensor_extension_type(v, &mut ext) as u64 ^ u64::from(ext.bit_width);
            acc ^= (*v).len as u64 ^ (*v).layout.nnz ^ u64::from(level.inner_layout);
        }
        acc ^ err.value
            ^ u64::from(err.offset)
            ^ handle.byte_size
            ^ u64::from(out[3])
            ^ u64s[1]
            ^ u64s2[2]
            ^ i64s[3] as u64
            ^ u64::from(u32s[4] ^ u32::from(dev ^ class))
    }
}

/// The encoders over opaque values (`--features encoders`).
#[cfg(feature = "encoders")]
mod encoders {
    use core::hint::black_box;

    use hurray_core::layout::{Coo, TileSpec};
    use hurray_core::{
        BufferHandle, BufferTable, DescriptorBuilder, DeviceTag, ElementType, LayoutSpec,
        MemoryClass, Scheme, Statistics, SyncMode, TensorDescriptor, TensorView,
    };

    /// The stream writer over a byte-slice sink (which fills up): every
    /// call with opaque descriptors and data.
    #[inline(never)]
    fn stream_writer(bytes: &[u8], cut: usize) -> u64 {
        use hurray_core::stream::StreamWriter;
        let mut out = [0u8; 256];
        let mut sink = &mut out[..];
        let mut scratch = [0u8; 128];
        let mut w = StreamWriter::new(&mut sink, &mut scratch[..]);
        let mut acc = 0u64;
        let mut rest = bytes;
        while let Ok((v, next)) = TensorView::parse_prefix(rest) {
            let (data, after) = next.split_at(cut.min(next.len()));
            acc ^= u64::from(w.write_tensor(&v, &[data]).is_ok());
            acc ^= u64::from(w.begin_tensor(&v).is_ok());
            acc ^= u64::from(w.write_data(data).is_ok());
            acc ^= u64::from(w.end_tensor().is_ok());
            rest = after;
        }
        acc ^ u64::from(w.finish().is_ok()) ^ w.position() ^ w.tensors()
    }

    /// Every core and C encoder over values the optimizer cannot see.
    #[inline(never)]
    pub(crate) fn exercise(bytes: &[u8]) -> u64 {
        let mut out = [0u8; 512];
        let mut acc = stream_writer(bytes, black_box(48));
        let word = |i: usize| {
            bytes
                .get(i..i.saturating_add(8))
                .and_then(|b| b.first_chunk::<8>())
                .map_or(0, |b| u64::from_le_bytes(*b))
        };
        let (a, b, c) = (word(0), word(8), word(16));
        let handle = BufferHandle::with_memory_class(
            a,
            b as u32,
            DeviceTag::from_code(c as u8).unwrap_or(DeviceTag::Cpu),
            SyncMode::from_code((c >> 8) as u8).unwrap_or(SyncMode::Event),
            MemoryClass::from_code((c >> 16) as u8).unwrap_or(MemoryClass::Standard),
        )
        .unwrap_or(BufferHandle::empty(DeviceTag::Cpu));
        let buffers = [handle; 4];
        let n = black_box(bytes.len() % 5);
        let buffers = buffers.get(..n).unwrap_or(&[]);
        let shape = [a, b, c];
        let shape = shape.get(..black_box(n % 4)).unwrap_or(&[]);
        let strides = [a as i64, b as i64, c as i64];
        let words = [a as u32, b as u32, c as u32];
        let tiles = [TileSpec {
            tile_shape: shape,
            outer_layout: a as u8,
            inner_layout: b as u8,
            outer_strides: Some(&strides),
            inner_strides: None,
        }];
        let layout = match black_box(a as u8 % 6) {
            0 => LayoutSpec::RowMajor,
            1 => LayoutSpec::Strided(&strides),
            2 => LayoutSpec::Tiled(&tiles),
            3 => LayoutSpec::Morton(&words),
            4 => LayoutSpec::Coo(Coo {
                nnz: b,
                sorted: true,
            }),
            _ => LayoutSpec::Csf {
                nnz: c,
                mode_order: &words,
            },
        };
        let desc = TensorDescriptor::new(
            ElementType::from_code(c as u8).unwrap_or(ElementType::Int8),
            shape,
            layout,
            buffers,
        )
        .with_byte_offset(b)
        .with_quantization(Scheme::PerBlock {
            axis: a as u32,
            block_size: b as u32,
            scale_buffer: 1,
            zero_point_buffer: None,
            scale_type: ElementType::Float16,
        })
        .with_shard(shape, shape)
        .with_statistics(
            Statistics::new()
                .with_nnz(a)
                .with_value_range(-1.0, b as f64),
        );
        acc ^= desc.encoded_len() as u64;
        acc ^= desc.encode(&mut out).map_or(1, |n| n as u64);
        acc ^= BufferTable::encode(buffers, &mut out).map_or(2, |n| n as u64);
        let view = TensorView::parse(bytes).ok();
        if let Some(builder) = view.and_then(|v| DescriptorBuilder::<8, 8>::from_view(&v).ok()) {
            acc ^= builder.encode(&mut out).map_or(3, |n| n as u64);
            acc ^= builder.to_vec::<256>().map_or(5, |v| v.len() as u64);
        }
        acc ^ ffi(bytes, &mut out) ^ u64::from(out[5])
    }

    /// The C encoders over a spec and handles read from opaque bytes.
    #[inline(never)]
    fn ffi(bytes: &[u8], out: &mut [u8]) -> u64 {
        use hurray_ffi::*;
        let mut n = 0usize;
        let mut err = hurray_error::default();
        let mut h = hurray_buffer_handle::default();
        let spec = bytes.as_ptr().cast::<hurray_descriptor_spec>();
        let handles = bytes.as_ptr().cast::<hurray_buffer_handle>();
        let count = black_box(bytes.len() / 64);
        // SAFETY: `bytes` is `INPUT`, 1024 zero bytes (hidden from the
        // optimizer by `black_box`): the spec and the `count <= 16` handles
        // read from it lie inside it and are all-zero structs, whose
        // pointers are null and counts zero, which the C contract accepts;
        // the library checks their alignment itself. Outputs are locals.
        unsafe {
            let mut acc =
                hurray_descriptor_encode(spec, out.as_mut_ptr(), out.len(), &mut n, &mut err)
                    as u64;
            acc ^= hurray_descriptor_encoded_len(spec, &mut n, &mut err) as u64;
            acc ^=
                hurray_table_encode(handles, count, out.as_mut_ptr(), out.len(), &mut err) as u64;
            acc ^= hurray_handle_encode(handles, out.as_mut_ptr(), out.len(), &mut err) as u64;
            acc ^=
                hurray_handle_new(acc, acc as u32, out[1], out[2], out[3], &mut h, &mut err) as u64;
            acc ^= hurray_handle_empty(out[4], &mut h) as u64;
            let b = hurray_buffer {
                handle: h,
                data: bytes.as_ptr().cast(),
            };
            acc ^= hurray_buffer_check(&b, &mut err) as u64;
            acc ^= hurray_pointer_is_aligned(&h, b.data) as u64;
            acc ^ n as u64 ^ err.value ^ h.byte_size
        }
    }
}

/// The entry point; never run, only linked.
#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    let input = black_box(&INPUT);
    let len = black_box(input.len());
    let bytes = input.get(..len).unwrap_or(&[]);
    let ids = black_box([0x5EEDu64, 7]);
    let n = black_box(2usize);
    let result = exercise(bytes, ids.get(..n).unwrap_or(&[]));
    black_box(result);
    #[cfg(feature = "encoders")]
    black_box(encoders::exercise(bytes));
    #[cfg(feature = "files")]
    black_box(files::exercise(bytes));
    loop {
        core::hint::spin_loop();
    }
}

/// The `.hrry` file decoders (and, with `encoders`, the writer) on
/// arbitrary bytes.
#[cfg(feature = "files")]
mod files {
    use core::hint::black_box;

    use hurray_core::file::{
        FileIndex, FileOptions, FileView, KvValue, SeqEvent, SequentialReader,
    };

    fn kv(acc: &mut u64, v: KvValue<'_>) {
        *acc ^= match v {
            KvValue::String(s) => s.len() as u64,
            KvValue::Bytes(b) => b.len() as u64,
            KvValue::Int64(i) => i as u64,
            KvValue::Uint64(u) => u,
            KvValue::Float64(f) => f.to_bits(),
            KvValue::Bool(b) => u64::from(b),
            KvValue::Array(a) => a.iter().fold(a.len() as u64, |x, e| {
                x ^ match e {
                    KvValue::Uint64(u) => u,
                    _ => 1,
                }
            }),
        };
    }

    #[inline(never)]
    pub(crate) fn exercise(bytes: &'static [u8]) -> u64 {
        let mut acc = 0u64;
        let table: &'static mut [u32] = black_box(&mut []);
        match FileIndex::parse_with(bytes, &FileOptions::STRICT, table) {
            Ok(idx) => {
                acc ^= u64::from(idx.len()) ^ u64::from(idx.alignment());
                for (k, v) in idx.kv().iter() {
                    acc ^= k.len() as u64;
                    kv(&mut acc, v);
                }
                if let Ok(Some(t)) = idx.get(black_box("w")) {
                    acc ^= t.data().len() as u64;
                    for b in t.buffers() {
                        acc ^= b.len() as u64;
                    }
                }
                for t in idx.iter_file_order().flatten() {
                    acc ^= t.entry().descriptor_offset;
                }
                match idx.verify() {
                    Ok(v) => acc ^= v.iter().map(|t| t.name().len() as u64).sum::<u64>(),
                    Err(e) => acc ^= e.offset(),
                }
            }
            Err(e) => acc ^= e.offset(),
        }
        if let Ok(v) = FileView::parse(bytes) {
            acc ^= u64::from(v.len());
        }
        let table2: &'static mut [u32] = black_box(&mut []);
        if let Ok(v) = FileView::parse_with(bytes, &FileOptions::STRICT, table2) {
            acc ^= v.iter_file_order().count() as u64;
        }
        // The validation handing its tensors out (a loader's listing).
        let table3: &'static mut [u32] = black_box(&mut []);
        let mut handed = 0u64;
        if let Ok(v) = FileView::parse_with_each(bytes, &FileOptions::STRICT, table3, |t| {
            handed ^= t.entry().data_offset ^ t.data().len() as u64;
        }) {
            acc ^= handed ^ u64::from(v.len());
        }
        // The validation cut into parts (a loader's threads), joined.
        let table4: &'static mut [u32] = black_box(&mut []);
        if let Ok(parts) = FileView::parse_in_parts(bytes, &FileOptions::STRICT, table4, black_box(3))
        {
            let mut handed = 0u64;
            let k = black_box(1u32);
            let one = parts.check(k, |t| handed ^= t.entry().data_offset);
            let all = [parts.check(0, |_| {}), one, parts.check(k.wrapping_add(1), |_| {})];
            match parts.finish(all) {
                Ok(v) => acc ^= handed ^ u64::from(v.len()) ^ u64::from(parts.len()),
                Err(e) => acc ^= e.offset(),
            }
        }
        let mut buf = [0u8; 256];
        let mut r = SequentialReader::new(&mut buf, black_box(Some(4096)));
        let mut input = bytes;
        for _ in 0..black_box(64) {
            match r.feed(input) {
                Ok((used, ev)) => {
                    acc ^= match ev {
                        Some(SeqEvent::Data { bytes, .. }) => bytes.len() as u64,
                        Some(SeqEvent::Descriptor { offset, .. }) => offset,
                        Some(_) => 1,
                        None => 2,
                    };
                    input = input.get(used..).unwrap_or_default();
                }
                Err(e) => {
                    acc ^= e.offset();
                    break;
                }
            }
        }
        #[cfg(feature = "encoders")]
        {
            use hurray_core::TensorView;
            use hurray_core::file::{FileWriter, WriterOptions};
            let out: &mut [u8] = black_box(&mut []);
            let mut index = [hurray_core::file::IndexEntry::default(); 4];
            if let (Ok(mut w), Ok(d)) = (
                FileWriter::new(out, WriterOptions::default(), &mut index),
                TensorView::parse(bytes.get(..61).unwrap_or_default()),
            ) {
                let _ = w.write_tensor("w", &d, &[bytes.get(..192).unwrap_or_default()]);
                acc ^= w.position();
                let _ = w.finish(&[("k", KvValue::Bool(true))]);
            }
        }
        acc
    }
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
